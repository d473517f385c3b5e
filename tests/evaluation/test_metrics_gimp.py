"""GIMP metrics on small PNGs drawn with Pillow: one edit at a time against the original."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
ImageEnhance = pytest.importorskip("PIL.ImageEnhance")
np = pytest.importorskip("numpy")

from osworld_gym.evaluation.metrics import get_metric, metrics_for  # noqa: E402


def photo(width: int = 64, height: int = 48) -> Any:
    """A smooth colour gradient with two solid shapes: structure, hue and saturation."""
    x, y = np.linspace(0, 1, width)[None, :], np.linspace(0, 1, height)[:, None]
    red = 200 * x + 30 * y + 20
    green = 60 + 120 * y + 40 * np.sin(6 * x)
    blue = 180 - 150 * x * y
    img = Image.fromarray(np.stack(np.broadcast_arrays(red, green, blue), 2).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    draw.rectangle((10, 8, 25, 30), fill=(250, 240, 30))
    draw.ellipse((35, 20, 55, 40), fill=(20, 60, 200))
    return img


def save(img: Any, path: Path) -> str:
    img.save(path)
    return str(path)


def scaled(img: Any, factor: float) -> Any:
    return Image.fromarray(np.clip(np.asarray(img, dtype=float) * factor, 0, 255).astype(np.uint8))


def with_saturation(img: Any, factor: float) -> Any:
    hsv = np.asarray(img.convert("HSV"), dtype=float)
    hsv[..., 1] = np.clip(hsv[..., 1] * factor, 0, 255)
    return Image.frombytes("HSV", img.size, hsv.astype(np.uint8).tobytes()).convert("RGB")


def flipped(img: Any) -> Any:
    return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)


@pytest.fixture
def original(tmp_path: Path) -> str:
    return save(photo(), tmp_path / "original.png")


def variant(tmp_path: Path, name: str, make: Callable[[Any], Any]) -> str:
    return save(make(photo()), tmp_path / f"{name}.png")


def test_missing_or_unreadable_inputs_score_zero(tmp_path: Path, original: str) -> None:
    text = tmp_path / "text.png"
    text.write_text("not an image")
    two = [
        "check_brightness_decrease_and_structure_sim",
        "check_saturation_increase_and_structure_sim",
        "check_contrast_increase_and_structure_sim", "check_palette_and_structure_sim",
        "check_file_exists_and_structure_sim", "check_image_mirror",
        "check_structure_sim_resized", "check_structure_sim_with_threshold",
        "check_green_background",
    ]  # fmt: skip
    for name in two:
        metric = get_metric(name)
        assert metric(None, original) == 0.0, name
        assert metric(original, None) == 0.0, name
        assert metric(str(tmp_path / "absent.png"), original) == 0.0, name
        assert metric(str(text), original) == 0.0, name
    for name in ("check_triangle_position", "check_textbox_on_leftside"):
        assert get_metric(name)(None) == 0.0
        assert get_metric(name)(str(text)) == 0.0


def test_check_brightness_decrease_and_structure_sim(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_brightness_decrease_and_structure_sim")
    darker = variant(tmp_path, "darker", lambda img: scaled(img, 0.6))
    brighter = variant(tmp_path, "brighter", lambda img: scaled(img, 1.3))
    assert metric(darker, original) == 1.0
    assert metric(brighter, original) == 0.0
    assert metric(original, original) == 0.0  # not darker
    # a "brighten" task passes the original first, as multi_apps/4c26e3f3 does
    assert metric(original, brighter, threshold=0.15) == 1.0
    other = variant(tmp_path, "other", lambda img: scaled(flipped(img), 0.6))
    assert metric(other, original) == 0.0  # darker, but another picture
    assert metric(other, original, threshold=1.0) == 1.0  # ... unless any MSE is allowed
    black = save(Image.new("RGB", (64, 48)), tmp_path / "black.png")
    assert metric(black, original) == 0.0


def test_check_saturation_increase_and_structure_sim(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_saturation_increase_and_structure_sim")
    assert metric(variant(tmp_path, "sat", lambda img: with_saturation(img, 1.25)), original) == 1
    assert metric(variant(tmp_path, "dull", lambda img: with_saturation(img, 0.6)), original) == 0
    assert metric(original, original) == 0.0
    moved = variant(tmp_path, "moved", lambda img: flipped(with_saturation(img, 1.25)))
    assert metric(moved, original) == 0.0


def test_check_contrast_increase_and_structure_sim(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_contrast_increase_and_structure_sim")
    contrast = lambda factor: lambda img: ImageEnhance.Contrast(img).enhance(factor)  # noqa: E731
    assert metric(variant(tmp_path, "more", contrast(1.4)), original) == 1.0
    assert metric(variant(tmp_path, "less", contrast(0.6)), original) == 0.0
    moved = variant(tmp_path, "moved", lambda img: flipped(contrast(1.4)(img)))
    assert metric(moved, original) == 0.0


def test_check_palette_and_structure_sim(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_palette_and_structure_sim")

    def indexed(img: Any) -> Any:
        return img.convert("P", palette=Image.Palette.ADAPTIVE)

    assert metric(variant(tmp_path, "indexed", indexed), original) == 1.0
    assert metric(original, original) == 0.0  # RGB, not indexed
    other = variant(tmp_path, "other", lambda img: indexed(flipped(img)))
    assert metric(other, original) == 0.0


def test_check_file_exists_and_structure_sim(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_file_exists_and_structure_sim")
    assert metric(variant(tmp_path, "export", lambda img: img), original) == 1.0
    assert metric(variant(tmp_path, "flip", flipped), original) == 0.0
    assert metric(variant(tmp_path, "small", lambda img: img.resize((32, 24))), original) == 0.0
    tiny = save(Image.new("RGB", (6, 6)), tmp_path / "tiny.png")
    assert metric(tiny, tiny) == 0.0  # under the 7-pixel SSIM window


def test_check_image_mirror(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_image_mirror")
    assert metric(variant(tmp_path, "mirror", flipped), original) == 1.0
    assert metric(original, original) == 0.0
    upside_down = variant(tmp_path, "v", lambda img: img.transpose(Image.Transpose.FLIP_TOP_BOTTOM))
    assert metric(upside_down, original) == 0.0


def test_check_structure_sim_resized(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_structure_sim_resized")

    def on_transparent_canvas(img: Any) -> Any:
        canvas = Image.new("RGBA", (80, 70), (0, 0, 0, 0))
        canvas.paste(img.resize((32, 24)), (10, 10))
        return canvas

    assert metric(variant(tmp_path, "resized", on_transparent_canvas), original) == 1.0
    assert metric(variant(tmp_path, "plain", lambda img: img.resize((32, 24))), original) == 1.0
    clear = save(Image.new("RGBA", (80, 70), (0, 0, 0, 0)), tmp_path / "clear.png")
    assert metric(clear, original) == 0.0
    moved = variant(tmp_path, "flip", lambda img: flipped(img).resize((32, 24)))
    assert metric(moved, original) == 0.0


def test_check_structure_sim_with_threshold(tmp_path: Path, original: str) -> None:
    metric = get_metric("check_structure_sim_with_threshold")
    rng = np.random.default_rng(0)

    def noisy(img: Any) -> Any:
        noise = rng.integers(-12, 12, (48, 64, 3))
        return Image.fromarray(np.clip(np.asarray(img, int) + noise, 0, 255).astype(np.uint8))

    result = variant(tmp_path, "noisy", noisy)
    assert metric(result, original, ssim_threshold=0.5) == 1.0
    assert metric(result, original, ssim_threshold=0.999) == 0.0
    assert metric(original, original) == 1.0  # default threshold 0.85
    assert metric(variant(tmp_path, "big", lambda img: img.resize((128, 96))), original) == 1.0
    assert metric(variant(tmp_path, "flip", flipped), original) == 0.0
    five = save(photo(5, 5), tmp_path / "five.png")
    assert metric(five, five) == 1.0  # a 5-pixel window still works
    two = save(photo(2, 2), tmp_path / "two.png")
    assert metric(two, two) == 0.0


def green_scene(background: tuple[int, int, int], size: tuple[int, int], mode: str = "RGB") -> Any:
    """A plain background with a black square (the object) near the top-left corner."""
    img = Image.new("RGB", size, background)
    ImageDraw.Draw(img).rectangle((5, 5, 15, 15), fill=(0, 0, 0))
    return img.convert(mode)


def test_check_green_background_scores_as_osworld(tmp_path: Path) -> None:
    """OSWorld reads pixel [x, y] of (row, column) arrays, as stored: square images only."""
    metric = get_metric("check_green_background")

    def score(result: Any, reference: Any) -> float:
        return metric(save(result, tmp_path / "result.png"), save(reference, tmp_path / "ref.png"))

    white = (255, 255, 255)
    green, yellow = (30, 200, 40), (200, 200, 40)
    assert score(green_scene(green, (30, 30)), green_scene(white, (30, 30))) == 1.0
    assert score(green_scene(yellow, (30, 30)), green_scene(white, (30, 30))) == 0.0
    assert score(green_scene(green, (40, 24)), green_scene(white, (40, 24))) == 0.0  # not square
    assert score(green_scene(green, (24, 40)), green_scene(white, (24, 40))) == 0.0
    assert score(green_scene(green, (30, 30)), green_scene(white, (30, 30), "L")) == 0.0  # grey
    assert score(green_scene(green, (30, 30)), green_scene(white, (30, 30), "P")) == 0.0
    assert score(green_scene(green, (30, 30)), green_scene(white, (30, 30), "RGBA")) == 1.0
    # A larger result: the reference's square is read from its top-left corner.
    assert score(green_scene(green, (40, 40)), green_scene(white, (30, 30))) == 1.0
    assert score(green_scene(green, (20, 20)), green_scene(white, (30, 30))) == 0.0
    assert score(green_scene(white, (30, 30)), Image.new("RGB", (30, 30))) == 1.0  # all black
    assert metric(None, None) == 0.0


def test_check_green_background_fixed(tmp_path: Path) -> None:
    metric = metrics_for("fixed")["check_green_background"]

    def scene(background: tuple[int, int, int], size: tuple[int, int] = (40, 24)) -> Any:
        return green_scene(background, size)

    reference = save(scene((255, 255, 255)), tmp_path / "reference.png")  # not square
    assert metric(save(scene((30, 200, 40)), tmp_path / "green.png"), reference) == 1.0
    assert metric(save(scene((255, 255, 255)), tmp_path / "white.png"), reference) == 0.0
    assert metric(save(scene((200, 200, 40)), tmp_path / "yellow.png"), reference) == 0.0
    assert metric(save(scene((30, 200, 40), (24, 40)), tmp_path / "turned.png"), reference) == 0
    grey = save(green_scene((255, 255, 255), (40, 24), "L"), tmp_path / "grey.png")
    assert metric(save(scene((30, 200, 40)), tmp_path / "green.png"), grey) == 1.0


def triangle_image(
    cx: int, cy: int, markers: tuple[tuple[int, tuple[int, int, int]], ...] = ()
) -> Any:
    """A yellow triangle centred at (cx, cy) on blue, with marker runs along the top edge.

    Each marker is ``(n, colour)``: n pixels of a colour rarer than the triangle's.
    """
    img = Image.new("RGB", (200, 160), (40, 40, 120))
    corners = [(cx - 12, cy + 10), (cx + 12, cy + 10), (cx, cy - 10)]
    draw = ImageDraw.Draw(img)
    draw.polygon(corners, fill="yellow")
    for row, (count, colour) in enumerate(markers):
        draw.line((0, 2 * row, count - 1, 2 * row), fill=colour)
    return img


def test_check_triangle_position_scores_as_osworld(tmp_path: Path) -> None:
    """OSWorld sorts colours by ascending count and takes the second one."""
    metric = get_metric("check_triangle_position")

    def score(img: Any, name: str) -> float:
        return metric(save(img, tmp_path / f"{name}.png"))

    # Two colours: the second least frequent is the background, centred wherever the shape is.
    assert score(triangle_image(100, 80), "two_centred") == 1.0
    assert score(triangle_image(30, 30), "two_off") == 1.0
    # Three colours: the triangle's colour comes second.
    assert score(triangle_image(30, 30, ((4, (255, 0, 0)),)), "three_off") == 0.0
    assert score(triangle_image(100, 80, ((4, (255, 0, 0)),)), "three_centred") == 1.0
    # Four: a 9-pixel run in the corner is second, so a centred triangle fails.
    markers = ((4, (255, 0, 0)), (9, (0, 255, 0)))
    assert score(triangle_image(100, 80, markers), "four_centred") == 0.0
    assert score(triangle_image(100, 80).convert("L"), "grey") == 0.0  # no colour channels
    assert score(Image.new("RGB", (50, 50), "white"), "empty") == 0.0
    assert metric(None) == 0.0


def test_check_triangle_position_fixed(tmp_path: Path) -> None:
    metric = metrics_for("fixed")["check_triangle_position"]

    def triangle_at(cx: int, cy: int, markers: tuple = ()) -> str:
        return save(triangle_image(cx, cy, markers), tmp_path / f"t{cx}_{cy}_{len(markers)}.png")

    assert metric(triangle_at(100, 80)) == 1.0
    assert metric(triangle_at(30, 30)) == 0.0
    assert metric(triangle_at(100, 30)) == 0.0  # centred across, not down
    assert metric(triangle_at(100, 80, ((4, (255, 0, 0)), (9, (0, 255, 0))))) == 1.0
    assert metric(save(Image.new("RGB", (50, 50), "white"), tmp_path / "empty.png")) == 0.0


def test_check_textbox_on_leftside(tmp_path: Path) -> None:
    metric = get_metric("check_textbox_on_leftside")

    def text_at(x: int) -> str:
        img = Image.new("RGB", (200, 80), (230, 230, 230))
        ImageDraw.Draw(img).rectangle((x, 30, x + 60, 40), fill=(10, 10, 10))
        return save(img, tmp_path / f"text{x}.png")

    assert metric(text_at(3)) == 1.0
    assert metric(text_at(9)) == 1.0  # 9 < 5% of 200
    assert metric(text_at(10)) == 0.0
    assert metric(save(Image.new("RGB", (50, 50), "white"), tmp_path / "blank.png")) == 0.0
