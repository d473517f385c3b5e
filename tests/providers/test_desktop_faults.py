"""A local desktop's window manager or session bus dying is seen by its cheap per-step check.

Neither fails a guest call (screenshots and actions go on working), so the env relies on
``Desktop.quick_check()``: a poll of the process handles. In a sandbox the handle is the
``bwrap`` that carries the program; killing the program itself must be seen too. The
desktop's own programs can kill them (same user), so the check restarts them in place, as a
session manager would, rather than end the episode as an infrastructure fault; one that keeps
dying is a fault after all.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from desktop_helpers import launch_desktop, restarted, wait_until

from osworld_gym.errors import DesktopDiedError
from osworld_gym.providers.local import provider as local

pytestmark = pytest.mark.desktop


def test_a_sandboxed_program_that_exited_has_no_pid_until_restarted() -> None:
    # Its bwrap outlives it for a few milliseconds: that PID is not the program's, and a caller
    # that took it for a restarted program raced the check (seen in CI).
    with launch_desktop(sandbox=True) as desktop:
        old = desktop.component_pid("dbus")
        os.kill(old, signal.SIGKILL)
        seen: list[int] = []

        def gone() -> bool:
            try:
                seen.append(desktop.component_pid("dbus"))
            except ProcessLookupError:
                return True
            return False

        wait_until(gone, timeout=5, interval=0.001)
        assert set(seen) <= {old}
        wait_until(lambda: restarted(desktop, "dbus", old), timeout=10)
        assert desktop.client.screenshot(format="raw").faults == ()


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
def test_dead_window_manager_or_session_bus_is_restarted_by_the_check(sandbox: bool) -> None:
    with launch_desktop(sandbox=sandbox) as desktop:
        for component in ("wm", "dbus"):
            desktop.quick_check()  # all running
            old = desktop.component_pid(component)
            os.kill(old, signal.SIGKILL)
            started = time.monotonic()
            wait_until(lambda: restarted(desktop, component, old), timeout=10)  # noqa: B023
            assert time.monotonic() - started < 5
            # The session is whole again: the guest sees no part missing.
            assert desktop.client.screenshot(format="raw").faults == ()
            assert desktop.client.execute(["true"]).returncode == 0
        desktop.reset()
        desktop.quick_check()


def test_a_part_that_keeps_dying_is_a_fault_at_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_MAX_REVIVALS", 0)
    with launch_desktop() as desktop:
        os.kill(desktop.component_pid("wm"), signal.SIGKILL)

        def died() -> str | None:
            try:
                desktop.quick_check()
            except DesktopDiedError as e:
                return e.component
            return None

        assert wait_until(died, timeout=5) == "wm"
        desktop.reset()  # a new episode: the session is whole again
        desktop.quick_check()


def test_quick_check_costs_no_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    with launch_desktop() as desktop:

        def no_calls(*args: object, **kwargs: object) -> None:
            raise AssertionError("quick_check called the guest")

        monkeypatch.setattr(desktop.client, "_request", no_calls)
        started = time.perf_counter()
        for _ in range(100):
            desktop.quick_check()
        assert (time.perf_counter() - started) / 100 < 0.005
