"""The guest reports a window manager or session bus that ran and stopped, on any provider.

A dead openbox or dbus-daemon leaves the screen readable: only someone who looks notices. The
local provider polls its processes; a container's or a VM's are out of its reach, so the guest
says it in each screenshot (``X-Desktop-Faults``), and the env ends the episode on it.
"""

from __future__ import annotations

import collections.abc
import os
import signal

import pytest
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop


@pytest.fixture()
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop(accessibility=True) as launched:
        yield launched


@pytest.mark.parametrize("component", ["wm", "dbus"])
def test_a_part_that_stops_is_reported_in_the_next_screenshot(
    desktop: LocalDesktop, component: str
) -> None:
    assert desktop.client.screenshot(format="raw").faults == ()
    os.kill(desktop.component_pid(component), signal.SIGKILL)
    shot = wait_until(
        lambda: desktop.client.screenshot(format="raw").faults or None,
        message=f"the guest to notice {component} stopped",
    )
    assert shot == (component,)
    desktop.reset()  # a fresh session: nothing to report
    assert desktop.client.screenshot(format="raw").faults == ()
