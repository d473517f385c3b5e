"""Fixtures of the `osworld-gym` command tests: the command run as a user runs it, and one full
oracle run of the bundled suite on 4 local envs that the view and export tests read."""

from __future__ import annotations

import collections.abc
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixture_marks import needs

SUITE = "desktop-basics"


def osworld_gym(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `osworld-gym` console script and capture what it prints."""
    script = shutil.which("osworld-gym")
    assert script, "the osworld-gym console script is not installed"
    return subprocess.run(
        [script, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


def start_osworld_gym(*args: str, log: Path) -> subprocess.Popen[bytes]:
    """Start `osworld-gym` in the background, its output going to ``log``."""
    script = shutil.which("osworld-gym")
    assert script
    with open(log, "wb") as out:
        return subprocess.Popen(
            [script, *args], stdout=out, stderr=subprocess.STDOUT, preexec_fn=_default_sigint
        )


def _default_sigint() -> None:
    """Give the child the default Ctrl-C handling, whatever the test run inherited.

    A suite started in the background of a non-interactive shell (``nohup ... &``) ignores
    SIGINT, and children inherit that; the kill-and-resume test's Ctrl-C would do nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(predicate: collections.abc.Callable[[], object], timeout: float, what: str) -> None:
    """Poll until ``predicate()`` is true; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


@dataclass
class OracleRun:
    """The full oracle run: its result dir, run folder, output and wall time."""

    result_dir: Path
    run_dir: Path
    done: subprocess.CompletedProcess[str]
    seconds: float


@pytest.fixture(scope="session")
@needs("desktop")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> OracleRun:
    """`osworld-gym run` with the oracle over the whole bundled suite on 4 local envs."""
    result_dir = tmp_path_factory.mktemp("oracle-run") / "results"
    start = time.monotonic()
    done = osworld_gym(
        "run", "--agent", "oracle", "--num-envs", "4", "--output-dir", str(result_dir),
        timeout=900,
    )  # fmt: skip
    seconds = time.monotonic() - start
    return OracleRun(result_dir, result_dir / "structured" / "screenshot" / "oracle", done, seconds)


def count_result_files(run_dir: Path) -> int:
    """Tasks that have a score in a run folder."""
    return sum(1 for _ in run_dir.rglob("result.txt")) if run_dir.exists() else 0


def without_display_env() -> dict[str, str]:
    """This process's environment (a copy), for subprocesses."""
    return dict(os.environ)
