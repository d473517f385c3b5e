"""Shared fixtures (real `local` desktops), the marks derived from fixtures, and the launch guard.

Marks: every test gets the marks its fixtures declare (``fixture_marks.needs()``), and the
ones with none of ``fixture_marks.NOT_FAST`` get ``fast`` (``python -m pytest -m fast``, the
inner loop). The launch guard (``launch_guard``) fails a test that starts a desktop, a
container or a Ray cluster without the mark for it.
"""

from __future__ import annotations

import collections.abc
from pathlib import Path

import pytest
from checkout_guard import FIX, stale_copies
from desktop_helpers import launch_desktop
from fixture_marks import (
    FAST,
    can_select,
    is_fast,
    marks_from_fixtures,
    needs,
    static_module_marks,
)
from launch_guard import LaunchGuard

from osworld_gym.providers.local.provider import LocalDesktop

_GUARD = pytest.StashKey[LaunchGuard]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test an installed copy that is not this checkout (see checkout_guard)."""
    problems = stale_copies()
    if problems:
        pytest.exit("the tests would not test this checkout:\n  " + "\n  ".join(problems)
                    + f"\nFix: {FIX}", returncode=4)  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Start the launch guard for the session."""
    guard = LaunchGuard()
    guard.install()
    config.stash[_GUARD] = guard


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the launch guard."""
    guard = config.stash.get(_GUARD, None)
    if guard is not None:
        guard.uninstall()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip importing a test module whose top-level marks ``-m`` rules out (fixture_marks)."""
    expression = config.option.markexpr
    if not expression or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    marks = static_module_marks(collection_path)
    if marks and not can_select(expression, marks):
        return True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks from the fixtures each test uses, then ``fast`` (before ``-m`` selects)."""
    for item in items:
        for name in sorted(marks_from_fixtures(item)):
            if item.get_closest_marker(name) is None:
                item.add_marker(name)
        if is_fast(item):
            item.add_marker(FAST)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> collections.abc.Generator[None, object, object]:
    """Watch the test, its fixtures' setup and teardown included, with the launch guard."""
    marks = {mark.name for mark in item.iter_markers()}
    with item.config.stash[_GUARD].watching(marks):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> collections.abc.Generator[None, pytest.TestReport, pytest.TestReport]:
    """Fail the phase in which the test started something its marks do not allow."""
    report = yield
    found = item.config.stash[_GUARD].violations()
    if found:
        message = "launch guard: " + "\nlaunch guard: ".join(found)
        if report.passed:
            report.outcome = "failed"
            report.longrepr = message
        else:
            report.sections.append(("launch guard", message))
    return report


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    """One desktop per test module (with a token, as the provider sets by default)."""
    with launch_desktop() as d:
        yield d


@pytest.fixture()
def clean_desktop(desktop: LocalDesktop) -> LocalDesktop:
    """The module's desktop, reset before the test."""
    desktop.reset()
    return desktop
