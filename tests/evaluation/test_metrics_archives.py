"""Archive, PDF and EPUB metrics on files assembled in tmp_path (PDFs written by hand)."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("pypdf")
pytest.importorskip("lxml.html")

from pdf_files import text_pdf_bytes  # noqa: E402

from osworld_gym.evaluation.metrics import get_metric  # noqa: E402


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica (no PDF writer needed)."""
    return text_pdf_bytes([text])


def write_pdf(path: Path, text: str) -> str:
    path.write_bytes(pdf_bytes(text))
    return str(path)


def make_zip(path: Path, members: dict[str, bytes | str]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return str(path)


def test_compare_pdfs(tmp_path: Path) -> None:
    metric = get_metric("compare_pdfs")
    gold = write_pdf(tmp_path / "gold.pdf", "Quarterly report 2024")
    assert metric(write_pdf(tmp_path / "same.pdf", "Quarterly report 2024"), gold) == 1.0
    close = metric(write_pdf(tmp_path / "close.pdf", "Quarterly report 2025"), gold)
    assert 0.9 < close < 1.0
    assert metric(write_pdf(tmp_path / "other.pdf", "xyz"), gold) < 0.3
    assert metric(None, gold) == 0.0
    not_pdf = tmp_path / "not.pdf"
    not_pdf.write_text("plain text")
    assert metric(str(not_pdf), gold) == 0.0
    # lists are paired by position; the mean is over the expected list
    pair_score = metric([gold, str(not_pdf)], [gold, gold])
    assert pair_score == pytest.approx(0.5)


SLIDES = {"lecture_slides/a.txt": "alpha\n", "lecture_slides/b.txt": "beta\n"}


@pytest.mark.parametrize(
    ("members", "score"),
    [
        (SLIDES, 1.0),
        ({**SLIDES, "lecture_slides/b.txt": "BETA\n"}, 0.5),  # mean over the files
        ({"lecture_slides/a.txt": "alpha\n"}, 0.0),  # file lists differ
        ({"other/a.txt": "alpha\n", "other/b.txt": "beta\n"}, 0.0),  # no such folder
    ],
)
def test_compare_archive_text(tmp_path: Path, members: dict, score: float) -> None:
    metric = get_metric("compare_archive")
    gold = make_zip(tmp_path / "gold.zip", SLIDES)
    result = make_zip(tmp_path / "result.zip", members)
    assert metric(result, gold, file_path="lecture_slides") == score


def test_compare_archive_options_reach_the_file_metric(tmp_path: Path) -> None:
    metric = get_metric("compare_archive")
    gold = make_zip(tmp_path / "gold.zip", {"a.txt": "Alpha"})
    result = make_zip(tmp_path / "result.zip", {"a.txt": "ALPHA"})
    assert metric(result, gold) == 0.0
    assert metric(result, gold, file_type="text", ignore_case=True) == 1.0


def test_compare_archive_pdf_and_tar(tmp_path: Path) -> None:
    metric = get_metric("compare_archive")
    gold = make_zip(tmp_path / "gold.zip", {"book.pdf": pdf_bytes("Chapter one")})
    tar_path = tmp_path / "result.tar.gz"
    write_pdf(tmp_path / "book.pdf", "Chapter one")
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(tmp_path / "book.pdf", arcname="book.pdf")
    assert metric(str(tar_path), gold, file_type="pdf") == 1.0


def pages_pdf(path: Path, pages: list[str]) -> str:
    """A PDF with one page per text (PyMuPDF writes it)."""
    pymupdf = pytest.importorskip("pymupdf")
    document = pymupdf.open()
    for text in pages:
        document.new_page().insert_text((72, 72), text)
    document.save(path)
    return str(path)


def test_compare_pdfs_reads_text_as_pymupdf(tmp_path: Path) -> None:
    """OSWorld's text: PyMuPDF ends every line with a newline; pypdf runs pages together."""
    from osworld_gym.evaluation.metrics.archives import pdf_text

    two_pages = pages_pdf(tmp_path / "two.pdf", ["Alpha", "Beta"])
    one_page = pages_pdf(tmp_path / "one.pdf", ["Alpha\nBeta"])
    assert get_metric("compare_pdfs")(two_pages, one_page) == 1.0
    assert pdf_text(two_pages) == "AlphaBeta" != pdf_text(one_page)  # pypdf would score < 1
    result = make_zip(tmp_path / "r.zip", {"a.pdf": Path(two_pages).read_bytes()})
    gold = make_zip(tmp_path / "g.zip", {"a.pdf": Path(one_page).read_bytes()})
    assert get_metric("compare_archive")(result, gold, file_type="pdf") == 1.0


def test_compare_archive_empty_folder_scores_zero(tmp_path: Path) -> None:
    """OSWorld divides by the number of files, and fails, on an empty folder."""
    metric = get_metric("compare_archive")
    empty = make_zip(tmp_path / "empty.zip", {"docs/": ""})
    assert metric(empty, empty, file_path="docs") == 0.0
    nothing = make_zip(tmp_path / "nothing.zip", {})
    assert metric(nothing, nothing) == 0.0


def test_compare_archive_bad_input(tmp_path: Path) -> None:
    metric = get_metric("compare_archive")
    gold = make_zip(tmp_path / "gold.zip", SLIDES)
    junk = tmp_path / "junk.zip"
    junk.write_text("not an archive")
    assert metric(None, gold) == 0.0
    assert metric(str(junk), gold) == 0.0
    with pytest.raises(ValueError, match="unsupported file_type 'sheet'"):
        metric(gold, gold, file_type="sheet")


def test_compare_zip_files(tmp_path: Path) -> None:
    metric = get_metric("compare_zip_files")
    members = {"essay.txt": "text", "essay.pdf": pdf_bytes("Health professionals in Europe")}
    gold = make_zip(tmp_path / "gold.zip", members)
    assert metric(make_zip(tmp_path / "same.zip", members), gold) == 1.0
    changed_text = {**members, "essay.txt": "other"}
    assert metric(make_zip(tmp_path / "t.zip", changed_text), gold) == 0.0
    changed_pdf = {**members, "essay.pdf": pdf_bytes("Something else entirely")}
    assert metric(make_zip(tmp_path / "p.zip", changed_pdf), gold) == 0.0
    assert metric(make_zip(tmp_path / "m.zip", {"essay.txt": "text"}), gold) == 0.0
    junk = tmp_path / "junk.zip"
    junk.write_text("nope")
    assert metric(str(junk), gold) == 0.0
    assert metric(None, gold) == 0.0


def epub(path: Path, chapter: str, identifier: str = "id-1") -> str:
    return make_zip(
        path,
        {
            "mimetype": "application/epub+zip",
            "toc.ncx": "<ncx>\n<navPoint id='n1'>\n<text>Ch 1</text>\n</ncx>\n",
            "content.opf": f"<package>\n<dc:identifier>{identifier}</dc:identifier>\n</package>\n",
            "chapter1.html": f"<html><body>\n<h1>Chapter 1</h1>\n<p>{chapter}</p></body></html>",
        },
    )


def test_compare_epub(tmp_path: Path) -> None:
    metric = get_metric("compare_epub")
    gold = epub(tmp_path / "gold.epub", "It was a dark night.")
    # identifiers and nav points are ignored; the chapter text decides
    assert metric(epub(tmp_path / "same.epub", "It was a dark night.", "id-2"), gold) == 1.0
    different = metric(epub(tmp_path / "diff.epub", "Something else."), gold)
    assert 0.0 < different < 1.0
    junk = tmp_path / "junk.epub"
    junk.write_text("not a zip")
    assert metric(str(junk), gold) == 0.0
    assert metric(None, gold) == 0.0
