"""GIMP task metrics: an edited image against the original, by SSIM and simple statistics.

OSWorld's ``gimp`` module. Each metric takes the image the agent saved (``result``) and, for
most, the reference image (``expected``), in the order the task files pass them; some tasks
swap the two on purpose (a "brighten" task reuses the "darken" metric with the original as
``result``). A missing path, a missing file or a file Pillow cannot read scores 0.

Structure similarity is ``ssim()`` on RGB pixels
(scikit-image's number). As in OSWorld, it requires both images to have the same size and to
be at least 7 pixels on each side, except where a metric says it resizes first.

Layout checks on single images (green background, triangle position, text box side) are in
``.gimp_layout``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics.images import read_image, ssim

logger = logging.getLogger(__name__)

SSIM_THRESHOLD = 0.9  # OSWorld's default bar for "same structure"
_MIN_SIDE = 7  # the SSIM window: smaller images are never "similar"
_MIRROR_SSIM = 0.99  # check_image_mirror: GIMP's flip is exact up to re-encoding
_CONTRAST_SSIM = 0.65  # check_contrast_increase_and_structure_sim: contrast changes SSIM a lot
_DEFAULT_SSIM_OPTION = 0.85  # check_structure_sim_with_threshold's default ``ssim_threshold``
_DEFAULT_MSE = 0.03  # check_brightness_decrease_and_structure_sim's default ``threshold``
_TARGET_BRIGHTNESS = 128.0  # both images are scaled to this mean grey before the MSE check


def load_images(*paths: str | None) -> list[Any] | None:
    """Pillow images for every path, fully read; ``None`` when one is missing or unreadable."""
    if not all(p and os.path.isfile(p) for p in paths):
        return None
    try:
        return [read_image(p) for p in paths if p]
    except OSError as e:  # includes PIL.UnidentifiedImageError
        logger.info("cannot read image: %s", e)
        return None


def similar(a: Any, b: Any, threshold: float = SSIM_THRESHOLD) -> bool:
    """OSWorld's structure check: same size, both ≥ 7 px a side, RGB SSIM ≥ ``threshold``.

    Example:
        >>> from PIL import Image
        >>> img = Image.new("RGB", (8, 8), (10, 20, 30))
        >>> similar(img, img.copy()), similar(img, img.resize((9, 8)))
        (True, False)
    """
    np = require("numpy")
    if min(*a.size, *b.size) < _MIN_SIDE or a.size != b.size:
        return False
    return ssim(np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB"))) >= threshold


def mean_brightness(img: Any) -> float:
    """Mean grey level of the image in [0, 255] (its ``L`` conversion)."""
    np = require("numpy")
    return float(np.asarray(img.convert("L"), dtype=np.float64).mean())


def _scaled_to_brightness(img: Any, target: float) -> Any:
    """Every band's value ``v`` mapped to ``int(v * target / brightness)``, kept in 0..255.

    As OSWorld does it: a Pillow lookup table over the image as stored, so a palette image
    has its palette indices scaled (not its colours), alpha is scaled too, and a 16-bit or
    float image raises (Pillow takes only linear maps there).
    """
    factor = target / mean_brightness(img)
    return img.point(lambda value: min(255, max(0, int(value * factor))))


def _mse(a: Any, b: Any) -> float:
    """Mean squared difference of RGB pixels in [0, 1], ``a`` resized to ``b``'s size.

    Computed in float32, as OSWorld does, so a value at the threshold falls the same way.
    """
    np = require("numpy")
    if a.size != b.size:
        a = a.resize(b.size, require("PIL.Image").Resampling.LANCZOS)
    x = np.asarray(a.convert("RGB"), dtype=np.float32) / 255
    y = np.asarray(b.convert("RGB"), dtype=np.float32) / 255
    return float(np.mean((x - y) ** 2))


def check_brightness_decrease_and_structure_sim(
    result: str | None, expected: str | None, threshold: float = _DEFAULT_MSE
) -> float:
    """1 when ``result`` is darker than ``expected`` and otherwise the same picture.

    Both images are first scaled to the same mean brightness (128, see
    ``_scaled_to_brightness()``); "the same picture" then means an RGB mean squared error
    (pixels in [0, 1]) below ``threshold``.

    Args:
        result: Path of the first image (the agent's, or the original in "brighten" tasks).
        expected: Path of the second image.
        threshold: The MSE bar (task option; default 0.03).

    Returns:
        1.0 or 0.0; 0.0 for a missing or unreadable file or an all-black image.
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    first, second = images
    b1, b2 = mean_brightness(first), mean_brightness(second)
    if b1 == 0 or b2 == 0:
        return 0.0
    try:
        normalised = [_scaled_to_brightness(img, _TARGET_BRIGHTNESS) for img in images]
    except (TypeError, ValueError) as e:  # 16-bit or float pixels: no lookup table
        logger.info("check_brightness_decrease_and_structure_sim: %s", e)
        return 0.0
    return float(b1 < b2 and _mse(*normalised) < threshold)


def _mean_saturation(img: Any) -> float:
    np = require("numpy")
    return float(np.asarray(img.getchannel("S"), dtype=np.float64).mean())


def check_saturation_increase_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when ``result`` is more saturated than ``expected`` with the same hue and value.

    Both are compared in HSV: mean S must be higher in ``result``; the H and V channels must
    each have SSIM ≥ 0.9.
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    hsv1, hsv2 = (img.convert("RGB").convert("HSV") for img in images)
    if _mean_saturation(hsv1) <= _mean_saturation(hsv2):
        return 0.0
    same = all(similar(hsv1.getchannel(c), hsv2.getchannel(c)) for c in ("H", "V"))
    return float(same)


def check_contrast_increase_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when ``result`` has more contrast than ``expected`` and SSIM ≥ 0.65.

    Contrast is the standard deviation of all pixel values as stored (every band; a palette
    image's indices, as OSWorld reads them).
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    np = require("numpy")
    first, second = images  # as stored: a palette image's indices, as in OSWorld
    contrast1 = float(np.asarray(first, dtype=np.float32).std())
    contrast2 = float(np.asarray(second, dtype=np.float32).std())
    return float(contrast1 > contrast2 and similar(first, second, _CONTRAST_SSIM))


def check_file_exists(directory: str | None, filename: str | None) -> float:
    """1 when ``filename`` is a regular file in ``directory``, on the host that scores.

    OSWorld's ``gimp`` module's version, the one its package exports (``docs`` defines another
    that adds a guard for empty arguments): ``os.path.join`` then ``isfile``, so an absolute
    ``filename`` stands on its own. Unchanged from desktop-env 1.0.2 to 2026.04; none of the
    snapshot's task files uses it. A missing argument scores 0 here, where OSWorld's raises
    (TypeError), which the evaluator scores 0 too.

    Example:
        >>> check_file_exists("/", "no-such-file"), check_file_exists(None, "x")
        (0.0, 0.0)
    """
    if directory is None or filename is None:
        return 0.0
    return float(os.path.isfile(os.path.join(directory, filename)))


def check_palette_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when ``result`` is an indexed (palette, mode ``P``) image with SSIM ≥ 0.9."""
    images = load_images(result, expected)
    if images is None:
        return 0.0
    image, reference = images
    return float(image.mode == "P" and similar(image, reference))


def check_file_exists_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when the exported file exists and has SSIM ≥ 0.9 with the reference."""
    images = load_images(result, expected)
    return 0.0 if images is None else float(similar(*images))


def check_image_mirror(result: str | None, expected: str | None) -> float:
    """1 when ``result`` flipped left-right has SSIM ≥ 0.99 with ``expected``."""
    images = load_images(result, expected)
    if images is None:
        return 0.0
    image, reference = images
    flipped = image.transpose(require("PIL.Image").Transpose.FLIP_LEFT_RIGHT)
    return float(similar(flipped, reference, _MIRROR_SSIM))


def _content(img: Any) -> Any | None:
    """The image cropped to its non-transparent pixels (``None`` if all are transparent)."""
    if img.mode not in ("RGBA", "LA") and "transparency" not in img.info:
        return img
    rgba = img.convert("RGBA")
    box = rgba.getchannel("A").getbbox()
    return None if box is None else rgba.crop(box).convert("RGB")


def check_structure_sim_resized(result: str | None, expected: str | None) -> float:
    """1 when ``result``, cropped to its opaque content and resized, has SSIM ≥ 0.9.

    An image with transparency is cropped to the bounding box of its non-transparent pixels
    (a fully transparent image scores 0); the result is then resized (bicubic) to the
    reference's size.
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    image, reference = images
    content = _content(image)
    if content is None:
        return 0.0
    resized = content.resize(reference.size, require("PIL.Image").Resampling.BICUBIC)
    return float(similar(resized, reference))


def check_structure_sim_with_threshold(
    result: str | None, expected: str | None, **options: Any
) -> float:
    """1 when the SSIM of the two images reaches ``ssim_threshold``.

    The result is resized (Lanczos) to the reference's size when they differ. Images under
    7 px a side use the largest odd window that fits.

    Args:
        result: Path of the agent's image.
        expected: Path of the reference image.
        **options: ``ssim_threshold`` (default 0.85).
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    np = require("numpy")
    image, reference = images
    if image.size != reference.size:
        image = image.resize(reference.size, require("PIL.Image").Resampling.LANCZOS)
    a, b = np.asarray(image.convert("RGB")), np.asarray(reference.convert("RGB"))
    side = min(a.shape[:2])
    window = min(_MIN_SIDE, side if side % 2 else side - 1)
    if window < 3:  # a 1-pixel window has no variance; scikit-image returns NaN there
        return 0.0
    score = ssim(a, b, win_size=window)
    return float(score >= options.get("ssim_threshold", _DEFAULT_SSIM_OPTION))
