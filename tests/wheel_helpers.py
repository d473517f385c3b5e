"""Building this checkout as users get it (a wheel, an sdist) and finding Pythons to install it in.

Shared by the core-install tests (tests/cli/test_core_install.py), the release tests
(tests/test_release.py) and the trainers' side venvs (tests/integrations/side_venv.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What a build must not see or write into: VCS data, build outputs, caches, venvs, the tests.
_NOT_SHIPPED = (
    ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", ".venv",
    "tests", "site",
)  # fmt: skip


def copy_checkout(destination: Path) -> Path:
    """A copy of this checkout to build from (a build in the checkout writes into it)."""
    shutil.copytree(REPO, destination, ignore=shutil.ignore_patterns(*_NOT_SHIPPED))
    return destination


def clean_env() -> dict[str, str]:
    """This environment without what would let the host's packages into a venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def find_python(version: str) -> Path | None:
    """A working interpreter of this ``major.minor`` version: on PATH, or one of pyenv's.

    Each candidate is run once: pyenv's shim ``python3.12`` is on PATH even when 3.12 is not
    the selected version, and then it exits 127.
    """
    candidates: list[Path] = []
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(Path(found))
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(pyenv_root.glob(f"{version}.*/bin/python"), reverse=True)
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    for candidate in candidates:
        try:
            done = subprocess.run(
                [str(candidate), "-c", probe], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    return None
