"""Where the tests find OSWorld's own task files: the one place every test asks.

The files are never copied into this repository. They sit beside the checkout, in
``<repo>/../shared/osworld_tasks`` (OSWorld's ``evaluation_examples`` folder), as in the
developers' and CI's checkouts; ``$OSWORLD_TASKS_DIR`` names another folder. A plain clone has
neither, and its suite must still run: tests that need the files skip with ``MISSING``
(``needs_osworld_tasks``, ``require_osworld_tasks()``), and cases drawn from them at collection
time fall back to synthetic ones (``task_files()`` is then empty).

Stdlib and pytest only: the parity harness and the task tests import it at collection time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

BESIDE_CHECKOUT = Path(__file__).resolve().parents[1].parent / "shared" / "osworld_tasks"
OSWORLD_TASKS = Path(os.environ.get("OSWORLD_TASKS_DIR") or BESIDE_CHECKOUT)

MISSING = (
    f"OSWorld's task files are not at {OSWORLD_TASKS} (the shared/osworld_tasks folder beside "
    "the checkout, or $OSWORLD_TASKS_DIR); a plain clone has none"
)


def without_task_folder(env: dict[str, str]) -> dict[str, str]:
    """``env`` less the variable that names a task folder: what a plain clone's tests see."""
    return {k: v for k, v in env.items() if k != "OSWORLD_TASKS_DIR"}


def have_osworld_tasks() -> bool:
    """Whether OSWorld's task folder is there (its ``examples`` folder is what every test reads)."""
    return (OSWORLD_TASKS / "examples").is_dir()


needs_osworld_tasks = pytest.mark.skipif(not have_osworld_tasks(), reason=MISSING)


def require_osworld_tasks() -> Path:
    """OSWorld's task folder; skips the calling test, saying where it looked, when it is absent."""
    if not have_osworld_tasks():
        pytest.skip(MISSING)
    return OSWORLD_TASKS


def task_files(pattern: str = "examples/*/*.json") -> list[Path]:
    """OSWorld's task files matching ``pattern``, sorted; empty where the folder is absent."""
    return sorted(OSWORLD_TASKS.glob(pattern))
