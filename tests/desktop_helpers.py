"""Helpers for tests that use real `local` desktops (importable as ``desktop_helpers``)."""

from __future__ import annotations

import collections.abc
import contextlib
import os
import subprocess
import time

import numpy
import pytest

from osworld_gym.actions import Action
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.local.provider import LocalDesktop, LocalProvider, LocalProviderConfig

SMALL_SCREEN = (1280, 720)


def shell_output(desktop: LocalDesktop, command: str) -> str:
    """Run ``command`` in the desktop's shell; fail the test unless it succeeds; its output."""
    result = desktop.client.execute(command, shell=True)
    assert result.returncode == 0, result.error
    return result.output


def settled_screen(
    desktop: LocalDesktop, masked: tuple[slice, slice] | None = None
) -> numpy.ndarray:
    """The screen once still (the events settle), as ints, with ``masked`` (a clock) zeroed."""
    shot = desktop.client.screenshot(format="raw", settle=True, settle_mode="events")
    frame = shot.to_array().astype(int)
    if masked is not None:
        frame[masked] = 0
    return frame


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


def restarted(desktop: LocalDesktop, component: str, old: int) -> bool:
    """Whether the desktop's check has restarted ``component`` (its program PID was ``old``).

    Runs the check first (it restarts session parts); a sandboxed program that exited has no PID
    until then (``ProcessLookupError``), which is "not yet".
    """
    desktop.quick_check()
    try:
        return bool(desktop.component_pid(component) != old)
    except ProcessLookupError:
        return False


def run_episode(env: OSWorldEnv, task_id: str, steps: list) -> float:
    """Reset to ``task_id``, take ``steps`` until the episode ends; return its last reward.

    A step that is a plain function (not an action) is a condition on the env, polled with
    ``wait_until()`` until it holds: what an agent would wait to see before acting on.
    Fails the test on an infrastructure fault, a parse error, or steps that never end it.
    """
    env.reset(options={"task_id": task_id})
    for step in steps:
        if callable(step) and not isinstance(step, Action):
            name = getattr(step, "__name__", repr(step))
            wait_until(lambda step=step: step(env), timeout=60, message=name)
            continue
        _, reward, terminated, truncated, info = env.step(step)
        assert info["infra_error"] is None, info["infra_error"]
        assert info["parse_error"] is None, info["parse_error"]
        if terminated or truncated:
            return reward
    raise AssertionError(f"{task_id}: the steps did not end the episode")


@contextlib.contextmanager
def bare_display(screen: str = "320x240") -> collections.abc.Iterator[str]:
    """A bare Xvfb display (its number chosen by Xvfb itself), of ``WIDTHxHEIGHT`` pixels.

    Skips the test where Xvfb is not installed.
    """
    read, write = os.pipe()
    try:
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{screen}x24", "-nolisten", "tcp"],
            pass_fds=[write],
            stderr=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        os.close(read)
        pytest.skip("Xvfb is not installed")
    finally:
        os.close(write)
    try:
        with os.fdopen(read) as numbers:
            number = numbers.readline().strip()  # written once the display accepts clients
        assert number, "Xvfb did not start"
        yield f":{number}"
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=30)
