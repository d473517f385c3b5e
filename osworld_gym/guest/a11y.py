"""AT-SPI accessibility trees for /accessibility and /terminal (being written; see a11y_walker)."""

from __future__ import annotations


class AccessibilityUnavailable(RuntimeError):
    """No accessibility tree can be had on this desktop; the message says why."""


def accessibility_tree(display: str, env: dict[str, str]) -> str:
    """Return OSWorld's XML accessibility tree of ``display``."""
    raise AccessibilityUnavailable("not implemented yet")


def terminal_text(display: str, env: dict[str, str]) -> str | None:
    """Return the text of the focused terminal of ``display``, or None."""
    raise AccessibilityUnavailable("not implemented yet")
