"""Lazy imports of the optional libraries metrics need, with an install hint when missing.

Metric modules import nothing heavy at module level: ``import osworld_gym`` and loading a task
must not pull in pandas or python-pptx. Each metric calls ``require()`` for what it reads.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.extras import distribution_of, install_command

INSTALL_HINT = install_command("eval")
"""The command that installs the ``eval`` extra, with the running interpreter's pip."""


def require(module: str, extra: str = "eval") -> ModuleType:
    """Import ``module`` or raise ``DependencyNotInstalled`` naming the extra to install.

    Args:
        module: Dotted import name, e.g. ``"openpyxl"`` or ``"pptx.util"``.
        extra: The osworld-gym extra that installs it (``"eval"``, ``"media"``, ``"ocr"``).

    Returns:
        The imported module.

    Raises:
        DependencyNotInstalled: The library is not installed.

    Example:
        >>> require("json").dumps([1])
        '[1]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise DependencyNotInstalled(
            f"this metric needs the {distribution_of(module)!r} package, which is not "
            f"installed: {install_command(extra)}"
        ) from e


def fuzz_ratio(a: str, b: str) -> float:
    """Normalised Indel similarity of two strings in [0, 100] (rapidfuzz's ``fuzz.ratio``).

    OSWorld scores fuzzy text matches with rapidfuzz; ``difflib`` gives different numbers on
    the same inputs, so the same library is used here for identical scores.

    Example:
        >>> fuzz_ratio("kitten", "sitting") > 60
        True
        >>> fuzz_ratio("", "")
        100.0
    """
    fuzz = require("rapidfuzz.fuzz")
    return float(fuzz.ratio(a, b))
