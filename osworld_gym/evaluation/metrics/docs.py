"""Document text metrics: ``compare_docx_files`` and its line-based variants.

``.docx`` files are read with python-docx, ``.odt`` files with odfpy.

Formatting checks (tables, spacing, fonts, images) are in ``.docs_format``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from osworld_gym.evaluation.metrics._deps import fuzz_ratio, require

logger = logging.getLogger(__name__)


def _odt_paragraphs(path: str) -> list[str]:
    """Paragraph texts of an ``.odt``: direct text and the text directly inside spans.

    Deeper nesting (links, spans in spans) is skipped, as OSWorld's reader does.
    """
    opendocument = require("odf.opendocument")
    odf_text = require("odf.text")
    document = opendocument.load(path)
    texts = []
    for paragraph in document.getElementsByType(odf_text.P):
        parts = []
        for node in paragraph.childNodes:
            if node.nodeType == node.TEXT_NODE:
                parts.append(node.data)
            elif node.nodeType == node.ELEMENT_NODE and node.tagName == "text:span":
                parts.extend(c.data for c in node.childNodes if c.nodeType == c.TEXT_NODE)
        texts.append("".join(parts))
    return texts


def docx_paragraphs(path: str) -> list[str]:
    """Texts of a ``.docx``'s body paragraphs (tables and headers excluded)."""
    return [p.text for p in require("docx").Document(path).paragraphs]


def _load_paragraphs(file1: str, file2: str) -> tuple[list[str], list[str]] | None:
    """Both documents' paragraphs, or ``None`` when the types differ or a file is unreadable."""
    if file1.endswith(".docx") and file2.endswith(".docx"):
        reader = docx_paragraphs
    elif file1.endswith(".odt") and file2.endswith(".odt"):
        reader = _odt_paragraphs
    else:
        logger.info("compare_docx_files: unsupported or mismatched types %s, %s", file1, file2)
        return None
    try:
        return reader(file1), reader(file2)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document (zip, XML) scores 0, as in OSWorld
        logger.info("compare_docx_files: cannot read documents: %s", e)
        return None


def _joined(paragraphs: list[str], ignore_case: bool) -> str:
    """Paragraphs joined with all whitespace runs collapsed to one space.

    Example:
        >>> _joined(["A  b", "", "C"], ignore_case=True)
        'a b c'
    """
    text = re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()
    return text.lower() if ignore_case else text


def _paragraph_scores(p1s: list[str], p2s: list[str], options: dict[str, Any]) -> float:
    """Paragraph-by-paragraph comparison (``ignore_blanks=False``)."""
    if len(p1s) != len(p2s):
        return 0.0
    fold = str.lower if options.get("ignore_case", False) else str
    if not options.get("fuzzy_match", False):
        return float(all(fold(a) == fold(b) for a, b in zip(p1s, p2s, strict=True)))
    if not p1s:
        return 1.0
    total = 0.0
    for a, b in zip(p1s, p2s, strict=True):
        total += fuzz_ratio(fold(a), fold(b)) / 100.0
    return total / len(p1s)


def compare_docx_files(result: str | None, expected: str | None, **options: Any) -> float:
    """Compare the text of two ``.docx`` (or two ``.odt``) documents.

    Args:
        result: Path of the document the agent saved.
        expected: Path of the reference document.
        **options: OSWorld's, with its defaults:

            * ``ignore_blanks`` (True): compare the whole texts with whitespace runs collapsed
              (False: paragraph by paragraph, counts must match);
            * ``ignore_case`` (False);
            * ``ignore_order`` (False): sort the paragraphs first;
            * ``delete_empty_lines`` (False): drop blank paragraphs first;
            * ``content_only`` (False): return the fuzzy similarity of the collapsed texts;
            * ``fuzzy_match`` (False): return the similarity instead of exact equality (a
              ``fuzzy_match_threshold`` is ignored, as OSWorld's code ignores it).

    Returns:
        1.0/0.0, or a similarity in [0, 1] with ``content_only`` / ``fuzzy_match``; 0.0 when a
        file is missing, unreadable, or the two are of different types.
    """
    if not result or not expected:
        return 0.0
    loaded = _load_paragraphs(result, expected)
    if loaded is None:
        return 0.0
    p1s, p2s = loaded
    if options.get("ignore_order", False):
        p1s, p2s = sorted(p1s), sorted(p2s)
    if options.get("delete_empty_lines", False):
        p1s, p2s = [p for p in p1s if p.strip()], [p for p in p2s if p.strip()]
    ignore_case = options.get("ignore_case", False)
    if options.get("content_only", False):
        return fuzz_ratio(_joined(p1s, ignore_case), _joined(p2s, ignore_case)) / 100.0
    if not options.get("ignore_blanks", True):
        return _paragraph_scores(p1s, p2s, options)
    text1, text2 = _joined(p1s, ignore_case), _joined(p2s, ignore_case)
    if options.get("fuzzy_match", False):
        return fuzz_ratio(text1, text2) / 100.0
    return float(text1 == text2)


def compare_docx_files_and_ignore_new_lines(
    result: str | None, expected: str | None, **options: Any
) -> float:
    """Like ``compare_docx_files()`` on ``.docx`` files after dropping empty paragraphs.

    Args:
        result: Path of the document the agent saved.
        expected: Path of the reference document.
        **options: ``ignore_blanks`` (True): compare the collapsed whole texts; False:
            paragraph lists must be equal.
    """
    if not result or not expected:
        return 0.0
    if not (result.endswith(".docx") and expected.endswith(".docx")):
        return 0.0
    try:
        p1s = [p for p in docx_paragraphs(result) if p != ""]
        p2s = [p for p in docx_paragraphs(expected) if p != ""]
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document scores 0
        logger.info("compare_docx_files_and_ignore_new_lines: %s", e)
        return 0.0
    if options.get("ignore_blanks", True):
        return float(_joined(p1s, False) == _joined(p2s, False))
    return float(p1s == p2s)


def compare_docx_lines(result: str | None, expected: str | None) -> float:
    """1 when both documents have the same set of non-blank, stripped paragraphs."""
    if not result or not expected:
        return 0.0
    try:
        lines1 = {p.strip() for p in docx_paragraphs(result) if p.strip()}
        lines2 = {p.strip() for p in docx_paragraphs(expected) if p.strip()}
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document scores 0
        logger.info("compare_docx_lines: %s", e)
        return 0.0
    return float(lines1 == lines2)
