"""Host-side files of tasks: the asset cache, and files that ship beside the task files.

OSWorld downloads every asset on the host and uploads it into the desktop, caching it as
``<cache>/<task_id>/<uuid5(NAMESPACE_URL, url)>_<basename(path)>``. This cache uses the same
names, so a pre-filled OSWorld cache folder works as it is; it also looks in a shared folder for
files any task may use, and fails offline with an error naming the URL and the paths it tried.

Files a task names by a host path instead (``upload_file`` sources, ``cloud_file`` references
with ``local_path``) are no URL to fetch: ``resolve_local_path()`` finds them.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import requests

from osworld_gym.errors import OSWorldGymError

logger = logging.getLogger(__name__)


class AssetUnavailableError(OSWorldGymError):
    """An asset is neither cached nor reachable; the message names the URL and cache paths."""


def resolve_local_path(path: str | os.PathLike[str], task_dir: Path | None) -> Path:
    """The host path of a file a task names by ``local_path``.

    ``~`` is expanded and a relative path is taken against the task file's folder, so a suite's
    task files and their assets move together (an installed package's data included). Without
    a task folder (a task built in memory) a relative path stays relative to the working folder.
    ``upload_file`` sources and ``cloud_file`` references resolve alike through here.
    """
    local = Path(path).expanduser()
    if not local.is_absolute() and task_dir is not None:
        local = task_dir / local
    return local


@dataclass(frozen=True)
class AssetCache:
    """Where task assets are cached on the host, and whether the network may be used.

    Attributes:
        root: Cache folder; per-task files go in ``root/<task_id>/``, shared ones in ``root``.
        offline: Never download; a missing file is an ``AssetUnavailableError``.
        timeout: Seconds per download attempt.
        tries: Download attempts before giving up.
    """

    root: Path
    offline: bool = False
    timeout: float = 300.0
    tries: int = 3

    @classmethod
    def default(cls, offline: bool = False) -> AssetCache:
        """The cache under ``$XDG_CACHE_HOME/osworld-gym`` (``~/.cache/osworld-gym``)."""
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        return cls(Path(base) / "osworld-gym" / "assets", offline=offline)

    def candidates(self, task_id: str, name: str) -> list[Path]:
        """Paths where a cached asset may already be, most specific first."""
        return [self.root / task_id / name, self.root / name]

    def fetch(self, url: str, task_id: str, name: str) -> Path:
        """Return a local path for ``url``, downloading into the task's folder if needed.

        Raises:
            AssetUnavailableError: not cached, and offline or the download failed.
        """
        tried = self.candidates(task_id, name)
        for path in tried:
            if path.is_file():
                return path
        if url.startswith("file://"):
            local = Path(url.removeprefix("file://"))
            if local.is_file():
                return local
            raise AssetUnavailableError(f"asset {url} does not exist")
        if self.offline:
            raise AssetUnavailableError(
                f"asset {url} is not cached (looked in {', '.join(map(str, tried))}) and "
                "downloads are off (offline mode)"
            )
        return self._download(url, tried[0])

    def _download(self, url: str, target: Path) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        last: Exception | None = None
        for attempt in range(1, self.tries + 1):
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
            try:
                with requests.get(url, stream=True, timeout=self.timeout) as response:
                    response.raise_for_status()
                    with os.fdopen(fd, "wb") as f:
                        shutil.copyfileobj(response.raw, f)
                os.replace(tmp, target)
                logger.info("downloaded %s -> %s", url, target)
                return target
            except (requests.RequestException, OSError) as e:
                last = e
                logger.warning("download %d/%d of %s failed: %s", attempt, self.tries, url, e)
            finally:
                Path(tmp).unlink(missing_ok=True)
        raise AssetUnavailableError(
            f"asset {url} is not cached (looked in {target}) and could not be downloaded "
            f"after {self.tries} tries: {last}"
        ) from last
