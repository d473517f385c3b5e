"""PDF page counts and embedded images (PDFs written by hand or by Pillow), HTML trees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pypdf")
pytest.importorskip("lxml.html")
Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
np = pytest.importorskip("numpy")

from pdf_files import text_pdf_bytes  # noqa: E402

from osworld_gym.evaluation.metrics import get_metric  # noqa: E402


def text_pdf(path: Path, pages: int) -> str:
    """A PDF of ``pages`` pages, each showing one line of Helvetica text (no images)."""
    path.write_bytes(text_pdf_bytes([f"Page {i + 1}" for i in range(pages)]))
    return str(path)


def picture(seed: int) -> Any:
    """A picture with structure (gradient, shapes) that JPEG re-encoding keeps recognisable."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 255, 96)[None, :] * rng.uniform(0.3, 1) + np.zeros((64, 1))
    img = Image.fromarray(np.stack([x, x[::-1], np.full_like(x, 90)], 2).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(3):
        x0, y0 = rng.integers(0, 60), rng.integers(0, 40)
        draw.rectangle(
            (x0, y0, x0 + 30, y0 + 20), fill=tuple(int(c) for c in rng.integers(0, 255, 3))
        )
    return img


def image_pdf(path: Path, pictures: list[Any], quality: int = 90) -> str:
    pictures[0].save(path, save_all=True, append_images=pictures[1:], quality=quality)
    return str(path)


def not_a_pdf(tmp_path: Path) -> str:
    path = tmp_path / "broken.pdf"
    path.write_text("plain text")
    return str(path)


@pytest.mark.parametrize(
    ("relation", "ref", "score"),
    [("eq", 1, 1.0), ("eq", 2, 0.0), ("le", 2, 1.0), ("gt", 1, 0.0), ("ne", 3, 1.0)],
)
def test_check_pdf_pages(tmp_path: Path, relation: str, ref: int, score: float) -> None:
    metric = get_metric("check_pdf_pages")
    assert (
        metric(text_pdf(tmp_path / "one.pdf", 1), {"relation": relation, "ref_value": ref}) == score
    )


def test_check_pdf_pages_counts_pages_and_rejects_bad_input(tmp_path: Path) -> None:
    metric = get_metric("check_pdf_pages")
    assert metric(text_pdf(tmp_path / "three.pdf", 3), {"relation": "eq", "ref_value": 3}) == 1.0
    rules = {"relation": "eq", "ref_value": 1}
    assert metric(None, rules) == 0.0
    assert metric(not_a_pdf(tmp_path), rules) == 0.0
    with pytest.raises(ValueError, match="'about' is no function of the operator module"):
        metric(None, {"relation": "about", "ref_value": 1})
    # OSWorld applies any operator function by name
    assert metric(text_pdf(tmp_path / "one.pdf", 1), {"relation": "is_", "ref_value": 1}) == 1.0


def test_compare_pdf_images_flat_pictures_match_as_in_osworld(tmp_path: Path) -> None:
    """Flat pictures: imagehash's DCT rounds their zero coefficients alike (one hash bit)."""
    pytest.importorskip("imagehash")
    metric = get_metric("compare_pdf_images")
    red = image_pdf(tmp_path / "red.pdf", [Image.new("RGB", (40, 40), "red")])
    white = image_pdf(tmp_path / "white.pdf", [Image.new("RGB", (40, 40), "white")])
    assert metric(red, white) == 1.0


def test_compare_pdf_images(tmp_path: Path) -> None:
    metric = get_metric("compare_pdf_images")
    gold = image_pdf(tmp_path / "gold.pdf", [picture(1), picture(2)])
    assert metric(image_pdf(tmp_path / "same.pdf", [picture(1), picture(2)]), gold) == 1.0
    recoded = image_pdf(tmp_path / "low.pdf", [picture(1), picture(2)], quality=40)
    assert metric(recoded, gold) == 1.0  # a re-encoded JPEG keeps its perceptual hash
    assert metric(image_pdf(tmp_path / "half.pdf", [picture(1), picture(5)]), gold) == 0.5
    assert metric(image_pdf(tmp_path / "one.pdf", [picture(1)]), gold) == 0.0  # counts differ
    assert metric(text_pdf(tmp_path / "t1.pdf", 1), text_pdf(tmp_path / "t2.pdf", 2)) == 1.0
    assert metric(None, gold) == 0.0
    assert metric(not_a_pdf(tmp_path), gold) == 0.0


PAGE = """<!DOCTYPE html>
<html><head><title>Survey</title></head>
<body>
<table class="data  grid"><tr><td sdnum="1033;0;#,##0">{value}</td><td>Total</td></tr></table>
<!-- exported -->
</body></html>
"""


def html(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.html"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_compare_htmls(tmp_path: Path) -> None:
    metric = get_metric("compare_htmls")
    gold = html(tmp_path, "gold", PAGE.format(value="1,234"))
    assert metric(html(tmp_path, "same", PAGE.format(value="1,234")), gold) == 1.0
    assert metric(html(tmp_path, "value", PAGE.format(value="1,235")), gold) == 0.0
    spaced = PAGE.format(value="1,234").replace("data  grid", "data grid")
    assert metric(html(tmp_path, "spaced", spaced), gold) == 1.0  # class is a word list
    other_format = PAGE.format(value="1,234").replace("#,##0", "0.00")
    assert metric(html(tmp_path, "sdnum", other_format), gold) == 0.0
    assert metric(html(tmp_path, "sdnum2", other_format), gold, ignore_sdnum=True) == 1.0
    retagged = PAGE.format(value="1,234").replace("<td>Total</td>", "<th>Total</th>")
    assert metric(html(tmp_path, "th", retagged), gold) == 0.0
    comment = PAGE.format(value="1,234").replace("exported", "edited")
    assert metric(html(tmp_path, "comment", comment), gold) == 0.0
    assert metric(None, gold) == 0.0
    # an empty file has no nodes to pair, so it matches anything (as in OSWorld)
    assert metric(html(tmp_path, "empty", ""), gold) == 1.0
