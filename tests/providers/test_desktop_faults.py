"""A local desktop's window manager or session bus dying is seen by its cheap per-step check.

Neither fails a guest call (screenshots and actions go on working), so the env relies on
``Desktop.quick_check()``: a poll of the process handles. In a sandbox the handle is the
``bwrap`` that carries the program; killing the program itself must end it too.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from desktop_helpers import launch_desktop, wait_until

from osworld_gym.errors import DesktopDiedError
from osworld_gym.providers.local import LocalDesktop

pytestmark = pytest.mark.desktop


def _died(desktop: LocalDesktop) -> str | None:
    """The component ``quick_check`` reports dead, or None while it sees none."""
    try:
        desktop.quick_check()
    except DesktopDiedError as e:
        return e.component
    return None


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
def test_dead_window_manager_or_session_bus_is_seen_and_reset_recovers(sandbox: bool) -> None:
    with launch_desktop(sandbox=sandbox) as desktop:
        for component in ("wm", "dbus"):
            desktop.quick_check()  # all running
            os.kill(desktop.component_pid(component), signal.SIGKILL)
            started = time.monotonic()
            assert wait_until(lambda: _died(desktop), timeout=5) == component
            assert time.monotonic() - started < 2
            # The guest still answers: only the check tells that the desktop is broken.
            assert desktop.client.screenshot(format="raw").to_array().size
            desktop.reset()
            desktop.quick_check()
            assert desktop.client.execute(["true"]).returncode == 0


def test_quick_check_costs_no_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    with launch_desktop() as desktop:

        def no_calls(*args: object, **kwargs: object) -> None:
            raise AssertionError("quick_check called the guest")

        monkeypatch.setattr(desktop.client, "_request", no_calls)
        started = time.perf_counter()
        for _ in range(100):
            desktop.quick_check()
        assert (time.perf_counter() - started) / 100 < 0.005
