"""Shape-, paragraph- and run-level comparisons behind ``compare_pptx_files``.

Two shapes (or paragraphs, runs) match when every check enabled in :class:`PptxOptions`
holds; see :mod:`osworld_gym.evaluation.metrics.slides` for the options.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_FREEFORM, _PICTURE, _TABLE = 5, 13, 19  # MSO_SHAPE_TYPE values
# OSWorld's thresholds (EMU) for the task-specific position checks.
_BELOW_TOP = 3600000  # a title/table moved to the bottom starts below this
_RIGHT_OF_LEFT = 4320000  # a shape moved right starts right of this
_ABOVE_TOP = 1980000  # a picture moved up starts above this


@dataclasses.dataclass(frozen=True)
class PptxOptions:
    """The ``examine_*`` switches of :func:`compare_pptx_files` (field = name sans prefix)."""

    number_of_slides: bool = True
    shape: bool = True
    text: bool = True
    indent: bool = True
    font_name: bool = True
    font_size: bool = True
    font_bold: bool = True
    font_italic: bool = True
    color_rgb: bool = True
    font_underline: bool = True
    strike_through: bool = True
    alignment: bool = True
    run_count: bool = True
    bullets: bool = True
    background_color: bool = True
    note: bool = True
    image_size: bool = False
    modify_height: bool = False
    shape_for_shift_size: bool = False
    shape_lenient_height: bool = False
    title_bottom_position: bool = False
    table_bottom_position: bool = False
    right_position: bool = False
    top_position: bool = False
    tolerance: float = 0.005  # relative, from ``approximately_tolerance``

    @classmethod
    def from_options(
        cls, options: Mapping[str, Any], *, lenient_height: bool = False
    ) -> PptxOptions:
        """Read OSWorld's option keys; unknown keys are logged and ignored, as OSWorld does.

        Args:
            options: The task's options.
            lenient_height: Honour ``examine_shape_lenient_height``, which OSWorld's code never
                reads (the ``"fixed"`` evaluation mode); otherwise it is ignored like any
                unknown key.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        if not lenient_height:
            names.discard("shape_lenient_height")
        values: dict[str, Any] = {}
        for key, value in options.items():
            if key.startswith("examine_") and key[8:] in names:
                values[key[8:]] = bool(value)
            elif key == "approximately_tolerance":
                values["tolerance"] = float(value)
            else:
                logger.debug("compare_pptx_files: ignoring option %r", key)
        return cls(**values)


def approx_equal(a: int | None, b: int | None, tolerance: float) -> bool:
    """Equal, or within ``tolerance`` relative to the larger magnitude (0 only equals 0).

    Example:
        >>> approx_equal(1000, 1004, 0.005), approx_equal(1000, 1010, 0.005)
        (True, False)
    """
    if a == b:
        return True
    if a is None or b is None or a == 0 or b == 0:
        return False
    return abs(a - b) / max(abs(a), abs(b)) <= tolerance


def _same_geometry(s1: Any, s2: Any, tol: float, *, height: bool = True) -> bool:
    attributes = ("left", "top", "width", "height") if height else ("left", "top", "width")
    return all(approx_equal(getattr(s1, a), getattr(s2, a), tol) for a in attributes)


def _shape_type(shape: Any) -> Any:
    try:
        return shape.shape_type
    except NotImplementedError:  # python-pptx cannot classify some legacy shapes
        return None


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


def _blank(shape: Any) -> bool:
    return not _has_text(shape) or not (shape.text or "").strip()


def task_specific_ok(idx: int, s1: Any, s2: Any, o: PptxOptions) -> bool:
    """OSWorld's per-task position checks (fixed texts, slide numbers and EMU offsets)."""
    both_text = _has_text(s1) and _has_text(s2)
    same = _same_geometry(s1, s2, o.tolerance)
    if o.title_bottom_position:
        if both_text and s1.text == s2.text:
            if s1.text == "Product Comparison" and (s1.top <= s2.top or s1.top < _BELOW_TOP):
                return False
        elif not same:
            return False
    if o.table_bottom_position:
        if idx == 3 and _shape_type(s1) == _TABLE and _shape_type(s2) == _TABLE:
            if s1.top <= s2.top or s1.top < _BELOW_TOP:
                return False
        elif not same:
            return False
    if o.right_position and idx == 2 and not _has_text(s1) and not _has_text(s2):
        if s1.left <= s2.left or s1.left < _RIGHT_OF_LEFT:
            return False
    if o.top_position and idx == 2 and _shape_type(s1) == _PICTURE == _shape_type(s2):
        if s1.top >= s2.top or s1.top > _ABOVE_TOP:
            return False
    if o.shape_for_shift_size and not same:
        placeholder = "Elaborate on what you want to discuss."
        if not (both_text and s1.text == s2.text == placeholder):
            return False
    return True


def geometry_ok(s1: Any, s2: Any, o: PptxOptions) -> bool:
    tol = o.tolerance
    same = _same_geometry(s1, s2, tol)
    if o.shape and not same and not (_blank(s1) and _blank(s2)):
        return False
    if o.shape_lenient_height and not _same_geometry(s1, s2, tol, height=False):
        return False
    if o.image_size:
        if _shape_type(s1) == _PICTURE and _shape_type(s2) == _PICTURE:
            if not (
                approx_equal(s1.width, s2.width, tol) and approx_equal(s1.height, s2.height, tol)
            ):
                return False
        elif not same:
            return False
    if o.modify_height:
        freeforms = _shape_type(s1) == _FREEFORM and _shape_type(s2) == _FREEFORM
        if (not _has_text(s1) and not _has_text(s2)) or freeforms:
            return approx_equal(s1.height, s2.height, tol)
        return same
    return True


def _runs(paragraph: Any, other: Any) -> list[Any]:
    """A paragraph's runs; for two blank paragraphs, only runs holding text (0 vs 1 empty)."""
    if not (paragraph.text or "").strip() and not (other.text or "").strip():
        return [r for r in paragraph.runs if (r.text or "").strip()]
    return list(paragraph.runs)


def _rgb(run: Any) -> Any:
    color = run.font.color
    return color.rgb if hasattr(color, "rgb") else None


def _falsy_equal(a: Any, b: Any) -> bool:
    """Bold/italic: equal, or both unset/False."""
    return a == b or (a in (None, False) and b in (None, False))


def _underline_ok(u1: Any, u2: Any) -> bool:
    if u1 == u2:
        return True
    if u1 is not None and u2 is not None:
        return False
    return not ((u1 is None and u2 is True) or (u1 is True and u2 is None))


def _strike(run: Any) -> str:
    # python-pptx has no strike-through API; read the run properties element.
    rpr = run._r.find(f"{_A}rPr")
    return "noStrike" if rpr is None else rpr.get("strike", "noStrike")


def _run_ok(r1: Any, r2: Any, o: PptxOptions) -> bool:
    f1, f2 = r1.font, r2.font
    checks = (
        (o.font_name, f1.name == f2.name),
        (o.font_size, f1.size == f2.size),
        (o.font_bold, _falsy_equal(f1.bold, f2.bold)),
        (o.font_italic, _falsy_equal(f1.italic, f2.italic)),
        (
            o.color_rgb,
            not (hasattr(f1.color, "rgb") and hasattr(f2.color, "rgb")) or _rgb(r1) == _rgb(r2),
        ),
        (o.font_underline, _underline_ok(f1.underline, f2.underline)),
        (o.strike_through, _strike(r1) == _strike(r2)),
    )
    return all(ok for enabled, ok in checks if enabled)


def alignment(paragraph: Any) -> Any:
    pp_align = require("pptx.enum.text").PP_ALIGN
    return paragraph.alignment if paragraph.alignment is not None else pp_align.LEFT


def paragraphs_ok(s1: Any, s2: Any, o: PptxOptions) -> tuple[bool, bool]:
    """Compare text shapes paragraph by paragraph; also say whether any run pair was seen."""
    if o.text and s1.text.strip() != s2.text.strip():
        return False, False
    p1s, p2s = s1.text_frame.paragraphs, s2.text_frame.paragraphs
    if len(p1s) != len(p2s):
        return False, False
    saw_runs = False
    for p1, p2 in zip(p1s, p2s, strict=True):
        if o.alignment and alignment(p1) != alignment(p2):
            return False, saw_runs
        if o.text and p1.text != p2.text:
            return False, saw_runs
        if o.indent and p1.level != p2.level and not {p1.level, p2.level} <= {0, 1}:
            return False, saw_runs
        runs1, runs2 = _runs(p1, p2), _runs(p2, p1)
        if o.run_count and len(runs1) != len(runs2):
            return False, saw_runs
        for r1, r2 in zip(runs1, runs2, strict=False):
            saw_runs = True
            if not _run_ok(r1, r2, o):
                return False, saw_runs
    return True, saw_runs


def table_ok(s1: Any, s2: Any, o: PptxOptions) -> bool:
    """Compare table cells' paragraph and run counts and their runs' formatting.

    Colour is compared when examined; bold, italic and underline always (as in OSWorld).
    """
    if not getattr(s2, "has_table", False):
        return False
    cell_runs = dataclasses.replace(
        o,
        font_name=False,
        font_size=False,
        font_bold=True,
        font_italic=True,
        font_underline=True,
        strike_through=False,
    )
    t1, t2 = s1.table, s2.table
    if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
        return False
    for row in range(len(t1.rows)):
        for col in range(len(t1.columns)):
            p1s = t1.cell(row, col).text_frame.paragraphs
            p2s = t2.cell(row, col).text_frame.paragraphs
            if len(p1s) != len(p2s):
                return False
            for p1, p2 in zip(p1s, p2s, strict=True):
                runs1, runs2 = _runs(p1, p2), _runs(p2, p1)
                if o.run_count and len(runs1) != len(runs2):
                    return False
                pairs = zip(runs1, runs2, strict=False)
                if not all(_run_ok(r1, r2, cell_runs) for r1, r2 in pairs):
                    return False
    return True


Bullet = tuple[Any, str, str, str]


def slide_bullets(slide: Any) -> list[Bullet]:
    """(level, bullet char, text, colour) of every non-blank paragraph in the slide's XML."""
    root = ElementTree.fromstring(slide.part.blob)
    bullets = []
    for paragraph in root.iter(f"{_A}p"):
        ppr = paragraph.find(f"{_A}pPr")
        level: Any = "No Level"
        char, color = "No Bullet", "No Color"
        if ppr is not None:
            level = ppr.get("lvl")
            bu_char = ppr.find(f"{_A}buChar")
            char = bu_char.get("char", "") if bu_char is not None else "No Bullet"
            clr = ppr.find(f"{_A}buClr/{_A}srgbClr")
            color = clr.get("val", "") if clr is not None else "No Color"
        text = "".join(t.text or "" for t in paragraph.iter(f"{_A}t"))
        if text.strip():
            bullets.append((level, char, text, color))
    return bullets


def bullets_equal(b1: list[Bullet], b2: list[Bullet]) -> bool:
    """Same texts and bullet characters; levels only matter where a bullet shows.

    Bullet colours are not compared: themes paint them differently.
    """
    if len(b1) != len(b2):
        return False
    for (lvl1, ch1, text1, _), (lvl2, ch2, text2, _) in zip(b1, b2, strict=True):
        if text1 != text2 or ch1 != ch2:
            return False
        if (ch1 != "No Bullet" or ch2 != "No Bullet") and (lvl1 or "0") != (lvl2 or "0"):
            return False
    return True
