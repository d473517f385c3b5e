"""Impress checks on decks built with python-pptx (XML parts edited where pptx has no API)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

pptx = pytest.importorskip("pptx")
PIL_Image = pytest.importorskip("PIL.Image")

from lxml import etree  # noqa: E402
from pptx.dml.color import RGBColor  # noqa: E402
from pptx.enum.shapes import PP_PLACEHOLDER  # noqa: E402
from pptx.oxml.ns import qn  # noqa: E402
from pptx.util import Inches  # noqa: E402

from osworld_gym.evaluation.metrics import get_metric, metrics_for, slides_checks  # noqa: E402


def png(colour: tuple[int, int, int]) -> io.BytesIO:
    buffer = io.BytesIO()
    PIL_Image.new("RGB", (16, 12), colour).save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def deck(path: Path, slides: int = 1, edit: Any = None) -> str:
    presentation = pptx.Presentation()
    for _ in range(slides):
        presentation.slides.add_slide(presentation.slide_layouts[6])
    if edit is not None:
        edit(presentation)
    presentation.save(path)
    return str(path)


def not_a_deck(tmp_path: Path) -> str:
    path = tmp_path / "broken.pptx"
    path.write_text("not a zip")
    return str(path)


# --- check_transition ------------------------------------------------------------------------


def add_transition(kind: str, slide_index: int = 0) -> Any:
    def edit(presentation: Any) -> None:
        sld = presentation.slides[slide_index]._element
        transition = etree.SubElement(sld, qn("p:transition"))
        etree.SubElement(transition, qn(f"p:{kind}"))

    return edit


def test_check_transition(tmp_path: Path) -> None:
    metric = get_metric("check_transition")
    rules = {"slide_idx": 0, "transition_type": "dissolve"}
    assert metric(deck(tmp_path / "d.pptx", edit=add_transition("dissolve")), rules) == 1.0
    assert metric(deck(tmp_path / "f.pptx", edit=add_transition("fade")), rules) == 0.0
    assert metric(deck(tmp_path / "none.pptx"), rules) == 0.0
    second = deck(tmp_path / "s.pptx", slides=2, edit=add_transition("dissolve", 1))
    assert metric(second, rules) == 0.0
    assert metric(second, {**rules, "slide_idx": 1}) == 1.0
    assert metric(second, {**rules, "slide_idx": 5}) == 0.0  # no such slide
    assert metric(None, rules) == 0.0
    assert metric(not_a_deck(tmp_path), rules) == 0.0


# --- check_auto_saving_time ------------------------------------------------------------------

XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="AutoSaveTimeIntervall" oor:op="fuse"><value>{minutes}</value></prop></item>
</oor:items>
"""  # noqa: E501


@pytest.mark.parametrize(("minutes", "score"), [("3", 1.0), ("10", 0.0)])
def test_check_auto_saving_time(tmp_path: Path, minutes: str, score: float) -> None:
    path = tmp_path / "registrymodifications.xcu"
    path.write_text(XCU.format(minutes=minutes))
    assert get_metric("check_auto_saving_time")(str(path), {"minutes": 3}) == score


def test_check_auto_saving_time_not_a_number_raises(tmp_path: Path) -> None:
    path = tmp_path / "registrymodifications.xcu"
    path.write_text(XCU.format(minutes="x"))
    with pytest.raises(ValueError):  # OSWorld's int() raises too: the evaluator scores 0
        get_metric("check_auto_saving_time")(str(path), {"minutes": 3})


def test_check_auto_saving_time_missing_setting_or_file(tmp_path: Path) -> None:
    metric = get_metric("check_auto_saving_time")
    path = tmp_path / "registrymodifications.xcu"
    path.write_text(
        XCU.split('<item oor:path="/org.openoffice.Office.Common/Save')[0] + "</oor:items>"
    )
    assert metric(str(path), {"minutes": 3}) == 0.0
    broken = tmp_path / "broken.xcu"
    broken.write_text("<oor:items")
    assert metric(str(broken), {"minutes": 3}) == 0.0
    assert metric(None, {"minutes": 3}) == 0.0


# --- evaluate_presentation_fill_to_rgb_distance ----------------------------------------------


def backgrounds(*colours: tuple[int, int, int] | None) -> Any:
    def edit(presentation: Any) -> None:
        for slide, colour in zip(presentation.slides, colours, strict=True):
            if colour is not None:
                slide.background.fill.solid()
                slide.background.fill.fore_color.rgb = RGBColor(*colour)

    return edit


def test_evaluate_presentation_fill_to_rgb_distance(tmp_path: Path) -> None:
    metric = get_metric("evaluate_presentation_fill_to_rgb_distance")
    rules = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}
    blue = deck(tmp_path / "blue.pptx", 2, backgrounds((0, 0, 255), (0, 0, 255)))
    assert metric(blue, rules) == pytest.approx(1.0)
    half = deck(tmp_path / "half.pptx", 2, backgrounds((0, 0, 255), (255, 255, 255)))
    assert metric(half, rules) == pytest.approx(0.5)  # the untouched white slide counts 1
    navy = deck(tmp_path / "navy.pptx", 1, backgrounds((0, 0, 128)))
    assert metric(navy, rules) == pytest.approx(1 - 127 / (3**0.5 * 255))
    unset = deck(tmp_path / "unset.pptx", 1, backgrounds(None))
    assert metric(unset, rules) == 0.0
    white_no_original = deck(tmp_path / "w.pptx", 1, backgrounds((255, 255, 255)))
    assert metric(white_no_original, {"rgb": [0, 0, 255]}) == pytest.approx(1 - 2**0.5 / 3**0.5)
    assert metric(None, rules) == 0.0
    assert metric(not_a_deck(tmp_path), rules) == 0.0


# --- check_image_stretch_and_center ----------------------------------------------------------


def picture(box: tuple[int, int, int, int], colour: tuple[int, int, int] = (200, 30, 30)) -> Any:
    def edit(presentation: Any) -> None:
        presentation.slides[0].shapes.add_picture(png(colour), *box)

    return edit


def test_check_image_stretch_and_center(tmp_path: Path) -> None:
    metric = get_metric("check_image_stretch_and_center")
    original = deck(
        tmp_path / "original.pptx", edit=picture((Inches(1), Inches(1), Inches(3), Inches(2)))
    )
    full = (0, 0, 9144000, 6858000)
    assert metric(deck(tmp_path / "full.pptx", edit=picture(full)), original) == 1.0
    near = (Inches(0.2), Inches(0.1), 9144000 - Inches(0.3), 6858000 - Inches(0.2))
    assert metric(deck(tmp_path / "near.pptx", edit=picture(near)), original) == 1.0
    assert metric(original, original) == 0.0  # not stretched
    wide = (0, Inches(1), 9144000, Inches(4))
    assert metric(deck(tmp_path / "wide.pptx", edit=picture(wide)), original) == 0.0
    other_image = deck(tmp_path / "other.pptx", edit=picture(full, (0, 0, 255)))
    assert metric(other_image, original) == 0.0
    assert metric(deck(tmp_path / "empty.pptx"), deck(tmp_path / "empty0.pptx")) == 0.0
    assert metric(None, original) == 0.0
    assert metric(not_a_deck(tmp_path), original) == 0.0


# --- check_page_number_colors ----------------------------------------------------------------


def slide_number_colour(rgb: str | None, other_text: str | None = None) -> Any:
    def edit(presentation: Any) -> None:
        for placeholder in presentation.slide_masters[0].placeholders:
            kind = placeholder.placeholder_format.type
            if kind == PP_PLACEHOLDER.SLIDE_NUMBER and rgb is not None:
                placeholder.text_frame.paragraphs[0].font.color.rgb = RGBColor.from_string(rgb)
            if kind == PP_PLACEHOLDER.FOOTER and other_text is not None:
                run = placeholder.text_frame.paragraphs[0].add_run()
                run.text = "footer"
                run.font.color.rgb = RGBColor.from_string(other_text)

    return edit


@pytest.mark.parametrize(
    ("number", "other", "wanted", "score"),
    [
        ("FF0000", None, "red", 1.0),
        ("E02020", None, "Red", 1.0),
        ("FF0000", None, "blue", 0.0),
        ("0000C0", None, "blue", 1.0),
        ("10A010", None, "green", 1.0),
        ("101010", None, "black", 1.0),
        ("808080", None, "red", 0.0),
        ("000000", "FF0000", "red", 0.0),  # the slide number's own colour wins over a red footer
        (None, "FF0000", "red", 1.0),  # no colour on the number: the last run colour
    ],
)
def test_check_page_number_colors_fixed(
    tmp_path: Path, number: str | None, other: str | None, wanted: str, score: float
) -> None:
    path = deck(tmp_path / "numbers.pptx", edit=slide_number_colour(number, other))
    fixed = metrics_for("fixed")["check_page_number_colors"]
    assert fixed(path, {"color": wanted}) == score


def master_colours(*values: str) -> Any:
    """Paint the master's first text-coloured placeholders (date, footer, number) in RGB."""

    def edit(presentation: Any) -> None:
        placeholders = list(presentation.slide_masters[0].placeholders)
        painted = [p for p in placeholders if p.placeholder_format.type in _PAINTED]
        for placeholder, value in zip(painted, values, strict=False):
            run = placeholder.text_frame.paragraphs[0].add_run()
            run.text = "x"
            run.font.color.rgb = RGBColor.from_string(value)

    return edit


_PAINTED = (PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER)


# 2026.04 reads the master's last non-black run colour as RRGGBB; 1.0.2 its second-to-last
# colour, one character late.
@pytest.mark.parametrize(
    ("colours", "wanted", "score", "score_1_0_2"),
    [
        (("000000", "FF0000", "000000"), "red", 1.0, 1.0),  # 1.0.2: the second-to-last
        (("000000", "000000", "FF0000"), "red", 1.0, 0.0),  # 1.0.2: not the last one
        (("000000", "C00000", "000000"), "red", 1.0, 0.0),  # 1.0.2: read as 0, 0, 0
        (("000000", "0000FF", "000000"), "blue", 1.0, 0.0),  # 1.0.2: read as 0, 15, 15
        (("FF0000", "0000FF", "000000"), "red", 0.0, 0.0),  # 2026.04: the last non-black
        (("000000", "00FF00", "000000"), "green", 1.0, 1.0),
        (("000000", "000000", "000000"), "black", 1.0, 1.0),
        (("000000", "000000", "000000"), "purple", 1.0, 1.0),  # an unknown colour name passes
    ],
)
def test_check_page_number_colors_as_osworld(
    tmp_path: Path, colours: tuple[str, ...], wanted: str, score: float, score_1_0_2: float
) -> None:
    path = deck(tmp_path / "numbers.pptx", edit=master_colours(*colours))
    assert get_metric("check_page_number_colors")(path, {"color": wanted}) == score
    assert slides_checks.check_page_number_colors_1_0_2(path, {"color": wanted}) == score_1_0_2


def test_check_page_number_colors_bad_inputs(tmp_path: Path) -> None:
    metric = get_metric("check_page_number_colors")
    old = slides_checks.check_page_number_colors_1_0_2
    for check in (metric, old):
        assert check(None, {"color": "red"}) == 0.0
        with pytest.raises(ValueError):  # no slide master: OSWorld raises too
            check(not_a_deck(tmp_path), {"color": "red"})
    # no RGB colour on the master: 2026.04 finds none (0, whatever the name); 1.0.2 raises
    assert metric(deck(tmp_path / "d.pptx"), {"color": "purple"}) == 0.0
    with pytest.raises(IndexError):
        old(deck(tmp_path / "d.pptx"), {"color": "red"})
    fixed = metrics_for("fixed")["check_page_number_colors"]
    assert fixed(not_a_deck(tmp_path), {"color": "red"}) == 0.0
    with pytest.raises(ValueError, match="unknown color 'purple'"):
        fixed(deck(tmp_path / "d.pptx"), {"color": "purple"})
