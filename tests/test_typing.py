"""The public modules type-check: the package ships ``py.typed``, so mypy must pass on them.

Runs ``python -m mypy`` with the ``[tool.mypy]`` settings of pyproject.toml (which name the files
to check). Its cache lives in pytest's cache folder, so a repeat run takes ~2 s; a cold one
~10 s of CPU.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is not installed (pip install 'osworld-gym[test]')")

pytestmark = pytest.mark.heavy  # mypy over the public modules

ROOT = Path(__file__).resolve().parents[1]
# Generous: a cold check on a busy 2-core machine takes under a minute.
_MYPY_TIMEOUT_S = 240


def _public_modules() -> list[Path]:
    """What issue 21 puts under the check: the top-level modules, actions and pool."""
    package = ROOT / "osworld_gym"
    return [
        *package.glob("*.py"),
        *(package / "actions").rglob("*.py"),
        *(package / "pool").rglob("*.py"),
    ]


def test_public_modules_pass_mypy(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    cache_dir = cache.mkdir("mypy") if cache is not None else tmp_path / "mypy-cache"
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=_MYPY_TIMEOUT_S,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mypy found errors (exit {proc.returncode}):\n{output}"
    # The config's file list must cover every public module, new ones included.
    checked = re.search(r"no issues found in (\d+) source files", output)
    assert checked is not None, f"unexpected mypy output:\n{output}"
    expected = len(_public_modules())
    assert int(checked.group(1)) == expected, (
        f"mypy checked {checked.group(1)} files, the public modules are {expected}: "
        f"check [tool.mypy] files in pyproject.toml\n{output}"
    )
