"""The ``vscode_config`` getter: a file VS Code's evaluation extension writes on command.

OSWorld's VS Code tasks install an extension whose palette command (``vscode_extension_command``,
e.g. ``"OpenProject"``) writes what the editor has open to a file (``path``); the getter runs
that command through the command palette (Ctrl+Shift+P, the command's name, Enter), waits for
the file (OSWorld waits a second) and fetches it as ``dest``. The config::

    {"type": "vscode_config", "vscode_extension_command": "OpenProject",
     "path": "/home/user/OpenProject.txt", "dest": "OpenProject.txt"}

Two references (``osworld_gym.evaluation.references``):

- ``osworld-2026.04`` (``get_vscode_config()``): VS Code's window is raised first, and when
  the file is missing the getter falls back to the workspace records VS Code keeps
  (``workspace.json`` under ``~/.config/Code/User/workspaceStorage``, every folder ever
  opened), their texts joined into ``dest``; nothing found gives ``""`` (scores 0).
- ``osworld-1.0.2`` (``get_vscode_config_1_0_2()``): no window raising; a missing file gives
  ``None`` (scores 0).

OSWorld picks Cmd instead of Ctrl for a platform named ``"MacOS"``, a name its platform query
(Python's ``platform.system()``: ``Linux``, ``Darwin``, ``Windows``) never answers, so its
keys are always Ctrl+Shift+P; so are these.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from osworld_gym.errors import GuestAuthError, GuestHTTPError, GuestProtocolError

if TYPE_CHECKING:
    from osworld_gym.evaluation.getters.base import EvalContext

logger = logging.getLogger(__name__)

VSCODE_WINDOW = "Visual Studio Code"  # the title OSWorld's getter raises (substring match)
PALETTE_KEYS = ("ctrl", "shift", "p")
# OSWorld pauses between its steps (0.5 s after raising the window, a separate pyautogui
# program per key step, 1 s for the extension to write its file); here each step waits for
# its effect instead: the screen to settle after the keys, the file to appear after Enter.
SETTLE_TIMEOUT_S = 3.0
FILE_TIMEOUT_S = 5.0
FILE_POLL_S = 0.1
# 2026.04's fallback: every workspace record's text, joined (errors and a missing folder
# silenced). The path is OSWorld's literal one, as the tasks' own ``path`` is.
WORKSPACE_SCAN = (
    "/bin/bash -lc 'find /home/user/.config/Code/User/workspaceStorage "
    "-name workspace.json -exec cat {} \\; 2>/dev/null'"
)


def _settle(ctx: EvalContext) -> None:
    """Wait (at most ``SETTLE_TIMEOUT_S``) until the screen stops changing."""
    _tolerated(
        "waiting for the screen to settle",
        functools.partial(ctx.client.screenshot, settle=True, settle_timeout=SETTLE_TIMEOUT_S),
    )


def _file_written(ctx: EvalContext, path: str) -> bool:
    """Wait (at most ``FILE_TIMEOUT_S``) until ``path`` exists in the desktop."""
    deadline = time.monotonic() + FILE_TIMEOUT_S
    while True:
        try:
            if ctx.client.execute(["test", "-e", path]).returncode == 0:
                return True
        except (GuestHTTPError, GuestProtocolError) as e:
            logger.warning("vscode_config: cannot check for %s: %s", path, e)
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(FILE_POLL_S)  # a poll interval: the extension writes on its own


def _tolerated(what: str, call: Callable[[], Any]) -> None:
    """``call()``, a refusal of the guest logged and ignored, as OSWorld's controller does.

    OSWorld's key steps and window raising only log a failed request; the file fetched next
    decides the score. A guest that cannot be reached, or refuses the token, still raises.
    """
    try:
        call()
    except GuestAuthError:
        raise
    except (GuestHTTPError, GuestProtocolError) as e:
        logger.warning("vscode_config: %s failed: %s", what, e)


def _run_palette_command(ctx: EvalContext, command: str, path: str) -> None:
    """Open VS Code's command palette, type ``command``, press Enter; wait for ``path``."""
    steps: list[tuple[str, dict[str, Any]]] = [
        ("the palette hotkey", {"kind": "hotkey", "keys": list(PALETTE_KEYS)}),
        (f"typing {command!r}", {"kind": "type", "text": command}),
        ("Enter", {"kind": "press", "key": "enter"}),
    ]
    for index, (what, action) in enumerate(steps):
        if index:
            _settle(ctx)  # the palette opened, the name was typed
        _tolerated(what, functools.partial(ctx.client.actions, [action]))
    _file_written(ctx, path)


def get_vscode_config_1_0_2(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The extension's file after its command ran; None when it was not written.

    desktop-env 1.0.2's behaviour: the keys go to whichever window has the focus.
    """
    _run_palette_command(ctx, str(config["vscode_extension_command"]), str(config["path"]))
    return ctx.fetch_file(str(config["path"]), str(config["dest"]))


def get_vscode_config(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """The extension's file after its command ran, else VS Code's workspace records.

    OSWorld's behaviour as of 2026.04 (module doc): VS Code's window is raised before the
    keys (a failure to raise it is only logged); when the file does not exist, the texts of
    every ``workspace.json`` VS Code keeps are written to ``dest`` and that path returned (a
    text naming each folder opened, which ``compare_config``'s substring rule then reads);
    ``""`` when there are none or the scan could not run.
    """
    _tolerated(
        "raising VS Code's window", functools.partial(ctx.client.activate_window, VSCODE_WINDOW)
    )
    _settle(ctx)
    _run_palette_command(ctx, str(config["vscode_extension_command"]), str(config["path"]))
    dest = str(config["dest"])
    fetched = ctx.fetch_file(str(config["path"]), dest)
    if fetched is not None:
        return fetched
    logger.warning(
        "vscode_config: %s was not written; reading VS Code's workspace records instead",
        config["path"],
    )
    # Imported here: the getters module imports this one to register it.
    from osworld_gym.evaluation.getters.base import get_vm_command_line

    dump = get_vm_command_line(ctx, {"command": WORKSPACE_SCAN, "shell": True})
    if not dump:
        logger.warning("vscode_config: no workspace records found")
        return ""
    target = ctx.fetch_dir / dest
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump, encoding="utf-8")
    return str(target)


VSCODE_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "vscode_config": get_vscode_config,
}
