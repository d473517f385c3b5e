"""URL rules shared by the Chrome getters and metrics: the address bar's text, URL equality.

Pure functions, no browser. ``compare_urls()`` is OSWorld's URL equality (used by
``is_expected_tabs``, ``is_expected_active_tab``, ``is_cookie_deleted`` and the
``chrome_close_tabs`` step): scheme, host without a lone ``www`` and without its public suffix
(``airbnb.com`` equals ``airbnb.com.sg``), path without a lone ``/``, query and fragment. The
public suffixes come from tldextract's bundled list, never fetched (OSWorld's tldextract fetches
the live list once; the two agree on ordinary domains).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlparse, urlsplit, urlunparse

from osworld_gym.evaluation.metrics._deps import require

_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")
# Pages whose address bar is empty (Chrome's new tab page).
_BLANK_OMNIBOX = ("chrome://newtab", "chrome://new-tab-page", "chrome-search://local-ntp")


def omnibox_text(url: str | None) -> str | None:
    """The text Chrome's address bar shows for ``url`` (its steady state, not being edited).

    OSWorld's ``active_url_from_accessTree`` reads this text from the accessibility tree and
    prepends a ``goto_prefix``. Chrome hides ``http://`` and ``https://``, a leading ``www.``
    and a path that is only ``/``; other schemes (``chrome://``, ``file://``, ``about:``) stay.
    The new tab page shows nothing (None), as does a tab without a URL.

    Example:
        >>> omnibox_text("https://www.drugs.com/npc/")
        'drugs.com/npc/'
        >>> omnibox_text("http://127.0.0.1:8000/")
        '127.0.0.1:8000'
        >>> omnibox_text("chrome://settings/appearance")
        'chrome://settings/appearance'
    """
    if not url or url.startswith(_BLANK_OMNIBOX):
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return url
    host = parts.netloc.rsplit("@", 1)[-1]  # user:password@ is never shown
    if host.startswith("www."):
        host = host[4:]
    path = parts.path
    if path == "/" and not parts.query and not parts.fragment:
        path = ""
    text = host + path
    if parts.query:
        text += "?" + parts.query
    if parts.fragment:
        text += "#" + parts.fragment
    return text


def accessibility_tree_url(url: str | None, goto_prefix: str = "https://") -> str | None:
    """What OSWorld's ``active_url_from_accessTree`` returns for a tab showing ``url``.

    Example:
        >>> accessibility_tree_url("https://www.babycenter.com/baby-names", "https://www.")
        'https://www.babycenter.com/baby-names'
        >>> accessibility_tree_url("https://scholar.google.com/citations?user=x")
        'https://scholar.google.com/citations?user=x'
    """
    text = omnibox_text(url)
    return None if text is None else f"{goto_prefix}{text}"


@lru_cache(maxsize=1)
def _extractor() -> Any:
    tldextract = require("tldextract")
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # bundled list, offline


def _normalize(url: str, full: bool) -> str:
    if not _HAS_SCHEME.match(url):
        url = f"http://{url}"
    parsed = urlparse(url)
    extracted = _extractor()(parsed.netloc.lower())
    subdomain = "" if extracted.subdomain == "www" else extracted.subdomain
    netloc = f"{subdomain}.{extracted.domain}" if subdomain else extracted.domain
    path = "" if parsed.path == "/" else parsed.path
    params, query, fragment = (
        (parsed.params, parsed.query, parsed.fragment) if full else ("", "", "")
    )
    return urlunparse((parsed.scheme.lower(), netloc, path, params, query, fragment))


def compare_urls(url1: str | None, url2: str | None, full: bool = True) -> bool:
    """OSWorld's URL equality (see the module docstring); ``None`` equals only ``None``.

    Args:
        url1: A URL, with or without a scheme (``http://`` is assumed).
        url2: The other URL.
        full: Also compare query and fragment.

    Example:
        >>> compare_urls("https://www.airbnb.com/", "https://airbnb.com.sg")
        True
        >>> compare_urls("https://github.com", "https://docs.python.org/3/")
        False
    """
    if url1 is None or url2 is None:
        return url1 == url2
    return _normalize(url1, full) == _normalize(url2, full)


def are_lists_equal(
    list1: Sequence[Any], list2: Sequence[Any], same: Callable[[Any, Any], bool]
) -> bool:
    """Equal lengths, and every item of ``list1`` has a ``same`` item in ``list2``.

    OSWorld's rule: duplicates are not counted, so ``[a, a]`` equals ``[a, b]``.
    """
    if len(list1) != len(list2):
        return False
    return all(any(same(a, b) for b in list2) for a in list1)
