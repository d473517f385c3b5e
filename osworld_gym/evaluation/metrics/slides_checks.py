"""Presentation checks on one deck (or one setting): transitions, colours, picture layout.

OSWorld's ``slides`` module, apart from ``compare_pptx_files`` (``.slides``). ``.pptx``
files are read with python-pptx or, for raw XML parts, as a zip archive; LibreOffice's
``registrymodifications.xcu`` is read as XML. A missing or unreadable file scores 0.
"""

from __future__ import annotations

import logging
import math
import zipfile
from collections.abc import Callable, Mapping
from typing import Any
from xml.etree import ElementTree

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_NS = {
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
}
_OOR = "{http://openoffice.org/2001/registry}"
_AUTOSAVE_ITEM = "/org.openoffice.Office.Common/Save/Document"
_PICTURE = 13  # MSO_SHAPE_TYPE.PICTURE
_FILL_SOLID, _FILL_BACKGROUND = 1, 5  # MSO_FILL_TYPE values
_HALF_INCH = 457200  # EMU; check_image_stretch_and_center's tolerance
_WHITE_DISTANCE = math.sqrt(255**2 + 255**2 + 255**2)  # the largest RGB distance
_COLOUR_MARGIN = 50  # check_page_number_colors: a channel must beat the others by this much

_COLOUR_TESTS: Mapping[str, Callable[[int, int, int], bool]] = {
    "red": lambda r, g, b: r > g + _COLOUR_MARGIN and r > b + _COLOUR_MARGIN,
    "green": lambda r, g, b: g > r + _COLOUR_MARGIN and g > b + _COLOUR_MARGIN,
    "blue": lambda r, g, b: b > r + _COLOUR_MARGIN and b > g + _COLOUR_MARGIN,
    "black": lambda r, g, b: max(r, g, b) < _COLOUR_MARGIN,
}


def _zip_xml(path: str, member: str) -> ElementTree.Element | None:
    """One XML part of an OOXML package; ``None`` when the file or the part is missing."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(member) as part:
            return ElementTree.parse(part).getroot()
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError) as e:
        logger.info("cannot read %s from %s: %s", member, path, e)
        return None


def check_transition(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when slide ``rules["slide_idx"]`` (0-based) has the transition ``transition_type``.

    The slide is the part ``ppt/slides/slide<N+1>.xml``; its ``p:transition`` element must
    contain an element named after the transition (e.g. ``dissolve``), at any depth.
    """
    if not result:
        return 0.0
    root = _zip_xml(result, f"ppt/slides/slide{rules['slide_idx'] + 1}.xml")
    if root is None:
        return 0.0
    transition = root.find(".//p:transition", _NS)
    if transition is None:
        return 0.0
    return float(transition.find(f".//p:{rules['transition_type']}", _NS) is not None)


def check_auto_saving_time(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when LibreOffice's auto-save interval (``registrymodifications.xcu``) is ``minutes``.

    The value is the first ``AutoSaveTimeIntervall`` property of each
    ``/org.openoffice.Office.Common/Save/Document`` item (the last such item wins), compared
    as an integer with ``rules["minutes"]``. As in OSWorld, a property without a value or
    with one that is not an integer raises.
    """
    if not result:
        return 0.0
    try:
        root = ElementTree.parse(result).getroot()
    except (OSError, ElementTree.ParseError) as e:
        logger.info("check_auto_saving_time: cannot read %s: %s", result, e)
        return 0.0
    interval = None
    for item in root.iterfind(".//item"):
        if item.get(f"{_OOR}path") != _AUTOSAVE_ITEM:
            continue
        for prop in item.iterfind(".//prop"):
            if prop.get(f"{_OOR}name") == "AutoSaveTimeIntervall":
                value = prop.find(".//value")
                if value is None:
                    raise ValueError("AutoSaveTimeIntervall has no value")
                interval = value.text
                break
    if interval is None:
        return 0.0
    return float(int(interval) == rules["minutes"])


def _fill_rgb(fill: Any) -> Any:
    """A solid fill's RGB colour; ``None`` for a theme colour or one that cannot be read."""
    try:
        color = fill.fore_color
        return color.rgb if hasattr(color, "rgb") else None
    except Exception:  # noqa: BLE001 - OSWorld reads any failure as no colour
        return None


def _slide_distance(slide: Any, rgb: Any, original: Any) -> float:
    """Normalised RGB distance of the slide's background to ``rgb``; 1 when unknown/unchanged."""
    fill = slide.background.fill
    if fill.type == _FILL_BACKGROUND:
        fill = slide.slide_layout.slide_master.background.fill
    if fill.type != _FILL_SOLID:
        return 1.0
    colour = _fill_rgb(fill)
    if colour is None:
        return 1.0
    r1, g1, b1 = colour
    r2, g2, b2 = rgb
    if original is not None:
        r3, g3, b3 = original
        if r1 == r3 and g1 == g3 and b1 == b3:
            return 1.0
    return math.sqrt((r1 - r2) ** 2 + (g1 - g2) ** 2 + (b1 - b2) ** 2) / _WHITE_DISTANCE


def evaluate_presentation_fill_to_rgb_distance(
    result: str | None, rules: Mapping[str, Any]
) -> float:
    """How close every slide's background is to ``rules["rgb"]``, in [0, 1].

    Args:
        result: Path of the ``.pptx``.
        rules: ``rgb`` (the wanted colour) and optional ``original_rgb``: a slide still in
            that colour counts as the farthest possible.

    Returns:
        ``1 - mean(distance)`` over the slides, where a slide's distance is its solid
        background's RGB distance to ``rgb`` divided by black-to-white; a slide without a
        solid RGB background (own or its master's) has distance 1. 0.0 for a missing,
        unreadable or empty deck.
    """
    if not result:
        return 0.0
    try:
        slides = list(require("pptx").Presentation(result).slides)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # any unreadable agent output scores 0
        logger.info("evaluate_presentation_fill_to_rgb_distance: %s", e)
        return 0.0
    if not slides:
        return 0.0
    rgb = rules["rgb"]
    original = rules.get("original_rgb")
    return 1 - sum(_slide_distance(slide, rgb, original) for slide in slides) / len(slides)


def check_image_stretch_and_center(result: str | None, expected: str | None) -> float:
    """1 when the first slide's picture now covers the whole slide, centred.

    The picture is found in ``result``'s first slide by its image bytes (those of the first
    picture on ``expected``'s first slide). Its size must equal the slide size and its
    position the centred one, each within half an inch.
    """
    if not result or not expected:
        return 0.0
    presentation = require("pptx").Presentation
    try:
        original, modified = presentation(expected), presentation(result)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # any unreadable agent output scores 0
        logger.info("check_image_stretch_and_center: %s", e)
        return 0.0
    if not len(original.slides) or not len(modified.slides):
        return 0.0
    before = [s for s in original.slides[0].shapes if s.shape_type == _PICTURE]
    if not before:
        return 0.0
    blob = before[0].image.blob
    after = [s for s in modified.slides[0].shapes if s.shape_type == _PICTURE]
    matches = [s for s in after if s.image.blob == blob]
    if not matches:
        return 0.0
    picture = matches[-1]
    width, height = original.slide_width, original.slide_height
    off = (
        abs(picture.width - width),
        abs(picture.height - height),
        abs(picture.left - (width - picture.width) / 2),
        abs(picture.top - (height - picture.height) / 2),
    )
    return float(max(off) <= _HALF_INCH)


def _hex_rgb(value: str | None) -> tuple[int, int, int] | None:
    """``"FF0000"`` → ``(255, 0, 0)``; ``None`` for anything else.

    Example:
        >>> _hex_rgb("#00ff7f"), _hex_rgb("red")
        ((0, 255, 127), None)
    """
    digits = (value or "").lstrip("#")
    if len(digits) != 6:
        return None
    try:
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    except ValueError:
        return None


def _slide_number_colour(master: ElementTree.Element) -> str | None:
    """The colour of the master's slide-number placeholder, else a fallback.

    The fallback is the last non-black run colour on the master (then the last non-black
    colour of any kind); the placeholder shape's explicit colour is read first, so a master
    whose slide number is set to black while other text is red is not taken for red.
    """
    for shape in master.iter(f"{{{_NS['p']}}}sp"):
        placeholder = shape.find("p:nvSpPr/p:nvPr/p:ph", _NS)
        if placeholder is not None and placeholder.get("type") == "sldNum":
            colour = shape.find("p:txBody//a:solidFill/a:srgbClr", _NS)
            if colour is not None:
                return colour.get("val")
    return _fallback_colour(master)


def _last_not_black(colours: list[ElementTree.Element]) -> str | None:
    for colour in reversed(colours):
        value = colour.get("val")
        if value and value != "000000":
            return value
    return None


def _fallback_colour(master: ElementTree.Element) -> str | None:
    """The master's last non-black run colour, else last non-black colour, else last colour."""
    value = _last_not_black(master.findall(".//a:rPr//a:solidFill//a:srgbClr", _NS))
    if value is not None:
        return value
    colours = master.findall(".//a:solidFill//a:srgbClr", _NS)
    value = _last_not_black(colours)
    if value is not None or not colours:
        return value
    return colours[-1].get("val")


# The placeholder types whose colour OSWorld's code of 2026.04 tries before any run colour.
_NUMBER_PLACEHOLDERS = ("sldNum", "ftr", "dt")


def _colour_in(element: ElementTree.Element) -> ElementTree.Element | None:
    return element.find(".//a:solidFill//a:srgbClr", _NS)


def _page_number_colour_2026_04(master: ElementTree.Element) -> str | None:
    """The colour value OSWorld's code of 2026.04 takes for the slide numbers.

    In order: a colour inside the first ``sldNum`` ``p:ph`` element, then inside the first
    ``sldNum``/``ftr``/``dt`` one that holds any; then the last non-black run colour
    (``a:rPr``) of the master; then its last non-black colour of any kind; then its last
    colour. A ``p:ph`` element holds no colour in a valid deck (the shape's text body is its
    sibling's), so in practice the run colours decide; the steps are kept as they are.
    """
    first = master.find('.//p:ph[@type="sldNum"]', _NS)
    colour = None if first is None else _colour_in(first)
    if colour is not None and colour.get("val") is not None:
        return colour.get("val")
    for placeholder in master.iterfind(".//p:ph", _NS):
        if placeholder.get("type") not in _NUMBER_PLACEHOLDERS:
            continue
        colour = _colour_in(placeholder)
        if colour is not None:
            # The first placeholder with a colour ends the search, even one without a value.
            if colour.get("val") is not None:
                return colour.get("val")
            break
    return _fallback_colour(master)


def _shifted_channels(value: str) -> tuple[int, int, int]:
    """OSWorld's reading of a colour value: characters 1-2, 3-4 and 5-6 as hex channels.

    It expects ``#RRGGBB``; the master's ``val`` has no ``#``, so each channel is read one
    character late (``"FF0000"`` -> 240, 0, 0). A value too short for that raises.
    """
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def _read_master(result: str) -> ElementTree.Element:
    master = _zip_xml(result, "ppt/slideMasters/slideMaster1.xml")
    if master is None:  # OSWorld's code raises here (the evaluator scores 0)
        raise ValueError(f"check_page_number_colors: no slide master in {result}")
    return master


def check_page_number_colors(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when the colour OSWorld's 2026.04 code takes for the slide numbers is ``rules["color"]``.

    The colour of ``ppt/slideMasters/slideMaster1.xml`` that
    ``_page_number_colour_2026_04()`` picks (in practice the master's last non-black run
    colour), read as ``RRGGBB`` with an optional ``#``. ``"red"``, ``"green"``, ``"blue"``:
    that channel exceeds the other two by more than 50; ``"black"``: every channel below 50;
    any other name passes. No colour, or one that is not six hex digits, scores 0 (whatever
    the name); a deck without a master raises.

    desktop-env 1.0.2 (``check_page_number_colors_1_0_2()``) read the master's second-to-last
    colour one character late and raised with fewer than two colours.
    """
    if not result:
        return 0.0
    value = _page_number_colour_2026_04(_read_master(result))
    rgb = _hex_rgb(value)
    if rgb is None:
        logger.info("check_page_number_colors: no usable slide-number colour (%r)", value)
        return 0.0
    wanted = rules["color"]
    test = _COLOUR_TESTS.get(wanted) if isinstance(wanted, str) else None
    return 1.0 if test is None else float(test(*rgb))


def check_page_number_colors_1_0_2(result: str | None, rules: Mapping[str, Any]) -> float:
    """``check_page_number_colors()`` as desktop-env 1.0.2's code scores.

    The second-to-last ``a:srgbClr`` under an ``a:solidFill`` of
    ``ppt/slideMasters/slideMaster1.xml``, its ``val`` read one character late (see
    ``_shifted_channels()``); ``"red"``, ``"green"``, ``"blue"``: that channel exceeds the
    other two by more than 50; ``"black"``: every channel below 50; any other name passes.
    A master with fewer than two such colours raises.
    """
    if not result:
        return 0.0
    colours = _read_master(result).findall(".//a:solidFill//a:srgbClr", _NS)
    value = colours[-2].get("val")
    if value is None:
        return 0.0
    wanted = rules["color"]
    test = _COLOUR_TESTS.get(wanted) if isinstance(wanted, str) else None
    return 1.0 if test is None else float(test(*_shifted_channels(value)))


def check_page_number_colors_fixed(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when the slide numbers on the first slide master are ``rules["color"]``.

    The colour of the master's slide-number placeholder, else the last non-black run colour
    of the master, read as ``RRGGBB``. OSWorld's code of 2026.04 looks for the placeholder's
    colour inside its ``p:ph`` element, where none is, so a later coloured run wins there (and
    1.0.2 reads the second-to-last colour of the master, one character late).

    Args:
        result: Path of the ``.pptx``.
        rules: ``color``: ``"red"``, ``"green"``, ``"blue"`` (that channel exceeds the other
            two by more than 50) or ``"black"`` (every channel below 50).

    Raises:
        ValueError: Unknown colour name in the task's rules.
    """
    wanted = str(rules["color"]).lower()
    if wanted not in _COLOUR_TESTS:
        raise ValueError(
            f"check_page_number_colors: unknown color {wanted!r}; use one of "
            f"{sorted(_COLOUR_TESTS)}"
        )
    if not result:
        return 0.0
    master = _zip_xml(result, "ppt/slideMasters/slideMaster1.xml")
    if master is None:
        return 0.0
    rgb = _hex_rgb(_slide_number_colour(master))
    return 0.0 if rgb is None else float(_COLOUR_TESTS[wanted](*rgb))
