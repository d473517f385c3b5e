"""Metrics over desktop-state output: GNOME settings, time zones, directory listings, clipboard.

OSWorld's module ``basic_os``. Inputs are command output or getter values; ``None`` scores 0.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)


def check_gnome_favorite_apps(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when GNOME's favourite apps are exactly the expected ones, in any order.

    The output is a Python-style list literal; it is read with ``ast.literal_eval()``, never
    ``eval`` (OSWorld's way), so a crafted output cannot run code. Whatever literal it holds
    is compared as OSWorld compares it, by length and set of items: the string ``'a'``
    equals ``["a"]``, and a literal without a length (a number, ``None``) raises
    ``TypeError``, as in OSWorld.

    Example:
        >>> check_gnome_favorite_apps("['b.desktop', 'a.desktop']",
        ...                           {"expected": ["a.desktop", "b.desktop"]})
        1.0
    """
    if result is None:
        return 0.0
    try:
        apps = ast.literal_eval(result.strip())
    except (ValueError, SyntaxError) as e:
        logger.info("check_gnome_favorite_apps: not a list literal (%s): %.200r", e, result)
        return 0.0
    want = rules["expected"]
    return float(len(apps) == len(want) and set(apps) == set(want))


def is_utc_0(result: str | None) -> float:
    r"""1 when ``timedatectl status`` reports a ``+0000`` time zone (its fourth line).

    Example:
        >>> is_utc_0("L\nU\nR\n                Time zone: Etc/UTC (UTC, +0000)\n")
        1.0
    """
    if result is None:
        return 0.0
    lines = result.split("\n")
    return float(len(lines) > 3 and lines[3].endswith("+0000)"))


def check_moved_jpgs(result: Mapping[str, Any] | None, rules: Mapping[str, Any]) -> float:
    """1 when a directory listing holds exactly the expected file names, in any order.

    The listing is the ``list_directory`` getter's ``{"children": [{"name": ...}, ...]}``.

    Raises:
        KeyError: A listing without ``children`` (OSWorld indexes it and raises too).
    """
    if not result:
        return 0.0
    names = [node["name"] for node in result["children"]]
    want = rules["expected"]
    return float(len(names) == len(want) and set(names) == set(want))


def is_in_vm_clickboard(config: Mapping[str, Any], terminal_output: str | None) -> float:
    """1 when the clipboard dump contains the expected text (or every text of a list).

    OSWorld's argument order is kept: the rule comes first, the getter output second.
    """
    if terminal_output is None:
        return 0.0
    want = config["expected"]
    if isinstance(want, list):
        return float(all(item in terminal_output for item in want))
    return float(want in terminal_output)
