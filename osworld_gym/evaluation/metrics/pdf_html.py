"""PDF and HTML file metrics: page counts, embedded images, HTML element trees.

OSWorld's ``pdf.check_pdf_pages`` and ``chrome.compare_pdf_images`` / ``compare_htmls``.
PDFs are read with the library OSWorld uses in each place (pypdf for page counts, PyMuPDF
for embedded images: the two list a document's images differently; the images are hashed with
imagehash, from the ``media`` extra), HTML with lxml's parser into the tree BeautifulSoup
(OSWorld's HTML reader) builds from it. A missing or unreadable file scores 0.
"""

from __future__ import annotations

import io
import logging
import operator
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_HASH_MAX_DISTANCE = 5  # compare_pdf_images: images match within this many differing bits


def check_pdf_pages(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when the PDF's page count stands in ``relation`` to ``ref_value``.

    Args:
        result: Path of the PDF.
        rules: ``relation``: the name of a two-argument function of ``operator``, applied
            as ``relation(page_count, ref_value)`` (tasks use ``eq``, ``ne``, ``lt``, ``le``,
            ``gt``, ``ge``); ``ref_value``: the page count to compare with.

    Raises:
        ValueError: ``relation`` names no function of ``operator``.

    Returns:
        The relation's truth as 1.0 or 0.0; 0.0 for a missing or unreadable PDF.
    """
    relation = rules["relation"]
    compare = getattr(operator, relation, None) if isinstance(relation, str) else None
    if not isinstance(relation, str) or relation.startswith("_") or not callable(compare):
        raise ValueError(f"check_pdf_pages: {relation!r} is no function of the operator module")
    if not result:
        return 0.0
    try:
        pages = len(require("pypdf").PdfReader(result).pages)
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # not a PDF, truncated, encrypted: the agent's output scores 0
        logger.info("check_pdf_pages: cannot read %s: %s", result, e)
        return 0.0
    return float(compare(pages, rules["ref_value"]))


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

    Images match when their perceptual hashes (imagehash's ``phash``, as OSWorld computes
    them) differ in at most 5 of 64 bits. The hash compares DCT coefficients with their
    median; on flat or symmetric pictures many coefficients are zero up to rounding, which
    only the same DCT code rounds the same way, so imagehash itself is used (the ``media``
    extra).

    Returns:
        0.0 when the image counts differ or a PDF is missing or unreadable; 1.0 when neither
        has images; else the fraction of matching pairs. As in OSWorld, two files of the same
        name (in different folders) score as the reference against itself.

    Raises:
        DependencyNotInstalled: PyMuPDF (``eval`` extra) or imagehash (``media`` extra) is
            missing.
    """
    if not result or not expected:
        return 0.0
    if not (os.path.exists(result) and os.path.exists(expected)):
        return 0.0
    if os.path.basename(result) == os.path.basename(expected):
        # OSWorld copies both files into one scratch folder under their own names first:
        # with one name, the reference's copy replaces the agent's, and is compared with
        # itself.
        result = expected
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
    phash = require("imagehash", "media").phash
    matches = sum(phash(a) - phash(b) <= _HASH_MAX_DISTANCE for a, b in zip(got, want, strict=True))
    return matches / len(want)


# How BeautifulSoup (OSWorld's HTML reader, on lxml's parser) builds its tree from lxml's
# parse events; compare_htmls rebuilds the same tree from the same events.
_ASCII_SPACES = " \n\t\x0c\r"  # a string of only these collapses to "\n" or " "
_PRESERVE_WHITESPACE = frozenset({"pre", "textarea"})
# Tags whose strings are their own kind: left out of other tags' text (``<style>`` CSS...).
_STRING_CONTAINERS = frozenset({"rt", "rp", "style", "script", "template"})
_TEXT = "text"  # the kind of ordinary strings (comments, doctypes... have their own kinds)
# Attributes whose value is a list of words, for every tag ("*") or for some tags.
_WORD_LIST_ATTRIBUTES: Mapping[str, frozenset[str]] = {
    "*": frozenset({"class", "accesskey", "dropzone"}),
    "a": frozenset({"rel", "rev"}),
    "link": frozenset({"rel", "rev"}),
    "td": frozenset({"headers"}),
    "th": frozenset({"headers"}),
    "form": frozenset({"accept-charset"}),
    "object": frozenset({"archive"}),
    "area": frozenset({"rel"}),
    "icon": frozenset({"sizes"}),
    "iframe": frozenset({"sandbox"}),
    "output": frozenset({"for"}),
}
_WORD = re.compile(r"\S+")


class _String(str):
    """A text node, compared as its text.

    ``kind``: ``"text"``, a string container's tag name, ``"comment"``, ``"doctype"``, ``"pi"``.
    """

    kind: str

    def __new__(cls, text: str, kind: str) -> _String:
        node = super().__new__(cls, text)
        node.kind = kind
        return node


class _Tag:
    """An element: name, attributes (word lists split), children. Compares by identity."""

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.name = name
        self.attrs = attrs
        self.children: list[_Tag | _String] = []

    def descendants(self) -> Iterator[_Tag | _String]:
        """Every node below this one, in document order (each element before its content)."""
        for child in self.children:
            yield child
            if isinstance(child, _Tag):
                yield from child.descendants()

    def text(self) -> str:
        """The element's text: its ordinary strings (a string container: its own kind)."""
        wanted = self.name if self.name in _STRING_CONTAINERS else _TEXT
        return "".join(
            node for node in self.descendants() if isinstance(node, _String) and node.kind == wanted
        )


def _word_lists(name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    listed = _WORD_LIST_ATTRIBUTES["*"] | _WORD_LIST_ATTRIBUTES.get(name.lower(), frozenset())
    return {k: _WORD.findall(v) if k in listed else v for k, v in attrs.items()}


class _TreeBuilder:
    """An lxml parser target that builds the tree BeautifulSoup would build."""

    def __init__(self) -> None:
        self.root = _Tag("[document]", {})
        self.open: list[_Tag] = [self.root]
        self.pending: list[str] = []
        self.preserving: list[_Tag] = []
        self.containers: list[_Tag] = []

    def _flush(self, kind: str | None = None) -> None:
        if not self.pending:
            return
        text, self.pending = "".join(self.pending), []
        if not self.preserving and all(c in _ASCII_SPACES for c in text):
            text = "\n" if "\n" in text else " "
        if kind is None:
            kind = self.containers[-1].name if self.containers else _TEXT
        self.open[-1].children.append(_String(text, kind))

    def _pop(self) -> None:
        tag = self.open.pop()
        for stack in (self.preserving, self.containers):
            if stack and stack[-1] is tag:
                stack.pop()

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        self._flush()
        element = _Tag(tag, _word_lists(tag, dict(attrib)))
        self.open[-1].children.append(element)
        self.open.append(element)
        if tag in _PRESERVE_WHITESPACE:
            self.preserving.append(element)
        if tag in _STRING_CONTAINERS:
            self.containers.append(element)

    def end(self, tag: str) -> None:
        self._flush()
        if not any(t.name == tag for t in self.open[1:]):
            return
        while len(self.open) > 1:
            name = self.open[-1].name
            self._pop()
            if name == tag:
                return

    def data(self, data: str) -> None:
        self.pending.append(data)

    def _special(self, text: str, kind: str) -> None:
        self._flush()
        self.pending.append(text)
        self._flush(kind)

    def comment(self, text: str) -> None:
        self._special(text, "comment")

    def pi(self, target: str, data: str) -> None:
        self._special(f"{target} {data}", "pi")

    def doctype(self, name: str | None, pubid: str | None, system: str | None) -> None:
        text = name or ""
        if pubid is not None:
            text += f' PUBLIC "{pubid}"' + (f' "{system}"' if system is not None else "")
        elif system is not None:
            text += f' SYSTEM "{system}"'
        self._special(text, "doctype")

    def close(self) -> _Tag:
        self._flush()
        while len(self.open) > 1:
            self._pop()
        return self.root


def _soup(path: str) -> _Tag:
    """The tree BeautifulSoup's lxml reader makes of an HTML file (read as strict UTF-8).

    As BeautifulSoup does it: the text, without a leading byte-order mark, is fed to lxml's
    HTML parser (recovering from errors); if lxml rejects it, its UTF-8 bytes are.
    """
    etree = require("lxml.etree")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = text.removeprefix("\ufeff")
    try:
        return _parse_html(text, None)
    except (UnicodeDecodeError, LookupError, etree.ParserError):
        return _parse_html(text.encode(), "utf8")


def _parse_html(markup: str | bytes, encoding: str | None) -> _Tag:
    parser = require("lxml.etree").HTMLParser(
        target=_TreeBuilder(), recover=True, encoding=encoding
    )
    parser.feed(markup)
    return parser.close()


def _same_node(a: _Tag | _String, b: _Tag | _String, ignore_sdnum: bool) -> bool:
    if not (isinstance(a, _Tag) and isinstance(b, _Tag)):
        return a == b
    if a.name != b.name or a.text().strip() != b.text().strip():
        return False
    if a.attrs == b.attrs:
        return True
    if not ignore_sdnum:
        return False
    return {k: v for k, v in a.attrs.items() if k != "sdnum"} == {
        k: v for k, v in b.attrs.items() if k != "sdnum"
    }


def compare_htmls(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when two HTML files have the same nodes, in document order.

    The files are read as BeautifulSoup reads them with lxml (OSWorld's reader; see
    ``_soup()``): whitespace-only strings become a single newline or space, ``class`` and
    the other word-list attributes become lists of words. Nodes (elements, strings,
    comments, the doctype) are paired in document order, stopping at the shorter document;
    paired elements must have the same tag, the same stripped text and the same attributes,
    paired strings the same text.

    Args:
        result: Path of the agent's HTML file.
        expected: Path of the reference file.
        **options: ``ignore_sdnum``: ignore LibreOffice's ``sdnum`` number-format attribute.

    Returns:
        1.0 or 0.0; 0.0 when a file is missing or not UTF-8 (OSWorld fails there). An empty
        file has no nodes, so it matches any other, as in OSWorld
        (``compare_htmls_fixed()`` requires as many nodes).
    """
    if not result or not expected:
        return 0.0
    etree = require("lxml.etree")
    try:
        trees = [_soup(path) for path in (result, expected)]
    except (OSError, UnicodeDecodeError, etree.LxmlError) as e:
        logger.info("compare_htmls: cannot read %s or %s: %s", result, expected, e)
        return 0.0
    return float(_same_nodes(trees, bool(options.get("ignore_sdnum")), whole=False))


def _same_nodes(trees: list[_Tag], ignore_sdnum: bool, *, whole: bool) -> bool:
    """Whether the two trees' nodes pair up equal (``whole``: and are as many)."""
    nodes = [list(tree.descendants()) for tree in trees]
    if whole and len(nodes[0]) != len(nodes[1]):
        return False
    return all(_same_node(a, b, ignore_sdnum) for a, b in zip(*nodes, strict=False))


def compare_htmls_fixed(result: str | None, expected: str | None, **options: Any) -> float:
    """``compare_htmls()`` over every node: the two files must have as many nodes.

    OSWorld's pairing stops at the shorter document, so an empty (or whitespace-only) result
    file, which has no nodes, passes against any reference; here it fails.
    """
    if not result or not expected:
        return 0.0
    etree = require("lxml.etree")
    try:
        trees = [_soup(path) for path in (result, expected)]
    except (OSError, UnicodeDecodeError, etree.LxmlError) as e:
        logger.info("compare_htmls: cannot read %s or %s: %s", result, expected, e)
        return 0.0
    return float(_same_nodes(trees, bool(options.get("ignore_sdnum")), whole=True))
