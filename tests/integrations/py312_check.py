"""Run inside the Python 3.12 venv: import checks, then the SkyRL adapter and core tests.

Usage (from the repository root, with the venv's interpreter; ``test_skyrl.py`` builds it)::

    python tests/integrations/py312_check.py --report build/py312-report.json

Checks first that the interpreter is 3.12, that ``osworld_gym``, the UI-TARS prompt and
``skyrl_gym`` import without torch, and that the guest server's libraries are there (the local
provider starts the guest with this interpreter). Then runs pytest on the adapter's tests and a
slice of the core suite that drives real local desktops, and writes a JSON summary.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import pytest

#: The adapter's tests and the core slice: the env on local desktops, the action parsers, the
#: pool on fakes and on local desktops, the lease desk. Not the 3.12 test itself (recursion).
TEST_PATHS = [
    "tests/integrations/test_skyrl.py",
    "tests/integrations/test_lease.py",
    "tests/test_env.py",
    "tests/actions",
    "tests/pool/test_pool.py",
    "tests/pool/test_pool_desktops.py",
    "tests/pool/test_vector.py",
    "tests/pool/test_pool_config.py",
]
DESELECT = [
    "tests/integrations/test_skyrl.py::test_python_312_runs_the_adapter_and_core_tests",
    # The heaviest cases, to keep the run to a few minutes; their smaller siblings stay.
    "tests/pool/test_pool_desktops.py::test_fault_injection_every_episode_accounted_for[8envs]",
    "tests/pool/test_pool_desktops.py::test_collect_bundled_tasks[8envs-32episodes]",
]
#: Hypothesis fuzzing of the parsers (about 3 minutes); the parsers' example tests stay.
IGNORE = ["tests/actions/test_action_fuzz.py"]
#: The default suite's selection plus the trainers marker (the adapter's tests).
MARKERS = "not slow and not osworld_tasks and not parity"
#: Importable without torch in a bare install (plus skyrl-gym), guest libraries included.
MODULES = [
    "osworld_gym",
    "osworld_gym.integrations",
    "osworld_gym.integrations.skyrl",
    "osworld_gym.policies.uitars.prompt",
    "osworld_gym.policies.oracles.ui_basics",
    "skyrl_gym",
    "Xlib",
    "mss",
    "pymsgbox",
    "pytweening",
    "pyperclip",
]


class _Counter:
    """A pytest plugin counting outcomes per test (call phase, or setup when it failed)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.nodeid] = report.outcome


def main(argv: list[str] | None = None) -> int:
    """Run the checks; 0 when everything imported and no test failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, required=True, help="JSON summary to write")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments")
    args = parser.parse_args(argv)

    summary: dict[str, Any] = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "imports": {},
    }
    for name in MODULES:
        try:
            module = importlib.import_module(name)
            summary["imports"][name] = getattr(module, "__version__", "ok")
        except Exception as e:  # report every failure, not just the first
            summary["imports"][name] = f"FAILED: {type(e).__name__}: {e}"
    summary["torch_imported"] = "torch" in sys.modules
    summary["versions"] = {}
    for dist in ("skyrl-gym", "osworld-gym", "pytest", "numpy", "gymnasium"):
        try:
            summary["versions"][dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            summary["versions"][dist] = None
    import_failures = [n for n, v in summary["imports"].items() if str(v).startswith("FAILED")]

    counter = _Counter()
    started = time.monotonic()
    argv_pytest = [
        *TEST_PATHS,
        "-m",
        MARKERS,
        *(f"--deselect={node}" for node in DESELECT),
        *(f"--ignore={path}" for path in IGNORE),
        "-q",
        "-p",
        "no:cacheprovider",
        "--durations=10",
        *args.pytest_args,
    ]
    exit_code = int(pytest.main(argv_pytest, plugins=[counter]))
    outcomes = list(counter.outcomes.values())
    summary.update(
        pytest_args=argv_pytest,
        pytest_exit=exit_code,
        seconds=round(time.monotonic() - started, 1),
        passed=outcomes.count("passed"),
        failed=outcomes.count("failed"),
        skipped=outcomes.count("skipped"),
        not_passed=sorted(k for k, v in counter.outcomes.items() if v != "passed"),
    )
    args.report.write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "pytest_args"}, indent=1))
    ok = (
        sys.version_info[:2] == (3, 12)
        and not import_failures
        and not summary["torch_imported"]
        and exit_code == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
