"""PDF and HTML file metrics: page counts, embedded images, HTML element trees.

OSWorld's ``pdf.check_pdf_pages`` and ``chrome.compare_pdf_images`` / ``compare_htmls``.
PDFs are read with the library OSWorld uses in each place (pypdf for page counts, PyMuPDF
for embedded images: the two list a document's images differently), HTML with lxml (OSWorld
uses BeautifulSoup on lxml's parser). A missing or unreadable file scores 0.
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Iterator, Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics._rules import match_value_to_rule

logger = logging.getLogger(__name__)

_HASH_SIDE = 8  # perceptual hash: 8×8 low frequencies, 64 bits
_HASH_INPUT = 32  # ... of the DCT of the image shrunk to 32×32 grey
_HASH_MAX_DISTANCE = 5  # compare_pdf_images: images match within this many differing bits
_RELATIONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
# Attributes BeautifulSoup splits into lists of words, so spacing inside them does not count.
_MULTI_VALUED = frozenset({"class", "rel", "rev", "accept-charset", "headers", "accesskey"})


def check_pdf_pages(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when the PDF's page count stands in ``relation`` to ``ref_value``.

    Args:
        result: Path of the PDF.
        rules: ``relation``: ``eq``, ``ne``, ``lt``, ``le``, ``gt`` or ``ge``;
            ``ref_value``: the page count to compare with.

    Raises:
        ValueError: Unknown relation in the task's rules.

    Returns:
        1.0 or 0.0; 0.0 for a missing or unreadable PDF.
    """
    relation = rules["relation"]
    if relation not in _RELATIONS:
        choices = sorted(_RELATIONS)
        raise ValueError(f"check_pdf_pages: unknown relation {relation!r}; use one of {choices}")
    if not result:
        return 0.0
    try:
        pages = len(require("pypdf").PdfReader(result).pages)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # not a PDF, truncated, encrypted: the agent's output scores 0
        logger.info("check_pdf_pages: cannot read %s: %s", result, e)
        return 0.0
    return float(match_value_to_rule(pages, {"method": relation, "ref": rules["ref_value"]}))


def _dct_matrix(n: int) -> Any:
    np = require("numpy")
    k, i = np.arange(n)[:, None], np.arange(n)[None, :]
    return np.cos(math.pi * k * (2 * i + 1) / (2 * n))


def perceptual_hash(img: Any) -> Any:
    """64-bit DCT hash of an image, as ``imagehash.phash`` computes it (a bool array).

    The image is turned grey and shrunk to 32×32 (Lanczos); the hash marks which of the
    8×8 lowest DCT-II frequencies lie above their median. (The DCT's constant factor does
    not change which side of the median a value is on.)

    Example:
        >>> from PIL import Image
        >>> perceptual_hash(Image.new("RGB", (40, 40), "white")).shape
        (8, 8)
    """
    np = require("numpy")
    lanczos = require("PIL.Image").Resampling.LANCZOS
    grey = img.convert("L").resize((_HASH_INPUT, _HASH_INPUT), lanczos)
    basis = _dct_matrix(_HASH_INPUT)
    low = (basis @ np.asarray(grey, dtype=np.float64) @ basis.T)[:_HASH_SIDE, :_HASH_SIDE]
    return low > np.median(low)


def _pdf_images(path: str) -> list[Any]:
    """The images each page uses, in page order, as their stored files (PyMuPDF).

    An image whose stored bytes Pillow cannot open is skipped, as in OSWorld; a failure to
    extract one fails the whole document.
    """
    pymupdf = require("pymupdf")
    image_module = require("PIL.Image")
    images = []
    with pymupdf.open(path) as document:
        for number, page in enumerate(document):
            for entry in page.get_images(full=True):
                data = document.extract_image(entry[0])["image"]
                try:
                    images.append(image_module.open(io.BytesIO(data)))
                except ImportError:
                    raise  # a missing library is an installation problem, never a score
                except Exception as e:  # a format Pillow cannot read (OSWorld skips any)
                    logger.info("compare_pdf_images: %s page %d: %s", path, number, e)
    return images


def compare_pdf_images(result: str | None, expected: str | None) -> float:
    """Share of the PDFs' embedded images that match, paired in page order.

    Images match when their perceptual hashes differ in at most 5 of 64 bits.

    Returns:
        0.0 when the image counts differ or a PDF is missing or unreadable; 1.0 when neither
        has images; else the fraction of matching pairs.
    """
    if not result or not expected:
        return 0.0
    try:
        got, want = _pdf_images(result), _pdf_images(expected)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # not a PDF, truncated: the agent's output scores 0
        logger.info("compare_pdf_images: cannot read %s or %s: %s", result, expected, e)
        return 0.0
    if len(got) != len(want):
        return 0.0
    if not want:
        return 1.0
    matches = sum(
        int((perceptual_hash(a) != perceptual_hash(b)).sum()) <= _HASH_MAX_DISTANCE
        for a, b in zip(got, want, strict=True)
    )
    return matches / len(want)


def _nodes(element: Any) -> Iterator[Any]:
    """An element, then its text, its children (each followed by its tail), depth-first.

    The order BeautifulSoup's ``recursiveChildGenerator`` visits tags and strings in.
    """
    yield element
    if element.text:
        yield element.text
    for child in element:
        if isinstance(child.tag, str):
            yield from _nodes(child)
        else:  # comment or processing instruction: a string, as in BeautifulSoup
            yield f"<{child.tag.__name__}>{child.text or ''}"
        if child.tail:
            yield child.tail


def _attributes(element: Any, ignore_sdnum: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        k: v.split() if k in _MULTI_VALUED else v for k, v in element.attrib.items()
    }
    if ignore_sdnum:
        attrs.pop("sdnum", None)
    return attrs


def _same_node(a: Any, b: Any, ignore_sdnum: bool) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if a.tag != b.tag or a.text_content().strip() != b.text_content().strip():
        return False
    return _attributes(a, ignore_sdnum) == _attributes(b, ignore_sdnum)


def compare_htmls(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when two HTML files have the same elements, texts and attributes, in order.

    Nodes (elements and text strings) are paired in document order; paired elements must
    have the same tag, the same stripped text content and the same attributes. Pairing
    stops at the shorter document, as in OSWorld.

    Args:
        result: Path of the agent's HTML file.
        expected: Path of the reference file.
        **options: ``ignore_sdnum``: ignore LibreOffice's ``sdnum`` number-format attribute.
    """
    if not result or not expected:
        return 0.0
    html = require("lxml.html")
    try:
        roots = [html.parse(path).getroot() for path in (result, expected)]
    except (OSError, require("lxml.etree").ParserError) as e:
        logger.info("compare_htmls: cannot parse %s or %s: %s", result, expected, e)
        return 0.0
    if roots[0] is None or roots[1] is None:
        return 0.0
    ignore_sdnum = bool(options.get("ignore_sdnum"))
    pairs = zip(_nodes(roots[0]), _nodes(roots[1]), strict=False)
    return float(all(_same_node(a, b, ignore_sdnum) for a, b in pairs))
