"""Archive and e-book metrics: zip/tar archives compared member by member, PDF text, EPUB.

Archives are unpacked into a private temporary folder (OSWorld unpacks next to the inputs);
nothing is left behind. Text is extracted with the library OSWorld uses in each place, since
extractors lay text out differently and partial scores follow the text: PyMuPDF for
``compare_pdfs`` (and ``compare_archive`` of PDFs), pypdf for ``compare_zip_files``.
"""

from __future__ import annotations

import difflib
import io
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from osworld_gym.evaluation.metrics import (
    audio_video,
    docs,
    files,
    images,
    slides,
    table,
    vscode,
)
from osworld_gym.evaluation.metrics._deps import fuzz_ratio, require

logger = logging.getLogger(__name__)

_ZIP_PDF_SIMILARITY = 0.95  # compare_zip_files: a PDF member passes at this text similarity


def pdf_text(source: str | Path | bytes) -> str:
    """All pages' text of a PDF (a path or the file's bytes) as pypdf extracts it, joined."""
    reader_cls = require("pypdf").PdfReader
    reader = reader_cls(io.BytesIO(source) if isinstance(source, bytes) else source)
    return "".join(page.extract_text() or "" for page in reader.pages)


def pymupdf_text(path: str | Path) -> str:
    """All pages' text of a PDF as PyMuPDF's ``Page.get_text()`` lays it out, stripped.

    PyMuPDF ends every line with a newline, pypdf does not end a page's last line: the
    extractors give different texts (and fuzzy ratios) for the same file.
    """
    pymupdf = require("pymupdf")
    with pymupdf.open(path) as document:
        return "".join(page.get_text() for page in document).strip()


def compare_pdfs(result: Any, expected: Any) -> float:
    """Mean text similarity (rapidfuzz ratio / 100) of PDFs paired by position (PyMuPDF text).

    Args:
        result: A path or a list of paths.
        expected: A path or a list of paths (the mean is over this list).

    Returns:
        The mean similarity; a pair that cannot be read (missing, not a PDF) counts 0.

    Raises:
        DependencyNotInstalled: PyMuPDF or rapidfuzz is missing.
    """
    if not isinstance(expected, list):
        result, expected = [result], [expected]
    if not expected:
        return 0.0
    total = 0.0
    for got, want in zip(result, expected, strict=False):
        try:
            total += fuzz_ratio(pymupdf_text(got), pymupdf_text(want)) / 100.0
        except ImportError:
            raise  # a missing library is an installation problem, never a score
        except Exception as e:  # an unreadable agent PDF counts 0 for its pair, as in OSWorld
            logger.info("compare_pdfs: cannot compare %s and %s: %s", got, want, e)
    return total / len(expected)


def _unpack(archive: str, folder: str) -> None:
    try:
        shutil.unpack_archive(archive, folder, filter="data")  # refuse unsafe tar members
    except TypeError:  # Python without archive filters
        shutil.unpack_archive(archive, folder)


_MEMBER_METRICS: dict[str, Callable[..., float]] = {
    "text": vscode.compare_text_file,
    "pdf": compare_pdfs,
    "docx": docs.compare_docx_files,
    "ppt": slides.compare_pptx_files,
    "image": images.compare_images,
    "csv": files.compare_csv,
    "table": table.compare_table,
    "audio": audio_video.compare_audios,
    "video": audio_video.compare_videos,
}
ARCHIVE_FILE_TYPES = frozenset(_MEMBER_METRICS)


def _member_metric(file_type: str) -> Callable[..., float]:
    if file_type not in _MEMBER_METRICS:
        raise ValueError(
            f"compare_archive: unsupported file_type {file_type!r} "
            f"(supported: {sorted(_MEMBER_METRICS)})"
        )
    return _MEMBER_METRICS[file_type]


def compare_archive(result: str | None, expected: str | None, **options: Any) -> float:
    """Unpack two archives and score the files of one folder pairwise.

    Args:
        result: Path of the archive the agent made.
        expected: Path of the reference archive.
        **options: ``file_path`` (folder inside the archives, ``""``), ``file_type``
            (``text`` (default), ``pdf``, ``docx``, ``ppt``, ``image``, ``csv``, ``table``,
            ``audio``, ``video``: the metric of that name scores each pair of files); the rest
            is passed to the per-file metric.

    Returns:
        0.0 when the sorted file names differ or the folder is empty (OSWorld divides by the
        file count and fails there); else the mean per-file score.
    """
    if not result or not expected:
        return 0.0
    options = dict(options)
    file_path = options.pop("file_path", "")
    metric = _member_metric(options.pop("file_type", "text"))
    with tempfile.TemporaryDirectory(prefix="osworld-archive-") as tmp:
        folders = [os.path.join(tmp, "pred"), os.path.join(tmp, "gold")]
        try:
            _unpack(result, folders[0])
        except (shutil.ReadError, OSError, ValueError) as e:
            logger.info("compare_archive: cannot unpack %s: %s", result, e)
            return 0.0
        _unpack(expected, folders[1])
        listings = []
        for folder in folders:
            target = os.path.join(folder, file_path)
            listings.append(sorted(os.listdir(target)) if os.path.isdir(target) else None)
        if not listings[0] or listings[0] != listings[1]:
            return 0.0
        scores = [
            metric(
                os.path.join(folders[0], file_path, name),
                os.path.join(folders[1], file_path, name),
                **options,
            )
            for name in listings[0]
        ]
    return sum(scores) / len(scores)


def compare_zip_files(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when two zips hold the same member names with equal bytes.

    PDF members pass on a text similarity (difflib ratio of pypdf's text, as OSWorld reads
    them here) of at least 0.95 instead.
    """
    if not result or not expected:
        return 0.0
    try:
        with zipfile.ZipFile(result) as got, zipfile.ZipFile(expected) as want:
            names = set(got.namelist())
            if names != set(want.namelist()):
                return 0.0
            for name in names:
                a, b = got.read(name), want.read(name)
                if name.lower().endswith(".pdf"):
                    ratio = difflib.SequenceMatcher(None, pdf_text(a), pdf_text(b)).ratio()
                    if ratio < _ZIP_PDF_SIMILARITY:
                        return 0.0
                elif a != b:
                    return 0.0
    except zipfile.BadZipFile as e:
        logger.info("compare_zip_files: %s", e)
        return 0.0
    return 1.0


def _epub_parts(path: str) -> list[tuple[str, str]] | None:
    """(member name, normalised text) pairs of an EPUB, sorted by name.

    The parts are ``toc.ncx`` without ``navPoint`` lines, ``content.opf`` without
    ``dc:identifier`` lines (ids change on every export) and the pretty-printed ``.html``
    files. Empty for a file that is not a zip; ``None`` where OSWorld's reader fails: a part
    that is not UTF-8, or an ``.html`` member inside a folder (OSWorld writes each part to a
    scratch folder without creating subfolders).
    """
    parts: list[tuple[str, str]] = []
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            for member, drop in (("toc.ncx", "navPoint"), ("content.opf", "dc:identifier")):
                if member in names:
                    lines = zf.read(member).decode("utf-8").splitlines()
                    parts.append((member, "".join(f"{s}\n" for s in lines if drop not in s)))
            html = require("lxml.html")
            for member in names:
                if not member.endswith(".html"):
                    continue
                if "/" in member:
                    logger.info("compare_epub: %s: %s is in a folder", path, member)
                    return None
                raw = zf.read(member).decode("utf-8")
                tree = html.fromstring(raw.replace("\n", "").replace("\r", "").encode())
                parts.append((member, html.tostring(tree, pretty_print=True, encoding="unicode")))
    except zipfile.BadZipFile as e:
        logger.info("compare_epub: %s is not an EPUB: %s", path, e)
        return []
    except UnicodeDecodeError as e:
        logger.info("compare_epub: %s has a part that is not UTF-8: %s", path, e)
        return None
    return sorted(parts)


def _line_ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(a=a.splitlines(), b=b.splitlines()).ratio()


def compare_epub(result: str | None, expected: str | None) -> float:
    """Mean line similarity (difflib) of the EPUBs' normalised parts, paired in name order.

    Returns:
        The mean over the result's parts; 0.0 when the result is missing or not a zip, or
        where OSWorld's reader fails (see ``_epub_parts()``).
    """
    if result is None or expected is None:
        return 0.0
    try:
        got, want = _epub_parts(result), _epub_parts(expected)
    except OSError as e:  # a missing file: OSWorld fails
        logger.info("compare_epub: cannot read %s or %s: %s", result, expected, e)
        return 0.0
    if not got or want is None:
        return 0.0
    total = sum(_line_ratio(a, b) for (_, a), (_, b) in zip(got, want, strict=False))
    return total / len(got)
