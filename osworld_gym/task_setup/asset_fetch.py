"""Download the assets of many tasks into the asset cache, so the env later runs them offline.

Files land where ``osworld_gym.task_setup.downloads.AssetCache`` looks: ``<root>/<task_id>/<name>``.
A URL several tasks name is downloaded once and linked (or copied) into the other task folders.
Downloads go to ``<name>.part`` first and are renamed only once complete (the size the server
announced, when it announced one), so a partial file is never taken for an asset; an
interrupted download resumes with an HTTP ``Range`` request. Each finished file's SHA-256, size
and URL are recorded in ``MANIFEST_NAME`` at the cache root. Concurrency is bounded, every
request has a timeout, and failed attempts are retried with exponential back-off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.tasks.requirements import AssetRef

logger = logging.getLogger(__name__)

MANIFEST_NAME = "sha256-manifest.json"
"""The manifest at the cache root: relative path -> ``{"url", "sha256", "size"}``."""

PART_SUFFIX = ".part"
_CHUNK = 1 << 16  # bytes written per read: what a dropped connection loses at most
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_UNRETRIED_STATUSES = frozenset(range(400, 500)) - {408, 425, 429}


@dataclass(frozen=True)
class FetchSettings:
    """How downloads behave.

    Attributes:
        jobs: Downloads at once.
        connect_timeout: Seconds to connect.
        read_timeout: Seconds without a byte before an attempt fails.
        tries: Attempts per URL (a resumed attempt counts).
        backoff: Seconds before the second attempt; doubled after each failure.
        max_backoff: Cap on the wait between attempts.
    """

    jobs: int = 4
    connect_timeout: float = 15.0
    read_timeout: float = 60.0
    tries: int = 5
    backoff: float = 1.0
    max_backoff: float = 30.0


@dataclass(frozen=True)
class FetchOutcome:
    """What happened to one URL.

    Attributes:
        url: The URL.
        targets: The cache files it fills.
        status: ``"downloaded"``, ``"cached"`` (already there) or ``"failed"``.
        size: Bytes of the file (0 when failed).
        error: Why it failed, when it did.
        attempts: HTTP attempts made.
    """

    url: str
    targets: tuple[Path, ...]
    status: str
    size: int = 0
    error: str | None = None
    attempts: int = 0


@dataclass
class FetchSummary:
    """Outcomes of a fetch, one per distinct URL, in the order they finished."""

    outcomes: list[FetchOutcome] = field(default_factory=list)

    @property
    def failed(self) -> list[FetchOutcome]:
        """The URLs that could not be fetched."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def downloaded_bytes(self) -> int:
        """Bytes of the files downloaded by this fetch."""
        return sum(o.size for o in self.outcomes if o.status == "downloaded")

    def count(self, status: str) -> int:
        """How many URLs ended with ``status``."""
        return sum(o.status == status for o in self.outcomes)


class _DownloadError(Exception):
    """One attempt failed; ``retry`` says whether another may succeed."""

    def __init__(self, message: str, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


class Manifest:
    """The SHA-256 manifest of a cache folder, written atomically after every change.

    Args:
        root: The cache root (the manifest is ``root/MANIFEST_NAME``).
    """

    def __init__(self, root: Path) -> None:
        self.path = root / MANIFEST_NAME
        self._lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            try:
                self.entries = dict(json.loads(self.path.read_text()))
            except (OSError, ValueError) as e:
                logger.warning("ignoring an unreadable manifest %s: %s", self.path, e)

    def record(self, target: Path, url: str, sha256: str, size: int) -> None:
        """Record one file (path relative to the cache root) and save the manifest."""
        key = target.relative_to(self.path.parent).as_posix()
        with self._lock:
            self.entries[key] = {"url": url, "sha256": sha256, "size": size}
            tmp = self.path.with_name(self.path.name + PART_SUFFIX)
            tmp.write_text(json.dumps(self.entries, indent=1, sort_keys=True) + "\n")
            os.replace(tmp, self.path)

    def has(self, target: Path) -> bool:
        """Whether the file is recorded."""
        return target.relative_to(self.path.parent).as_posix() in self.entries


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def group_by_url(assets: Iterable[AssetRef], cache: AssetCache) -> dict[str, list[Path]]:
    """URL -> the cache files it fills (``<root>/<task_id>/<name>``), first-seen order."""
    groups: dict[str, list[Path]] = {}
    for asset in assets:
        target = cache.root / asset.task_id / asset.name
        paths = groups.setdefault(asset.url, [])
        if target not in paths:
            paths.append(target)
    return groups


class AssetFetcher:
    """Fetches URLs into the asset cache (see the module docstring).

    Args:
        cache: The asset cache to fill.
        settings: Concurrency, timeouts and retries.
        on_progress: Called with each URL's outcome as it finishes (from worker threads).
        on_bytes: Called with each chunk's size as bytes arrive (from worker threads).
        sleep: Injected for tests; ``time.sleep`` by default (only between attempts).
    """

    def __init__(
        self,
        cache: AssetCache,
        settings: FetchSettings | None = None,
        *,
        on_progress: Callable[[FetchOutcome], None] | None = None,
        on_bytes: Callable[[int], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cache = cache
        self.settings = settings or FetchSettings()
        self.on_progress = on_progress
        self.on_bytes = on_bytes
        self._sleep = sleep
        self.manifest = Manifest(cache.root)
        self._local = threading.local()

    def fetch(self, assets: Iterable[AssetRef]) -> FetchSummary:
        """Fetch every asset's URL (each distinct URL once); never raises for a failed URL."""
        groups = group_by_url(assets, self.cache)
        summary = FetchSummary()
        lock = threading.Lock()

        def work(item: tuple[str, list[Path]]) -> None:
            outcome = self._fetch_url(*item)
            with lock:
                summary.outcomes.append(outcome)
            if self.on_progress is not None:
                self.on_progress(outcome)

        self.cache.root.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=max(1, self.settings.jobs)) as pool:
            list(pool.map(work, groups.items()))
        return summary

    # --- one URL ---------------------------------------------------------------------------

    def _fetch_url(self, url: str, targets: list[Path]) -> FetchOutcome:
        shared = self.cache.root / targets[0].name
        if shared.is_file() and not any(t.is_file() for t in targets):
            return FetchOutcome(url, tuple(targets), "cached", shared.stat().st_size)
        present = next((t for t in targets if t.is_file()), None)
        if present is not None:
            self._complete(url, present, targets)
            return FetchOutcome(url, tuple(targets), "cached", present.stat().st_size)
        if not url.startswith(("http://", "https://")):
            return FetchOutcome(url, tuple(targets), "failed", error="not an http(s) URL")
        target = targets[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        delay, error = self.settings.backoff, "no attempt made"
        for attempt in range(1, self.settings.tries + 1):
            try:
                self._download(url, target)
            except _DownloadError as e:
                error = str(e)
                logger.info("%s: attempt %d/%d failed: %s", url, attempt, self.settings.tries, e)
                if not e.retry or attempt == self.settings.tries:
                    return FetchOutcome(
                        url, tuple(targets), "failed", error=error, attempts=attempt
                    )
                self._sleep(delay)
                delay = min(delay * 2, self.settings.max_backoff)
                continue
            self._complete(url, target, targets)
            size = target.stat().st_size
            return FetchOutcome(url, tuple(targets), "downloaded", size, attempts=attempt)
        return FetchOutcome(url, tuple(targets), "failed", error=error)

    def _complete(self, url: str, source: Path, targets: list[Path]) -> None:
        """Put ``source`` at every target and record the checksums of the new ones."""
        digest: str | None = None
        for target in targets:
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                _link_or_copy(source, target)
            if not self.manifest.has(target):
                digest = digest or sha256_of(source)
                self.manifest.record(target, url, digest, target.stat().st_size)

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _download(self, url: str, target: Path) -> None:
        """One attempt: resume ``target.part`` (or start it), rename it once complete."""
        part = target.with_name(target.name + PART_SUFFIX)
        have = part.stat().st_size if part.is_file() else 0
        headers = {"Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
        timeout = (self.settings.connect_timeout, self.settings.read_timeout)
        try:
            with self._session().get(url, headers=headers, stream=True, timeout=timeout) as r:
                total = self._start(r, part, have)
                if total is None or part.stat().st_size < total:
                    self._stream(r, part)
        except requests.RequestException as e:
            raise _DownloadError(_short_error(e)) from e
        except OSError as e:  # the cache folder, not the network
            raise _DownloadError(f"cannot write {part}: {e}", retry=False) from e
        size = part.stat().st_size
        if total is not None and size != total:
            raise _DownloadError(f"got {size} of {total} bytes (the rest on the next attempt)")
        os.replace(part, target)

    def _start(self, response: requests.Response, part: Path, have: int) -> int | None:
        """Check the answer, prepare ``part`` for its body; return the full size if known."""
        status = response.status_code
        if status == 416 and have:  # nothing after what we have: complete, or a stale part
            total = _content_range_total(response.headers)
            if total == have:
                return have
            part.unlink(missing_ok=True)
            raise _DownloadError(f"HTTP 416 for a {have}-byte partial file; starting over")
        if status in _UNRETRIED_STATUSES:
            raise _DownloadError(f"HTTP {status} {response.reason}", retry=False)
        if status >= 400:
            raise _DownloadError(f"HTTP {status} {response.reason}")
        if status == 206:
            found = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if found is None or int(found.group(1)) != have:
                part.unlink(missing_ok=True)
                raise _DownloadError("the server answered another range; starting over")
            return None if found.group(3) == "*" else int(found.group(3))
        part.write_bytes(b"")  # 200: the whole file (the server ignored or was not sent Range)
        length = response.headers.get("Content-Length")
        return int(length) if length and length.isdigit() else None

    def _stream(self, response: requests.Response, part: Path) -> None:
        with open(part, "ab") as f:
            for chunk in response.iter_content(chunk_size=_CHUNK):
                f.write(chunk)
                if self.on_bytes is not None:
                    self.on_bytes(len(chunk))


def _short_error(error: requests.RequestException) -> str:
    """A one-line reason: the underlying cause of a connection error, without the URL again."""
    cause = getattr(error.args[0], "reason", None) if error.args else None
    text = (
        f"{type(cause).__name__}: {cause}"
        if cause is not None
        else f"{type(error).__name__}: {error}"
    )
    return text if len(text) <= 200 else text[:197] + "..."


def _content_range_total(headers: Mapping[str, str]) -> int | None:
    found = re.match(r"bytes \*/(\d+)", headers.get("Content-Range", ""))
    return int(found.group(1)) if found else None


def _link_or_copy(source: Path, target: Path) -> None:
    tmp = target.with_name(target.name + PART_SUFFIX)
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
