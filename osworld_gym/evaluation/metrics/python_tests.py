"""``check_python_file_by_test_suite``: a task's own Python test suite on the agent's files.

OSWorld's metric (module ``vscode``) puts the agent's files and the task's test file in one
folder, imports the test file with that folder as working directory and first on ``sys.path``,
calls its test function (``test_function_name``, default ``test``) and scores what it returns:
a bool as 1 or 0, a number clipped to [0, 1], anything else by truthiness; a test file that
does not load, a missing function or an exception scores 0.

OSWorld does this inside its own process. The code is the agent's, so here it runs in a child
Python: in a bubblewrap sandbox where one is available (the host read-only, no network, a
private ``/tmp``, only the folder of files writable), else as a plain child process. Either way
it is bounded (``timeout``, default 120 s; a suite still running then scores 0: the agent's
program hangs) and cannot take the evaluating process down with it. The tested code imports
what the task's programs import (pygame for OSWorld's games), from this Python's packages.

Evaluator references (``osworld_gym.evaluation.references``): OSWorld's code changed after
desktop-env 1.0.2 only in what its process keeps after a run. 1.0.2 left every module a suite
imported (the agent's ``settings``, ``main``, ``snake``...) in ``sys.modules``, so a later
suite in the same process importing the same name got the earlier one (the snake and tetris
tasks both ship a ``settings.py``); 2026.04 removes every module the run added. Each run here
is a fresh interpreter, so no module carries over: every score is the one 2026.04 gives, and
the one 1.0.2 gives a suite run first in its process. 1.0.2's carry-over hangs on which tasks
were scored before in the same process and on the state their suites left in those modules, so
it is not reproduced: there is no ``_1_0_2`` variant, both references use this metric.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from osworld_gym.errors import EvaluatorError

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 120.0
TEST_FILE = "test_suite.py"
_RESULT_FILE = ".osworld-gym-test-result.json"

# Runs in the child: argv = [test file, function name, result file]. The score and the reason
# go to the result file, so the suite's own output cannot be mistaken for them.
_RUNNER = """
import importlib.util, json, sys
path, name, out = sys.argv[1:4]
def report(score, detail):
    with open(out, "w") as f:
        json.dump({"score": score, "detail": detail}, f)
try:
    spec = importlib.util.spec_from_file_location("osworld_task_test_suite", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
except BaseException as e:
    report(0.0, f"the test file did not load: {type(e).__name__}: {e}")
    raise SystemExit(0)
function = getattr(module, name, None)
if not callable(function):
    report(0.0, f"the test file has no function {name!r}")
    raise SystemExit(0)
try:
    result = function()
except BaseException as e:
    report(0.0, f"{name}() raised {type(e).__name__}: {e}")
    raise SystemExit(0)
if isinstance(result, bool):
    score = float(result)
elif isinstance(result, (int, float)):
    score = min(1.0, max(0.0, float(result)))
    score = 0.0 if score != score else score
else:
    score = float(bool(result))
report(score, f"{name}() returned {result!r}"[:500])
"""


def _sandboxed(argv: list[str], work: str, bwrap: str) -> list[str]:
    """``argv`` under bubblewrap: the host read-only, ``work`` writable, no network."""
    from osworld_gym.providers.local.provider import (
        sandbox,  # the providers package loads imaging libraries
    )

    keep = sandbox.hidden_paths([*sys.path, sys.prefix, sys.base_prefix, sys.executable])
    return [
        bwrap,
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
        "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--tmpfs", "/var/tmp",
        *[word for path in keep for word in ("--ro-bind", path, path)],
        "--bind", work, work,
        "--chdir", work,
        "--",
        *argv,
    ]  # fmt: skip


def run_test_suite(
    files: Sequence[str | None],
    test_file: str,
    *,
    function: str = "test",
    timeout: float = DEFAULT_TIMEOUT,
    isolate: bool = True,
) -> tuple[float, str]:
    """Copy ``files`` and ``test_file`` into one folder and run the suite there (module doc).

    Args:
        files: The agent's files (None for one that did not exist: it is simply absent).
        test_file: The task's test file; copied as ``test_suite.py``, OSWorld's name for it.
        function: The test function to call.
        timeout: Seconds before the suite is stopped and scores 0.
        isolate: Run under bubblewrap when it is installed.

    Returns:
        The score and a one-line reason.

    Raises:
        EvaluatorError: the child Python could not run at all (not the suite failing).
    """
    with tempfile.TemporaryDirectory(prefix="osworld-gym-test-suite-") as work:
        for path in files:
            if path:
                shutil.copyfile(path, os.path.join(work, os.path.basename(path)))
        shutil.copyfile(test_file, os.path.join(work, TEST_FILE))
        result = os.path.join(work, _RESULT_FILE)
        argv = [sys.executable, "-c", _RUNNER, TEST_FILE, function, result]
        bwrap = shutil.which("bwrap") if isolate else None
        if bwrap is not None:
            argv = _sandboxed(argv, work, bwrap)
        elif isolate:
            logger.warning("bubblewrap is not installed: the task's test suite runs unsandboxed")
        # SDL's dummy drivers: OSWorld's game tasks import pygame, which needs no screen here.
        env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
        try:
            done = subprocess.run(
                argv,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return 0.0, f"the test suite ran past {timeout:g} s"
        try:
            with open(result, encoding="utf-8") as f:
                outcome: dict[str, Any] = json.load(f)
        except (OSError, ValueError) as e:
            stderr = done.stderr.decode(errors="replace").strip()[-2000:]
            if done.returncode != 0 and stderr.startswith("bwrap:"):
                raise EvaluatorError(
                    f"the sandbox for the task's test suite failed: {stderr}"
                ) from e
            # The suite ended the interpreter itself (os._exit, a crash in native code).
            return 0.0, f"the test suite exited with status {done.returncode}: {stderr[-300:]}"
    return float(outcome["score"]), str(outcome["detail"])


def check_python_file_by_test_suite(
    result: Sequence[str | None] | str | None, expected: str | None, **options: Any
) -> float:
    """Run the task's test suite (``expected``) against the agent's files (``result``).

    Args:
        result: The agent's files (a ``multi`` vm_file: a list of paths), or one path.
        expected: The test file.
        **options: ``test_function_name`` (``"test"``); ``timeout`` (seconds, 120).
    """
    if not expected:
        return 0.0
    files = [result] if isinstance(result, str) or result is None else list(result)
    score, detail = run_test_suite(
        files,
        expected,
        function=str(options.get("test_function_name", "test")),
        timeout=float(options.get("timeout", DEFAULT_TIMEOUT)),
    )
    logger.info("check_python_file_by_test_suite: %s (score %g)", detail, score)
    return score
