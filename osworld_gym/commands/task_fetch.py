"""``osworld-gym tasks fetch``: download every asset the tasks name into the asset cache.

Usage::

    osworld-gym tasks fetch <folder or index> [--cache DIR] [--jobs 4] [--tries 5]

Prints a progress bar on a terminal (tqdm, when installed) or a line per URL otherwise, then
the failed URLs with their reasons; exits 1 when any URL failed.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from osworld_gym.task_setup.asset_fetch import (
    MANIFEST_NAME,
    AssetFetcher,
    FetchOutcome,
    FetchSettings,
)
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.tasks import TaskSet
from osworld_gym.tasks.requirements import task_assets


class FetchProgress:
    """Shows a fetch's progress: a tqdm bar of URLs on a terminal, else a line per URL.

    Args:
        total: Distinct URLs to fetch.
        stream: Where to write.
    """

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream, self.done = total, stream, 0
        self.bytes = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        if getattr(stream, "isatty", lambda: False)():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, file=stream, unit="file", dynamic_ncols=True)

    def on_bytes(self, count: int) -> None:
        """Bytes arrived."""
        with self._lock:
            self.bytes += count
            if self._bar is not None:
                self._bar.set_postfix_str(f"{self.bytes / 1e6:.1f} MB", refresh=False)

    def on_outcome(self, outcome: FetchOutcome) -> None:
        """A URL finished."""
        with self._lock:
            self.done += 1
            if self._bar is not None:
                self._bar.update(1)
                return
            width = len(str(self.total))
            size = f"{outcome.size / 1e6:.1f} MB" if outcome.size else "-"
            self.stream.write(
                f"[{self.done:>{width}}/{self.total}] {outcome.status:<10} {size:>9} "
                f"{outcome.url}\n"
            )
            self.stream.flush()

    def close(self) -> None:
        """End the bar."""
        if self._bar is not None:
            self._bar.close()


def fetch_command(tasks: TaskSet, cache: AssetCache, settings: FetchSettings) -> int:
    """Fetch the assets of ``tasks`` into ``cache``; print the summary; 1 if any URL failed."""
    assets = [asset for task in tasks for asset in task_assets(task)]
    urls = len({a.url for a in assets})
    out = sys.stdout
    out.write(f"{len(assets)} assets ({urls} URLs) of {len(tasks)} tasks -> {cache.root}\n")
    out.flush()
    progress = FetchProgress(urls, sys.stderr)
    fetcher = AssetFetcher(
        cache, settings, on_progress=progress.on_outcome, on_bytes=progress.on_bytes
    )
    try:
        summary = fetcher.fetch(assets)
    finally:
        progress.close()
    out.write(
        f"{summary.count('downloaded')} downloaded ({summary.downloaded_bytes / 1e6:.1f} MB), "
        f"{summary.count('cached')} already cached, {len(summary.failed)} failed; "
        f"checksums in {cache.root / MANIFEST_NAME}\n"
    )
    if summary.failed:
        out.write("failed URLs:\n")
        for outcome in sorted(summary.failed, key=lambda o: o.url):
            out.write(f"  {outcome.url}: {outcome.error}\n")
        return 1
    return 0
