"""GIMP task metrics that look at where things are in one image: background, shapes, text.

OSWorld's ``gimp`` module (layout part). A missing path, a missing file or a file Pillow
cannot read scores 0. Where OSWorld's reading of pixels is accidental, the intent stated in
its comments is implemented instead; each such place is noted in the metric's docstring.
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


def check_green_background(result: str | None, expected: str | None) -> float:
    """1 when every pixel that is not black in ``expected`` is green in ``result``.

    The reference shows the object in black on a lighter background; "green" means the
    green channel is larger than both red and blue. Images of different sizes score 0.
    OSWorld indexes the arrays as ``[x, y]``, which only works for square images; here every
    pixel is checked whatever the shape.
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


def check_triangle_position(result: str | None) -> float:
    """1 when the shape drawn on a plain background has its centroid at the image centre.

    The background is the most frequent colour and the shape the second most frequent; the
    shape's pixel centroid must lie within 5% of the height (and of the width) from the
    centre. OSWorld's code takes the second *least* frequent colour, which on an antialiased
    export is a handful of edge pixels; its comments describe the shape colour, used here.
    """
    images = load_images(result)
    if images is None:
        return 0.0
    np = require("numpy")
    pixels = np.asarray(images[0].convert("RGBA"))
    mask = _second_colour_mask(pixels)
    if mask is None:
        return 0.0
    centroid = np.argwhere(mask).mean(axis=0)
    shape = np.array(mask.shape, dtype=np.float64)
    return float(bool(np.all(np.abs(centroid - shape / 2) < _CENTER_TOLERANCE * shape)))


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
