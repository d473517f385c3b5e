"""OSWorld's Chrome setup steps: chrome_open_tabs, chrome_close_tabs, update_browse_history.

Semantics (``docs/design/task-format.md#setup-steps``):

* ``chrome_open_tabs``: connect over CDP (OSWorld retries 15 times, 5 s apart; here the same
  75 s as a deadline, polled), open each URL in a new tab of the browser's first context
  (60 s per page load; a load that times out is only reported, as OSWorld only logs it), and
  after the first new tab close the tab that was open before. Where OSWorld's code closes "the
  first tab", which is the new tab itself when Chrome had none open, this closes only a tab
  that was there before.
* ``chrome_close_tabs``: connect, then for each URL close the first tab of the first context
  whose URL equals it under OSWorld's URL equality. OSWorld waits a fixed 5 s first; here the
  connection is polled instead.
* ``update_browse_history``: OSWorld downloads an empty Chrome History database from the
  network; here it is made locally, by emptying the desktop's own History file (so the schema
  is exactly what its Chrome wrote) or, where there is none, by creating Chrome's tables. Each
  item becomes a ``urls`` row and a ``visits`` row stamped ``visit_time_from_now_in_seconds``
  ago, in Chrome's time base (microseconds since 1601-01-01 UTC; OSWorld uses the host's local
  clock, the same on a UTC host). The file replaces ``~/.config/google-chrome/Default/History``
  through the guest, with any stale ``History-journal`` removed so it cannot be rolled back
  onto the new file.
"""

from __future__ import annotations

import logging
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osworld_gym.errors import GuestHTTPError, TaskSetupError
from osworld_gym.evaluation.metrics._urls import compare_urls
from osworld_gym.task_setup import cdp

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from osworld_gym.guest.client import GuestClient

logger = logging.getLogger(__name__)

HISTORY_PATH = "~/.config/google-chrome/Default/History"
CONNECT_TIMEOUT = 75.0  # OSWorld: 15 attempts, 5 s apart
PAGE_LOAD_MS = 60_000  # OSWorld's goto limit per tab

# Chrome's time base: microseconds since this instant (UTC).
CHROME_EPOCH = datetime(1601, 1, 1, tzinfo=timezone.utc)
# A link visit that starts and ends a redirect chain (CHAIN_START | CHAIN_END | LINK): OSWorld's.
VISIT_TRANSITION = 0x30000000


def _first_context(browser: Browser) -> Any:
    if not browser.contexts:
        raise TaskSetupError("the browser has no context to open tabs in")
    return browser.contexts[0]


def open_tabs(endpoint: str | None, urls: list[str]) -> list[str]:
    """Open each URL in a new tab, then close the tab that was open before (see module doc).

    Returns:
        Warnings: the URLs whose load did not finish within 60 s (the tabs stay open).

    Raises:
        TaskSetupError: no browser answered on ``endpoint`` within 75 s.
    """
    if not urls:
        return []

    def act(browser: Browser) -> list[str]:
        sync_api = cdp.require_playwright()
        context = _first_context(browser)
        before = list(context.pages)
        warnings = []
        for i, url in enumerate(urls):
            page = context.new_page()
            try:
                page.goto(url, timeout=PAGE_LOAD_MS)
            except sync_api.Error as e:
                logger.warning("chrome_open_tabs: %s did not load: %s", url, e)
                warnings.append(f"{url} did not load: {str(e).splitlines()[0]}")
            if i == 0 and before:
                before[0].close()
        return warnings

    budget = CONNECT_TIMEOUT + len(urls) * (PAGE_LOAD_MS / 1000 + 5) + 30
    try:
        return cdp.with_browser(endpoint, act, connect_timeout=CONNECT_TIMEOUT, timeout=budget)
    except cdp.BrowserUnavailableError as e:
        raise TaskSetupError(f"chrome_open_tabs: {e}") from e


def close_tabs(endpoint: str | None, urls: list[str]) -> list[str]:
    """Close, for each URL, the first tab of the first context showing it.

    Returns:
        Warnings: the URLs no tab showed.

    Raises:
        TaskSetupError: no browser answered on ``endpoint`` within 75 s.
    """

    def act(browser: Browser) -> list[str]:
        context = _first_context(browser)
        missing = []
        for url in urls:
            page = next((p for p in context.pages if compare_urls(p.url, url)), None)
            if page is None:
                missing.append(f"no tab shows {url}")
            else:
                page.close()
        return missing

    try:
        return cdp.with_browser(endpoint, act, connect_timeout=CONNECT_TIMEOUT, timeout=120.0)
    except cdp.BrowserUnavailableError as e:
        raise TaskSetupError(f"chrome_close_tabs: {e}") from e


# Chrome's History tables that the step fills, as Chromium 156 creates them (schema version 70,
# which later versions migrate from). Chrome creates its other tables itself when it opens the
# file.
_SCHEMA = (
    "CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR)",
    "INSERT INTO meta VALUES ('mmap_status', '-1'), ('version', '70'),"
    " ('last_compatible_version', '16')",
    "CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT,url LONGVARCHAR,title LONGVARCHAR,"
    "visit_count INTEGER DEFAULT 0 NOT NULL,typed_count INTEGER DEFAULT 0 NOT NULL,"
    "last_visit_time INTEGER NOT NULL,hidden INTEGER DEFAULT 0 NOT NULL)",
    "CREATE INDEX urls_url_index ON urls (url)",
    "CREATE TABLE visits(id INTEGER PRIMARY KEY AUTOINCREMENT,url INTEGER NOT NULL,"
    "visit_time INTEGER NOT NULL,from_visit INTEGER,external_referrer_url TEXT,"
    "transition INTEGER DEFAULT 0 NOT NULL,segment_id INTEGER,"
    "visit_duration INTEGER DEFAULT 0 NOT NULL,"
    "incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,opener_visit INTEGER,"
    "originator_cache_guid TEXT,originator_visit_id INTEGER,originator_from_visit INTEGER,"
    "originator_opener_visit INTEGER,is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,"
    "consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL,"
    "visited_link_id INTEGER DEFAULT 0 NOT NULL,app_id TEXT)",
    "CREATE INDEX visits_url_index ON visits (url)",
    "CREATE INDEX visits_from_index ON visits (from_visit)",
    "CREATE INDEX visits_time_index ON visits (visit_time)",
    "CREATE INDEX visits_originator_id_index ON visits (originator_visit_id)",
    "CREATE TABLE visit_source(id INTEGER PRIMARY KEY,source INTEGER NOT NULL)",
)


def chrome_time(moment: datetime) -> int:
    """``moment`` in Chrome's time base: microseconds since 1601-01-01 UTC.

    Example:
        >>> chrome_time(datetime(1970, 1, 1, tzinfo=UTC))
        11644473600000000
    """
    return int((moment - CHROME_EPOCH).total_seconds() * 1_000_000)


def _empty_existing(db: sqlite3.Connection) -> None:
    """Delete every row but the schema version: the empty History of that Chrome version."""
    tables = [
        name
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if name != "meta" and not name.startswith("sqlite_")
    ]
    if not {"urls", "visits"} <= set(tables):
        raise sqlite3.DatabaseError("not a Chrome History database (no urls/visits tables)")
    for name in tables:
        db.execute(f'DELETE FROM "{name}"')  # noqa: S608 - names read from the file itself
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        db.execute("DELETE FROM sqlite_sequence")


def _insert(db: sqlite3.Connection, items: Iterable[Mapping[str, Any]], now: datetime) -> None:
    for item in items:
        stamp = chrome_time(now - timedelta(seconds=float(item["visit_time_from_now_in_seconds"])))
        cursor = db.execute(
            "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden)"
            " VALUES (?, ?, 1, 0, ?, 0)",
            (item["url"], item["title"], stamp),
        )
        db.execute(
            "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id,"
            " visit_duration) VALUES (?, ?, 0, ?, 0, 0)",
            (cursor.lastrowid, stamp, VISIT_TRANSITION),
        )


def build_history(
    items: Iterable[Mapping[str, Any]],
    *,
    existing: bytes | None = None,
    now: datetime | None = None,
) -> bytes:
    """A Chrome History database holding exactly ``items`` (OSWorld's step's rows).

    Args:
        items: ``{url, title, visit_time_from_now_in_seconds}`` each.
        existing: A History file to empty and reuse (its Chrome's exact schema); when None or
            not a History database, Chrome's tables are created instead.
        now: The reference time (default: the current UTC time).

    Returns:
        The database file's bytes.
    """
    items = list(items)
    now = now or datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="osworld-gym-history-") as folder:
        path = Path(folder) / "History"
        if existing:
            path.write_bytes(existing)
            try:
                with closing(sqlite3.connect(path)) as db, db:
                    _empty_existing(db)
                    _insert(db, items, now)
                return path.read_bytes()
            except sqlite3.DatabaseError as e:
                logger.info("update_browse_history: existing History unusable (%s)", e)
                path.unlink()
        with closing(sqlite3.connect(path)) as db, db:
            for statement in _SCHEMA:
                db.execute(statement)
            _insert(db, items, now)
        return path.read_bytes()


def update_browse_history(client: GuestClient, items: list[Mapping[str, Any]]) -> None:
    """Replace the desktop's Chrome History with one holding ``items`` (see module doc)."""
    try:
        existing: bytes | None = client.download(HISTORY_PATH)
    except GuestHTTPError as e:
        if e.status != 404:
            raise
        existing = None
    data = build_history(items, existing=existing)
    client.execute(f"rm -f {HISTORY_PATH}-journal {HISTORY_PATH}-wal", shell=True)
    client.upload(HISTORY_PATH, data)
