"""Evaluator getters: read the state a metric scores, under OSWorld's getter names.

A getter turns a task's getter config (``{"type": "vm_file", "path": ..., "dest": ...}``) into
the value a metric receives: usually a host path of a file fetched from the desktop or the asset
cache, or command output. Getters reach the desktop only through the guest client.
Semantics follow OSWorld's (``docs/design/evaluators.md#getters``): a file that does not exist gives
``None`` (the metric then scores 0), ``multi`` configs take parallel lists and ``gives`` picks
which of the fetched files to return.
"""

from __future__ import annotations

import difflib
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from osworld_gym.downloads import AssetCache, AssetUnavailableError, resolve_local_path
from osworld_gym.errors import EvaluatorError, GuestAuthError, GuestHTTPError
from osworld_gym.evaluation import getters_browser
from osworld_gym.evaluation.getters_apps import APP_GETTERS
from osworld_gym.evaluation.getters_browser import CHROME_BROWSER_GETTERS
from osworld_gym.evaluation.getters_chrome import CHROME_PROFILE_GETTERS
from osworld_gym.evaluation.getters_html import CHROME_HTML_GETTERS
from osworld_gym.evaluation.getters_slides import SLIDE_GETTERS
from osworld_gym.evaluation.getters_time import TIME_GETTERS, get_rule_relativeTime_1_0_2
from osworld_gym.evaluation.getters_vscode import VSCODE_GETTERS, get_vscode_config_1_0_2
from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.references import DEFAULT_REFERENCE, OSWORLD_2026_04, check_reference
from osworld_gym.guest.client import GuestClient

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


GETTERS: dict[str, Getter] = {
    "vlc_config": get_vlc_config,
    "gimp_config_file": get_gimp_config_file,
    "vm_file": get_vm_file,
    "cloud_file": get_cloud_file,
    "rule": get_rule,
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "cache_file": get_cache_file,
    "list_directory": get_list_directory,
    "vm_screen_size": get_vm_screen_size,
    "vm_window_size": get_vm_window_size,
    "vm_wallpaper": get_vm_wallpaper,
    "vm_terminal_output": get_vm_terminal_output,
    "accessibility_tree": get_accessibility_tree,
    "content_from_vm_file": get_content_from_vm_file,
    "time_diff_range": get_time_diff_range,
    # Chrome (profile files, and the running browser over CDP), VLC, desktop shortcuts
    **CHROME_PROFILE_GETTERS,
    **CHROME_BROWSER_GETTERS,
    **CHROME_HTML_GETTERS,
    **APP_GETTERS,
    # dates relative to today; media inside presentations
    **TIME_GETTERS,
    **SLIDE_GETTERS,
    # a file VS Code's evaluation extension writes on a palette command
    **VSCODE_GETTERS,
}


# The getters whose behaviour in desktop-env 1.0.2 differs from OSWorld's code of 2026.04 (the
# default reference, GETTERS): type -> the 1.0.2 behaviour, for evaluator_reference
# "osworld-1.0.2". Per getter: what changed (docs/concepts/evaluation.md).
REFERENCE_1_0_2_GETTERS: Mapping[str, Getter] = MappingProxyType(
    {
        # 1.0.2 does not raise VS Code's window first, and gives None for a missing file
        # (2026.04 falls back to VS Code's workspace records).
        "vscode_config": get_vscode_config_1_0_2,
        # 1.0.2 counts from the host's clock, never the desktop's, and fails on a list of
        # templates (chrome/82bc8d6a has one).
        "rule_relativeTime": get_rule_relativeTime_1_0_2,
        # 1.0.2 reloads to "networkidle" and gives None on any timeout.
        "active_tab_info": getters_browser.get_active_tab_info_1_0_2,
        # 1.0.2 titles a timed-out tab "Error encountered" (2026.04: "Load timeout").
        "open_tabs_info": getters_browser.get_open_tabs_info_1_0_2,
        # 1.0.2 loads the page in a fresh context (no profile cookies); a timeout titled
        # "Error encountered".
        "page_info": getters_browser.get_page_info_1_0_2,
    }
)

# Getter types OSWorld added after desktop-env 1.0.2: the "osworld-1.0.2" reference lacks them.
NEW_GETTERS_SINCE_1_0_2: frozenset[str] = frozenset(
    {
        "chrome_color_scheme",  # the theme in every profile's Preferences, newest first
        "chrome_appearance_mode_ui",  # the settings page's theme, the files as a fallback
    }
)


def getters_for(reference: str = DEFAULT_REFERENCE) -> Mapping[str, Getter]:
    """The type → getter mapping of an evaluator reference.

    Args:
        reference: ``"osworld-2026.04"`` (default: ``GETTERS``) or ``"osworld-1.0.2"``
            (``REFERENCE_1_0_2_GETTERS`` swapped in, ``NEW_GETTERS_SINCE_1_0_2`` left
            out).

    Raises:
        ValueError: Another reference.

    Example:
        >>> getters_for()["vm_file"] is GETTERS["vm_file"]
        True
    """
    if check_reference(reference) == OSWORLD_2026_04:
        return MappingProxyType(GETTERS)
    older = {n: g for n, g in GETTERS.items() if n not in NEW_GETTERS_SINCE_1_0_2}
    return MappingProxyType({**older, **REFERENCE_1_0_2_GETTERS})


def get_getter(name: str) -> Getter:
    """Look a getter up by its OSWorld ``type``.

    Raises:
        EvaluatorError: unknown getter; the message suggests close names.
    """
    try:
        return GETTERS[name]
    except KeyError:
        close = difflib.get_close_matches(name, GETTERS, n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise EvaluatorError(
            f"unknown getter type {name!r}{hint} (available: {sorted(GETTERS)})"
        ) from None
