"""Our qcow2 in a real QEMU VM (software emulation here): boot, guest server, loadvm reset.

Slow: the session fixture builds the image with vm_images/qemu/build_qcow2.sh (cached in
$OSWORLD_GYM_QEMU_IMAGE_DIR or /var/cache/osworld-gym/qemu; ~10 min cold, seconds warm) and
each VM boots in about a minute under TCG. Run with
``pytest -m slow tests/providers/qemu``.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import gymnasium as gym
import pytest
import requests
from fixture_marks import needs

import osworld_gym  # noqa: F401 - registers OSWorld-v0
from osworld_gym.actions import Done, TypeText
from osworld_gym.providers import processes
from osworld_gym.providers.qemu.provider import (
    DEFAULT_IMAGE_DIR,
    IMAGE_DIR_VARIABLE,
    QemuDesktop,
    QemuProvider,
    QemuProviderConfig,
)

REPO = Path(__file__).resolve().parents[3]
SCREEN = (1280, 720)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(os.geteuid() != 0, reason="building the image needs root"),
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("qemu-system-x86_64", "qemu-img", "debootstrap")),
        reason="QEMU or debootstrap is not installed (scripts/install_system_deps.sh)",
    ),
]


@pytest.fixture(scope="session")
def image_dir() -> Path:
    """The built image (built now unless cached and up to date)."""
    folder = Path(os.environ.get(IMAGE_DIR_VARIABLE) or DEFAULT_IMAGE_DIR)
    subprocess.run(
        ["bash", str(REPO / "vm_images" / "qemu" / "build_qcow2.sh"), str(folder)],
        check=True,
        timeout=3000,
    )
    return folder


@pytest.fixture(scope="module")
def config(image_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> QemuProviderConfig:
    return QemuProviderConfig.from_built_image(
        image_dir, screen_size=SCREEN, work_dir=str(tmp_path_factory.mktemp("vms"))
    )


@pytest.fixture(scope="module")
@needs("desktop")
def vm(config: QemuProviderConfig) -> collections.abc.Iterator[QemuDesktop]:
    desktop = QemuProvider(config).launch()
    assert isinstance(desktop, QemuDesktop)
    with desktop:
        yield desktop


def test_guest_answers_with_token_and_screen_from_the_host(vm: QemuDesktop) -> None:
    info = vm.client.info(refresh=True)
    assert info.extended and info.screen_size == SCREEN
    shot = vm.client.screenshot()
    assert (shot.width, shot.height) == SCREEN and shot.to_array().shape == (720, 1280, 3)
    assert vm.client.execute("whoami").output.strip() == "user"
    denied = requests.get(vm.endpoint + "/screenshot", timeout=30)  # no token
    assert denied.status_code == 401
    assert vm.endpoint.startswith("http://127.0.0.1:")


def test_loadvm_reset_removes_what_was_written_after_the_snapshot(vm: QemuDesktop) -> None:
    vm.client.execute("echo after > ~/after-snapshot.txt", shell=True)
    assert vm.client.execute("cat ~/after-snapshot.txt", shell=True).output == "after\n"
    vm.reset()
    check = "test -e ~/after-snapshot.txt && echo present || echo gone"
    assert vm.client.execute(check, shell=True).output.strip() == "gone"
    # the same again: the snapshot survives being loaded
    vm.client.upload("/home/user/Desktop/second.txt", b"x")
    vm.reset()
    assert vm.client.execute("ls ~/Desktop/second.txt", shell=True).returncode != 0
    assert vm.last_reset_seconds * 5 <= vm.boot_seconds, (
        f"loadvm reset {vm.last_reset_seconds:.2f} s vs boot {vm.boot_seconds:.1f} s"
    )


def test_close_stops_qemu_and_removes_its_folder(config: QemuProviderConfig) -> None:
    desktop = QemuProvider(config).launch()
    assert isinstance(desktop, QemuDesktop)
    pid, folder = desktop.pid, desktop.folder
    assert pid is not None
    desktop.close()
    assert not processes.is_alive(pid) and not folder.exists()


# A terminal whose title no shell start-up file changes (bash --norc), so the setup's window
# check does not depend on the image's ~/.bashrc.
WRITE_HELLO = {
    "id": "vm-write-hello",
    "instruction": "Write the word hello into ~/Desktop/hello.txt using the open terminal.",
    "config": [
        {
            "type": "launch",
            "parameters": {"command": ["xterm", "-title", "vmterm", "-e", "bash", "--norc"]},
        },
        {
            "type": "execute_with_verification",
            "parameters": {
                "command": "true",
                "shell": True,
                "verification": {"window_exists": "vmterm"},
                "max_wait_time": 60,
                "check_interval": 0.5,
            },
        },
        {"type": "activate_window", "parameters": {"window_name": "vmterm"}},
    ],
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "cat ~/Desktop/hello.txt", "shell": True},
        "expected": {"type": "rule", "rules": {"expected": "hello\n"}},
    },
}


SUITE = "desktop-basics"
TASK = "os-create-project-tree"
SOLUTION = [
    TypeText(
        text="mkdir -p ~/projects/webapp/{src,tests,docs}; touch ~/projects/webapp/README.md\n"
    ),
    Done(),
]


def _bundled(task_id: str, domain: str) -> dict:
    path = resources.files("osworld_gym_envs").joinpath(f"{SUITE}/examples/{domain}/{task_id}.json")
    return json.loads(path.read_text())


def test_episodes_in_the_vm(config: QemuProviderConfig) -> None:
    """gym.make with the qemu provider: solutions score 1.0 (our task and a bundled one);
    after a loadvm reset the work is gone and doing nothing scores 0.0."""
    env = gym.make(
        "OSWorld-v0",
        provider=config,
        tasks=[WRITE_HELLO, _bundled(TASK, "os")],
        action_format="structured",
        screen_size=SCREEN,
        max_steps=5,
    )
    try:
        env.reset(options={"task_id": "vm-write-hello"})
        obs, reward, terminated, truncated, info = env.step(
            TypeText(text="echo hello > ~/Desktop/hello.txt\n")
        )
        assert info["infra_error"] is None
        obs, reward, terminated, truncated, info = env.step(Done())
        assert (reward, terminated) == (1.0, True)
        obs, info = env.reset(options={"task_id": "vm-write-hello"})
        assert info["timings"]["desktop"] < 10  # a loadvm, not a boot
        obs, reward, terminated, truncated, info = env.step(Done())
        assert (reward, terminated) == (0.0, True)
        env.reset(options={"task_id": TASK})
        for action in SOLUTION:
            obs, reward, terminated, truncated, info = env.step(action)
            assert info["infra_error"] is None
        assert (reward, terminated) == (1.0, True)
    finally:
        env.close()


def test_gnome_session_in_the_vm(config: QemuProviderConfig) -> None:
    """Our image's GNOME session boots in the VM (about 3 min under TCG here): GNOME Shell is
    the window manager, timedatectl answers from the VM's systemd, and a reset keeps it."""
    gnome = dataclasses.replace(config, session="gnome", boot_timeout=900.0)
    with QemuProvider(gnome).launch() as desktop:
        for _ in range(2):
            manager = desktop.client.execute("wmctrl -m", shell=True)
            assert "Name: GNOME Shell" in manager.output, manager
            clock = desktop.client.execute(["timedatectl", "show", "-p", "Timezone"])
            assert clock.returncode == 0 and clock.output.startswith("Timezone="), clock
            desktop.reset()
