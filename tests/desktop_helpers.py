"""Helpers for tests that use real `local` desktops (importable as ``desktop_helpers``)."""

from __future__ import annotations

import collections.abc
import time

import pytest

from osworld_gym.providers.local import LocalDesktop, LocalProvider, LocalProviderConfig

SMALL_SCREEN = (1280, 720)


def launch_desktop(**overrides: object) -> LocalDesktop:
    """Launch a local desktop with a small screen unless told otherwise."""
    settings: dict[str, object] = {"screen_size": SMALL_SCREEN}
    settings.update(overrides)
    desktop = LocalProvider(LocalProviderConfig(**settings)).launch()  # type: ignore[arg-type]
    assert isinstance(desktop, LocalDesktop)
    return desktop


def wait_until(
    predicate: collections.abc.Callable[[], object],
    timeout: float = 20.0,
    interval: float = 0.05,
    message: str = "condition",
) -> object:
    """Poll ``predicate`` until it returns a truthy value; fail the test at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)
