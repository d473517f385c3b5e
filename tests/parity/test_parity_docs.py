"""Parity of the document metrics (OSWorld's ``docs`` module and ``general.fuzzy_place_math``).

Documents are written at test time with python-docx (a builder per case), or saved by
LibreOffice itself: the module-scoped ``lo`` fixture writes a handful of base documents and
converts them in one ``soffice`` call each to ``.docx`` and to ``.odt``; cases name them
(``Lo("name.docx")``). Options and rules are the task files' (``real_checks``) and variants.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docx
import pytest
from docx.enum.section import WD_ORIENT
from docx.enum.text import WD_ALIGN_PARAGRAPH, WD_BREAK, WD_COLOR_INDEX, WD_TAB_ALIGNMENT
from docx.shared import Inches, Pt, RGBColor
from fixture_marks import needs
from office_convert import convert
from parity_harness import ABSENT, OSWorld, assert_same_score, real_checks

pytestmark = pytest.mark.parity

Build = Callable[[Path], None]
Edit = Callable[[Any], None]


# --- builders -----------------------------------------------------------------------------


def doc(*paragraphs: str, edit: Edit | None = None) -> Build:
    """A builder writing a ``.docx`` with one paragraph per text (then ``edit(document)``)."""

    def build(path: Path) -> None:
        document = docx.Document()
        for text in paragraphs:
            document.add_paragraph(text)
        if edit is not None:
            edit(document)
        document.save(path)

    return build


def runs(*parts: tuple[str, dict[str, Any]], style: dict[str, Any] | None = None) -> Edit:
    """An edit adding one paragraph of runs: ``(text, {font attribute: value})``."""

    def add(document: Any) -> None:
        paragraph = document.add_paragraph()
        for text, font in parts:
            run = paragraph.add_run(text)
            for name, value in font.items():
                target = run if name in ("italic", "bold") else run.font
                setattr(target, name, value)
        for name, value in (style or {}).items():
            setattr(paragraph.paragraph_format, name, value)

    return add


def edits(*steps: Edit) -> Edit:
    def run(document: Any) -> None:
        for step in steps:
            step(document)

    return run


def para_format(index: int, **values: Any) -> Edit:
    def change(document: Any) -> None:
        for name, value in values.items():
            setattr(document.paragraphs[index].paragraph_format, name, value)

    return change


def all_runs(**values: Any) -> Edit:
    def change(document: Any) -> None:
        for paragraph in document.paragraphs:
            for run in paragraph.runs:
                for name, value in values.items():
                    setattr(run.font, name, value)

    return change


def table(rows: list[list[str]], colour: Callable[[str], RGBColor | None] | None = None) -> Edit:
    def add(document: Any) -> None:
        t = document.add_table(rows=len(rows), cols=len(rows[0]))
        for i, row in enumerate(rows):
            for j, text in enumerate(row):
                cell = t.cell(i, j)
                cell.text = ""
                run = cell.paragraphs[0].add_run(text)
                if colour is not None and colour(text) is not None:
                    run.font.color.rgb = colour(text)

    return add


@dataclass(frozen=True)
class Lo:
    """A document saved by LibreOffice: a base of ``LO_BASES`` and the target extension."""

    name: str

    def __repr__(self) -> str:
        return f"Lo({self.name})"


Spec = Build | Lo | bytes | None | Any


def materialise(spec: Spec, folder: Path, name: str, lo: dict[str, Path]) -> Path | None:
    if spec is None:
        return None
    if isinstance(spec, Lo):
        name = Path(name).stem + Path(spec.name).suffix
    path = folder.resolve() / name
    if spec is ABSENT:
        return path
    if isinstance(spec, Lo):
        shutil.copyfile(lo[spec.name], path)
    elif isinstance(spec, bytes):
        path.write_bytes(spec)
    else:
        spec(path)
    return path


@pytest.fixture
def lo_docs(request: pytest.FixtureRequest) -> dict[str, Path]:
    """The LibreOffice documents, requested only by cases that use one."""
    specs = list(request.node.callspec.params.values())
    flat = [s for v in specs for s in (v if isinstance(v, list) else [v])]
    if not any(isinstance(s, Lo) for s in flat):
        return {}
    return request.getfixturevalue("lo")


TEXT = ["Intro line", "Second paragraph here.", "", "Last one"]


def _yellow(document: Any) -> None:
    paragraph = document.add_paragraph("Call the ")
    run = paragraph.add_run("candidate")
    run.font.highlight_color = WD_COLOR_INDEX.YELLOW
    paragraph.add_run(" today")


def _page_numbers(document: Any) -> None:
    document.sections[0].footer.paragraphs[0].text = "Page 1"


def _page_breaks(n: int) -> Edit:
    def add(document: Any) -> None:
        for i in range(n):
            document.add_paragraph(f"Page {i}").runs[0].add_break(WD_BREAK.PAGE)

    return add


LO_BASES: dict[str, Build] = {
    "text": doc(*TEXT),
    "text_copy": doc(*TEXT),
    "changed": doc("Intro line", "Second paragraph, edited.", "", "Last one"),
    "highlighted": doc("Hello", edit=_yellow),
    "plain_call": doc("Hello", "Call the candidate today"),
    "centered": doc("Title", "Body", edit=para_format(0, alignment=WD_ALIGN_PARAGRAPH.CENTER)),
    "spaced": doc(
        "One", "Two", edit=edits(para_format(0, line_spacing=2.0), para_format(1, line_spacing=1.5))
    ),
    "fonts": doc("Alpha", "Beta", edit=all_runs(name="Times New Roman")),
    "footer": doc("Body", edit=_page_numbers),
    "breaks": doc("Start", edit=_page_breaks(2)),
    "table": doc("Before", edit=table([["a", "b"], ["c", "d"]])),
    "tabs": doc(
        "Name\tValue",
        edit=lambda d: d.paragraphs[0].paragraph_format.tab_stops.add_tab_stop(Inches(2)),
    ),
    "italic": doc(edit=runs(("plain ", {}), ("slanted", {"italic": True, "size": Pt(14)}))),
    "strike": doc("Keep", edit=runs(("gone", {"strike": True}))),
    "subscript": doc(edit=runs(("H", {}), ("2", {"subscript": True}), ("O", {}))),
}


@pytest.fixture(scope="module")
@needs("apps")
def lo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``LO_BASES`` written by python-docx, saved by LibreOffice as .docx and as .odt."""
    folder = tmp_path_factory.mktemp("lo-docs")
    sources = []
    for name, build in LO_BASES.items():
        path = folder / "src" / f"{name}.docx"
        path.parent.mkdir(exist_ok=True)
        build(path)
        sources.append(path)
    found: dict[str, Path] = {}
    for target, ext in (("docx:MS Word 2007 XML", "docx"), ("odt", "odt")):
        for stem, path in convert(sources, target, folder / ext).items():
            found[f"{stem}.{ext}"] = path
    return found


def _check(
    osworld: OSWorld,
    tmp_path: Path,
    lo: dict[str, Path],
    metric: str,
    result: Spec,
    expected: Spec | list[Spec],
    *extra: Any,
    **options: Any,
) -> None:
    r = materialise(result, tmp_path, "result.docx", lo)
    if isinstance(expected, list):
        e: Any = [materialise(x, tmp_path, f"expected{i}.docx", lo) for i, x in enumerate(expected)]
    elif expected is _NO_EXPECTED:
        assert_same_score(osworld, metric, r, *extra, **options)
        return
    else:
        e = materialise(expected, tmp_path, "expected.docx", lo)
    assert_same_score(osworld, metric, r, e, *extra, **options)


_NO_EXPECTED = object()


def _real_options(metric: str) -> list[tuple[str, dict[str, Any]]]:
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for task, _, _, options in real_checks(metric):
        seen.setdefault(repr(sorted(options.items())), (task, options))
    return list(seen.values())


def _real_rules(metric: str) -> list[tuple[str, Any]]:
    seen: dict[str, tuple[str, Any]] = {}
    for task, _, expected, _ in real_checks(metric):
        if isinstance(expected, dict) and expected.get("type") == "rule":
            seen.setdefault(repr(expected["rules"]), (task, expected["rules"]))
    return list(seen.values())


# --- compare_docx_files -------------------------------------------------------------------

TEXT_PAIRS: list[tuple[str, Spec, Spec]] = [
    ("equal", doc(*TEXT), doc(*TEXT)),
    ("case", doc(*[t.upper() for t in TEXT]), doc(*TEXT)),
    ("spaces", doc("Intro   line", "Second paragraph here. ", "", "Last one"), doc(*TEXT)),
    ("blank-paragraphs", doc("Intro line", "Second paragraph here.", "Last one"), doc(*TEXT)),
    ("order", doc(*TEXT[::-1]), doc(*TEXT)),
    ("word-changed", doc("Intro line", "Second paragraph there.", "", "Last one"), doc(*TEXT)),
    ("much-shorter", doc("Intro"), doc(*TEXT)),
    ("both-empty", doc(), doc()),
    ("split-paragraph", doc("Intro line", "Second", "paragraph here.", "", "Last one"), doc(*TEXT)),
    ("tabs-newlines", doc("Intro\tline", "Second paragraph\nhere.", "", "Last one"), doc(*TEXT)),
]


def _compare_docx_cases() -> list[Any]:
    cases = []
    option_sets = [
        *_real_options("compare_docx_files"),
        ("fuzzy-lines", {"ignore_blanks": False, "fuzzy_match": True}),
    ]
    option_sets.append(
        ("fuzzy-lines-case", {"ignore_blanks": False, "fuzzy_match": True, "ignore_case": True})
    )
    option_sets.append(("threshold-ignored", {"fuzzy_match": True, "fuzzy_match_threshold": 0.5}))
    for task, options in option_sets:
        for label, r, e in TEXT_PAIRS:
            cases.append(pytest.param(r, e, options, id=f"{task}-{label}"))
    return cases


COMPARE_DOCX = [
    *_compare_docx_cases(),
    pytest.param(Lo("text.docx"), doc(*TEXT), {}, id="lo-vs-python-docx"),
    pytest.param(Lo("text.docx"), Lo("text_copy.docx"), {"ignore_blanks": False}, id="lo-both"),
    pytest.param(Lo("changed.docx"), Lo("text.docx"), {}, id="lo-changed"),
    pytest.param(Lo("changed.docx"), Lo("text.docx"), {"content_only": True}, id="lo-content"),
    pytest.param(Lo("text.odt"), Lo("text_copy.odt"), {}, id="odt-equal"),
    pytest.param(Lo("changed.odt"), Lo("text.odt"), {}, id="odt-changed"),
    pytest.param(Lo("changed.odt"), Lo("text.odt"), {"fuzzy_match": True}, id="odt-fuzzy"),
    pytest.param(Lo("highlighted.odt"), Lo("plain_call.odt"), {}, id="odt-spans"),
    pytest.param(
        Lo("text.odt"),
        Lo("text.odt"),
        {"ignore_blanks": False, "ignore_order": True},
        id="odt-order",
    ),
    pytest.param(Lo("text.odt"), doc(*TEXT), {}, id="odt-vs-docx"),
    pytest.param(b"not a document", doc(*TEXT), {}, id="corrupt-result"),
    pytest.param(doc(*TEXT), b"not a document", {}, id="corrupt-expected"),
    pytest.param(None, doc(*TEXT), {}, id="none"),
    pytest.param(doc(*TEXT), None, {}, id="expected-none"),
    pytest.param(ABSENT, doc(*TEXT), {}, id="absent"),
]


@pytest.mark.parametrize(("result", "expected", "options"), COMPARE_DOCX)
def test_compare_docx_files(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_docx_files", result, expected, **options)


def _text_metric_cases(metric: str, options_list: list[dict[str, Any]]) -> list[Any]:
    cases = []
    for options in options_list:
        key = "-".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        for label, r, e in TEXT_PAIRS:
            cases.append(pytest.param(metric, r, e, options, id=f"{metric}-{key}-{label}"))
        cases += [
            pytest.param(
                metric, Lo("text.docx"), Lo("text_copy.docx"), options, id=f"{metric}-{key}-lo"
            ),
            pytest.param(
                metric, Lo("changed.docx"), doc(*TEXT), options, id=f"{metric}-{key}-lo-changed"
            ),
        ]
    cases += [
        pytest.param(metric, None, doc(*TEXT), {}, id=f"{metric}-none"),
        pytest.param(metric, b"junk", doc(*TEXT), {}, id=f"{metric}-corrupt"),
        pytest.param(metric, Lo("text.odt"), Lo("text.odt"), {}, id=f"{metric}-odt"),
    ]
    return cases


TEXT_METRICS = [
    *_text_metric_cases(
        "compare_docx_files_and_ignore_new_lines",
        [{}, *[o for _, o in _real_options("compare_docx_files_and_ignore_new_lines")]],
    ),
    *_text_metric_cases("compare_docx_lines", [{}]),
]


@pytest.mark.parametrize(("metric", "result", "expected", "options"), TEXT_METRICS)
def test_text_variants(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    metric: str,
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    _check(osworld, tmp_path, lo_docs, metric, result, expected, **options)


# --- tables, spacing, fonts, subscripts ---------------------------------------------------

GRID = [["Name", "Qty"], ["apple", "3"], ["pear", "5"]]

COMPARE_TABLES = [
    pytest.param(doc("x", edit=table(GRID)), doc("x", edit=table(GRID)), id="equal"),
    pytest.param(
        doc("x", edit=table([["Name", "Qty"], ["apple", "4"], ["pear", "5"]])),
        doc("x", edit=table(GRID)),
        id="cell",
    ),
    pytest.param(
        doc("x", edit=table([["Name ", "Qty"], [" apple", "3"], ["pear", "5"]])),
        doc("x", edit=table(GRID)),
        id="spaces",
    ),
    pytest.param(doc("x", edit=table(GRID[:2])), doc("x", edit=table(GRID)), id="fewer-rows"),
    pytest.param(
        doc("x", edit=table([r + ["x"] for r in GRID])), doc("x", edit=table(GRID)), id="more-cols"
    ),
    pytest.param(doc("x"), doc("x", edit=table(GRID)), id="no-table"),
    pytest.param(doc("x"), doc("y"), id="no-tables-at-all"),
    pytest.param(
        doc("x", edit=edits(table(GRID), table(GRID))), doc("x", edit=table(GRID)), id="two-vs-one"
    ),
    pytest.param(
        doc("other text", edit=table(GRID)), doc("x", edit=table(GRID)), id="text-ignored"
    ),
    pytest.param(Lo("table.docx"), doc("Before", edit=table([["a", "b"], ["c", "d"]])), id="lo"),
    pytest.param(Lo("table.docx"), Lo("table.docx"), id="lo-both"),
    pytest.param(Lo("table.docx"), Lo("text.docx"), id="lo-vs-none"),
    pytest.param(None, doc("x"), id="none"),
    pytest.param(b"junk", doc("x"), id="corrupt"),
]


@pytest.mark.parametrize(("result", "expected"), COMPARE_TABLES)
def test_compare_docx_tables(
    osworld: OSWorld, tmp_path: Path, lo_docs: dict[str, Path], result: Spec, expected: Spec
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_docx_tables", result, expected)


def _spacing(*values: float | None) -> Build:
    texts = [f"Paragraph {i}" for i in range(len(values))]
    return doc(
        *texts,
        edit=edits(
            *[para_format(i, line_spacing=v) for i, v in enumerate(values) if v is not None]
        ),
    )


LINE_SPACING = [
    pytest.param(_spacing(1.0, 2.0), _spacing(1.0, 2.0), id="equal"),
    pytest.param(_spacing(1.0, 1.5), _spacing(1.0, 2.0), id="differs"),
    pytest.param(_spacing(None, None), _spacing(None, None), id="unset"),
    pytest.param(_spacing(1.0, None), _spacing(None, None), id="set-vs-unset"),
    pytest.param(_spacing(1.0, 2.0, 1.5), _spacing(1.0, 2.0), id="more-paragraphs"),
    pytest.param(
        doc("Paragraph 0", "Paragraph X", edit=para_format(0, line_spacing=1.0)),
        _spacing(1.0, None),
        id="text-differs",
    ),
    pytest.param(
        doc("Paragraph 0", "Paragraph 1", edit=para_format(0, line_spacing=Pt(18))),
        doc("Paragraph 0", "Paragraph 1", edit=para_format(0, line_spacing=Pt(18))),
        id="exact-points",
    ),
    pytest.param(
        doc("Paragraph 0", "Paragraph 1", edit=para_format(0, line_spacing=Pt(18))),
        _spacing(1.5, None),
        id="points-vs-multiple",
    ),
    pytest.param(
        Lo("spaced.docx"),
        doc(
            "One",
            "Two",
            edit=edits(para_format(0, line_spacing=2.0), para_format(1, line_spacing=1.5)),
        ),
        id="lo",
    ),
    pytest.param(Lo("spaced.docx"), Lo("spaced.docx"), id="lo-both"),
    pytest.param(Lo("spaced.docx"), doc("One", "Two"), id="lo-vs-unset"),
    pytest.param(None, _spacing(1.0), id="none"),
    pytest.param(b"junk", _spacing(1.0), id="corrupt"),
]


@pytest.mark.parametrize(("result", "expected"), LINE_SPACING)
def test_compare_line_spacing(
    osworld: OSWorld, tmp_path: Path, lo_docs: dict[str, Path], result: Spec, expected: Spec
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_line_spacing", result, expected)


def _font_cases() -> list[Any]:
    cases = []
    rule_sets = [r for _, r in _real_rules("compare_font_names")] or [
        {"font_name": "Times New Roman"}
    ]
    for rules in rule_sets:
        name = rules["font_name"]
        cases += [
            pytest.param(doc("A", "B", edit=all_runs(name=name)), rules, id="all-runs"),
            pytest.param(doc("A", "B"), rules, id="unset"),
            pytest.param(doc("A", "B", edit=all_runs(name="Arial")), rules, id="other-font"),
            pytest.param(
                doc("A", "B", edit=edits(all_runs(name=name), runs(("x", {"name": "Arial"})))),
                rules,
                id="one-run-differs",
            ),
            pytest.param(doc("A", "", edit=all_runs(name=name)), rules, id="empty-paragraph"),
            pytest.param(doc(), rules, id="no-runs"),
            pytest.param(doc("A", edit=all_runs(name=name.lower())), rules, id="lower-case-name"),
            pytest.param(
                doc("A", edit=edits(all_runs(name=name), table([["cell"]]))),
                rules,
                id="table-ignored",
            ),
            pytest.param(Lo("fonts.docx"), rules, id="lo"),
            pytest.param(Lo("text.docx"), rules, id="lo-default-font"),
            pytest.param(None, rules, id="none"),
            pytest.param(b"junk", rules, id="corrupt"),
        ]
    cases.append(
        pytest.param(doc("A", edit=all_runs(name="Arial")), {"font_name": "Arial"}, id="arial")
    )
    cases.append(pytest.param(doc("A"), {}, id="no-font-rule"))
    return cases


@pytest.mark.parametrize(("result", "rules"), _font_cases())
def test_compare_font_names(
    osworld: OSWorld, tmp_path: Path, lo_docs: dict[str, Path], result: Spec, rules: dict[str, Any]
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_font_names", result, _NO_EXPECTED, rules)


def _sub(*flags: bool | None) -> Build:
    return doc(edit=runs(*[(f"r{i}", {"subscript": f}) for i, f in enumerate(flags)]))


SUBSCRIPTS = [
    pytest.param(_sub(False, True), _sub(False, True), id="same-run"),
    pytest.param(_sub(True, False), _sub(False, True), id="other-run"),
    pytest.param(_sub(False, False), _sub(False, True), id="none-in-result"),
    pytest.param(_sub(None, True, None), _sub(None, True), id="extra-run"),
    pytest.param(_sub(None), _sub(None), id="no-subscripts"),
    pytest.param(
        doc("text", edit=runs(("2", {"subscript": True}))),
        doc(edit=runs(("2", {"subscript": True}))),
        id="other-paragraph",
    ),
    pytest.param(doc(edit=runs(("2", {"superscript": True}))), _sub(True), id="superscript"),
    pytest.param(Lo("subscript.docx"), _sub(False, True, False), id="lo"),
    pytest.param(Lo("subscript.docx"), Lo("subscript.docx"), id="lo-both"),
    pytest.param(Lo("text.docx"), Lo("subscript.docx"), id="lo-none"),
    pytest.param(None, _sub(True), id="none"),
    pytest.param(b"junk", _sub(True), id="corrupt"),
]


@pytest.mark.parametrize(("result", "expected"), SUBSCRIPTS)
def test_compare_subscript_contains(
    osworld: OSWorld, tmp_path: Path, lo_docs: dict[str, Path], result: Spec, expected: Spec
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_subscript_contains", result, expected)


# --- single-document checks ---------------------------------------------------------------

SINGLE = [
    *[
        pytest.param("is_first_line_centered", spec, id=f"centered-{label}")
        for label, spec in (
            ("center", doc("T", "b", edit=para_format(0, alignment=WD_ALIGN_PARAGRAPH.CENTER))),
            ("left", doc("T", "b", edit=para_format(0, alignment=WD_ALIGN_PARAGRAPH.LEFT))),
            ("unset", doc("T", "b")),
            ("justify", doc("T", edit=para_format(0, alignment=WD_ALIGN_PARAGRAPH.JUSTIFY))),
            (
                "second-centered",
                doc("T", "b", edit=para_format(1, alignment=WD_ALIGN_PARAGRAPH.CENTER)),
            ),
            ("empty-first", doc("", "b", edit=para_format(0, alignment=WD_ALIGN_PARAGRAPH.CENTER))),
            ("no-paragraphs", doc()),
            ("lo-center", Lo("centered.docx")),
            ("lo-left", Lo("text.docx")),
            ("none", None),
            ("corrupt", b"junk"),
        )
    ],
    *[
        pytest.param("has_page_numbers_in_footers", spec, id=f"footer-{label}")
        for label, spec in (
            ("digit", doc("b", edit=_page_numbers)),
            ("no-footer", doc("b")),
            (
                "words",
                doc(
                    "b",
                    edit=lambda d: setattr(d.sections[0].footer.paragraphs[0], "text", "Page one"),
                ),
            ),
            ("two-sections", doc("b", edit=edits(_page_numbers, lambda d: d.add_section()))),
            (
                "digit-in-second-paragraph",
                doc("b", edit=lambda d: d.sections[0].footer.add_paragraph("7")),
            ),
            ("lo", Lo("footer.docx")),
            ("lo-none", Lo("text.docx")),
            ("none", None),
            ("corrupt", b"junk"),
        )
    ],
    *[
        pytest.param("contains_page_break", spec, rules, id=f"breaks-{label}")
        for label, spec, rules in (
            ("one", doc("a", edit=_page_breaks(1)), {}),
            ("none", doc("a"), {}),
            ("line-break", doc("a", edit=lambda d: d.paragraphs[0].runs[0].add_break()), {}),
            ("count-ok", doc("a", edit=_page_breaks(5)), {"page_break_count": 5}),
            ("count-off", doc("a", edit=_page_breaks(4)), {"page_break_count": 5}),
            ("count-zero", doc("a"), {"page_break_count": 0}),
            ("rules-none", doc("a", edit=_page_breaks(1)), None),
            (
                "column-break",
                doc("a", edit=lambda d: d.paragraphs[0].runs[0].add_break(WD_BREAK.COLUMN)),
                {},
            ),
            ("lo", Lo("breaks.docx"), {"page_break_count": 2}),
            ("lo-any", Lo("breaks.docx"), {}),
            ("lo-none", Lo("text.docx"), {}),
            ("path-none", None, {}),
            ("corrupt", b"junk", {}),
            *[
                (f"{task}-{n}", doc("a", edit=_page_breaks(n)), rules)
                for task, rules in _real_rules("contains_page_break")
                for n in (0, 4, 5, 6)
            ],
        )
    ],
]


@pytest.mark.parametrize(
    ("metric", "result", "rules"),
    [
        pytest.param(*p.values[:2], _NO_EXPECTED, id=p.id) if len(p.values) == 2 else p
        for p in SINGLE
    ],
)
def test_single_document(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    metric: str,
    result: Spec,
    rules: Any,
) -> None:
    if rules is _NO_EXPECTED:
        _check(osworld, tmp_path, lo_docs, metric, result, _NO_EXPECTED)
    else:
        _check(osworld, tmp_path, lo_docs, metric, result, _NO_EXPECTED, rules)


# --- text equality plus a format ----------------------------------------------------------

ITALIC = [
    pytest.param(
        doc(edit=runs(("a ", {}), ("b", {"italic": True, "size": Pt(14)}))),
        doc(edit=runs(("a b", {}))),
        id="ok",
    ),
    pytest.param(
        doc(edit=runs(("a ", {}), ("b", {"italic": True, "size": Pt(12)}))),
        doc(edit=runs(("a b", {}))),
        id="12pt",
    ),
    pytest.param(
        doc(edit=runs(("a ", {}), ("b", {"italic": True}))),
        doc(edit=runs(("a b", {}))),
        id="size-unset",
    ),
    pytest.param(doc(edit=runs(("a b", {}))), doc(edit=runs(("a b", {}))), id="no-italics"),
    pytest.param(
        doc(edit=runs(("a ", {}), ("c", {"italic": True, "size": Pt(14)}))),
        doc(edit=runs(("a b", {}))),
        id="text-differs",
    ),
    pytest.param(
        doc(edit=runs(("a ", {"size": Pt(10)}), ("b", {"italic": True, "size": Pt(14)}))),
        doc(edit=runs(("a b", {}))),
        id="plain-other-size",
    ),
    pytest.param(Lo("italic.docx"), doc(edit=runs(("plain slanted", {}))), id="lo"),
    pytest.param(Lo("text.docx"), Lo("text.docx"), id="lo-none"),
    pytest.param(None, doc("x"), id="none"),
    pytest.param(b"junk", doc("x"), id="corrupt"),
]

STRIKE = [
    pytest.param(doc("a", edit=runs(("b", {"strike": True}))), doc("a", "b"), id="ok"),
    pytest.param(doc("a", edit=runs(("b", {}))), doc("a", "b"), id="not-struck"),
    pytest.param(
        doc("a", edit=runs(("b", {"strike": True}), ("c", {}))), doc("a", "bc"), id="one-run"
    ),
    pytest.param(doc("a", edit=runs(("b", {"double_strike": True}))), doc("a", "b"), id="double"),
    pytest.param(doc("a", edit=runs(("x", {"strike": True}))), doc("a", "b"), id="text-differs"),
    pytest.param(doc("a", ""), doc("a", ""), id="empty-last"),
    pytest.param(Lo("strike.docx"), doc("Keep", "gone"), id="lo"),
    pytest.param(Lo("text.docx"), Lo("text.docx"), id="lo-none"),
    pytest.param(None, doc("x"), id="none"),
    pytest.param(b"junk", doc("x"), id="corrupt"),
]


@pytest.mark.parametrize(
    ("metric", "result", "expected"),
    [pytest.param("check_italic_font_size_14", *p.values, id=f"italic-{p.id}") for p in ITALIC]
    + [
        pytest.param("evaluate_strike_through_last_paragraph", *p.values, id=f"strike-{p.id}")
        for p in STRIKE
    ],
)
def test_text_and_format(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    metric: str,
    result: Spec,
    expected: Spec,
) -> None:
    _check(osworld, tmp_path, lo_docs, metric, result, expected)


# --- images -------------------------------------------------------------------------------


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (8, 6), mode: str = "RGB") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new(mode, size, colour if mode == "RGB" else colour[0]).save(buffer, "PNG")
    return buffer.getvalue()


def pictures(*images: bytes) -> Edit:
    def add(document: Any) -> None:
        for data in images:
            document.add_picture(io.BytesIO(data))

    return add


RED, BLUE = _png((255, 0, 0)), _png((0, 0, 255))
IMAGES = [
    pytest.param(doc("a", edit=pictures(RED)), doc("a", edit=pictures(RED)), id="same"),
    pytest.param(doc("a", edit=pictures(BLUE)), doc("a", edit=pictures(RED)), id="other"),
    pytest.param(doc("a", edit=pictures(RED, BLUE)), doc("a", edit=pictures(RED)), id="extra"),
    pytest.param(doc("a", edit=pictures(RED, BLUE)), doc("a", edit=pictures(RED, BLUE)), id="two"),
    pytest.param(doc("a"), doc("b"), id="none-both"),
    pytest.param(
        doc("a", edit=pictures(_png((255, 0, 0), (6, 8)))),
        doc("a", edit=pictures(RED)),
        id="transposed",
    ),
    pytest.param(
        doc("a", edit=pictures(_png((255, 0, 0), mode="L"))),
        doc("a", edit=pictures(RED)),
        id="grey",
    ),
    pytest.param(
        doc("a", edit=pictures(RED, RED)), doc("a", edit=pictures(RED)), id="same-image-twice"
    ),
    pytest.param(None, doc("a"), id="none"),
    pytest.param(b"junk", doc("a"), id="corrupt"),
]


@pytest.mark.parametrize(("result", "expected"), IMAGES)
def test_compare_docx_images(
    osworld: OSWorld, tmp_path: Path, lo_docs: dict[str, Path], result: Spec, expected: Spec
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_docx_images", result, expected)


def test_compare_docx_images_lo(osworld: OSWorld, tmp_path: Path) -> None:
    source = tmp_path / "src" / "pic.docx"
    source.parent.mkdir()
    doc("a", edit=pictures(RED))(source)
    saved = convert([source], "docx:MS Word 2007 XML", tmp_path / "lo")["pic"]
    expected = materialise(doc("a", edit=pictures(RED)), tmp_path, "expected.docx", {})
    assert_same_score(osworld, "compare_docx_images", saved, expected)


# --- tab stops ----------------------------------------------------------------------------


def _tabs(
    texts: list[str], stops: list[list[tuple[float, Any]]], width: float | None = None
) -> Build:
    def edit(document: Any) -> None:
        for paragraph, paragraph_stops in zip(document.paragraphs, stops, strict=False):
            for position, alignment in paragraph_stops:
                paragraph.paragraph_format.tab_stops.add_tab_stop(Inches(position), alignment)
        if width is not None:
            document.sections[0].page_width = Inches(width)

    return doc(*texts, edit=edit)


R, L, C = WD_TAB_ALIGNMENT.RIGHT, WD_TAB_ALIGNMENT.LEFT, WD_TAB_ALIGNMENT.CENTER
ROWS3 = ["One Two Three\t12", "Four Five Six\t34"]


def _tab_cases() -> list[Any]:
    base = _tabs(ROWS3, [[(6, R)], [(6, R)]])
    pairs = [
        ("equal", base, base),
        ("shifted", _tabs(ROWS3, [[(5.5, R)], [(6, R)]]), base),
        ("both-shifted", _tabs(ROWS3, [[(5, R)], [(4, R)]]), base),
        ("alignment", _tabs(ROWS3, [[(6, L)], [(6, R)]]), base),
        ("missing", _tabs(ROWS3, [[], [(6, R)]]), base),
        ("left-zero-ignored", _tabs(ROWS3, [[(0, L), (6, R)], [(6, R)]]), base),
        ("two-words", _tabs(["One Two\t12", "Four Five Six\t34"], [[(6, R)], [(6, R)]]), base),
        ("no-tab", _tabs(["One Two Three 12", "Four Five Six 34"], [[(6, R)], [(6, R)]]), base),
        ("extra-paragraph", _tabs([*ROWS3, "x\t1"], [[(6, R)], [(6, R)], [(6, R)]]), base),
        (
            "blank-paragraphs",
            _tabs(["", ROWS3[0], " ", ROWS3[1]], [[], [(6, R)], [], [(6, R)]]),
            base,
        ),
        ("narrow-page", base, _tabs(ROWS3, [[(5, R)], [(6, R)]], width=6)),
        ("centre", _tabs(ROWS3, [[(3, C)], [(3, C)]]), _tabs(ROWS3, [[(3, C)], [(3.5, C)]])),
        ("empty", doc(), doc()),
    ]
    cases = []
    option_sets = [o for _, o in _real_options("check_tabstops")] + [
        {},
        {"word_number_split_by_tabstop": 3, "index": 1},
    ]
    for options in option_sets:
        key = "-".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        for label, r, e in pairs:
            cases.append(pytest.param(r, e, options, id=f"{key}-{label}"))
    cases += [
        pytest.param(
            Lo("tabs.docx"),
            doc(
                "Name\tValue",
                edit=lambda d: d.paragraphs[0].paragraph_format.tab_stops.add_tab_stop(Inches(2)),
            ),
            {},
            id="lo",
        ),
        pytest.param(
            Lo("tabs.docx"), Lo("tabs.docx"), {"word_number_split_by_tabstop": 1}, id="lo-both"
        ),
        pytest.param(None, base, {}, id="none"),
        pytest.param(b"junk", base, {}, id="corrupt"),
    ]
    return cases


@pytest.mark.parametrize(("result", "expected", "options"), _tab_cases())
def test_check_tabstops(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    _check(osworld, tmp_path, lo_docs, "check_tabstops", result, expected, **options)


# --- coloured words, highlights -----------------------------------------------------------

WORDS = [["apple", "bear"], ["egg", "cat"]]


def _by_vowel(red: RGBColor, blue: RGBColor) -> Callable[[str], RGBColor]:
    return lambda word: red if word[0].lower() in "aeiou" else blue


PURE_RED, PURE_BLUE = RGBColor(255, 0, 0), RGBColor(0, 0, 255)


def _colored(red: RGBColor | None = PURE_RED, blue: RGBColor | None = PURE_BLUE) -> Build:
    return doc("Sight words", edit=table(WORDS, lambda w: red if w[0] in "aeiou" else blue))


COLOURED = [
    pytest.param(_colored(), _colored(None, None), {}, id="ok"),
    pytest.param(
        _colored(RGBColor(0, 0, 255), RGBColor(255, 0, 0)), _colored(None, None), {}, id="swapped"
    ),
    pytest.param(_colored(RGBColor(250, 5, 5)), _colored(None, None), {}, id="near-red"),
    pytest.param(_colored(RGBColor(230, 20, 20)), _colored(None, None), {}, id="far-red"),
    pytest.param(
        _colored(RGBColor(230, 20, 20)),
        _colored(None, None),
        {"threshold": 10},
        id="far-red-threshold",
    ),
    pytest.param(
        _colored(RGBColor(255, 0, 0), RGBColor(0, 0, 240)), _colored(None, None), {}, id="near-blue"
    ),
    pytest.param(
        _colored(RGBColor(255, 0, 0), RGBColor(20, 20, 200)),
        _colored(None, None),
        {"threshold": 8},
        id="blue-threshold",
    ),
    pytest.param(_colored(None, None), _colored(None, None), {}, id="uncoloured"),
    pytest.param(
        doc(
            "Sight words",
            edit=table([["Apple", "Bear"]], _by_vowel(RGBColor(255, 0, 0), RGBColor(0, 0, 255))),
        ),
        doc("Sight words", edit=table([["Apple", "Bear"]])),
        {},
        id="capitals",
    ),
    pytest.param(
        doc("Sight words", edit=table([["", "1x"]], lambda w: RGBColor(0, 0, 255))),
        doc("Sight words", edit=table([["", "1x"]])),
        {},
        id="empty-and-digit",
    ),
    pytest.param(_colored(), doc("Other words", edit=table(WORDS)), {}, id="text-differs"),
    pytest.param(doc("Sight words"), doc("Sight words"), {}, id="no-tables"),
    pytest.param(None, _colored(), {}, id="none"),
    pytest.param(b"junk", _colored(), {}, id="corrupt"),
]


@pytest.mark.parametrize(("result", "expected", "options"), COLOURED)
def test_evaluate_colored_words_in_tables(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    _check(
        osworld, tmp_path, lo_docs, "evaluate_colored_words_in_tables", result, expected, **options
    )


HIGHLIGHTS = [
    pytest.param(Lo("plain_call.odt"), Lo("plain_call.odt"), id="none-highlighted"),
    pytest.param(Lo("highlighted.odt"), Lo("plain_call.odt"), id="highlighted"),
    pytest.param(Lo("highlighted.odt"), Lo("highlighted.odt"), id="highlighted-both"),
    pytest.param(Lo("text.odt"), Lo("plain_call.odt"), id="text-differs"),
    pytest.param(Lo("text.docx"), Lo("text.docx"), id="docx"),
    pytest.param(None, Lo("plain_call.odt"), id="none"),
    pytest.param(b"junk", Lo("plain_call.odt"), id="corrupt"),
]


@pytest.mark.parametrize(("result", "expected"), HIGHLIGHTS)
def test_check_highlighted_words(
    osworld: OSWorld, tmp_path: Path, lo_docs: dict[str, Path], result: Spec, expected: Spec
) -> None:
    r = materialise(result, tmp_path, "result.odt", lo_docs)
    e = materialise(expected, tmp_path, "expected.odt", lo_docs)
    assert_same_score(osworld, "check_highlighted_words", r, e)


def _odt_variant(tmp_path: Path, lo: dict[str, Path], colour: str) -> Path:
    """The highlighted .odt with its highlight colour rewritten (case, other colours)."""
    from office_convert import patch_zip

    def recolour(data: bytes) -> bytes:
        return data.replace(
            b'fo:background-color="#ffff00"', f'fo:background-color="{colour}"'.encode()
        )

    return patch_zip(lo["highlighted.odt"], tmp_path / "result.odt", {"content.xml": recolour})


@pytest.mark.parametrize("colour", ["#FFFF00", "#00ff00", "transparent", "#ffff01"])
def test_check_highlighted_words_colours(
    osworld: OSWorld, tmp_path: Path, lo: dict[str, Path], colour: str
) -> None:
    result = _odt_variant(tmp_path, lo, colour)
    assert_same_score(osworld, "check_highlighted_words", result, lo["plain_call.odt"])


# --- train records, references, places ----------------------------------------------------

RECORDS = [
    "08:00:00, T100, S1, 1",
    "08:05:00, T101, S2, 2",
    "08:10:00, T100, S1, 1",
    "08:15:00, T102, S3, 3",
]
UNIQUE = [RECORDS[0], RECORDS[1], RECORDS[3]]

TRAINS = [
    pytest.param(doc(*UNIQUE), [doc(*UNIQUE), doc(*RECORDS)], id="ok"),
    pytest.param(doc(*RECORDS), [doc(*UNIQUE), doc(*RECORDS)], id="duplicates-left"),
    pytest.param(doc(*UNIQUE[:2]), [doc(*UNIQUE), doc(*RECORDS)], id="one-dropped"),
    pytest.param(doc(*UNIQUE, "", " "), [doc(*UNIQUE), doc(*RECORDS)], id="blank-lines"),
    pytest.param(doc(*[f" {r} " for r in UNIQUE]), [doc(*UNIQUE), doc(*RECORDS)], id="padded"),
    pytest.param(
        doc(RECORDS[2], RECORDS[1], RECORDS[3]),
        [doc(*UNIQUE), doc(*RECORDS)],
        id="other-duplicate-kept",
    ),
    pytest.param(
        doc(*UNIQUE, "header line"), [doc(*UNIQUE), doc(*RECORDS, "header line")], id="extra-line"
    ),
    pytest.param(
        doc(*UNIQUE, "09:00:00, T999, S9, 9"), [doc(*UNIQUE), doc(*RECORDS)], id="invented-line"
    ),
    pytest.param(
        doc(*[r.replace(", ", ",") for r in UNIQUE]),
        [doc(*UNIQUE), doc(*RECORDS)],
        id="reformatted",
    ),
    pytest.param(doc(*UNIQUE), [doc(*UNIQUE)], id="one-expected"),
    pytest.param(doc(*UNIQUE), [doc(*UNIQUE), None], id="initial-none"),
    pytest.param(doc(*UNIQUE), [doc(*UNIQUE), b"junk"], id="initial-corrupt"),
    pytest.param(None, [doc(*UNIQUE), doc(*RECORDS)], id="none"),
    pytest.param(b"junk", [doc(*UNIQUE), doc(*RECORDS)], id="corrupt"),
    pytest.param(doc(), [doc(), doc()], id="all-empty"),
]


@pytest.mark.parametrize(("result", "expected"), TRAINS)
def test_compare_unique_train_records(
    osworld: OSWorld, tmp_path: Path, result: Spec, expected: list[Spec]
) -> None:
    _check(osworld, tmp_path, {}, "compare_unique_train_records", result, expected)


REFS = ["Smith, J. (2020). A study. Journal 1.", "Doe, A. (2019). Another study. Journal 2."]


def _ref_cases() -> list[Any]:
    pairs = [
        ("equal", doc("Body", "References", *REFS), doc("Body", "References", *REFS)),
        (
            "edited",
            doc("Body", "References", "Smith, J. 2020. A study.", REFS[1]),
            doc("Body", "References", *REFS),
        ),
        ("rewritten", doc("Body", "References", "zzz", "yyy"), doc("Body", "References", *REFS)),
        ("no-heading-both", doc("Body"), doc("Other")),
        ("no-heading-result", doc("Body", *REFS), doc("Body", "References", *REFS)),
        ("fewer", doc("Body", "References", REFS[0]), doc("Body", "References", *REFS)),
        (
            "blank-items",
            doc("Body", "References", "", REFS[0], " ", REFS[1]),
            doc("Body", "References", *REFS),
        ),
        ("empty-list", doc("Body", "References"), doc("Body", "References")),
        ("heading-case", doc("Body", "references", *REFS), doc("Body", "References", *REFS)),
        (
            "two-headings",
            doc("References", "x", "References", *REFS),
            doc("Body", "References", *REFS),
        ),
        ("order", doc("Body", "References", *REFS[::-1]), doc("Body", "References", *REFS)),
    ]
    option_sets = [o for _, o in _real_options("compare_references")] + [
        {},
        {"reference_indicator": "Bibliography"},
        {"reference_base_result": 0.9},
    ]
    cases = []
    for options in option_sets:
        key = "-".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        for label, r, e in pairs:
            cases.append(pytest.param(r, e, options, id=f"{key}-{label}"))
    cases += [
        pytest.param(Lo("text.odt"), Lo("text.odt"), {}, id="odt"),
        pytest.param(None, doc("x"), {}, id="none"),
        pytest.param(b"junk", doc("x"), {}, id="corrupt"),
    ]
    return cases


@pytest.mark.parametrize(("result", "expected", "options"), _ref_cases())
def test_compare_references(
    osworld: OSWorld,
    tmp_path: Path,
    lo_docs: dict[str, Path],
    result: Spec,
    expected: Spec,
    options: dict[str, Any],
) -> None:
    _check(osworld, tmp_path, lo_docs, "compare_references", result, expected, **options)


# Without OSWorld's task files (a plain clone) the cases run on a made-up rule shaped like the
# real one (a list of addresses, some near-duplicates): the cases below use its first four.
_SYNTHETIC_PLACES = (
    "synthetic",
    {
        "expected": [
            "Alpha Street 1",
            "Beta Road 22",
            "Gamma Lane 333",
            "Delta Way 4444",
            "Beta Rd 22",
        ]
    },
)


def _place_cases() -> list[Any]:
    cases = []
    for task, rules in _real_rules("fuzzy_place_math") or [_SYNTHETIC_PLACES]:
        answers = rules["expected"]
        cases += [
            pytest.param(doc(*answers[:3]), rules, id=f"{task}-three-answers"),
            pytest.param(doc(answers[0], answers[1]), rules, id=f"{task}-two"),
            pytest.param(doc(*answers[:4]), rules, id=f"{task}-four"),
            pytest.param(
                doc(answers[0], answers[1][:-2], answers[2] + "x"), rules, id=f"{task}-near"
            ),
            pytest.param(doc(" ".join(answers[:3])), rules, id=f"{task}-one-line"),
            pytest.param(doc(answers[0], "", answers[1], answers[2]), rules, id=f"{task}-blank"),
            pytest.param(doc("a b c"), rules, id=f"{task}-unrelated"),
            pytest.param(doc(), rules, id=f"{task}-empty"),
            pytest.param(None, rules, id=f"{task}-none"),
            pytest.param(b"junk", rules, id=f"{task}-corrupt"),
        ]
    cases += [
        pytest.param(doc("x y z"), {"expected": []}, id="no-answers"),
        pytest.param(doc("cat dog emu"), {"expected": ["cat", "dog", "emu"]}, id="exact"),
        pytest.param(doc("cat dog emus"), {"expected": ["cat", "dog", "emu"]}, id="near-exact"),
    ]
    return cases


@pytest.mark.parametrize(("result", "rules"), _place_cases())
def test_fuzzy_place_math(
    osworld: OSWorld, tmp_path: Path, result: Spec, rules: dict[str, Any]
) -> None:
    _check(osworld, tmp_path, {}, "fuzzy_place_math", result, _NO_EXPECTED, rules)


def test_landscape_tabs(osworld: OSWorld, tmp_path: Path) -> None:
    """A landscape reference: the text width comes from the expected document's section."""

    def landscape(document: Any) -> None:
        section = document.sections[0]
        section.orientation = WD_ORIENT.LANDSCAPE
        section.page_width, section.page_height = section.page_height, section.page_width

    result = _tabs(ROWS3, [[(5, R)], [(6, R)]])
    expected = doc(*ROWS3, edit=edits(landscape, *[]))
    _check(osworld, tmp_path, {}, "check_tabstops", result, expected)
