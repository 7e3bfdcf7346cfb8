"""Grayscale test images as BPFA problems: overlapping 8×8 patches, inpainting and denoising.

Shah, Knowles & Ghahramani (2015), §5.2: every overlapping p×p patch is a
data point (N = (H − p + 1)(W − p + 1), D = p²).  *Inpainting*: 20% of the
pixels, chosen uniformly at random, are observed.  *Denoising*: 50% are
observed, each with added Gaussian noise of standard deviation 15 on the 0–255
scale.  Missing pixels are expressed by the mask, never filled in.  The
observed values are standardised to mean 0 and variance 1 (one offset and one
scale for the whole image, from the observed pixels only); the clean image
and the held-out (unobserved) entries, on the same standardised scale, are
the test data.

The images are read from the data directory and verified by SHA-256
(``svibench.data.fetch``); each is pinned to the cszn/DnCNN commit named in
``shared/data/SOURCES.md``.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from svibench.data import DataError, DataFile, Dataset, dataset, fetch

__all__ = ["IMAGES", "read_image", "extract_patches", "assemble_patches", "windows", "image_patches"]

_COMMIT = "e93b27812d3ff523a3a79d19e5e50d233d7a8d0a"


def _set12(number: str, name: str, sha256: str) -> DataFile:
    return DataFile(f"images/{name}.png", sha256,
                    f"https://raw.githubusercontent.com/cszn/DnCNN/{_COMMIT}/testsets/Set12/{number}.png",
                    f"cszn/DnCNN, testsets/Set12/{number}.png at commit {_COMMIT}")


#: name -> (file, height and width in pixels)
IMAGES: dict[str, tuple[DataFile, int]] = {
    "house": (_set12("02", "house", "576b2b3b6ff4d7e6c8ddccb0df645774f9b986c81219c28e16ba1935990a0b29"), 256),
    "peppers": (_set12("03", "peppers256", "92de94d7b8ef9e645546821150eff5c765d0d29666f9bc7d20b61063f35c3305"), 256),
    "lena": (_set12("08", "lena512", "f07124a0b4bb493660210c209070aa9c9187e9e085a9f026a51a2b9f57e25f15"), 512),
    "barbara": (_set12("09", "barbara", "764b8a2748cc7ad381cccc047c5e512cb528c197ba86adb83aa339e8932e66c0"), 512),
    "boat": (_set12("10", "boat", "18bea4de1634456f5791d16301863fc974401d144cd6afb86f09a6be4620fe54"), 512),
}

TASKS = {"inpainting": (0.2, 0.0), "denoising": (0.5, 15.0)}


def read_image(name: str) -> np.ndarray:
    """The verified 8-bit grayscale image ``name`` as a float array (H, W) on 0–255."""
    from PIL import Image

    if name not in IMAGES:
        raise ValueError(f"unknown image {name!r}; choose from {', '.join(sorted(IMAGES))}")
    file, side = IMAGES[name]
    with Image.open(fetch(file)) as img:
        if img.mode != "L" or img.size != (side, side):
            raise DataError(f"{file.path}: expected an 8-bit grayscale {side}×{side} image, got mode {img.mode} size {img.size}")
        return np.asarray(img, dtype=float)


def extract_patches(image: np.ndarray, patch: int) -> np.ndarray:
    """Every overlapping patch×patch patch, row-major by position, each flattened row-major: (N, patch²)."""
    view = sliding_window_view(image, (patch, patch))
    return view.reshape(-1, patch * patch).copy()


def assemble_patches(patches: np.ndarray, shape: tuple[int, int], patch: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Inverse of :func:`extract_patches` by averaging: each pixel is the mean of the patches covering it.

    ``rows``: the indices (into :func:`extract_patches`'s order) of the patches given, when ``patches`` holds only
    those (e.g. :func:`windows`); each pixel is then the mean of the given patches covering it, NaN where none does.
    """
    H, W = shape
    nh, nw = H - patch + 1, W - patch + 1
    total = np.zeros(shape)
    count = np.zeros(shape)
    if rows is None:
        blocks = patches.reshape(nh, nw, patch, patch)
        for u in range(patch):
            for v in range(patch):
                total[u:u + nh, v:v + nw] += blocks[:, :, u, v]
                count[u:u + nh, v:v + nw] += 1.0
    else:
        # every (offset, patch) pair's pixel, offsets outermost: bincount adds in this order, so each pixel's sum is
        # the one a loop over the offsets would make, bit for bit
        top, left = np.divmod(np.asarray(rows), nw)
        u, v = np.divmod(np.arange(patch * patch), patch)
        pixel = ((top + u[:, None]) * W + (left + v[:, None])).ravel()
        values = np.asarray(patches).reshape(-1, patch * patch).T.ravel()
        total = np.bincount(pixel, values, minlength=H * W).reshape(shape)
        count = np.bincount(pixel, minlength=H * W).reshape(shape).astype(float)
    with np.errstate(invalid="ignore"):
        return total / count


def windows(shape: tuple[int, int], patch: int, grid: int, side: int,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A seeded, stratified sample of pixel windows and the patches that cover them: (rows, pixels).

    The image is cut into ``grid`` × ``grid`` cells and one ``side`` × ``side`` window (at most the cell) is placed
    uniformly at random in each.  ``rows`` are the indices (in :func:`extract_patches`'s order) of every patch that
    overlaps a window, so :func:`assemble_patches` of those rows gives each window pixel exactly the value the whole
    image gives it (the mean of all the patches covering it); ``pixels`` marks the windows' pixels.  A PSNR over
    ``pixels`` is therefore the whole image's PSNR on a stratified random sample of its pixels: an estimate with no
    bias between methods, at about ``grid² (side + patch − 1)²`` patches.  An evaluation subset for BPFA
    (``eval_patches = "windows"``)."""
    H, W = shape
    nh, nw = H - patch + 1, W - patch + 1
    covering = np.zeros((nh, nw), dtype=bool)
    pixels = np.zeros(shape, dtype=bool)
    for top, bottom in _cells(H, grid):
        for left, right in _cells(W, grid):
            h, w = min(side, bottom - top), min(side, right - left)
            r = top + int(rng.integers(bottom - top - h + 1))
            c = left + int(rng.integers(right - left - w + 1))
            pixels[r:r + h, c:c + w] = True
            covering[max(0, r - patch + 1):min(nh, r + h), max(0, c - patch + 1):min(nw, c + w)] = True
    return np.flatnonzero(covering), pixels


def _cells(length: int, grid: int) -> list[tuple[int, int]]:
    """``grid`` contiguous [start, stop) bands that split ``length`` as evenly as integers allow."""
    edges = np.linspace(0, length, min(grid, length) + 1).round().astype(int)
    return list(zip(edges[:-1], edges[1:]))


def _cost_params(params: dict) -> dict:
    """What an image problem's cost depends on: its side in pixels (the crop's, else the image's), the task and
    the patch; not which image of that side, nor the mask's seed.  The local fits' sweeps depend on the image's
    content too: a plan carries one image's timings to the others of its side."""
    image = params["image"]
    side = params["size"] or (IMAGES[image][1] if image in IMAGES else image)
    return {**{k: v for k, v in params.items() if k not in ("image", "seed")}, "side": side}


@dataset("image-patches", kind="images", description="a test image as overlapping 8×8 patches, for inpainting or denoising (BPFA §5.2)",
         files=tuple(f for f, _ in IMAGES.values()), cost_params=_cost_params)
def image_patches(*, image: str = "house", task: str = "inpainting", size: int = 0, patch: int = 8,
                  observed: float = 0.0, noise_sd: float = -1.0, seed: int = 0) -> Dataset:
    """Patches of ``image`` with a random pixel mask (and noise), standardised.

    Parameters
    ----------
    image : {"boat", "barbara", "lena", "house", "peppers"}
        The test image (Set12 of cszn/DnCNN): house and peppers are 256 × 256 pixels, the others 512 × 512.
    task : {"inpainting", "denoising"}
        Sets the observed fraction and noise: 0.2 and 0, or 0.5 and σ = 15.
    size : int
        0 for the whole image; otherwise the central size×size crop (reduced
        studies crop rather than downsample, which would change the texture).
    patch : int
        Patch side (paper: 8).
    observed, noise_sd : float
        Override the task's observed fraction (if > 0) and noise sd (if ≥ 0).
    seed : int
        Seeds the mask and the noise.
    """
    if task not in TASKS:
        raise ValueError(f"image-patches: task must be one of {', '.join(TASKS)}, got {task!r}")
    frac, sd = TASKS[task]
    frac = observed if observed > 0 else frac
    sd = noise_sd if noise_sd >= 0 else sd
    if not 0 < frac <= 1:
        raise ValueError(f"image-patches: observed fraction must be in (0, 1], got {frac}")
    clean = read_image(image)
    if not 1 <= patch <= clean.shape[0]:
        raise ValueError(f"image-patches: patch must be between 1 and the image's side, {clean.shape[0]} pixels of "
                         f"{IMAGES[image][0].path}, got {patch}")
    if size:
        if not patch <= size <= clean.shape[0]:
            raise ValueError(f"image-patches: size must be between {patch} and {clean.shape[0]}, got {size}")
        top = (clean.shape[0] - size) // 2
        clean = clean[top:top + size, top:top + size].copy()
    rng = np.random.default_rng(seed)
    seen = rng.random(clean.shape) < frac
    noisy = clean + sd * rng.standard_normal(clean.shape)
    offset, scale = float(noisy[seen].mean()), float(noisy[seen].std())
    mask = extract_patches(seen.astype(float), patch)
    Y = extract_patches(np.where(seen, (noisy - offset) / scale, 0.0), patch)
    truth = extract_patches((clean - offset) / scale, patch)
    return Dataset(
        f"image-patches/{image}-{task}", "images",
        {"Y": Y, "mask": mask},
        {"Y": truth, "mask": 1.0 - mask, "image": clean},
        {"image": image, "task": task, "patch": patch, "offset": offset, "scale": scale, "observed": frac,
         "noise_sd": sd, "size": clean.shape[0], "seed": seed, "source": IMAGES[image][0].describe()},
    )
