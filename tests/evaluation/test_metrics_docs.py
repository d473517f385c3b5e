"""Document metrics on .docx files written with python-docx and .odt files written with odfpy."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

docx = pytest.importorskip("docx")

from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT  # noqa: E402

from osworld_gym.evaluation.metrics import get_metric  # noqa: E402

compare = get_metric("compare_docx_files")
PARAGRAPHS = ["First  paragraph.", "", "Second paragraph."]


def make_docx(
    path: Path, paragraphs: Sequence[str] = PARAGRAPHS, mutate: Callable[[Any], None] | None = None
) -> str:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if mutate is not None:
        mutate(document)
    document.save(path)
    return str(path)


def make_odt(path: Path, paragraphs: Sequence[str]) -> str:
    opendocument = pytest.importorskip("odf.opendocument")
    odf_text = pytest.importorskip("odf.text")
    document = opendocument.OpenDocumentText()
    for text in paragraphs:
        paragraph = odf_text.P(text=text[: len(text) // 2])
        paragraph.addElement(odf_text.Span(text=text[len(text) // 2 :]))
        document.text.addElement(paragraph)
    document.save(str(path))
    return str(path)


def pair(tmp_path: Path, result: Sequence[str], expected: Sequence[str] = PARAGRAPHS) -> tuple:
    return make_docx(tmp_path / "r.docx", result), make_docx(tmp_path / "e.docx", expected)


@pytest.mark.parametrize(
    ("result", "options", "score"),
    [
        (PARAGRAPHS, {}, 1.0),
        (["First paragraph.", "Second paragraph."], {}, 1.0),  # blanks collapse by default
        (["First paragraph.", "Second paragraph!"], {}, 0.0),
        (["First paragraph.", "Second paragraph."], {"ignore_blanks": False}, 0.0),
        (["FIRST  paragraph.", "", "SECOND paragraph."], {}, 0.0),
        (["FIRST  paragraph.", "", "SECOND paragraph."], {"ignore_case": True}, 1.0),
        (
            ["FIRST  paragraph.", "", "SECOND paragraph."],
            {"ignore_case": True, "ignore_blanks": False},
            1.0,
        ),
        (["Second paragraph.", "", "First  paragraph."], {}, 0.0),
        (["Second paragraph.", "", "First  paragraph."], {"ignore_order": True}, 1.0),
        (
            ["First  paragraph.", "Second paragraph."],
            {"ignore_blanks": False, "delete_empty_lines": True},
            1.0,
        ),
    ],
)
def test_compare_docx_files(tmp_path: Path, result: list[str], options: dict, score: float) -> None:
    assert compare(*pair(tmp_path, result), **options) == score


def test_fuzzy_options_return_similarities(tmp_path: Path) -> None:
    paths = pair(tmp_path, ["First  paragraph.", "", "Second paragrapx."])
    similarity = compare(*paths, fuzzy_match=True)
    assert 0.9 < similarity < 1.0
    assert compare(*paths, content_only=True) == pytest.approx(similarity)
    # OSWorld's code has no threshold: the option is ignored, the similarity returned
    assert compare(*paths, fuzzy_match=True, fuzzy_match_threshold=0.99) == similarity
    per_paragraph = compare(*paths, fuzzy_match=True, ignore_blanks=False)
    assert 0.9 < per_paragraph < 1.0


def test_missing_mismatched_and_corrupt_files(tmp_path: Path) -> None:
    gold = make_docx(tmp_path / "e.docx")
    junk = tmp_path / "junk.docx"
    junk.write_text("not a document")
    text = tmp_path / "notes.txt"
    text.write_text("First paragraph. Second paragraph.")
    assert compare(None, gold) == 0.0
    assert compare(gold, None) == 0.0
    assert compare(str(junk), gold) == 0.0
    assert compare(str(text), gold) == 0.0  # types must match


def test_odt_documents(tmp_path: Path) -> None:
    gold = make_odt(tmp_path / "e.odt", ["Alpha beta", "Gamma"])
    assert compare(make_odt(tmp_path / "same.odt", ["Alpha beta", "Gamma"]), gold) == 1.0
    assert compare(make_odt(tmp_path / "diff.odt", ["Alpha beta", "Delta"]), gold) == 0.0
    # "Gamxx" differs from "Gamma" only in the span: span text is read
    assert compare(make_odt(tmp_path / "span.odt", ["Alpha beta", "Gamxx"]), gold) == 0.0
    assert compare(make_docx(tmp_path / "x.docx", ["Alpha beta", "Gamma"]), gold) == 0.0


def test_ignore_new_lines_and_lines(tmp_path: Path) -> None:
    ignore_new_lines = get_metric("compare_docx_files_and_ignore_new_lines")
    paths = pair(tmp_path, ["First  paragraph.", "Second paragraph."])
    assert ignore_new_lines(*paths) == 1.0
    assert ignore_new_lines(*paths, ignore_blanks=False) == 1.0  # empty paragraphs dropped
    assert (
        ignore_new_lines(
            *pair(tmp_path, ["First paragraph.", "Second paragraph."]), ignore_blanks=False
        )
        == 0.0
    )
    assert ignore_new_lines(None, paths[1]) == 0.0

    lines = get_metric("compare_docx_lines")
    assert lines(*pair(tmp_path, ["Second paragraph.", " First  paragraph. "])) == 1.0
    assert lines(*pair(tmp_path, ["Second paragraph."])) == 0.0
    assert lines(None, paths[1]) == 0.0


def add_table(cells: list[list[str]]) -> Callable[[Any], None]:
    def _add(document: Any) -> None:
        table = document.add_table(rows=len(cells), cols=len(cells[0]))
        for i, row in enumerate(cells):
            for j, text in enumerate(row):
                table.cell(i, j).text = text

    return _add


@pytest.mark.parametrize(
    ("cells", "score"),
    [
        ([["a", "b"], ["c", "d "]], 1.0),  # cell text is stripped
        ([["a", "b"], ["c", "x"]], 0.0),
        ([["a", "b", "e"], ["c", "d", "f"]], 0.0),
    ],
)
def test_compare_docx_tables(tmp_path: Path, cells: list[list[str]], score: float) -> None:
    metric = get_metric("compare_docx_tables")
    gold = make_docx(tmp_path / "e.docx", mutate=add_table([["a", "b"], ["c", "d"]]))
    assert metric(make_docx(tmp_path / "r.docx", mutate=add_table(cells)), gold) == score
    assert metric(make_docx(tmp_path / "none.docx"), gold) == 0.0  # no table at all
    assert metric(None, gold) == 0.0


def spacing(value: float) -> Callable[[Any], None]:
    def _space(document: Any) -> None:
        for paragraph in document.paragraphs:
            paragraph.paragraph_format.line_spacing = value

    return _space


def test_compare_line_spacing(tmp_path: Path) -> None:
    metric = get_metric("compare_line_spacing")
    gold = make_docx(tmp_path / "e.docx", mutate=spacing(2.0))
    assert metric(make_docx(tmp_path / "r.docx", mutate=spacing(2.0)), gold) == 1.0
    assert metric(make_docx(tmp_path / "r2.docx", mutate=spacing(1.5)), gold) == 0.0
    other_text = make_docx(tmp_path / "r3.docx", ["Other"], mutate=spacing(2.0))
    assert metric(other_text, gold) == 0.0
    assert metric(None, gold) == 0.0


def fonts(name: str | None, subscript: bool = False) -> Callable[[Any], None]:
    def _font(document: Any) -> None:
        for paragraph in document.paragraphs:
            for run in paragraph.runs:
                run.font.name = name
                run.font.subscript = subscript or None

    return _font


def test_font_and_subscript_checks(tmp_path: Path) -> None:
    names = get_metric("compare_font_names")
    rules = {"font_name": "Times New Roman"}
    assert names(make_docx(tmp_path / "a.docx", mutate=fonts("Times New Roman")), rules) == 1.0
    assert names(make_docx(tmp_path / "b.docx", mutate=fonts("Arial")), rules) == 0.0
    assert names(None, rules) == 0.0

    subscript = get_metric("compare_subscript_contains")
    with_sub = make_docx(tmp_path / "s.docx", mutate=fonts(None, subscript=True))
    gold = make_docx(tmp_path / "g.docx", mutate=fonts(None, subscript=True))
    assert subscript(with_sub, gold) == 1.0
    assert subscript(make_docx(tmp_path / "n.docx"), gold) == 0.0
    assert subscript(None, gold) == 0.0


def test_alignment_page_break_and_footer_checks(tmp_path: Path) -> None:
    centered = get_metric("is_first_line_centered")

    def center(document: Any) -> None:
        document.paragraphs[0].paragraph_format.alignment = WD_PARAGRAPH_ALIGNMENT.CENTER

    assert centered(make_docx(tmp_path / "c.docx", mutate=center)) == 1.0
    assert centered(make_docx(tmp_path / "l.docx")) == 0.0
    assert centered(None) == 0.0

    page_break = get_metric("contains_page_break")

    def breaks(document: Any) -> None:
        document.paragraphs[0].runs[0].add_break(WD_BREAK.PAGE)

    with_break = make_docx(tmp_path / "b.docx", mutate=breaks)
    assert page_break(with_break, {}) == 1.0
    assert page_break(with_break, {"page_break_count": 2}) == 0.0
    assert page_break(make_docx(tmp_path / "nb.docx"), {}) == 0.0
    assert page_break(None, {}) == 0.0

    footers = get_metric("has_page_numbers_in_footers")

    def footer(document: Any) -> None:
        document.sections[0].footer.paragraphs[0].text = "Page 1"

    assert footers(make_docx(tmp_path / "f.docx", mutate=footer)) == 1.0
    assert footers(make_docx(tmp_path / "nf.docx")) == 0.0
    assert footers(None) == 0.0


def picture(color: tuple[int, int, int]) -> Callable[[Any], None]:
    image = pytest.importorskip("PIL.Image")

    def _add(document: Any) -> None:
        buffer = io.BytesIO()
        image.new("RGB", (4, 4), color).save(buffer, format="PNG")
        buffer.seek(0)
        document.add_picture(buffer)

    return _add


def test_compare_docx_images(tmp_path: Path) -> None:
    metric = get_metric("compare_docx_images")
    gold = make_docx(tmp_path / "e.docx", mutate=picture((255, 0, 0)))
    assert metric(make_docx(tmp_path / "r.docx", mutate=picture((255, 0, 0))), gold) == 1.0
    assert metric(make_docx(tmp_path / "b.docx", mutate=picture((0, 0, 255))), gold) == 0.0
    assert metric(make_docx(tmp_path / "n.docx"), gold) == 0.0
    assert metric(None, gold) == 0.0


def italic_and_struck(size: int, strike: bool) -> Callable[[Any], None]:
    def _format(document: Any) -> None:
        for paragraph in document.paragraphs:
            for run in paragraph.runs:
                run.italic = True
                run.font.size = docx.shared.Pt(size)
        for run in document.paragraphs[-1].runs:
            run.font.strike = strike

    return _format


def test_italic_size_and_strike_through_checks(tmp_path: Path) -> None:
    italic = get_metric("check_italic_font_size_14")
    strike = get_metric("evaluate_strike_through_last_paragraph")
    gold = make_docx(tmp_path / "gold.docx")
    good = make_docx(tmp_path / "good.docx", mutate=italic_and_struck(14, strike=True))
    bad = make_docx(tmp_path / "bad.docx", mutate=italic_and_struck(12, strike=False))
    other_text = make_docx(tmp_path / "other.docx", ["x"], mutate=italic_and_struck(14, True))
    for metric in (italic, strike):
        assert metric(good, gold) == 1.0
        assert metric(bad, gold) == 0.0
        assert metric(other_text, gold) == 0.0
        assert metric(None, gold) == 0.0
