"""Reference ``osworld-2026.04`` for the presentation metrics that changed since desktop-env 1.0.2.

PyPI ships no OSWorld of April 2026, so there is no side venv to compare with: every expected
score below was derived by reading that code (OSWorld's ``metrics/slides.py`` at GitHub
``ljxpython/OSWorldUse`` f6cee71), never by running it. Each case also states the score of
desktop-env 1.0.2, which the ``*_1_0_2`` variants must keep; ``test_*_1_0_2_is_desktop_env``
checks that column against 1.0.2 itself in the side venv. Options and rules are the task files'
own (``real_checks``, ``real_rules``), read at test time; a case whose task file is not there
skips.

What changed:

* ``compare_pptx_files``: ``examine_run_count`` is read (tasks ``04578141``, ``b8adbc24`` turn
  it off; runs are then compared pairwise up to the shorter paragraph); where both paragraphs
  are blank, only runs with text are counted and compared (none), table cells included;
  paragraph levels 0 and 1 count as equal; the bullets check (over the slide's XML, table
  paragraphs included) compares levels only where a paragraph has a bullet character;
  ``examine_shape`` leaves alone the geometry of pairs where neither shape has text. Our
  decision by the task files: pictures keep that check (``e4ef0baf`` asks for a picture's height
  with nothing else to check it), see ``test_picture_geometry_is_kept``.
* ``check_page_number_colors``: 1.0.2 reads the master's second-to-last ``a:srgbClr`` under an
  ``a:solidFill``, one character late, and raises with fewer than two; 2026.04 takes a colour
  inside the first ``sldNum`` ``p:ph`` element, else inside the first ``sldNum``/``ftr``/``dt``
  one that holds any (no valid deck has one there), else the master's last non-black run
  colour, else its last non-black colour of any kind, else its last colour; no colour, or a
  value that is not six hex digits after an optional ``#``, scores 0 whatever the name.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pptx
import pytest
from lxml import etree
from osworld_data import MISSING, have_osworld_tasks
from parity_harness import OSWorld, OSWorldError, real_checks, real_rules
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE, PP_PLACEHOLDER
from pptx.oxml.ns import qn
from pptx.util import Inches, Pt

from osworld_gym.evaluation.metrics import slides, slides_checks
from osworld_gym.evaluation.metrics.registry import metrics_for
from osworld_gym.evaluation.references import OSWORLD_2026_04

pytestmark = pytest.mark.parity

METRICS_2026_04 = metrics_for("osworld", OSWORLD_2026_04)
SLIDES_MODULE = "evaluators/metrics/slides.py"
RAISES = None  # an expected score where OSWorld's code raises (the evaluator records 0)

Edit = Callable[[Any], None]
Run = tuple[str, dict[str, Any]]


# --- decks ------------------------------------------------------------------------------------


def deck(*edits: Edit) -> Callable[[Path], str]:
    """A one-slide (blank layout) deck builder; each edit adds to the slide."""

    def build(path: Path) -> str:
        presentation = pptx.Presentation()
        slide = presentation.slides.add_slide(presentation.slide_layouts[6])
        for edit in edits:
            edit(slide)
        presentation.save(path)
        return str(path)

    return build


def _fill_paragraph(paragraph: Any, runs: list[Run], level: int, bullet: str | None) -> None:
    paragraph.level = level
    if bullet is not None:
        paragraph._p.get_or_add_pPr().append(
            paragraph._p.makeelement(qn("a:buChar"), {"char": bullet})
        )
    for text, font in runs:
        run = paragraph.add_run()  # an empty run is written as <a:r><a:t/></a:r>
        run.text = text
        if "size" in font:
            run.font.size = Pt(font["size"])
        if "rgb" in font:
            run.font.color.rgb = RGBColor.from_string(font["rgb"])
        if "bold" in font:
            run.font.bold = font["bold"]


def box(
    *paragraphs: list[Run],
    at: tuple[float, float, float, float] = (1, 1, 6, 1.5),
    level: int = 0,
    bullet: str | None = None,
) -> Edit:
    """A text box; each paragraph a list of runs (``[]``: a paragraph without runs)."""

    def add(slide: Any) -> None:
        frame = slide.shapes.add_textbox(*[Inches(v) for v in at]).text_frame
        for index, runs in enumerate(paragraphs):
            paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
            _fill_paragraph(paragraph, runs, level, bullet)

    return add


def rect(at: tuple[float, float, float, float] = (1, 3, 2, 1)) -> Edit:
    """An autoshape without text (OSWorld's ``text`` is empty)."""
    return lambda slide: slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, *[Inches(v) for v in at])


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


PNG = _png()


def picture(at: tuple[float, float, float, float] = (1, 2, 4, 3)) -> Edit:
    return lambda slide: slide.shapes.add_picture(io.BytesIO(PNG), *[Inches(v) for v in at])


def table(
    cells: list[list[list[Run]]],
    at: tuple[float, float, float, float] = (1, 4, 4, 1),
    level: int = 0,
    bullet: str | None = None,
) -> Edit:
    """A table; each cell's paragraph a list of runs (``[]``: none, as python-pptx adds it)."""

    def add(slide: Any) -> None:
        frame = slide.shapes.add_table(len(cells), len(cells[0]), *[Inches(v) for v in at])
        for i, row in enumerate(cells):
            for j, runs in enumerate(row):
                paragraph = frame.table.cell(i, j).text_frame.paragraphs[0]
                _fill_paragraph(paragraph, runs, level, bullet)

    return add


def group(left: float) -> Edit:
    """A group holding a text box and a rectangle, its left edge at ``left`` inches."""

    def add(slide: Any) -> None:
        shapes = slide.shapes.add_group_shape()
        shapes.shapes.add_textbox(Inches(left), Inches(5), Inches(2), Inches(0.5)).text = "in"
        shapes.shapes.add_shape(MSO_SHAPE.OVAL, Inches(left + 2), Inches(5), Inches(1), Inches(1))

    return add


def plain(text: str) -> list[Run]:
    return [(text, {})]


# --- compare_pptx_files -----------------------------------------------------------------------


def _task_options(task: str) -> dict[str, Any]:
    """The options of ``task``'s (first) ``compare_pptx_files`` check; skips without task files."""
    for found, _, _, options in real_checks("compare_pptx_files"):
        if found == task:
            return dict(options)
    if not have_osworld_tasks():
        pytest.skip(MISSING)
    raise LookupError(f"no compare_pptx_files check in task {task}")


@dataclass(frozen=True)
class PptxCase:
    """A result deck against a reference deck under a task's options, with both scores."""

    label: str
    task: str  # whose options (the 8-character task id prefix)
    result: Callable[[Path], str]
    expected: Callable[[Path], str]
    new: float  # OSWorld's code of 2026.04 (= compare_pptx_files)
    old: float  # desktop-env 1.0.2 (= compare_pptx_files_1_0_2)


TITLE = "Online Shopping"
COLOURS = ("FFFF00", "FF0000", "00FF00")  # 04578141: yellow, red, green top to bottom


def _three_boxes(red_runs: list[Run], red_height: float = 1) -> Callable[[Path], str]:
    return deck(
        box([("First", {"rgb": COLOURS[0]})], at=(1, 1, 6, 1)),
        box(red_runs, at=(1, 2.5, 6, red_height)),
        box([("Third", {"rgb": COLOURS[2]})], at=(1, 4, 6, 1)),
    )


RED = [("Second box", {"rgb": COLOURS[1]})]
RED_SPLIT = [("Second ", {"rgb": COLOURS[1]}), ("box", {"rgb": COLOURS[1]})]
TWO_RUN_TITLE = [("Online ", {"rgb": "1F4E79"}), ("Shopping", {"rgb": "1F4E79"})]
PAGE = [plain("Page 1")]  # 73c99fb9: "Page 1" added to the content box

PPTX_CASES = [
    # examine_run_count: false (b8adbc24, 04578141) is read: the runs are paired up to the
    # shorter paragraph, so only the first run's font is compared against a merged title.
    PptxCase(
        "run-count-off-merged",
        "b8adbc24",
        deck(box([(TITLE, {"rgb": "1F4E79"})])),
        deck(box(TWO_RUN_TITLE)),
        1.0,
        0.0,
    ),
    PptxCase(
        "run-count-off-second-run-unseen",
        "b8adbc24",
        deck(box([(TITLE, {"rgb": "1F4E79"})])),
        deck(box([("Online ", {"rgb": "1F4E79"}), ("Shopping", {"rgb": "C00000"})])),
        1.0,
        0.0,
    ),
    PptxCase(
        "run-count-off-first-run-colour",
        "b8adbc24",
        deck(box([(TITLE, {"rgb": "C00000"})])),
        deck(box(TWO_RUN_TITLE)),
        0.0,
        0.0,
    ),
    PptxCase(
        "run-count-off-split", "04578141", _three_boxes(RED_SPLIT), _three_boxes(RED), 1.0, 0.0
    ),
    PptxCase("run-count-off-same", "04578141", _three_boxes(RED), _three_boxes(RED), 1.0, 1.0),
    # examine_shape_lenient_height is read by neither: with examine_shape off, height is free.
    PptxCase(
        "lenient-height-unread", "04578141", _three_boxes(RED, 1.5), _three_boxes(RED), 1.0, 1.0
    ),
    PptxCase(
        "run-count-default-split",
        "73c99fb9",
        deck(box([("Page ", {}), ("1", {})])),
        deck(box(*PAGE)),
        0.0,
        0.0,
    ),
    # Blank paragraphs: runs without text are neither counted nor compared.
    PptxCase(
        "blank-paragraph-no-run-vs-empty-run",
        "73c99fb9",
        deck(box(*PAGE, [])),
        deck(box(*PAGE, plain(""))),
        1.0,
        0.0,
    ),
    PptxCase(
        "blank-paragraph-empty-run-font",
        "73c99fb9",
        deck(box(*PAGE, [("", {"size": 40})])),
        deck(box(*PAGE, [("", {"size": 18})])),
        1.0,
        0.0,
    ),
    PptxCase(
        "whitespace-paragraph-run-font",
        "73c99fb9",
        deck(box(*PAGE, [(" ", {"size": 40})])),
        deck(box(*PAGE, [(" ", {"size": 18})])),
        1.0,
        0.0,
    ),
    PptxCase(
        "blank-vs-text-paragraph",
        "73c99fb9",
        deck(box(*PAGE, plain(""))),
        deck(box(*PAGE, plain("more"))),
        0.0,
        0.0,
    ),
    PptxCase(
        "text-paragraph-font",
        "73c99fb9",
        deck(box([("Page 1", {"size": 40})])),
        deck(box([("Page 1", {"size": 18})])),
        0.0,
        0.0,
    ),
    # Table cells (39be0d19: insert a 5x2 table): blank cells, and the table's geometry (a
    # graphic frame has no text, so examine_shape leaves it alone).
    PptxCase(
        "table-blank-cells-empty-runs",
        "39be0d19",
        deck(table([[[], []]] * 5)),
        deck(table([[plain(""), plain("")]] * 5)),
        1.0,
        0.0,
    ),
    PptxCase(
        "table-blank-cell-bold-empty-run",
        "39be0d19",
        deck(table([[[("", {"bold": True})], plain("")]] * 5)),
        deck(table([[plain(""), plain("")]] * 5)),
        1.0,
        0.0,
    ),
    PptxCase(
        "table-moved-resized",
        "39be0d19",
        deck(table([[plain("a"), plain("b")]] * 5, at=(2, 2, 6, 3))),
        deck(table([[plain("a"), plain("b")]] * 5)),
        1.0,
        0.0,
    ),
    PptxCase(
        "table-cell-bold",
        "39be0d19",
        deck(table([[[("a", {"bold": True})], plain("b")]] * 5)),
        deck(table([[plain("a"), plain("b")]] * 5)),
        0.0,
        0.0,
    ),
    PptxCase(
        "table-rows",
        "39be0d19",
        deck(table([[plain("a"), plain("b")]] * 4)),
        deck(table([[plain("a"), plain("b")]] * 5)),
        0.0,
        0.0,
    ),
    # Levels (a669ef01: a continuation line indented as the others, without a bullet).
    PptxCase(
        "level-1-vs-0",
        "a669ef01",
        deck(box(plain("continuation"), level=1)),
        deck(box(plain("continuation"))),
        1.0,
        0.0,
    ),
    PptxCase(
        "level-2-vs-0",
        "a669ef01",
        deck(box(plain("continuation"), level=2)),
        deck(box(plain("continuation"))),
        0.0,
        0.0,
    ),
    PptxCase(
        "level-1-vs-0-bulleted",
        "a669ef01",
        deck(box(plain("sub topic"), level=1, bullet="•")),
        deck(box(plain("sub topic"), bullet="•")),
        0.0,
        0.0,
    ),
    PptxCase(
        "level-2-vs-1",
        "a669ef01",
        deck(box(plain("continuation"), level=2)),
        deck(box(plain("continuation"), level=1)),
        0.0,
        0.0,
    ),
    # The bullets check alone (5cfb9197: a table slide): a table paragraph's level is read only
    # there, and only with a bullet character since 2026.04.
    PptxCase(
        "table-level-no-bullet",
        "5cfb9197",
        deck(box(plain("Title")), table([[plain("T1"), plain("T2")]], level=1)),
        deck(box(plain("Title")), table([[plain("T1"), plain("T2")]])),
        1.0,
        0.0,
    ),
    PptxCase(
        "table-level-bullet",
        "5cfb9197",
        deck(box(plain("Title")), table([[plain("T1"), plain("T2")]], level=1, bullet="-")),
        deck(box(plain("Title")), table([[plain("T1"), plain("T2")]], bullet="-")),
        0.0,
        0.0,
    ),
    # Geometry of shapes without text (9cf05d24: a background change; examine_shape on).
    PptxCase(
        "rect-moved",
        "9cf05d24",
        deck(box(PAGE[0]), rect((3, 3, 2, 1))),
        deck(box(PAGE[0]), rect()),
        1.0,
        0.0,
    ),
    PptxCase(
        "rect-resized",
        "9cf05d24",
        deck(box(PAGE[0]), rect((1, 3, 2, 2))),
        deck(box(PAGE[0]), rect()),
        1.0,
        0.0,
    ),
    PptxCase(
        "empty-box-moved",
        "9cf05d24",
        deck(box(plain(""), at=(2, 2, 3, 1))),
        deck(box(plain(""), at=(1, 1, 3, 1))),
        1.0,
        0.0,
    ),
    PptxCase(
        "whitespace-box-resized",
        "9cf05d24",
        deck(box(plain("  "), at=(1, 1, 5, 2))),
        deck(box(plain("  "), at=(1, 1, 3, 1))),
        1.0,
        0.0,
    ),
    PptxCase(
        "text-box-moved",
        "9cf05d24",
        deck(box(plain("Hello"), at=(2, 1, 6, 1.5))),
        deck(box(plain("Hello"))),
        0.0,
        0.0,
    ),
    PptxCase("group-moved", "9cf05d24", deck(group(3)), deck(group(1)), 1.0, 0.0),
]


def _pptx_params(cases: list[PptxCase]) -> list[Any]:
    return [pytest.param(case, id=f"{case.task}-{case.label}") for case in cases]


def _paths(case: PptxCase, folder: Path) -> tuple[str, str]:
    return case.result(folder / "result.pptx"), case.expected(folder / "expected.pptx")


@pytest.mark.parametrize("case", _pptx_params(PPTX_CASES))
def test_compare_pptx_files(tmp_path: Path, case: PptxCase) -> None:
    options = _task_options(case.task)
    paths = _paths(case, tmp_path)
    assert METRICS_2026_04["compare_pptx_files"](*paths, **options) == case.new
    assert slides.compare_pptx_files_1_0_2(*paths, **options) == case.old


@pytest.mark.parametrize("case", _pptx_params(PPTX_CASES))
def test_compare_pptx_files_1_0_2_is_desktop_env(
    osworld: OSWorld, tmp_path: Path, case: PptxCase
) -> None:
    """The old column is desktop-env 1.0.2's own score (its side venv)."""
    options = _task_options(case.task)
    paths = _paths(case, tmp_path)
    assert osworld.score(SLIDES_MODULE, "compare_pptx_files", *paths, **options) == case.old


PICTURE_CASES = [
    # e4ef0baf: "The height of picture should be 20cm on slide 3 ..." with examine_shape on
    # (its default). 2026.04's code would score 1: a picture has no text, so it skips the
    # geometry and an unchanged picture passes. We keep the check for pictures, as 1.0.2 does.
    PptxCase(
        "picture-height",
        "e4ef0baf",
        deck(box(plain("Slide")), picture((1, 2, 4, 2))),
        deck(box(plain("Slide")), picture((1, 2, 4, 3))),
        0.0,
        0.0,
    ),
    PptxCase(
        "picture-moved",
        "e4ef0baf",
        deck(box(plain("Slide")), picture((3, 2, 4, 3))),
        deck(box(plain("Slide")), picture()),
        0.0,
        0.0,
    ),
    PptxCase(
        "picture-same",
        "e4ef0baf",
        deck(box(plain("Slide")), picture()),
        deck(box(plain("Slide")), picture()),
        1.0,
        1.0,
    ),
]


@pytest.mark.parametrize("case", _pptx_params(PICTURE_CASES))
def test_picture_geometry_is_kept(tmp_path: Path, case: PptxCase) -> None:
    """Decided by the task files: pictures keep examine_shape's geometry check."""
    options = _task_options(case.task)
    paths = _paths(case, tmp_path)
    assert METRICS_2026_04["compare_pptx_files"](*paths, **options) == case.new
    assert slides.compare_pptx_files_1_0_2(*paths, **options) == case.old


def test_fixed_mode_keeps_2026_04_rules(tmp_path: Path) -> None:
    """The fixed mode adds examine_shape_lenient_height to 2026.04's rules (04578141)."""
    fixed = metrics_for("fixed", OSWORLD_2026_04)["compare_pptx_files"]
    options = _task_options("04578141")
    gold = _three_boxes(RED)(tmp_path / "gold.pptx")
    split_taller = _three_boxes(RED_SPLIT, 1.5)(tmp_path / "taller.pptx")
    assert fixed(split_taller, gold, **options) == 1.0
    wider = deck(
        box([("First", {"rgb": COLOURS[0]})], at=(1, 1, 7, 1)),
        box(RED, at=(1, 2.5, 6, 1)),
        box([("Third", {"rgb": COLOURS[2]})], at=(1, 4, 6, 1)),
    )(tmp_path / "wider.pptx")
    assert fixed(wider, gold, **options) == 0.0
    level = (tmp_path / "l1.pptx", tmp_path / "l0.pptx")
    paths = deck(box(plain("x"), level=1))(level[0]), deck(box(plain("x")))(level[1])
    assert fixed(*paths) == 1.0


# --- check_page_number_colors -----------------------------------------------------------------

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_NUMBER_TYPES = (PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER)


@dataclass(frozen=True)
class Master:
    """The first slide master's colours; python-pptx's default master has no RGB colour.

    ``runs``: a run coloured ``val`` added to the date, footer and slide-number placeholders,
    in that (document) order (``None``: no run). ``number_fill``: a solid RGB fill of the
    slide-number placeholder (before its text in the XML). ``ph_colour``: an RGB colour put
    inside the slide-number ``p:ph`` element itself (no valid deck has one there).
    """

    runs: tuple[str | None, str | None, str | None] = (None, None, None)
    number_fill: str | None = None
    ph_colour: str | None = None

    def build(self, path: Path) -> str:
        presentation = pptx.Presentation()
        presentation.slides.add_slide(presentation.slide_layouts[6])
        placeholders = {
            p.placeholder_format.type: p for p in presentation.slide_masters[0].placeholders
        }
        for kind, value in zip(_NUMBER_TYPES, self.runs, strict=True):
            if value is not None:
                run = placeholders[kind].text_frame.paragraphs[0].add_run()
                run.text = "9"
                _set_rgb(run.font.color, value)
        number = placeholders[PP_PLACEHOLDER.SLIDE_NUMBER]
        if self.number_fill is not None:
            number.fill.solid()
            _set_rgb(number.fill.fore_color, self.number_fill)
        if self.ph_colour is not None:
            ph = number._element.find(".//" + qn("p:ph"))
            fill = etree.SubElement(ph, f"{_A}solidFill")
            etree.SubElement(fill, f"{_A}srgbClr").set("val", self.ph_colour)
        presentation.save(path)
        return str(path)


def _set_rgb(colour: Any, value: str) -> None:
    """An RGB colour, its ``val`` written as given (``#`` or odd lengths included)."""
    colour.rgb = RGBColor(0, 0, 0)
    colour._color._srgbClr.set("val", value)


K = "000000"
# (label, master, colour name, 2026.04, 1.0.2); 1.0.2 reads the second-to-last colour of
# [date run, footer run, (number fill), number run] one character late: "FF0000" -> 240, 0, 0.
PAGE_NUMBER_CASES: list[tuple[str, Master, str, float, float | None]] = [
    ("red-number", Master((K, K, "FF0000")), "red", 1.0, 0.0),
    ("dark-red-number", Master((K, K, "C00000")), "red", 1.0, 0.0),
    ("red-number-only", Master((None, None, "FF0000")), "red", 1.0, RAISES),
    ("lower-case-red-number", Master((K, K, "ff0000")), "red", 1.0, 0.0),
    ("hash-red-number", Master((K, K, "#FF0000")), "red", 1.0, 0.0),
    # 2026.04 takes the last non-black run colour, the number's or not.
    ("red-footer-black-number", Master((K, "FF0000", K)), "red", 1.0, 1.0),
    ("red-date-black-rest", Master(("FF0000", K, K)), "red", 1.0, 0.0),
    ("red-date-blue-number", Master(("FF0000", K, "0000FF")), "red", 0.0, 0.0),
    ("blue-number", Master((K, K, "0000FF")), "blue", 1.0, 0.0),
    ("blue-footer", Master((K, "0000FF", K)), "blue", 1.0, 0.0),  # 1.0.2: 0, 15, 15
    ("green-number", Master((K, K, "00C000")), "green", 1.0, 0.0),
    ("all-black", Master((K, K, K)), "black", 1.0, 1.0),
    ("all-black-wanted-red", Master((K, K, K)), "red", 0.0, 0.0),
    # Black runs only: the last non-black colour of any kind (here the number's fill).
    ("blue-fill-black-runs", Master((K, K, K), number_fill="0000FF"), "blue", 1.0, 0.0),
    (
        "blue-fill-black-runs-wanted-black",
        Master((K, K, K), number_fill="0000FF"),
        "black",
        0.0,
        1.0,
    ),
    # Not six hex digits: 0 in 2026.04; 1.0.2 reads what it can (or raises).
    ("short-value-number", Master((K, K, "FF00")), "red", 0.0, 0.0),
    ("short-value-footer", Master((K, "FF00", K)), "red", 0.0, RAISES),
    ("not-hex-footer", Master((K, "GG0000", K)), "red", 0.0, RAISES),
    # No RGB colour on the master: 0 in 2026.04 whatever the name; 1.0.2 raises.
    ("no-colour", Master(), "red", 0.0, RAISES),
    ("no-colour-unknown-name", Master(), "purple", 0.0, RAISES),
    # Unknown (or capitalised) names pass once a colour is read.
    ("unknown-name", Master((K, K, "0000FF")), "purple", 1.0, 1.0),
    ("capitalised-name", Master((K, K, "0000FF")), "Red", 1.0, 1.0),
    # A colour inside the slide-number p:ph element comes first in 2026.04.
    ("colour-in-ph-element", Master((None, None, "FF0000"), ph_colour="0000FF"), "red", 0.0, 0.0),
    (
        "colour-in-ph-element-blue",
        Master((None, None, "FF0000"), ph_colour="0000FF"),
        "blue",
        1.0,
        0.0,
    ),
]


def _page_number_params() -> list[Any]:
    # The task's own rules (ac9bb6cb: red) where a case wants red; other names are synthetic.
    real = [rules for _, rules in real_rules("check_page_number_colors")]
    params = []
    for label, master, name, new, old in PAGE_NUMBER_CASES:
        rules = next((r for r in real if r.get("color") == name), {"color": name})
        params.append(pytest.param(master, rules, new, old, id=label))
    return params


@pytest.mark.parametrize(("master", "rules", "new", "old"), _page_number_params())
def test_check_page_number_colors(
    tmp_path: Path, master: Master, rules: dict[str, Any], new: float, old: float | None
) -> None:
    path = master.build(tmp_path / "deck.pptx")
    assert METRICS_2026_04["check_page_number_colors"](path, rules) == new
    if old is RAISES:
        with pytest.raises(Exception):  # noqa: B017, PT011 - as OSWorld's own run
            slides_checks.check_page_number_colors_1_0_2(path, rules)
    else:
        assert slides_checks.check_page_number_colors_1_0_2(path, rules) == old


@pytest.mark.parametrize(("master", "rules", "new", "old"), _page_number_params())
def test_check_page_number_colors_1_0_2_is_desktop_env(
    osworld: OSWorld,
    tmp_path: Path,
    master: Master,
    rules: dict[str, Any],
    new: float,
    old: float | None,
) -> None:
    """The old column is desktop-env 1.0.2's own score (its side venv)."""
    path = master.build(tmp_path / "deck.pptx")
    if old is RAISES:
        with pytest.raises(OSWorldError):
            osworld.score(SLIDES_MODULE, "check_page_number_colors", path, rules)
    else:
        assert osworld.score(SLIDES_MODULE, "check_page_number_colors", path, rules) == old


def test_page_number_task_rules_are_there() -> None:
    """libreoffice_impress/ac9bb6cb (slide number to red) is the metric's one task."""
    if not have_osworld_tasks():
        pytest.skip(MISSING)
    assert [rules for _, rules in real_rules("check_page_number_colors")] == [{"color": "red"}]
