"""Shared fixtures: real `local` desktops (Xvfb + openbox + guest server) for integration tests."""

from __future__ import annotations

import collections.abc

import pytest
from checkout_guard import FIX, stale_copies
from desktop_helpers import launch_desktop

from osworld_gym.providers.local.provider import LocalDesktop


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test an installed copy that is not this checkout (see checkout_guard)."""
    problems = stale_copies()
    if problems:
        pytest.exit("the tests would not test this checkout:\n  " + "\n  ".join(problems)
                    + f"\nFix: {FIX}", returncode=4)  # fmt: skip


@pytest.fixture(scope="module")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    """One desktop per test module (with a token, as the provider sets by default)."""
    with launch_desktop() as d:
        yield d


@pytest.fixture()
def clean_desktop(desktop: LocalDesktop) -> LocalDesktop:
    """The module's desktop, reset before the test."""
    desktop.reset()
    return desktop
