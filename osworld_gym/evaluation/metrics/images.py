"""Image metrics (Pillow + numpy): SSIM similarity, exact pixel equality, sizes.

OSWorld scores images with scikit-image's ``structural_similarity``; ``ssim()`` computes the
same number (its default 7×7 uniform window, ``K1=0.01``, ``K2=0.03``, sample covariance)
with numpy alone, so the evaluation extra does not need scikit-image and SciPy.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_WINDOW = 7
_K1, _K2 = 0.01, 0.03
_BASE_EPSILON = 0.01  # compare_images: a score must beat reference_base_result by this much
_STRUCTURE_THRESHOLD = 0.9  # check_structure_sim's SSIM bar


def _box_means(x: Any, size: int) -> Any:
    """Means over every ``size``×``size`` window lying fully inside ``x`` (integral image)."""
    np = require("numpy")
    integral = np.pad(x, ((1, 0), (1, 0))).cumsum(axis=0).cumsum(axis=1)
    total = (
        integral[size:, size:]
        - integral[:-size, size:]
        - integral[size:, :-size]
        + integral[:-size, :-size]
    )
    return total / float(size * size)


def ssim(a: Any, b: Any, *, data_range: float = 255.0, win_size: int = _WINDOW) -> float:
    """Mean structural similarity of two equally shaped images (channels averaged).

    Args:
        a: ``H×W`` or ``H×W×C`` array.
        b: Array of the same shape.
        data_range: Value range of the pixels (255 for 8-bit images).
        win_size: Odd window side.

    Returns:
        SSIM in [-1, 1]; 1.0 for identical images.

    Raises:
        ValueError: Shapes differ, or the image is smaller than the window.

    Example:
        >>> import numpy as np
        >>> img = np.arange(64, dtype=np.uint8).reshape(8, 8)
        >>> ssim(img, img)
        1.0
    """
    np = require("numpy")
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"ssim: shapes differ: {a.shape} vs {b.shape}")
    if a.ndim == 3:
        return float(
            np.mean(
                [
                    ssim(a[..., c], b[..., c], data_range=data_range, win_size=win_size)
                    for c in range(a.shape[2])
                ]
            )
        )
    if min(a.shape) < win_size:
        raise ValueError(f"ssim: image {a.shape} is smaller than the {win_size}px window")
    x, y = a.astype(np.float64), b.astype(np.float64)
    ux, uy = _box_means(x, win_size), _box_means(y, win_size)
    uxx, uyy, uxy = (
        _box_means(x * x, win_size),
        _box_means(y * y, win_size),
        _box_means(x * y, win_size),
    )
    cov_norm = win_size * win_size / (win_size * win_size - 1.0)
    vx, vy, vxy = cov_norm * (uxx - ux * ux), cov_norm * (uyy - uy * uy), cov_norm * (uxy - ux * uy)
    c1, c2 = (_K1 * data_range) ** 2, (_K2 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return float(s.mean())


def read_image(path: str) -> Any:
    """Open and fully read an image, closing the file (Pillow reads lazily otherwise)."""
    with require("PIL.Image").open(path) as img:
        img.load()
        return img


def _readable(*paths: str | None) -> bool:
    return all(p and os.path.exists(p) and os.path.getsize(p) > 0 for p in paths)


def compare_images(result: str | None, expected: str | None, **options: Any) -> float:
    """SSIM of two images in grayscale, both resized to the smaller size.

    Args:
        result: Path of the image the agent produced.
        expected: Path of the reference image.
        **options: ``reference_base_result``: the SSIM that an unchanged image already scores;
            with it the result is rescaled to ``(s - base) / (1 - base)`` and is 0 unless
            ``s >= base + 0.01``.

    Returns:
        The (rescaled) SSIM; 0.0 when a file is missing, empty or not an image.
    """
    if not _readable(result, expected):
        return 0.0
    image = require("PIL.Image")
    np = require("numpy")
    try:
        first, second = read_image(result).convert("L"), read_image(expected).convert("L")
    except OSError as e:
        logger.info("compare_images: cannot open %s or %s: %s", result, expected, e)
        return 0.0
    # OSWorld takes the smaller (width, height) tuple, compared lexicographically.
    size = min(first.size, second.size)
    lanczos = image.Resampling.LANCZOS
    score = ssim(np.array(first.resize(size, lanczos)), np.array(second.resize(size, lanczos)))
    base = options.get("reference_base_result")
    if base is None:
        return score
    return (score - base) / (1 - base) if score >= base + _BASE_EPSILON else 0.0


def _content_size(img: Any, ignore_transparent: bool) -> tuple[int, int]:
    # OSWorld's test reads ``ignore and mode in (RGBA, LA) or "transparency" in info``: an image
    # with a transparency key is always cropped to its content; kept for identical scores.
    if (ignore_transparent and img.mode in ("RGBA", "LA")) or "transparency" in img.info:
        bbox = img.convert("RGBA").split()[-1].getbbox()
        return (0, 0) if bbox is None else (bbox[2] - bbox[0], bbox[3] - bbox[1])
    return img.size


def check_image_size(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when the image has the ``width`` and/or ``height`` given in ``rules``.

    With ``ignore_transparent`` the size of the non-transparent content is checked.
    """
    if result is None:
        return 0.0
    with require("PIL.Image").open(result) as img:
        width, height = _content_size(img, rules.get("ignore_transparent", False))
    ok_w = rules.get("width") is None or width == rules["width"]
    ok_h = rules.get("height") is None or height == rules["height"]
    return float(ok_w and ok_h)


def check_image_file_size(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when the file is smaller than ``rules["max_size"]`` bytes."""
    if result is None:
        return 0.0
    return float(os.path.getsize(result) < rules["max_size"])


def compare_image_list(result: Any, expected: Any) -> float:
    """1 when every image equals its reference pixel for pixel.

    The result is first resized to the reference's size and converted to its mode. Accepts
    two paths or two lists of paths.
    """
    if not isinstance(result, list):
        result, expected = [result], [expected]
    image = require("PIL.Image")
    chops = require("PIL.ImageChops")
    for got_path, want_path in zip(result, expected, strict=False):
        if not got_path or not want_path:
            return 0.0
        got, want = read_image(got_path), read_image(want_path)
        if got.size != want.size:
            got = got.resize(want.size, image.Resampling.LANCZOS)
        if got.mode != want.mode:
            got = got.convert(want.mode)
        if chops.difference(got, want).getbbox():
            return 0.0
    return 1.0


def check_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when two same-sized images have RGB SSIM of at least 0.9."""
    if result is None or expected is None:
        return 0.0
    np = require("numpy")
    try:
        first, second = read_image(result), read_image(expected)
    except OSError as e:
        logger.info("check_structure_sim: %s", e)
        return 0.0
    if first.size != second.size or min(first.size) < _WINDOW:
        return 0.0
    score = ssim(np.array(first.convert("RGB")), np.array(second.convert("RGB")))
    return float(score >= _STRUCTURE_THRESHOLD)
