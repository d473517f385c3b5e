"""A core-only install (``pip install .`` in a fresh venv, no extras) scoring LibreOffice tasks:
the run reports a clear error naming ``pip install 'osworld-gym[eval]'`` and exits non-zero, the
tasks are errors rather than 0-scores, and ``doctor`` names the same fix (issue 17).

The venv is a plain one (no system site-packages: the host's eval libraries must not show
through); pip installs the core requirements from its index or local wheels.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.desktop, pytest.mark.apps]

REPO = Path(__file__).resolve().parents[2]
TASKS = {"libreoffice_calc": "calc-rename-sheet", "libreoffice_impress": "impress-change-title"}
FIX = "pip install 'osworld-gym[eval]'"


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with ``pip install .`` of a copy of this checkout: the core, no extras."""
    if not (REPO / "setup.cfg").is_file():
        pytest.skip("needs a checkout to install from")
    root = tmp_path_factory.mktemp("core-install")
    source = root / "source"
    # A copy: building in the checkout would write build/ and *.egg-info into it.
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis",
            ".venv", "tests",
        ),
    )  # fmt: skip
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=900,
        env=_clean_env(),
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    return venv


def _clean_env() -> dict[str, str]:
    """This environment without what would let the host's packages into the venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _in_venv(venv: Path, *argv: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a program of the venv outside the checkout (``python -c`` would import from it)."""
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env(),
        cwd=venv.parent,
    )


def test_the_venv_is_core_only(core_venv: Path) -> None:
    probe = "import importlib.util as u; print(u.find_spec('openpyxl'), u.find_spec('osworld_gym'))"
    found = _in_venv(core_venv, "python", "-c", probe, timeout=60)
    openpyxl, package = found.stdout.split(" ", 1)
    assert openpyxl == "None" and str(core_venv) in package, found.stdout + found.stderr


def test_doctor_names_the_eval_extra(core_venv: Path) -> None:
    done = _in_venv(core_venv, "osworld-gym", "doctor", "--no-launch", timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "eval: NOT ready" in done.stdout
    assert "MISSING  python: openpyxl" in done.stdout and f"fix: {FIX}" in done.stdout


def test_scoring_libreoffice_tasks_is_a_clear_error_and_exits_non_zero(
    core_venv: Path, tmp_path: Path
) -> None:
    ids = [arg for task_id in TASKS.values() for arg in ("--task-id", task_id)]
    done = _in_venv(
        core_venv, "osworld-gym", "run", "--agent", "oracle", *ids, "--result-dir", str(tmp_path),
        "--progress", "lines", timeout=600,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-4000:]
    assert "metric libraries not installed" in done.stderr  # said before the run
    assert "2 task(s) not scored in this invocation" in done.stderr
    assert FIX in done.stderr
    run_dir = tmp_path / "structured" / "screenshot" / "oracle"
    for domain, task_id in TASKS.items():
        task_dir = run_dir / domain / task_id
        assert not (task_dir / "result.txt").exists()  # no score, not a 0
        why = (task_dir / "error.txt").read_text()
        assert why.startswith("DependencyNotInstalled: ") and FIX in why, why
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["overall"]["scored"] == 0 and summary["overall"]["errors"] == 2
    assert summary["error_kinds"]["evaluation"] == 2
    assert summary["versions"]["packages"] == {}  # no metric library at all
    assert "openpyxl" in summary["versions"]["missing"]["eval"]
