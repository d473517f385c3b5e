"""Parity of the PDF, HTML, archive and e-book metrics with OSWorld's (``chrome``, ``pdf``,
``vscode.compare_zip_files``, ``others.compare_epub``).

PDFs are written at test time with PyMuPDF (a page spec is its text, with ``[img:N]`` /
``[jpg:N]`` marks for an embedded picture drawn from seed ``N``); a few come from LibreOffice
(``soffice --convert-to``, its own profile, one batch per module) for a real exporter's layout.
Archives, EPUBs, HTML files and the office members of archives are made with the standard
library, python-docx, python-pptx and openpyxl.
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixture_marks import needs
from parity_harness import ABSENT, OSWorld, assert_same_score, make_file, real_rules

from osworld_gym.evaluation.metrics.registry import metrics_for

pytestmark = pytest.mark.parity

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
pymupdf = pytest.importorskip("pymupdf")


# --- PDFs ---------------------------------------------------------------------------------


def picture(seed: int, size: tuple[int, int] = (48, 36)) -> Any:
    """A small deterministic picture: noise blobs on a gradient."""
    rng = np.random.default_rng(seed)
    width, height = size
    x, y = np.linspace(0, 1, width)[None, :], np.linspace(0, 1, height)[:, None]
    base = np.stack(np.broadcast_arrays(200 * x, 200 * y, 100 + 0 * x), 2)
    img = Image.fromarray(base.astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(4):
        x0, y0 = int(rng.integers(0, width - 8)), int(rng.integers(0, height - 8))
        colour = tuple(int(v) for v in rng.integers(0, 255, 3))
        draw.rectangle(
            (x0, y0, x0 + int(rng.integers(4, 20)), y0 + int(rng.integers(4, 14))), colour
        )
    return img


def _encoded(img: Any, fmt: str) -> bytes:
    buffer = io.BytesIO()
    img.save(buffer, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
    return buffer.getvalue()


_MARK = re.compile(r"\[(img|jpg|noisy|flat|square|half):(\w+)\]")


def _shape(kind: str, value: str) -> Any:
    """Flat and symmetric pictures: DCT coefficients that are zero up to rounding."""
    if kind == "flat":
        return Image.new("RGB", (40, 40), value)
    img = Image.new("RGB", (64, 64), "white")
    box = (16, 16, 47, 47) if kind == "square" else (0, 0, 31, 63)
    ImageDraw.Draw(img).rectangle(box, fill=value)
    return img


def pdf_bytes(pages: list[str]) -> bytes:
    """A PDF with one page per spec: text lines, ``[img:N]``/``[jpg:N]``/``[noisy:N]`` pictures."""
    document = pymupdf.open()
    for spec in pages:
        page = document.new_page(width=400, height=300)
        text = _MARK.sub("", spec)
        if text.strip():
            page.insert_text((30, 40), text, fontsize=11)
        for index, (kind, seed) in enumerate(_MARK.findall(spec)):
            if kind in ("flat", "square", "half"):
                page.insert_image(
                    pymupdf.Rect(30 + 90 * index, 150, 110 + 90 * index, 210),
                    stream=_encoded(_shape(kind, seed), "PNG"),
                )
                continue
            img = picture(int(seed))
            if kind == "noisy":
                arr = np.asarray(img, dtype=np.int16)
                noise = np.random.default_rng(99).integers(-6, 7, arr.shape)
                img = Image.fromarray(np.clip(arr + noise, 0, 255).astype(np.uint8))
            data = _encoded(img, "JPEG" if kind == "jpg" else "PNG")
            left = 30 + 90 * index
            page.insert_image(pymupdf.Rect(left, 150, left + 80, 210), stream=data)
    data = document.tobytes()
    document.close()
    return data


PdfSpec = list[str] | str | None | Any  # pages; "lo:<name>" (LibreOffice); raw text; ABSENT...


def pdf_file(folder: Path, name: str, spec: PdfSpec, lo: dict[str, Path] | None = None) -> Any:
    """Write the PDF ``spec`` as ``folder/name`` (``.pdf`` added unless ``name`` has a suffix).

    ``spec``: a list of page specs; ``"lo:<stem>"``: the LibreOffice export of that text;
    ``"bytes:<text>"``: a file with that text (not a PDF); ``None``; ``ABSENT``.
    """
    filename = name if "." in name else f"{name}.pdf"
    if isinstance(spec, list):
        return make_file(folder, filename, pdf_bytes(spec))
    if isinstance(spec, str) and spec.startswith("lo:"):
        assert lo is not None
        return make_file(folder, filename, lo[spec[3:]].read_bytes())
    if isinstance(spec, str) and spec.startswith("bytes:"):
        return make_file(folder, filename, spec[6:])
    return make_file(folder, filename, spec)


LO_TEXTS = {
    "letter": "Dear committee,\n\nPlease find the report attached.\nKind regards,\nAda\n",
    "letter2": "Dear committee,\n\nPlease find the reports attached.\nKind regards,\nAda\n",
    "table": "name\tscore\nAda\t3\nBob\t4\n" * 5,
}


@pytest.fixture(scope="module")
@needs("apps")
def lo_pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """PDFs exported by LibreOffice from plain texts (one soffice run)."""
    from office_convert import convert

    folder = tmp_path_factory.mktemp("lo-src")
    sources = []
    for stem, text in LO_TEXTS.items():
        path = folder / f"{stem}.txt"
        path.write_text(text)
        sources.append(path)
    return convert(sources, "pdf", tmp_path_factory.mktemp("lo-pdf"))


_LONG = "The quick brown fox jumps over the lazy dog. " * 8

COMPARE_PDFS = [
    pytest.param(["Hello world"], ["Hello world"], id="same"),
    pytest.param(["Hello world"], ["Hello there world"], id="small-edit"),
    pytest.param(["Hello world"], ["Completely different"], id="different"),
    pytest.param(["Page one", "Page two"], ["Page one", "Page two"], id="two-pages"),
    pytest.param(["Page two", "Page one"], ["Page one", "Page two"], id="pages-swapped"),
    pytest.param(["Page one"], ["Page one", "Page two"], id="missing-page"),
    pytest.param([_LONG], [_LONG.replace("lazy", "sleepy")], id="long-edit"),
    pytest.param(["Line a\nLine b"], ["Line a Line b"], id="line-break"),
    pytest.param(["  padded  "], ["padded"], id="padding"),
    pytest.param(["Zürich café 東京"], ["Zürich café 東京"], id="unicode"),
    pytest.param(["HELLO"], ["hello"], id="case"),
    pytest.param([""], [""], id="both-blank"),
    pytest.param([""], ["text"], id="result-blank"),
    pytest.param(["[img:1]"], ["[img:2]"], id="images-only"),
    pytest.param(["Text [img:1]"], ["Text"], id="image-ignored"),
    pytest.param("lo:letter", "lo:letter", id="lo-same"),
    pytest.param("lo:letter2", "lo:letter", id="lo-edit"),
    pytest.param("lo:table", "lo:letter", id="lo-different"),
    pytest.param(["Dear committee,"], "lo:letter", id="pymupdf-vs-lo"),
    pytest.param(None, ["Hello"], id="none"),
    pytest.param(ABSENT, ["Hello"], id="absent"),
    pytest.param("bytes:not a pdf", ["Hello"], id="not-a-pdf"),
    pytest.param(["Hello"], ABSENT, id="expected-absent"),
    pytest.param(["Hello"], None, id="expected-none"),
]


@pytest.mark.parametrize(("result", "expected"), COMPARE_PDFS)
def test_compare_pdfs(
    osworld: OSWorld,
    tmp_path: Path,
    lo_pdfs: dict[str, Path],
    result: PdfSpec,
    expected: PdfSpec,
) -> None:
    assert_same_score(
        osworld,
        "compare_pdfs",
        pdf_file(tmp_path, "result", result, lo_pdfs),
        pdf_file(tmp_path, "expected", expected, lo_pdfs),
    )


COMPARE_PDF_LISTS = [
    pytest.param([["A"], ["B"]], [["A"], ["B"]], id="both-same"),
    pytest.param([["A"], ["B"]], [["A"], ["C"]], id="one-differs"),
    pytest.param([["A"], ["B"]], [["B"], ["A"]], id="swapped"),
    pytest.param([["A"]], [["A"], ["B"]], id="result-shorter"),
    pytest.param([["A"], ["B"], ["C"]], [["A"], ["B"]], id="result-longer"),
    pytest.param([None, ["B"]], [["A"], ["B"]], id="none-inside"),
    pytest.param([ABSENT, ["B"]], [["A"], ["B"]], id="absent-inside"),
    pytest.param([], [], id="empty-lists"),
    pytest.param(["x"], [["A"]], id="result-path-in-list-vs-list"),
]


@pytest.mark.parametrize(("result", "expected"), COMPARE_PDF_LISTS)
def test_compare_pdfs_lists(
    osworld: OSWorld, tmp_path: Path, result: list[Any], expected: list[Any]
) -> None:
    got = [
        pdf_file(tmp_path, f"r{i}", s) if s != "x" else str(tmp_path / "x.pdf")
        for i, s in enumerate(result)
    ]
    want = [pdf_file(tmp_path, f"e{i}", s) for i, s in enumerate(expected)]
    assert_same_score(osworld, "compare_pdfs", got, want)


def test_compare_pdfs_single_result_list_expected(osworld: OSWorld, tmp_path: Path) -> None:
    """A path against a list: OSWorld pairs the path's characters with the list's PDFs."""
    assert_same_score(
        osworld, "compare_pdfs", pdf_file(tmp_path, "r", ["A"]), [pdf_file(tmp_path, "e", ["A"])]
    )


# --- compare_pdf_images -------------------------------------------------------------------

PDF_IMAGES = [
    pytest.param(["[img:1]"], ["[img:1]"], id="same"),
    pytest.param(["[img:1]"], ["[img:2]"], id="different"),
    pytest.param(["[img:1]"], ["[noisy:1]"], id="noisy"),
    pytest.param(["[jpg:1]"], ["[img:1]"], id="jpeg-vs-png"),
    pytest.param(["[img:1][img:2]"], ["[img:1][img:2]"], id="two-same"),
    pytest.param(["[img:1][img:2]"], ["[img:1][img:3]"], id="two-one-differs"),
    pytest.param(["[img:1]", "[img:2]"], ["[img:1]", "[img:2]"], id="two-pages"),
    pytest.param(["[img:2]", "[img:1]"], ["[img:1]", "[img:2]"], id="pages-swapped"),
    pytest.param(["[img:1][img:2][img:3]"], ["[img:1][img:4][img:3]"], id="two-of-three"),
    pytest.param(["[img:1]"], ["[img:1][img:2]"], id="count-differs"),
    pytest.param(["no pictures"], ["no pictures either"], id="no-images"),
    pytest.param(["no pictures"], ["[img:1]"], id="result-without"),
    pytest.param(["text [img:5]"], ["other text [img:5]"], id="text-ignored"),
    pytest.param(["[img:1]", "[img:1]"], ["[img:1]", "[img:1]"], id="same-image-twice"),
    pytest.param(["[flat:red]"], ["[flat:white]"], id="flat-red-white"),
    pytest.param(["[flat:red]"], ["[flat:blue]"], id="flat-red-blue"),
    pytest.param(["[flat:black]"], ["[flat:grey]"], id="flat-black-grey"),
    pytest.param(["[flat:red]"], ["[half:black]"], id="flat-vs-half"),
    pytest.param(["[square:black]"], ["[half:black]"], id="square-vs-half"),
    pytest.param(["[square:black]"], ["[square:navy]"], id="square-colours"),
    pytest.param(["[half:black][flat:white]"], ["[half:black][flat:grey]"], id="mixed"),
    pytest.param(["[flat:white]"], ["[img:1]"], id="flat-vs-picture"),
    pytest.param(None, ["[img:1]"], id="none"),
    pytest.param(["[img:1]"], None, id="expected-none"),
    pytest.param(ABSENT, ["[img:1]"], id="absent"),
    pytest.param(["[img:1]"], ABSENT, id="expected-absent"),
    pytest.param("bytes:not a pdf", ["[img:1]"], id="not-a-pdf"),
    pytest.param("bytes:not a pdf", "bytes:nor this", id="neither-pdf"),
]


@pytest.mark.parametrize(("result", "expected"), PDF_IMAGES)
def test_compare_pdf_images(
    osworld: OSWorld, tmp_path: Path, result: PdfSpec, expected: PdfSpec
) -> None:
    assert_same_score(
        osworld,
        "compare_pdf_images",
        pdf_file(tmp_path, "receipt", result),
        pdf_file(tmp_path, "receipt_Gold", expected),
    )


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(["[img:1]"], ["[img:2]"], id="different"),
        pytest.param(["[img:1][img:2]"], ["[img:1]"], id="count-differs"),
        pytest.param(["[img:1]"], ["[img:1]"], id="same"),
    ],
)
def test_compare_pdf_images_same_file_name(
    osworld: OSWorld, tmp_path: Path, result: PdfSpec, expected: PdfSpec
) -> None:
    """Two PDFs of one name in two folders (OSWorld copies both to one scratch folder)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert_same_score(
        osworld,
        "compare_pdf_images",
        pdf_file(tmp_path / "a", "receipt", result),
        pdf_file(tmp_path / "b", "receipt", expected),
    )


# --- check_pdf_pages ----------------------------------------------------------------------

_PAGES_RULES = [rules for _, rules in real_rules("check_pdf_pages")] or [
    {"relation": "eq", "ref_value": 1}
]

PDF_PAGES = [
    *[
        pytest.param(pages, rules, id=f"real{i}-{len(pages)}-pages")
        for i, rules in enumerate(_PAGES_RULES)
        for pages in (["one"], ["one", "two"], ["one", "two", "three"])
    ],
    *[
        pytest.param(
            ["a"] * count, {"relation": relation, "ref_value": 2}, id=f"{relation}-{count}"
        )
        for relation in ("eq", "ne", "lt", "le", "gt", "ge")
        for count in (1, 2, 3)
    ],
    pytest.param(["a", "b"], {"relation": "eq", "ref_value": 2.0}, id="float-ref"),
    pytest.param(["a"], {"relation": "is_", "ref_value": 1}, id="operator-name"),
    pytest.param(["a"], {"relation": "equal", "ref_value": 1}, id="unknown-relation"),
    pytest.param(["a"], {"relation": "eq", "ref_value": "1"}, id="text-ref"),
    pytest.param(["a"], {"relation": "lt", "ref_value": "1"}, id="text-ref-lt"),
    pytest.param("lo:table", {"relation": "eq", "ref_value": 1}, id="lo"),
    pytest.param(None, {"relation": "eq", "ref_value": 1}, id="none"),
    pytest.param(ABSENT, {"relation": "eq", "ref_value": 1}, id="absent"),
    pytest.param("bytes:not a pdf", {"relation": "eq", "ref_value": 1}, id="not-a-pdf"),
    pytest.param("bytes:", {"relation": "eq", "ref_value": 0}, id="empty-file"),
]


@pytest.mark.parametrize(("result", "rules"), PDF_PAGES)
def test_check_pdf_pages(
    osworld: OSWorld,
    tmp_path: Path,
    lo_pdfs: dict[str, Path],
    result: PdfSpec,
    rules: dict[str, Any],
) -> None:
    assert_same_score(
        osworld, "check_pdf_pages", pdf_file(tmp_path, "result", result, lo_pdfs), rules
    )


# --- compare_htmls ------------------------------------------------------------------------


def lo_html(rows: list[list[str]], *, sdnum: str = "1033;0;General", title: str = "t") -> str:
    """An HTML table as LibreOffice Calc exports one (``sdval``/``sdnum`` on number cells)."""
    lines = [
        '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">',
        "<html>",
        "<head>",
        '\t<meta http-equiv="content-type" content="text/html; charset=utf-8"/>',
        f"\t<title>{title}</title>",
        '\t<style type="text/css">',
        '\t\tbody,div,table,thead,tbody,tfoot,tr,th,td,p { font-family:"Liberation Sans" }',
        "\t</style>",
        "</head>",
        "<body>",
        '<table cellspacing="0" border="0">',
        '\t<colgroup width="85"></colgroup>',
    ]
    for row in rows:
        lines.append("\t<tr>")
        for cell in row:
            if cell.lstrip("-").isdigit():
                lines.append(
                    f'\t\t<td height="17" align="right" sdval="{cell}" sdnum="{sdnum}">{cell}</td>'
                )
            else:
                lines.append(f'\t\t<td height="17" align="left">{cell}</td>')
        lines.append("\t</tr>")
    lines += ["</table>", "<!-- ************************************************** -->", "</body>"]
    lines += ["</html>", ""]
    return "\n".join(lines)


_ROWS = [["Year", "Value"], ["2021", "150"], ["2022", "170"]]
_BASE = lo_html(_ROWS)

COMPARE_HTMLS = [
    pytest.param(_BASE, _BASE, {"ignore_sdnum": True}, id="same"),
    pytest.param(_BASE, _BASE, {}, id="same-no-option"),
    pytest.param(lo_html(_ROWS, sdnum="1031;0;General"), _BASE, {"ignore_sdnum": True}, id="sdnum"),
    pytest.param(lo_html(_ROWS, sdnum="1031;0;General"), _BASE, {}, id="sdnum-strict"),
    pytest.param(lo_html([*_ROWS, ["2023", "1"]]), _BASE, {"ignore_sdnum": True}, id="extra-row"),
    pytest.param(lo_html(_ROWS[:2]), _BASE, {"ignore_sdnum": True}, id="missing-row"),
    pytest.param(lo_html([["Year", "Value"], ["2021", "151"], ["2022", "170"]]), _BASE, {}, id="v"),
    pytest.param(lo_html(_ROWS, title="other"), _BASE, {}, id="title"),
    pytest.param(_BASE.replace("\t", "  "), _BASE, {}, id="indentation"),
    pytest.param(_BASE.replace("\n", "\r\n"), _BASE, {}, id="crlf"),
    pytest.param(_BASE.replace("\n", ""), _BASE, {}, id="no-newlines"),
    pytest.param(_BASE.replace("<!DOCTYPE", "<!doctype"), _BASE, {}, id="doctype-case"),
    pytest.param(_BASE.split("\n", 1)[1], _BASE, {}, id="no-doctype"),
    pytest.param(_BASE.replace("<!-- *", "<!-- -"), _BASE, {}, id="comment-differs"),
    pytest.param(_BASE.replace('align="left"', 'align="center"'), _BASE, {}, id="attr"),
    pytest.param(_BASE.replace('align="left"', 'align="left" '), _BASE, {}, id="attr-space"),
    pytest.param(
        _BASE.replace('border="0"', 'border="0" class="a  b"'),
        _BASE.replace('border="0"', 'border="0" class="a b"'),
        {},
        id="class-spacing",
    ),
    pytest.param(
        _BASE.replace('border="0"', 'border="0" rel="a  b"'),
        _BASE.replace('border="0"', 'border="0" rel="a b"'),
        {},
        id="rel-spacing-on-table",
    ),
    pytest.param(
        _BASE.replace("<body>", '<body><a rel="x  y" href="#">l</a>'),
        _BASE.replace("<body>", '<body><a rel="x y" href="#">l</a>'),
        {},
        id="rel-spacing-on-a",
    ),
    pytest.param(_BASE.replace(">Year<", "> Year <"), _BASE, {}, id="text-spaces"),
    pytest.param(_BASE.replace(">Year<", "><b>Year</b><"), _BASE, {}, id="bold"),
    pytest.param(_BASE.replace(">Year<", ">Year&nbsp;<"), _BASE, {}, id="nbsp"),
    pytest.param(
        _BASE.replace(">Year<", ">Y&amp;ear<"), _BASE.replace(">Year<", ">Y&ear<"), {}, id="amp"
    ),
    pytest.param(_BASE.replace("<td", "<TD").replace("</td>", "</TD>"), _BASE, {}, id="upper-tags"),
    pytest.param(_BASE.replace("</td>", ""), _BASE, {}, id="unclosed-cells"),
    pytest.param(_BASE + "<p>trailing</p>\n", _BASE, {}, id="content-after-html"),
    pytest.param(_BASE, _BASE + "<p>trailing</p>\n", {}, id="expected-longer"),
    pytest.param("<p>a</p>", "<p>a</p><p>b</p>", {}, id="fragment-prefix"),
    pytest.param("", "", {}, id="both-empty"),
    pytest.param("", _BASE, {}, id="result-empty"),
    pytest.param("<p>Zürich — 東京</p>", "<p>Zürich — 東京</p>", {}, id="unicode"),
    pytest.param(
        "<p>x</p>".encode("latin-1") + "é".encode("latin-1"), "<p>x</p>é", {}, id="latin-1"
    ),
    pytest.param("<style>p {}</style><p>a</p>", "<style>b {}</style><p>a</p>", {}, id="style"),
    pytest.param("<script>x=1</script><p>a</p>", "<p>a</p>", {}, id="script"),
    pytest.param("<pre>a  b</pre>", "<pre>a b</pre>", {}, id="pre-spaces"),
    pytest.param("<pre>  </pre>", "<pre>\n</pre>", {}, id="pre-blank"),
    pytest.param("<p>  </p>", "<p> \t </p>", {}, id="blank-collapses"),
    pytest.param("<p>\n </p>", "<p> </p>", {}, id="blank-newline"),
    pytest.param("<p>a<!-- x -->b</p>", "<p>ab</p>", {}, id="comment-inside"),
    pytest.param("<p>a<!---->b</p>", "<p>a<!-- -->b</p>", {}, id="empty-comment"),
    pytest.param("<?php echo 1 ?><p>a</p>", "<p>a</p>", {}, id="processing-instruction"),
    pytest.param("\ufeff" + _BASE, _BASE, {}, id="bom"),
    pytest.param('<?xml version="1.0"?>\n<p>a</p>', "<p>a</p>", {}, id="xml-declaration"),
    pytest.param("<p>a<br>b</p>", "<p>a<br/>b</p>", {}, id="br"),
    pytest.param("<p>a</b>b</p>", "<p>ab</p>", {}, id="stray-end-tag"),
    pytest.param("<div><p>a</div>", "<div><p>a</p></div>", {}, id="unclosed-p"),
    pytest.param("<template><p>t</p></template>", "<template><p>u</p></template>", {}, id="tpl"),
    pytest.param('<p class="">a</p>', "<p>a</p>", {}, id="empty-class"),
    pytest.param('<td headers="a  b">x</td>', '<td headers="a b">x</td>', {}, id="headers"),
    pytest.param('<p sdnum="1;2">a</p>', '<p sdnum="1;3">a</p>', {"ignore_sdnum": True}, id="sdn"),
    pytest.param(
        '<p sdnum="1;2" id="x">a</p>', '<p sdnum="1;3">a</p>', {"ignore_sdnum": True}, id="sd-id"
    ),
    pytest.param('<p sdnum="1">a</p>', "<p>b</p>", {"ignore_sdnum": True}, id="sdnum-text"),
    pytest.param("<P ALIGN=left>a</P>", '<p align="left">a</p>', {}, id="upper-attrs"),
    pytest.param("<p>a &lt; b</p>", "<p>a < b</p>", {}, id="lt-entity"),
    pytest.param("<p>&#x41;</p>", "<p>A</p>", {}, id="char-ref"),
    pytest.param("<p>\u00a0</p>", "<p> </p>", {}, id="nbsp-char"),
    pytest.param("   ", "<p>a</p>", {}, id="whitespace-only-file"),
    pytest.param("plain text", "plain text", {}, id="no-tags"),
    pytest.param(None, _BASE, {}, id="none"),
    pytest.param(ABSENT, _BASE, {}, id="absent"),
    pytest.param(_BASE, ABSENT, {}, id="expected-absent"),
]


@pytest.fixture(scope="module")
@needs("apps")
def lo_htmls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """HTML tables exported by LibreOffice Calc from CSV files (one soffice run)."""
    from office_convert import convert

    folder = tmp_path_factory.mktemp("lo-csv")
    sources = []
    for stem, text in {
        "survey": "Year,Industry,Value\n2021,All,728\n2021,Mining,12.5\n",
        "survey_edit": "Year,Industry,Value\n2021,All,728\n2021,Mining,12.6\n",
        "survey_text": "Year,Industry,Value\n2021,All,seven\n2021,Mining,12.5\n",
    }.items():
        path = folder / f"{stem}.csv"
        path.write_text(text)
        sources.append(path)
    return convert(sources, "html", tmp_path_factory.mktemp("lo-html"))


@pytest.mark.parametrize(
    ("result", "expected", "options"),
    [
        pytest.param("survey", "survey", {"ignore_sdnum": True}, id="same"),
        pytest.param("survey_edit", "survey", {"ignore_sdnum": True}, id="edited"),
        pytest.param("survey_text", "survey", {"ignore_sdnum": True}, id="text-cell"),
        pytest.param("survey_text", "survey", {}, id="text-cell-strict"),
    ],
)
def test_compare_htmls_libreoffice(
    osworld: OSWorld,
    tmp_path: Path,
    lo_htmls: dict[str, Path],
    result: str,
    expected: str,
    options: dict[str, Any],
) -> None:
    result_html = make_file(tmp_path, "result.html", lo_htmls[result].read_bytes())
    expected_html = make_file(tmp_path, "expected.html", lo_htmls[expected].read_bytes())
    assert_same_score(osworld, "compare_htmls", result_html, expected_html, **options)


@pytest.mark.parametrize(("result", "expected", "options"), COMPARE_HTMLS)
def test_compare_htmls(
    osworld: OSWorld, tmp_path: Path, result: Any, expected: Any, options: dict[str, Any]
) -> None:
    assert_same_score(
        osworld,
        "compare_htmls",
        make_file(tmp_path, "result.html", result),
        make_file(tmp_path, "expected.html", expected),
        **options,
    )


@pytest.mark.parametrize(
    ("result", "expected", "options", "osworld_score", "fixed_score"),
    [
        pytest.param("", _BASE, {"ignore_sdnum": True}, 1.0, 0.0, id="empty-file"),
        pytest.param("  \n", _BASE, {"ignore_sdnum": True}, 1.0, 0.0, id="blank-file"),
        pytest.param(_BASE, _BASE, {"ignore_sdnum": True}, 1.0, 1.0, id="same"),
        pytest.param(
            lo_html(_ROWS, sdnum="1031;0;General"),
            _BASE,
            {"ignore_sdnum": True},
            1.0,
            1.0,
            id="sdnum-ignored",
        ),
        pytest.param(lo_html(_ROWS[:2]), _BASE, {"ignore_sdnum": True}, 0.0, 0.0, id="row-gone"),
    ],
)
def test_fixed_compare_htmls_needs_every_node(
    osworld: OSWorld,
    tmp_path: Path,
    result: str,
    expected: str,
    options: dict[str, Any],
    osworld_score: float,
    fixed_score: float,
) -> None:
    """The default mode scores as OSWorld (an empty file passes); the fixed mode does not."""
    got = make_file(tmp_path, "result.html", result)
    want = make_file(tmp_path, "expected.html", expected)
    outcome = assert_same_score(osworld, "compare_htmls", got, want, **options)
    assert outcome.our_effective_score == osworld_score
    assert metrics_for("fixed")["compare_htmls"](str(got), str(want), **options) == fixed_score


# --- compare_zip_files --------------------------------------------------------------------


def zip_bytes(members: dict[str, bytes | str | list[str]]) -> bytes:
    """A zip of ``members``: bytes/str as they are; a list of page specs as a PDF."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, content in members.items():
            if isinstance(content, list):
                content = pdf_bytes(content)
            zf.writestr(name, content)
    return buffer.getvalue()


_ESSAY = "Recruitment and retention of health professionals across Europe. " * 6

COMPARE_ZIP = [
    pytest.param({"a.txt": "x"}, {"a.txt": "x"}, id="same"),
    pytest.param({"a.txt": "x"}, {"a.txt": "y"}, id="bytes-differ"),
    pytest.param({"a.txt": "x"}, {"b.txt": "x"}, id="names-differ"),
    pytest.param({"a.txt": "x", "b.txt": "y"}, {"b.txt": "y", "a.txt": "x"}, id="order"),
    pytest.param({"a.txt": "x"}, {"a.txt": "x", "b.txt": "y"}, id="missing-member"),
    pytest.param({"d/a.txt": "x"}, {"d/a.txt": "x"}, id="folder"),
    pytest.param({"d/": "", "d/a.txt": "x"}, {"d/a.txt": "x"}, id="folder-entry"),
    pytest.param({}, {}, id="both-empty"),
    pytest.param({"essay.pdf": [_ESSAY]}, {"essay.pdf": [_ESSAY]}, id="pdf-same"),
    pytest.param(
        {"essay.pdf": [_ESSAY.replace("Europe", "Europa", 1)]},
        {"essay.pdf": [_ESSAY]},
        id="pdf-close",
    ),
    pytest.param({"essay.pdf": ["Short text"]}, {"essay.pdf": [_ESSAY]}, id="pdf-different"),
    pytest.param({"essay.PDF": [_ESSAY, "p2"]}, {"essay.PDF": [_ESSAY, "p2"]}, id="pdf-upper"),
    pytest.param({"essay.pdf": [""]}, {"essay.pdf": [""]}, id="pdf-blank"),
    pytest.param(
        {"essay.pdf": [_ESSAY], "cv.txt": "me"}, {"essay.pdf": [_ESSAY], "cv.txt": "you"}, id="mix"
    ),
    pytest.param({"essay.pdf": b"not a pdf"}, {"essay.pdf": [_ESSAY]}, id="pdf-broken"),
    pytest.param(None, {"a.txt": "x"}, id="none"),
    pytest.param(ABSENT, {"a.txt": "x"}, id="absent"),
    pytest.param(b"not a zip", {"a.txt": "x"}, id="not-a-zip"),
    pytest.param({"a.txt": "x"}, ABSENT, id="expected-absent"),
]


def _zip_arg(folder: Path, name: str, spec: Any) -> Any:
    if isinstance(spec, dict):
        return make_file(folder, name, zip_bytes(spec))
    return make_file(folder, name, spec)


@pytest.mark.parametrize(("result", "expected"), COMPARE_ZIP)
def test_compare_zip_files(osworld: OSWorld, tmp_path: Path, result: Any, expected: Any) -> None:
    assert_same_score(
        osworld,
        "compare_zip_files",
        _zip_arg(tmp_path, "essay_submission.zip", result),
        _zip_arg(tmp_path, "gold.zip", expected),
    )


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param("table", "table", id="tabs-same"),
        pytest.param("letter2", "letter", id="one-word"),
        pytest.param("letter", "letter", id="letter-same"),
        pytest.param("table", "letter", id="different"),
    ],
)
def test_compare_zip_files_libreoffice_pdfs(
    osworld: OSWorld, tmp_path: Path, lo_pdfs: dict[str, Path], result: str, expected: str
) -> None:
    """PDF members exported by LibreOffice (tab-separated text: the PDF readers space it)."""
    got = {"essay.pdf": lo_pdfs[result].read_bytes(), "notes.txt": "n"}
    want = {"essay.pdf": lo_pdfs[expected].read_bytes(), "notes.txt": "n"}
    assert_same_score(
        osworld,
        "compare_zip_files",
        _zip_arg(tmp_path, "essay_submission.zip", got),
        _zip_arg(tmp_path, "gold.zip", want),
    )


# --- compare_archive ----------------------------------------------------------------------


def _docx(text: str) -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    for line in text.split("\n"):
        document.add_paragraph(line)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pptx(title: str) -> bytes:
    pptx = pytest.importorskip("pptx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = "body"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _xlsx(rows: list[list[Any]]) -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _png(seed: int) -> bytes:
    return _encoded(picture(seed, (64, 48)), "PNG")


Members = dict[str, bytes | str | Callable[[], bytes]]


def archive_file(folder: Path, name: str, members: Members | Any) -> Any:
    """``members`` packed as ``name`` (``.zip``, ``.tar``, ``.tar.gz``), or a plain file spec."""
    if not isinstance(members, dict):
        return make_file(folder, name, members)
    data = {k: (v() if callable(v) else v) for k, v in members.items()}
    data = {k: (v.encode() if isinstance(v, str) else v) for k, v in data.items()}
    path = folder.resolve() / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as zf:
            for member, content in data.items():
                zf.writestr(member, content)
    else:
        with tarfile.open(path, "w:gz" if name.endswith(".gz") else "w") as tf:
            for member, content in data.items():
                info = tarfile.TarInfo(member)
                info.size = len(content)
                tf.addfile(info, io.BytesIO(content))
    return path


_TEXTS = {"a.txt": "alpha\n", "b.txt": "beta\n"}
_LECTURES = {
    "lecture_slides/l1.pdf": lambda: pdf_bytes(["Lecture one: sets"]),
    "lecture_slides/l2.pdf": lambda: pdf_bytes(["Lecture two: maps"]),
}

COMPARE_ARCHIVE = [
    pytest.param(_TEXTS, _TEXTS, {}, id="text-same"),
    pytest.param({**_TEXTS, "b.txt": "BETA\n"}, _TEXTS, {}, id="text-one-differs"),
    pytest.param({**_TEXTS, "b.txt": "BETA\n"}, _TEXTS, {"ignore_case": True}, id="ignore-case"),
    pytest.param({"a.txt": "alpha\n\n"}, {"a.txt": "alpha\n"}, {"ignore_blanks": True}, id="blank"),
    pytest.param({"a.txt": "alpha\n"}, _TEXTS, {}, id="text-missing-file"),
    pytest.param({"c.txt": "x"}, {"d.txt": "x"}, {}, id="text-names-differ"),
    pytest.param(_TEXTS, _TEXTS, {"file_type": "text"}, id="text-explicit"),
    pytest.param({"d/a.txt": "x"}, {"d/a.txt": "x"}, {"file_path": "d"}, id="text-file-path"),
    pytest.param({"d/a.txt": "x"}, {"d/a.txt": "y"}, {"file_path": "d"}, id="file-path-differs"),
    pytest.param({"d/a.txt": "x"}, {"d/a.txt": "x"}, {"file_path": "e"}, id="file-path-missing"),
    pytest.param({"d/a.txt": "x"}, {"d/a.txt": "x"}, {}, id="folder-as-member"),
    pytest.param(
        _LECTURES, _LECTURES, {"file_path": "lecture_slides", "file_type": "pdf"}, id="pdf-same"
    ),
    pytest.param(
        {**_LECTURES, "lecture_slides/l2.pdf": lambda: pdf_bytes(["Lecture two: sets"])},
        _LECTURES,
        {"file_path": "lecture_slides", "file_type": "pdf"},
        id="pdf-partial",
    ),
    pytest.param(
        {"l1.pdf": lambda: pdf_bytes(["A"]), "l2.pdf": b"broken"},
        {"l1.pdf": lambda: pdf_bytes(["A"]), "l2.pdf": lambda: pdf_bytes(["B"])},
        {"file_type": "pdf"},
        id="pdf-broken-member",
    ),
    pytest.param(
        {"r.docx": lambda: _docx("Hello\nworld")},
        {"r.docx": lambda: _docx("Hello\nworld")},
        {"file_type": "docx"},
        id="docx-same",
    ),
    pytest.param(
        {"r.docx": lambda: _docx("Hello\nworld")},
        {"r.docx": lambda: _docx("Hello\nthere")},
        {"file_type": "docx"},
        id="docx-differs",
    ),
    pytest.param(
        {"s.pptx": lambda: _pptx("Title")},
        {"s.pptx": lambda: _pptx("Title")},
        {"file_type": "ppt"},
        id="ppt-same",
    ),
    pytest.param(
        {"s.pptx": lambda: _pptx("Title")},
        {"s.pptx": lambda: _pptx("Other")},
        {"file_type": "ppt"},
        id="ppt-differs",
    ),
    pytest.param(
        {"i.png": lambda: _png(1), "j.png": lambda: _png(2)},
        {"i.png": lambda: _png(1), "j.png": lambda: _png(3)},
        {"file_type": "image"},
        id="image",
    ),
    pytest.param(
        {"t.csv": "a,b\n1,2\n"}, {"t.csv": "a,b\n1,2\n"}, {"file_type": "csv"}, id="csv-same"
    ),
    pytest.param(
        {"t.csv": "a,b\n1,3\n"}, {"t.csv": "a,b\n1,2\n"}, {"file_type": "csv"}, id="csv-differs"
    ),
    pytest.param(
        {"t.xlsx": lambda: _xlsx([["a", 1], ["b", 2]])},
        {"t.xlsx": lambda: _xlsx([["a", 1], ["b", 2]])},
        {"file_type": "table"},
        id="table-same",
    ),
    pytest.param(
        {"t.xlsx": lambda: _xlsx([["a", 1], ["b", 2]])},
        {"t.xlsx": lambda: _xlsx([["a", 1], ["b", 3]])},
        {"file_type": "table"},
        id="table-differs",
    ),
    pytest.param(_TEXTS, _TEXTS, {"file_type": "sheet"}, id="unknown-type"),
    pytest.param({"a.txt": "x"}, {"b.txt": "x"}, {"file_type": "sheet"}, id="unknown-type-names"),
    pytest.param({}, {}, {}, id="both-empty"),
    pytest.param(None, _TEXTS, {}, id="none"),
    pytest.param(ABSENT, _TEXTS, {}, id="absent"),
    pytest.param(b"not an archive", _TEXTS, {}, id="not-an-archive"),
]


@pytest.mark.parametrize(("result", "expected", "options"), COMPARE_ARCHIVE)
def test_compare_archive(
    osworld: OSWorld, tmp_path: Path, result: Any, expected: Any, options: dict[str, Any]
) -> None:
    assert_same_score(
        osworld,
        "compare_archive",
        archive_file(tmp_path, "result.zip", result),
        archive_file(tmp_path, "gold.zip", expected),
        **options,
    )


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz"])
@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(_TEXTS, _TEXTS, id="same"),
        pytest.param({**_TEXTS, "b.txt": "gamma\n"}, _TEXTS, id="one-differs"),
        pytest.param({"a.txt": "alpha\n"}, _TEXTS, id="missing-file"),
    ],
)
def test_compare_archive_tar(
    osworld: OSWorld, tmp_path: Path, suffix: str, result: Any, expected: Any
) -> None:
    assert_same_score(
        osworld,
        "compare_archive",
        archive_file(tmp_path, f"result{suffix}", result),
        archive_file(tmp_path, f"gold{suffix}", expected),
    )


# --- compare_epub ---------------------------------------------------------------------------


def epub_bytes(
    chapters: dict[str, str],
    *,
    identifier: str = "urn:uuid:1",
    title: str = "Pass Through",
    toc: bool = True,
    opf: bool = True,
    extra: dict[str, bytes] | None = None,
) -> bytes:
    """A flat EPUB (as Calibre writes one): content.opf, toc.ncx and the chapters' HTML."""
    items = "".join(
        f'    <item id="c{i}" href="{name}" media-type="application/xhtml+xml"/>\n'
        for i, name in enumerate(chapters)
    )
    content = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<package xmlns="http://www.idpf.org/2007/opf" version="2.0">\n'
        '  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">\n'
        f"    <dc:title>{title}</dc:title>\n"
        f'    <dc:identifier id="uuid_id">{identifier}</dc:identifier>\n'
        "  </metadata>\n"
        f"  <manifest>\n{items}  </manifest>\n"
        "</package>\n"
    )
    points = "".join(
        f'    <navPoint id="n{i}" playOrder="{i}"><navLabel><text>{name}</text></navLabel>'
        f'<content src="{name}"/></navPoint>\n'
        for i, name in enumerate(chapters)
    )
    ncx = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">\n'
        f'  <head><meta name="dtb:uid" content="{identifier}"/></head>\n'
        f"  <docTitle><text>{title}</text></docTitle>\n"
        f"  <navMap>\n{points}  </navMap>\n"
        "</ncx>\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip")
        if opf:
            zf.writestr("content.opf", content)
        if toc:
            zf.writestr("toc.ncx", ncx)
        for name, body in chapters.items():
            zf.writestr(name, body)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buffer.getvalue()


def chapter(*paragraphs: str, title: str = "Chapter") -> str:
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml">\n'
        f"<head><title>{title}</title></head>\n<body>\n{body}\n</body>\n</html>\n"
    )


_BOOK = {
    "index_split_000.html": chapter("It was a dark night.", "The rain fell."),
    "index_split_001.html": chapter("Morning came.", "Nobody spoke.", title="Two"),
}

COMPARE_EPUB = [
    pytest.param(epub_bytes(_BOOK), epub_bytes(_BOOK), id="same"),
    pytest.param(epub_bytes(_BOOK, identifier="urn:uuid:2"), epub_bytes(_BOOK), id="new-id"),
    pytest.param(epub_bytes(_BOOK, title="Other"), epub_bytes(_BOOK), id="title"),
    pytest.param(
        epub_bytes({**_BOOK, "index_split_001.html": chapter("Morning came.", "Someone spoke.")}),
        epub_bytes(_BOOK),
        id="one-paragraph",
    ),
    pytest.param(
        epub_bytes({"index_split_000.html": _BOOK["index_split_000.html"]}),
        epub_bytes(_BOOK),
        id="missing-chapter",
    ),
    pytest.param(
        epub_bytes(_BOOK),
        epub_bytes({"index_split_000.html": _BOOK["index_split_000.html"]}),
        id="extra-chapter",
    ),
    pytest.param(
        epub_bytes({k: v.replace("\n", "\r\n") for k, v in _BOOK.items()}),
        epub_bytes(_BOOK),
        id="crlf-chapters",
    ),
    pytest.param(
        epub_bytes({k: v.replace("\n", "") for k, v in _BOOK.items()}),
        epub_bytes(_BOOK),
        id="one-line-chapters",
    ),
    pytest.param(epub_bytes(_BOOK, toc=False), epub_bytes(_BOOK), id="no-toc"),
    pytest.param(epub_bytes(_BOOK, opf=False), epub_bytes(_BOOK), id="no-opf"),
    pytest.param(epub_bytes({}, toc=False, opf=False), epub_bytes(_BOOK), id="nothing-to-compare"),
    pytest.param(epub_bytes(_BOOK), epub_bytes({}, toc=False, opf=False), id="expected-empty"),
    pytest.param(
        epub_bytes({"index_split_000.html": chapter("Zürich — 東京")}),
        epub_bytes({"index_split_000.html": chapter("Zürich — 東京")}),
        id="unicode",
    ),
    pytest.param(
        epub_bytes({"text/ch1.html": chapter("Nested.")}),
        epub_bytes({"text/ch1.html": chapter("Nested.")}),
        id="nested-html",
    ),
    pytest.param(
        epub_bytes({"ch1.xhtml": chapter("Not .html")}),
        epub_bytes({"ch1.xhtml": chapter("Other")}),
        id="xhtml-ignored",
    ),
    pytest.param(
        epub_bytes({"index_split_000.html": "<p>caf\xe9</p>"}, extra={"x.html": b"<p>caf\xe9</p>"}),
        epub_bytes({"index_split_000.html": "<p>caf\xe9</p>"}, extra={"x.html": b"<p>cafe</p>"}),
        id="latin-1-chapter",
    ),
    pytest.param(
        epub_bytes({"index_split_000.html": "<p>a\u2028b</p>"}),
        epub_bytes({"index_split_000.html": "<p>a b</p>"}),
        id="line-separator",
    ),
    pytest.param(None, epub_bytes(_BOOK), id="none"),
    pytest.param(epub_bytes(_BOOK), None, id="expected-none"),
    pytest.param(ABSENT, epub_bytes(_BOOK), id="absent"),
    pytest.param(b"not a zip", epub_bytes(_BOOK), id="not-a-zip"),
    pytest.param(epub_bytes(_BOOK), b"not a zip", id="expected-not-a-zip"),
]


@pytest.mark.parametrize(("result", "expected"), COMPARE_EPUB)
def test_compare_epub(osworld: OSWorld, tmp_path: Path, result: Any, expected: Any) -> None:
    assert_same_score(
        osworld,
        "compare_epub",
        make_file(tmp_path, "Pass Through.epub", result),
        make_file(tmp_path, "Pass Through Gold.epub", expected),
    )
