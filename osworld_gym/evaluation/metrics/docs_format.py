"""Document formatting metrics over ``.docx`` files (python-docx).

Tables, line spacing, fonts, subscripts, alignment, page breaks, footers, embedded images.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics.docs import compare_docx_files

logger = logging.getLogger(__name__)

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def open_documents(*paths: str | None) -> list[Any] | None:
    """python-docx documents for every path; ``None`` when one is missing or unreadable."""
    if not all(paths):
        return None
    document = require("docx").Document
    try:
        return [document(p) for p in paths]
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # a corrupt document (zip, XML) scores 0, as in OSWorld
        logger.info("cannot open document: %s", e)
        return None


def compare_docx_tables(result: str | None, expected: str | None) -> float:
    """1 when both documents have the same number of tables, shapes and stripped cell texts."""
    docs = open_documents(result, expected)
    if docs is None:
        return 0.0
    tables1, tables2 = docs[0].tables, docs[1].tables
    if len(tables1) != len(tables2):
        return 0.0
    for t1, t2 in zip(tables1, tables2, strict=True):
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return 0.0
        for i in range(len(t1.rows)):
            for j in range(len(t1.columns)):
                if t1.cell(i, j).text.strip() != t2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


def compare_line_spacing(result: str | None, expected: str | None) -> float:
    """1 when the texts match and every paragraph has the same line spacing.

    The texts are compared by ``compare_docx_files()`` with its defaults.
    """
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    docs = open_documents(result, expected)
    if docs is None:
        return 0.0
    p1s, p2s = docs[0].paragraphs, docs[1].paragraphs
    if len(p1s) != len(p2s):
        return 0.0
    return float(
        all(
            a.paragraph_format.line_spacing == b.paragraph_format.line_spacing
            for a, b in zip(p1s, p2s, strict=True)
        )
    )


def compare_font_names(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when every run of every body paragraph names the font ``rules["font_name"]``."""
    docs = open_documents(result)
    if docs is None:
        return 0.0
    want = rules["font_name"]
    return float(all(run.font.name == want for p in docs[0].paragraphs for run in p.runs))


def compare_subscript_contains(result: str | None, expected: str | None) -> float:
    """1 when some run is subscript in both documents at the same paragraph and run index."""
    docs = open_documents(result, expected)
    if docs is None:
        return 0.0
    for p1, p2 in zip(docs[0].paragraphs, docs[1].paragraphs, strict=False):
        for r1, r2 in zip(p1.runs, p2.runs, strict=False):
            if r1.font.subscript and r2.font.subscript:
                return 1.0
    return 0.0


def is_first_line_centered(result: str | None) -> float:
    """1 when the first paragraph is centre-aligned."""
    docs = open_documents(result)
    if docs is None or not docs[0].paragraphs:
        return 0.0
    center = require("docx.enum.text").WD_PARAGRAPH_ALIGNMENT.CENTER
    return float(docs[0].paragraphs[0].paragraph_format.alignment == center)


def contains_page_break(result: str | None, rules: Mapping[str, Any] | None = None) -> float:
    """1 when body runs hold a page break (exactly ``rules["page_break_count"]`` if given)."""
    docs = open_documents(result)
    if docs is None:
        return 0.0
    count = sum(
        1
        for paragraph in docs[0].paragraphs
        for run in paragraph.runs
        for br in run.element.iter(f"{_W}br")
        if br.get(f"{_W}type") == "page"
    )
    want = (rules or {}).get("page_break_count")
    if want is not None and count != want:
        return 0.0
    return float(count > 0)


def has_page_numbers_in_footers(result: str | None) -> float:
    """1 when the first footer paragraph of every section contains a digit."""
    docs = open_documents(result)
    if docs is None:
        return 0.0
    for section in docs[0].sections:
        paragraphs = section.footer.paragraphs
        text = paragraphs[0].text if paragraphs else ""
        if not any(ch.isdigit() for ch in text):
            return 0.0
    return 1.0


def check_italic_font_size_14(result: str | None, expected: str | None) -> float:
    """1 when the texts match and every italic run is set in 14 pt."""
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    docs = open_documents(result)
    if docs is None:
        return 0.0
    italic_runs = [r for p in docs[0].paragraphs for r in p.runs if r.italic]
    return float(all(r.font.size is not None and r.font.size.pt == 14 for r in italic_runs))


def evaluate_strike_through_last_paragraph(result: str | None, expected: str | None) -> float:
    """1 when the texts match and every run of the last paragraph is struck through."""
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    docs = open_documents(result)
    if docs is None or not docs[0].paragraphs:
        return 0.0
    return float(all(run.font.strike for run in docs[0].paragraphs[-1].runs))


def compare_docx_images(result: str | None, expected: str | None) -> float:
    """1 when both documents embed the same images (decoded pixels, in relation order)."""
    docs = open_documents(result, expected)
    if docs is None:
        return 0.0
    image = require("PIL.Image")

    def images(document: Any) -> list[bytes]:
        blobs = [
            rel.target_part.blob for rel in document.part.rels.values() if "image" in rel.reltype
        ]
        return [image.open(io.BytesIO(b)).tobytes() for b in blobs]

    first, second = images(docs[0]), images(docs[1])
    return float(len(first) == len(second) and first == second)
