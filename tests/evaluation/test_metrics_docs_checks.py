"""Writer task metrics on .docx files written with python-docx and .odt files written with odfpy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

docx = pytest.importorskip("docx")

from docx.enum.text import WD_TAB_ALIGNMENT  # noqa: E402
from docx.shared import Inches, RGBColor  # noqa: E402

from osworld_gym.evaluation.metrics import get_metric  # noqa: E402
from osworld_gym.evaluation.metrics._color import delta_e_2000, rgb_difference  # noqa: E402


def make_docx(
    path: Path, paragraphs: Sequence[str], mutate: Callable[[Any], None] | None = None
) -> str:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if mutate is not None:
        mutate(document)
    document.save(path)
    return str(path)


def not_a_document(tmp_path: Path, suffix: str = ".docx") -> str:
    path = tmp_path / f"broken{suffix}"
    path.write_text("not a zip")
    return str(path)


# --- check_tabstops --------------------------------------------------------------------------

SENTENCES = ["One two three\tand the rest.", "", "Four five six\tmore words here."]


def tab_stops(*stops: tuple[float, Any]) -> Callable[[Any], None]:
    def mutate(document: Any) -> None:
        for paragraph in document.paragraphs:
            if paragraph.text:
                for inches, alignment in stops:
                    paragraph.paragraph_format.tab_stops.add_tab_stop(Inches(inches), alignment)

    return mutate


RIGHT, LEFT, CENTER = WD_TAB_ALIGNMENT.RIGHT, WD_TAB_ALIGNMENT.LEFT, WD_TAB_ALIGNMENT.CENTER


def test_check_tabstops(tmp_path: Path) -> None:
    metric = get_metric("check_tabstops")
    gold = make_docx(tmp_path / "gold.docx", SENTENCES, tab_stops((6.0, RIGHT)))

    def result(name: str, *stops: tuple[float, Any], text: Sequence[str] = SENTENCES) -> str:
        return make_docx(tmp_path / f"{name}.docx", text, tab_stops(*stops))

    options = {"word_number_split_by_tabstop": 3, "index": 0}
    assert metric(result("same", (6.0, RIGHT)), gold, **options) == 1.0
    # 0.6 inch off on a 6-inch text width, in every paragraph
    assert metric(result("off", (5.4, RIGHT)), gold, **options) == pytest.approx(0.9)
    assert metric(result("left", (6.0, LEFT)), gold) == 0.0  # alignment differs
    assert metric(result("none"), gold) == 0.0  # stop count differs
    assert metric(result("two", (3.0, CENTER), (6.0, RIGHT)), gold) == 0.0
    four_words = ["One two three four\tand the rest.", "Four five six\tmore."]
    assert metric(result("four", (6.0, RIGHT), text=four_words), gold, **options) == 0.0
    assert metric(result("four2", (6.0, RIGHT), text=four_words), gold) == 1.0  # no word rule
    assert metric(result("short", (6.0, RIGHT), text=SENTENCES[:1]), gold) == 0.0
    assert metric(None, gold) == 0.0
    assert metric(not_a_document(tmp_path), gold) == 0.0


# --- evaluate_colored_words_in_tables --------------------------------------------------------

WORDS = [["apple", "ball"], ["egg", "cat"]]


def word_table(colour: Callable[[str], tuple[int, int, int] | None]) -> Callable[[Any], None]:
    def mutate(document: Any) -> None:
        table = document.add_table(rows=2, cols=2)
        for i, row in enumerate(WORDS):
            for j, word in enumerate(row):
                run = table.cell(i, j).paragraphs[0].add_run(word)
                rgb = colour(word)
                if rgb is not None:
                    run.font.color.rgb = RGBColor(*rgb)

    return mutate


def vowel_red(red: tuple[int, int, int] = (255, 0, 0)) -> Callable[[str], tuple[int, int, int]]:
    return lambda word: red if word[0] in "aeiou" else (0, 0, 255)


def test_evaluate_colored_words_in_tables(tmp_path: Path) -> None:
    metric = get_metric("evaluate_colored_words_in_tables")
    gold = make_docx(tmp_path / "gold.docx", ["Words"], word_table(vowel_red()))

    def result(name: str, colour: Callable[[str], Any], text: str = "Words") -> str:
        return make_docx(tmp_path / f"{name}.docx", [text], word_table(colour))

    assert metric(result("right", vowel_red()), gold) == 1.0
    assert metric(result("close", vowel_red((250, 5, 0))), gold) == 1.0  # within ΔE 3.5
    assert metric(result("dark", vowel_red((160, 0, 0))), gold) == 0.0
    assert metric(result("dark2", vowel_red((160, 0, 0))), gold, threshold=40) == 1.0
    assert metric(result("swapped", lambda w: (0, 0, 255)), gold) == 0.0
    assert metric(result("plain", lambda w: None), gold) == 0.0
    assert metric(result("text", vowel_red(), text="Other words"), gold) == 0.0
    assert metric(None, gold) == 0.0


def test_colour_difference_matches_published_ciede2000_pairs() -> None:
    # Sharma, Wu and Dalal (2005), test pairs 1, 7, 14, 18, 25
    pairs = [
        ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
        ((50, 0, 0), (50, -1, 2), 2.3669),
        ((50, 2.49, -0.001), (50, -2.49, 0.0011), 7.2195),
        ((50, -0.001, 2.49), (50, 0.0011, -2.49), 4.7461),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ]
    for lab1, lab2, want in pairs:
        assert delta_e_2000(lab1, lab2) == pytest.approx(want, abs=1e-4)
        assert delta_e_2000(lab2, lab1) == pytest.approx(want, abs=1e-4)
    assert rgb_difference((255, 0, 0), (250, 5, 0)) < 3.5 < rgb_difference((255, 0, 0), (200, 0, 0))


# --- check_highlighted_words -----------------------------------------------------------------


def make_odt(path: Path, highlight: str | None, text: str = "world") -> str:
    opendocument = pytest.importorskip("odf.opendocument")
    odf_style = pytest.importorskip("odf.style")
    odf_text = pytest.importorskip("odf.text")
    document = opendocument.OpenDocumentText()
    paragraph = odf_text.P(text="Hello ")
    if highlight is None:
        paragraph.addElement(odf_text.Span(text=text))
    else:
        style = odf_style.Style(name="T1", family="text")
        style.addElement(odf_style.TextProperties(backgroundcolor=highlight))
        document.automaticstyles.addElement(style)
        paragraph.addElement(odf_text.Span(stylename=style, text=text))
    document.text.addElement(paragraph)
    document.save(str(path))
    return str(path)


def test_check_highlighted_words(tmp_path: Path) -> None:
    metric = get_metric("check_highlighted_words")
    gold = make_odt(tmp_path / "gold.odt", None)
    assert metric(make_odt(tmp_path / "clean.odt", None), gold) == 1.0
    assert metric(make_odt(tmp_path / "yellow.odt", "#ffff00"), gold) == 0.0
    # OSWorld compares the colour as written: upper case is no highlight
    assert metric(make_odt(tmp_path / "upper.odt", "#FFFF00"), gold) == 1.0
    assert metric(make_odt(tmp_path / "grey.odt", "#cccccc"), gold) == 1.0  # not a highlight
    assert metric(make_odt(tmp_path / "text.odt", None, text="there"), gold) == 0.0
    assert metric(None, gold) == 0.0
    assert metric(not_a_document(tmp_path, ".odt"), gold) == 0.0


# --- compare_unique_train_records ------------------------------------------------------------

ORIGINAL = [
    "08:00:00, T1, S1, 1",
    "08:05:00, T2, S2, 2",
    "08:07:00, T1, S3, 1",
    "08:09:00, T3, S1, 3",
]
GOLD = [ORIGINAL[0], ORIGINAL[1], ORIGINAL[3]]


@pytest.mark.parametrize(
    ("lines", "score"),
    [
        (GOLD, 1.0),
        ([ORIGINAL[1], ORIGINAL[3], ORIGINAL[2]], 1.0),  # the other T1 line, in another order
        (ORIGINAL, 0.0),  # T1 still twice
        (GOLD[:2], 0.0),  # T3 lost
        ([*GOLD[:2], "08:09:00, T3, S9, 3"], 0.0),  # a line not in the original
        ([*GOLD, "Notes"], 0.0),  # one line more than the gold
    ],
)
def test_compare_unique_train_records(tmp_path: Path, lines: list[str], score: float) -> None:
    metric = get_metric("compare_unique_train_records")
    expected = [
        make_docx(tmp_path / "gold.docx", GOLD),
        make_docx(tmp_path / "original.docx", ORIGINAL),
    ]
    assert metric(make_docx(tmp_path / "result.docx", lines), expected) == score


def test_compare_unique_train_records_bad_inputs(tmp_path: Path) -> None:
    metric = get_metric("compare_unique_train_records")
    gold = make_docx(tmp_path / "gold.docx", GOLD)
    assert metric(None, [gold, gold]) == 0.0
    assert metric(gold, gold) == 0.0  # expected must be [gold, original]
    assert metric(gold, [gold, None]) == 0.0
    assert metric(not_a_document(tmp_path), [gold, gold]) == 0.0


# --- compare_references ----------------------------------------------------------------------

BODY = ["Case study", "Some text.", "References"]
REFS = [
    "Smith, J. (2020). A study of things. Journal of Studies, 12(3), 45-67.",
    "Doe, A., & Roe, B. (2019). Another paper. Science Letters, 4, 1-9.",
]


def test_compare_references(tmp_path: Path) -> None:
    metric = get_metric("compare_references")
    gold = make_docx(tmp_path / "gold.docx", [*BODY, *REFS])
    options = {"content_only": True, "reference_base_result": 0.6}
    assert metric(make_docx(tmp_path / "same.docx", [*BODY, "", *REFS]), gold, **options) == 1.0
    edited = [REFS[0], REFS[1].replace("Another paper", "Another paper entirely")]
    partial = metric(make_docx(tmp_path / "edited.docx", [*BODY, *edited]), gold, **options)
    assert 0.0 < partial < 1.0
    unrelated = ["x" * 40, "y" * 40]
    assert metric(make_docx(tmp_path / "bad.docx", [*BODY, *unrelated]), gold, **options) == 0
    assert metric(make_docx(tmp_path / "one.docx", [*BODY, REFS[0]]), gold) == 0.0
    assert metric(make_docx(tmp_path / "none.docx", BODY[:2]), gold) == 0.0
    no_heading = make_docx(tmp_path / "nh.docx", BODY[:2])
    assert metric(no_heading, no_heading) == 1.0
    renamed = make_docx(tmp_path / "bib.docx", ["Bibliography", *REFS])
    assert metric(renamed, renamed, reference_indicator="Bibliography") == 1.0
    assert metric(None, gold) == 0.0
    assert metric(not_a_document(tmp_path), gold) == 0.0


# --- fuzzy_place_math ------------------------------------------------------------------------

PLACES = {
    "expected": ["深圳市福田区正义街1号", "深圳市福田区振兴路108号", "福田区水围村龙景楼一楼"]
}


def test_fuzzy_place_math(tmp_path: Path) -> None:
    metric = get_metric("fuzzy_place_math")
    exact = make_docx(tmp_path / "exact.docx", PLACES["expected"])
    assert metric(exact, PLACES) == 1.0
    close = make_docx(tmp_path / "close.docx", [*PLACES["expected"][:2], "福田区水围村龙景楼"])
    assert 0.9 < metric(close, PLACES) < 1.0
    assert metric(make_docx(tmp_path / "two.docx", PLACES["expected"][:2]), PLACES) == 0.0
    four = make_docx(tmp_path / "four.docx", [*PLACES["expected"], "深圳市"])
    assert metric(four, PLACES) == 0.0  # OSWorld's rule: exactly three words
    assert metric(None, PLACES) == 0.0
    assert metric(not_a_document(tmp_path), PLACES) == 0.0
