"""Evaluator getters: read the state a metric scores, under OSWorld's getter names.

A getter turns a task's getter config (``{"type": "vm_file", "path": ..., "dest": ...}``) into
the value a metric receives: usually a host path of a file fetched from the desktop or the asset
cache, or command output. Getters reach the desktop only through the guest client.
Semantics follow OSWorld's (``specs/osworld.md`` §5.3, §5.6): a file that does not exist gives
``None`` (the metric then scores 0), ``multi`` configs take parallel lists and ``gives`` picks
which of the fetched files to return.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_gym.downloads import AssetCache
from osworld_gym.errors import EvaluatorError, GuestHTTPError
from osworld_gym.evaluation.getters_apps import APP_GETTERS
from osworld_gym.evaluation.getters_browser import CHROME_BROWSER_GETTERS
from osworld_gym.evaluation.getters_chrome import CHROME_PROFILE_GETTERS
from osworld_gym.evaluation.getters_html import CHROME_HTML_GETTERS
from osworld_gym.evaluation.getters_slides import SLIDE_GETTERS
from osworld_gym.evaluation.getters_time import TIME_GETTERS
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
    """

    client: GuestClient
    task_id: str
    cache: AssetCache
    scratch: Path | None = None
    services: Mapping[str, str] = field(default_factory=dict)

    @property
    def fetch_dir(self) -> Path:
        """Where files fetched from the desktop go: ``scratch``, else the task cache."""
        if self.scratch is None:
            return self.task_cache
        self.scratch.mkdir(parents=True, exist_ok=True)
        return self.scratch

    def fetch_file(self, path: str, dest: str) -> str | None:
        """A desktop file saved as ``dest`` in :attr:`fetch_dir`; None when it does not exist."""
        try:
            data = self.client.download(path)
        except GuestHTTPError as e:
            if e.status == 404:
                logger.info("%s does not exist in the desktop", path)
                return None
            raise
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


def _multi(config: Mapping[str, Any], fetch: Callable[[str, str], Any]) -> Any:
    """OSWorld's ``multi``/``gives`` convention over parallel ``path``/``dest`` lists."""
    if not config.get("multi"):
        return fetch(config["path"], config["dest"])
    paths, dests = list(config["path"]), list(config["dest"])
    if len(paths) != len(dests):
        raise EvaluatorError(f"getter {config.get('type')}: path and dest lists differ in length")
    fetched = [fetch(p, d) for p, d in zip(paths, dests, strict=True)]
    gives = config.get("gives", [0])
    return fetched[gives[0]] if len(gives) == 1 else [fetched[i] for i in gives]


def get_vm_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """A file from the desktop, saved to the task cache; ``None`` when it does not exist."""
    return _multi(config, ctx.fetch_file)


def get_cloud_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """A reference file by URL through the asset cache (offline: from a pre-filled cache)."""

    def fetch(url: str, dest: str) -> str:
        return str(ctx.cache.fetch(url, ctx.task_id, dest))

    return _multi(config, fetch)


def get_rule(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The ``rules`` of the config, verbatim (the metric's expected value)."""
    return config["rules"]


def get_vm_command_line(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """Standard output of a command run in the desktop."""
    result = ctx.client.execute(config["command"], shell=bool(config.get("shell", False)))
    return result.output


def get_vm_command_error(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """Standard error of a command run in the desktop."""
    result = ctx.client.execute(config["command"], shell=bool(config.get("shell", False)))
    return result.error


def get_cache_file(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """A file a setup step wrote into the task cache (e.g. an ``execute`` step's stdout)."""
    path = ctx.task_cache / config["path"]
    if not path.is_file():
        raise FileNotFoundError(path)
    return str(path)


def get_list_directory(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The recursive directory tree of a folder in the desktop; ``None`` when it is missing."""
    try:
        return ctx.client.list_directory(config["path"])
    except GuestHTTPError as e:
        if e.status == 400:  # not a directory (or missing): the metric scores it 0
            return None
        raise


def get_vm_screen_size(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, int]:
    """``{"width": w, "height": h}`` of the desktop."""
    width, height = ctx.client.screen_size()
    return {"width": width, "height": height}


def get_vm_window_size(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, int] | None:
    """Size of the first window of ``app_class_name``; ``None`` when there is none."""
    try:
        width, height = ctx.client.window_size(config["app_class_name"])
    except GuestHTTPError as e:
        if e.status == 404:
            return None
        raise
    return {"width": width, "height": height}


def get_vm_wallpaper(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The current wallpaper image, saved to the task cache."""
    try:
        data = ctx.client.wallpaper()
    except GuestHTTPError as e:
        if e.status == 404:
            return None
        raise
    target = ctx.fetch_dir / config.get("dest", "wallpaper.png")
    target.write_bytes(data)
    return str(target)


def get_vm_terminal_output(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """Text of the focused terminal (``None`` when no terminal is focused)."""
    return ctx.client.terminal_output()


def get_accessibility_tree(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """OSWorld's XML accessibility tree of the desktop."""
    return ctx.client.accessibility_tree()


def get_content_from_vm_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Text of a file in the desktop (``file_type`` other than text is not supported yet)."""
    file_type = config.get("file_type", "txt")
    if file_type not in ("txt", "text"):
        raise EvaluatorError(f"content_from_vm_file: file_type {file_type!r} is not supported")
    try:
        data = ctx.client.download(config["path"])
    except GuestHTTPError as e:
        if e.status == 404:
            return None
        raise
    return data.decode("utf-8", errors="replace")


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
    # Chrome (profile files, and the running browser over CDP), VLC, desktop shortcuts
    **CHROME_PROFILE_GETTERS,
    **CHROME_BROWSER_GETTERS,
    **CHROME_HTML_GETTERS,
    **APP_GETTERS,
    # dates relative to today; media inside presentations
    **TIME_GETTERS,
    **SLIDE_GETTERS,
}


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
