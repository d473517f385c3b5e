"""Getters that read Chrome's profile files: Preferences, Local State, Bookmarks, History, Cookies.

The files are fetched through the guest from OSWorld's profile folder,
``~/.config/google-chrome/`` (the desktop's ``google-chrome`` starts Chromium with that
``--user-data-dir``). Values and fallbacks follow OSWorld's getters of the same names: when the
file is missing or not what Chrome writes, each getter returns OSWorld's documented default
(``"false"``, ``"Google"``, ``None``, ...) and logs a warning; OSWorld's odd defaults (a Do Not
Track getter answering ``"Google"``) are kept, since task rules were written against them.
Chrome writes these files lazily (Preferences about 10 s after a change, Cookies and History
when it flushes), as in OSWorld, which is why tasks close Chrome in ``postconfig`` first.

OSWorld's code of 2026.04 changed these getters only where the desktop is ARM (where it reads
the snap Chromium's profile instead); on our x86_64 desktops they read what they read in
desktop-env 1.0.2. It added ``chrome_color_scheme`` (``get_chrome_color_scheme()``), which
ranks every profile's Preferences by age and re-reads them while Chrome may still be flushing.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any

from osworld_gym.errors import GuestAuthError, GuestHTTPError

if TYPE_CHECKING:
    from osworld_gym.evaluation.getters.base import EvalContext

logger = logging.getLogger(__name__)

CHROME_USER_DATA = "~/.config/google-chrome"
CHROME_PROFILE = f"{CHROME_USER_DATA}/Default"

# Errors that mean "the file is not the JSON Chrome writes" (OSWorld falls back on any error).
_MALFORMED = (ValueError, TypeError, KeyError, AttributeError)


def _fetch(ctx: EvalContext, path: str) -> bytes | None:
    """A file of the desktop; None when it does not exist."""
    try:
        return ctx.client.download(path)
    except GuestHTTPError as e:
        if e.status == 404:
            logger.info("Chrome file %s does not exist", path)
            return None
        raise


def _json_file(ctx: EvalContext, path: str) -> dict[str, Any]:
    content = _fetch(ctx, path)
    if content is None:
        raise FileNotFoundError(path)
    data = json.loads(content)
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds {type(data).__name__}, not a JSON object")
    return data


def _from_json(
    ctx: EvalContext, name: str, read: Callable[[dict[str, Any]], Any], fallback: Any, path: str
) -> Any:
    """``read(data)`` of a JSON profile file; ``fallback`` when it is missing or malformed."""
    try:
        return read(_json_file(ctx, path))
    except (FileNotFoundError, *_MALFORMED) as e:
        logger.warning("%s: cannot read %s (%s: %s); OSWorld's default %r", name, path,
                       type(e).__name__, e, fallback)  # fmt: skip
        return fallback


def _preferences(name: str, read: Callable[[dict[str, Any]], Any], fallback: Any) -> Any:
    """A getter over ``Default/Preferences`` (the common case)."""

    def getter(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
        return _from_json(ctx, name, read, fallback, f"{CHROME_PROFILE}/Preferences")

    getter.__name__ = f"get_{name}"
    getter.__doc__ = f"OSWorld's ``{name}`` over Chrome's Preferences (default {fallback!r})."
    return getter


def _flag(value: Any) -> str:
    return "true" if value else "false"


def _search_engine(data: dict[str, Any]) -> Any:
    provider = data.get("default_search_provider_data", {}).get("template_url_data", {})
    return provider.get("short_name", "Google")


def _safe_browsing(data: dict[str, Any]) -> str:
    settings = data.get("safebrowsing", {})
    return _flag(bool(settings.get("enhanced", False)) or bool(settings.get("enabled", False)))


def _startup_page(data: dict[str, Any]) -> str:
    if "session" not in data:  # a fresh profile opens the New Tab page
        return "true"
    return _flag(data.get("session", {}).get("restore_on_startup", {}) == 5)


def _extensions(field: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], list[Any]]:
    def read(data: dict[str, Any]) -> list[Any]:
        settings = data.get("extensions", {}).get("settings", {})
        return [field(settings[key]) for key in settings]

    return read


_DEFAULT_FONT_SIZES = {"default_fixed_font_size": 13, "default_font_size": 16}

get_default_search_engine = _preferences("default_search_engine", _search_engine, "Google")
get_profile_name = _preferences(
    "profile_name", lambda d: d.get("profile", {}).get("name", None), None
)
get_chrome_font_size = _preferences(
    "chrome_font_size",
    lambda d: d.get("webkit", {}).get("webprefs", {**_DEFAULT_FONT_SIZES, "minimum_font_size": 13}),
    dict(_DEFAULT_FONT_SIZES),
)
get_enable_do_not_track = _preferences(
    "enable_do_not_track", lambda d: _flag(d.get("enable_do_not_track", {})), "false"
)
get_enable_enhanced_safety_browsing = _preferences(
    "enable_enhanced_safety_browsing",
    lambda d: _flag(d.get("safebrowsing", {}).get("enhanced", {})),
    "Google",
)
get_enable_safe_browsing = _preferences("enable_safe_browsing", _safe_browsing, "false")
get_new_startup_page = _preferences("new_startup_page", _startup_page, "Google")
get_find_unpacked_extension_path = _preferences(
    "find_unpacked_extension_path", _extensions(lambda e: e["path"]), "Google"
)
get_find_installed_extension_name = _preferences(
    "find_installed_extension_name", _extensions(lambda e: e["manifest"]["name"]), "Google"
)
get_data_delete_automacally = _preferences(
    "data_delete_automacally",
    lambda d: _flag(d["profile"].get("default_content_setting_values", None) is not None),
    "Google",
)


def get_enabled_experiments(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The ``chrome://flags`` entries enabled in ``Local State`` (``[]`` when unreadable)."""
    return _from_json(
        ctx,
        "enabled_experiments",
        lambda d: d.get("browser", {}).get("enabled_labs_experiments", []),
        [],
        f"{CHROME_USER_DATA}/Local State",
    )


def get_chrome_language(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Chrome's UI locale from ``Local State`` (``"en-US"`` when unset or unreadable)."""
    return _from_json(
        ctx,
        "chrome_language",
        lambda d: d.get("intl", {}).get("app_locale", "en-US"),
        "en-US",
        f"{CHROME_USER_DATA}/Local State",
    )


def get_bookmarks(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The ``roots`` of Chrome's ``Bookmarks`` file; ``[]`` when there is no such file.

    Raises:
        ValueError: the file is not JSON (OSWorld fails the same way; the check scores 0).
    """
    content = _fetch(ctx, f"{CHROME_PROFILE}/Bookmarks")
    if not content:
        return []
    return json.loads(content).get("roots", {})


def _sqlite_rows(
    ctx: EvalContext, name: str, config: Mapping[str, Any], default_dest: str, query: str
) -> list[tuple[Any, ...]] | None:
    content = _fetch(ctx, f"{CHROME_PROFILE}/{name}")
    if content is None:
        return None
    target = ctx.fetch_dir / str(config.get("dest", default_dest))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    try:
        with closing(sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return db.execute(query).fetchall()
    except sqlite3.Error as e:
        logger.warning("%s: %s is not a readable Chrome database: %s", name, target, e)
        return None


def get_cookie_data(ctx: EvalContext, config: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """All rows of the ``cookies`` table of Chrome's ``Cookies`` (None when unreadable).

    The database is saved as ``dest`` in the fetch folder. Column 1 is the cookie's host.
    """
    return _sqlite_rows(ctx, "Cookies", config, "Cookies", "SELECT * FROM cookies")


def get_history(ctx: EvalContext, config: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """``(url, title, last_visit_time)`` of every row of Chrome's History ``urls`` table."""
    return _sqlite_rows(
        ctx, "History", config, "History", "SELECT url, title, last_visit_time FROM urls"
    )


# Chrome's browser.theme.color_scheme(2) values (the settings page's probe reads them too).
COLOR_SCHEMES = {0: "system", 1: "light", 2: "dark"}
_COLOR_SCHEME_NAMES = {"system": "system", "default": "system", "0": "system", "light": "light",
                       "1": "light", "dark": "dark", "2": "dark"}  # fmt: skip


def color_scheme_from_preferences(data: Mapping[str, Any]) -> str:
    """OSWorld's reading of the appearance mode from Preferences: system, light or dark.

    ``browser.theme.color_scheme2`` (else ``color_scheme``): 0 system, 1 light, 2 dark, as a
    number (a boolean counts as one, as in Python: ``true`` is light) or as text (``"dark"``,
    ``"2"``, ``"default"``...); anything else reads as system. An
    ``extensions.theme.system_theme`` of 0 (Chrome's classic, non-GTK theme) reads as light
    whatever the scheme says.

    Raises:
        AttributeError: a section on the way is not a JSON object.
        ValueError, OverflowError: the scheme is a number with no integer value (NaN, infinity).

    Example:
        >>> color_scheme_from_preferences({"browser": {"theme": {"color_scheme2": 2}}})
        'dark'
    """
    theme = data.get("browser", {}).get("theme", {})
    raw = theme.get("color_scheme2", theme.get("color_scheme", None))
    mode = None
    if isinstance(raw, str):
        mode = _COLOR_SCHEME_NAMES.get(raw.strip().lower())
    elif isinstance(raw, int | float):
        mode = COLOR_SCHEMES.get(int(raw))
    if data.get("extensions", {}).get("theme", {}).get("system_theme", None) in (0, "0", False):
        return "light"
    return mode or "system"


# Where 2026.04 looks for Chrome profiles on a Linux x86_64 desktop: the guest user's own folder,
# then those of OSWorld's two image users (on our desktops the first two are the same folder,
# listed once). Within each: the default, guest and numbered profiles.
_PROFILE_ROOTS = (CHROME_USER_DATA, "/home/user/.config/google-chrome",
                  "/home/ubuntu/.config/google-chrome")  # fmt: skip
# Runs in the desktop: argv holds the roots; prints [[path, mtime], ...] of the Preferences
# files found, in the order found (no duplicates). A file whose age cannot be read gets 0.
_LIST_PREFERENCES = r"""
import glob, json, os, sys
found = {}
for root in map(os.path.expanduser, sys.argv[1:]):
    if not os.path.isdir(root):
        continue
    for profile in ("Default", "Guest Profile", "Profile *"):
        pattern = os.path.join(glob.escape(root), profile, "Preferences")
        for path in sorted(glob.glob(pattern)):
            if path in found or not os.path.isfile(path):
                continue
            try:
                found[path] = os.path.getmtime(path)
            except OSError:
                found[path] = 0
print(json.dumps(list(found.items())))
"""
# Chrome writes Preferences about a second or more after a change in its UI: 2026.04 reads the
# files five times, a second apart, and stops early once they say light. Here: re-read until
# they say light or this window (that of its last read) has passed.
_FLUSH_WAIT_S = 4.0
_FLUSH_POLL_S = 0.5


def _is_listed_file(item: Any) -> bool:
    """Whether ``item`` is a ``[path, mtime]`` entry of ``_LIST_PREFERENCES``'s output."""
    return (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], int | float)
    )


def _preference_files(ctx: EvalContext) -> list[str]:
    """The desktop's Chrome Preferences files, most recently written first.

    The profile folders of ``_PROFILE_ROOTS``; the default profile's file when none exists
    or the desktop cannot list them.
    """
    fallback = [f"{CHROME_PROFILE}/Preferences"]
    try:
        result = ctx.client.execute(["python3", "-c", _LIST_PREFERENCES, *_PROFILE_ROOTS])
        listed = json.loads(result.output) if result.returncode == 0 else None
    except GuestAuthError:
        raise
    except (GuestHTTPError, ValueError) as e:
        logger.warning("chrome_color_scheme: cannot list Chrome's profiles (%s)", e)
        return fallback
    if not isinstance(listed, list) or not all(_is_listed_file(item) for item in listed):
        logger.warning("chrome_color_scheme: unexpected profile listing %r", result.output[:200])
        return fallback
    # Newest first; equal ages keep the listing's order (stable sort, as 2026.04's).
    ranked = sorted(listed, key=lambda item: -item[1])
    return [path for path, _ in ranked] or fallback


def _scheme_of_file(ctx: EvalContext, path: str) -> str | None:
    """The appearance mode one Preferences file gives; None when it cannot be read as one."""
    try:
        content = ctx.client.download(path)
    except GuestAuthError:
        raise
    except GuestHTTPError as e:  # 2026.04 skips a file the desktop does not hand over
        logger.info("chrome_color_scheme: %s not read (%s)", path, e)
        return None
    if not content:
        return None
    try:
        return color_scheme_from_preferences(json.loads(content))
    except (*_MALFORMED, OverflowError) as e:
        logger.info("chrome_color_scheme: %s is not Chrome's Preferences (%s)", path, e)
        return None


def _scheme_of_profiles(ctx: EvalContext, paths: Sequence[str]) -> str | None:
    """One read of every file: the first explicit light or dark, else system if any was read."""
    seen = None
    for path in paths:
        mode = _scheme_of_file(ctx, path)
        if mode in ("light", "dark"):
            return mode
        seen = seen or mode
    return seen


def get_chrome_color_scheme(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """Chrome's appearance mode from its profiles' Preferences: ``light``, ``dark`` or ``system``.

    OSWorld's ``chrome_color_scheme`` of 2026.04. Every profile's Preferences
    (``_preference_files()``, newest first) is read; the first that says light or dark
    decides, else ``system`` (``color_scheme_from_preferences()``). Chrome may not have
    written a change made in its UI yet, so the files are read again until they say light or
    about 4 s have passed; the answer is then the last read's. ``system`` when no file could
    be read (no Chrome profile on the desktop).
    """
    paths = _preference_files(ctx)
    deadline = time.monotonic() + _FLUSH_WAIT_S
    mode = "system"
    while True:
        seen = _scheme_of_profiles(ctx, paths)
        if seen is not None:
            mode = seen
        if mode == "light":
            return mode  # the change a task asks for: no need to wait for a later write
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return mode
        time.sleep(min(_FLUSH_POLL_S, remaining))


CHROME_PROFILE_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "default_search_engine": get_default_search_engine,
    "profile_name": get_profile_name,
    "chrome_font_size": get_chrome_font_size,
    "enable_do_not_track": get_enable_do_not_track,
    "enable_enhanced_safety_browsing": get_enable_enhanced_safety_browsing,
    "enable_safe_browsing": get_enable_safe_browsing,
    "new_startup_page": get_new_startup_page,
    "find_unpacked_extension_path": get_find_unpacked_extension_path,
    "find_installed_extension_name": get_find_installed_extension_name,
    "data_delete_automacally": get_data_delete_automacally,
    "enabled_experiments": get_enabled_experiments,
    "chrome_language": get_chrome_language,
    "bookmarks": get_bookmarks,
    "cookie_data": get_cookie_data,
    "history": get_history,
    "chrome_color_scheme": get_chrome_color_scheme,
}
