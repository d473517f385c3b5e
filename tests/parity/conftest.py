"""Parity suite: OSWorld's own metric code and ours on the same inputs, equal scores asserted.

Selection: every test here carries the ``parity`` marker, excluded from the default run; run it
with ``bash scripts/run_tests.sh -m parity``.

OSWorld's side: ``desktop-env`` (PyPI, installed ``--no-deps``) in a side venv built on first
use (``parity_venv.py``: ``~/.cache/osworld-gym/parity/venv-<key>``, shared libraries at our
versions), never a dependency of the project. The session fixture ``osworld`` (an
``osworld_client.OSWorld``) starts one worker process there (``osworld_worker.py``, JSON lines
over stdin/stdout) that imports OSWorld's metric
modules one at a time and calls their functions; files are made by the tests in pytest's tmp
folders and passed by absolute path (both processes share the filesystem).

The rule (``parity_harness.assert_same_score``), per case. Our side is scored as our Evaluator
records it: a metric that raises scores 0 (the error is recorded), so "ours" below is our
metric's return value, or 0 when it raised.

* OSWorld returns a number: ours must be the same number, exactly when OSWorld's is 0 or 1,
  within ``abs=1e-9`` otherwise.
* OSWorld raises, or returns something that is not a number (``None``...): OSWorld's own run
  would crash there (or record an unusable score); ours must raise or score 0 — what our
  Evaluator records for such an output. A nonzero score is a disagreement.
* Ours raising ``DependencyNotInstalled`` fails the case (an installation problem, which our
  Evaluator re-raises too).
* OSWorld's module cannot be imported in the side venv (a library it needs is missing), or its
  function touched a stand-in library (``osworld_worker.STAND_INS``: easyocr, imported by
  ``docs.py`` for one function only): the case is skipped with the reason, which the session
  summary lists. Nothing is dropped silently.

A known disagreement is kept as a case marked ``parity_harness.disagreement(reason)`` (a strict
xfail on the assertion), with the reason read from OSWorld's code: it fails as XPASS the day
our metric changes to agree, so the mark goes then.

Adding a family: a module ``test_parity_<family>.py`` here with ``pytestmark =
pytest.mark.parity`` (this conftest marks anything in the folder anyway), cases as
``pytest.param`` lists, and tests that call ``assert_same_score(osworld, "<metric>", *args,
**options)`` with the arguments as the evaluator passes them. ``parity_harness`` has the helpers:
``make_file(tmp_path, name, content)`` (text, bytes, ``None`` for "no file", ``ABSENT`` for a path
with no file), ``real_checks(metric)`` and ``real_rules(metric)`` (OSWorld's task files, read at
collection time, never copied), ``disagreement(reason)``. Libraries that OSWorld's module
imports go into ``parity_venv.SHARED_LIBRARIES`` (both sides use them: pinned to our installed
version) or ``OSWORLD_ONLY_LIBRARIES``; a change there builds a fresh venv.

Environment: ``OSWORLD_PARITY_CACHE`` (venv folder), ``OSWORLD_PARITY_PYTHON`` (use that
interpreter, no build), ``OSWORLD_PARITY_TIMEOUT`` (seconds per call, default 60; a module's
first call gets 180 more for its imports). A call past its deadline, or a dead worker, fails
the case and the next call starts a fresh worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import parity_venv
import pytest
from parity_harness import LEDGER, OSWorld

HERE = Path(__file__).parent
_venv: dict[str, object] = {}


def _is_parity_item(item: pytest.Item) -> bool:
    return Path(str(item.path)).is_relative_to(HERE)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``parity`` (before ``-m`` deselects)."""
    for item in items:
        if _is_parity_item(item) and item.get_closest_marker("parity") is None:
            item.add_marker(pytest.mark.parity)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the side venv before the first test runs, outside any per-test timeout."""
    if not any(_is_parity_item(item) for item in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("parity: preparing OSWorld's side venv (a minute on first use)")
    try:
        _venv["python"] = parity_venv.ensure_venv()
    except Exception as e:  # noqa: BLE001 - reported by every test that needs it
        _venv["error"] = e


def _side_python() -> Path:
    if "error" in _venv:
        raise RuntimeError(f"the side venv could not be built: {_venv['error']}")
    if "python" not in _venv:
        _venv["python"] = parity_venv.ensure_venv()
    python = _venv["python"]
    assert isinstance(python, Path)
    return python


@pytest.fixture(scope="session")
def osworld_python() -> Path:
    """The side venv's Python (OSWorld's ``desktop-env`` and its libraries, not ours)."""
    return _side_python()


@pytest.fixture(scope="session")
def osworld(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OSWorld]:
    """The client of one worker running OSWorld's metrics in the side venv, for the session."""
    client = OSWorld(_side_python(), tmp_path_factory.mktemp("osworld-worker"))
    client.start()
    LEDGER.side_info = client.info
    yield client
    client.close()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember which parity cases were expected failures, for the summary."""
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        LEDGER.test_outcomes[report.nodeid] = outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Per-metric counts of the parity cases that ran, and the modules that could not."""
    if not LEDGER.cases and not LEDGER.skipped:
        return
    terminalreporter.section("OSWorld parity")
    info = LEDGER.side_info
    terminalreporter.write_line(
        f"OSWorld: desktop-env {info.get('version', '?')} at {info.get('desktop_env', '?')}"
        f" (Python {info.get('python', '?')}; {info.get('libraries', {})})"
    )
    for line in LEDGER.lines():
        terminalreporter.write_line(line)
