"""A `local` desktop's programs cannot void their own episode (issue 35).

An episode that ends as an infrastructure fault is re-run by trainers and collectors: a policy
that can cause one escapes a bad episode, and learns to. Acting as a desktop program would
(commands run through the guest, in the sandbox, as the desktop's user), each way found so far
must leave the episode running and scored: the guest is out of the desktop's reach under a root
launcher, a killed or stopped window manager or session bus is restarted, a shrunk screen is
padded and restored.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from desktop_helpers import launch_desktop, restarted, wait_until

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a root launcher's rules need root")


def _sh(desktop: LocalDesktop, command: str) -> tuple[int, str, str]:
    result = desktop.client.execute(command, shell=True)
    return result.returncode, result.output, result.error


def _ids(pid: int) -> list[str]:
    status = open(f"/proc/{pid}/status").read()  # noqa: SIM115, PTH123 - a one-line read
    return next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]


@root_only
def test_the_desktops_programs_cannot_signal_the_guest() -> None:
    with launch_desktop() as desktop:
        identity = desktop.identity
        assert identity.guest_uid is not None and identity.guest_uid != identity.uid
        guest = desktop.component_pid("guest")
        # Real and saved uid its own, effective (and file system) uid the desktop's.
        assert _ids(guest) == [str(identity.guest_uid), str(identity.uid)] * 2
        # $PPID of a command the guest runs is the guest itself.
        for signal_name in ("KILL", "STOP", "TERM", "INT"):
            code, _, err = _sh(desktop, f"kill -{signal_name} $PPID")
            assert code != 0 and "not permitted" in err, (signal_name, err)
        # Nor trace it, nor read its memory (it is not dumpable, and not the desktop's).
        code, _, _ = _sh(desktop, "cat /proc/$PPID/mem /proc/$PPID/environ >/dev/null")
        assert code != 0
        # Every other process is the desktop's user through and through, with no capability.
        code, out, err = _sh(desktop, "ps -eo ruid=,suid=,pid=,comm=")
        assert code == 0, err
        rows = [line.split() for line in out.splitlines()]
        others = [row for row in rows if row[0] != "1001"]
        assert [row[:2] for row in others] == [["1000", "1000"]] * len(others), rows
        assert len(rows) - len(others) == 1  # the guest alone
        code, out, _ = _sh(desktop, "grep -h CapEff /proc/[0-9]*/status | sort -u")
        assert out.split() == ["CapEff:", "0000000000000000"]
        desktop.check()
        assert desktop.component_pid("guest") == guest
        # Its programs can still do what OSWorld's tasks do in HOME.
        assert _sh(desktop, "touch ~/made && ls -n ~/made | cut -d' ' -f3")[1] == "1000\n"
        assert (desktop.home / "made").stat().st_uid == identity.uid
        desktop.client.upload("/home/user/uploaded.txt", b"x")
        assert (desktop.home / "uploaded.txt").stat().st_uid == identity.uid


@pytest.mark.parametrize("how", ["KILL", "STOP"])
@pytest.mark.parametrize("component", ["wm", "dbus"])
def test_a_session_part_stopped_from_inside_is_restarted(component: str, how: str) -> None:
    with launch_desktop() as desktop:
        program = "openbox" if component == "wm" else "dbus-daemon"
        old = desktop.component_pid(component)
        code, _, err = _sh(desktop, f"kill -{how} $(pidof {program})")
        assert code == 0, err

        wait_until(
            lambda: restarted(desktop, component, old), timeout=10, message=f"{component} restarted"
        )
        assert desktop.client.screenshot(format="raw").faults == ()
        if component == "wm":
            assert _sh(desktop, "wmctrl -m | head -1")[1] == "Name: Openbox\n"
        else:
            assert _sh(desktop, "dbus-send --session --print-reply --dest=org.freedesktop.DBus "
                       "/ org.freedesktop.DBus.GetId >/dev/null")[0] == 0  # fmt: skip


def test_a_shrunk_screen_keeps_the_frame_size_and_a_reset_restores_it() -> None:
    with launch_desktop() as desktop:
        width, height = desktop.config.screen_size
        # Turning the only output off fails to shrink the screen to 0x0 (BadValue) yet turns it
        # off; xdpyinfo tells whether the screen got its new size.
        code, _, err = _sh(
            desktop,
            "{ xrandr --output screen --off; xrandr --fb 200x100; } 2>/dev/null; "
            "xdpyinfo | grep -q ' 200x100 pixels'",
        )
        assert code == 0, err
        shot = desktop.client.screenshot(format="raw")
        assert shot.faults == ()
        frame = shot.to_array()
        assert frame.shape == (height, width, 3)
        assert not np.any(frame[100:, :]) and not np.any(frame[:, 200:])  # no screen there
        x_server = desktop.component_pid("xvfb")
        desktop.reset()
        assert desktop.component_pid("xvfb") == x_server  # restored, not replaced
        assert _sh(desktop, "xdpyinfo | grep dimensions")[1].split()[1] == f"{width}x{height}"
        # The pointer where a new server has it: the middle of the restored screen.
        where = _sh(desktop, "xdotool getmouselocation --shell | head -2")[1].split()
        assert where == [f"X={width // 2}", f"Y={height // 2}"]
        assert desktop.client.screenshot(format="raw").to_array().shape == (height, width, 3)
