"""A plain clone, with no OSWorld task files beside it, collects every stage of the test command.

CI's checkout has ``../shared/osworld_tasks`` beside it, so a test module that needs those files
at collection time passes there and stops every stage of the README's command (collection
error, exit 2) for anyone who only clones the repository (issue 38). Here the checkout is cloned
into an empty folder and collected there, and every test is held to ``osworld_data``, the one
place that finds the folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_marks import needs

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

# Collection errors are per module, whatever ``-m`` selects, so one collection of every test
# covers every stage of the README's command (pyproject's addopts ``-m``, then ``-m release``,
# ``-m 'osworld_tasks and not slow'``, ``-m parity``, ``-m trainers``): an empty ``-m``, given
# after addopts' own, selects everything.
COLLECT_ALL = ("--collect-only", "-q", "-p", "no:cacheprovider", "-m", "")


def _is_git_root(folder: Path) -> bool:
    """Whether ``folder`` is the top of a git work tree that git will read (not a release tree)."""
    done = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == folder


def _clone_env() -> dict[str, str]:
    """This environment, less what would point the clone at the task files or this checkout."""
    env = dict(os.environ)
    # The first names the task folder (osworld_data honours it); the second could change -m.
    for name in ("OSWORLD_TASKS_DIR", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    # This checkout's tests folder would give the clone this checkout's helpers (osworld_data).
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and not _in_tests(p)]
    env["PYTHONPATH"] = os.pathsep.join(path)
    # As the README's `pytest` script: the clone's source tree stays off sys.path, so the clone
    # imports the installed package (Python 3.11+; older versions import the clone's copy).
    env["PYTHONSAFEPATH"] = "1"
    # Collecting the parity tests builds OSWorld's side venv (a minute the first time) that no
    # collection uses; naming an interpreter skips the build.
    env["OSWORLD_PARITY_PYTHON"] = sys.executable
    return env


def _in_tests(path: str) -> bool:
    return Path(path).resolve().is_relative_to(TESTS)


@pytest.fixture(scope="module")
@needs("heavy")
def plain_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this checkout's committed tree in a folder with nothing beside it."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not _is_git_root(REPO):
        pytest.skip(f"{REPO} is not a git checkout (a release tree has nothing to clone)")
    clone = tmp_path_factory.mktemp("plain") / "x" / "repo"
    subprocess.run(
        ["git", "clone", "--quiet", str(REPO), str(clone)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return clone


def test_the_clone_has_no_task_files(plain_clone: Path) -> None:
    # Otherwise the collection below would prove nothing about a plain clone.
    probe = (
        "import sys; sys.path.insert(0, 'tests'); import osworld_data; "
        "print(osworld_data.have_osworld_tasks(), osworld_data.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=plain_clone,
        env=_clone_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found, helper = done.stdout.split()
    assert found == "False"
    assert Path(helper).resolve() == (plain_clone / "tests" / "osworld_data.py").resolve()


def test_every_stage_collects_in_a_plain_clone(plain_clone: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *COLLECT_ALL],
        cwd=plain_clone,
        env=_clone_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    lines = done.stdout.strip().splitlines()
    summary = lines[-1] if lines else ""
    report = f"exit {done.returncode}: {summary}\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    assert done.returncode == 0, report
    assert "error" not in summary.lower(), report
    assert re.match(r"\d+ tests? collected", summary), report


# A test that builds the path itself, or reads $OSWORLD_TASKS_DIR, bypasses the skip reasons and
# the plain-clone fallbacks of osworld_data.
_OWN_LOOKUP = re.compile(
    r"""["']shared["']\s*/\s*["']osworld_tasks|["']shared/osworld_tasks|OSWORLD_TASKS_DIR"""
)


def test_the_task_folder_is_found_in_one_place() -> None:
    own = {TESTS / "osworld_data.py", Path(__file__).resolve()}
    offenders = [
        str(path.relative_to(REPO))
        for path in sorted(TESTS.rglob("*.py"))
        if path not in own and _OWN_LOOKUP.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "locate OSWorld's task files with osworld_data instead"
