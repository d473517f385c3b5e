"""The QEMU command line of a desktop VM, and whether KVM works on this host.

``/dev/kvm`` existing is not enough: some hosts (nested or paravirtual KVM) create VMs but fail
when a vCPU starts with the requested CPU model, or hang once a kernel leaves real mode.
``kvm_works()`` therefore boots, with the exact accelerator and CPU arguments a desktop would
use, the desktops' own kernel until it prints its first line, or (an image with its own
bootloader) the firmware until SeaBIOS prints its banner (milliseconds when KVM works).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

QEMU_BINARY = "qemu-system-x86_64"
ACCELERATORS = ("auto", "kvm", "tcg")
_PROBE_TIMEOUT = 15.0


@dataclass(frozen=True)
class VMFiles:
    """Paths of one VM's files (all inside its private folder)."""

    overlay: Path
    qmp_socket: Path
    serial_log: Path
    pidfile: Path
    guest_env: Path | None


def accel_args(accel: str, cpus: int, cpu_model: str | None) -> list[str]:
    """``-accel``/``-cpu`` arguments: the host CPU under KVM, all TCG features otherwise."""
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", cpu_model or "host"]
    thread = ",thread=multi" if cpus > 1 else ""
    return ["-accel", f"tcg{thread}", "-cpu", cpu_model or "max"]


def kvm_works(
    cpu_model: str | None = None, qemu: str = QEMU_BINARY, kernel: str | None = None
) -> bool:
    """True if a vCPU runs under KVM here with ``cpu_model`` (default ``host``).

    The firmware's banner alone is not enough: on some nested hosts the firmware and a kernel's
    real-mode start run, then the vCPU hangs without a word as the kernel leaves real mode. So
    with the VMs' ``kernel`` at hand, that kernel must print its first line ("Linux version") on
    the serial port; without one (an image with its own bootloader), the firmware's banner on
    the debug port is the test.
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    if shutil.which(qemu) is None:
        return False
    with tempfile.TemporaryDirectory(prefix="osworld-gym-kvm-probe-") as folder:
        output = Path(folder) / "output.txt"
        if kernel:
            wanted = b"Linux version"
            device = [
                "-kernel", kernel, "-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1",
                "-no-reboot", "-chardev", f"file,id=out,path={output}", "-serial", "chardev:out",
            ]  # fmt: skip
        else:
            wanted = b"SeaBIOS"
            device = [
                "-chardev", f"file,id=out,path={output}",
                "-device", "isa-debugcon,iobase=0x402,chardev=out",
            ]  # fmt: skip
        argv = [
            qemu, *accel_args("kvm", 1, cpu_model), "-m", "128", "-nodefaults", "-display", "none",
            *device,
        ]  # fmt: skip
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + _PROBE_TIMEOUT
            while time.monotonic() < deadline:
                if output.exists() and wanted in output.read_bytes():
                    return True
                if proc.poll() is not None:
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    logger.info("KVM is present but does not run a vCPU here: %s", err.strip())
                    return False
                time.sleep(0.02)
            logger.info(
                "KVM probe: no %r from the %s in %g s: software emulation",
                wanted.decode(),
                "kernel" if kernel else "firmware",
                _PROBE_TIMEOUT,
            )
            return False
        finally:
            proc.kill()
            proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()


def build_argv(
    *,
    qemu: str,
    accel: str,
    cpus: int,
    cpu_model: str | None,
    memory_mb: int,
    machine: str,
    files: VMFiles,
    disk_interface: str,
    net_device: str,
    forwards: dict[int, int],
    restrict_network: bool,
    vga: str,
    kernel: str | None,
    initrd: str | None,
    append: str,
    extra_args: tuple[str, ...],
) -> list[str]:
    """The full QEMU command line of a desktop VM (see ``QemuProviderConfig``).

    ``forwards`` maps guest TCP ports to host ports on 127.0.0.1.
    """
    restrict = ",restrict=on" if restrict_network else ""
    # one user-mode netdev carries every forward: guest port -> 127.0.0.1:host port
    rules = "".join(f",hostfwd=tcp:127.0.0.1:{host}-:{guest}" for guest, host in forwards.items())
    argv = [
        qemu, "-name", "osworld-gym", "-machine", machine, *accel_args(accel, cpus, cpu_model),
        "-smp", str(cpus), "-m", str(memory_mb), "-nodefaults", "-display", "none",
        "-vga", vga, "-rtc", "base=utc",
        "-drive", f"file={files.overlay},if={disk_interface},format=qcow2,cache=writeback",
        "-netdev", f"user,id=net0{restrict}{rules}",
        "-device", f"{net_device},netdev=net0",
        "-chardev", f"file,id=serial0,path={files.serial_log}", "-serial", "chardev:serial0",
        "-qmp", f"unix:{files.qmp_socket},server=on,wait=off",
        "-pidfile", str(files.pidfile),
    ]  # fmt: skip
    if files.guest_env is not None:
        argv += ["-fw_cfg", f"name=opt/osworld-gym/guest.env,file={files.guest_env}"]
    if kernel:
        argv += ["-kernel", kernel, "-append", append]
        if initrd:
            argv += ["-initrd", initrd]
    return argv + list(extra_args)
