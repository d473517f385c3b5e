"""Which of the driver's environment variables reach a ``local`` desktop: an allowlist.

The driver's environment holds what no desktop program may read: API keys, cloud credentials,
the Ray cluster's token, the driver's own settings. A desktop therefore starts from an empty
environment plus the variables listed here (locale, time zone, the search paths of the Python
that runs the guest server) and those the provider sets itself; a user who needs more names
them in ``LocalProviderConfig.extra_env``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Passed through as they are: how text, time and the guest's Python behave.
PASSED_THROUGH = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    # Some processors need these for OpenBLAS not to crash (numpy in the guest).
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)
PASSED_THROUGH_PREFIXES = ("LC_",)


def passed_through(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that a desktop may see (see the module doc)."""
    return {
        name: value
        for name, value in environ.items()
        if name in PASSED_THROUGH or name.startswith(PASSED_THROUGH_PREFIXES)
    }


def search_path(value: str | None, writable: tuple[str, ...], first: str | None = None) -> str:
    """A ``PATH`` for the desktop: ``first``, then ``value`` without folders it can write.

    A folder on ``PATH`` that the desktop can write (its home, a temp folder) would let one
    episode plant a program (a ``cat``) that the next episode's evaluator runs.

    Args:
        value: The driver's ``PATH`` (None: the system default).
        writable: Folders the desktop can write, as its programs see them.
        first: A folder to put first (the desktop's read-only command wrappers).
    """
    kept = []
    for folder in (value or os.defpath).split(os.pathsep):
        if not folder or not os.path.isabs(folder):
            continue  # "" and relative entries mean "the working directory": writable
        if any(folder == root or folder.startswith(root.rstrip("/") + "/") for root in writable):
            continue
        kept.append(folder)
    if first:
        kept.insert(0, first)
    return os.pathsep.join(dict.fromkeys(kept))
