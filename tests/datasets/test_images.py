"""The test images: a parameter that cannot cut patches from the image is one line naming the file; the evaluation
windows' pixels are reconstructed as in the whole image."""
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


@pytest.mark.parametrize("shape, patch, grid, side", [((64, 64), 8, 4, 6), ((37, 29), 8, 2, 16), ((9, 9), 8, 3, 4),
                                                      ((12, 20), 3, 5, 2)])
def test_windows_give_their_pixels_the_whole_images_reconstruction(shape, patch, grid, side):
    """On a window's pixels the assembly of the covering patches is the whole image's, for any patch values; the
    windows sit one per cell, and no patch that misses every window is evaluated."""
    from svibench.datasets.images import assemble_patches, windows

    rows, pixels = windows(shape, patch, grid, side, np.random.default_rng(0))
    n = (shape[0] - patch + 1) * (shape[1] - patch + 1)
    assert rows.size == np.unique(rows).size and rows.min() >= 0 and rows.max() < n
    values = np.random.default_rng(1).normal(size=(n, patch * patch))  # not patches of one image: overlaps disagree
    whole = assemble_patches(values, shape, patch)
    assert np.array_equal(assemble_patches(values[rows], shape, patch, rows)[pixels], whole[pixels])
    cells = min(grid, shape[0]) * min(grid, shape[1])
    assert 0 < pixels.sum() <= cells * side * side
    top, left = np.divmod(rows, shape[1] - patch + 1)
    assert all(pixels[t:t + patch, l:l + patch].any() for t, l in zip(top, left))


def test_windows_are_seeded_and_stratified():
    from svibench.datasets.images import windows

    shape = (512, 512)
    draws = [windows(shape, 8, 4, 16, np.random.default_rng(s)) for s in range(5)]
    assert len({tuple(r) for r, _ in draws}) == 5
    again = windows(shape, 8, 4, 16, np.random.default_rng(3))
    assert np.array_equal(again[0], draws[3][0]) and np.array_equal(again[1], draws[3][1])
    rows, pixels = draws[0]
    assert pixels.sum() == 16 * 16 * 16  # 1/64 of the pixels
    assert rows.size <= 16 * 23 * 23  # (side + patch - 1)² patches a window
    for band in np.split(pixels, 4, axis=0):  # one window in each of the grid's cells
        assert [cell.sum() for cell in np.split(band, 4, axis=1)] == [256] * 4
