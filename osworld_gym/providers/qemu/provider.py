"""The ``qemu`` provider: one QEMU VM per desktop, reset by reloading a RAM snapshot.

Each desktop gets a qcow2 overlay over a read-only base image (``qemu-img create -b``), boots it
(KVM when a vCPU runs under it here, software emulation otherwise), waits until the guest
server answers through a user-mode-network port forward on ``127.0.0.1``, and takes a VM
snapshot (``savevm``: RAM, devices and disk, stored in the overlay). A reset reloads it
(``loadvm``) and waits for the guest again, far cheaper than a reboot. QEMU is driven over QMP
on a Unix socket.

Images:

- ours, built by ``vm_images/qemu/build_qcow2.sh`` (Debian kernel booted with ``-kernel``; the
  guest reads its token and screen size from ``fw_cfg``):
  ``QemuProviderConfig.from_built_image()``;
- OSWorld's ``Ubuntu.qcow2`` (own bootloader, OSWorld's server on port 5000, no token):
  ``QemuProviderConfig.for_osworld_ubuntu()``.

Nothing outlives its desktop: QEMU carries the desktop's marker in its environment, a watchdog
process stops it if the launching process dies (even by SIGKILL), and each VM folder records its
owner, so a later provider removes what an interrupted run left behind.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from osworld_gym.errors import (
    DesktopDiedError,
    GuestTimeoutError,
    GuestUnreachableError,
    ProviderError,
)
from osworld_gym.guest.client import ClientConfig, GuestClient
from osworld_gym.providers import processes
from osworld_gym.providers.base import Desktop, Provider
from osworld_gym.providers.ports import PortReservation, reserve_port
from osworld_gym.providers.qemu.command import VMFiles, build_argv, kvm_works
from osworld_gym.providers.qemu.config import (
    DEFAULT_IMAGE_DIR,
    IMAGE_DIR_VARIABLE,
    QemuProviderConfig,
)
from osworld_gym.providers.qemu.qmp import QMPClient, QMPError
from osworld_gym.providers.qemu.state import remove_leftovers, state_root, write_owner
from osworld_gym.providers.session_choice import MINIMAL

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_IMAGE_DIR",
    "IMAGE_DIR_VARIABLE",
    "QemuDesktop",
    "QemuProvider",
    "QemuProviderConfig",
    "remove_leftovers",
]

_LOG_TAIL_LINES = 25
_PORT_ATTEMPTS = 3
# A Unix socket path holds at most 107 bytes.
_MAX_SOCKET_PATH = 100
_FIRST_POLL_TIMEOUT = 0.5
_MAX_POLL_TIMEOUT = 8.0
_POLL_INTERVAL = 0.05


class QemuProvider(Provider):
    """Launches ``QemuDesktop`` instances."""

    name = "qemu"

    def __init__(self, config: QemuProviderConfig | None = None) -> None:
        super().__init__(config or QemuProviderConfig.from_built_image())
        self.config: QemuProviderConfig
        self._accel: str | None = None
        remove_leftovers(state_root(self.config.work_dir))

    @property
    def accel(self) -> str:
        """The accelerator desktops use: ``"kvm"`` or ``"tcg"`` (probed once for ``auto``)."""
        if self._accel is None:
            if self.config.accel == "auto":
                works = kvm_works(self.config.cpu_model, self.config.qemu, self.config.kernel)
                self._accel = "kvm" if works else "tcg"
            else:
                self._accel = self.config.accel
            logger.info("qemu provider uses %s", self._accel)
        return self._accel

    def _launch_impl(self) -> QemuDesktop:
        config = self.config
        if not config.image:
            raise ProviderError("QemuProviderConfig.image is not set (the base qcow2)")
        for path in (config.image, config.kernel, config.initrd):
            if path and not os.path.isfile(path):
                raise ProviderError(f"{path} does not exist")
        if shutil.which(config.qemu) is None or shutil.which(config.qemu_img) is None:
            raise ProviderError(
                f"{config.qemu} or {config.qemu_img} is not installed "
                "(apt-get install qemu-system-x86 qemu-utils; scripts/install_system_deps.sh)"
            )
        return QemuDesktop(config, self.accel)


@dataclass
class _VM:
    """Everything ``_teardown()`` stops; kept apart from the desktop for the GC finalizer."""

    marker: str
    folder: Path
    proc: subprocess.Popen[bytes] | None = None
    qmp: QMPClient | None = None
    reaper: subprocess.Popen[bytes] | None = None
    ports: list[PortReservation] = field(default_factory=list)


def _teardown(vm: _VM) -> None:
    """Quit QEMU (QMP, then signals by marker), stop the watchdog, delete the folder."""
    if vm.qmp is not None:
        try:
            vm.qmp.execute("quit", timeout=5.0)
        except QMPError as e:
            logger.debug("QMP quit failed: %s", e)
        vm.qmp.close()
        vm.qmp = None
    if vm.proc is not None:
        try:
            vm.proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            logger.warning("QEMU %d did not quit; terminating it", vm.proc.pid)
    processes.kill_marked(vm.marker, timeout=3.0)
    if vm.proc is not None:
        vm.proc.wait()
        vm.proc = None
    if vm.reaper is not None:
        if vm.reaper.stdin is not None:
            vm.reaper.stdin.close()
        try:
            vm.reaper.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            vm.reaper.kill()
            vm.reaper.wait()
        vm.reaper = None
    for reservation in vm.ports:
        reservation.release()
    vm.ports.clear()
    shutil.rmtree(vm.folder, ignore_errors=True)


class QemuDesktop(Desktop):
    """One VM. Boots and snapshots in the constructor; use ``QemuProvider``.

    Attributes:
        accel: ``"kvm"`` or ``"tcg"``.
        folder: The VM's private folder (overlay, monitor socket, logs).
        forwarded_ports: Guest port -> host port on 127.0.0.1, for every forward.
        boot_seconds: Seconds from starting QEMU to the guest answering.
        snapshot_seconds: Seconds the ``savevm`` took.
        last_reset_seconds: Seconds of the last reset (``loadvm`` and the guest answering).
    """

    def __init__(self, config: QemuProviderConfig, accel: str) -> None:
        super().__init__()
        self.config = config
        self.accel = accel
        self.marker = uuid.uuid4().hex
        self.folder = Path(tempfile.mkdtemp(prefix="vm-", dir=state_root(config.work_dir)))
        self._vm = _VM(self.marker, self.folder)
        self._finalizer = weakref.finalize(self, _teardown, self._vm)
        self.forwarded_ports: dict[int, int] = {}
        self.boot_seconds = 0.0
        self.snapshot_seconds = 0.0
        self.last_reset_seconds = 0.0
        self._token = config.token or (secrets.token_urlsafe(24) if config.guest_env else None)
        self.files = VMFiles(
            overlay=self.folder / "disk.qcow2",
            qmp_socket=self.folder / "qmp.sock",
            serial_log=self.folder / "serial.log",
            pidfile=self.folder / "qemu.pid",
            guest_env=self.folder / "guest.env" if config.guest_env else None,
        )
        if len(os.fsencode(self.files.qmp_socket)) > _MAX_SOCKET_PATH:
            self.close()
            raise ProviderError(f"work_dir is too deep for a Unix socket: {self.folder}")
        try:
            write_owner(self.folder, self.marker)
            self._vm.reaper = self._start_reaper()
            self._create_overlay()
            self._write_guest_env()
            self._boot()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"QemuDesktop({self.accel}, endpoint={self.endpoint!r}, folder={str(self.folder)!r})"

    # --- Desktop interface ---------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The guest server, through the port forward."""
        return f"http://127.0.0.1:{self.forwarded_ports.get(self.config.guest_port, 0)}"

    @property
    def token(self) -> str | None:
        """The guest's token."""
        return self._token

    @property
    def client_config(self) -> ClientConfig:
        """Client settings from the provider config."""
        return self.config.client

    @property
    def pid(self) -> int | None:
        """QEMU's process id while it runs."""
        return self._vm.proc.pid if self._vm.proc is not None else None

    @property
    def qmp(self) -> QMPClient:
        """The QMP session (for callers that need more than reset)."""
        if self._vm.qmp is None:
            raise ProviderError(f"{self!r} has no monitor connection")
        return self._vm.qmp

    def _reset_impl(self) -> None:
        start = time.perf_counter()
        self._check_impl()
        self._drop_connections()
        output = self.qmp.human_command(f"loadvm {self.config.snapshot_name}", timeout=300.0)
        if "rror" in output:
            raise ProviderError(f"loadvm failed: {output.strip()}\n{self.logs()}")
        status = self.qmp.execute("query-status")
        if status.get("status") != "running":
            self.qmp.execute("cont")
        self._wait_for_guest(time.monotonic() + self.config.boot_timeout)
        self.last_reset_seconds = time.perf_counter() - start

    def _check_impl(self) -> None:
        proc = self._vm.proc
        if proc is None or proc.poll() is not None:
            raise DesktopDiedError(
                "qemu", proc.returncode if proc else None, self._tail("qemu.log")
            )
        if self._vm.qmp is not None:
            try:
                status = self._vm.qmp.execute("query-status", timeout=10.0).get("status")
            except QMPError as e:
                raise DesktopDiedError("qemu", None, f"monitor does not answer: {e}") from e
            if status in ("internal-error", "io-error", "guest-panicked", "shutdown"):
                raise DesktopDiedError(
                    "vm", None, f"VM status {status}\n{self._tail('serial.log')}"
                )

    def _close_impl(self) -> None:
        self._finalizer()

    def logs(self) -> str:
        """The last lines of QEMU's own output and of the guest's serial console."""
        return (
            f"--- qemu ---\n{self._tail('qemu.log')}\n"
            f"--- serial console ---\n{self._tail('serial.log')}"
        )

    # --- start-up ------------------------------------------------------------------------

    def _start_reaper(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if k != processes.MARKER_VARIABLE}
        return subprocess.Popen(
            [sys.executable, "-m", "osworld_gym.providers.reaper", self.marker],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    def _create_overlay(self) -> None:
        assert self.config.image is not None
        base = os.path.abspath(self.config.image)
        done = subprocess.run(
            [self.config.qemu_img, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", base,
             str(self.files.overlay)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise ProviderError(f"qemu-img could not create an overlay on {base}: {done.stderr}")

    def _write_guest_env(self) -> None:
        if self.files.guest_env is None:
            return
        width, height = self.config.screen_size
        lines = [
            f"OSWORLD_SCREEN={width}x{height}",
            f"OSWORLD_GUEST_PORT={self.config.guest_port}",
            f"OSWORLD_SESSION={self.config.session or MINIMAL}",
            # The guest's own session deadline: the host waits this long for it anyway, and
            # under software emulation a GNOME start can take longer than the unit's default.
            f"OSWORLD_BOOT_TIMEOUT={max(1, int(self.config.boot_timeout))}",
        ]
        if self._token:
            lines.append(f"OSWORLD_GUEST_TOKEN={self._token}")
        fd = os.open(self.files.guest_env, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _boot(self) -> None:
        start = time.perf_counter()
        deadline = time.monotonic() + self.config.boot_timeout
        for attempt in range(_PORT_ATTEMPTS):
            self._reserve_ports()
            self._spawn_qemu()
            try:
                self._vm.qmp = self._connect_monitor(deadline)
                break
            except DesktopDiedError:
                # A port reserved here can still be taken by a process outside osworld-gym
                # before QEMU binds it: QEMU then exits at once. Try other ports.
                if "host forwarding" not in self._tail("qemu.log") or attempt + 1 == _PORT_ATTEMPTS:
                    raise
                logger.info("a forwarded port was taken; retrying with other ports")
                self._vm.proc = None
                (self.folder / "qemu.log").unlink(missing_ok=True)
        self._wait_for_guest(deadline)
        self.boot_seconds = time.perf_counter() - start
        snap_start = time.perf_counter()
        self._drop_connections()
        output = self.qmp.human_command(f"savevm {self.config.snapshot_name}", timeout=300.0)
        if "rror" in output:
            raise ProviderError(f"savevm failed: {output.strip()}\n{self.logs()}")
        self.snapshot_seconds = time.perf_counter() - snap_start
        logger.info(
            "%r booted in %.1f s, snapshot in %.2f s",
            self,
            self.boot_seconds,
            self.snapshot_seconds,
        )

    def _reserve_ports(self) -> None:
        for reservation in self._vm.ports:
            reservation.release()
        self._vm.ports.clear()
        self.forwarded_ports.clear()
        for guest_port in (self.config.guest_port, *self.config.extra_guest_ports):
            reservation = reserve_port("127.0.0.1")
            self._vm.ports.append(reservation)
            self.forwarded_ports[guest_port] = reservation.port

    def _spawn_qemu(self) -> None:
        config = self.config
        argv = build_argv(
            qemu=config.qemu,
            accel=self.accel,
            cpus=config.cpus,
            cpu_model=config.cpu_model,
            memory_mb=config.memory_mb,
            machine=config.machine,
            files=self.files,
            disk_interface=config.disk_interface,
            net_device=config.net_device,
            forwards=dict(self.forwarded_ports),
            restrict_network=config.restrict_network,
            vga=config.vga,
            kernel=config.kernel,
            initrd=config.initrd,
            append=config.append,
            extra_args=config.extra_args,
        )
        env = dict(os.environ)
        env[processes.MARKER_VARIABLE] = self.marker
        logger.debug("starting %s", " ".join(argv))
        with open(self.folder / "qemu.log", "ab") as log:
            self._vm.proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=self.folder,
            )

    def _connect_monitor(self, deadline: float) -> QMPClient:
        while True:
            self._check_process()
            if self.files.qmp_socket.exists():
                try:
                    return QMPClient(str(self.files.qmp_socket), timeout=30.0)
                except (OSError, QMPError) as e:
                    logger.debug("QMP not ready yet: %s", e)
            if time.monotonic() >= deadline:
                raise ProviderError(f"QEMU's monitor did not come up in time\n{self.logs()}")
            time.sleep(0.02)

    def _check_process(self) -> None:
        proc = self._vm.proc
        if proc is None or proc.poll() is not None:
            raise DesktopDiedError(
                "qemu", proc.returncode if proc else None, self._tail("qemu.log")
            )

    def _wait_for_guest(self, deadline: float) -> None:
        """Poll the guest through the forward until it answers, watching QEMU meanwhile.

        Before the guest listens, and for a moment after a ``loadvm``, QEMU's user-mode
        network may accept a connection on the host side and leave it silent: each poll
        therefore has a short timeout, lengthened after every silent answer (a loaded guest
        may just be slow).
        """
        attempt_timeout = _FIRST_POLL_TIMEOUT
        while True:
            self._check_process()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProviderError(
                    f"the guest of {self!r} did not answer within "
                    f"{self.config.boot_timeout:g} s\n{self.logs()}"
                )
            wait = min(attempt_timeout, remaining)
            probe = GuestClient(
                self.endpoint,
                token=self.token,
                config=ClientConfig(connect_timeout=wait, timeout=wait, retries=0),
            )
            try:
                info = probe.info(refresh=True)
                break
            except GuestUnreachableError:
                time.sleep(_POLL_INTERVAL)  # refused or reset at once: not listening yet
            except GuestTimeoutError:
                attempt_timeout = min(attempt_timeout * 2, _MAX_POLL_TIMEOUT)
            finally:
                probe.close()
        size = info.screen_size
        if self.config.check_screen_size and size and tuple(size) != self.config.screen_size:
            raise ProviderError(
                f"the guest has a {size[0]}x{size[1]} screen; the provider is configured for "
                f"{self.config.screen_size[0]}x{self.config.screen_size[1]}"
            )

    def _drop_connections(self) -> None:
        """Close pooled HTTP connections: a snapshot or its reload must not carry them."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _tail(self, name: str) -> str:
        try:
            lines = (self.folder / name).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-_LOG_TAIL_LINES:])
