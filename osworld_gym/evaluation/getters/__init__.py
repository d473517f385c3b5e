"""Evaluator getters: read the state a metric scores, under OSWorld's getter names.

A getter turns a task's getter config (``{"type": "vm_file", "path": ..., "dest": ...}``) into
the value a metric receives: usually a host path of a file fetched from the desktop or the asset
cache, or command output. Getters reach the desktop only through the guest client.
Semantics follow OSWorld's (``docs/design/evaluators.md#getters``): a file that does not exist gives
``None`` (the metric then scores 0), ``multi`` configs take parallel lists and ``gives`` picks
which of the fetched files to return.

This module is the registry: OSWorld's getter types mapped onto the getters of ``base``
(files, commands, the screen) and of one module per app or kind of state (``chrome``: profile
files; ``browser``, ``html``: the running Chrome over CDP; ``apps``: VLC, shortcuts, the default
player; ``slides``; ``relative_time``; ``vscode``). Those modules import ``base`` and never
this registry.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from types import MappingProxyType

from osworld_gym.errors import EvaluatorError
from osworld_gym.evaluation.getters import browser as getters_browser
from osworld_gym.evaluation.getters.apps import APP_GETTERS
from osworld_gym.evaluation.getters.base import (
    EvalContext,
    Getter,
    get_accessibility_tree,
    get_cache_file,
    get_cloud_file,
    get_content_from_vm_file,
    get_gimp_config_file,
    get_list_directory,
    get_rule,
    get_time_diff_range,
    get_vlc_config,
    get_vm_command_error,
    get_vm_command_line,
    get_vm_file,
    get_vm_screen_size,
    get_vm_terminal_output,
    get_vm_wallpaper,
    get_vm_window_size,
)
from osworld_gym.evaluation.getters.browser import CHROME_BROWSER_GETTERS
from osworld_gym.evaluation.getters.chrome import CHROME_PROFILE_GETTERS
from osworld_gym.evaluation.getters.html import CHROME_HTML_GETTERS
from osworld_gym.evaluation.getters.relative_time import TIME_GETTERS, get_rule_relativeTime_1_0_2
from osworld_gym.evaluation.getters.slides import SLIDE_GETTERS
from osworld_gym.evaluation.getters.vscode import VSCODE_GETTERS, get_vscode_config_1_0_2
from osworld_gym.evaluation.references import DEFAULT_REFERENCE, OSWORLD_2026_04, check_reference

__all__ = [
    "GETTERS",
    "NEW_GETTERS_SINCE_1_0_2",
    "REFERENCE_1_0_2_GETTERS",
    "EvalContext",
    "Getter",
    "get_getter",
    "getters_for",
]


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
