"""Pure helpers for the setup interpreter: OSWorld's command placeholders and cache file names.

Both reproduce OSWorld's ``SetupController`` exactly (``docs/design/task-format.md#placeholders``),
so commands and pre-filled OSWorld asset caches behave the same here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from typing import overload

__all__ = ["PLACEHOLDERS", "download_cache_name", "placeholder_values", "substitute_placeholders"]

PLACEHOLDERS = (
    "{CLIENT_PASSWORD}",
    "{SCREEN_WIDTH_HALF}",
    "{SCREEN_HEIGHT_HALF}",
    "{SCREEN_WIDTH}",
    "{SCREEN_HEIGHT}",
)
"""The placeholders OSWorld fills in ``execute``/``command`` steps (and nowhere else)."""


def placeholder_values(*, client_password: str, screen_size: tuple[int, int]) -> dict[str, str]:
    """The text each placeholder stands for.

    Args:
        client_password: The desktop user's password (``{CLIENT_PASSWORD}``).
        screen_size: ``(width, height)`` in pixels; the halves are rounded down, as in OSWorld.

    Returns:
        A mapping from each of ``PLACEHOLDERS`` to its replacement.

    Example:
        >>> values = placeholder_values(client_password="pw", screen_size=(1921, 1080))
        >>> values["{SCREEN_WIDTH_HALF}"], values["{SCREEN_WIDTH}"]
        ('960', '1921')
    """
    width, height = screen_size
    # OSWorld's replacement order (it matters only if the password contains a placeholder).
    return {
        "{CLIENT_PASSWORD}": client_password,
        "{SCREEN_WIDTH_HALF}": str(width // 2),
        "{SCREEN_HEIGHT_HALF}": str(height // 2),
        "{SCREEN_WIDTH}": str(width),
        "{SCREEN_HEIGHT}": str(height),
    }


@overload
def substitute_placeholders(command: str, values: Mapping[str, str]) -> str: ...


@overload
def substitute_placeholders(command: Sequence[str], values: Mapping[str, str]) -> list[str]: ...


def substitute_placeholders(
    command: str | Sequence[str], values: Mapping[str, str]
) -> str | list[str]:
    """Fill placeholders in a command string, or in each item of a command list.

    Plain text replacement, like OSWorld: other braces (``{}`` in a Python one-liner, ``${HOME}``)
    are left alone, and a list stays a list of the same length.

    Args:
        command: The step's ``command``: a shell string or an argv list.
        values: Replacements, usually from ``placeholder_values()``.

    Returns:
        A new string or a new plain ``list`` (the input is not modified).

    Example:
        >>> values = placeholder_values(client_password="pw", screen_size=(1920, 1080))
        >>> substitute_placeholders(["xdotool", "mousemove", "{SCREEN_WIDTH_HALF}", "{}"], values)
        ['xdotool', 'mousemove', '960', '{}']
        >>> substitute_placeholders("echo {CLIENT_PASSWORD} | sudo -S true", values)
        'echo pw | sudo -S true'
    """
    if isinstance(command, str):
        return _replace(command, values)
    return [_replace(item, values) if isinstance(item, str) else item for item in command]


def _replace(text: str, values: Mapping[str, str]) -> str:
    for placeholder, replacement in values.items():
        text = text.replace(placeholder, replacement)
    return text


def download_cache_name(url: str, path: str) -> str:
    """The file name OSWorld caches a ``download`` step's file under on the host.

    ``<uuid5(NAMESPACE_URL, url)>_<basename(path)>``, where ``path`` is the destination in the
    desktop; a pre-filled OSWorld cache folder (``cache/<task_id>/``) uses these names.

    Args:
        url: The step's ``url``.
        path: The step's ``path`` (destination in the desktop).

    Returns:
        The cache file name (no folder).

    Example:
        >>> download_cache_name("https://example.org/a.xlsx", "/home/user/a.xlsx")
        '27f7583a-3ca3-5277-8a7b-65906c588507_a.xlsx'
    """
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{os.path.basename(path)}"
