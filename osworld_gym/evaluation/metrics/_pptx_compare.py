"""Shape-, paragraph- and run-level comparisons behind ``compare_pptx_files``.

The checks and their order are those of OSWorld's ``compare_pptx_files``: by default as its code
of April 2026, with ``PptxOptions.rules_1_0_2`` as desktop-env 1.0.2's; see
``osworld_gym.evaluation.metrics.slides`` for the options and the differences. Where
OSWorld's code raises (a theme colour read as RGB, a shape python-pptx cannot classify, a size
that is not set) these raise too, so that the evaluator scores such a deck 0 as OSWorld's run
would.
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
_PIC = "{http://schemas.openxmlformats.org/presentationml/2006/main}pic"  # any picture's element
_FREEFORM, _PICTURE, _TABLE = 5, 13, 19  # MSO_SHAPE_TYPE values
# OSWorld's thresholds (EMU) for the task-specific position checks.
_BELOW_TOP = 3600000  # a title/table moved to the bottom starts below this
_RIGHT_OF_LEFT = 4320000  # a shape moved right starts right of this
_ABOVE_TOP = 1980000  # a picture moved up starts above this
_PLACEHOLDER_TEXT = "Elaborate on what you want to discuss."


@dataclasses.dataclass(frozen=True)
class PptxOptions:
    """The ``examine_*`` switches of ``compare_pptx_files()`` (field = name sans prefix)."""

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
    debug: bool = True  # ``enable_debug``: OSWorld's debug lines read both shapes' types
    # desktop-env 1.0.2's rules instead of those of OSWorld's code of 2026.04 (no option key).
    rules_1_0_2: bool = False

    @classmethod
    def from_options(
        cls, options: Mapping[str, Any], *, fixed: bool = False, rules_1_0_2: bool = False
    ) -> PptxOptions:
        """Read OSWorld's option keys; unknown keys are logged and ignored, as OSWorld does.

        Args:
            options: The task's options.
            fixed: Honour ``examine_shape_lenient_height``, which no OSWorld code reads (the
                ``"fixed"`` evaluation mode), and ``examine_run_count`` under either rules;
                otherwise they are ignored like any unknown key where OSWorld ignores them.
            rules_1_0_2: desktop-env 1.0.2's rules, whose code does not read
                ``examine_run_count`` either (2026.04's does).
        """
        names = {f.name for f in dataclasses.fields(cls)} - {"tolerance", "debug", "rules_1_0_2"}
        if not fixed:
            names.discard("shape_lenient_height")
            if rules_1_0_2:
                names.discard("run_count")
        values: dict[str, Any] = {"rules_1_0_2": rules_1_0_2}
        for key, value in options.items():
            if key.startswith("examine_") and key[8:] in names:
                values[key[8:]] = value
            elif key == "approximately_tolerance":
                values["tolerance"] = value
            elif key == "enable_debug":
                values["debug"] = value
            else:
                logger.debug("compare_pptx_files: ignoring option %r", key)
        return cls(**values)


def approx_equal(a: Any, b: Any, tolerance: float) -> bool:
    """Equal, or within ``tolerance`` relative to the larger magnitude (0 only equals 0).

    A size that is not set (``None``) beside one that is raises ``TypeError``, as in OSWorld.

    Example:
        >>> approx_equal(1000, 1004, 0.005), approx_equal(1000, 1010, 0.005)
        (True, False)
    """
    if a == b:
        return True
    if a == 0 or b == 0:
        return False
    return bool(abs(a - b) / max(abs(a), abs(b)) <= tolerance)


def same_geometry(s1: Any, s2: Any, tol: float, *, height: bool = True) -> bool:
    """Left, top, width (and height) approximately equal, tested in that order."""
    attributes = ("left", "top", "width", "height") if height else ("left", "top", "width")
    return all(approx_equal(getattr(s1, a), getattr(s2, a), tol) for a in attributes)


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


def _blank(shape: Any) -> bool:
    """No text: a shape without a text property (picture, table, group, line) or blank text."""
    text = getattr(shape, "text", None)
    return not text or not text.strip()


def _is_picture(shape: Any) -> bool:
    # The element's tag, not ``shape_type``: that raises for shapes python-pptx cannot
    # classify, where OSWorld's exemption reads no type.
    return bool(shape._element.tag == _PIC)


def geometry_exempt(s1: Any, s2: Any, o: PptxOptions) -> bool:
    """Whether the ``shape`` check leaves this pair's geometry alone (2026.04's rules).

    OSWorld's code of 2026.04 skips it where neither shape has text, as decorative shapes
    and empty boxes move between saves. We keep it for pictures: task ``e4ef0baf`` asks for
    a picture's height with the default ``examine_shape`` alone to check it, which the
    exemption would make any height pass (a decision by the task files; 1.0.2 compares
    pictures too).
    """
    if o.rules_1_0_2:
        return False
    return _blank(s1) and _blank(s2) and not (_is_picture(s1) or _is_picture(s2))


def shape_checks_ok(idx: int, s1: Any, s2: Any, o: PptxOptions) -> bool:
    """OSWorld's per-shape position and size checks, in its order.

    ``idx`` is the 1-based slide number (the task-specific checks test fixed slides).
    """
    tol = o.tolerance
    if o.title_bottom_position:
        if _has_text(s1) and _has_text(s2) and s1.text == s2.text:
            if s1.text == "Product Comparison" and (s1.top <= s2.top or s1.top < _BELOW_TOP):
                return False
        elif not same_geometry(s1, s2, tol):
            return False
    if o.table_bottom_position:
        if idx == 3 and s1.shape_type == _TABLE and s2.shape_type == _TABLE:
            if s1.top <= s2.top or s1.top < _BELOW_TOP:
                return False
        elif not same_geometry(s1, s2, tol):
            return False
    if o.right_position and idx == 2 and not _has_text(s1) and not _has_text(s2):
        if s1.left <= s2.left or s1.left < _RIGHT_OF_LEFT:
            return False
    if o.top_position and idx == 2 and s1.shape_type == _PICTURE and s2.shape_type == _PICTURE:
        if s1.top >= s2.top or s1.top > _ABOVE_TOP:
            return False
    if o.shape_for_shift_size and not same_geometry(s1, s2, tol):
        if not (_has_text(s1) and _has_text(s2) and s1.text == s2.text == _PLACEHOLDER_TEXT):
            return False
    # OSWorld compares the geometry before it reads the switch, so an unset size beside a set
    # one raises even with the check off.
    if not same_geometry(s1, s2, tol) and o.shape and not geometry_exempt(s1, s2, o):
        return False
    if o.shape_lenient_height and not same_geometry(s1, s2, tol, height=False):
        if not geometry_exempt(s1, s2, o):
            return False
    if o.image_size:
        if s1.shape_type == _PICTURE and s2.shape_type == _PICTURE:
            if not (
                approx_equal(s1.width, s2.width, tol) and approx_equal(s1.height, s2.height, tol)
            ):
                return False
        elif not same_geometry(s1, s2, tol):
            return False
    if o.modify_height:
        no_text = not _has_text(s1) and not _has_text(s2)
        if no_text or (s1.shape_type == _FREEFORM and s2.shape_type == _FREEFORM):
            if not approx_equal(s1.height, s2.height, tol):
                return False
        elif not same_geometry(s1, s2, tol):
            return False
    return True


def _falsy_equal(a: Any, b: Any) -> bool:
    """Bold/italic: equal, or both unset/False."""
    return a == b or (a in (None, False) and b in (None, False))


def _underline_ok(u1: Any, u2: Any) -> bool:
    if u1 == u2:
        return True
    if u1 is not None and u2 is not None:
        return False
    return not ((u1 is None and u2 is True) or (u1 is True and u2 is None))


def _colour_ok(f1: Any, f2: Any) -> bool:
    """Run colours: compared only where both are RGB colours."""
    if hasattr(f1.color, "rgb") and hasattr(f2.color, "rgb"):
        return bool(f1.color.rgb == f2.color.rgb)
    return True


def _strike(font: Any) -> str:
    # python-pptx has no strike-through API; its run properties element carries it.
    return str(font._element.attrib.get("strike", "noStrike"))


def run_ok(r1: Any, r2: Any, o: PptxOptions) -> bool:
    """A text shape's runs: the examined font properties."""
    f1, f2 = r1.font, r2.font
    return not (
        (o.font_name and f1.name != f2.name)
        or (o.font_size and f1.size != f2.size)
        or (o.font_bold and not _falsy_equal(f1.bold, f2.bold))
        or (o.font_italic and not _falsy_equal(f1.italic, f2.italic))
        or (o.color_rgb and not _colour_ok(f1, f2))
        or (o.font_underline and not _underline_ok(f1.underline, f2.underline))
        or (o.strike_through and _strike(f1) != _strike(f2))
    )


def _table_run_ok(r1: Any, r2: Any, o: PptxOptions) -> bool:
    """A table cell's runs: colour when examined; bold, italic and underline always."""
    f1, f2 = r1.font, r2.font
    return not (
        (o.color_rgb and not _colour_ok(f1, f2))
        or not _falsy_equal(f1.bold, f2.bold)
        or not _falsy_equal(f1.italic, f2.italic)
        or not _underline_ok(f1.underline, f2.underline)
    )


def compared_runs(p1: Any, p2: Any, o: PptxOptions) -> tuple[list[Any], list[Any]]:
    """The runs of two paragraphs that are counted and compared.

    Under 2026.04's rules, where both paragraphs are blank only runs with text count, so an
    empty paragraph with or without an empty run (saves differ there) compares equal; as a
    blank paragraph has no such run, nothing of theirs is compared.
    """
    r1s, r2s = list(p1.runs), list(p2.runs)
    if not o.rules_1_0_2 and not p1.text.strip() and not p2.text.strip():
        r1s = [r for r in r1s if r.text.strip()]
        r2s = [r for r in r2s if r.text.strip()]
    return r1s, r2s


def levels_ok(l1: int, l2: int, o: PptxOptions) -> bool:
    """Paragraph levels: equal; under 2026.04's rules levels 0 and 1 also count as equal."""
    return l1 == l2 or (not o.rules_1_0_2 and l1 in (0, 1) and l2 in (0, 1))


def alignment(paragraph: Any) -> Any:
    pp_align = require("pptx.enum.text").PP_ALIGN
    return paragraph.alignment if paragraph.alignment is not None else pp_align.LEFT


def table_ok(s1: Any, s2: Any, o: PptxOptions) -> bool:
    """Compare table cells' paragraph and run counts and their runs' formatting."""
    t1, t2 = s1.table, s2.table  # a second shape that is no table raises, as in OSWorld
    if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
        return False
    for row in range(len(t1.rows)):
        for col in range(len(t1.columns)):
            p1s = t1.cell(row, col).text_frame.paragraphs
            p2s = t2.cell(row, col).text_frame.paragraphs
            if len(p1s) != len(p2s):
                return False
            for p1, p2 in zip(p1s, p2s, strict=True):
                r1s, r2s = compared_runs(p1, p2, o)
                if len(r1s) != len(r2s) and o.run_count:
                    return False
                if not all(_table_run_ok(a, b, o) for a, b in zip(r1s, r2s, strict=False)):
                    return False
    return True


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
        if o.indent and not levels_ok(p1.level, p2.level, o):
            return False, saw_runs
        r1s, r2s = compared_runs(p1, p2, o)
        if len(r1s) != len(r2s) and o.run_count:
            return False, saw_runs
        for r1, r2 in zip(r1s, r2s, strict=False):
            saw_runs = True
            if not run_ok(r1, r2, o):
                return False, saw_runs
    return True, saw_runs


Bullet = tuple[Any, Any, str, Any]
_NO_BULLET = "No Bullet"  # OSWorld's marker for a paragraph without a bullet character


def slide_bullets(slide: Any) -> list[Bullet] | None:
    """(level, bullet char, text, colour) of every non-blank paragraph of the slide's XML.

    ``None`` where OSWorld's extraction fails (an empty ``a:t``), which skips the comparison.
    """
    root = ElementTree.fromstring(slide.part.blob)
    bullets = []
    for paragraph in root.iter(f"{_A}p"):
        ppr = paragraph.find(f"{_A}pPr")
        level: Any = "No Level"
        char: Any = _NO_BULLET
        color: Any = "No Color"
        if ppr is not None:
            level = ppr.get("lvl")
            bu_char = ppr.find(f"{_A}buChar")
            char = bu_char.get("char") if bu_char is not None else _NO_BULLET
            clr = ppr.find(f"{_A}buClr/{_A}srgbClr")
            color = clr.get("val") if clr is not None else "No Color"
        texts = [t.text for t in paragraph.iter(f"{_A}t")]
        if None in texts:
            return None
        text = "".join(texts)  # type: ignore[arg-type]
        if text.strip():
            bullets.append((level, char, text, color))
    return bullets


def bullets_equal(
    b1: list[Bullet] | None, b2: list[Bullet] | None, *, rules_1_0_2: bool = False
) -> bool:
    """Same texts, bullet characters and levels (unset = ``"0"``); colours are not compared.

    Under 2026.04's rules the levels count only where either paragraph shows a bullet: without
    one, saves write the level differently while the slide looks the same. Where either list
    could not be read, the comparison is skipped (True), as in OSWorld.
    """
    if b1 is None or b2 is None:
        return True
    if len(b1) != len(b2):
        return False
    for (lvl1, ch1, text1, _), (lvl2, ch2, text2, _) in zip(b1, b2, strict=True):
        if text1 != text2 or ch1 != ch2:
            return False
        if not rules_1_0_2 and ch1 == ch2 == _NO_BULLET:
            continue
        if ("0" if lvl1 is None else lvl1) != ("0" if lvl2 is None else lvl2):
            return False
    return True
