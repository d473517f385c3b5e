"""Which component a dead local desktop names: the cause, not a consequence (unit test).

Killing Xvfb makes the window manager exit the moment the server is gone, so a check that polls
Xvfb (still exiting), then the window manager (already gone), used to blame the window manager
(seen in CI). Fakes stand in for the process handles: the race cannot be forced on real ones.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from osworld_gym.errors import DesktopDiedError
from osworld_gym.providers.local.components import ComponentTable
from osworld_gym.providers.local.limits import DesktopCgroups
from osworld_gym.providers.local.provider import LocalDesktop


class _Handle:
    """A process handle whose poll() answers from a script (None while alive)."""

    def __init__(self, *answers: int | None) -> None:
        self._answers = list(answers)
        self.returncode: int | None = None
        self.pid = os.getpid()  # a live, running process for the stopped-state check

    def poll(self) -> int | None:
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        self.returncode = answer
        return answer


def _desktop(**handles: _Handle) -> LocalDesktop:
    desktop = object.__new__(LocalDesktop)  # no processes started: only the check is tested
    table = ComponentTable(
        Path("/nonexistent"),
        Path("/"),
        wrap=lambda name, argv: (argv, ()),
        environment=lambda name: {},
        sandboxed=lambda name: False,  # no sandbox: the handles' own PIDs
    )
    table.procs.update(handles)  # type: ignore[arg-type]
    table.log_tail = lambda name: f"log of {name}"  # type: ignore[method-assign]
    desktop.components = table  # type: ignore[misc]
    desktop._cgroups = DesktopCgroups()  # type: ignore[attr-defined]  # no limits to check
    desktop.files = SimpleNamespace(disk_full=lambda: None)  # type: ignore[assignment]
    desktop._session_ready = False  # type: ignore[attr-defined]  # nothing to restart
    return desktop


def test_the_x_server_is_named_when_it_died_between_two_polls() -> None:
    desktop = _desktop(
        xvfb=_Handle(None, -9),  # still exiting at the first poll, dead at the next
        wm=_Handle(1),  # its X connection gone: exited already
        guest=_Handle(None),
    )
    with pytest.raises(DesktopDiedError) as info:
        desktop._check_impl()
    assert info.value.component == "xvfb"


def test_a_lone_dead_component_is_named() -> None:
    desktop = _desktop(xvfb=_Handle(None), wm=_Handle(None), guest=_Handle(-9))
    with pytest.raises(DesktopDiedError) as info:
        desktop._check_impl()
    assert info.value.component == "guest"


def test_all_alive_is_no_error() -> None:
    _desktop(xvfb=_Handle(None), wm=_Handle(None), guest=_Handle(None))._check_impl()
