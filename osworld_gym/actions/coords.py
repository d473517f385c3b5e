"""Coordinate math: smart resize and model-to-screen mapping. Pure functions.

Vision-language models see a resized screenshot and answer in one of three conventions:

* ``"resized"`` -- absolute pixels in the image the model saw, which the Qwen2.5-VL image
  processor made with ``smart_resize()`` (UI-TARS-1.5). Mapping back needs the same
  ``factor``, ``min_pixels`` and ``max_pixels`` as the image processor used.
* ``"relative"`` -- a 0-1000 grid over the screen (UI-TARS 1.0, Qwen2-VL era models).
* ``"screen"`` -- screen pixels already (pyautogui code, OSWorld ``computer_13``).

Screen sizes are ``(width, height)`` like everywhere in osworld-gym; ``smart_resize()``
alone takes and returns ``(height, width)``, the order of the Qwen image processors.
Results are integer pixels, rounded half up and clamped to the screen.
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Literal, TypeAlias

logger = logging.getLogger(__name__)

__all__ = [
    "IMAGE_FACTOR",
    "MAX_PIXELS",
    "MAX_RATIO",
    "MIN_PIXELS",
    "CoordinateSystem",
    "ScreenSize",
    "ceil_by_factor",
    "clamp_point",
    "floor_by_factor",
    "from_screen",
    "round_by_factor",
    "round_half_up",
    "scale_factors",
    "smart_resize",
    "to_screen",
]

ScreenSize: TypeAlias = tuple[int, int]
CoordinateSystem: TypeAlias = Literal["resized", "relative", "screen"]
COORDINATE_SYSTEMS: tuple[str, ...] = ("resized", "relative", "screen")

IMAGE_FACTOR = 28
# The image-processor bounds of the ARPO / UI-TARS-1.5 training pipeline (4*28*28 and
# 2700*28*28 pixels). Pass your processor's own values if they differ.
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 2700 * 28 * 28
MAX_RATIO = 200
RELATIVE_GRID = 1000


def round_by_factor(number: float, factor: int) -> int:
    """Return the multiple of ``factor`` closest to ``number`` (Python rounding, as Qwen's).

    Example:
        >>> round_by_factor(1080, 28), round_by_factor(1920, 28)
        (1092, 1932)
    """
    return round(number / factor) * factor


def ceil_by_factor(number: float, factor: int) -> int:
    """Return the smallest multiple of ``factor`` that is at least ``number``.

    Example:
        >>> ceil_by_factor(29, 28)
        56
    """
    return math.ceil(number / factor) * factor


def floor_by_factor(number: float, factor: int) -> int:
    """Return the largest multiple of ``factor`` that is at most ``number``.

    Example:
        >>> floor_by_factor(55, 28)
        28
    """
    return math.floor(number / factor) * factor


@functools.lru_cache(maxsize=256)
def smart_resize(
    height: int,
    width: int,
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Return the ``(height, width)`` a Qwen2-VL/2.5-VL image processor resizes an image to.

    Both sides become multiples of ``factor``, the aspect ratio is kept as well as it can be,
    and the pixel count lands in ``[min_pixels, max_pixels]``.

    Args:
        height: Image height in pixels.
        width: Image width in pixels.
        factor: The patch-merge size; both sides are multiples of it.
        min_pixels: Smallest pixel count of the result.
        max_pixels: Largest pixel count of the result.

    Returns:
        The resized ``(height, width)``.

    Raises:
        ValueError: a size is not positive, the bounds are inconsistent, or the aspect ratio
            exceeds 200.

    Example:
        >>> smart_resize(1080, 1920)
        (1092, 1932)
        >>> smart_resize(720, 1280)
        (728, 1288)
        >>> smart_resize(1080, 1920, max_pixels=1280 * 28 * 28)
        (728, 1316)
    """
    if height <= 0 or width <= 0 or factor <= 0 or not 0 < min_pixels <= max_pixels:
        raise ValueError(
            f"invalid smart_resize arguments: height={height}, width={width}, "
            f"factor={factor}, min_pixels={min_pixels}, max_pixels={max_pixels}"
        )
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"aspect ratio of {width}x{height} exceeds {MAX_RATIO}")
    new_h = max(factor, round_by_factor(height, factor))
    new_w = max(factor, round_by_factor(width, factor))
    if new_h * new_w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        new_h = max(factor, floor_by_factor(height / beta, factor))
        new_w = max(factor, floor_by_factor(width / beta, factor))
    elif new_h * new_w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        new_h = ceil_by_factor(height * beta, factor)
        new_w = ceil_by_factor(width * beta, factor)
    return new_h, new_w


def round_half_up(value: float) -> int:
    """Round to the nearest integer, halves away from minus infinity (no banker's rounding).

    Example:
        >>> round_half_up(2.5), round_half_up(-0.5), round_half_up(1180.62)
        (3, 0, 1181)
    """
    return math.floor(value + 0.5)


def clamp_point(x: float, y: float, screen_size: ScreenSize) -> tuple[int, int]:
    """Round a point to integer pixels and clamp it onto the screen.

    Raises:
        ValueError: a coordinate is NaN.

    Example:
        >>> clamp_point(-3, 1080.4, (1920, 1080)), clamp_point(float("inf"), 5, (1920, 1080))
        ((0, 1079), (1919, 5))
    """
    if x != x or y != y:
        raise ValueError("a coordinate is NaN")
    width, height = screen_size
    x = min(max(x, 0.0), width - 1)
    y = min(max(y, 0.0), height - 1)
    return min(round_half_up(x), width - 1), min(round_half_up(y), height - 1)


@functools.lru_cache(maxsize=256)
def scale_factors(
    screen_size: ScreenSize,
    system: str = "resized",
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[float, float]:
    """Return the screen pixels per model unit along x and y.

    Args:
        screen_size: ``(width, height)`` of the screen (a tuple: results are cached).
        system: The model's coordinate convention.
        factor: Smart-resize factor (``"resized"`` only).
        min_pixels: Smart-resize lower bound (``"resized"`` only).
        max_pixels: Smart-resize upper bound (``"resized"`` only).

    Raises:
        ValueError: unknown ``system`` or bad smart-resize settings.

    Example:
        >>> scale_factors((1920, 1080), "relative")
        (1.92, 1.08)
    """
    width, height = screen_size
    if system == "resized":
        resized_h, resized_w = smart_resize(height, width, factor, min_pixels, max_pixels)
        return width / resized_w, height / resized_h
    if system == "relative":
        return width / RELATIVE_GRID, height / RELATIVE_GRID
    if system == "screen":
        return 1.0, 1.0
    raise ValueError(f"unknown coordinate system {system!r}; expected one of {COORDINATE_SYSTEMS}")


def to_screen(
    x: float,
    y: float,
    screen_size: ScreenSize,
    system: CoordinateSystem = "resized",
    *,
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Map a model point to integer screen pixels, clamped to the screen.

    Args:
        x: Model x coordinate.
        y: Model y coordinate.
        screen_size: ``(width, height)`` of the screen.
        system: The model's convention (see the module docstring).
        factor: Smart-resize factor (``"resized"`` only).
        min_pixels: Smart-resize lower bound (``"resized"`` only).
        max_pixels: Smart-resize upper bound (``"resized"`` only).

    Returns:
        ``(x, y)`` in screen pixels.

    Raises:
        ValueError: unknown ``system``, bad smart-resize settings, or a NaN coordinate.

    Example:
        >>> to_screen(1188, 554, (1920, 1080))
        (1181, 548)
        >>> to_screen(500, 500, (1920, 1080), "relative")
        (960, 540)
        >>> to_screen(1000, 1000, (1920, 1080), "relative")
        (1919, 1079)
    """
    scale_x, scale_y = scale_factors(tuple(screen_size), system, factor, min_pixels, max_pixels)
    return clamp_point(x * scale_x, y * scale_y, screen_size)


def from_screen(
    x: float,
    y: float,
    screen_size: ScreenSize,
    system: CoordinateSystem = "resized",
    *,
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Map screen pixels to the nearest integer model point (the inverse of ``to_screen()``).

    Used to render typed actions as model text, e.g. few-shot examples or sampled actions.

    Raises:
        ValueError: unknown ``system`` or bad smart-resize settings.

    Example:
        >>> from_screen(1181, 548, (1920, 1080))
        (1188, 554)
        >>> from_screen(960, 540, (1920, 1080), "relative")
        (500, 500)
    """
    scale_x, scale_y = scale_factors(tuple(screen_size), system, factor, min_pixels, max_pixels)
    return round_half_up(x / scale_x), round_half_up(y / scale_y)
