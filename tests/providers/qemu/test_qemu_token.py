"""Our qcow2's guest keeps its token from the desktop's programs (issue 35), as in containers.

The host hands the token in through ``fw_cfg``; the unit starts the entrypoint as root, which
hands it to the guest on a pipe. Slow (a VM boot under TCG): ``pytest -m slow``.
"""

from __future__ import annotations

import collections.abc
from pathlib import Path

import pytest
from fixture_marks import needs
from test_qemu_image import SCREEN, image_dir, pytestmark  # noqa: F401 - fixture and marks

from osworld_gym.providers.qemu.provider import QemuDesktop, QemuProvider, QemuProviderConfig


@pytest.fixture(scope="module")
@needs("desktop")
def vm(
    image_dir: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> collections.abc.Iterator[QemuDesktop]:
    # Software emulation: the token's path is the same under KVM, and TCG boots anywhere.
    config = QemuProviderConfig.from_built_image(
        image_dir, screen_size=SCREEN, work_dir=str(tmp_path_factory.mktemp("vms")), accel="tcg"
    )
    desktop = QemuProvider(config).launch()
    assert isinstance(desktop, QemuDesktop)
    with desktop:
        yield desktop


def _sh(vm: QemuDesktop, command: str) -> tuple[int, str, str]:
    result = vm.client.execute(command, shell=True)
    return result.returncode, result.output, result.error


def test_the_token_is_found_nowhere_in_the_vm(vm: QemuDesktop) -> None:
    token = vm.token
    assert token
    half = len(token) // 2
    # In two halves through a pipe, so no command line holds it whole.
    search = (
        f"a='{token[:half]}'; b='{token[half:]}'; printf '%s%s\\n' \"$a\" \"$b\" | "
        "grep -rlsF --binary-files=text -f /dev/stdin /run /tmp /var/tmp /home /dev/shm "
        "/proc/[0-9]*/environ /proc/[0-9]*/cmdline; echo searched"
    )
    code, out, err = _sh(vm, search)
    assert (code, out.strip()) == (0, "searched"), (out, err)
    pid = _sh(vm, "pgrep -f 'osworld_gym[.]guest'")[1].strip()
    assert pid.isdigit(), pid
    assert "--token-fd 3" in _sh(vm, f"tr '\\0' ' ' < /proc/{pid}/cmdline")[1]
    for target in (f"/proc/{pid}/mem", f"/proc/{pid}/environ"):
        code, _, err = _sh(vm, f"head -c 1 {target} > /dev/null")
        assert code != 0 and "Permission denied" in err, (target, err)
    # The settings the host handed in through fw_cfg stay root's.
    assert _sh(vm, "cat /run/osworld-gym-guest.env")[0] != 0
