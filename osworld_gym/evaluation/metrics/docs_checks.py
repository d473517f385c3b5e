"""Document task metrics beyond text and format equality: tab stops, colours, highlights, lists.

OSWorld's ``docs`` module (task-specific part). ``.docx`` files are read with python-docx,
``.odt`` content as XML. A missing path or an unreadable document scores 0.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from osworld_gym.evaluation.metrics._color import rgb_difference
from osworld_gym.evaluation.metrics._deps import fuzz_ratio, require
from osworld_gym.evaluation.metrics.docs import compare_docx_files, docx_paragraphs
from osworld_gym.evaluation.metrics.docs_format import open_documents

logger = logging.getLogger(__name__)

_VOWELS = "aeiou"
_RED, _BLUE = (255, 0, 0), (0, 0, 255)
_DEFAULT_DELTA_E = 3.5  # evaluate_colored_words_in_tables' default ``threshold``
_HIGHLIGHT = "#ffff00"
_DEFAULT_BASE = 0.5  # compare_references' default ``reference_base_result``
_BASE_EPSILON = 0.01  # a score must beat the base by this much


def _tab_stops(paragraph: Any, clear: Any, left: Any) -> list[Any]:
    """Explicit tab stops, without cleared ones and the implicit left stop at 0."""
    return [
        t
        for t in paragraph.paragraph_format.tab_stops
        if not (t.alignment == clear or (t.alignment == left and t.position == 0))
    ]


def _words_before_tab_ok(paragraphs: list[Any], number: int, index: int) -> bool:
    for paragraph in paragraphs:
        parts = paragraph.text.split("\t")
        if index >= len(parts) or len(parts[index].split()) != number:
            return False
    return True


def check_tabstops(result: str | None, expected: str | None, **options: Any) -> float:
    """Score the tab stops of every non-blank paragraph against the reference.

    Args:
        result: Path of the agent's ``.docx``.
        expected: Path of the reference ``.docx``.
        **options: ``word_number_split_by_tabstop``: every result paragraph's tab-separated
            part number ``index`` (default 0) must hold exactly that many words.

    Returns:
        0.0 when the non-blank paragraph counts, a paragraph's tab stop count or a stop's
        alignment differ; otherwise ``1 - mean(sum |position difference| / text width)``
        over the paragraphs, the text width being the reference's first section's page
        width without margins.
    """
    docs = open_documents(result, expected)
    if docs is None:
        return 0.0
    p1s = [p for p in docs[0].paragraphs if p.text.strip()]
    p2s = [p for p in docs[1].paragraphs if p.text.strip()]
    if len(p1s) != len(p2s) or not p1s:
        return 0.0
    number = options.get("word_number_split_by_tabstop")
    if number is not None and not _words_before_tab_ok(p1s, number, options.get("index", 0)):
        return 0.0
    section = docs[1].sections[0]
    width = section.page_width - section.left_margin - section.right_margin
    alignment = require("docx.enum.text").WD_TAB_ALIGNMENT
    penalty = 0.0
    for p1, p2 in zip(p1s, p2s, strict=True):
        tabs1 = _tab_stops(p1, alignment.CLEAR, alignment.LEFT)
        tabs2 = _tab_stops(p2, alignment.CLEAR, alignment.LEFT)
        if len(tabs1) != len(tabs2):
            return 0.0
        if any(t1.alignment != t2.alignment for t1, t2 in zip(tabs1, tabs2, strict=True)):
            return 0.0
        shift = sum(abs(t1.position - t2.position) for t1, t2 in zip(tabs1, tabs2, strict=True))
        penalty += shift / width
    return 1.0 - penalty / len(p1s)


def _run_colour_ok(run: Any, threshold: float) -> bool:
    rgb = run.font.color.rgb
    if rgb is None:  # automatic (black) or theme colour: neither red nor blue
        return False
    want = _RED if run.text[0].lower() in _VOWELS else _BLUE
    return rgb_difference(tuple(rgb), want) <= threshold


def evaluate_colored_words_in_tables(
    result: str | None, expected: str | None, **options: Any
) -> float:
    """1 when the texts match and words in tables are red (vowel start) or blue (others).

    Every non-empty run in every table cell must be within CIEDE2000 ΔE ``threshold``
    (option, default 3.5) of pure red when its first letter is a vowel, else of pure blue.
    The texts are compared by ``compare_docx_files()`` with its defaults.
    """
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    docs = open_documents(result)
    if docs is None:
        return 0.0
    threshold = options.get("threshold", _DEFAULT_DELTA_E)
    for table in docs[0].tables:
        for row in table.rows:
            for cell in row.cells:
                runs = [r for p in cell.paragraphs for r in p.runs if r.text]
                if not all(_run_colour_ok(run, threshold) for run in runs):
                    return 0.0
    return 1.0


def _highlighted_span(path: str) -> bool:
    """Whether an ``.odt`` has a span whose automatic style has a ``#ffff00`` background.

    Read with odfpy as OSWorld reads it: every ``text:span`` of the document (``styles.xml``
    included) whose style name is an automatic style of ``content.xml`` with a property
    element whose ``fo:background-color`` is exactly ``#ffff00`` (lower case).
    """
    opendocument = require("odf.opendocument")
    odf_text = require("odf.text")
    document = opendocument.load(path)
    for span in document.getElementsByType(odf_text.Span):
        name = span.getAttribute("stylename")
        if not name:
            continue
        for style in document.automaticstyles.childNodes:
            if style.getAttribute("name") != name:
                continue
            if any(p.getAttribute("backgroundcolor") == _HIGHLIGHT for p in style.childNodes):
                return True
    return False


def check_highlighted_words(result: str | None, expected: str | None) -> float:
    """1 when the texts match and no span of the ``.odt`` is highlighted yellow.

    The texts are compared by ``compare_docx_files()`` with its defaults; a highlight is a
    ``text:span`` whose automatic style sets ``fo:background-color`` to ``#ffff00`` (OSWorld
    compares the text as written: ``#FFFF00`` is no highlight). A result that odfpy cannot
    read raises, as in OSWorld.
    """
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    return float(not _highlighted_span(result))


def _train_lines(path: str) -> tuple[list[str], list[str]] | None:
    """Stripped non-blank paragraphs, and the train ids (field 2 of 4-field lines)."""
    try:
        lines = [p.strip() for p in docx_paragraphs(path) if p.strip()]
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document scores 0
        logger.info("compare_unique_train_records: cannot read %s: %s", path, e)
        return None
    ids = [line.split(",")[1].strip() for line in lines if len(line.split(",")) == 4]
    return lines, ids


def compare_unique_train_records(
    result: str | None, expected: Sequence[str] | None, **options: Any
) -> float:
    """1 when duplicates were removed from a list of ``time, train id, station, platform``.

    Args:
        result: Path of the agent's ``.docx``.
        expected: ``[gold, original]`` paths.
        **options: Ignored (OSWorld accepts and ignores any).

    Returns:
        1.0 when every result line is a line of the original, no train id repeats, the set
        of train ids equals the gold one and the result has as many lines as the gold.
    """
    if not result or not isinstance(expected, list | tuple) or len(expected) < 2:
        return 0.0
    if not expected[0] or not expected[1]:
        return 0.0
    loaded = [_train_lines(p) for p in (result, expected[0], expected[1])]
    if any(x is None for x in loaded):
        return 0.0
    (lines, ids), (gold_lines, gold_ids), (original_lines, _) = loaded  # type: ignore[misc]
    ok = (
        set(lines) <= set(original_lines)
        and len(ids) == len(set(ids))
        and set(ids) == set(gold_ids)
        and len(lines) == len(gold_lines)
    )
    return float(ok)


def _reference_items(paragraphs: list[str], heading: str) -> list[str] | None:
    if heading not in paragraphs:
        return None
    return [p for p in paragraphs[paragraphs.index(heading) + 1 :] if p.strip()]


def compare_references(result: str | None, expected: str | None, **options: Any) -> float:
    """Fuzzy similarity of the reference lists after a ``References`` heading.

    Args:
        result: Path of the agent's ``.docx``.
        expected: Path of the reference ``.docx``.
        **options: ``reference_indicator`` (``"References"``): the heading paragraph;
            ``reference_base_result`` (0.5): the similarity an unedited list already has.
            Other keys (``content_only``) are ignored, as in OSWorld.

    Returns:
        1.0 when neither document has the heading; 0.0 when one lacks it or the item counts
        differ; else, with ``s`` the mean fuzzy ratio of the items paired in order,
        ``(s - base) / (1 - base)`` if ``s >= base + 0.01``, otherwise 0.0.
    """
    if not result or not expected:
        return 0.0
    if not (result.endswith(".docx") and expected.endswith(".docx")):
        return 0.0
    try:
        p1s, p2s = docx_paragraphs(result), docx_paragraphs(expected)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document scores 0
        logger.info("compare_references: %s", e)
        return 0.0
    heading = options.get("reference_indicator", "References")
    refs1, refs2 = _reference_items(p1s, heading), _reference_items(p2s, heading)
    if refs1 is None and refs2 is None:
        return 1.0
    if refs1 is None or refs2 is None or len(refs1) != len(refs2) or not refs1:
        return 0.0
    total = 0.0
    for a, b in zip(refs1, refs2, strict=True):
        total += fuzz_ratio(a, b) / 100.0
    score = total / len(refs1)
    base = options.get("reference_base_result", _DEFAULT_BASE)
    return (score - base) / (1 - base) if score >= base + _BASE_EPSILON else 0.0


def fuzzy_place_math(result: str | None, rules: dict[str, Any]) -> float:
    """Mean best fuzzy match of the document's words against ``rules["expected"]`` answers.

    The document must hold exactly three whitespace-separated words (OSWorld's rule; an
    address written without spaces is one word); each scores its best rapidfuzz ratio
    against the accepted answers, and the score is their mean.
    """
    if not result:
        return 0.0
    try:
        words = [w for p in docx_paragraphs(result) for w in p.split()]
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document scores 0
        logger.info("fuzzy_place_math: %s", e)
        return 0.0
    if len(words) != 3:
        return 0.0
    answers = rules["expected"]
    best = [max((fuzz_ratio(w, a) / 100 for a in answers), default=0.0) for w in words]
    return sum(best) / 3
