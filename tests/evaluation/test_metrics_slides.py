"""compare_pptx_files: decks built with python-pptx that differ in one property at a time."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest

pptx = pytest.importorskip("pptx")
PIL_Image = pytest.importorskip("PIL.Image")

from pptx.dml.color import RGBColor  # noqa: E402
from pptx.enum.text import PP_ALIGN  # noqa: E402
from pptx.oxml.ns import qn  # noqa: E402
from pptx.util import Emu, Inches, Pt  # noqa: E402

from osworld_gym.evaluation.metrics import get_metric, metrics_for, slides  # noqa: E402

pytestmark = pytest.mark.heavy  # python-pptx decks built and read: about 0.3 s a test

compare = get_metric("compare_pptx_files")
compare_1_0_2 = slides.compare_pptx_files_1_0_2


@dataclasses.dataclass(frozen=True)
class Spec:
    """One deck: a text box, a picture, a table, a group, notes; fields vary one at a time."""

    runs: tuple[str, ...] = ("Hello ", "world")
    font_name: str | None = "Arial"
    size: int = 18
    bold: bool | None = True
    italic: bool | None = None
    color: str | None = "FF0000"
    underline: bool | None = None
    strike: bool = False
    align: Any = None
    level: int = 0
    bullet: str | None = None
    box: tuple[int, int, int, int] = (Inches(1), Inches(1), Inches(4), Inches(1))
    picture: tuple[int, int, int, int] = (Inches(5), Inches(3), Inches(2), Inches(2))
    table_text: str = "cell"
    table_bold: bool | None = None
    group_align: Any = None
    notes: str = "Speaker notes"
    background: str | None = None
    slides: int = 1
    extra_shape: bool = False


def _png() -> io.BytesIO:
    buffer = io.BytesIO()
    PIL_Image.new("RGB", (8, 8), (0, 128, 255)).save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def _text_box(slide: Any, s: Spec) -> None:
    box = slide.shapes.add_textbox(*s.box)
    paragraph = box.text_frame.paragraphs[0]
    paragraph.alignment = s.align
    paragraph.level = s.level
    if s.bullet is not None:
        bu = paragraph._p.get_or_add_pPr().makeelement(qn("a:buChar"), {"char": s.bullet})
        paragraph._p.get_or_add_pPr().append(bu)
    for text in s.runs:
        run = paragraph.add_run()
        run.text = text
        font = run.font
        font.name, font.size, font.bold, font.italic = s.font_name, Pt(s.size), s.bold, s.italic
        if s.color is not None:
            font.color.rgb = RGBColor.from_string(s.color)
        font.underline = s.underline
        if s.strike:
            run._r.get_or_add_rPr().set("strike", "sngStrike")


def _table_and_group(slide: Any, s: Spec) -> None:
    table = slide.shapes.add_table(1, 2, Inches(1), Inches(4), Inches(3), Inches(1)).table
    for col in range(2):
        cell_paragraph = table.cell(0, col).text_frame.paragraphs[0]
        run = cell_paragraph.add_run()
        run.text = s.table_text
        run.font.bold = s.table_bold
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(6), Inches(6), Inches(2), Inches(1))
    inner.text_frame.text = "grouped"
    inner.text_frame.paragraphs[0].alignment = s.group_align


def make_deck(path: Path, s: Spec) -> str:
    prs = pptx.Presentation()
    for index in range(s.slides):
        slide = prs.slides.add_slide(prs.slide_layouts[6])  # blank layout
        _text_box(slide, s)
        slide.shapes.add_picture(_png(), *s.picture)
        _table_and_group(slide, s)
        if s.extra_shape:
            slide.shapes.add_textbox(Inches(1), Inches(6), Inches(1), Inches(1)).text = "x"
        slide.notes_slide.notes_text_frame.text = f"{s.notes} {index}"
        if s.background is not None:
            slide.background.fill.solid()
            slide.background.fill.fore_color.rgb = RGBColor.from_string(s.background)
    prs.save(path)
    return str(path)


def score(tmp_path: Path, result: Spec, expected: Spec = Spec(), **options: Any) -> float:
    return compare(
        make_deck(tmp_path / "r.pptx", result), make_deck(tmp_path / "e.pptx", expected), **options
    )


def test_identical_decks_match(tmp_path: Path) -> None:
    assert score(tmp_path, Spec()) == 1.0


def moved(dx: int) -> tuple[int, int, int, int]:
    left, top, width, height = Spec.box
    return (left + dx, top, width, height)


# Each case: a result differing from the default deck, then the option that forgives it
# (None: nothing does).
DIFFERENCES: list[tuple[str, Spec, dict[str, Any] | None]] = [
    ("slide count", Spec(slides=2), {"examine_number_of_slides": False}),
    # the bullet check compares paragraph texts over the whole slide, as OSWorld's does
    ("text", Spec(runs=("Hello ", "there")), {"examine_text": False, "examine_bullets": False}),
    ("table text", Spec(table_text="other"), {"examine_bullets": False}),
    ("shape moved", Spec(box=moved(Inches(1))), {"examine_shape": False}),
    ("font name", Spec(font_name="Courier New"), {"examine_font_name": False}),
    ("font size", Spec(size=24), {"examine_font_size": False}),
    ("bold", Spec(bold=False), {"examine_font_bold": False}),
    ("italic", Spec(italic=True), {"examine_font_italic": False}),
    ("colour", Spec(color="0000FF"), {"examine_color_rgb": False}),
    ("underline", Spec(underline=True), {"examine_font_underline": False}),
    ("strike-through", Spec(strike=True), {"examine_strike_through": False}),
    ("alignment", Spec(align=PP_ALIGN.CENTER), {"examine_alignment": False}),
    ("group alignment", Spec(group_align=PP_ALIGN.RIGHT), {"examine_alignment": False}),
    # the level is compared by the bullets check too (unset counts as "0", as in OSWorld)
    ("indent", Spec(level=2), {"examine_indent": False, "examine_bullets": False}),
    ("run count", Spec(runs=("Hello world",)), {"examine_run_count": False}),
    ("bullet", Spec(bullet="•"), {"examine_bullets": False}),
    ("notes", Spec(notes="Other notes"), {"examine_note": False}),
    ("background", Spec(background="00FF00"), {"examine_background_color": False}),
    ("shape count", Spec(extra_shape=True), None),
    ("table run bold (always checked)", Spec(table_bold=True), None),
]


@pytest.mark.parametrize(
    ("what", "result", "forgive"), DIFFERENCES, ids=[d[0] for d in DIFFERENCES]
)
def test_each_difference_fails_unless_its_check_is_off(
    tmp_path: Path, what: str, result: Spec, forgive: dict[str, Any] | None
) -> None:
    assert score(tmp_path, result) == 0.0
    if forgive is not None:
        assert score(tmp_path, result, **forgive) == 1.0


@pytest.mark.parametrize(
    ("result", "expected_score"),
    [
        (Spec(bold=None), 0.0),  # unset vs True
        (Spec(align=PP_ALIGN.LEFT), 1.0),  # unset alignment means left
        (Spec(level=1), 1.0),  # levels 0 and 1 count as equal since OSWorld 1.0.2
        (Spec(level=2), 0.0),
        (Spec(box=moved(Emu(3000))), 1.0),  # within the 0.5 % tolerance
        (Spec(picture=(Inches(1), Inches(3), Inches(2), Inches(2))), 0.0),  # pictures too
    ],
)
def test_lenient_comparisons(tmp_path: Path, result: Spec, expected_score: float) -> None:
    assert score(tmp_path, result) == expected_score


def test_levels_and_run_count_of_1_0_2(tmp_path: Path) -> None:
    """desktop-env 1.0.2 tells levels 0 and 1 apart and always counts runs."""
    gold = make_deck(tmp_path / "e.pptx", Spec())
    level_1 = make_deck(tmp_path / "l.pptx", Spec(level=1))
    merged = make_deck(tmp_path / "r.pptx", Spec(runs=("Hello world",)))
    assert compare_1_0_2(level_1, gold) == 0.0
    assert compare_1_0_2(merged, gold, examine_run_count=False) == 0.0
    assert compare_1_0_2(gold, gold) == 1.0


def test_bold_false_equals_unset(tmp_path: Path) -> None:
    assert score(tmp_path, Spec(bold=None), Spec(bold=False)) == 1.0


def test_approximately_tolerance(tmp_path: Path) -> None:
    result = Spec(box=moved(Emu(int(Inches(1) * 0.008))))
    assert score(tmp_path, result) == 0.0
    assert score(tmp_path, result, approximately_tolerance=0.01) == 1.0


def test_image_size(tmp_path: Path) -> None:
    bigger = Spec(picture=(Inches(5), Inches(3), Inches(3), Inches(3)))
    assert score(tmp_path, bigger) == 0.0  # examine_shape compares pictures too
    assert score(tmp_path, bigger, examine_shape=False, examine_image_size=True) == 0.0
    moved_only = Spec(picture=(Inches(4), Inches(3), Inches(2), Inches(2)))
    assert score(tmp_path, moved_only, examine_shape=False, examine_image_size=True) == 1.0


def test_modify_height(tmp_path: Path) -> None:
    taller = Spec(picture=(Inches(5), Inches(3), Inches(2), Inches(3)))
    options = {"examine_shape": False, "examine_modify_height": True}
    assert score(tmp_path, taller, **options) == 0.0
    assert score(tmp_path, taller, Spec(picture=taller.picture), **options) == 1.0


LENIENT = {"examine_shape": False, "examine_shape_lenient_height": True, "_note": "ignored"}


def test_shape_lenient_height_is_ignored_as_in_osworld(tmp_path: Path) -> None:
    """OSWorld's code never reads the option: with examine_shape off, geometry is free."""
    left, top, width, height = Spec.box
    assert score(tmp_path, Spec(box=(left, top, width, height * 2)), **LENIENT) == 1.0
    assert score(tmp_path, Spec(box=(left * 2, top, width, height)), **LENIENT) == 1.0
    assert score(tmp_path, Spec(box=(left, top, width * 2, height)), **LENIENT) == 1.0


def test_shape_lenient_height_fixed(tmp_path: Path) -> None:
    """The fixed mode: position and width must match, the height may change."""
    fixed = metrics_for("fixed")["compare_pptx_files"]
    left, top, width, height = Spec.box
    gold = make_deck(tmp_path / "e.pptx", Spec())

    def fixed_score(box: tuple[int, int, int, int], **options: Any) -> float:
        return fixed(make_deck(tmp_path / "r.pptx", Spec(box=box)), gold, **options)

    assert fixed_score((left, top, width, height * 2), **LENIENT) == 1.0
    assert fixed_score((left * 2, top, width, height), **LENIENT) == 0.0
    assert fixed_score((left, top, width * 2, height), **LENIENT) == 0.0
    assert fixed_score((left * 2, top, width, height), examine_shape=False) == 1.0


def test_run_count_fixed(tmp_path: Path) -> None:
    """The fixed mode honours examine_run_count: false, as 2026.04's code does (1.0.2's not)."""
    fixed = metrics_for("fixed")["compare_pptx_files"]
    gold = make_deck(tmp_path / "e.pptx", Spec())
    merged = make_deck(tmp_path / "r.pptx", Spec(runs=("Hello world",)))
    assert compare(merged, gold, examine_run_count=False) == 1.0
    assert compare_1_0_2(merged, gold, examine_run_count=False) == 0.0
    assert fixed(merged, gold) == 0.0
    assert fixed(merged, gold, examine_run_count=False) == 1.0
    assert fixed(None, gold, examine_number_of_slides=False) == 0.0


def test_theme_background_raises_as_in_osworld(tmp_path: Path) -> None:
    from pptx.enum.dml import MSO_THEME_COLOR

    gold = make_deck(tmp_path / "e.pptx", Spec())
    prs = pptx.Presentation(gold)
    fill = prs.slides[0].background.fill
    fill.solid()
    fill.fore_color.theme_color = MSO_THEME_COLOR.ACCENT_1
    prs.save(tmp_path / "theme.pptx")
    with pytest.raises(AttributeError):
        compare(str(tmp_path / "theme.pptx"), gold)


def test_missing_or_unreadable_files(tmp_path: Path) -> None:
    gold = make_deck(tmp_path / "e.pptx", Spec())
    junk = tmp_path / "junk.pptx"
    junk.write_text("not a deck")
    assert compare(None, gold) == 0.0  # python-pptx's empty default deck: no slides
    assert compare(gold, None) == 0.0
    assert compare(str(junk), gold) == 0.0
    # OSWorld opens None as the empty default deck: with the slide count off, nothing differs
    assert compare(None, gold, examine_number_of_slides=False) == 1.0


def test_check_slide_orientation_portrait(tmp_path: Path) -> None:
    metric = get_metric("check_slide_orientation_Portrait")
    prs = pptx.Presentation()
    prs.save(tmp_path / "landscape.pptx")
    prs.slide_width, prs.slide_height = prs.slide_height, prs.slide_width
    prs.save(tmp_path / "portrait.pptx")
    assert metric(str(tmp_path / "portrait.pptx")) == 1.0
    assert metric(str(tmp_path / "landscape.pptx")) == 0.0
    assert metric(None) == 0.0


def test_title_bottom_position(tmp_path: Path) -> None:
    # OSWorld's check for one task: the "Product Comparison" title must move down, below
    # 3600000 EMU; every other shape keeps its geometry.
    left, top, width, height = Spec.box
    title = Spec(runs=("Product Comparison",))
    lowered = dataclasses.replace(title, box=(left, Inches(5), width, height))
    options = {"examine_shape": False, "examine_title_bottom_position": True}
    assert score(tmp_path, lowered, title, **options) == 1.0
    assert score(tmp_path, title, title, **options) == 0.0
    moved_picture = dataclasses.replace(lowered, picture=(0, 0, Inches(2), Inches(2)))
    assert score(tmp_path, moved_picture, title, **options) == 0.0
