"""The test images: a parameter that cannot cut patches from the image is one line naming the file; the evaluation
tiling covers every pixel."""
import numpy as np
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


@pytest.mark.parametrize("shape, patch", [((40, 40), 8), ((37, 29), 8), ((9, 9), 8), ((12, 20), 3)])
def test_a_tiling_covers_every_pixel_with_about_one_patch_in_p_squared(shape, patch):
    from svibench.datasets.images import assemble_patches, tiling

    rows = tiling(shape, patch, np.random.default_rng(0))
    n = (shape[0] - patch + 1) * (shape[1] - patch + 1)
    assert rows.size == np.unique(rows).size and rows.min() >= 0 and rows.max() < n
    cover = assemble_patches(np.ones((rows.size, patch * patch)), shape, patch, rows)
    assert np.all(cover == 1.0)  # every pixel covered (NaN where none is)
    per_side = [-(-(s - patch + 1) // patch) + 2 for s in shape]  # every p-th position, plus the first and last
    assert rows.size <= per_side[0] * per_side[1]


def test_a_tiling_is_seeded_and_its_assembly_is_the_average_of_its_patches():
    from svibench.datasets.images import assemble_patches, extract_patches, tiling

    shape, patch = (30, 30), 8
    offsets = {tuple(tiling(shape, patch, np.random.default_rng(s))) for s in range(20)}
    assert len(offsets) > 1
    assert np.array_equal(tiling(shape, patch, np.random.default_rng(4)), tiling(shape, patch, np.random.default_rng(4)))
    image = np.random.default_rng(1).random(shape)
    P = extract_patches(image, patch)
    every = np.arange(P.shape[0])
    assert np.allclose(assemble_patches(P, shape, patch, every), assemble_patches(P, shape, patch))
    rows = tiling(shape, patch, np.random.default_rng(2))
    assert np.allclose(assemble_patches(P[rows], shape, patch, rows), image)  # patches of one image agree
