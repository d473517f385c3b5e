"""Presentation metrics (python-pptx): ``compare_pptx_files`` and slide-orientation checks.

``compare_pptx_files(result, expected, **options)`` walks both decks slide by slide and shape
by shape, in order, and passes only when every enabled check passes. Options are OSWorld's
``examine_<check>`` switches (fields of
:class:`~osworld_gym.evaluation.metrics._pptx_compare.PptxOptions`):

* on by default: ``number_of_slides``, ``shape`` (position and size within
  ``approximately_tolerance``, 0.005 relative; shapes without text are exempt), ``text``,
  ``indent`` (paragraph levels; 0 and 1 count as equal), ``font_name``, ``font_size``,
  ``font_bold``, ``font_italic``, ``color_rgb``, ``font_underline``, ``strike_through``,
  ``alignment`` (unset means left; also checked over text shapes inside groups),
  ``run_count``, ``bullets``, ``background_color``, ``note``;
* off by default: ``image_size`` (pictures: size only), ``modify_height`` (shapes without
  text and freeforms: height only), ``shape_for_shift_size``, and the task-specific
  ``title_bottom_position``, ``table_bottom_position``, ``right_position``,
  ``top_position``, which test fixed slides and EMU offsets exactly as OSWorld does;
* ``shape_lenient_height``, set by task ``libreoffice_impress/04578141`` beside
  ``examine_shape: false``, is read nowhere in OSWorld's code, so :func:`compare_pptx_files`
  ignores it; :func:`compare_pptx_files_fixed` (the ``"fixed"`` evaluation mode) gives it
  the meaning its name suggests: position and width within the tolerance, any height;
* always: the shape count of each slide, the paragraph count of each text shape, the number
  of text shapes (groups included) and, in table cells, runs' bold, italic and underline.

Other option keys (such as ``_note``, ``enable_debug``) are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from osworld_gym.evaluation.metrics import _pptx_compare as cmp
from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_FILL_SOLID, _FILL_BACKGROUND = 1, 5  # MSO_FILL_TYPE values


def _solid_color(fill: Any) -> Any:
    color = fill.fore_color
    # A theme colour has no RGB value; compare the theme slot instead of failing.
    return color.rgb if hasattr(color, "rgb") else ("theme", color.theme_color)


def background_color(slide: Any) -> Any:
    """The slide's solid background colour (inherited from its master), else ``None``."""
    fill = slide.background.fill
    if fill.type == _FILL_SOLID:
        return _solid_color(fill)
    if fill.type == _FILL_BACKGROUND:
        master_fill = slide.slide_layout.slide_master.background.fill
        if master_fill.type == _FILL_SOLID:
            return _solid_color(master_fill)
    return None


def notes_text(slide: Any) -> str:
    """The slide's speaker notes, stripped; ``""`` when it has none."""
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return "" if frame is None else frame.text.strip()


def text_shapes(shapes: Any) -> Iterator[Any]:
    """Every shape with a text frame, descending into groups."""
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            yield shape
        if hasattr(shape, "shapes"):
            yield from text_shapes(shape.shapes)


def _grouped_text_ok(slide1: Any, slide2: Any, o: cmp.PptxOptions) -> bool:
    """Text shapes in groups too: same count; with ``alignment``, same text and alignment."""
    shapes1, shapes2 = list(text_shapes(slide1.shapes)), list(text_shapes(slide2.shapes))
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


def _shapes_ok(index: int, slide1: Any, slide2: Any, o: cmp.PptxOptions) -> bool:
    if len(slide1.shapes) != len(slide2.shapes):
        return False
    saw_runs = False
    for s1, s2 in zip(slide1.shapes, slide2.shapes, strict=True):
        if not (cmp.task_specific_ok(index, s1, s2, o) and cmp.geometry_ok(s1, s2, o)):
            return False
        if getattr(s1, "has_table", False) and not cmp.table_ok(s1, s2, o):
            return False
        if hasattr(s1, "text") and hasattr(s2, "text"):
            ok, runs = cmp.paragraphs_ok(s1, s2, o)
            saw_runs = saw_runs or runs
            if not ok:
                return False
    # OSWorld compares bullets (over the whole slide) while comparing text runs.
    if o.bullets and saw_runs:
        return cmp.bullets_equal(cmp.slide_bullets(slide1), cmp.slide_bullets(slide2))
    return True


def _slide_ok(index: int, slide1: Any, slide2: Any, o: cmp.PptxOptions) -> bool:
    if o.background_color and background_color(slide1) != background_color(slide2):
        logger.info("compare_pptx_files: slide %d background differs", index)
        return False
    if o.note and notes_text(slide1) != notes_text(slide2):
        logger.info("compare_pptx_files: slide %d notes differ", index)
        return False
    if not _shapes_ok(index, slide1, slide2, o):
        logger.info("compare_pptx_files: slide %d shapes differ", index)
        return False
    return _grouped_text_ok(slide1, slide2, o)


def compare_pptx_files(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the result deck matches the reference deck under the ``examine_*`` options.

    Args:
        result: Path of the ``.pptx`` the agent saved.
        expected: Path of the reference deck.
        **options: ``examine_*`` switches and ``approximately_tolerance`` (module docstring);
            ``examine_shape_lenient_height`` is ignored, as in OSWorld.

    Returns:
        1.0 on a match; 0.0 on a difference or when either file is missing or unreadable.
    """
    return _compare_decks(result, expected, options, lenient_height=False)


def compare_pptx_files_fixed(result: str | None, expected: str | None, **options: Any) -> float:
    """:func:`compare_pptx_files` that honours ``examine_shape_lenient_height``.

    With it, each shape's position and width must match within the tolerance and its height
    may differ (OSWorld's code never reads the option).
    """
    return _compare_decks(result, expected, options, lenient_height=True)


def _compare_decks(
    result: str | None, expected: str | None, options: Mapping[str, Any], *, lenient_height: bool
) -> float:
    if not result or not expected:
        return 0.0
    presentation = require("pptx").Presentation
    try:
        deck1 = presentation(result)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # any unreadable agent output scores 0
        logger.info("compare_pptx_files: cannot open %s: %s", result, e)
        return 0.0
    deck2 = presentation(expected)
    o = cmp.PptxOptions.from_options(options, lenient_height=lenient_height)
    if o.number_of_slides and len(deck1.slides) != len(deck2.slides):
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
