"""The tree passes ruff's checks and formatting (``[tool.ruff]`` of pyproject.toml), in CI too.

The same commands a contributor runs (``ruff check .``, ``ruff format --check .``), from the
checkout's root; a failure prints ruff's own report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy  # ruff over the whole repository

ROOT = Path(__file__).resolve().parents[1]
_RUFF_TIMEOUT_S = 120  # the whole tree takes about a second


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=_RUFF_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module", autouse=True)
def _ruff_installed() -> None:
    if _ruff("--version").returncode != 0:
        pytest.skip("ruff is not installed (pip install 'osworld-gym[test]')")


def test_ruff_check_passes() -> None:
    proc = _ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_check_passes() -> None:
    proc = _ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
