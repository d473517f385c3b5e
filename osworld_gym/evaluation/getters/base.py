"""The getters every kind of task uses, and what a getter reads from (``EvalContext``).

Files of the desktop (``vm_file``, ``content_from_vm_file``), reference files (``cloud_file``,
``cache_file``), rules, command output, the screen and window sizes, the wallpaper, the
terminal's text, the accessibility tree, VLC's and GIMP's configuration files. The getters of
one app or one kind of state have their own module beside this one; the package's
``__init__`` maps OSWorld's getter types onto all of them.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from osworld_gym.errors import EvaluatorError, GuestAuthError, GuestHTTPError
from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.guest.client import GuestClient
from osworld_gym.task_setup.downloads import AssetCache, AssetUnavailableError, resolve_local_path

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalContext:
    """What getters read from: the desktop's client and the task's cache folder.

    Attributes:
        client: The desktop's guest client.
        task_id: The task being scored.
        cache: The asset cache (reference files, setup outputs under ``<cache>/<task_id>/``).
        scratch: A folder of this evaluation alone for files fetched from the desktop; None
            puts them in the task cache, which envs scoring the same task at once share (and
            would overwrite each other's files in).
        services: Where the host reaches the desktop's OSWorld services (``"cdp"``: Chrome
            DevTools, ``"vlc"``: VLC's HTTP interface), as ``http://host:port`` by name.
        task_dir: The task file's folder: relative ``cloud_file`` ``local_path`` references
            resolve against it (None for a task built in memory: the working folder).
    """

    client: GuestClient
    task_id: str
    cache: AssetCache
    scratch: Path | None = None
    services: Mapping[str, str] = field(default_factory=dict)
    task_dir: Path | None = None

    @property
    def fetch_dir(self) -> Path:
        """Where files fetched from the desktop go: ``scratch``, else the task cache."""
        if self.scratch is None:
            return self.task_cache
        self.scratch.mkdir(parents=True, exist_ok=True)
        return self.scratch

    def fetch_file(self, path: str, dest: str) -> str | None:
        """A desktop file saved as ``dest`` in ``fetch_dir``; None when it does not exist.

        As in OSWorld, any error answer of the guest for the file gives None (not only 404);
        a guest that cannot be reached, or refuses the token, raises.
        """
        try:
            data = self.client.download(path)
        except GuestHTTPError as e:
            if isinstance(e, GuestAuthError):
                raise
            logger.info("%s could not be read from the desktop: %s", path, e)
            return None
        target = self.fetch_dir / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return str(target)

    @property
    def task_cache(self) -> Path:
        """``<cache>/<task_id>/``, created on first use."""
        path = self.cache.root / self.task_id
        path.mkdir(parents=True, exist_ok=True)
        return path


Getter = Callable[[EvalContext, Mapping[str, Any]], Any]


def _multi(config: Mapping[str, Any], fetch: Callable[[str, str], Any], key: str = "path") -> Any:
    """OSWorld's ``multi``/``gives`` convention over parallel ``path``/``dest`` lists.

    As OSWorld's: every pair is fetched (a single file is the pair list ``[(path, dest)]``,
    ``time_suffix`` aside), lists of different lengths are cut to the shorter one, and
    ``gives`` (default ``[0]``) is a set of indexes: the fetched values at those indexes, in
    index order, duplicates and indexes past the end ignored. Exactly one value is returned
    as is, otherwise the list (possibly empty). ``key`` names the paths' field (``cloud_file``
    references on the host use ``local_path``).
    """
    if config.get("multi"):
        paths, dests = list(config[key]), list(config["dest"])
    else:
        paths, dests = [config[key]], [_suffixed(config)]
    gives = set(config.get("gives", [0]))
    given = []
    for index, (path, dest) in enumerate(zip(paths, dests, strict=False)):
        value = fetch(path, dest)
        if index in gives:
            given.append(value)
    return given[0] if len(given) == 1 else given


def _suffixed(config: Mapping[str, Any]) -> str:
    """A single file's ``dest``, with the time before its extension when ``time_suffix``."""
    dest = str(config["dest"])
    if not config.get("time_suffix"):
        return dest
    stem, extension = os.path.splitext(dest)
    stamp = datetime.now().strftime(config.get("time_format", "%Y%m%d_%H%M%S"))
    return f"{stem}_{stamp}{extension}"


def get_vm_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """A file from the desktop, saved to the task cache; ``None`` when it does not exist.

    A single file's ``dest`` takes the current time before its extension when the config has
    ``time_suffix`` (format ``time_format``, default ``%Y%m%d_%H%M%S``), as in OSWorld.
    """
    return _multi(config, ctx.fetch_file)


REFERENCE_FOLDER = "reference"
"""The subfolder of the fetch folder that ``local_path`` references are copied into."""


def get_cloud_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """A reference file kept on the host, never in the desktop the agent works in.

    Two forms: OSWorld's ``path`` (a URL, fetched through the asset cache; offline from a
    pre-filled cache), and this package's ``local_path`` (a file beside the task file, relative
    paths resolved as ``upload_file`` sources are). ``multi``/``gives`` work for both.

    Raises:
        AssetUnavailableError: the file is neither cached nor reachable, or not on the host.
    """
    if "local_path" in config:
        return _multi(config, lambda path, dest: _copy_reference(ctx, path, dest), "local_path")

    def fetch(url: str, dest: str) -> str:
        return str(ctx.cache.fetch(url, ctx.task_id, dest))

    return _multi(config, fetch)


def _copy_reference(ctx: EvalContext, local_path: str, dest: str) -> str:
    """Copy a host reference file to ``<fetch folder>/reference/<dest>`` and return that path.

    A copy, so a metric that writes beside its input never touches the suite's own files
    (possibly a read-only installed package); in its own subfolder, so a desktop file fetched
    under the same ``dest`` cannot replace the reference.
    """
    source = resolve_local_path(local_path, ctx.task_dir)
    if not source.is_file():
        raise AssetUnavailableError(f"reference file {source} does not exist on the host")
    target = ctx.fetch_dir / REFERENCE_FOLDER / dest
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return str(target)


def get_rule(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The ``rules`` of the config, verbatim (the metric's expected value)."""
    return config["rules"]


def _answer_or_none(ask: Callable[[], Any], what: str) -> Any:
    """``ask()``, or None where the guest answers an error status (as OSWorld's getters do).

    A guest that cannot be reached, or refuses the token, still raises: that is no state of
    the desktop to score.
    """
    try:
        return ask()
    except GuestHTTPError as e:
        if isinstance(e, GuestAuthError):
            raise
        logger.warning("%s: the guest answered an error: %s", what, e)
        return None


def _command(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    shell = bool(config.get("shell", False))
    return _answer_or_none(
        lambda: ctx.client.execute(config["command"], shell=shell), "vm_command_line"
    )


def get_vm_command_line(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """Standard output of a command run in the desktop; None when it could not run.

    The guest answers an error status for a command it cannot start (no such program) or
    that ran past its time limit; OSWorld's getter gives None then, and so does this one.
    """
    result = _command(ctx, config)
    return None if result is None else result.output


def get_vm_command_error(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """Standard error of a command run in the desktop; None when it could not run."""
    result = _command(ctx, config)
    return None if result is None else result.error


def get_cache_file(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """A file a setup step wrote into the task cache (e.g. an ``execute`` step's stdout)."""
    path = ctx.task_cache / config["path"]
    if not path.exists():  # OSWorld asserts only that the path exists
        raise FileNotFoundError(path)
    return str(path)


def get_list_directory(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The recursive directory tree of a folder in the desktop; ``None`` when it is missing.

    None too for any other error answer of the guest (a tree too large), as in OSWorld.
    """
    return _answer_or_none(lambda: ctx.client.list_directory(config["path"]), "list_directory")


def get_vm_screen_size(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, int]:
    """``{"width": w, "height": h}`` of the desktop."""
    width, height = ctx.client.screen_size()
    return {"width": width, "height": height}


def get_vm_window_size(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, int] | None:
    """Size of the first window of ``app_class_name``; ``None`` when there is none."""
    size = _answer_or_none(
        lambda: ctx.client.window_size(config["app_class_name"]), "vm_window_size"
    )
    return None if size is None else {"width": size[0], "height": size[1]}


def get_vm_wallpaper(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """The current wallpaper image, saved as ``dest`` in the fetch folder.

    As in OSWorld, when the desktop has no wallpaper to give the file is written empty (its
    path is still returned; the image metrics then score it 0).
    """
    data = _answer_or_none(ctx.client.wallpaper, "vm_wallpaper") or b""
    target = ctx.fetch_dir / config.get("dest", "wallpaper.png")
    target.write_bytes(data)
    return str(target)


def get_vm_terminal_output(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """Text of the focused terminal (``None`` when no terminal is focused)."""
    return _answer_or_none(ctx.client.terminal_output, "vm_terminal_output")


def get_accessibility_tree(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """OSWorld's XML accessibility tree of the desktop; None when the guest cannot give it."""
    return _answer_or_none(ctx.client.accessibility_tree, "accessibility_tree")


def get_time_diff_range(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The config's ``diff_range_in_minutes`` as is; None when it has none (as OSWorld)."""
    return config.get("diff_range_in_minutes")


def get_content_from_vm_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Something read from a file in the desktop, by ``file_type`` and ``file_content``.

    OSWorld's one kind: ``file_type`` ``"xlsx"`` with ``file_content`` ``"last_row"``, the
    first sheet's last row, pandas' ``read_excel`` then ``astype(str)`` (which leaves an
    empty cell NaN with pandas 3); another ``file_content`` of an xlsx gives None, as in
    OSWorld. The file is fetched as its base name, as OSWorld's getter does; a missing one
    raises ``FileNotFoundError`` for ``last_row`` (the check scores 0; OSWorld's getter
    fails there too).

    Beyond OSWorld (which raises for any other ``file_type``): without a ``file_type``, or
    with ``"txt"``/``"text"``, the file's text (UTF-8, undecodable bytes replaced), or None
    when the file does not exist.
    """
    path = config["path"]
    file_type = config.get("file_type", "txt")
    if file_type in ("txt", "text"):
        data = _answer_or_none(lambda: ctx.client.download(path), "content_from_vm_file")
        return None if data is None else data.decode("utf-8", errors="replace")
    if file_type != "xlsx":
        raise EvaluatorError(f"content_from_vm_file: file_type {file_type!r} is not supported")
    wanted = config["file_content"]
    fetched = ctx.fetch_file(path, os.path.basename(path))
    if wanted != "last_row":
        return None
    if fetched is None:
        raise FileNotFoundError(f"content_from_vm_file: {path} does not exist in the desktop")
    pd = require("pandas")
    return pd.read_excel(fetched).iloc[-1].astype(str).tolist()


def get_vlc_config(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """VLC's ``vlcrc`` from the desktop user's configuration."""
    return get_vm_file(ctx, {"path": "~/.config/vlc/vlcrc", "dest": config.get("dest", "vlcrc")})


def get_gimp_config_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """A file of GIMP 2.10's configuration folder (``file_name``)."""
    name = config["file_name"]
    return get_vm_file(
        ctx, {"path": f"~/.config/GIMP/2.10/{name}", "dest": config.get("dest", name)}
    )
