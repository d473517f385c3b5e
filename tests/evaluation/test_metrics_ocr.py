"""compare_image_text: X11 dumps decoded as OSWorld decodes them, OCR on images drawn here.

The OCR tests need the ``ocr`` extra (EasyOCR + its packaged English weights, with a torch and
torchvision that import together) and are skipped without it. When OSWorld's metrics/docs.py
can be loaded (see osworld_ref) its compare_image_text scores the same files, with its
``easyocr.Reader(["en"])`` served by the packaged weights (it would download them otherwise).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import osworld_ref
import pytest

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.metrics import get_metric, ocr

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
ImageFont = pytest.importorskip("PIL.ImageFont")

compare_image_text = get_metric("compare_image_text")
TEXT = "user@host:~$ ls\nDesktop  Documents  Music"


def xwd_bytes(rgb: Any, depth: int = 32, name: bytes = b"xwdump\0", **fields: int) -> bytes:
    """An X11 window dump of an RGB array: 32-bit pixels as B, G, R, 0; 24-bit as R, G, B."""
    height, width = rgb.shape[:2]
    values = {"header_size": 100 + len(name), "version": 7, "format": 2, "pixmap_depth": depth}
    values |= fields
    header = [values["header_size"], values["version"], values["format"], values["pixmap_depth"]]
    header += [width, height, 0, 1, 32, 1, 32, 32, width * 4, 4, 0xFF0000, 0xFF00, 0xFF]
    header += [8, 0, 0, width, height, 0, 0, 0]
    if depth == 32:
        pad = np.zeros((height, width, 1), np.uint8)
        pixels = np.concatenate([rgb[:, :, ::-1], pad], axis=2)
    else:
        pixels = rgb
    return struct.pack(">25I", *header) + name + pixels.astype(np.uint8).tobytes()


def terminal_image(text: str = TEXT) -> Any:
    image = Image.new("RGB", (720, 200), (48, 10, 36))
    font = ImageFont.load_default(size=34)
    ImageDraw.Draw(image).multiline_text((20, 30), text, fill=(255, 255, 255), font=font)
    return image


def test_read_xwd_decodes_24_and_32_bit_dumps(tmp_path: Path) -> None:
    rgb = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    for depth in (24, 32):
        path = tmp_path / f"d{depth}.xwd"
        path.write_bytes(xwd_bytes(rgb, depth))
        assert ocr._is_xwd(str(path))
        assert np.array_equal(np.array(ocr.read_xwd(str(path))), rgb)
    bad = tmp_path / "d16.xwd"
    bad.write_bytes(xwd_bytes(rgb, 32, pixmap_depth=16))
    with pytest.raises(ValueError, match="depth 16"):
        ocr.read_xwd(str(bad))
    short = tmp_path / "short.xwd"
    short.write_bytes(xwd_bytes(rgb)[:-10])
    with pytest.raises(ValueError):
        ocr.read_xwd(str(short))


VARIANTS: list[dict[str, int]] = [
    {},
    {"header_size": 100},
    {"header_size": 99},
    {"version": 6},
    {"format": 0},
    {"format": 3},
    {"pixmap_depth": 33},
    {"pixmap_depth": 1},
]


@pytest.mark.parametrize("fields", VARIANTS, ids=[str(v) for v in VARIANTS])
def test_dump_detection_agrees_with_file(tmp_path: Path, fields: dict[str, int]) -> None:
    path = tmp_path / "image"
    path.write_bytes(xwd_bytes(np.zeros((2, 3, 3), np.uint8), 32, **fields))
    if shutil.which("file") is None:
        pytest.skip("no `file` command to compare with")
    described = subprocess.run(["file", "-b", str(path)], capture_output=True, text=True).stdout
    said = "x-window screen dump" in described.lower() or "xwd" in described.lower()
    assert ocr._is_xwd(str(path)) == said, described
    png = tmp_path / "x.png"
    terminal_image().save(png)
    assert not ocr._is_xwd(str(png))


def test_no_image_or_another_rule_type_scores_zero_without_ocr(tmp_path: Path) -> None:
    assert compare_image_text(None, {"type": "text", "text": "ls"}) == 0.0
    assert compare_image_text(str(tmp_path / "absent.png"), {"type": "text", "text": "ls"}) == 0.0
    png = tmp_path / "ls.png"
    terminal_image().save(png)
    assert compare_image_text(str(png), {"type": "regex", "text": "ls"}) == 0.0


def test_missing_ocr_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "easyocr", None)
    ocr.english_reader.cache_clear()
    png = tmp_path / "ls.png"
    terminal_image().save(png)
    try:
        with pytest.raises(DependencyNotInstalled, match=r"osworld-gym\[ocr\]"):
            compare_image_text(str(png), {"type": "text", "text": "ls"})
    finally:
        ocr.english_reader.cache_clear()


def _reader() -> Any:
    try:
        return ocr.english_reader()
    except DependencyNotInstalled as e:
        pytest.skip(f"the ocr extra is not usable here: {e}")


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("ocr")
    image = terminal_image()
    out = {"png": d / "ls.png", "jpg": d / "ls.jpg", "xwd": d / "ls.xwd", "blank": d / "b.png"}
    image.save(out["png"])
    image.save(out["jpg"], quality=90)
    out["xwd"].write_bytes(xwd_bytes(np.array(image), 32))
    Image.new("RGB", (300, 100), "white").save(out["blank"])
    garbage = d / "garbage.png"
    garbage.write_bytes(b"\x89PNG\r\n\x1a\n not really")
    out["garbage"] = garbage
    return {k: str(v) for k, v in out.items()}


def test_ocr_finds_the_terminal_text(shots: dict[str, str]) -> None:
    _reader()
    for kind in ("png", "jpg", "xwd"):
        text = ocr.ocr_text(shots["png"]) if kind == "png" else None
        assert compare_image_text(shots[kind], {"type": "text", "text": "Desktop"}) == 1.0, text
        assert compare_image_text(shots[kind], {"type": "text", "text": "Documents"}) == 1.0
        assert compare_image_text(shots[kind], {"type": "text", "text": "Pictures"}) == 0.0
    assert compare_image_text(shots["blank"], {"type": "text", "text": "Desktop"}) == 0.0
    assert compare_image_text(shots["garbage"], {"type": "text", "text": "Desktop"}) == 0.0


def test_same_ocr_scores_as_osworld(shots: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    reader = _reader()
    docs = osworld_ref.load("evaluators/metrics/docs.py")
    monkeypatch.setattr(docs, "easyocr", types.SimpleNamespace(Reader=lambda langs: reader))
    rules = [{"type": "text", "text": t} for t in ("ls", "1s", "Is", "Desktop", "Music", "Nope")]
    for kind in ("png", "jpg", "xwd", "blank", "garbage"):
        for rule in rules:
            ours = compare_image_text(shots[kind], rule)
            assert ours == docs.compare_image_text(shots[kind], rule), (kind, rule)
