"""Presentation metrics (python-pptx): ``compare_pptx_files`` and slide-orientation checks.

``compare_pptx_files(result, expected, **options)`` walks both decks slide by slide and shape
by shape, in order, as OSWorld's code of April 2026 does (``compare_pptx_files_1_0_2()``:
as desktop-env 1.0.2's), and passes only when every enabled check passes. Options are
OSWorld's ``examine_<check>`` switches (fields of
``PptxOptions``):

* on by default: ``number_of_slides``, ``shape`` (position and size within
  ``approximately_tolerance``, 0.005 relative), ``text``, ``indent`` (paragraph levels),
  ``font_name``, ``font_size``, ``font_bold``, ``font_italic``, ``color_rgb``,
  ``font_underline``, ``strike_through``, ``alignment`` (unset means left; also checked over
  text shapes inside groups), ``bullets``, ``background_color``, ``note``;
* off by default: ``image_size`` (pictures: size only), ``modify_height`` (shapes without
  text and freeforms: height only), ``shape_for_shift_size``, and the task-specific
  ``title_bottom_position``, ``table_bottom_position``, ``right_position``,
  ``top_position``, which test fixed slides and EMU offsets exactly as OSWorld does;
* ``run_count`` (on by default): the run count of each paragraph, table cells included;
* always: the shape count of each slide, the paragraph count of each text shape, the number
  of text shapes (groups included) and, in table cells, runs' bold, italic and underline.

What 2026.04's code changed since 1.0.2 (each kept in ``compare_pptx_files_1_0_2()``):

* ``examine_run_count`` is read (1.0.2 always counts runs; tasks ``04578141`` and
  ``b8adbc24`` turn it off);
* where both paragraphs are blank, only runs with text are counted and compared, so neither
  their run counts nor their (empty) runs' fonts matter;
* paragraph levels 0 and 1 count as equal (``indent``);
* the bullets check compares levels only where a paragraph has a bullet character;
* ``shape`` leaves alone the geometry of shape pairs where neither has text (no text property
  or blank text). Decided by the task files: pictures keep the check, since task
  ``e4ef0baf`` asks for a picture's height with nothing else to check it.

``examine_shape_lenient_height`` (task ``04578141``) is read by no OSWorld code, so
``compare_pptx_files()`` ignores it; ``compare_pptx_files_fixed()`` (the ``"fixed"``
evaluation mode) honours it: position and width within the tolerance with any height (as
``shape``, sparing pairs without text).

As in OSWorld, a missing result path opens python-pptx's empty default deck, and a slide
whose background is a theme colour, a notes slide without a notes placeholder or a shape that
python-pptx cannot classify raise (the evaluator scores that 0). ``enable_debug`` (True by
default) only decides whether both shapes' types are read for OSWorld's debug log. Other
option keys (such as ``_note``) are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from osworld_gym.evaluation.metrics import _pptx_compare as cmp
from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_FILL_SOLID, _FILL_BACKGROUND = 1, 5  # MSO_FILL_TYPE values
_TABLE = 19  # MSO_SHAPE_TYPE.TABLE


def background_color(slide: Any) -> Any:
    """The slide's solid background RGB colour (inherited from its master), else ``None``.

    A theme colour raises ``AttributeError`` (it has no RGB value), as in OSWorld.
    """
    fill = slide.background.fill
    if fill.type == _FILL_SOLID:
        return fill.fore_color.rgb
    if fill.type == _FILL_BACKGROUND:
        master_fill = slide.slide_layout.slide_master.background.fill
        if master_fill.type == _FILL_SOLID:
            return master_fill.fore_color.rgb
    return None


def notes_text(slide: Any) -> str:
    """The slide's speaker notes (python-pptx adds an empty notes slide where there is none).

    A notes slide without a notes placeholder raises ``AttributeError``, as in OSWorld.
    """
    return str(slide.notes_slide.notes_text_frame.text)


def text_shapes(shapes: Any) -> Iterator[Any]:
    """Every shape with a text frame, descending into groups."""
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            yield shape
        if hasattr(shape, "shapes"):
            yield from text_shapes(shape.shapes)


def _grouped_text_ok(shapes1: list[Any], shapes2: list[Any], o: cmp.PptxOptions) -> bool:
    """Text shapes in groups too: same count; with ``alignment``, same text and alignment."""
    if len(shapes1) != len(shapes2):
        return False
    if not o.alignment:
        return True
    for t1, t2 in zip(shapes1, shapes2, strict=True):
        if o.text and t1.text.strip() != t2.text.strip():
            return False
        p1s, p2s = t1.text_frame.paragraphs, t2.text_frame.paragraphs
        if len(p1s) != len(p2s):
            return False
        if any(cmp.alignment(a) != cmp.alignment(b) for a, b in zip(p1s, p2s, strict=True)):
            return False
    return True


def _bullets_ok(slide1: Any, slide2: Any, o: cmp.PptxOptions) -> bool:
    try:
        bullets1, bullets2 = cmp.slide_bullets(slide1), cmp.slide_bullets(slide2)
        return cmp.bullets_equal(bullets1, bullets2, rules_1_0_2=o.rules_1_0_2)
    except Exception as e:  # noqa: BLE001 - OSWorld skips the bullets when reading them fails
        logger.debug("compare_pptx_files: bullets not compared: %s", e)
        return True


def _shapes_ok(index: int, slide1: Any, slide2: Any, o: cmp.PptxOptions) -> bool:
    if len(slide1.shapes) != len(slide2.shapes):
        return False
    saw_runs = False
    for s1, s2 in zip(slide1.shapes, slide2.shapes, strict=True):
        if o.debug:  # OSWorld's debug log reads both types (which may raise)
            _ = (s1.shape_type, s2.shape_type)
        if not cmp.shape_checks_ok(index, s1, s2, o):
            return False
        if s1.shape_type == _TABLE and not cmp.table_ok(s1, s2, o):
            return False
        if hasattr(s1, "text") and hasattr(s2, "text"):
            ok, runs = cmp.paragraphs_ok(s1, s2, o)
            saw_runs = saw_runs or runs
            if not ok:
                return False
    # OSWorld compares the bullets (over the whole slide) at the first pair of text runs.
    if o.bullets and saw_runs:
        return _bullets_ok(slide1, slide2, o)
    return True


def _slide_ok(index: int, slide1: Any, slide2: Any, o: cmp.PptxOptions) -> bool:
    if background_color(slide1) != background_color(slide2) and o.background_color:
        logger.info("compare_pptx_files: slide %d background differs", index)
        return False
    if notes_text(slide1).strip() != notes_text(slide2).strip() and o.note:
        logger.info("compare_pptx_files: slide %d notes differ", index)
        return False
    shapes1, shapes2 = list(text_shapes(slide1.shapes)), list(text_shapes(slide2.shapes))
    if not _shapes_ok(index, slide1, slide2, o):
        logger.info("compare_pptx_files: slide %d shapes differ", index)
        return False
    return _grouped_text_ok(shapes1, shapes2, o)


def compare_pptx_files(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the result deck matches the reference deck under the ``examine_*`` options.

    As OSWorld's code of 2026.04 (module docstring), pictures' geometry included.

    Args:
        result: Path of the ``.pptx`` the agent saved (``None``: python-pptx's empty deck).
        expected: Path of the reference deck.
        **options: ``examine_*`` switches and ``approximately_tolerance`` (module docstring);
            ``examine_shape_lenient_height`` is ignored, as in OSWorld.

    Returns:
        1.0 on a match; 0.0 on a difference or when the result cannot be read.
    """
    return _compare_decks(result, expected, options, fixed=False, rules_1_0_2=False)


def compare_pptx_files_1_0_2(result: str | None, expected: str | None, **options: Any) -> float:
    """``compare_pptx_files()`` as desktop-env 1.0.2's code scores.

    ``examine_run_count`` is ignored (run counts always compared, blank paragraphs too), levels
    0 and 1 differ, the bullets check compares every level and ``examine_shape`` compares the
    geometry of every shape pair.
    """
    return _compare_decks(result, expected, options, fixed=False, rules_1_0_2=True)


def compare_pptx_files_fixed(result: str | None, expected: str | None, **options: Any) -> float:
    """``compare_pptx_files()`` that honours ``examine_shape_lenient_height``.

    No OSWorld code reads that option: with it, each shape's position and width must match
    within the tolerance and its height may differ (pairs without text are spared, as by
    ``examine_shape``). A missing result scores 0.
    """
    if not result:
        return 0.0
    return _compare_decks(result, expected, options, fixed=True, rules_1_0_2=False)


def _compare_decks(
    result: str | None,
    expected: str | None,
    options: Mapping[str, Any],
    *,
    fixed: bool,
    rules_1_0_2: bool,
) -> float:
    presentation = require("pptx").Presentation
    try:
        deck1 = presentation(result)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # any unreadable agent output scores 0
        logger.info("compare_pptx_files: cannot open %s: %s", result, e)
        return 0.0
    deck2 = presentation(expected)
    o = cmp.PptxOptions.from_options(options, fixed=fixed, rules_1_0_2=rules_1_0_2)
    if len(deck1.slides) != len(deck2.slides) and o.number_of_slides:
        return 0.0
    pairs = zip(deck1.slides, deck2.slides, strict=False)
    for index, (slide1, slide2) in enumerate(pairs, start=1):
        if not _slide_ok(index, slide1, slide2, o):
            return 0.0
    return 1.0


def check_slide_orientation_Portrait(result: str | None) -> float:
    """1 when the deck's slides are taller than wide."""
    if not result:
        return 0.0
    deck = require("pptx").Presentation(result)
    return float(deck.slide_width < deck.slide_height)
