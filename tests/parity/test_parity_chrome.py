"""Parity of OSWorld's Chrome metrics over plain values with ours (no browser involved).

Inputs are what the Chrome getters hand over (an active tab's URL or info dict, the open tabs,
the ``Bookmarks`` roots, cookie and history rows, ``.desktop`` files, preferences values);
rules come from OSWorld's chrome and multi_apps task files, with URL variations around them
(``www``, trailing slash, scheme, query, fragment, public suffix) for OSWorld's URL equality.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from parity_harness import OSWorld, assert_same_score, real_rules

pytestmark = pytest.mark.parity


def url_variants(url: str) -> dict[str, str]:
    """Variations of ``url`` that OSWorld's URL equality may or may not ignore."""
    bare = url.replace("://www.", "://")
    return {
        "same": url,
        "no-www": bare,
        "www": bare.replace("://", "://www.", 1),
        "slash": url.rstrip("/") + "/",
        "no-slash": url.rstrip("/"),
        "http": url.replace("https://", "http://", 1),
        "no-scheme": url.split("://", 1)[-1],
        "query": url + ("&" if "?" in url else "?") + "ref=x",
        "fragment": url + "#top",
        "upper-case": url.upper(),
        "suffix": bare.replace(".com", ".com.sg", 1),
        "other-path": url.rstrip("/") + "/other",
    }


# --- is_expected_active_tab (and its approximate twin) ----------------------------------------


def _active_tab_cases(metric: str) -> list[Any]:
    cases = []
    rules_list = real_rules(metric) or [("none", {"type": "url", "url": "https://www.x.com/"})]
    for task, rules in rules_list:
        for name, url in url_variants(rules["url"]).items():
            cases.append(pytest.param(url, rules, id=f"{task}-{name}"))
        cases.append(pytest.param({"url": rules["url"], "title": "T"}, rules, id=f"{task}-dict"))
        cases.append(pytest.param({"title": "no url"}, rules, id=f"{task}-dict-without-url"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
        cases.append(pytest.param("", rules, id=f"{task}-empty"))
        cases.append(pytest.param(rules["url"], {**rules, "type": "title"}, id=f"{task}-type"))
    return cases


@pytest.mark.parametrize(("active", "rule"), _active_tab_cases("is_expected_active_tab"))
def test_is_expected_active_tab(osworld: OSWorld, active: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_expected_active_tab", active, rule)


_APPROXIMATE_EXTRA = [
    pytest.param(
        "https://github.com/a?x=1",
        {"type": "url", "url": "https://github.com/a?y=2"},
        id="both-queries",
    ),
    pytest.param("https://github.com/a", {"type": "url", "url": "https://github.com/a/"}, id="/"),
    pytest.param(12, {"type": "url", "url": "https://github.com/a"}, id="number"),
]


@pytest.mark.parametrize(
    ("active", "rule"),
    _active_tab_cases("is_expected_active_tab_approximate") + _APPROXIMATE_EXTRA,
)
def test_is_expected_active_tab_approximate(
    osworld: OSWorld, active: Any, rule: dict[str, Any]
) -> None:
    assert_same_score(osworld, "is_expected_active_tab_approximate", active, rule)


# --- is_expected_url_pattern_match ------------------------------------------------------------

_URL_POOL = [
    "https://www.drugs.com/tamiflu.html#side-effects",
    "https://www.drugs.com/sfx/tamiflu-side-effects.html#common-side-effects",
    "https://www.dmv.virginia.gov/licenses-ids/license/applying/eligibility",
    "https://www.united.com/en/us/checked-bag-fee-calculator/any-flights",
    "https://scholar.google.com/citations?user=qRAQ5BsAAAAJ&hl=en",
    "https://www.bbc.com/weather/2643123/manchester/",
    "chrome://settings/appearance",
    "chrome://settings/appearance/",
    "https://www.mbta.com/events/book/CharlieCardStoreAppointments@mbta.com/",
    "https://www.ticketmaster.com/help/Ticket-Delivery-FAQs",
    "https://www.budget.com/en/reservation#/vehicles",
    "https://www.tutorial.com/forms?title=&field_component_target_id=431",
    "https://example.org/",
]


def _pattern_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_expected_url_pattern_match"):
        for index, url in enumerate(_URL_POOL):
            cases.append(pytest.param(url, rules, id=f"{task}-url{index}"))
        cases.append(pytest.param({"url": _URL_POOL[0]}, rules, id=f"{task}-dict"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
    return cases


PATTERNS = [
    *_pattern_cases(),
    pytest.param({"title": "x"}, {"expected": ["x"]}, id="dict-without-url"),
    pytest.param(["https://a.com"], {"expected": ["a"]}, id="list-result"),
    pytest.param("https://a.com", {"expected": []}, id="no-patterns"),
    pytest.param("https://a.com", {"expected": "a"}, id="patterns-as-text"),
    pytest.param("https://a.com", {"expected": ["("]}, id="bad-regex"),
    pytest.param("https://zürich.ch/ä", {"expected": ["zürich", "/ä$"]}, id="unicode"),
]


@pytest.mark.parametrize(("result", "rules"), PATTERNS)
def test_is_expected_url_pattern_match(
    osworld: OSWorld, result: Any, rules: dict[str, Any]
) -> None:
    assert_same_score(osworld, "is_expected_url_pattern_match", result, rules)


# --- is_expected_installed_extensions ---------------------------------------------------------


def _extension_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_expected_installed_extensions"):
        names = rules["expected"]
        cases += [
            pytest.param(list(names), rules, id=f"{task}-exact"),
            pytest.param([*names, "uBlock Origin"], rules, id=f"{task}-more"),
            pytest.param(names[1:], rules, id=f"{task}-one-missing"),
            pytest.param([n.lower() for n in names], rules, id=f"{task}-case"),
            pytest.param([], rules, id=f"{task}-empty"),
            pytest.param(None, rules, id=f"{task}-none"),
        ]
    return cases


EXTENSIONS = [
    *_extension_cases(),
    pytest.param(["a", "a"], {"expected": ["a"]}, id="duplicates"),
    pytest.param(["a"], {"expected": []}, id="nothing-expected"),
    pytest.param("abc", {"expected": ["a", "b"]}, id="text-result"),
    pytest.param(["Speechify \u2014 Text"], {"expected": ["Speechify - Text"]}, id="dash"),
]


@pytest.mark.parametrize(("installed", "expected"), EXTENSIONS)
def test_is_expected_installed_extensions(
    osworld: OSWorld, installed: Any, expected: dict[str, Any]
) -> None:
    assert_same_score(osworld, "is_expected_installed_extensions", installed, expected)


# --- is_expected_tabs -------------------------------------------------------------------------


def tabs(*urls: str) -> list[dict[str, str]]:
    """``open_tabs_info``'s list for tabs showing ``urls``."""
    return [{"title": f"Tab {i}", "url": url} for i, url in enumerate(urls)]


def _tabs_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_expected_tabs"):
        urls = rules["urls"]
        cases += [
            pytest.param(tabs(*urls), rules, id=f"{task}-same"),
            pytest.param(tabs(*reversed(urls)), rules, id=f"{task}-reversed"),
            pytest.param(tabs(*(u.rstrip("/") + "/" for u in urls)), rules, id=f"{task}-slashes"),
            pytest.param(tabs(*(u.replace("://www.", "://") for u in urls)), rules, id=f"{task}-w"),
            pytest.param(tabs(*urls, "chrome://newtab/"), rules, id=f"{task}-extra-tab"),
            pytest.param(tabs(*urls[1:]), rules, id=f"{task}-missing-tab"),
            pytest.param(tabs(*([urls[0]] * len(urls))), rules, id=f"{task}-duplicates"),
            pytest.param(tabs(*(u + "?q=1" for u in urls)), rules, id=f"{task}-queries"),
            pytest.param([], rules, id=f"{task}-no-tabs"),
            pytest.param(None, rules, id=f"{task}-none"),
            pytest.param(tabs(*urls), {**rules, "type": "title"}, id=f"{task}-type"),
        ]
    return cases


TABS = [
    *_tabs_cases(),
    pytest.param(
        tabs("https://www.airbnb.com.sg/", "https://a.com"),
        {"type": "url", "urls": ["https://airbnb.com", "https://a.com"]},
        id="public-suffix",
    ),
    pytest.param(
        tabs("https://a.com", "https://a.com"),
        {"type": "url", "urls": ["https://a.com", "https://b.com"]},
        id="duplicate-tabs-missing-url",
    ),
    pytest.param(
        tabs("http://localhost:8000/", "https://127.0.0.1/x"),
        {"type": "url", "urls": ["http://localhost:8000", "https://127.0.0.1/x"]},
        id="hosts",
    ),
    pytest.param(
        tabs("https://user.github.io/p", "https://docs.python.org/3/"),
        {"type": "url", "urls": ["https://other.github.io/p", "https://docs.python.org/3"]},
        id="private-suffix",
    ),
    pytest.param(
        tabs("https://München.de/", "file:///home/user/a.html"),
        {"type": "url", "urls": ["https://münchen.de", "file:///home/user/a.html"]},
        id="idn-and-file",
    ),
    pytest.param([{"title": "no url"}], {"type": "url", "urls": ["https://a.com"]}, id="no-url"),
]


@pytest.mark.parametrize(("open_tabs", "rule"), TABS)
def test_is_expected_tabs(osworld: OSWorld, open_tabs: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_expected_tabs", open_tabs, rule)


# --- is_expected_bookmarks --------------------------------------------------------------------


def node(name: str, url: str | None = None, children: list[Any] | None = None) -> dict[str, Any]:
    """A node of Chrome's ``Bookmarks`` tree: a URL, or a folder when ``url`` is None."""
    if url is not None:
        return {"type": "url", "name": name, "url": url}
    return {"type": "folder", "name": name, "children": children or []}


def roots(*bar: dict[str, Any]) -> dict[str, Any]:
    """The ``roots`` of a ``Bookmarks`` file whose bookmarks bar holds ``bar``."""
    return {
        "bookmark_bar": node("Bookmarks bar", children=list(bar)),
        "other": node("Other bookmarks"),
        "synced": node("Mobile bookmarks"),
    }


def _liked(rules: dict[str, Any], pick: int) -> list[dict[str, Any]]:
    chosen = [u if isinstance(u, str) else u[min(pick, len(u) - 1)] for u in rules["urls"]]
    return [node(f"Author {i}", url) for i, url in enumerate(chosen)]


def _bookmark_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_expected_bookmarks"):
        kind = rules["type"]
        if kind == "bookmark_bar_folders_names":
            names = rules["names"]
            variants = {
                "same": roots(*(node(n) for n in names)),
                "plus-url": roots(*(node(n) for n in names), node("x", "https://x.org")),
                "extra-folder": roots(*(node(n) for n in names), node("Work")),
                "case": roots(*(node(n.lower()) for n in names)),
                "in-other": {**roots(), "other": node("Other", children=[node(names[0])])},
            }
        elif kind == "bookmark_bar_websites_urls":
            urls = rules["urls"]
            variants = {
                "same": roots(*(node(f"B{i}", u) for i, u in enumerate(urls))),
                "duplicated": roots(*(node(f"B{i}", u) for i, u in enumerate(urls + urls))),
                "in-folder": roots(node("F", children=[node("B", u) for u in urls])),
                "no-slash": roots(*(node("B", u.rstrip("/")) for u in urls)),
                "extra": roots(*(node("B", u) for u in urls), node("C", "https://c.org/")),
            }
        else:
            variants = {
                "first-choices": roots(node("Liked Authors", children=_liked(rules, 0))),
                "second-choices": roots(node("Liked Authors", children=_liked(rules, 1))),
                "one-missing": roots(node("Liked Authors", children=_liked(rules, 0)[1:])),
                "one-extra": roots(
                    node("Liked Authors", children=[*_liked(rules, 0), node("X", "https://x")])
                ),
                "folder-name-case": roots(node("liked authors", children=_liked(rules, 0))),
                "no-folder": roots(*_liked(rules, 0)),
            }
        for name, tree in variants.items():
            cases.append(pytest.param(tree, copy.deepcopy(rules), id=f"{task}-{name}"))
        cases.append(pytest.param({}, rules, id=f"{task}-empty"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
    return cases


BOOKMARKS = [
    *_bookmark_cases(),
    pytest.param(roots(), {"type": "bookmark_bar_folders_names", "names": []}, id="both-empty"),
    pytest.param(roots(node("A")), {"type": "other_type"}, id="unknown-type"),
    pytest.param({"other": node("x")}, {"type": "bookmark_bar_folders_names"}, id="no-bar"),
    pytest.param(
        roots(node("Ünïcode")),
        {"type": "bookmark_bar_folders_names", "names": ["Ünïcode"]},
        id="unicode",
    ),
]


@pytest.mark.parametrize(("bookmarks", "rule"), BOOKMARKS)
def test_is_expected_bookmarks(osworld: OSWorld, bookmarks: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_expected_bookmarks", bookmarks, rule)


# --- is_expected_search_query -----------------------------------------------------------------


def _search_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_expected_search_query"):
        for name, url in {
            "google": "https://www.google.com/search?q=nereida",
            "google-more": "https://www.google.com/search?q=nereida&oq=nereida&sourceid=chrome",
            "no-www": "http://google.com/search?q=nereida#frag",
            "other-query": "https://www.google.com/search?q=nereidas",
            "upper": "HTTPS://WWW.GOOGLE.COM/SEARCH?Q=NEREIDA",
            "sorry": "https://www.google.com/sorry/index?continue=https://www.google.com/search%3Fq%3Dnereida",
            "bing": "https://www.bing.com/search?q=nereida",
        }.items():
            cases.append(pytest.param({"url": url, "title": "t"}, rules, id=f"{task}-{name}"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
        cases.append(pytest.param({"title": "t"}, rules, id=f"{task}-no-url"))
    return cases


SEARCH = [
    *_search_cases(),
    pytest.param({"url": "https://a.com/?q=x"}, {"expect": {"pattern": r"q=x"}}, id="plain"),
    pytest.param("https://a.com/?q=x", {"expect": {"pattern": "q"}}, id="text-info"),
    pytest.param({"url": "https://a.com"}, {"expect": {}}, id="no-pattern"),
]


@pytest.mark.parametrize(("active", "rules"), SEARCH)
def test_is_expected_search_query(osworld: OSWorld, active: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_expected_search_query", active, rules)


# --- cookies and history ----------------------------------------------------------------------


def cookie(host: str) -> list[Any]:
    """A row of Chrome's ``cookies`` table (``SELECT *``): creation time, host key, ..."""
    return [13350000000000000, host, "", "session-id", "", "/", 0, 1, 1]


def _cookie_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_cookie_deleted"):
        for name, rows in {
            "kept": [cookie(".google.com"), cookie(".amazon.com")],
            "deleted": [cookie(".google.com")],
            "www-host": [cookie("www.amazon.com")],
            "subdomain": [cookie("smile.amazon.com")],
            "other-suffix": [cookie(".amazon.co.uk")],
            "no-cookies": [],
        }.items():
            cases.append(pytest.param(rows, rules, id=f"{task}-{name}"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
    return cases


COOKIES = [
    *_cookie_cases(),
    pytest.param([cookie("a.com")], {"type": "hosts", "domains": ["a.com"]}, id="unknown-type"),
    pytest.param([cookie("a.com")], {"type": "domains", "domains": []}, id="no-domains"),
    pytest.param([cookie("münchen.de")], {"type": "domains", "domains": ["münchen.de"]}, id="u"),
]


@pytest.mark.parametrize(("rows", "rule"), COOKIES)
def test_is_cookie_deleted(osworld: OSWorld, rows: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_cookie_deleted", rows, rule)


def visit(url: str) -> list[Any]:
    """A row of the ``history`` getter: url, title, last visit time."""
    return [url, "title", 13350000000000000]


def _history_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_history_deleted"):
        for name, rows in {
            "kept": [visit("https://www.youtube.com/watch?v=x"), visit("https://nytimes.com")],
            "deleted": [visit("https://www.nytimes.com/")],
            "in-query": [visit("https://google.com/search?q=youtube")],
            "upper": [visit("https://www.YOUTUBE.com/")],
            "no-history": [],
        }.items():
            cases.append(pytest.param(rows, rules, id=f"{task}-{name}"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
    return cases


HISTORY = [
    *_history_cases(),
    pytest.param([visit("a")], {"type": "domains", "keywords": ["a"]}, id="unknown-type"),
    pytest.param([visit("a")], {"type": "keywords", "keywords": []}, id="no-keywords"),
    pytest.param([visit("https://ä.de")], {"type": "keywords", "keywords": ["ä"]}, id="unicode"),
]


@pytest.mark.parametrize(("rows", "rule"), HISTORY)
def test_check_history_deleted(osworld: OSWorld, rows: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_history_deleted", rows, rule)


# --- desktop shortcuts, flags, font size, Steam cart --------------------------------------------

_DESKTOP_FILE = (
    "[Desktop Entry]\nVersion=1.0\nName=Play Puzzle Game 2048\n"
    "Exec=/opt/google/chrome/google-chrome --app=https://play2048.co/\nType=Application\n"
)


def _shortcut_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_shortcut_on_desktop"):
        for name, files in {
            "present": {"/home/user/Desktop/2048.desktop": _DESKTOP_FILE},
            "among-others": {"a.desktop": "Name=Other\n", "b.desktop": _DESKTOP_FILE},
            "name-last-line": {"a.desktop": "Exec=x\nName=" + rules.get("name", "") + "\n"},
            "no-final-newline": {"a.desktop": "Exec=x\nName=" + rules.get("name", "")},
            "crlf": {"a.desktop": _DESKTOP_FILE.replace("\n", "\r\n")},
            "other-name": {"a.desktop": _DESKTOP_FILE.replace("2048", "4096")},
            "no-files": {},
        }.items():
            cases.append(pytest.param(files, rules, id=f"{task}-{name}"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
    return cases


SHORTCUTS = [
    *_shortcut_cases(),
    pytest.param(
        {"a.desktop": _DESKTOP_FILE},
        {"type": "exec", "exec": "/opt/google/chrome/google-chrome --app=https://play2048.co/"},
        id="exec",
    ),
    pytest.param({"a.desktop": _DESKTOP_FILE}, {"type": "exec", "exec": "chrome"}, id="exec-part"),
    pytest.param({"a.desktop": _DESKTOP_FILE}, {"type": "url", "url": "x"}, id="url-type"),
    pytest.param({"a.desktop": _DESKTOP_FILE}, {"type": "id"}, id="id-type"),
    pytest.param({"a.desktop": "Name=Zürich\n"}, {"type": "name", "name": "Zürich"}, id="unicode"),
]


@pytest.mark.parametrize(("shortcuts", "rule"), SHORTCUTS)
def test_is_shortcut_on_desktop(osworld: OSWorld, shortcuts: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_shortcut_on_desktop", shortcuts, rule)


EXPERIMENTS = [
    pytest.param(["a@1", "b"], {"type": "names", "names": ["a", "b"]}, id="equal"),
    pytest.param(["b", "a@1"], {"type": "names", "names": ["a", "b"]}, id="order"),
    pytest.param(["a@1@2"], {"type": "names", "names": ["a"]}, id="two-ats"),
    pytest.param([], {"type": "names", "names": []}, id="both-empty"),
    pytest.param(["a"], {"type": "names", "names": ["a", "b"]}, id="missing"),
    pytest.param(["a"], {"type": "values", "names": ["a"]}, id="unknown-type"),
    pytest.param(None, {"type": "names", "names": []}, id="none"),
    pytest.param(["enable-ä@1"], {"type": "names", "names": ["enable-ä"]}, id="unicode"),
]


@pytest.mark.parametrize(("enabled", "rule"), EXPERIMENTS)
def test_check_enabled_experiments(osworld: OSWorld, enabled: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_enabled_experiments", enabled, rule)


_FONT_RULES = [rules for _, rules in real_rules("check_font_size")] or [
    {"type": "range", "min": 16, "max": 99999}
]

FONT_SIZE = [
    *[
        pytest.param({"default_font_size": size, "default_fixed_font_size": 13}, rules, id=name)
        for rules in _FONT_RULES
        for name, size in [("default", 16), ("larger", 20), ("huge", 99999), ("small", 12)]
    ],
    pytest.param({"default_font_size": 20}, {"type": "value", "value": 20}, id="value"),
    pytest.param({"default_font_size": 20}, {"type": "value", "value": 20.0}, id="value-float"),
    pytest.param({"default_font_size": 20}, {"type": "value", "value": "20"}, id="value-text"),
    pytest.param({"default_font_size": 20}, {"type": "min", "value": 1}, id="unknown-type"),
    pytest.param({}, {"type": "value", "value": 16}, id="no-size"),
    pytest.param({"default_font_size": "20"}, {"type": "range", "min": 1, "max": 30}, id="text"),
]


@pytest.mark.parametrize(("font_size", "rule"), FONT_SIZE)
def test_check_font_size(osworld: OSWorld, font_size: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_font_size", font_size, rule)


_CART_RULES = [rules for _, rules in real_rules("is_added_to_steam_cart")] or [
    {"items": ["The Dota 2 Official Soundtrack"]}
]

STEAM = [
    *[
        pytest.param({"title": "Cart", "url": "u", "content": content}, rules, id=name)
        for rules in _CART_RULES
        for name, content in [
            ("in-cart", "<div>" + "</div><div>".join(rules["items"]) + "</div>"),
            ("empty-cart", "<div>Your cart is empty</div>"),
            ("case", "<div>" + rules["items"][0].upper() + "</div>"),
            ("escaped", "<div>" + rules["items"][0].replace(" ", "&nbsp;") + "</div>"),
        ]
    ],
    pytest.param({"content": "abc"}, {"items": []}, id="no-items"),
    pytest.param({"content": "Ä"}, {"items": ["Ä"]}, id="unicode"),
    pytest.param({"title": "x"}, {"items": ["a"]}, id="no-content"),
]


@pytest.mark.parametrize(("info", "rule"), STEAM)
def test_is_added_to_steam_cart(osworld: OSWorld, info: Any, rule: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_added_to_steam_cart", info, rule)
