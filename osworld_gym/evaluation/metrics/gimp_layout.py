"""GIMP task metrics that look at where things are in one image: background, shapes, text.

OSWorld's ``gimp`` module (layout part). A missing path, a missing file or a file Pillow
cannot read scores 0. Two of OSWorld's metrics read pixels by accident rather than as their
comments intend; each has two versions here: the plain name scores as OSWorld's code does,
and a ``_fixed`` one (the ``"fixed"`` evaluation mode) implements the stated intent. Each
docstring says what differs.
"""

from __future__ import annotations

import logging
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics.gimp import load_images

logger = logging.getLogger(__name__)

_CENTER_TOLERANCE = 0.05  # check_triangle_position: centroid within 5% of each side of centre
_LEFT_MARGIN = 0.05  # check_textbox_on_leftside: text must start in the left 5% of the width
_DARK = 128  # check_textbox_on_leftside: a grey level below this is text


def _not_black(pixels: Any) -> Any:
    """OSWorld's background test of each pixel: its first three channels are not all 0.

    With fewer than three channels the comparison with black never holds: all background.
    """
    np = require("numpy")
    if pixels.shape[2] < 3:
        return np.ones(pixels.shape[:2], dtype=bool)
    return pixels[..., :3].any(axis=2)


def check_green_background(result: str | None, expected: str | None) -> float:
    """OSWorld's score: 1 when the reference's non-black pixels are green in ``result``.

    "Green" means the green channel is larger than red and blue. OSWorld walks ``x`` over
    the reference's width and ``y`` over its height but reads pixel ``[x, y]`` of
    (row, column) arrays, so only a square reference can pass (any other raises there); it
    reads pixels as stored, so a reference without colour channels (grey, palette) fails, and
    a result smaller than the reference, or without three channels, fails where a non-black
    reference pixel needs it. ``check_green_background_fixed()`` checks every pixel of any
    shape.
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    np = require("numpy")
    source, target = np.asarray(images[0]), np.asarray(images[1])
    width, height = images[1].size
    if width * height == 0:
        return 1.0  # nothing to walk over
    if target.ndim != 3 or width != height:
        return 0.0
    background = _not_black(target)
    if not background.any():
        return 1.0
    if source.ndim != 3 or source.shape[2] < 3:
        return 0.0
    rows, cols = np.nonzero(background)
    if rows.max() >= source.shape[0] or cols.max() >= source.shape[1]:
        return 0.0
    picked = source[rows, cols, :3].astype(np.int64)
    r, g, b = picked[:, 0], picked[:, 1], picked[:, 2]
    return float(bool(np.all((g > r) & (g > b))))


def check_green_background_fixed(result: str | None, expected: str | None) -> float:
    """1 when every pixel that is not black in ``expected`` is green in ``result``.

    The reference shows the object in black on a lighter background; "green" means the
    green channel is larger than both red and blue. Images of different sizes score 0.
    Unlike OSWorld's ``check_green_background()``, every pixel is checked whatever the
    image's shape and colour mode.
    """
    images = load_images(result, expected)
    if images is None:
        return 0.0
    np = require("numpy")
    image, reference = images
    if image.size != reference.size:
        return 0.0
    got = np.asarray(image.convert("RGB"), dtype=np.int16)
    background = np.asarray(reference.convert("RGB")).any(axis=2)
    r, g, b = got[..., 0], got[..., 1], got[..., 2]
    green = (g > r) & (g > b)
    return float(bool(np.all(green[background])))


def _second_colour_mask(pixels: Any) -> Any | None:
    """Where the image has its second most frequent RGBA colour (``None``: one colour only)."""
    np = require("numpy")
    flat = pixels.reshape(-1, 4).astype(np.uint32)
    packed = (flat[:, 0] << 24) | (flat[:, 1] << 16) | (flat[:, 2] << 8) | flat[:, 3]
    colours, counts = np.unique(packed, return_counts=True)
    if len(colours) < 2:
        return None
    second = colours[np.argsort(counts, kind="stable")[-2]]
    return (packed == second).reshape(pixels.shape[:2])


def _centred(mask: Any) -> bool:
    """Whether the True pixels' centroid lies within 5% of each side from the centre."""
    np = require("numpy")
    centroid = np.argwhere(mask).mean(axis=0)
    shape = np.array(mask.shape, dtype=np.float64)
    return bool(np.all(np.abs(centroid - shape / 2) < _CENTER_TOLERANCE * shape))


def check_triangle_position(result: str | None) -> float:
    """OSWorld's score: 1 when the second *least* frequent colour is centred in the image.

    OSWorld's comments mean the shape's colour (the second most frequent, the background
    being the first) but its code sorts colours by ascending count: on an antialiased export
    it picks a handful of edge pixels, whose centroid decides. Pixels are compared as stored
    (alpha included); an image without colour channels or with one colour scores 0.
    ``check_triangle_position_fixed()`` uses the shape's colour.
    """
    images = load_images(result)
    if images is None:
        return 0.0
    np = require("numpy")
    pixels = np.asarray(images[0])
    if pixels.ndim != 3:
        return 0.0
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    if len(colours) < 2:
        return 0.0
    # The default (unstable) sort, as OSWorld's: among colours with equal counts the same
    # one comes second.
    picked = colours[np.argsort(counts)[1]]
    return float(_centred(np.all(pixels == picked, axis=2)))


def check_triangle_position_fixed(result: str | None) -> float:
    """1 when the shape drawn on a plain background has its centroid at the image centre.

    The background is the most frequent colour and the shape the second most frequent; the
    shape's pixel centroid must lie within 5% of the height (and of the width) from the
    centre. OSWorld's ``check_triangle_position()`` takes the second *least* frequent
    colour instead.
    """
    images = load_images(result)
    if images is None:
        return 0.0
    np = require("numpy")
    mask = _second_colour_mask(np.asarray(images[0].convert("RGBA")))
    if mask is None:
        return 0.0
    return float(_centred(mask))


def check_textbox_on_leftside(result: str | None) -> float:
    """1 when the leftmost dark pixel (grey < 128) lies in the left 5% of the image.

    An image without dark pixels scores 0.
    """
    images = load_images(result)
    if images is None:
        return 0.0
    np = require("numpy")
    dark_columns = np.flatnonzero((np.asarray(images[0].convert("L")) < _DARK).any(axis=0))
    if dark_columns.size == 0:
        return 0.0
    return float(dark_columns[0] < images[0].width * _LEFT_MARGIN)
