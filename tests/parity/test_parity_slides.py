"""Parity of the presentation metrics (OSWorld's ``slides`` module) with ours.

Decks are written at test time with python-pptx (a builder per case), or saved by LibreOffice
Impress itself: the module-scoped ``lo`` fixture writes a handful of base decks and converts them
in one ``soffice --convert-to pptx`` call; cases name them (``Lo("name")``), optionally with
zip-level edits. ``compare_pptx_files`` runs with every distinct option set of the task files
(``real_checks``) over pairs of decks that differ in one property each.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pptx
import pytest
from fixture_marks import needs
from lxml import etree
from office_convert import convert, patch_zip
from parity_harness import ABSENT, OSWorld, assert_same_score, real_checks
from pptx.dml.color import RGBColor
from pptx.enum.dml import MSO_THEME_COLOR
from pptx.enum.shapes import MSO_SHAPE
from pptx.enum.text import PP_ALIGN
from pptx.util import Inches, Pt

pytestmark = pytest.mark.parity

Build = Callable[[Path], None]
SlideEdit = Callable[[Any], None]


# --- builders -----------------------------------------------------------------------------


def deck(*slides: list[SlideEdit], edit: Callable[[Any], None] | None = None) -> Build:
    """A builder: one blank-layout slide per list of slide edits (then ``edit(presentation)``)."""

    def build(path: Path) -> None:
        presentation = pptx.Presentation()
        for edits_ in slides:
            slide = presentation.slides.add_slide(presentation.slide_layouts[6])
            for step in edits_:
                step(slide)
        if edit is not None:
            edit(presentation)
        presentation.save(path)

    return build


def textbox(
    *paragraphs: list[tuple[str, dict[str, Any]]] | str,
    box: tuple[float, float, float, float] = (1, 1, 6, 1.5),
    align: Any = None,
    level: int = 0,
    bullet: str | None = None,
) -> SlideEdit:
    """A text box; each paragraph is a text or a list of runs ``(text, {font attr: value})``."""

    def add(slide: Any) -> None:
        shape = slide.shapes.add_textbox(*[Inches(v) for v in box])
        frame = shape.text_frame
        for index, paragraph_spec in enumerate(paragraphs):
            paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
            parts = [(paragraph_spec, {})] if isinstance(paragraph_spec, str) else paragraph_spec
            for text, font in parts:
                run = paragraph.add_run()
                run.text = text
                for name, value in font.items():
                    if name == "rgb":
                        run.font.color.rgb = value
                    elif name == "theme":
                        run.font.color.theme_color = value
                    elif name == "strike":
                        run.font._rPr.set("strike", value)
                    else:
                        setattr(run.font, name, value)
            if align is not None:
                paragraph.alignment = align
            paragraph.level = level
            if bullet is not None:
                ppr = paragraph._p.get_or_add_pPr()
                bu = etree.SubElement(
                    ppr, "{http://schemas.openxmlformats.org/drawingml/2006/main}buChar"
                )
                bu.set("char", bullet)

    return add


def rect(
    box: tuple[float, float, float, float] = (1, 3, 2, 1), text: str | None = None
) -> SlideEdit:
    def add(slide: Any) -> None:
        shape = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, *[Inches(v) for v in box])
        if text is not None:
            shape.text_frame.text = text

    return add


def background(rgb: RGBColor | None = None, theme: Any = None) -> SlideEdit:
    def paint(slide: Any) -> None:
        fill = slide.background.fill
        fill.solid()
        if theme is not None:
            fill.fore_color.theme_color = theme
        else:
            fill.fore_color.rgb = rgb

    return paint


def notes(text: str) -> SlideEdit:
    return lambda slide: setattr(slide.notes_slide.notes_text_frame, "text", text)


def grid(
    cells: list[list[str]], bold: tuple[int, int] | None = None, rgb: RGBColor | None = None
) -> SlideEdit:
    def add(slide: Any) -> None:
        frame = slide.shapes.add_table(
            len(cells), len(cells[0]), Inches(1), Inches(4), Inches(4), Inches(1)
        )
        for i, row in enumerate(cells):
            for j, text in enumerate(row):
                cell = frame.table.cell(i, j)
                cell.text = text
                run = cell.text_frame.paragraphs[0].runs[0]
                if bold == (i, j):
                    run.font.bold = True
                if rgb is not None:
                    run.font.color.rgb = rgb

    return add


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, "PNG")
    return buffer.getvalue()


RED_PNG, BLUE_PNG = _png((255, 0, 0)), _png((0, 0, 255))


def picture(
    box: tuple[float, float, float, float] = (1, 2, 2, 1.5), data: bytes = RED_PNG
) -> SlideEdit:
    return lambda slide: slide.shapes.add_picture(io.BytesIO(data), *[Inches(v) for v in box])


def group(*texts: str, align: Any = None) -> SlideEdit:
    def add(slide: Any) -> None:
        shapes = slide.shapes.add_group_shape()
        for i, text in enumerate(texts):
            box = shapes.shapes.add_textbox(Inches(1), Inches(2 + i), Inches(3), Inches(0.5))
            box.text_frame.text = text
            if align is not None:
                box.text_frame.paragraphs[0].alignment = align

    return add


def transition(kind: str = "dissolve") -> SlideEdit:
    def add(slide: Any) -> None:
        p = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
        element = etree.SubElement(slide._element, f"{p}transition")
        etree.SubElement(element, f"{p}{kind}")

    return add


@dataclass(frozen=True)
class Lo:
    """A deck saved by LibreOffice (a base of ``LO_BASES``), optionally edited in its zip."""

    name: str
    edits: dict[str, Callable[[bytes], bytes] | None] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Lo({self.name})"


Spec = Build | Lo | bytes | None | Any


def materialise(spec: Spec, folder: Path, name: str, lo: dict[str, Path]) -> Path | None:
    if spec is None:
        return None
    path = folder.resolve() / name
    if spec is ABSENT:
        return path
    if isinstance(spec, Lo):
        if spec.edits:
            patch_zip(lo[spec.name], path, spec.edits)
        else:
            shutil.copyfile(lo[spec.name], path)
    elif isinstance(spec, bytes):
        path.write_bytes(spec)
    else:
        spec(path)
    return path


# --- the base deck and its one-property variants ------------------------------------------

TITLE = [("Quarterly review", {"bold": True, "size": Pt(32), "name": "Arial"})]
BODY = [("Revenue grew ", {}), ("12%", {"italic": True, "rgb": RGBColor(0xC0, 0, 0)})]


def base_slides(**changes: Any) -> list[list[SlideEdit]]:
    """Two slides: a title and body box, a rectangle; ``changes`` swap one piece."""
    title = changes.get("title", textbox(TITLE, box=(1, 0.5, 8, 1)))
    body = changes.get("body", textbox(BODY, "Second point", box=(1, 2, 8, 2)))
    shape = changes.get("shape", rect())
    slide2 = changes.get("slide2", [textbox("Thanks", box=(2, 2, 4, 1))])
    extra = changes.get("extra", [])
    return [[title, body, shape, *extra], slide2]


def base(**changes: Any) -> Build:
    return deck(*base_slides(**changes))


PAIRS: list[tuple[str, Build]] = [
    ("equal", base()),
    (
        "text",
        base(body=textbox([("Revenue fell ", {}), BODY[1]], "Second point", box=(1, 2, 8, 2))),
    ),
    ("moved-slightly", base(shape=rect((1.001, 3, 2, 1)))),
    ("moved", base(shape=rect((1.5, 3, 2, 1)))),
    ("taller", base(shape=rect((1, 3, 2, 1.5)))),
    (
        "font-name",
        base(
            title=textbox(
                [("Quarterly review", {"bold": True, "size": Pt(32), "name": "Calibri"})],
                box=(1, 0.5, 8, 1),
            )
        ),
    ),
    (
        "font-size",
        base(
            title=textbox(
                [("Quarterly review", {"bold": True, "size": Pt(30), "name": "Arial"})],
                box=(1, 0.5, 8, 1),
            )
        ),
    ),
    (
        "not-bold",
        base(
            title=textbox(
                [("Quarterly review", {"bold": False, "size": Pt(32), "name": "Arial"})],
                box=(1, 0.5, 8, 1),
            )
        ),
    ),
    (
        "bold-unset",
        base(
            title=textbox(
                [("Quarterly review", {"size": Pt(32), "name": "Arial"})], box=(1, 0.5, 8, 1)
            )
        ),
    ),
    (
        "not-italic",
        base(
            body=textbox(
                [BODY[0], ("12%", {"rgb": RGBColor(0xC0, 0, 0)})], "Second point", box=(1, 2, 8, 2)
            )
        ),
    ),
    (
        "colour",
        base(
            body=textbox(
                [BODY[0], ("12%", {"italic": True, "rgb": RGBColor(0, 0, 0xC0)})],
                "Second point",
                box=(1, 2, 8, 2),
            )
        ),
    ),
    (
        "theme-colour",
        base(
            body=textbox(
                [BODY[0], ("12%", {"italic": True, "theme": MSO_THEME_COLOR.ACCENT_1})],
                "Second point",
                box=(1, 2, 8, 2),
            )
        ),
    ),
    (
        "underline",
        base(
            body=textbox(
                [
                    BODY[0],
                    ("12%", {"italic": True, "rgb": RGBColor(0xC0, 0, 0), "underline": True}),
                ],
                "Second point",
                box=(1, 2, 8, 2),
            )
        ),
    ),
    (
        "strike",
        base(
            body=textbox(
                [
                    BODY[0],
                    ("12%", {"italic": True, "rgb": RGBColor(0xC0, 0, 0), "strike": "sngStrike"}),
                ],
                "Second point",
                box=(1, 2, 8, 2),
            )
        ),
    ),
    ("centred", base(body=textbox(BODY, "Second point", box=(1, 2, 8, 2), align=PP_ALIGN.CENTER))),
    (
        "left-explicit",
        base(body=textbox(BODY, "Second point", box=(1, 2, 8, 2), align=PP_ALIGN.LEFT)),
    ),
    ("level-1", base(body=textbox(BODY, "Second point", box=(1, 2, 8, 2), level=1))),
    (
        "split-runs",
        base(
            body=textbox(
                [("Revenue ", {}), ("grew ", {}), BODY[1]], "Second point", box=(1, 2, 8, 2)
            )
        ),
    ),
    ("bullets", base(body=textbox(BODY, "Second point", box=(1, 2, 8, 2), bullet="•"))),
    ("background", deck(*[[background(RGBColor(0, 0, 0xFF)), *s] for s in base_slides()])),
    (
        "theme-background",
        deck(*[[background(theme=MSO_THEME_COLOR.ACCENT_2), *s] for s in base_slides()]),
    ),
    ("notes", deck(*[[notes("Speak slowly"), *s] for s in base_slides()])),
    ("notes-spaces", deck(*[[notes("   "), *s] for s in base_slides()])),
    ("extra-slide", deck(*base_slides(), [textbox("More")])),
    ("extra-shape", base(extra=[rect((5, 5, 1, 1))])),
    (
        "shapes-swapped",
        deck(
            [
                textbox(BODY, "Second point", box=(1, 2, 8, 2)),
                textbox(TITLE, box=(1, 0.5, 8, 1)),
                rect(),
            ],
            base_slides()[1],
        ),
    ),
    ("table", base(extra=[grid([["a", "b"], ["c", "d"]])])),
    ("picture", base(extra=[picture()])),
    ("group", base(extra=[group("x", "y")])),
    ("empty-paragraph", base(body=textbox(BODY, "Second point", "", box=(1, 2, 8, 2)))),
    (
        "trailing-space",
        base(body=textbox([("Revenue grew ", {}), BODY[1]], "Second point ", box=(1, 2, 8, 2))),
    ),
]
# What a pair is compared with: the same deck with the extra piece, where the variant adds one.
COUNTERPARTS: dict[str, Build] = {
    "table-bold": base(extra=[grid([["a", "b"], ["c", "d"]], bold=(0, 0))]),
    "table-text": base(extra=[grid([["a", "b"], ["c", "e"]])]),
    "table-colour": base(extra=[grid([["a", "b"], ["c", "d"]], rgb=RGBColor(0xFF, 0, 0))]),
    "picture-resized": base(extra=[picture((1, 2, 3, 2.25))]),
    "picture-moved": base(extra=[picture((4, 2, 2, 1.5))]),
    "group-aligned": base(extra=[group("x", "y", align=PP_ALIGN.RIGHT)]),
    "group-text": base(extra=[group("x", "z")]),
}
WITH_EXTRA = {
    "table-bold": "table",
    "table-text": "table",
    "table-colour": "table",
    "picture-resized": "picture",
    "picture-moved": "picture",
    "group-aligned": "group",
    "group-text": "group",
}


def _pptx_cases() -> list[Any]:
    pairs = dict(PAIRS)
    cases = [
        pytest.param(build, pairs["equal"], {}, id=f"defaults-{label}") for label, build in PAIRS
    ]
    cases += [
        pytest.param(COUNTERPARTS[label], pairs[extra], {}, id=f"defaults-{label}")
        for label, extra in WITH_EXTRA.items()
    ]
    cases.append(pytest.param(pairs["table"], pairs["table"], {}, id="defaults-table-both"))
    cases.append(pytest.param(pairs["picture"], pairs["picture"], {}, id="defaults-picture-both"))
    subset = [
        "equal",
        "text",
        "moved",
        "taller",
        "font-size",
        "split-runs",
        "level-1",
        "centred",
        "background",
        "notes",
        "extra-slide",
        "colour",
        "bullets",
    ]
    seen = set()
    for task, _, _, options in real_checks("compare_pptx_files"):
        key = json.dumps(options, sort_keys=True)
        if key in seen or not options:
            continue
        seen.add(key)
        for label in subset:
            cases.append(pytest.param(pairs[label], pairs["equal"], options, id=f"{task}-{label}"))
        for label in ("picture-resized", "picture-moved"):
            cases.append(
                pytest.param(COUNTERPARTS[label], pairs["picture"], options, id=f"{task}-{label}")
            )
    return cases


TASK_SPECIFIC = [
    # examine_title_bottom_position: the "Product Comparison" title moved below 3600000 EMU
    pytest.param(
        deck([textbox("Product Comparison", box=(1, 4.5, 8, 1))]),
        deck([textbox("Product Comparison", box=(1, 0.5, 8, 1))]),
        {"examine_shape": False, "examine_title_bottom_position": True},
        id="title-bottom-moved",
    ),
    pytest.param(
        deck([textbox("Product Comparison", box=(1, 0.5, 8, 1))]),
        deck([textbox("Product Comparison", box=(1, 0.5, 8, 1))]),
        {"examine_shape": False, "examine_title_bottom_position": True},
        id="title-bottom-unmoved",
    ),
    pytest.param(
        deck([textbox("Other", box=(1, 4.5, 8, 1))]),
        deck([textbox("Another", box=(1, 0.5, 8, 1))]),
        {"examine_shape": False, "examine_title_bottom_position": True},
        id="title-bottom-other-text",
    ),
    pytest.param(
        deck([], [], [grid([["a"]])]),
        deck([], [], [grid([["a"]])]),
        {"examine_shape": False, "examine_table_bottom_position": True},
        id="table-bottom-unmoved",
    ),
    pytest.param(
        deck([], [rect((6, 1, 1, 1))]),
        deck([], [rect((1, 1, 1, 1))]),
        {"examine_shape": False, "examine_right_position": True},
        id="right-moved-rect-has-text",
    ),
    pytest.param(
        deck([], [picture((6, 1, 1, 1))]),
        deck([], [picture((1, 1, 1, 1))]),
        {"examine_shape": False, "examine_right_position": True},
        id="right-moved-picture",
    ),
    pytest.param(
        deck([], [picture((1, 0.5, 1, 1))]),
        deck([], [picture((1, 3, 1, 1))]),
        {"examine_shape": False, "examine_top_position": True},
        id="top-moved",
    ),
    pytest.param(
        deck([], [picture((1, 3, 1, 1))]),
        deck([], [picture((1, 3, 1, 1))]),
        {"examine_shape": False, "examine_top_position": True},
        id="top-unmoved",
    ),
    pytest.param(
        deck([textbox("Elaborate on what you want to discuss.", box=(1, 1, 5, 2))]),
        deck([textbox("Elaborate on what you want to discuss.", box=(1, 1, 4, 2))]),
        {"examine_shape": False, "examine_shape_for_shift_size": True},
        id="shift-size-placeholder",
    ),
    pytest.param(
        deck([textbox("Other", box=(1, 1, 5, 2))]),
        deck([textbox("Other", box=(1, 1, 4, 2))]),
        {"examine_shape": False, "examine_shape_for_shift_size": True},
        id="shift-size-other",
    ),
    pytest.param(
        deck([rect((1, 1, 2, 3))]),
        deck([rect((1, 1, 2, 1))]),
        {"examine_shape": False, "examine_modify_height": True},
        id="modify-height-rect",
    ),
    pytest.param(
        deck([picture((1, 1, 2, 3))]),
        deck([picture((1, 1, 2, 1))]),
        {"examine_shape": False, "examine_modify_height": True},
        id="modify-height-picture",
    ),
    pytest.param(
        deck([picture((1, 1, 2, 1))]),
        deck([picture((1, 1, 2, 1))]),
        {"examine_shape": False, "examine_modify_height": True},
        id="modify-height-same",
    ),
    pytest.param(
        deck([textbox("a", box=(1, 1, 2, 3))]),
        deck([textbox("a", box=(1, 1, 2, 1))]),
        {"examine_shape": False, "examine_shape_lenient_height": True},
        id="lenient-height-ignored",
    ),
    pytest.param(
        deck([textbox("a", box=(1, 1, 3, 1))]),
        deck([textbox("a", box=(1, 1, 2, 1))]),
        {"examine_shape": False, "examine_shape_lenient_height": True, "examine_run_count": False},
        id="lenient-width",
    ),
    pytest.param(
        deck([textbox([("a", {}), ("b", {})])]),
        deck([textbox("ab")]),
        {"examine_run_count": False},
        id="run-count-ignored",
    ),
    pytest.param(
        deck([rect((1, 1, 2, 1))]),
        deck([rect((1, 1, 2.02, 1))]),
        {"approximately_tolerance": 0.01},
        id="tolerance-1pct",
    ),
    pytest.param(
        deck([rect((1, 1, 2, 1))]),
        deck([rect((1, 1, 2.02, 1))]),
        {"approximately_tolerance": 0.001},
        id="tolerance-0.1pct",
    ),
    pytest.param(deck([rect((0, 0, 2, 1))]), deck([rect((0, 0, 2, 1))]), {}, id="zero-position"),
    pytest.param(deck([rect((0, 0, 2, 1))]), deck([rect((0.01, 0, 2, 1))]), {}, id="zero-vs-small"),
    pytest.param(deck(), deck(), {}, id="no-slides"),
    pytest.param(deck([]), deck([]), {}, id="empty-slides"),
    pytest.param(
        deck([textbox("a")]),
        deck([textbox("a")], [textbox("b")]),
        {"examine_number_of_slides": False},
        id="fewer-slides-allowed",
    ),
    pytest.param(None, deck([textbox("a")]), {}, id="none"),
    pytest.param(None, deck(), {"examine_number_of_slides": False}, id="none-vs-empty"),
    pytest.param(ABSENT, deck([textbox("a")]), {}, id="absent"),
    pytest.param(b"junk", deck([textbox("a")]), {}, id="corrupt"),
    pytest.param(deck([textbox("a")]), b"junk", {}, id="corrupt-expected"),
    pytest.param(base(), base(), {"enable_debug": False}, id="debug-off"),
    pytest.param(
        base(), base(), {"examine_bullets": False, "examine_note": False}, id="switches-off"
    ),
]


@pytest.mark.parametrize(("result", "expected", "options"), [*_pptx_cases(), *TASK_SPECIFIC])
def test_compare_pptx_files(
    osworld: OSWorld,
    tmp_path: Path,
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    r = materialise(result, tmp_path, "result.pptx", {})
    e = materialise(expected, tmp_path, "expected.pptx", {})
    assert_same_score(osworld, "compare_pptx_files", r, e, **options)


# --- LibreOffice-saved decks --------------------------------------------------------------


def _master_colours(*values: str) -> Callable[[bytes], bytes]:
    """Replace the master's first tinted scheme colours (date, footer, number) by RGB values."""

    def edit(data: bytes) -> bytes:
        text = data.decode("utf-8")
        for value in values:
            text = re.sub(
                r'<a:schemeClr val="tx1"><a:tint val="75000"/></a:schemeClr>',
                f'<a:srgbClr val="{value}"/>',
                text,
                count=1,
            )
        return text.encode("utf-8")

    return edit


LO_BASES: dict[str, Build] = {
    "base": base(),
    "base_copy": base(),
    "text": dict(PAIRS)["text"],
    "background": dict(PAIRS)["background"],
    "notes": dict(PAIRS)["notes"],
    "table": dict(PAIRS)["table"],
    "dissolve": deck([transition("dissolve"), textbox("a")], [transition("fade"), textbox("b")]),
    "picture": deck([picture((1, 1, 4, 3))]),
    "portrait": deck(
        [textbox("a")],
        edit=lambda p: (
            setattr(p, "slide_width", Inches(7.5)),
            setattr(p, "slide_height", Inches(10)),
        ),
    ),
}


@pytest.fixture(scope="module")
@needs("apps")
def lo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("lo-slides")
    sources = []
    for name, build in LO_BASES.items():
        path = folder / "src" / f"{name}.pptx"
        path.parent.mkdir(exist_ok=True)
        build(path)
        sources.append(path)
    return convert(sources, "pptx:Impress MS PowerPoint 2007 XML", folder / "lo")


LO_PPTX = [
    pytest.param(Lo("base"), Lo("base_copy"), {}, id="lo-equal"),
    pytest.param(Lo("base"), base(), {}, id="lo-vs-python-pptx"),
    pytest.param(Lo("base"), base(), {"examine_shape": False}, id="lo-vs-python-pptx-no-shape"),
    pytest.param(Lo("text"), Lo("base"), {}, id="lo-text"),
    pytest.param(Lo("background"), Lo("base"), {}, id="lo-background"),
    pytest.param(Lo("background"), Lo("background"), {}, id="lo-background-both"),
    pytest.param(Lo("notes"), Lo("base"), {}, id="lo-notes"),
    pytest.param(Lo("notes"), Lo("notes"), {}, id="lo-notes-both"),
    pytest.param(Lo("table"), Lo("table"), {}, id="lo-table"),
    pytest.param(Lo("table"), Lo("base"), {}, id="lo-table-vs-none"),
    pytest.param(
        Lo("base"), Lo("base"), {"examine_shape": False, "examine_bullets": False}, id="lo-eb303e01"
    ),
    pytest.param(
        Lo("picture"),
        Lo("picture"),
        {"examine_shape": False, "examine_image_size": True, "approximately_tolerance": 0.01},
        id="lo-picture",
    ),
]


@pytest.mark.parametrize(("result", "expected", "options"), LO_PPTX)
def test_compare_pptx_files_lo(
    osworld: OSWorld,
    tmp_path: Path,
    lo: dict[str, Path],
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    r = materialise(result, tmp_path, "result.pptx", lo)
    e = materialise(expected, tmp_path, "expected.pptx", lo)
    assert_same_score(osworld, "compare_pptx_files", r, e, **options)


# --- single-deck checks -------------------------------------------------------------------


def _size(width: float, height: float) -> Build:
    return deck(
        [textbox("a")],
        edit=lambda p: (
            setattr(p, "slide_width", Inches(width)),
            setattr(p, "slide_height", Inches(height)),
        ),
    )


ORIENTATION = [
    pytest.param(_size(7.5, 10), id="portrait"),
    pytest.param(_size(10, 7.5), id="landscape"),
    pytest.param(_size(8, 8), id="square"),
    pytest.param(deck([textbox("a")]), id="default"),
    pytest.param(Lo("portrait"), id="lo-portrait"),
    pytest.param(Lo("base"), id="lo-landscape"),
    pytest.param(b"junk", id="corrupt"),
    pytest.param(None, id="none"),
]


@pytest.mark.parametrize("result", ORIENTATION)
def test_check_slide_orientation_portrait(
    osworld: OSWorld, tmp_path: Path, request: pytest.FixtureRequest, result: Spec
) -> None:
    lo = request.getfixturevalue("lo") if isinstance(result, Lo) else {}
    path = materialise(result, tmp_path, "deck.pptx", lo)
    assert_same_score(osworld, "check_slide_orientation_Portrait", path)


def _real_rules(metric: str) -> list[tuple[str, Any]]:
    seen: dict[str, tuple[str, Any]] = {}
    for task, _, expected, _ in real_checks(metric):
        if isinstance(expected, dict) and expected.get("type") == "rule":
            seen.setdefault(
                json.dumps(expected["rules"], sort_keys=True), (task, expected["rules"])
            )
    return list(seen.values())


def _transition_cases() -> list[Any]:
    decks = {
        "dissolve": deck([transition("dissolve"), textbox("a")]),
        "fade": deck([transition("fade"), textbox("a")]),
        "none": deck([textbox("a")]),
        "second-slide": deck([textbox("a")], [transition("dissolve"), textbox("b")]),
        "no-slides": deck(),
        "lo": Lo("dissolve"),
        "lo-none": Lo("base"),
    }
    rule_sets = [r for _, r in _real_rules("check_transition")]
    rule_sets += [
        {"slide_idx": 1, "transition_type": "fade"},
        {"slide_idx": 1, "transition_type": "dissolve"},
        {"slide_idx": 5, "transition_type": "dissolve"},
    ]
    cases = []
    for rules in rule_sets:
        key = f"{rules['slide_idx']}-{rules['transition_type']}"
        cases += [pytest.param(spec, rules, id=f"{key}-{label}") for label, spec in decks.items()]
    cases.append(pytest.param(None, rule_sets[0], id="none"))
    cases.append(pytest.param(b"junk", rule_sets[0], id="corrupt"))
    return cases


@pytest.mark.parametrize(("result", "rules"), _transition_cases())
def test_check_transition(
    osworld: OSWorld,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    result: Spec,
    rules: dict[str, Any],
) -> None:
    lo = request.getfixturevalue("lo") if isinstance(result, Lo) else {}
    assert_same_score(
        osworld, "check_transition", materialise(result, tmp_path, "deck.pptx", lo), rules
    )


def _xcu(*items: str) -> bytes:
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    )
    return (head + "\n".join(items) + "\n</oor:items>\n").encode("utf-8")


def _autosave(
    value: str | None,
    path: str = "/org.openoffice.Office.Common/Save/Document",
    name: str = "AutoSaveTimeIntervall",
) -> str:
    inner = "" if value is None else f"<value>{value}</value>"
    return f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse">{inner}</prop></item>'


def _autosave_cases() -> list[Any]:
    files = {
        "3": _xcu(_autosave("3")),
        "5": _xcu(_autosave("5")),
        "missing": _xcu(_autosave("3", name="AutoSave")),
        "other-item": _xcu(_autosave("3", path="/org.openoffice.Office.Common/Save")),
        "two-items-last-wins": _xcu(_autosave("3"), _autosave("7")),
        "two-items-first-right": _xcu(_autosave("7"), _autosave("3")),
        "no-value": _xcu(_autosave(None)),
        "not-a-number": _xcu(_autosave("three")),
        "spaces": _xcu(_autosave(" 3 ")),
        "empty-items": _xcu(),
        "not-xml": b"<oor:items",
        "other-props": _xcu(
            '<item oor:path="/org.openoffice.Office.Common/Save/Document">'
            '<prop oor:name="AutoSave"><value>true</value></prop>'
            '<prop oor:name="AutoSaveTimeIntervall"><value>3</value></prop></item>'
        ),
    }
    rule_sets = [r for _, r in _real_rules("check_auto_saving_time")] + [
        {"minutes": 10},
        {"minutes": "3"},
    ]
    cases = []
    for rules in rule_sets:
        cases += [
            pytest.param(data, rules, id=f"{rules['minutes']!r}-{label}")
            for label, data in files.items()
        ]
    cases.append(pytest.param(None, rule_sets[0], id="none"))
    cases.append(pytest.param(ABSENT, rule_sets[0], id="absent"))
    return cases


@pytest.mark.parametrize(("content", "rules"), _autosave_cases())
def test_check_auto_saving_time(
    osworld: OSWorld, tmp_path: Path, content: Any, rules: dict[str, Any]
) -> None:
    path = materialise(content, tmp_path, "registrymodifications.xcu", {})
    assert_same_score(osworld, "check_auto_saving_time", path, rules)


def _fill_cases() -> list[Any]:
    decks = {
        "blue": deck(*[[background(RGBColor(0, 0, 0xFF)), textbox("a")]] * 2),
        "near-blue": deck(*[[background(RGBColor(10, 20, 0xF0)), textbox("a")]] * 2),
        "white": deck(*[[background(RGBColor(0xFF, 0xFF, 0xFF)), textbox("a")]] * 2),
        "one-of-two": deck(
            [background(RGBColor(0, 0, 0xFF))], [background(RGBColor(0xFF, 0xFF, 0xFF))]
        ),
        "unset": deck([textbox("a")], [textbox("b")]),
        "theme": deck([background(theme=MSO_THEME_COLOR.ACCENT_1)]),
        "red": deck([background(RGBColor(0xFF, 0, 0))]),
        "no-slides": deck(),
        "master-blue": deck(
            [textbox("a")], edit=lambda p: _master_background(p, RGBColor(0, 0, 0xFF))
        ),
        "lo-blue": Lo("background"),
        "lo-default": Lo("base"),
    }
    rule_sets = [r for _, r in _real_rules("evaluate_presentation_fill_to_rgb_distance")]
    rule_sets += [{"rgb": [0, 0, 255]}, {"rgb": [255, 0, 0], "original_rgb": None}]
    cases = []
    for i, rules in enumerate(rule_sets):
        cases += [
            pytest.param(spec, rules, id=f"rules{i}-{label}") for label, spec in decks.items()
        ]
    cases.append(pytest.param(None, rule_sets[0], id="none"))
    cases.append(pytest.param(b"junk", rule_sets[0], id="corrupt"))
    return cases


def _master_background(presentation: Any, rgb: RGBColor) -> None:
    fill = presentation.slide_masters[0].background.fill
    fill.solid()
    fill.fore_color.rgb = rgb


@pytest.mark.parametrize(("result", "rules"), _fill_cases())
def test_evaluate_presentation_fill_to_rgb_distance(
    osworld: OSWorld,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    result: Spec,
    rules: dict[str, Any],
) -> None:
    lo = request.getfixturevalue("lo") if isinstance(result, Lo) else {}
    path = materialise(result, tmp_path, "deck.pptx", lo)
    assert_same_score(osworld, "evaluate_presentation_fill_to_rgb_distance", path, rules)


SLIDE_W, SLIDE_H = 10, 7.5
STRETCH = [
    pytest.param(deck([picture((0, 0, SLIDE_W, SLIDE_H))]), id="stretched"),
    pytest.param(deck([picture((0.2, 0.2, SLIDE_W - 0.4, SLIDE_H - 0.4))]), id="within-half-inch"),
    pytest.param(deck([picture((1, 1, SLIDE_W - 2, SLIDE_H - 2))]), id="too-small"),
    pytest.param(deck([picture((0.6, 0, SLIDE_W, SLIDE_H))]), id="off-centre"),
    pytest.param(deck([picture((1, 1, 4, 3))]), id="unchanged"),
    pytest.param(deck([picture((0, 0, SLIDE_W, SLIDE_H), BLUE_PNG)]), id="other-image"),
    pytest.param(deck([picture((1, 1, 4, 3)), picture((0, 0, SLIDE_W, SLIDE_H))]), id="two-copies"),
    pytest.param(
        deck([picture((0, 0, SLIDE_W, SLIDE_H)), picture((1, 1, 4, 3))]), id="two-copies-last-small"
    ),
    pytest.param(deck([textbox("a")]), id="no-picture"),
    pytest.param(deck(), id="no-slides"),
    pytest.param(Lo("picture"), id="lo-unchanged"),
    pytest.param(b"junk", id="corrupt"),
]


@pytest.mark.parametrize("result", STRETCH)
def test_check_image_stretch_and_center(
    osworld: OSWorld, tmp_path: Path, request: pytest.FixtureRequest, result: Spec
) -> None:
    lo = request.getfixturevalue("lo") if isinstance(result, Lo) else {}
    r = materialise(result, tmp_path, "result.pptx", lo)
    e = materialise(deck([picture((1, 1, 4, 3))]), tmp_path, "original.pptx", {})
    assert_same_score(osworld, "check_image_stretch_and_center", r, e)


def test_check_image_stretch_and_center_no_original_picture(
    osworld: OSWorld, tmp_path: Path
) -> None:
    r = materialise(deck([picture((0, 0, SLIDE_W, SLIDE_H))]), tmp_path, "result.pptx", {})
    e = materialise(deck([textbox("a")]), tmp_path, "original.pptx", {})
    assert_same_score(osworld, "check_image_stretch_and_center", r, e)


def _page_number_cases() -> list[Any]:
    master = "ppt/slideMasters/slideMaster1.xml"
    variants = {
        "red-number": ("000000", "000000", "FF0000"),
        "red-footer": ("000000", "FF0000", "000000"),
        "dark-red": ("000000", "C00000", "000000"),
        "blue": ("000000", "0000FF", "000000"),
        "green": ("000000", "00FF00", "000000"),
        "black": ("000000", "000000", "000000"),
        "one-colour": ("FF0000",),
        "none": (),
    }
    cases = []
    rule_sets = [r for _, r in _real_rules("check_page_number_colors")]
    rule_sets += [{"color": c} for c in ("blue", "green", "black", "purple")]
    for rules in rule_sets:
        for label, values in variants.items():
            spec = Lo("base", {master: _master_colours(*values)})
            cases.append(pytest.param(spec, rules, id=f"{rules['color']}-{label}"))
            cases.append(
                pytest.param(
                    _patched(deck([textbox("a")]), {master: _master_colours(*values)}),
                    rules,
                    id=f"{rules['color']}-{label}-python-pptx",
                )
            )
    cases.append(pytest.param(None, rule_sets[0], id="none"))
    cases.append(pytest.param(b"junk", rule_sets[0], id="corrupt"))
    return cases


def _patched(build: Build, edits: dict[str, Callable[[bytes], bytes] | None]) -> Build:
    def make(path: Path) -> None:
        source = path.with_name("unpatched-" + path.name)
        build(source)
        patch_zip(source, path, edits)

    return make


@pytest.mark.parametrize(("result", "rules"), _page_number_cases())
def test_check_page_number_colors(
    osworld: OSWorld,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    result: Spec,
    rules: dict[str, Any],
) -> None:
    lo = request.getfixturevalue("lo") if isinstance(result, Lo) else {}
    path = materialise(result, tmp_path, "deck.pptx", lo)
    assert_same_score(osworld, "check_page_number_colors", path, rules)
