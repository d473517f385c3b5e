"""The README's two commands, word for word, in a clone placed in an empty folder.

CI runs the test command in its own checkout, which has OSWorld's task files beside it; a user
clones into a folder with nothing beside the clone. Here the committed tree is cloned into an
empty folder and, in a venv of its own (on top of this interpreter's packages, so the install
adds only the clone's own package), the README's first command sets up and runs the main job
for real, and its test command runs every stage for real as far as collection
(``PYTEST_ADDOPTS=--collect-only``: running every stage a second time would double CI), so a
stage that cannot even collect without the task files fails here. The fast tier then runs for
real in the clone.

Marked ``release``: an install and two episodes, then seven collections (about ten minutes).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import osworld_data
import pytest
from fixture_marks import needs
from wheel_helpers import clean_env

# Each test runs the README's commands whole: an install, episodes, seven collections.
pytestmark = [pytest.mark.release, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
_STEP_TIMEOUT_S = 1500


def readme_commands() -> tuple[str, str]:
    """The README's quick-start commands: (set up and run the main job, set up and test)."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 2, f"the quick start should hold two bash blocks, it has {len(blocks)}"
    return blocks[0].strip(), blocks[1].strip()


def test_ci_runs_the_readme_test_command() -> None:
    """``.ci/run`` runs the README's test command and nothing else."""
    ci = (REPO / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


@pytest.fixture(scope="module")
@needs("heavy")
def clone_with_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A clone of HEAD in an empty folder, and an environment whose ``python`` is a fresh venv."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to clone")
    if os.geteuid() != 0:
        pytest.skip("the README's commands are written for root (apt installs)")
    base = tmp_path_factory.mktemp("readme") / "empty"
    base.mkdir()
    clone = base / "osworld-gym"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    assert sorted(p.name for p in base.iterdir()) == ["osworld-gym"]
    venv = base.parent / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120
    )
    # The venv's own pytest script, so `pytest` in scripts/run_tests.sh runs the venv's Python
    # (which imports the clone's package) rather than this interpreter's.
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
         "--force-reinstall", "--root-user-action=ignore", "pytest"],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    env = osworld_data.without_task_folder(clean_env())
    for name in ("PYTEST_ADDOPTS", "VIRTUAL_ENV"):
        env.pop(name, None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    return clone, env


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=_STEP_TIMEOUT_S, check=False,
    )  # fmt: skip


@pytest.mark.desktop
@pytest.mark.apps
def test_the_main_job_command_runs_in_a_plain_clone(
    clone_with_venv: tuple[Path, dict[str, str]],
) -> None:
    clone, env = clone_with_venv
    done = _run(readme_commands()[0], clone, env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert re.findall(r"^episode (\d): task ", done.stdout, re.MULTILINE) == ["0", "1"], output
    # Asked from outside the clone (its folder would shadow the install): the package came
    # from the clone into the venv, so the checkout was not what ran.
    where = "python -c 'import osworld_gym; print(osworld_gym.__file__)'"
    installed = _run(where, Path(env["VIRTUAL_ENV"]), env)
    assert Path(installed.stdout.strip()).is_relative_to(Path(env["VIRTUAL_ENV"])), installed


def test_every_stage_of_the_test_command_collects_in_a_plain_clone(
    clone_with_venv: tuple[Path, dict[str, str]],
) -> None:
    clone, env = clone_with_venv
    collect = {**env, "PYTEST_ADDOPTS": "--collect-only -q -p no:cacheprovider"}
    done = _run(readme_commands()[1], clone, collect)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    summaries = re.findall(r"^(\d+)(?:/\d+)? tests? collected", done.stdout, re.MULTILINE)
    assert len(summaries) == readme_commands()[1].count("scripts/run_tests.sh"), output[-6000:]
    assert all(int(n) > 0 for n in summaries), summaries


def test_the_fast_tier_passes_in_a_plain_clone(
    clone_with_venv: tuple[Path, dict[str, str]],
) -> None:
    clone, env = clone_with_venv
    done = _run("python -m pytest -m fast -q -p no:cacheprovider", clone, env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert re.search(r"\d+ passed", output), output[-3000:]
