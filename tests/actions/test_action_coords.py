"""Coordinate math: smart resize and model-to-screen mapping, table-tested."""

from __future__ import annotations

import math

import pytest
from actions_support import QUICK
from hypothesis import given
from hypothesis import strategies as st

from osworld_gym.actions import coords

SMART_RESIZE = [
    # (height, width, options) -> (height, width)
    ((1080, 1920, {}), (1092, 1932)),
    ((1080, 1920, {"min_pixels": 78_400, "max_pixels": 12_845_056}), (1092, 1932)),
    ((720, 1280, {}), (728, 1288)),
    ((768, 1366, {}), (756, 1372)),
    ((1440, 2560, {}), (1064, 1932)),  # over max_pixels: scaled down, floored
    ((2160, 3840, {}), (1064, 1932)),
    ((1080, 1920, {"max_pixels": 1280 * 28 * 28}), (728, 1316)),
    ((28, 28, {}), (56, 56)),  # under min_pixels: scaled up
    ((10, 10, {}), (56, 56)),
    ((224, 224, {}), (224, 224)),
    ((100, 5000, {}), (112, 5012)),
    ((1080, 1920, {"factor": 14}), (1078, 1918)),
]


@pytest.mark.parametrize(("args", "expected"), SMART_RESIZE)
def test_smart_resize(args: tuple, expected: tuple[int, int]) -> None:
    height, width, options = args
    assert coords.smart_resize(height, width, **options) == expected


@pytest.mark.parametrize(
    "args",
    [(0, 100), (100, -1), (1, 201), (100, 100, 0), (100, 100, 28, 10, 5)],
)
def test_smart_resize_rejects(args: tuple) -> None:
    with pytest.raises(ValueError):
        coords.smart_resize(*args)


@QUICK
@given(
    st.integers(20, 5000),
    st.integers(20, 5000),
    st.sampled_from([(3136, 2_116_800), (78_400, 12_845_056), (3136, 1_003_520)]),
)
def test_smart_resize_properties(height: int, width: int, bounds: tuple[int, int]) -> None:
    if max(height, width) / min(height, width) > coords.MAX_RATIO:
        return
    low, high = bounds
    h, w = coords.smart_resize(height, width, min_pixels=low, max_pixels=high)
    assert h % 28 == 0 and w % 28 == 0
    assert h * w <= max(high, 28 * 28)
    assert h * w >= low or h * w >= 28 * 28 * math.floor(low / (28 * 28))


FACTOR_ROUNDING = [
    (coords.round_by_factor, 41, 28),
    (coords.round_by_factor, 43, 56),
    (coords.round_by_factor, 42, 56),  # Python rounds half to even: 1.5 -> 2
    (coords.ceil_by_factor, 29, 56),
    (coords.ceil_by_factor, 28, 28),
    (coords.floor_by_factor, 55, 28),
    (coords.floor_by_factor, 56, 56),
]


@pytest.mark.parametrize(("func", "number", "expected"), FACTOR_ROUNDING)
def test_factor_rounding(func, number: int, expected: int) -> None:
    assert func(number, 28) == expected


TO_SCREEN = [
    # (x, y, screen, system) -> screen pixels
    ((1188, 554, (1920, 1080), "resized"), (1181, 548)),
    ((0, 0, (1920, 1080), "resized"), (0, 0)),
    ((1932, 1092, (1920, 1080), "resized"), (1919, 1079)),
    ((966, 546, (1920, 1080), "resized"), (960, 540)),
    ((644, 364, (1280, 720), "resized"), (640, 360)),
    ((500, 500, (1920, 1080), "relative"), (960, 540)),
    ((999, 1, (1920, 1080), "relative"), (1918, 1)),
    ((1000, 1000, (1920, 1080), "relative"), (1919, 1079)),
    ((-10, 2000, (1920, 1080), "relative"), (0, 1079)),
    ((10.5, 20.49, (1920, 1080), "screen"), (11, 20)),
    ((1e9, -1e9, (1920, 1080), "screen"), (1919, 0)),
    ((math.inf, 5, (1920, 1080), "screen"), (1919, 5)),
]


@pytest.mark.parametrize(("args", "expected"), TO_SCREEN)
def test_to_screen(args: tuple, expected: tuple[int, int]) -> None:
    x, y, screen, system = args
    assert coords.to_screen(x, y, screen, system) == expected


def test_to_screen_rejects() -> None:
    with pytest.raises(ValueError, match="NaN"):
        coords.to_screen(math.nan, 1, (1920, 1080), "screen")
    with pytest.raises(ValueError, match="unknown coordinate system"):
        coords.to_screen(1, 1, (1920, 1080), "polar")  # type: ignore[arg-type]


@QUICK
@given(st.integers(0, 1919), st.integers(0, 1079))
def test_from_screen_inverts_to_screen_when_the_model_grid_is_finer(x: int, y: int) -> None:
    model = coords.from_screen(x, y, (1920, 1080), "resized")
    assert coords.to_screen(*model, (1920, 1080), "resized") == (x, y)


@QUICK
@given(st.integers(0, 1919), st.integers(0, 1079))
def test_relative_round_trip_within_a_pixel(x: int, y: int) -> None:
    model = coords.from_screen(x, y, (1920, 1080), "relative")
    back = coords.to_screen(*model, (1920, 1080), "relative")
    assert abs(back[0] - x) <= 1 and abs(back[1] - y) <= 1


def test_round_half_up() -> None:
    assert [coords.round_half_up(v) for v in (0.5, 1.5, 2.5, -0.5, 2.49)] == [1, 2, 3, 0, 2]
