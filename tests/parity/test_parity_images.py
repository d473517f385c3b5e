"""Parity of the image metrics (OSWorld's ``gimp`` module, ``vlc.compare_images`` and
``slides.check_image_stretch_and_center``) with ours.

Images are drawn with Pillow at test time from a short spec: ``"scene|dark|palette.png"`` is
the test scene, darkened, quantised to a palette, saved as PNG (see ``EDITS`` and
``image_file()``). Special specs: ``None`` (the getter found no file), ``ABSENT`` (a path
with no file), ``"empty.png"`` (0 bytes), ``"text.png"`` (not an image), ``"truncated.png"``
(the first half of a PNG).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from parity_harness import (
    ABSENT,
    Absent,
    OSWorld,
    assert_same_score,
    compare,
    real_rules,
)

from osworld_gym.evaluation.metrics.registry import metrics_for

pytestmark = pytest.mark.parity

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
ImageEnhance = pytest.importorskip("PIL.ImageEnhance")
ImageFilter = pytest.importorskip("PIL.ImageFilter")
ImageOps = pytest.importorskip("PIL.ImageOps")

Spec = str | None | Absent


# --- drawing ------------------------------------------------------------------------------


def scene(width: int = 64, height: int = 48, seed: int = 0) -> Any:
    """A colour gradient with a few solid shapes and a little texture (deterministic)."""
    rng = np.random.default_rng(seed)
    x, y = np.linspace(0, 1, width)[None, :], np.linspace(0, 1, height)[:, None]
    phase = rng.uniform(0, 3)
    red = 170 * x + 40 * y + 30 + 20 * np.sin(5 * y + phase)
    green = 60 + 110 * y + 40 * np.sin(6 * x + phase)
    blue = 170 - 120 * x * y
    pixels = np.stack(np.broadcast_arrays(red, green, blue), 2)
    pixels = pixels + rng.normal(0, 4, pixels.shape)
    img = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    a, b = int(rng.integers(2, 12)), int(rng.integers(2, 10))
    draw.rectangle((a, b, a + width // 4, b + height // 2), fill=(240, 225, 40))
    draw.ellipse((width // 2, height // 3, width // 2 + width // 3, height - 3), fill=(25, 60, 190))
    draw.line((0, height - 1, width - 1, 0), fill=(250, 250, 250), width=2)
    return img


def _noise(img: Any, sigma: float, seed: int = 7) -> Any:
    rng = np.random.default_rng(seed)
    arr = np.asarray(img.convert("RGB"), dtype=np.float64)
    return Image.fromarray(np.clip(arr + rng.normal(0, sigma, arr.shape), 0, 255).astype(np.uint8))


def _scale(img: Any, factor: float) -> Any:
    arr = np.asarray(img.convert("RGB"), dtype=np.float64) * factor
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def _hsv_saturation(img: Any, factor: float, add: int = 0) -> Any:
    """The image with its HSV saturation scaled (hue and value kept)."""
    hsv = np.asarray(img.convert("RGB").convert("HSV"), dtype=np.float64)
    hsv[..., 1] = np.clip(hsv[..., 1] * factor + add, 0, 255)
    return Image.fromarray(hsv.astype(np.uint8), mode="HSV").convert("RGB")


def _bordered(img: Any, border: int) -> Any:
    """The image on a larger transparent canvas (RGBA)."""
    canvas = Image.new("RGBA", (img.width + 2 * border, img.height + 2 * border), (0, 0, 0, 0))
    canvas.paste(img.convert("RGBA"), (border, border))
    return canvas


def _transparency_key(img: Any) -> Any:
    """A palette image whose index 0 is transparent (``info["transparency"]``)."""
    pal = img.convert("RGB").quantize(16)
    pal.info["transparency"] = 0
    return pal


def _alpha_hole(img: Any) -> Any:
    rgba = img.convert("RGBA")
    alpha = Image.new("L", img.size, 255)
    ImageDraw.Draw(alpha).rectangle((0, 0, img.width // 3, img.height - 1), fill=0)
    rgba.putalpha(alpha)
    return rgba


EDITS: dict[str, Callable[[Any], Any]] = {
    "dark": lambda im: ImageEnhance.Brightness(im).enhance(0.6),
    "darker": lambda im: ImageEnhance.Brightness(im).enhance(0.3),
    "slightly-dark": lambda im: ImageEnhance.Brightness(im).enhance(0.97),
    "bright": lambda im: ImageEnhance.Brightness(im).enhance(1.4),
    "scaled-dark": lambda im: _scale(im, 0.7),
    "sat": lambda im: ImageEnhance.Color(im).enhance(1.8),
    "slightly-sat": lambda im: ImageEnhance.Color(im).enhance(1.05),
    "desat": lambda im: ImageEnhance.Color(im).enhance(0.4),
    "hsv-sat": lambda im: _hsv_saturation(im, 1.4),
    "hsv-sat-small": lambda im: _hsv_saturation(im, 1.0, 2),
    "hsv-desat": lambda im: _hsv_saturation(im, 0.7),
    "contrast": lambda im: ImageEnhance.Contrast(im).enhance(1.6),
    "slightly-contrast": lambda im: ImageEnhance.Contrast(im).enhance(1.03),
    "lowcontrast": lambda im: ImageEnhance.Contrast(im).enhance(0.5),
    "mirror": lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
    "flip": lambda im: im.transpose(Image.Transpose.FLIP_TOP_BOTTOM),
    "rot180": lambda im: im.transpose(Image.Transpose.ROTATE_180),
    "noise": lambda im: _noise(im, 6),
    "heavy-noise": lambda im: _noise(im, 70),
    "blur": lambda im: im.filter(ImageFilter.GaussianBlur(1.5)),
    "shift": lambda im: Image.fromarray(np.roll(np.asarray(im), 6, axis=1)),
    "invert": lambda im: ImageOps.invert(im.convert("RGB")),
    "gray": lambda im: im.convert("L"),
    "rgba": lambda im: im.convert("RGBA"),
    "la": lambda im: im.convert("LA"),
    "cmyk": lambda im: im.convert("CMYK"),
    "bw": lambda im: im.convert("1"),
    "palette": lambda im: im.convert("RGB").quantize(32),
    "palette256": lambda im: im.convert("RGB").quantize(256),
    "web": lambda im: im.convert("RGB").convert("P"),  # Pillow's web palette, dithered
    "i16": lambda im: Image.fromarray(np.asarray(im.convert("L"), dtype=np.uint16) * 256),
    "bordered": lambda im: _bordered(im, 10),
    "tkey": _transparency_key,
    "alpha-hole": _alpha_hole,
    "clear": lambda im: Image.new("RGBA", im.size, (0, 0, 0, 0)),
    "half": lambda im: im.resize((im.width // 2, im.height // 2)),
    "double": lambda im: im.resize((im.width * 2, im.height * 2)),
    "wide": lambda im: im.resize((im.width + 16, im.height)),
    "tall": lambda im: im.resize((im.width, im.height + 16)),
    "plus1": lambda im: im.resize((im.width + 1, im.height + 1)),
    "tiny": lambda im: im.resize((5, 4)),
    "six": lambda im: im.resize((6, 40)),
    "seven": lambda im: im.resize((7, 7)),
    "black": lambda im: Image.new("RGB", im.size, (0, 0, 0)),
    "white": lambda im: Image.new("RGB", im.size, (255, 255, 255)),
    "grey": lambda im: Image.new("RGB", im.size, (128, 128, 128)),
    "other": lambda im: scene(im.width, im.height, seed=3),
    "big": lambda im: scene(640, 400, seed=5),
    "big-noise": lambda im: _noise(scene(640, 400, seed=5), 10),
}


def draw(spec: str) -> tuple[Any, str]:
    """The image and file format of an image spec ``"scene|edit|edit.ext"``."""
    body, _, ext = spec.rpartition(".")
    parts = body.split("|")
    base, edits = parts[0], parts[1:]
    if base == "scene":
        img = scene()
    elif base.startswith("scene"):  # scene<W>x<H>
        width, height = (int(v) for v in base[5:].split("x"))
        img = scene(width, height)
    else:
        raise ValueError(f"unknown base {base!r}")
    for edit in edits:
        img = EDITS[edit](img)
    return img, ext


def image_file(folder: Path, name: str, spec: Spec) -> Path | None:
    """Write the image ``spec`` to ``folder/name.<ext>``; ``None`` and ``ABSENT`` as documented."""
    if spec is None:
        return None
    if isinstance(spec, Absent):
        return folder.resolve() / f"{name}.png"
    path = folder.resolve() / f"{name}.{spec.rpartition('.')[2]}"
    if spec.startswith("empty."):
        path.write_bytes(b"")
    elif spec.startswith("text."):
        path.write_text("not an image\n")
    elif spec.startswith("truncated."):
        buffer = io.BytesIO()
        scene().save(buffer, format="PNG")
        path.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    else:
        img, ext = draw(spec)
        kwargs = {"quality": 90} if ext in ("jpg", "jpeg") else {}
        img.save(path, **kwargs)
    return path


def pair(folder: Path, result: Spec, expected: Spec) -> tuple[Path | None, Path | None]:
    return image_file(folder, "result", result), image_file(folder, "expected", expected)


def _ids(cases: list[tuple[Any, ...]]) -> list[Any]:
    """``pytest.param`` for (result spec, expected spec, *rest) tuples, ids from the specs."""
    params = []
    for case in cases:
        result, expected, *rest = case
        name = f"{_spec_id(result)}--{_spec_id(expected)}"
        params.append(pytest.param(result, expected, *rest, id=name))
    return params


def _spec_id(spec: Spec) -> str:
    if spec is None:
        return "none"
    if isinstance(spec, Absent):
        return "absent"
    return spec.replace("|", "+")


BROKEN: list[Spec] = [None, ABSENT, "empty.png", "text.png", "truncated.png"]


# --- compare_images -------------------------------------------------------------------------

COMPARE_IMAGES = _ids(
    [
        ("scene.png", "scene.png", {}),
        ("scene|noise.png", "scene.png", {}),
        ("scene|heavy-noise.png", "scene.png", {}),
        ("scene|blur.png", "scene.png", {}),
        ("scene|shift.png", "scene.png", {}),
        ("scene|other.png", "scene.png", {}),
        ("scene|invert.png", "scene.png", {}),
        ("scene|dark.jpg", "scene.png", {}),
        ("scene|gray.png", "scene.png", {}),
        ("scene|rgba.png", "scene|palette.png", {}),
        ("scene|half.png", "scene.png", {}),
        ("scene.png", "scene|half.png", {}),
        ("scene|wide.png", "scene.png", {}),
        ("scene|tall.png", "scene|wide.png", {}),
        ("scene|double.png", "scene|plus1.png", {}),
        ("scene|tiny.png", "scene.png", {}),
        ("scene|seven.png", "scene.png", {}),
        ("scene|black.png", "scene|black.png", {}),
        ("scene|black.png", "scene|white.png", {}),
        ("scene|grey.png", "scene.png", {}),
        ("scene|big-noise.png", "scene|big.png", {}),
        ("scene|big.png", "scene|big.png", {}),
        ("scene|big|blur.jpg", "scene|big.png", {}),
        ("scene.png", "scene.png", {"reference_base_result": 0.54}),
        ("scene|noise.png", "scene.png", {"reference_base_result": 0.54}),
        ("scene|heavy-noise.png", "scene.png", {"reference_base_result": 0.11}),
        ("scene|other.png", "scene.png", {"reference_base_result": 0.11}),
        ("scene|blur.png", "scene.png", {"reference_base_result": 0.99}),
        ("scene|noise.png", "scene.png", {"reference_base_result": None}),
        ("scene|cmyk.jpg", "scene.jpg", {}),
        ("scene|bw.png", "scene.png", {}),
        ("scene|i16.png", "scene.png", {}),
        ("scene.gif", "scene.bmp", {}),
        ("scene.webp", "scene.tiff", {}),
        *[(broken, "scene.png", {}) for broken in BROKEN],
        ("scene.png", None, {}),
        ("scene.png", ABSENT, {}),
    ]
)


@pytest.mark.parametrize(("result", "expected", "options"), COMPARE_IMAGES)
def test_compare_images(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec, options: dict[str, Any]
) -> None:
    assert_same_score(osworld, "compare_images", *pair(tmp_path, result, expected), **options)


# --- SSIM checks of two images of the same size -------------------------------------------

STRUCTURE_SIM = _ids(
    [
        ("scene.png", "scene.png"),
        ("scene|noise.png", "scene.png"),
        ("scene|heavy-noise.png", "scene.png"),
        ("scene|blur.png", "scene.png"),
        ("scene|other.png", "scene.png"),
        ("scene|mirror.png", "scene.png"),
        ("scene.jpg", "scene.png"),
        ("scene|dark.png", "scene.png"),
        ("scene|gray.png", "scene.png"),
        ("scene|rgba.png", "scene.png"),
        ("scene|palette.png", "scene.png"),
        ("scene|la.png", "scene|gray.png"),
        ("scene|cmyk.jpg", "scene.png"),
        ("scene|bw.png", "scene|bw.png"),
        ("scene|i16.png", "scene|gray.png"),
        ("scene|bordered.png", "scene|bordered|noise.png"),
        ("scene|half.png", "scene.png"),
        ("scene|plus1.png", "scene.png"),
        ("scene|tiny.png", "scene|tiny.png"),
        ("scene|six.png", "scene|six.png"),
        ("scene|seven.png", "scene|seven.png"),
        ("scene|big-noise.png", "scene|big.png"),
        ("scene|black.png", "scene|white.png"),
        ("scene|grey.png", "scene|grey.png"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene.png", None),
        ("scene.png", ABSENT),
        ("scene.png", "text.png"),
    ]
)


@pytest.mark.parametrize(("result", "expected"), STRUCTURE_SIM)
def test_check_structure_sim(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec
) -> None:
    assert_same_score(osworld, "check_structure_sim", *pair(tmp_path, result, expected))


FILE_EXISTS_SIM = _ids(
    [
        ("scene.png", "scene.png"),
        ("scene.jpg", "scene.png"),
        ("scene.webp", "scene.png"),
        ("scene|noise.png", "scene.png"),
        ("scene|heavy-noise.png", "scene.png"),
        ("scene|other.png", "scene.png"),
        ("scene|half.png", "scene.png"),
        ("scene|palette.png", "scene.png"),
        ("scene|rgba.png", "scene|gray.png"),
        ("scene|tiny.png", "scene|tiny.png"),
        ("scene|cmyk.jpg", "scene.jpg"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene.png", None),
        ("scene.png", ABSENT),
    ]
)


@pytest.mark.parametrize(("result", "expected"), FILE_EXISTS_SIM)
def test_check_file_exists_and_structure_sim(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec
) -> None:
    assert_same_score(
        osworld, "check_file_exists_and_structure_sim", *pair(tmp_path, result, expected)
    )


MIRROR = _ids(
    [
        ("scene|mirror.png", "scene.png"),
        ("scene.png", "scene|mirror.png"),
        ("scene.png", "scene.png"),
        ("scene|flip.png", "scene.png"),
        ("scene|rot180.png", "scene.png"),
        ("scene|mirror.jpg", "scene.png"),
        ("scene|mirror|noise.png", "scene.png"),
        ("scene|mirror|palette.png", "scene.png"),
        ("scene|mirror|rgba.png", "scene|gray.png"),
        ("scene|mirror|half.png", "scene.png"),
        ("scene|mirror|cmyk.jpg", "scene.png"),
        ("scene|mirror|tiny.png", "scene|tiny.png"),
        ("scene|mirror|bw.png", "scene|bw.png"),
        ("scene|black.png", "scene|black.png"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene|mirror.png", None),
        ("scene|mirror.png", ABSENT),
    ]
)


@pytest.mark.parametrize(("result", "expected"), MIRROR)
def test_check_image_mirror(osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec) -> None:
    assert_same_score(osworld, "check_image_mirror", *pair(tmp_path, result, expected))


RESIZED = _ids(
    [
        ("scene.png", "scene.png"),
        ("scene|double.png", "scene.png"),
        ("scene|half.png", "scene.png"),
        ("scene|wide.png", "scene.png"),
        ("scene|bordered.png", "scene.png"),
        ("scene|double|bordered.png", "scene.png"),
        ("scene|alpha-hole.png", "scene.png"),
        ("scene|tkey.png", "scene.png"),
        ("scene|clear.png", "scene.png"),
        ("scene|rgba.png", "scene|double.png"),
        ("scene|la.png", "scene|gray.png"),
        ("scene|palette.png", "scene.png"),
        ("scene|palette|double.png", "scene.png"),
        ("scene|gray.png", "scene|double.png"),
        ("scene|cmyk.jpg", "scene.png"),
        ("scene|other.png", "scene.png"),
        ("scene|heavy-noise|double.png", "scene.png"),
        ("scene|tiny.png", "scene|tiny.png"),
        ("scene.png", "scene|tiny.png"),
        ("scene.png", "scene|rgba.png"),
        ("scene|bw.png", "scene.png"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene.png", None),
        ("scene.png", ABSENT),
    ]
)


@pytest.mark.parametrize(("result", "expected"), RESIZED)
def test_check_structure_sim_resized(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec
) -> None:
    assert_same_score(osworld, "check_structure_sim_resized", *pair(tmp_path, result, expected))


PALETTE = _ids(
    [
        ("scene|palette.png", "scene.png"),
        ("scene|palette256.png", "scene.png"),
        ("scene|web.png", "scene.png"),
        ("scene|tkey.png", "scene.png"),
        ("scene|palette.gif", "scene.png"),
        ("scene|palette.bmp", "scene.png"),
        ("scene.png", "scene.png"),
        ("scene|gray.png", "scene.png"),
        ("scene|palette.png", "scene|palette.png"),
        ("scene|other|palette.png", "scene.png"),
        ("scene|palette|half.png", "scene.png"),
        ("scene|tiny|palette.png", "scene|tiny.png"),
        ("scene|palette.png", "scene|rgba.png"),
        ("scene|palette.png", "scene|cmyk.jpg"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene|palette.png", None),
        ("scene|palette.png", ABSENT),
        ("scene|palette.png", "text.png"),
    ]
)


@pytest.mark.parametrize(("result", "expected"), PALETTE)
def test_check_palette_and_structure_sim(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec
) -> None:
    assert_same_score(osworld, "check_palette_and_structure_sim", *pair(tmp_path, result, expected))


# --- brightness, saturation, contrast -----------------------------------------------------

BRIGHTNESS = _ids(
    [
        ("scene|dark.png", "scene.png", {}),
        ("scene|darker.png", "scene.png", {}),
        ("scene|slightly-dark.png", "scene.png", {}),
        ("scene|scaled-dark.png", "scene.png", {}),
        ("scene|bright.png", "scene.png", {}),
        ("scene.png", "scene|bright.png", {"threshold": 0.15}),
        ("scene.png", "scene|dark.png", {"threshold": 0.15}),
        ("scene|darker.png", "scene.png", {"threshold": 0.001}),
        ("scene|dark|noise.png", "scene.png", {}),
        ("scene|dark|heavy-noise.png", "scene.png", {}),
        ("scene|dark|heavy-noise.png", "scene.png", {"threshold": 0.15}),
        ("scene|other|dark.png", "scene.png", {}),
        ("scene|other|dark.png", "scene.png", {"threshold": 0.15}),
        ("scene.png", "scene.png", {}),
        ("scene|dark.jpg", "scene.png", {}),
        ("scene|dark|half.png", "scene.png", {}),
        ("scene|dark.png", "scene|half.png", {}),
        ("scene|dark|gray.png", "scene|gray.png", {}),
        ("scene|dark|gray.png", "scene.png", {}),
        ("scene|dark|rgba.png", "scene|rgba.png", {}),
        ("scene|dark|rgba.png", "scene.png", {}),
        ("scene|dark|la.png", "scene|la.png", {}),
        ("scene|dark|palette.png", "scene.png", {}),
        ("scene|dark|palette.png", "scene|palette.png", {}),
        ("scene|dark|cmyk.jpg", "scene.jpg", {}),
        ("scene|dark|bw.png", "scene.png", {}),
        ("scene|dark|i16.png", "scene|i16.png", {}),
        ("scene|black.png", "scene.png", {}),
        ("scene|dark|tiny.png", "scene|tiny.png", {}),
        ("scene|big|dark.png", "scene|big.png", {}),
        *[(broken, "scene.png", {}) for broken in BROKEN],
        ("scene|dark.png", None, {}),
        ("scene|dark.png", ABSENT, {}),
    ]
)


@pytest.mark.parametrize(("result", "expected", "options"), BRIGHTNESS)
def test_check_brightness_decrease_and_structure_sim(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec, options: dict[str, Any]
) -> None:
    assert_same_score(
        osworld,
        "check_brightness_decrease_and_structure_sim",
        *pair(tmp_path, result, expected),
        **options,
    )


SATURATION = _ids(
    [
        ("scene|sat.png", "scene.png"),
        ("scene|slightly-sat.png", "scene.png"),
        ("scene.png", "scene|desat.png"),
        ("scene|desat.png", "scene.png"),
        ("scene.png", "scene.png"),
        ("scene|hsv-sat.png", "scene.png"),
        ("scene|hsv-sat-small.png", "scene.png"),
        ("scene.png", "scene|hsv-desat.png"),
        ("scene|hsv-desat.png", "scene.png"),
        ("scene|hsv-sat.jpg", "scene.png"),
        ("scene|hsv-sat|rgba.png", "scene.png"),
        ("scene|hsv-sat|palette.png", "scene|palette.png"),
        ("scene|hsv-sat|noise.png", "scene.png"),
        ("scene|hsv-sat|mirror.png", "scene.png"),
        ("scene|hsv-sat|plus1.png", "scene.png"),
        ("scene|big|hsv-sat.png", "scene|big.png"),
        ("scene|sat|noise.png", "scene.png"),
        ("scene|sat|heavy-noise.png", "scene.png"),
        ("scene|sat|blur.png", "scene.png"),
        ("scene|other|sat.png", "scene.png"),
        ("scene|sat.jpg", "scene.png"),
        ("scene|sat|rgba.png", "scene.png"),
        ("scene|sat|palette.png", "scene.png"),
        ("scene|sat|cmyk.jpg", "scene.png"),
        ("scene.png", "scene|gray.png"),
        ("scene|sat|la.png", "scene|gray.png"),
        ("scene|sat|half.png", "scene.png"),
        ("scene|sat|tiny.png", "scene|tiny.png"),
        ("scene|sat|bw.png", "scene.png"),
        ("scene|hsv-sat|i16.png", "scene|i16.png"),
        ("scene|hsv-sat|la.png", "scene|la.png"),
        ("scene|hsv-sat|tkey.png", "scene|tkey.png"),
        ("scene|hsv-sat|bordered.png", "scene|bordered.png"),
        ("scene|big|sat.png", "scene|big.png"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene|sat.png", None),
        ("scene|sat.png", ABSENT),
    ]
)


@pytest.mark.parametrize(("result", "expected"), SATURATION)
def test_check_saturation_increase_and_structure_sim(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec
) -> None:
    assert_same_score(
        osworld, "check_saturation_increase_and_structure_sim", *pair(tmp_path, result, expected)
    )


CONTRAST = _ids(
    [
        ("scene|contrast.png", "scene.png"),
        ("scene|slightly-contrast.png", "scene.png"),
        ("scene.png", "scene|lowcontrast.png"),
        ("scene|lowcontrast.png", "scene.png"),
        ("scene.png", "scene.png"),
        ("scene|contrast|noise.png", "scene.png"),
        ("scene|contrast|heavy-noise.png", "scene.png"),
        ("scene|other|contrast.png", "scene.png"),
        ("scene|contrast.jpg", "scene.png"),
        ("scene|contrast|gray.png", "scene|gray.png"),
        ("scene|contrast|gray.png", "scene.png"),
        ("scene|contrast|rgba.png", "scene.png"),
        ("scene|contrast|rgba.png", "scene|rgba.png"),
        ("scene|contrast|la.png", "scene|la.png"),
        ("scene|contrast|palette.png", "scene.png"),
        ("scene|contrast|palette.png", "scene|palette.png"),
        ("scene|palette.png", "scene|contrast|palette.png"),
        ("scene|contrast|cmyk.jpg", "scene|cmyk.jpg"),
        ("scene|contrast|bw.png", "scene.png"),
        ("scene|contrast|i16.png", "scene|i16.png"),
        ("scene|contrast|half.png", "scene.png"),
        ("scene|contrast|tiny.png", "scene|tiny.png"),
        *[(broken, "scene.png") for broken in BROKEN],
        ("scene|contrast.png", None),
        ("scene|contrast.png", ABSENT),
    ]
)


@pytest.mark.parametrize(("result", "expected"), CONTRAST)
def test_check_contrast_increase_and_structure_sim(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: Spec
) -> None:
    assert_same_score(
        osworld, "check_contrast_increase_and_structure_sim", *pair(tmp_path, result, expected)
    )


# --- sizes ----------------------------------------------------------------------------------

_SIZE_RULES = [rules for _, rules in real_rules("check_image_size")] or [
    {"height": 512, "ignore_transparent": True},
    {"height": 128, "width": 128},
]


def _size_cases() -> list[Any]:
    cases = []
    for index, rules in enumerate(_SIZE_RULES):
        width, height = rules.get("width", 100), rules.get("height", 100)
        exact = f"scene{width}x{height}"
        cases += [
            pytest.param(f"{exact}.png", rules, id=f"real{index}-exact"),
            pytest.param(f"{exact}.jpg", rules, id=f"real{index}-exact-jpg"),
            pytest.param(f"{exact}|rgba.png", rules, id=f"real{index}-exact-rgba"),
            pytest.param(f"{exact}|bordered.png", rules, id=f"real{index}-bordered"),
            pytest.param(f"{exact}|tkey.png", rules, id=f"real{index}-transparency-key"),
            pytest.param(f"scene{width + 1}x{height}.png", rules, id=f"real{index}-wider"),
            pytest.param(f"scene{width}x{height - 1}.png", rules, id=f"real{index}-shorter"),
            pytest.param(f"{exact}|clear.png", rules, id=f"real{index}-clear"),
        ]
    return cases


IMAGE_SIZE = [
    *_size_cases(),
    pytest.param("scene.png", {"width": 64, "height": 48}, id="both-ok"),
    pytest.param("scene.png", {"width": 64}, id="width-only"),
    pytest.param("scene.png", {"height": 47}, id="height-wrong"),
    pytest.param("scene.png", {}, id="no-rules"),
    pytest.param("scene.png", {"width": None, "height": 48}, id="width-none"),
    pytest.param("scene|bordered.png", {"width": 84, "height": 68}, id="bordered-full"),
    pytest.param(
        "scene|bordered.png", {"width": 64, "height": 48, "ignore_transparent": True}, id="crop"
    ),
    pytest.param(
        "scene|bordered.png", {"width": 64, "ignore_transparent": False}, id="no-crop-option"
    ),
    pytest.param("scene|tkey.png", {"width": 64, "height": 48}, id="transparency-key-uncropped"),
    pytest.param("scene|alpha-hole.png", {"width": 42, "ignore_transparent": True}, id="hole"),
    pytest.param("scene|la.png", {"width": 64, "ignore_transparent": True}, id="la"),
    pytest.param("scene|clear.png", {"width": 0, "ignore_transparent": True}, id="clear-zero"),
    pytest.param("scene|palette.gif", {"width": 64}, id="gif"),
    pytest.param("scene.png", {"width": "64"}, id="width-as-text"),
    pytest.param("scene.png", {"width": 64.0}, id="width-float"),
    pytest.param(None, {"width": 64}, id="none"),
    pytest.param(ABSENT, {"width": 64}, id="absent"),
    pytest.param("text.png", {"width": 64}, id="not-an-image"),
    pytest.param("empty.png", {"width": 64}, id="empty"),
]


@pytest.mark.parametrize(("result", "rules"), IMAGE_SIZE)
def test_check_image_size(
    osworld: OSWorld, tmp_path: Path, result: Spec, rules: dict[str, Any]
) -> None:
    assert_same_score(osworld, "check_image_size", image_file(tmp_path, "result", result), rules)


_FILE_SIZE_RULES = [rules for _, rules in real_rules("check_image_file_size")] or [
    {"max_size": 600000}
]


def _file_size_cases() -> list[Any]:
    cases = []
    for index, rules in enumerate(_FILE_SIZE_RULES):
        cases += [
            pytest.param(b"x" * (rules["max_size"] - 1), rules, id=f"real{index}-just-under"),
            pytest.param(b"x" * rules["max_size"], rules, id=f"real{index}-equal"),
            pytest.param(b"x" * (rules["max_size"] + 1), rules, id=f"real{index}-over"),
        ]
    return cases


IMAGE_FILE_SIZE = [
    *_file_size_cases(),
    pytest.param("scene.png", {"max_size": 100_000}, id="png-small"),
    pytest.param("scene|big.png", {"max_size": 1_000}, id="png-big"),
    pytest.param("scene.jpg", {"max_size": 10}, id="jpg-tiny-limit"),
    pytest.param(b"", {"max_size": 1}, id="empty-file"),
    pytest.param(b"", {"max_size": 0}, id="empty-file-zero-limit"),
    pytest.param(b"abc", {"max_size": 3.5}, id="float-limit"),
    pytest.param("scene.png", {}, id="no-max-size"),
    pytest.param(None, {"max_size": 10}, id="none"),
    pytest.param(ABSENT, {"max_size": 10}, id="absent"),
]


@pytest.mark.parametrize(("result", "rules"), IMAGE_FILE_SIZE)
def test_check_image_file_size(
    osworld: OSWorld, tmp_path: Path, result: Spec | bytes, rules: dict[str, Any]
) -> None:
    if isinstance(result, bytes):
        path: Path | None = tmp_path.resolve() / "result.bin"
        path.write_bytes(result)
    else:
        path = image_file(tmp_path, "result", result)
    assert_same_score(osworld, "check_image_file_size", path, rules)


# --- compare_image_list -------------------------------------------------------------------

IMAGE_LIST = [
    pytest.param("scene.png", "scene.png", id="same"),
    pytest.param("scene.png", "scene.jpg", id="png-vs-jpg"),
    pytest.param("scene|noise.png", "scene.png", id="noise"),
    pytest.param("scene|double.png", "scene.png", id="resized-back"),
    pytest.param("scene|gray.png", "scene|gray.png", id="gray-same"),
    pytest.param("scene.png", "scene|gray.png", id="converted-to-gray"),
    pytest.param("scene|rgba.png", "scene.png", id="rgba-to-rgb"),
    pytest.param("scene.png", "scene|rgba.png", id="rgb-to-rgba"),
    pytest.param("scene|palette.png", "scene|palette.png", id="palette-same"),
    pytest.param("scene|palette.png", "scene.png", id="palette-to-rgb"),
    pytest.param("scene.bmp", "scene.png", id="bmp"),
    pytest.param("scene|black.png", "scene|black|gray.png", id="black"),
    pytest.param(["scene.png", "scene|other.png"], ["scene.png", "scene|other.png"], id="list"),
    pytest.param(["scene.png", "scene|other.png"], ["scene|other.png", "scene.png"], id="swapped"),
    pytest.param(["scene.png"], ["scene.png", "scene|other.png"], id="shorter-result"),
    pytest.param(["scene.png", "scene|noise.png"], ["scene.png"], id="shorter-expected"),
    pytest.param([], [], id="empty-lists"),
    pytest.param([None, "scene.png"], ["scene.png", "scene.png"], id="none-in-list"),
    pytest.param(None, "scene.png", id="none"),
    pytest.param("scene.png", None, id="expected-none"),
    pytest.param(ABSENT, "scene.png", id="absent"),
    pytest.param("text.png", "scene.png", id="not-an-image"),
    pytest.param("scene.png", ["scene.png"], id="path-and-list"),
]


def _image_arg(folder: Path, name: str, spec: Any) -> Any:
    if isinstance(spec, list):
        return [image_file(folder, f"{name}{i}", s) for i, s in enumerate(spec)]
    return image_file(folder, name, spec)


@pytest.mark.parametrize(("result", "expected"), IMAGE_LIST)
def test_compare_image_list(osworld: OSWorld, tmp_path: Path, result: Any, expected: Any) -> None:
    assert_same_score(
        osworld,
        "compare_image_list",
        _image_arg(tmp_path, "result", result),
        _image_arg(tmp_path, "expected", expected),
    )


# --- layout: green background, triangle, text box -----------------------------------------


def _layout_file(folder: Path, name: str, img: Any, ext: str = "png") -> Path:
    path = folder.resolve() / f"{name}.{ext}"
    img.save(path)
    return path


def _silhouette(size: tuple[int, int], box: tuple[int, int, int, int]) -> Any:
    """The reference of the green-background task: a black object on a white background."""
    img = Image.new("RGB", size, (255, 255, 255))
    ImageDraw.Draw(img).ellipse(box, fill=(0, 0, 0))
    return img


def _on_background(ref: Any, colour: tuple[int, int, int], obj: tuple[int, int, int]) -> Any:
    """``colour`` where the reference is not black, ``obj`` elsewhere."""
    mask = np.asarray(ref.convert("RGB")).any(axis=2)
    out = np.empty((*mask.shape, 3), dtype=np.uint8)
    out[mask], out[~mask] = colour, obj
    return Image.fromarray(out)


GREEN = (30, 200, 40)
GREEN_CASES: dict[str, Callable[[], tuple[Any, Any]]] = {
    "square-green": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), GREEN, (200, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "square-red": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), (200, 40, 30), (0, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "square-one-pixel-off": lambda: (
        _put(_on_background(_silhouette((40, 40), (5, 5, 20, 20)), GREEN, (0, 0, 0)), (39, 2)),
        _silhouette((40, 40), (5, 5, 20, 20)),
    ),
    "square-green-equal-blue": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), (10, 200, 200), (0, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "wide-green": lambda: (
        _on_background(_silhouette((60, 40), (10, 10, 30, 30)), GREEN, (0, 0, 0)),
        _silhouette((60, 40), (10, 10, 30, 30)),
    ),
    "tall-green": lambda: (
        _on_background(_silhouette((40, 60), (10, 10, 30, 30)), GREEN, (0, 0, 0)),
        _silhouette((40, 60), (10, 10, 30, 30)),
    ),
    "wide-red-early": lambda: (
        _on_background(_silhouette((60, 40), (10, 10, 30, 30)), (250, 0, 0), (0, 0, 0)),
        _silhouette((60, 40), (10, 10, 30, 30)),
    ),
    "all-black-reference": lambda: (
        Image.new("RGB", (30, 30), (255, 0, 0)),
        Image.new("RGB", (30, 30), (0, 0, 0)),
    ),
    "rgba": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), GREEN, (0, 0, 0)).convert("RGBA"),
        _silhouette((40, 40), (10, 10, 30, 30)).convert("RGBA"),
    ),
    "gray-reference": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), GREEN, (0, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)).convert("L"),
    ),
    "gray-result": lambda: (
        _silhouette((40, 40), (10, 10, 30, 30)).convert("L"),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "palette-result": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), GREEN, (0, 0, 0)).quantize(4),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "la-reference": lambda: (
        _on_background(_silhouette((40, 40), (10, 10, 30, 30)), GREEN, (0, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)).convert("LA"),
    ),
    "smaller-result": lambda: (
        _on_background(_silhouette((30, 30), (5, 5, 20, 20)), GREEN, (0, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "larger-result": lambda: (
        _on_background(_silhouette((50, 45), (10, 10, 30, 30)), GREEN, (0, 0, 0)),
        _silhouette((40, 40), (10, 10, 30, 30)),
    ),
    "transposed-result": lambda: (
        _on_background(_silhouette((40, 40), (5, 10, 15, 30)), GREEN, (0, 0, 0)).transpose(
            Image.Transpose.TRANSPOSE
        ),
        _silhouette((40, 40), (5, 10, 15, 30)),
    ),
}


def _put(img: Any, xy: tuple[int, int]) -> Any:
    img.putpixel(xy, (250, 10, 10))
    return img


@pytest.mark.parametrize("case", [*GREEN_CASES, "none", "absent", "not-an-image"])
def test_check_green_background(osworld: OSWorld, tmp_path: Path, case: str) -> None:
    reference = _layout_file(tmp_path, "expected", _silhouette((40, 40), (10, 10, 30, 30)))
    if case == "none":
        args: tuple[Any, Any] = (None, reference)
    elif case == "absent":
        args = (tmp_path.resolve() / "missing.png", reference)
    elif case == "not-an-image":
        args = (image_file(tmp_path, "result", "text.png"), reference)
    else:
        result, expected = GREEN_CASES[case]()
        args = (_layout_file(tmp_path, "result", result), _layout_file(tmp_path, "ref", expected))
    assert_same_score(osworld, "check_green_background", *args)


def _triangle(
    size: tuple[int, int],
    centre: tuple[float, float],
    *,
    antialias: bool = False,
    colour: tuple[int, ...] = (240, 200, 20),
    background: tuple[int, ...] = (255, 255, 255),
    mode: str = "RGB",
    radius: int = 12,
) -> Any:
    """A filled triangle with its centroid at ``centre``; antialiased: drawn 4x larger, shrunk."""
    scale = 4 if antialias else 1
    width, height = size[0] * scale, size[1] * scale
    cx, cy, r = centre[0] * scale, centre[1] * scale, radius * scale
    img = Image.new(mode, (width, height), background)
    corners = [(cx, cy - 4 * r / 3), (cx - r, cy + 2 * r / 3), (cx + r, cy + 2 * r / 3)]
    ImageDraw.Draw(img).polygon(corners, fill=colour)
    return img.resize(size, Image.Resampling.LANCZOS) if antialias else img


TRIANGLES: dict[str, Callable[[], Any]] = {
    "centred": lambda: _triangle((80, 60), (40, 30)),
    "centred-antialiased": lambda: _triangle((80, 60), (40, 30), antialias=True),
    "left": lambda: _triangle((80, 60), (15, 30)),
    "left-antialiased": lambda: _triangle((80, 60), (15, 30), antialias=True),
    "slightly-off": lambda: _triangle((80, 60), (44, 30)),
    "low": lambda: _triangle((80, 60), (40, 45)),
    "rgba": lambda: _triangle((80, 60), (40, 30), mode="RGBA", background=(0, 0, 0, 0)),
    "rgba-left": lambda: _triangle((80, 60), (12, 30), mode="RGBA", background=(0, 0, 0, 0)),
    "gray": lambda: _triangle((80, 60), (40, 30)).convert("L"),
    "palette": lambda: _triangle((80, 60), (40, 30)).quantize(4),
    "plain": lambda: Image.new("RGB", (80, 60), (255, 255, 255)),
    "big-triangle": lambda: _triangle((80, 60), (40, 30), radius=30),
    "two-shapes": lambda: _two_shapes(),
    "square-image": lambda: _triangle((50, 50), (25, 25), antialias=True),
}


def _two_shapes() -> Any:
    img = _triangle((80, 60), (40, 30))
    ImageDraw.Draw(img).rectangle((0, 0, 3, 3), fill=(10, 10, 200))
    return img


@pytest.mark.parametrize("case", [*TRIANGLES, "jpeg", "none", "absent", "not-an-image"])
def test_check_triangle_position(osworld: OSWorld, tmp_path: Path, case: str) -> None:
    if case == "none":
        path: Path | None = None
    elif case == "absent":
        path = tmp_path.resolve() / "missing.png"
    elif case == "not-an-image":
        path = image_file(tmp_path, "result", "text.png")
    elif case == "jpeg":
        path = _layout_file(tmp_path, "result", _triangle((80, 60), (40, 30)), "jpg")
    else:
        path = _layout_file(tmp_path, "result", TRIANGLES[case]())
    assert_same_score(osworld, "check_triangle_position", path)


def _text_box(size: tuple[int, int], x: int, *, colour: int = 0, background: int = 255) -> Any:
    img = Image.new("RGB", size, (background,) * 3)
    d = ImageDraw.Draw(img)
    d.text((x, size[1] // 3), "Hello GIMP", fill=(colour,) * 3)
    return img


TEXT_BOXES: dict[str, Callable[[], Any]] = {
    "left": lambda: _text_box((200, 60), 2),
    "edge": lambda: _text_box((200, 60), 0),
    "at-5-percent": lambda: _text_box((200, 60), 10),
    "just-inside": lambda: _text_box((200, 60), 9),
    "middle": lambda: _text_box((200, 60), 80),
    "right": lambda: _text_box((200, 60), 150),
    "grey-text": lambda: _text_box((200, 60), 2, colour=140),
    "dark-background": lambda: _text_box((200, 60), 100, colour=255, background=20),
    "blank": lambda: Image.new("RGB", (200, 60), (255, 255, 255)),
    "rgba": lambda: _text_box((200, 60), 3).convert("RGBA"),
    "gray": lambda: _text_box((200, 60), 3).convert("L"),
    "palette": lambda: _text_box((200, 60), 3).quantize(8),
    "narrow": lambda: _text_box((30, 40), 1),
    "dark-dot-right": lambda: _put_dark(_text_box((200, 60), 120), (199, 0)),
}


def _put_dark(img: Any, xy: tuple[int, int]) -> Any:
    img.putpixel(xy, (0, 0, 0))
    return img


@pytest.mark.parametrize("case", [*TEXT_BOXES, "jpeg", "none", "absent", "not-an-image"])
def test_check_textbox_on_leftside(osworld: OSWorld, tmp_path: Path, case: str) -> None:
    if case == "none":
        path: Path | None = None
    elif case == "absent":
        path = tmp_path.resolve() / "missing.png"
    elif case == "not-an-image":
        path = image_file(tmp_path, "result", "text.png")
    elif case == "jpeg":
        path = _layout_file(tmp_path, "result", _text_box((200, 60), 3), "jpg")
    else:
        path = _layout_file(tmp_path, "result", TEXT_BOXES[case]())
    assert_same_score(osworld, "check_textbox_on_leftside", path)


# --- the fixed mode: where it departs from OSWorld ----------------------------------------


def test_fixed_triangle_position_reads_the_shape(osworld: OSWorld, tmp_path: Path) -> None:
    """An antialiased centred triangle: OSWorld (default) picks edge pixels, fixed the shape."""
    path = _layout_file(tmp_path, "result", _triangle((80, 60), (40, 30), antialias=True))
    outcome = assert_same_score(osworld, "check_triangle_position", path)
    fixed = metrics_for("fixed")["check_triangle_position"](str(path))
    assert fixed == 1.0
    left = _layout_file(tmp_path, "left", _triangle((80, 60), (15, 30), antialias=True))
    assert metrics_for("fixed")["check_triangle_position"](str(left)) == 0.0
    assert outcome.our_score is not None


def test_fixed_green_background_any_shape(osworld: OSWorld, tmp_path: Path) -> None:
    """A wide image with a green background: OSWorld cannot score it 1; the fixed mode does."""
    ref = _silhouette((60, 40), (10, 10, 30, 30))
    result = _on_background(ref, GREEN, (0, 0, 0))
    args = (_layout_file(tmp_path, "result", result), _layout_file(tmp_path, "ref", ref))
    outcome = compare(osworld, "check_green_background", *args)
    assert outcome.agreed and outcome.our_effective_score == 0.0
    assert metrics_for("fixed")["check_green_background"](*map(str, args)) == 1.0
    red = _on_background(ref, (200, 30, 30), (0, 0, 0))
    red_path = _layout_file(tmp_path, "red", red)
    assert metrics_for("fixed")["check_green_background"](str(red_path), str(args[1])) == 0.0


# --- check_image_stretch_and_center (a picture on a slide) --------------------------------

EMU_PER_INCH = 914400


def _png_bytes(seed: int) -> bytes:
    buffer = io.BytesIO()
    scene(32, 24, seed=seed).save(buffer, format="PNG")
    return buffer.getvalue()


def _slides_file(
    folder: Path, name: str, pictures: list[tuple[int, tuple[float, float, float, float]]]
) -> Path:
    """A one-slide deck (10 x 7.5 in) with pictures ``(seed, (left, top, width, height))``.

    Inches; a negative seed puts that picture on a second slide instead.
    """
    pptx = pytest.importorskip("pptx")
    from pptx.util import Inches

    deck = pptx.Presentation()
    deck.slide_width, deck.slide_height = Inches(10), Inches(7.5)
    blank = deck.slide_layouts[6]
    first = deck.slides.add_slide(blank)
    second = None
    for seed, (left, top, width, height) in pictures:
        slide = first
        if seed < 0:
            second = second or deck.slides.add_slide(blank)
            slide = second
        slide.shapes.add_picture(
            io.BytesIO(_png_bytes(abs(seed))),
            Inches(left),
            Inches(top),
            Inches(width),
            Inches(height),
        )
    path = folder.resolve() / f"{name}.pptx"
    deck.save(path)
    return path


_ORIGINAL = [(1, (3.0, 2.0, 4.0, 3.0))]
STRETCH = [
    pytest.param([(1, (0.0, 0.0, 10.0, 7.5))], _ORIGINAL, id="stretched-centred"),
    pytest.param([(1, (0.2, 0.1, 9.7, 7.3))], _ORIGINAL, id="within-half-inch"),
    pytest.param([(1, (0.0, 0.0, 10.4, 7.5))], _ORIGINAL, id="wider-within"),
    pytest.param([(1, (0.0, 0.0, 10.6, 7.5))], _ORIGINAL, id="too-wide"),
    pytest.param([(1, (0.0, 0.0, 10.0, 6.8))], _ORIGINAL, id="too-short"),
    pytest.param([(1, (0.7, 0.0, 10.0, 7.5))], _ORIGINAL, id="shifted-right"),
    pytest.param([(1, (0.0, 0.6, 10.0, 7.5))], _ORIGINAL, id="shifted-down"),
    pytest.param([(1, (3.0, 2.0, 4.0, 3.0))], _ORIGINAL, id="unchanged"),
    pytest.param([(2, (0.0, 0.0, 10.0, 7.5))], _ORIGINAL, id="other-image"),
    pytest.param(
        [(1, (3.0, 2.0, 4.0, 3.0)), (1, (0.0, 0.0, 10.0, 7.5))], _ORIGINAL, id="copy-last-ok"
    ),
    pytest.param(
        [(1, (0.0, 0.0, 10.0, 7.5)), (1, (3.0, 2.0, 4.0, 3.0))], _ORIGINAL, id="copy-last-bad"
    ),
    pytest.param(
        [(2, (0.0, 0.0, 10.0, 7.5)), (1, (0.0, 0.0, 10.0, 7.5))], _ORIGINAL, id="two-images"
    ),
    pytest.param([(-1, (0.0, 0.0, 10.0, 7.5))], _ORIGINAL, id="on-second-slide"),
    pytest.param([], _ORIGINAL, id="no-picture"),
    pytest.param([(1, (0.0, 0.0, 10.0, 7.5))], [], id="original-without-picture"),
    pytest.param(
        [(1, (0.0, 0.0, 10.0, 7.5))],
        [(2, (1.0, 1.0, 2.0, 2.0)), (1, (3.0, 2.0, 4.0, 3.0))],
        id="original-first-picture-other",
    ),
    pytest.param(None, _ORIGINAL, id="none"),
    pytest.param("text", _ORIGINAL, id="not-a-deck"),
    pytest.param("absent", _ORIGINAL, id="absent"),
]


@pytest.mark.parametrize(("result", "original"), STRETCH)
def test_check_image_stretch_and_center(
    osworld: OSWorld, tmp_path: Path, result: Any, original: Any
) -> None:
    if result is None:
        got: Path | None = None
    elif result == "text":
        got = tmp_path.resolve() / "result.pptx"
        got.write_text("not a deck")
    elif result == "absent":
        got = tmp_path.resolve() / "missing.pptx"
    else:
        got = _slides_file(tmp_path, "result", result)
    assert_same_score(
        osworld, "check_image_stretch_and_center", got, _slides_file(tmp_path, "original", original)
    )
