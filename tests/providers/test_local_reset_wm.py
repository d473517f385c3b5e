"""Local resets keep a healthy window manager, and replace one that is dead, stuck or changed.

A kept openbox must leave the desktop as a new one would: no app window, desktops as
configured, no menu or grab, its configuration from the restored HOME in force.
"""

from __future__ import annotations

import collections.abc
import os
import signal

import pytest
from desktop_helpers import SMALL_SCREEN, launch_desktop, wait_until
from fixture_marks import needs
from Xlib import X, display

from osworld_gym.guest.capture import SEGMENT_PREFIX
from osworld_gym.providers import processes
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
@needs("desktop")
def wm_desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop() as desktop:
        yield desktop


def _root_value(desktop: LocalDesktop, name: str) -> tuple[int, ...]:
    conn = display.Display(desktop.display)
    try:
        prop = conn.screen().root.get_full_property(conn.intern_atom(name), X.AnyPropertyType)
        return () if prop is None else tuple(int(v) for v in prop.value)
    finally:
        conn.close()


def _grabs_free(desktop: LocalDesktop) -> bool:
    conn = display.Display(desktop.display)
    try:
        root = conn.screen().root
        status = root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
        conn.ungrab_keyboard(X.CurrentTime)
        conn.sync()
        return status == X.GrabSuccess
    finally:
        conn.close()


def _windows(desktop: LocalDesktop) -> list[str]:
    return desktop.client.execute(["wmctrl", "-l"]).output.splitlines()


def _xterm(desktop: LocalDesktop, title: str) -> None:
    desktop.client.launch(["xterm", "-title", title])
    wait_until(lambda: any(title in line for line in _windows(desktop)), message=title)


def _fresh(desktop: LocalDesktop) -> None:
    """What a new desktop shows: no windows, the configured desktops, no grab."""
    assert _windows(desktop) == []
    assert _root_value(desktop, "_NET_NUMBER_OF_DESKTOPS") == (4,)  # Debian's rc.xml
    assert _root_value(desktop, "_NET_CURRENT_DESKTOP") in ((), (0,))
    assert _root_value(desktop, "_NET_SHOWING_DESKTOP") in ((), (0,))
    assert _grabs_free(desktop)


def test_reset_keeps_a_healthy_window_manager(wm_desktop: LocalDesktop) -> None:
    desktop = wm_desktop
    desktop.reset()
    wm = desktop.component_pid("wm")
    desktop.reset()
    assert desktop.component_pid("wm") == wm
    _xterm(desktop, "first")
    _xterm(desktop, "second")
    desktop.client.actions([{"kind": "hotkey", "keys": ["alt", "tab"]}])
    desktop.reset()
    assert desktop.component_pid("wm") == wm
    _fresh(desktop)


def test_a_kept_window_manager_still_manages_with_its_configuration(
    wm_desktop: LocalDesktop,
) -> None:
    """The restored HOME's rc.xml maximizes normal windows: a managed xterm fills the screen."""
    desktop = wm_desktop
    desktop.reset()
    wm = desktop.component_pid("wm")
    _xterm(desktop, "managed")
    desktop.reset()
    assert desktop.component_pid("wm") == wm
    _xterm(desktop, "maximized")
    state = desktop.client.execute(["xprop", "-name", "maximized", "_NET_WM_STATE"]).output
    assert "_NET_WM_STATE_MAXIMIZED_VERT" in state and "_NET_WM_STATE_MAXIMIZED_HORZ" in state


def test_kept_components_are_not_searched_for_again(
    wm_desktop: LocalDesktop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reset that keeps the guest and the window manager walks no sandbox chain.

    A walk scans every process on the host, so resets of many desktops would each pay for all.
    """
    desktop = wm_desktop
    desktop.reset()
    kept = {c: desktop.component_pid(c) for c in ("wm", "guest")}
    assert desktop._bwrap is not None  # noqa: SLF001 -- the sandboxed case is the one cached
    walks: list[int] = []
    walk = processes.sandbox_chain
    monkeypatch.setattr(processes, "sandbox_chain", lambda pid: walks.append(pid) or walk(pid))
    desktop.reset()
    assert {c: desktop.component_pid(c) for c in ("wm", "guest")} == kept
    assert walks == []


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_dead_or_stopped_window_manager_is_replaced(
    wm_desktop: LocalDesktop, stop: signal.Signals
) -> None:
    desktop = wm_desktop
    desktop.reset()
    wm = desktop.component_pid("wm")
    os.kill(wm, stop)
    if stop == signal.SIGKILL:
        wait_until(lambda: desktop._procs["wm"].poll() is not None, message="openbox gone")  # noqa: SLF001
    desktop.reset()
    assert desktop.component_pid("wm") != wm
    _fresh(desktop)
    _xterm(desktop, "after-restart")  # the new one manages windows


def test_a_window_manager_left_in_its_menu_is_replaced(wm_desktop: LocalDesktop) -> None:
    desktop = wm_desktop
    desktop.reset()
    wm = desktop.component_pid("wm")
    width, height = SMALL_SCREEN
    desktop.client.actions([{"kind": "right_click", "x": width // 2, "y": height // 2}])
    wait_until(lambda: not _grabs_free(desktop), message="openbox's root menu")
    desktop.reset()
    assert desktop.component_pid("wm") != wm
    _fresh(desktop)


def test_desktops_a_task_changed_are_back_as_configured(wm_desktop: LocalDesktop) -> None:
    """A new window manager takes the number and choice of desktops from its configuration,
    not from what the last one left on the root window."""
    desktop = wm_desktop
    desktop.reset()
    desktop.client.execute(["wmctrl", "-n", "2"])
    desktop.client.execute(["wmctrl", "-s", "1"])
    desktop.client.execute(["wmctrl", "-k", "on"])
    wait_until(lambda: _root_value(desktop, "_NET_CURRENT_DESKTOP") == (1,), message="desktop 2")
    desktop.reset()
    _fresh(desktop)


def test_a_reconfigured_window_manager_is_replaced(wm_desktop: LocalDesktop) -> None:
    """openbox --reconfigure loads what a task wrote in its rc.xml; the restored one rules."""
    desktop = wm_desktop
    desktop.reset()
    wm = desktop.component_pid("wm")
    desktop.client.execute(["openbox", "--reconfigure"])
    desktop.reset()
    assert desktop.component_pid("wm") != wm
    _fresh(desktop)


def test_reset_empties_the_kept_guests_shared_memory_but_its_frames(
    wm_desktop: LocalDesktop,
) -> None:
    """Apps share the guest's /dev/shm (Chromium leaves files there): a reset empties it."""
    desktop = wm_desktop
    desktop.reset()
    guest = desktop.component_pid("guest")
    desktop.client.screenshot(format="raw")  # a shared frame file
    desktop.client.execute(["sh", "-c", "echo left > /dev/shm/app-leftover"])
    desktop.reset()
    assert desktop.component_pid("guest") == guest
    names = desktop.client.execute(["ls", "-1", "/dev/shm"]).output.split()
    assert "app-leftover" not in names
    assert any(name.startswith(SEGMENT_PREFIX) for name in names)
    desktop.client.screenshot(format="raw")
