"""The qemu provider's machinery against a real QEMU, without a guest OS (seconds, TCG).

A blank qcow2 boots into firmware that never finds a disk to boot, so a launch waits for a
guest that never answers: enough to test the monitor, failure reports, and that nothing (QEMU,
its folder, its ports) outlives a desktop, its launching process, or a crash of that process.
The full boot with our image is in test_qemu_image.py (slow).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fixture_marks import needs

from osworld_gym.errors import ProviderError
from osworld_gym.providers import make_provider, processes
from osworld_gym.providers.qemu.command import VMFiles, build_argv, kvm_works
from osworld_gym.providers.qemu.provider import (
    QemuDesktop,
    QemuProvider,
    QemuProviderConfig,
    remove_leftovers,
)
from osworld_gym.providers.qemu.qmp import QMPClient, QMPError
from osworld_gym.providers.qemu.state import write_owner

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None or shutil.which("qemu-img") is None,
    reason="QEMU is not installed (scripts/install_system_deps.sh)",
)


@pytest.fixture(scope="module")
@needs("desktop")  # every test using it boots a VM
def blank_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("image") / "blank.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), "64M"], check=True)
    return path


def _blank_config(image: Path, work_dir: Path, **settings: object) -> QemuProviderConfig:
    values: dict[str, object] = {
        "image": str(image),
        "accel": "tcg",
        "memory_mb": 64,
        "cpus": 1,
        "boot_timeout": 3.0,
        "work_dir": str(work_dir),
    }
    values.update(settings)
    return QemuProviderConfig(**values)  # type: ignore[arg-type]


def _marked_pids(work_dir: Path) -> list[int]:
    pids = []
    for owner in work_dir.glob("*/owner.json"):
        pids += processes.find_marked(json.loads(owner.read_text())["marker"])
    return pids


def test_qmp_client_against_qemu(tmp_path: Path) -> None:
    sock = tmp_path / "qmp.sock"
    proc = subprocess.Popen(
        ["qemu-system-x86_64", "-machine", "none", "-nodefaults", "-display", "none", "-S",
         "-qmp", f"unix:{sock},server=on,wait=off"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        with QMPClient(str(sock), timeout=10) as qmp:
            assert qmp.greeting["QMP"]["version"]["qemu"]["major"] >= 7
            assert qmp.execute("query-status")["status"] == "prelaunch"
            assert "7." in qmp.human_command("info version")
            with pytest.raises(QMPError, match="CommandNotFound"):
                qmp.execute("no-such-command")
            qmp.execute("quit")
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_argv_for_our_image_and_for_osworld_ubuntu(tmp_path: Path) -> None:
    files = VMFiles(
        tmp_path / "disk.qcow2", tmp_path / "q.sock", tmp_path / "s.log", tmp_path / "pid", None
    )
    ours = QemuProviderConfig(image="x.qcow2", kernel="vmlinuz", initrd="initrd.img")
    argv = build_argv(
        qemu="qemu-system-x86_64", accel="tcg", cpus=2, cpu_model=None, memory_mb=2048,
        machine="q35", files=files, disk_interface="virtio", net_device="virtio-net-pci",
        forwards={5000: 23456}, restrict_network=False, vga="none", kernel=ours.kernel,
        initrd=ours.initrd, append=ours.append, extra_args=(),
    )  # fmt: skip
    line = " ".join(argv)
    assert "-accel tcg,thread=multi -cpu max" in line
    assert "hostfwd=tcp:127.0.0.1:23456-:5000" in line
    assert "-kernel vmlinuz -append root=/dev/vda rw console=ttyS0 -initrd initrd.img" in line
    ubuntu = QemuProviderConfig.for_osworld_ubuntu("/images/Ubuntu.qcow2")
    assert (ubuntu.kernel, ubuntu.token, ubuntu.guest_env, ubuntu.vga) == (None, None, False, "std")
    assert (ubuntu.memory_mb, ubuntu.cpus, ubuntu.extra_guest_ports) == (4096, 4, (9222, 8080))
    argv = build_argv(
        qemu="qemu-system-x86_64", accel="kvm", cpus=4, cpu_model=None, memory_mb=4096,
        machine="q35", files=files, disk_interface="virtio", net_device="virtio-net-pci",
        forwards={5000: 20001, 9222: 20002, 8080: 20003}, restrict_network=True, vga="std",
        kernel=None, initrd=None, append="", extra_args=("-usb",),
    )  # fmt: skip
    line = " ".join(argv)
    assert "-accel kvm -cpu host" in line and "-kernel" not in line and "-fw_cfg" not in line
    assert "restrict=on,hostfwd=tcp:127.0.0.1:20001-:5000,hostfwd=tcp:127.0.0.1:20002-:9222" in line
    assert argv[-1] == "-usb"
    with pytest.raises(ValueError, match="accel"):
        QemuProviderConfig(accel="hvf")


def test_built_image_manifest(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="build_qcow2.sh"):
        QemuProviderConfig.from_built_image(tmp_path)
    (tmp_path / "image.json").write_text(
        json.dumps({"image": "d.qcow2", "kernel": "vmlinuz", "initrd": "initrd.img", "append": "x"})
    )
    config = QemuProviderConfig.from_built_image(tmp_path, screen_size=(800, 600), memory_mb=1024)
    assert config.image == str(tmp_path / "d.qcow2") and config.initrd == str(
        tmp_path / "initrd.img"
    )
    assert (config.append, config.screen_size, config.memory_mb) == ("x", (800, 600), 1024)
    os.environ["OSWORLD_GYM_QEMU_IMAGE_DIR"] = str(tmp_path)
    try:
        with pytest.raises(ProviderError, match="d.qcow2 does not exist"):
            make_provider("qemu", screen_size=(800, 600)).launch()
    finally:
        del os.environ["OSWORLD_GYM_QEMU_IMAGE_DIR"]


def test_kvm_probe_without_qemu_is_false() -> None:
    assert kvm_works(qemu="/nonexistent/qemu") is False


def test_kvm_probe_with_a_kernel_that_cannot_run_is_false(tmp_path: Path) -> None:
    """The firmware may run under KVM where a kernel does not: with a kernel, it is the test."""
    kernel = tmp_path / "vmlinuz"
    kernel.write_bytes(b"not a kernel")
    assert kvm_works(kernel=str(kernel)) is False


def test_guest_that_never_answers_fails_in_time_and_leaves_nothing(
    blank_image: Path, tmp_path: Path
) -> None:
    provider = QemuProvider(_blank_config(blank_image, tmp_path))
    assert provider.accel == "tcg"
    start = time.monotonic()
    with pytest.raises(ProviderError, match="did not answer within 3 s(.|\n)*serial console"):
        provider.launch()
    assert time.monotonic() - start < 20
    assert not list(tmp_path.iterdir())  # folder (overlay, socket, logs) removed
    assert provider.failed_launches == 1


def test_monitor_snapshot_and_close(
    blank_image: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A desktop object on a VM without a guest: QMP works, close stops QEMU and cleans up."""
    # Skip the guest wait: this VM has no guest; everything else is the real start-up.
    monkeypatch.setattr(QemuDesktop, "_wait_for_guest", lambda self, deadline: None)
    desktop = QemuProvider(_blank_config(blank_image, tmp_path)).launch()
    assert isinstance(desktop, QemuDesktop)
    pid = desktop.pid
    assert pid is not None and processes.is_alive(pid)
    assert "osworld-gym-ready" in desktop.qmp.human_command("info snapshots")
    assert desktop.snapshot_seconds > 0
    guest_env = (desktop.folder / "guest.env").read_text()
    assert guest_env.count("OSWORLD_GUEST_TOKEN=") == 1
    assert "OSWORLD_SESSION=minimal\n" in guest_env  # a session left open, outside an env
    assert "OSWORLD_BOOT_TIMEOUT=3\n" in guest_env  # the guest's session waits as the host does
    assert oct((desktop.folder / "guest.env").stat().st_mode & 0o777) == "0o600"
    desktop.check()
    folder = desktop.folder
    desktop.close()
    assert not processes.is_alive(pid) and not folder.exists()
    desktop.close()  # idempotent


def test_garbage_collected_desktop_stops_its_vm(
    blank_image: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(QemuDesktop, "_wait_for_guest", lambda self, deadline: None)
    desktop = QemuProvider(_blank_config(blank_image, tmp_path)).launch()
    pid, folder = desktop.pid, desktop.folder
    assert pid is not None and processes.is_alive(pid)
    del desktop
    gc.collect()
    assert not processes.is_alive(pid) and not folder.exists()


def test_launcher_killed_mid_boot_leaves_nothing_behind(blank_image: Path, tmp_path: Path) -> None:
    """SIGKILL the process that launches a VM: its watchdog stops QEMU; the next provider
    removes the folder it left."""
    config = _blank_config(blank_image, tmp_path, boot_timeout=120.0)
    fields = ("image", "accel", "memory_mb", "cpus", "boot_timeout", "work_dir")
    settings = {name: getattr(config, name) for name in fields}
    code = textwrap.dedent(
        f"""
        from osworld_gym.providers.qemu.provider import QemuProvider, QemuProviderConfig
        QemuProvider(QemuProviderConfig(**{settings!r})).launch()
        """
    )
    launcher = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while not _marked_pids(tmp_path):
            assert launcher.poll() is None, "the launcher exited early"
            assert time.monotonic() < deadline, "QEMU did not start"
            time.sleep(0.05)
        qemu_pids = _marked_pids(tmp_path)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        assert processes.wait_gone(qemu_pids, timeout=15) == [], "the watchdog left QEMU running"
        assert len(list(tmp_path.iterdir())) == 1  # the dead launcher's folder is still there
        assert len(remove_leftovers(tmp_path)) == 1
        assert not list(tmp_path.iterdir())
    finally:
        launcher.kill()
        launcher.wait()


def test_leftover_sweep_spares_live_owners_and_kills_orphans(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    orphan = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, processes.MARKER_VARIABLE: "orphan-marker"}
    )
    try:
        # until it has exec'd, the child's /proc environ is still this process's
        deadline = time.monotonic() + 10
        while processes.find_marked("orphan-marker") != [orphan.pid]:
            assert time.monotonic() < deadline, "the orphan never showed its marker"
            time.sleep(0.01)
        (tmp_path / "vm-dead").mkdir()
        (tmp_path / "vm-dead" / "owner.json").write_text(
            json.dumps({"pid": int(dead.stdout), "start": "1", "marker": "orphan-marker"})
        )
        live = tmp_path / "vm-live"
        live.mkdir()
        write_owner(live, "live-marker")  # this process: alive
        assert remove_leftovers(tmp_path) == [tmp_path / "vm-dead"]
        assert orphan.wait(timeout=10) != 0
        assert live.exists()
    finally:
        orphan.kill()
        orphan.wait()
