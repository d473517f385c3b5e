"""A desktop's excess is its own infrastructure fault: memory, processes, disk (issue 35).

Real desktops, real kernel limits (cgroups and a size-capped tmpfs need a root launcher, as in
CI); small limits keep each case to seconds. The host and a second desktop must go on.
"""

from __future__ import annotations

import os

import pytest
from desktop_helpers import launch_desktop, wait_until

from osworld_gym.errors import DesktopLimitError
from osworld_gym.providers.local.limits import GIB, DesktopLimits
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and capped disks need root"),
]

MIB = 1 << 20


def _sh(desktop: LocalDesktop, command: str) -> tuple[int, str, str]:
    result = desktop.client.execute(command, shell=True)
    return result.returncode, result.output, result.error


def _limit_hit(desktop: LocalDesktop) -> str | None:
    try:
        desktop.check()
    except DesktopLimitError as e:
        return str(e)
    return None


def _healthy(desktop: LocalDesktop) -> None:
    desktop.check()
    assert _sh(desktop, "echo ok")[1] == "ok\n"


def test_a_disk_filler_fills_its_own_disk_only() -> None:
    limits = DesktopLimits(memory_bytes=2 * GIB, processes=512, disk_bytes=64 * MIB)
    with launch_desktop(limits=limits) as desktop, launch_desktop() as other:
        code, _, err = _sh(desktop, "head -c 200M /dev/zero > /home/user/fill")
        assert code != 0 and "No space left on device" in err
        assert "disk full" in (_limit_hit(desktop) or "")
        _healthy(other)
        desktop.reset()
        _healthy(desktop)
        assert _sh(desktop, "ls /home/user/fill")[0] != 0


def test_a_big_allocation_ends_in_the_desktops_own_out_of_memory() -> None:
    limits = DesktopLimits(memory_bytes=512 * MIB, processes=512, disk_bytes=256 * MIB)
    with launch_desktop(limits=limits) as desktop, launch_desktop() as other:
        # Touches every page (bytes * n fills them), unlike a lazily zeroed bytearray.
        code, _, _ = _sh(desktop, "python3 -c \"b = b'x' * (1 << 30); print(len(b))\"")
        assert code != 0  # killed by the kernel within the desktop's group
        hit = wait_until(lambda: _limit_hit(desktop), timeout=10, message="the memory limit")
        assert "out of memory" in str(hit)
        _healthy(other)
        desktop.reset()
        _healthy(desktop)


def test_a_fork_bomb_meets_the_desktops_process_limit() -> None:
    limits = DesktopLimits(memory_bytes=2 * GIB, processes=120, disk_bytes=256 * MIB)
    with launch_desktop(limits=limits) as desktop, launch_desktop() as other:
        # Bounded, so the test ends by itself: far more sleepers than the limit allows.
        desktop.client.launch(["sh", "-c", "for i in $(seq 400); do sleep 600 & done; wait"])
        hit = wait_until(lambda: _limit_hit(desktop), timeout=30, message="the process limit")
        assert "too many processes" in str(hit)
        _healthy(other)
        desktop.reset()
        _healthy(desktop)
        # Running ones: a killed sleeper may wait a moment as a zombie for the sandbox's init.
        count = "ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 == \"sleep\"' | wc -l"
        assert int(_sh(desktop, count)[1].strip()) == 0
