"""Reference ``osworld-2026.04`` for the Chrome metrics and getters that changed since 1.0.2.

OSWorld's code of April 2026 (github.com/ljxpython/OSWorldUse f6cee71, ``metrics/chrome.py``
and ``getters/chrome.py``) is not on PyPI, so these cases are not run against it: each
expected value below was worked out by reading that code, on the real task files' rules and
configs where they exist (``parity_harness`` reads them at collection time; none are copied
here). Each case also states desktop-env 1.0.2's result, which the ``_1_0_2`` variants must
keep (``test_parity_chrome.py`` checks the metrics against 1.0.2 itself).

What changed, for an x86_64 Linux desktop:

- ``is_expected_installed_extensions``: "Zoom Chrome Extension" and "Zoom for Google Chrome"
  count as the same name on both sides (multi_apps/873cafdd expects the latter).
- ``is_shortcut_on_desktop``: besides the exact ``Name=<name>\\n`` line, a ``Name=`` line whose
  value contains the expected name or is contained in it, case ignored, passes (``exec``
  rules: the same with ``Exec=``, case kept).
- ``chrome_color_scheme`` (new): every profile's Preferences, newest first; the first that says
  light or dark decides; the files are read again while Chrome may still be writing.
- ``chrome_appearance_mode_ui`` (new): the settings page's theme prefs and its selected
  controls' texts; the files (``chrome_color_scheme``) when the page tells nothing.
- ``active_tab_info``: the reload waits for ``load`` (1.0.2: ``networkidle``), and a Playwright
  timeout gives the page as it stands, titled "Load timeout" (1.0.2: None).
- ``open_tabs_info``: a tab that times out is titled "Load timeout" (1.0.2: "Error
  encountered").
- ``page_info``: the page opens in the profile's own context, its cookies included (1.0.2: a
  fresh context); a timeout once there is titled "Load timeout" (1.0.2: "Error encountered").
- 22 other changed getters differ only on ARM desktops (2026.04 asks the desktop's machine,
  1.0.2 the host's, for the snap Chromium's profile and accessibility name and the browser to
  launch when none answers): on x86_64 the same functions serve both references (20 of them;
  ``extensions_installed_from_shop`` and ``chrome_saved_address``, which no task file uses, are
  not implemented here; ``gotoRecreationPage_and_get_html_content``, whose 2026.04 version
  never reaches the campground, is tested against a real browser in
  tests/evaluation/test_recreation_getter.py).

Getters that talk to Chrome run here against stand-ins for Playwright's objects (never a
browser); the stand-ins raise Playwright's own ``TimeoutError``, the exception the two
references treat differently.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks
from parity_harness import real_checks, real_rules

from osworld_gym.errors import GuestHTTPError
from osworld_gym.evaluation.getters import EvalContext, getters_for
from osworld_gym.evaluation.getters import browser as getters_browser
from osworld_gym.evaluation.getters import chrome as getters_chrome
from osworld_gym.evaluation.getters.browser import (
    appearance_from_settings,
    get_active_tab_info,
    get_active_tab_info_1_0_2,
    get_chrome_appearance_mode_ui,
    get_open_tabs_info,
    get_open_tabs_info_1_0_2,
    get_page_info,
    get_page_info_1_0_2,
)
from osworld_gym.evaluation.getters.chrome import (
    color_scheme_from_preferences,
    get_chrome_color_scheme,
)
from osworld_gym.evaluation.metrics import chrome
from osworld_gym.evaluation.metrics._urls import accessibility_tree_url
from osworld_gym.evaluation.metrics.registry import metrics_for
from osworld_gym.evaluation.references import OSWORLD_1_0_2, OSWORLD_2026_04
from osworld_gym.guest.client import CommandResult
from osworld_gym.task_setup import cdp
from osworld_gym.task_setup.downloads import AssetCache

pytestmark = pytest.mark.parity

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # without the chrome extra: the browser getters' cases skip

    class PlaywrightTimeout(Exception):  # type: ignore[no-redef]
        """Stands in for Playwright's timeout, so that the cases can be built."""


METRICS_2026_04 = metrics_for("osworld", OSWORLD_2026_04)
HOME = "/home/user/.config/google-chrome"
DEFAULT_PREFS = f"{HOME}/Default/Preferences"


def effective(metric: Callable[..., float], *args: Any) -> float:
    """The score our evaluator records: a metric that raises scores 0."""
    try:
        return metric(*args)
    except Exception:  # noqa: BLE001 - recorded as 0 with the error
        return 0.0


# --- is_expected_installed_extensions -------------------------------------------------------------

ZOOM_NAMES = ("Zoom Chrome Extension", "Zoom for Google Chrome")


def _other_zoom(name: str) -> str:
    return ZOOM_NAMES[1 - ZOOM_NAMES.index(name)] if name in ZOOM_NAMES else name


def _extension_cases() -> list[Any]:
    rules_list = real_rules("is_expected_installed_extensions") or [
        ("none", {"expected": ["Zoom for Google Chrome", "Momentum"]})
    ]
    cases = []
    for task, rules in rules_list:
        names = list(rules["expected"])
        has_zoom = any(n in ZOOM_NAMES for n in names)
        renamed = [_other_zoom(n) for n in names]  # the store's other name for Zoom
        variants: dict[str, tuple[Any, float, float]] = {
            "exact": (names, 1.0, 1.0),
            "more": ([*names, "uBlock Origin"], 1.0, 1.0),
            "other-zoom-name": (renamed, 1.0, 0.0 if has_zoom else 1.0),
            "both-zoom-names": ([*names, *renamed], 1.0, 1.0),
            "one-missing": (names[1:], 0.0, 0.0),
            "case": ([n.lower() for n in names], 0.0, 0.0),
            "empty": ([], 0.0, 0.0),
            "none": (None, 0.0, 0.0),
            # the getter's answer when there is no Preferences file: its letters
            "no-preferences": ("Google", 0.0, 0.0),
        }
        for name, (installed, new, old) in variants.items():
            cases.append(pytest.param(installed, rules, new, old, id=f"{task}-{name}"))
    return cases


EXTENSIONS = [
    *_extension_cases(),
    pytest.param(
        ["Zoom for Google Chrome"],
        {"expected": ["Zoom Chrome Extension"]},
        1.0,
        0.0,
        id="old-name-expected",
    ),
    pytest.param(
        ["zoom for google chrome"],
        {"expected": ["Zoom Chrome Extension"]},
        0.0,
        0.0,
        id="alias-case",
    ),
    pytest.param(["Zoom"], {"expected": ["Zoom for Google Chrome"]}, 0.0, 0.0, id="short-name"),
    pytest.param(["a"], {"expected": []}, 1.0, 1.0, id="nothing-expected"),
]


@pytest.mark.parametrize(("installed", "expected", "score", "score_1_0_2"), EXTENSIONS)
def test_is_expected_installed_extensions(
    installed: Any, expected: dict[str, Any], score: float, score_1_0_2: float
) -> None:
    metric = METRICS_2026_04["is_expected_installed_extensions"]
    assert effective(metric, installed, expected) == score
    assert effective(chrome.is_expected_installed_extensions_1_0_2, installed, expected) == (
        score_1_0_2
    )


@needs_osworld_tasks
def test_873cafdd_expects_zooms_newer_name() -> None:
    (_, result, expected, _), *_ = [
        c for c in real_checks("is_expected_installed_extensions") if c[0] == "873cafdd"
    ]
    assert result["type"] == "find_installed_extension_name"
    assert "Zoom for Google Chrome" in expected["rules"]["expected"]


# --- is_shortcut_on_desktop -----------------------------------------------------------------------

_ENTRY = "[Desktop Entry]\nVersion=1.0\nName={name}\nExec={exec}\nType=Application\n"
_EXEC = "/opt/google/chrome/google-chrome --profile-directory=Default --app-id=abc"


def _desktop_file(name: str, exec_line: str = _EXEC) -> str:
    return _ENTRY.format(name=name, exec=exec_line)


def _shortcut_cases() -> list[Any]:
    rules_list = real_rules("is_shortcut_on_desktop") or [
        ("none", {"type": "name", "name": "Play Puzzle Game 2048"})
    ]
    cases = []
    for task, rules in rules_list:
        name = rules["name"]
        first_word = name.split()[0]
        variants: dict[str, tuple[Any, float, float]] = {
            "exact": ({"a.desktop": _desktop_file(name)}, 1.0, 1.0),
            "among-others": (
                {"b.desktop": _desktop_file("Files"), "a.desktop": _desktop_file(name)},
                1.0,
                1.0,
            ),
            "crlf": ({"a.desktop": _desktop_file(name).replace("\n", "\r\n")}, 1.0, 0.0),
            "no-final-newline": ({"a.desktop": f"Exec=x\nName={name}"}, 1.0, 0.0),
            "lower-case": ({"a.desktop": _desktop_file(name.lower())}, 1.0, 0.0),
            "upper-case": ({"a.desktop": _desktop_file(name.upper())}, 1.0, 0.0),
            "longer-title": ({"a.desktop": _desktop_file(f"{name} - Math is Fun")}, 1.0, 0.0),
            "shorter-title": ({"a.desktop": _desktop_file(first_word)}, 1.0, 0.0),
            "last-word": ({"a.desktop": _desktop_file(name.split()[-1])}, 1.0, 0.0),
            "other-title": ({"a.desktop": _desktop_file("Tetris Classic")}, 0.0, 0.0),
            "empty-name": ({"a.desktop": _desktop_file("")}, 1.0, 0.0),  # "" is in any text
            "generic-name-line": ({"a.desktop": f"GenericName={name}\n"}, 1.0, 1.0),
            "generic-name-no-newline": ({"a.desktop": f"GenericName={name}"}, 0.0, 0.0),
            "translated-name": ({"a.desktop": f"Name[de]={name}\n"}, 0.0, 0.0),
            "name-with-space": ({"a.desktop": f"Name = {name}\n"}, 0.0, 0.0),
            "no-files": ({}, 0.0, 0.0),
            "none": (None, 0.0, 0.0),  # OSWorld raises (len(None)): scored 0
        }
        for label, (files, new, old) in variants.items():
            cases.append(pytest.param(files, rules, new, old, id=f"{task}-{label}"))
    return cases


_EXEC_FILE = {"a.desktop": _desktop_file("App")}
SHORTCUTS = [
    *_shortcut_cases(),
    pytest.param(_EXEC_FILE, {"type": "exec", "exec": _EXEC}, 1.0, 1.0, id="exec-exact"),
    pytest.param(_EXEC_FILE, {"type": "exec", "exec": "google-chrome"}, 1.0, 0.0, id="exec-part"),
    pytest.param(
        _EXEC_FILE,
        {"type": "exec", "exec": _EXEC + " --new-window"},
        1.0,
        0.0,
        id="exec-longer-expected",
    ),
    pytest.param(_EXEC_FILE, {"type": "exec", "exec": "GOOGLE-CHROME"}, 0.0, 0.0, id="exec-case"),
    pytest.param(
        {"a.desktop": "Exec=chromium\r\n"},
        {"type": "exec", "exec": "chromium"},
        1.0,
        0.0,
        id="exec-crlf",
    ),
    pytest.param(
        {"a.desktop": "Name=Zürich\n"},
        {"type": "name", "name": "ZÜRICH"},
        1.0,
        0.0,
        id="unicode-case",
    ),
]


@pytest.mark.parametrize(("shortcuts", "rule", "score", "score_1_0_2"), SHORTCUTS)
def test_is_shortcut_on_desktop(
    shortcuts: Any, rule: dict[str, Any], score: float, score_1_0_2: float
) -> None:
    metric = METRICS_2026_04["is_shortcut_on_desktop"]
    assert effective(metric, shortcuts, rule) == score
    assert effective(chrome.is_shortcut_on_desktop_1_0_2, shortcuts, rule) == score_1_0_2


@pytest.mark.parametrize("kind", ["url", "id", "title"])
def test_is_shortcut_on_desktop_other_rule_types_raise_in_both(kind: str) -> None:
    for metric in (METRICS_2026_04["is_shortcut_on_desktop"], chrome.is_shortcut_on_desktop_1_0_2):
        with pytest.raises(TypeError, match="not support yet"):
            metric(_EXEC_FILE, {"type": kind, kind: "x"})


# --- a desktop that holds Chrome's profiles -------------------------------------------------------

Content = bytes | None


class ProfileGuest:
    """A guest client whose desktop holds Chrome profile files.

    ``files``: path -> content, or a list of contents handed out one per read (the last one
    stays: Chrome wrote it). ``None`` is a file the desktop does not hand over. ``listing``:
    what the desktop's profile listing prints (a JSON text), ``None`` for a failed listing.
    """

    def __init__(
        self, files: dict[str, Content | list[Content]], listing: str | None = None
    ) -> None:
        self.files = {p: list(c) if isinstance(c, list) else [c] for p, c in files.items()}
        self.listing = listing
        self.reads: list[str] = []

    def execute(self, command: Any, *, shell: bool = False, timeout: Any = None) -> CommandResult:
        if self.listing is None:
            return CommandResult("", "python3: not found", 127)
        return CommandResult(self.listing, "", 0)

    def download(self, path: str) -> bytes:
        self.reads.append(path)
        contents = self.files.get(path, [None])
        content = contents.pop(0) if len(contents) > 1 else contents[0]
        if content is None:
            raise GuestHTTPError("/file", 404, {"error": "File not found"})
        return content


def prefs(scheme2: Any = ..., scheme: Any = ..., system_theme: Any = ...) -> bytes:
    """A Preferences file with the given theme values (``...``: the key is absent)."""
    theme = {k: v for k, v in (("color_scheme2", scheme2), ("color_scheme", scheme)) if v != ...}
    data: dict[str, Any] = {"browser": {"theme": theme}}
    if system_theme != ...:
        data["extensions"] = {"theme": {"system_theme": system_theme}}
    return json.dumps(data).encode()


def listing(*paths_and_ages: tuple[str, float]) -> str:
    return json.dumps([[path, age] for path, age in paths_and_ages])


def _ctx(tmp_path: Path, client: Any, **services: str) -> EvalContext:
    return EvalContext(
        client=client, task_id="t", cache=AssetCache(tmp_path / "cache"), services=services
    )


@pytest.fixture
def quick_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chrome's flush window shortened: re-reads follow each other at once, for 50 ms."""
    monkeypatch.setattr(getters_chrome, "_FLUSH_WAIT_S", 0.05)
    monkeypatch.setattr(getters_chrome, "_FLUSH_POLL_S", 0.0)


# --- chrome_color_scheme: reading one Preferences file --------------------------------------------

SCHEMES = [
    pytest.param({}, "system", id="empty"),
    pytest.param(json.loads(prefs(2, 2)), "dark", id="dark"),
    pytest.param(json.loads(prefs(1)), "light", id="light"),
    pytest.param(json.loads(prefs(0, 2)), "system", id="scheme2-wins"),
    pytest.param(json.loads(prefs(scheme=2)), "dark", id="old-key-only"),
    pytest.param(json.loads(prefs(None, 2)), "system", id="scheme2-null-hides-old-key"),
    pytest.param(json.loads(prefs(" Dark ")), "dark", id="text-trimmed"),
    pytest.param(json.loads(prefs("default")), "system", id="text-default"),
    pytest.param(json.loads(prefs("2")), "dark", id="digit-text"),
    pytest.param(json.loads(prefs("blue")), "system", id="other-text"),
    pytest.param(json.loads(prefs(True)), "light", id="true-is-one"),
    pytest.param(json.loads(prefs(False)), "system", id="false-is-zero"),
    pytest.param(json.loads(prefs(2.7)), "dark", id="float-truncated"),
    pytest.param(json.loads(prefs(3)), "system", id="unknown-number"),
    pytest.param(json.loads(prefs([2])), "system", id="list"),
    pytest.param(json.loads(prefs(2, system_theme=0)), "light", id="classic-theme"),
    pytest.param(json.loads(prefs(2, system_theme=False)), "light", id="classic-false"),
    pytest.param(json.loads(prefs(2, system_theme="0")), "light", id="classic-text"),
    pytest.param(json.loads(prefs(2, system_theme=1)), "dark", id="gtk-theme"),
]


@pytest.mark.parametrize(("data", "mode"), SCHEMES)
def test_color_scheme_from_one_file(data: dict[str, Any], mode: str) -> None:
    assert color_scheme_from_preferences(data) == mode


@pytest.mark.parametrize(
    "content",
    [b"", b"{oops", b"[1]", b'{"browser": []}', b'{"browser": {"theme": {"color_scheme2": NaN}}}'],
    ids=["empty", "not-json", "not-object", "browser-list", "nan"],
)
def test_unreadable_file_is_skipped_for_the_next(
    tmp_path: Path, quick_flush: None, content: bytes
) -> None:
    older = f"{HOME}/Profile 1/Preferences"
    guest = ProfileGuest(
        {DEFAULT_PREFS: content, older: prefs(2)}, listing((DEFAULT_PREFS, 20), (older, 10))
    )
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == "dark"
    only = ProfileGuest({DEFAULT_PREFS: content}, listing((DEFAULT_PREFS, 20)))
    assert get_chrome_color_scheme(_ctx(tmp_path, only), {}) == "system"


# --- chrome_color_scheme: profiles and Chrome's late writes ---------------------------------------

PROFILE_1 = f"{HOME}/Profile 1/Preferences"
GUEST = f"{HOME}/Guest Profile/Preferences"

PROFILES = [
    # newest first: the first file that says light or dark decides
    pytest.param(
        {DEFAULT_PREFS: prefs(2), PROFILE_1: prefs(1)},
        [(DEFAULT_PREFS, 20), (PROFILE_1, 10)],
        "dark",
        id="newest-dark",
    ),
    pytest.param(
        {DEFAULT_PREFS: prefs(2), PROFILE_1: prefs(1)},
        [(DEFAULT_PREFS, 10), (PROFILE_1, 20)],
        "light",
        id="newest-light",
    ),
    pytest.param(
        {DEFAULT_PREFS: prefs(0), PROFILE_1: prefs(2)},
        [(DEFAULT_PREFS, 20), (PROFILE_1, 10)],
        "dark",
        id="system-does-not-decide",
    ),
    pytest.param(
        {DEFAULT_PREFS: prefs(0), GUEST: prefs(0)},
        [(DEFAULT_PREFS, 20), (GUEST, 10)],
        "system",
        id="all-system",
    ),
    pytest.param(
        {DEFAULT_PREFS: None, GUEST: prefs(2)},
        [(DEFAULT_PREFS, 20), (GUEST, 10)],
        "dark",
        id="gone-since-listed",
    ),
    pytest.param(
        {DEFAULT_PREFS: prefs(2), PROFILE_1: prefs(1)},
        [(PROFILE_1, 5), (DEFAULT_PREFS, 5)],
        "light",
        id="same-age-listing-order",
    ),
    # no profile listed: the default profile's file
    pytest.param({DEFAULT_PREFS: prefs(2)}, [], "dark", id="none-listed"),
    pytest.param({}, [], "system", id="no-chrome"),
]


@pytest.mark.parametrize(("files", "ages", "mode"), PROFILES)
def test_chrome_color_scheme_over_profiles(
    tmp_path: Path,
    quick_flush: None,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, bytes],
    ages: list[tuple[str, float]],
    mode: str,
) -> None:
    # "~/.config/google-chrome/Default/Preferences" is where the default profile's file is read
    # from when nothing is listed; the fake desktop's home is /home/user.
    monkeypatch.setattr(getters_chrome, "CHROME_PROFILE", f"{HOME}/Default")
    guest = ProfileGuest(files, listing(*ages))
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == mode


def test_a_failed_listing_reads_the_default_profile(tmp_path: Path, quick_flush: None) -> None:
    guest = ProfileGuest({"~/.config/google-chrome/Default/Preferences": prefs(2)}, None)
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == "dark"
    odd = ProfileGuest({"~/.config/google-chrome/Default/Preferences": prefs(1)}, '{"a": 1}')
    assert get_chrome_color_scheme(_ctx(tmp_path, odd), {}) == "light"


LATE_WRITES = [
    # Chrome writes the user's choice a moment later: light ends the wait
    pytest.param([prefs(2), prefs(2), prefs(1)], "light", id="dark-then-light"),
    # otherwise the last read decides
    pytest.param([prefs(2), prefs(0)], "system", id="dark-then-system"),
    pytest.param([prefs(0), prefs(2)], "dark", id="system-then-dark"),
    pytest.param([prefs(2), None], "dark", id="dark-then-unreadable"),
    pytest.param([None, b"", prefs(2)], "dark", id="unreadable-then-dark"),
]


@pytest.mark.parametrize(("reads", "mode"), LATE_WRITES)
def test_chrome_color_scheme_waits_for_chromes_write(
    tmp_path: Path, quick_flush: None, reads: list[Content], mode: str
) -> None:
    guest = ProfileGuest({DEFAULT_PREFS: reads}, listing((DEFAULT_PREFS, 1)))
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == mode


def test_light_at_first_read_answers_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(getters_chrome, "_FLUSH_WAIT_S", 60.0)  # would fail the test's time
    guest = ProfileGuest({DEFAULT_PREFS: prefs(1)}, listing((DEFAULT_PREFS, 1)))
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == "light"
    assert guest.reads == [DEFAULT_PREFS]


def test_dark_is_read_again_until_the_window_closes(tmp_path: Path) -> None:
    """The default window: re-read for about 4 s (2026.04's five reads a second apart)."""
    guest = ProfileGuest({DEFAULT_PREFS: prefs(2)}, listing((DEFAULT_PREFS, 1)))
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == "dark"
    assert 5 <= len(guest.reads) <= 10


def test_profile_listing_runs_in_the_desktop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing script itself, run here over two profile roots (one listed twice)."""
    root, other = tmp_path / "home" / "google-chrome", tmp_path / "other"
    for folder, age in [
        ("Default", 30),
        ("Profile 2", 40),
        ("Guest Profile", 10),
        ("System Profile", 50),
        ("Profile 1", 20),
    ]:
        (root / folder).mkdir(parents=True)
        (root / folder / "Preferences").write_text("{}")
        os.utime(root / folder / "Preferences", (age, age))  # written at that second
    (root / "Profile 3").mkdir()  # a profile without Preferences yet
    monkeypatch.setattr(getters_chrome, "_PROFILE_ROOTS", (str(root), str(root), str(other)))

    class LocalGuest:
        def execute(self, command: list[str], **_: Any) -> CommandResult:
            done = subprocess.run(
                [sys.executable, *command[1:]], capture_output=True, text=True, check=False
            )
            return CommandResult(done.stdout, done.stderr, done.returncode)

    paths = getters_chrome._preference_files(_ctx(tmp_path, LocalGuest()))
    assert [Path(p).parent.name for p in paths] == [
        "Profile 2",
        "Default",
        "Profile 1",
        "Guest Profile",
    ]


@needs_osworld_tasks
def test_93eabf48_setup_leaves_chrome_dark(tmp_path: Path, quick_flush: None) -> None:
    """The task's setup writes 2 (dark) to both scheme keys of the default profile."""
    (task,) = (OSWORLD_TASKS / "examples" / "chrome").glob("93eabf48-*.json")
    setup = json.loads(task.read_text())["config"][0]["parameters"]["command"]
    assert "/home/user/.config/google-chrome/Default/Preferences" in setup
    assert re.search(r"\['color_scheme'\] = 2", setup)
    assert re.search(r"\['color_scheme2'\] = 2", setup)
    guest = ProfileGuest({DEFAULT_PREFS: prefs(2, 2)}, listing((DEFAULT_PREFS, 1)))
    assert get_chrome_color_scheme(_ctx(tmp_path, guest), {}) == "dark"


# --- stand-ins for Playwright's browser, contexts and pages ---------------------------------------


class Site:
    """How a page behaves: which load states it never reaches, what it shows."""

    def __init__(
        self,
        title: str = "Page",
        content: str = "<p>page</p>",
        profile_content: str | None = None,
        never: tuple[str, ...] = (),
        url_after_load: str | None = None,
        title_error: Exception | None = None,
        goto_error: Exception | None = None,
        content_error: Exception | None = None,
    ) -> None:
        self.title = title
        self.content = content
        self.profile_content = profile_content  # what it shows with the profile's cookies
        self.never = never  # load states it never reaches ("load", "networkidle")
        self.url_after_load = url_after_load  # a script moves it on once loaded
        self.title_error = title_error
        self.goto_error = goto_error
        self.content_error = content_error


_STATES = ("domcontentloaded", "load", "networkidle")


class FakePage:
    def __init__(self, context: FakeContext, sites: dict[str, Site], url: str = "about:blank"):
        self.context, self.sites, self.url = context, sites, url
        self.closed = False
        self.waited: list[str] = []
        self.evaluated: Any = None

    @property
    def site(self) -> Site:
        return self.sites.get(self.url.split("#")[0], Site())

    def set_default_timeout(self, ms: float) -> None:
        pass

    def _reach(self, state: str) -> None:
        self.waited.append(state)
        if state in self.site.never:
            raise PlaywrightTimeout(f"Timeout 60000ms exceeded waiting for {state}")
        if self.site.url_after_load and _STATES.index(state) > _STATES.index("load"):
            self.url = self.site.url_after_load

    def goto(self, url: str, wait_until: str = "load", timeout: float = 0) -> None:
        site = self.sites.get(url, Site())
        if site.goto_error is not None:
            raise site.goto_error
        self.url = url  # committed: the address is the page's from now on
        self._reach(wait_until)

    def wait_for_load_state(self, state: str = "load", timeout: float = 0) -> None:
        self._reach(state)

    def title(self) -> str:
        if self.site.title_error is not None:
            raise self.site.title_error
        return self.site.title

    def content(self) -> str:
        if self.site.content_error is not None:
            raise self.site.content_error
        if self.context.profile and self.site.profile_content is not None:
            return self.site.profile_content
        return self.site.content

    def close(self) -> None:
        self.closed = True
        self.context.pages.remove(self)

    def is_closed(self) -> bool:
        return self.closed

    # the settings page
    def wait_for_function(self, expression: str, timeout: float = 0, polling: Any = None) -> None:
        self.waited.append("prefs")
        if self.context.browser.settings is None:
            raise PlaywrightTimeout("Timeout 2500ms exceeded")

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        self.evaluated = arg
        return self.context.browser.settings_read


class FakeContext:
    def __init__(self, browser: FakeBrowser, profile: bool) -> None:
        self.browser, self.profile = browser, profile
        self.pages: list[FakePage] = []
        self.closed = False

    def new_page(self) -> FakePage:
        page = FakePage(self, self.browser.sites)
        self.pages.append(page)
        return page

    def close(self) -> None:
        self.closed = True
        self.browser.contexts.remove(self)


class FakeBrowser:
    """A browser whose first context is the user's profile (its cookies).

    ``settings``: what the settings page's probe reads (``{"prefs": ..., "selected": ...}``);
    ``None``: its prefs never load, and the probe then finds nothing.
    """

    def __init__(
        self,
        sites: dict[str, Site] | None = None,
        tabs: tuple[str, ...] | list[str] = (),
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.sites = sites or {}
        self.contexts = [FakeContext(self, profile=True)]
        for url in tabs:
            self.contexts[0].pages.append(FakePage(self.contexts[0], self.sites, url))
        self.settings = settings

    @property
    def settings_read(self) -> dict[str, Any]:
        return self.settings if self.settings is not None else {"prefs": {}, "selected": []}

    def new_context(self) -> FakeContext:
        context = FakeContext(self, profile=False)
        self.contexts.append(context)
        return context


@pytest.fixture
def browser_at(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeBrowser]:
    """Serve getters' CDP sessions from a fake browser (``None``: no browser answers)."""
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("Playwright (the chrome extra) is not installed: no timeout to tell apart")

    def use(browser: FakeBrowser | None, active: str | None = None) -> FakeBrowser | None:
        def session(ctx: Any, action: Callable[[Any], Any], timeout: float = 180.0) -> Any:
            if browser is None:
                raise cdp.BrowserUnavailableError("no Chrome DevTools endpoint answered")
            return action(browser)

        monkeypatch.setattr(getters_browser, "_session", session)
        monkeypatch.setattr(
            cdp, "active_tab", lambda endpoint, timeout=10.0: {"url": active} if active else None
        )
        return browser

    return use


def _browser_ctx(tmp_path: Path, client: Any = None) -> EvalContext:
    return _ctx(tmp_path, client or ProfileGuest({}, "[]"), cdp="http://127.0.0.1:9222")


# --- active_tab_info ------------------------------------------------------------------------------

TICKETS = "https://www.ticketmaster.com/help/Ticket-Delivery-FAQs"
BAGS = "https://www.united.com/en/us/checked-bag-fee-calculator/any-flights"


# A correct last page for each task whose check reads ``active_tab_info``.
CORRECT_PAGES = {
    "f3b19d1e": TICKETS,
    "c1fa57f3": BAGS,
    "f8cfa149": "https://www.google.com/search?q=nereida",
    "a96b564e": "https://discussions.flightaware.com/t/the-banter-thread/4412",
    "da46d875": "https://www.mbta.com/events/book/CharlieCardStoreAppointments@mbta.com/",
}
_TAB_METRICS = (
    "is_expected_url_pattern_match",
    "is_expected_search_query",
    "is_expected_active_tab",
)


def _active_tab_checks() -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(task, metric, getter config, rules) of the real checks on ``active_tab_info``."""
    return [
        (task, func, result, expected["rules"])
        for func in _TAB_METRICS
        for task, result, expected, _ in real_checks(func)
        if isinstance(result, dict)
        and result.get("type") == "active_tab_info"
        and task in CORRECT_PAGES
    ]


# How the page behaves -> (2026.04's score, 1.0.2's score) on a correct answer.
LOADS = {
    # both reach the same page
    "loads": (Site(title="Help"), 1.0, 1.0),
    # keeps polling the network: 1.0.2's networkidle wait times out (None)
    "busy-network": (Site(never=("networkidle",)), 1.0, 0.0),
    # never finishes loading, but the address is the page's: 2026.04's "Load timeout" page
    "never-loads": (Site(never=("load", "networkidle")), 1.0, 0.0),
    # a script moves it to the home page after it loaded: 1.0.2 sees where it ended
    "moves-on": (Site(url_after_load="https://www.example.com/"), 1.0, 0.0),
    # another failure: None in both
    "fails": (Site(title_error=RuntimeError("Target closed")), 0.0, 0.0),
}


def _load_cases() -> list[Any]:
    return [
        pytest.param(task, func, config, rules, site, new, old, id=f"{task}-{label}")
        for task, func, config, rules in _active_tab_checks()
        for label, (site, new, old) in LOADS.items()
    ]


@needs_osworld_tasks
@pytest.mark.parametrize(
    ("task", "func", "config", "rules", "site", "score", "score_1_0_2"), _load_cases()
)
def test_active_tab_info_on_real_checks(
    tmp_path: Path,
    browser_at: Callable[..., FakeBrowser],
    task: str,
    func: str,
    config: dict[str, Any],
    rules: dict[str, Any],
    site: Site,
    score: float,
    score_1_0_2: float,
) -> None:
    url = CORRECT_PAGES[task]
    # what the address bar shows, with the task's prefix: the address the getter reloads
    reloaded = accessibility_tree_url(url, config.get("goto_prefix", "https://"))
    assert reloaded is not None
    browser = browser_at(FakeBrowser({reloaded: site}), active=url)
    metric = METRICS_2026_04[func]
    info = get_active_tab_info(_browser_ctx(tmp_path), config)
    assert effective(metric, info, rules) == score
    old = get_active_tab_info_1_0_2(_browser_ctx(tmp_path), config)
    assert effective(metric, old, rules) == score_1_0_2
    assert browser.contexts == browser.contexts[:1]  # every fresh context closed again


def test_active_tab_info_values(tmp_path: Path, browser_at: Callable[..., FakeBrowser]) -> None:
    never = Site(title="Slow", content="<p>half</p>", never=("load", "networkidle"))
    browser_at(FakeBrowser({TICKETS: never}), active=TICKETS)
    ctx = _browser_ctx(tmp_path)
    config = {"goto_prefix": "https://www."}
    assert get_active_tab_info(ctx, config) == {
        "title": "Load timeout",
        "url": TICKETS,
        "content": "<p>half</p>",
    }
    assert get_active_tab_info_1_0_2(ctx, config) is None
    busy = Site(title="Busy", content="<p>all</p>", never=("networkidle",))
    browser = browser_at(FakeBrowser({TICKETS: busy}), active=TICKETS)
    assert get_active_tab_info(ctx, config) == {
        "title": "Busy",
        "url": TICKETS,
        "content": "<p>all</p>",
    }
    assert not browser.contexts[0].pages  # the reload is in a context of its own, not the profile
    # a timed-out page that cannot be read either: tried twice, then None
    broken = Site(never=("load",), content_error=PlaywrightTimeout("Timeout"))
    browser_at(FakeBrowser({TICKETS: broken}), active=TICKETS)
    assert get_active_tab_info(ctx, config) is None
    # no active tab, or no browser: None in both
    browser_at(FakeBrowser({TICKETS: busy}), active=None)
    assert get_active_tab_info(ctx, config) is None
    browser_at(None, active=TICKETS)
    assert get_active_tab_info(ctx, config) is None
    assert get_active_tab_info_1_0_2(ctx, config) is None


# --- open_tabs_info -------------------------------------------------------------------------------


def _tab_rules() -> list[Any]:
    return real_rules("is_expected_tabs") or [
        (
            "none",
            {"type": "url", "urls": ["https://www.airbnb.com", "https://www.lonelyplanet.com"]},
        )
    ]


@pytest.mark.parametrize(("task", "rules"), _tab_rules(), ids=[t for t, _ in _tab_rules()])
def test_open_tabs_info_titles_a_timeout(
    tmp_path: Path, browser_at: Callable[..., FakeBrowser], task: str, rules: dict[str, Any]
) -> None:
    urls = list(rules["urls"])
    sites = {urls[0]: Site(title="First")}
    if len(urls) > 1:
        sites[urls[1]] = Site(never=("networkidle",))  # still loading after 30 s
    if len(urls) > 2:
        sites[urls[2]] = Site(title_error=RuntimeError("Target crashed"))
    browser_at(FakeBrowser(sites, tabs=urls))
    ctx = _browser_ctx(tmp_path)
    tabs, tabs_1_0_2 = get_open_tabs_info(ctx, {}), get_open_tabs_info_1_0_2(ctx, {})
    assert [t["url"] for t in tabs] == [t["url"] for t in tabs_1_0_2] == urls
    titles = ["First", "Load timeout", "Error encountered", *["Page"] * len(urls)][: len(urls)]
    assert [t["title"] for t in tabs] == titles
    assert [t["title"] for t in tabs_1_0_2] == [
        t.replace("Load timeout", "Error encountered") for t in titles
    ]
    # the metric reads the addresses only: the same score under both
    metric = METRICS_2026_04["is_expected_tabs"]
    assert metric(tabs, rules) == metric(tabs_1_0_2, rules) == 1.0


def test_open_tabs_info_without_a_browser(
    tmp_path: Path, browser_at: Callable[..., FakeBrowser]
) -> None:
    browser_at(None)
    assert get_open_tabs_info(_browser_ctx(tmp_path), {}) == []
    assert get_open_tabs_info_1_0_2(_browser_ctx(tmp_path), {}) == []


# --- page_info ------------------------------------------------------------------------------------

CART = "https://store.steampowered.com/cart/"


def _cart_checks() -> list[Any]:
    found = [
        (task, result, expected["rules"])
        for task, result, expected, _ in real_checks("is_added_to_steam_cart")
        if result.get("type") == "page_info"
    ]
    return found or [
        ("none", {"type": "page_info", "url": CART}, {"items": ["The Dota 2 Official Soundtrack"]})
    ]


def _cart(items: list[str]) -> str:
    return "<div class='cart'>" + "".join(f"<div>{i}</div>" for i in items) + "</div>"


EMPTY_CART = "<div class='cart'>Your cart is empty.</div>"

# How the cart page behaves -> (2026.04's title, score; 1.0.2's title, score) after adding the
# items: the cart lives in the profile's cookies.
CARTS: dict[str, tuple[Callable[[list[str]], Site], str, float, str, float]] = {
    "loads": (
        lambda i: Site("Shopping Cart", EMPTY_CART, _cart(i)),
        "Shopping Cart",
        1.0,
        "Shopping Cart",
        0.0,
    ),
    "settle-times-out": (
        lambda i: Site("Cart", EMPTY_CART, _cart(i), title_error=PlaywrightTimeout("Timeout")),
        "Load timeout",
        1.0,
        "Error encountered",
        0.0,
    ),
    "title-fails": (
        lambda i: Site("Cart", EMPTY_CART, _cart(i), title_error=RuntimeError("context destroyed")),
        "Error encountered",
        1.0,
        "Error encountered",
        0.0,
    ),
    "unreachable": (
        lambda i: Site(goto_error=PlaywrightTimeout("Timeout 60000ms")),
        "Connection failed",
        0.0,
        "Connection failed",
        0.0,
    ),
}


def _cart_cases() -> list[Any]:
    return [
        pytest.param(task, config, rules, *CARTS[label], id=f"{task}-{label}")
        for task, config, rules in _cart_checks()
        for label in CARTS
    ]


@pytest.mark.parametrize(
    ("task", "config", "rules", "make", "title", "score", "title_1_0_2", "score_1_0_2"),
    _cart_cases(),
)
def test_page_info_on_real_checks(
    tmp_path: Path,
    browser_at: Callable[..., FakeBrowser],
    task: str,
    config: dict[str, Any],
    rules: dict[str, Any],
    make: Callable[[list[str]], Site],
    title: str,
    score: float,
    title_1_0_2: str,
    score_1_0_2: float,
) -> None:
    metric = METRICS_2026_04["is_added_to_steam_cart"]
    browser = browser_at(FakeBrowser({config["url"]: make(rules["items"])}))
    info = get_page_info(_browser_ctx(tmp_path), config)
    assert (info["title"], info["url"]) == (title, config["url"])
    assert metric(info, rules) == score
    old = get_page_info_1_0_2(_browser_ctx(tmp_path), config)
    assert (old["title"], old["url"]) == (title_1_0_2, config["url"])
    assert metric(old, rules) == score_1_0_2
    # no tab is left behind, in the profile or elsewhere
    assert browser.contexts[0].pages == [] and len(browser.contexts) == 1


# --- chrome_appearance_mode_ui --------------------------------------------------------------------

SETTINGS = [
    # (theme prefs as the page holds them, selected controls' texts) -> mode
    pytest.param(
        {"browser.theme.color_scheme2": 2, "browser.theme.color_scheme": 2}, [], "dark", id="dark"
    ),
    pytest.param({"browser.theme.color_scheme2": 1}, [], "light", id="light"),
    pytest.param({"browser.theme.color_scheme2": 0}, [], "system", id="system"),
    pytest.param(
        {"browser.theme.color_scheme2": 2, "browser.theme.color_scheme": 1},
        [],
        "light",
        id="any-light-wins",
    ),
    pytest.param(
        {"browser.theme.color_scheme2": 2, "extensions.theme.system_theme": 0},
        [],
        "light",
        id="classic-theme",
    ),
    pytest.param(
        {"browser.theme.color_scheme2": 0, "extensions.theme.system_theme": 1},
        [],
        "dark",
        id="gtk-theme-dark",
    ),
    pytest.param({"browser.theme.color_scheme2": "Dark"}, [], "dark", id="text-case"),
    pytest.param({"browser.theme.color_scheme2": " dark"}, [], None, id="text-not-trimmed"),
    pytest.param({"browser.theme.color_scheme2": "device"}, [], "system", id="device"),
    pytest.param({"browser.theme.color_scheme2": True}, [], None, id="boolean-no-number"),
    pytest.param({"browser.theme.color_scheme2": 2.0}, [], "dark", id="float"),
    pytest.param({"extensions.theme.system_theme": False}, [], "light", id="classic-false"),
    pytest.param({"browser.theme.color_scheme2": None}, [], None, id="nothing"),
    pytest.param({}, ["Dark"], "dark", id="selected-dark"),
    pytest.param({"browser.theme.color_scheme2": 2}, ["Light"], "light", id="selected-light"),
    pytest.param({}, ["Device"], "system", id="selected-device"),
    pytest.param({}, ["Use system default"], "system", id="selected-default"),
    pytest.param(
        {"browser.theme.color_scheme2": 2}, ["Highlight"], "light", id="any-text-with-light"
    ),
    pytest.param({}, ["Medium (Recommended)", "100%"], None, id="unrelated-texts"),
]


@pytest.mark.parametrize(("values", "selected", "mode"), SETTINGS)
def test_appearance_from_the_settings_page(
    values: dict[str, Any], selected: list[str], mode: str | None
) -> None:
    assert appearance_from_settings(values, selected) == mode


def _appearance_check() -> tuple[dict[str, Any], dict[str, Any]]:
    for _task, result, expected, _ in real_checks("match_in_list"):
        if result.get("type") == "chrome_appearance_mode_ui":
            return result, expected["rules"]
    return {"type": "chrome_appearance_mode_ui"}, {"expected": ["light", "system"]}


# The settings page (prefs, selected texts; None: nothing loads) and the Preferences files ->
# the getter's answer. 93eabf48 accepts light or system.
APPEARANCE = [
    pytest.param(
        {"prefs": {"browser.theme.color_scheme2": 1}, "selected": ["Light"]},
        prefs(2),
        "light",
        id="page-light-file-stale",
    ),
    pytest.param(
        {"prefs": {"browser.theme.color_scheme2": 0}, "selected": []},
        prefs(2),
        "system",
        id="page-system",
    ),
    pytest.param(
        {"prefs": {"browser.theme.color_scheme2": 2}, "selected": ["Dark"]},
        prefs(1),
        "dark",
        id="page-dark-file-light",
    ),
    pytest.param({"prefs": {}, "selected": []}, prefs(1), "light", id="page-tells-nothing"),
    pytest.param(None, prefs(2), "dark", id="page-never-loads-prefs"),
]


@pytest.mark.parametrize(("page", "file", "mode"), APPEARANCE)
def test_chrome_appearance_mode_ui_on_the_real_check(
    tmp_path: Path,
    quick_flush: None,
    browser_at: Callable[..., FakeBrowser],
    page: dict[str, Any] | None,
    file: bytes,
    mode: str,
) -> None:
    config, rules = _appearance_check()
    browser = browser_at(FakeBrowser(settings=page))
    guest = ProfileGuest({DEFAULT_PREFS: file}, listing((DEFAULT_PREFS, 1)))
    assert get_chrome_appearance_mode_ui(_browser_ctx(tmp_path, guest), config) == mode
    assert METRICS_2026_04["match_in_list"](mode, rules) == float(mode in ("light", "system"))
    # the settings tab stays open in the profile, the active one for the next check
    (tab,) = browser.contexts[0].pages
    assert tab.url == "chrome://settings/appearance" and not tab.closed
    assert tab.waited == ["domcontentloaded", "prefs"]
    assert tab.evaluated == list(getters_browser._APPEARANCE_PREFS)


def test_chrome_appearance_mode_ui_without_chrome(
    tmp_path: Path, quick_flush: None, browser_at: Callable[..., FakeBrowser]
) -> None:
    browser_at(None)
    guest = ProfileGuest({DEFAULT_PREFS: prefs(2)}, listing((DEFAULT_PREFS, 1)))
    assert get_chrome_appearance_mode_ui(_browser_ctx(tmp_path, guest), {}) == "dark"
    assert get_chrome_appearance_mode_ui(_browser_ctx(tmp_path, ProfileGuest({}, "[]")), {}) == (
        "system"
    )
    no_profile = FakeBrowser(settings={})
    no_profile.contexts.clear()  # a browser without its default context: the files decide
    browser_at(no_profile)
    assert get_chrome_appearance_mode_ui(_browser_ctx(tmp_path, guest), {}) == "dark"


# --- the references' registries -------------------------------------------------------------------

# Changed in 2026.04 only where the desktop is ARM: one function serves both references.
ARM_ONLY = (
    "default_search_engine cookie_data history enabled_experiments profile_name chrome_language "
    "chrome_font_size bookmarks enable_do_not_track enable_enhanced_safety_browsing "
    "enable_safe_browsing new_startup_page find_unpacked_extension_path "
    "find_installed_extension_name data_delete_automacally active_url_from_accessTree "
    "active_tab_html_parse info_from_website pdf_from_url number_of_search_results"
).split()


def test_registries_of_both_references() -> None:
    new, old = getters_for(OSWORLD_2026_04), getters_for(OSWORLD_1_0_2)
    for name in ARM_ONLY:
        assert new[name] is old[name], name
    assert new["chrome_color_scheme"] is get_chrome_color_scheme
    assert new["chrome_appearance_mode_ui"] is get_chrome_appearance_mode_ui
    assert "chrome_color_scheme" not in old and "chrome_appearance_mode_ui" not in old
    for name, newer, older in [
        ("active_tab_info", get_active_tab_info, get_active_tab_info_1_0_2),
        ("open_tabs_info", get_open_tabs_info, get_open_tabs_info_1_0_2),
        ("page_info", get_page_info, get_page_info_1_0_2),
    ]:
        assert (new[name], old[name]) == (newer, older), name
    metrics_1_0_2 = metrics_for("osworld", OSWORLD_1_0_2)
    for name in ("is_expected_installed_extensions", "is_shortcut_on_desktop"):
        assert METRICS_2026_04[name] is getattr(chrome, name)
        assert metrics_1_0_2[name] is getattr(chrome, f"{name}_1_0_2")
