"""The test images: a parameter that cannot cut patches from the image is one line naming the file."""
import pytest

from svibench.datasets.images import image_patches



@pytest.mark.parametrize("params, says", [
    ({"patch": 600}, r"patch must be between 1 and the image's side, 512 pixels of .*boat.*, got 600"),
    ({"patch": 0}, "patch must be between 1"),
    ({"size": 4}, "size must be between 8 and 512, got 4"),
])
def test_a_patch_or_crop_the_image_cannot_give_is_one_line(params, says):
    with pytest.raises(ValueError, match=says):
        image_patches(image="boat", **params)
