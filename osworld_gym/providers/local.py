"""The ``local`` provider: a desktop made of processes on this host, no VM.

Each desktop is an Xvfb display (a free number chosen by Xvfb itself through ``-displayfd``), a
private D-Bus session bus with the AT-SPI launcher (so apps export accessibility trees), a
window manager and a guest server on a free port. Everything above the X server runs in the
desktop's sandbox (:mod:`osworld_gym.providers.sandbox`): as OSWorld's user ``user`` with its
private folder mounted at ``/home/user``, private ``/tmp``, the host read-only, and command
wrappers for OSWorld's ``google-chrome``, ``socat``, ``vlc`` and ``sudo`` first on PATH
(:mod:`osworld_gym.providers.desktop_bin`). Every process carries the desktop's marker in its
environment, so ``close()``, garbage collection, interpreter exit, and a watchdog that notices
the launching process die (even by SIGKILL) can find and stop all of them, including apps that
daemonised.

Each desktop's files live in its own folder, apps' temp files included: the sandbox's ``/tmp``
is a folder in it, and without a sandbox ``TMPDIR`` points there. The folder records its owner
(:func:`osworld_gym.providers.processes.make_owned_folder`), so when a watchdog was killed
together with its launcher, the next provider start stops the processes and deletes the folders
of dead runs (:func:`remove_leftovers`).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from Xlib.error import ConnectionClosedError, XError

from osworld_gym.errors import DesktopDiedError, DesktopLimitError, GuestError, ProviderError
from osworld_gym.guest.client import ClientConfig
from osworld_gym.providers import processes, sandbox, window_manager, x_state
from osworld_gym.providers.base import Desktop, Provider, ProviderConfig
from osworld_gym.providers.desktop_bin import install_wrappers
from osworld_gym.providers.desktop_environment import passed_through, search_path
from osworld_gym.providers.desktop_identity import HostIdentity
from osworld_gym.providers.desktop_limits import (
    DesktopCgroups,
    DesktopLimits,
    can_mount_capped,
    disk_full,
    mount_capped,
    remove_stale_groups,
)
from osworld_gym.providers.home_skeleton import write_default_home
from osworld_gym.providers.netns import PortForwarder
from osworld_gym.providers.outbound import (
    BLOCKED_NETWORKS,
    RESOLV_CONF,
    OutboundError,
    OutboundLink,
)
from osworld_gym.providers.outbound import available as outbound_available
from osworld_gym.providers.ports import PortReservation, reserve_port
from osworld_gym.providers.services import OSWORLD_SERVICE_PORTS, port_environment, service_urls
from osworld_gym.providers.x_auth import XCookie, admit_launcher

logger = logging.getLogger(__name__)

_LOG_TAIL_LINES = 15
NETWORKS = ("private", "host")  # LocalProviderConfig.network
# Where a sandboxed desktop's programs can write (so never on their PATH).
_WRITABLE_INSIDE = (sandbox.DESKTOP_HOME, "/tmp", "/var/tmp", "/run/user", "/dev/shm",
                    f"{sandbox.STATE_MOUNT}/{sandbox.GUEST_STATE}")  # fmt: skip
_HOST_TEMP = ("/tmp/", "/var/tmp/")  # where apps without a sandbox may leave sockets
_AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
# The host's tmpfs for shared memory: the frame files of desktops without a sandbox live in a
# folder of their own there (a sandboxed guest has a private /dev/shm, reached through /proc).
_SHM = Path("/dev/shm")


@dataclass(frozen=True)
class LocalProviderConfig(ProviderConfig):
    """Settings of the ``local`` provider.

    Attributes:
        window_manager: Command line of the window manager.
        accessibility: Start a session bus and the AT-SPI launcher so ``/accessibility`` works.
        home_template: Folder copied over each fresh HOME, after the default skeleton (XDG
            folders, LibreOffice without first-start dialogs, text files in mousepad).
        work_dir: Parent folder of the desktops' private folders (default: the temp folder).
        use_token: Protect each guest with a random token.
        python: Interpreter that runs the guest server (default: this one).
        extra_env: Extra environment variables for every process of the desktop.
        official_guest: Run the guest without its extensions, as an official OSWorld image
            would answer (for testing host code against OSWorld's protocol).
        sandbox: Run the desktop in its own mount, PID and user namespaces with its home at
            ``/home/user`` (needs bubblewrap; ``osworld-gym doctor`` checks it). False runs its
            processes directly on the host with ``HOME`` set to the private folder: the
            host's ``/home/user`` and ``/tmp`` are then the desktop's, and tasks can write there.
        sudo_password: The password the desktop's ``sudo`` accepts (OSWorld's VM user's).
        reap_leftovers: Remove, when the provider starts, the desktops (processes and folders)
            and env folders that dead processes left in the temp folder and ``work_dir``.
        shared_frames: Hand raw screenshots over through shared memory (files on a tmpfs that
            the guest writes and the client reads, :class:`osworld_gym.guest.client.SharedFrames`)
            instead of the guest's HTTP answer. False: over HTTP, as for a remote guest.
        network: ``"private"``: a sandboxed desktop has a network namespace of its own, with a
            loopback of its own and nothing of the host's (its services, other desktops); the
            driver reaches the guest and OSWorld's service ports through a relay
            (:mod:`osworld_gym.providers.netns`). ``"host"``: the desktop shares the host's
            network, internet and loopback services included.
        internet: A private network reaches the internet through slirp4netns, behind a filter
            that keeps the host's addresses, its local networks and the cloud's metadata
            service out (:mod:`osworld_gym.providers.outbound`). False: no internet. Where
            slirp4netns or iptables is missing, or the filter cannot be set, the desktop starts
            without internet and says so in the log (``osworld-gym doctor`` checks it).
        blocked_networks: More IPv4 networks (``"203.0.113.0/24"``) or addresses the internet
            of a private network must not reach, beyond the filter's own list
            (:data:`osworld_gym.providers.outbound.BLOCKED_NETWORKS`) and the host's addresses.
        host_ports: Ports of the host's loopback that a private network's desktop may reach
            at the same port on its own loopback (a page server for its browser in a test).
        limits: Memory, process and disk limits of each desktop
            (:mod:`osworld_gym.providers.desktop_limits`); hitting one ends the episode as an
            infrastructure fault (:class:`~osworld_gym.errors.DesktopLimitError`).
    """

    window_manager: tuple[str, ...] = ("openbox", "--sm-disable")
    accessibility: bool = True
    home_template: str | None = None
    work_dir: str | None = None
    use_token: bool = True
    python: str | None = None
    extra_env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    official_guest: bool = False
    sandbox: bool = True
    sudo_password: str = "password"
    reap_leftovers: bool = True
    shared_frames: bool = True
    network: str = "private"
    internet: bool = True
    blocked_networks: tuple[str, ...] = ()
    host_ports: tuple[int, ...] = ()
    limits: DesktopLimits = DesktopLimits()


class LocalProvider(Provider):
    """Launches :class:`LocalDesktop` instances."""

    name = "local"

    def __init__(self, config: LocalProviderConfig | None = None) -> None:
        super().__init__(config or LocalProviderConfig())
        self.config: LocalProviderConfig
        if self.config.reap_leftovers:
            remove_leftovers(self.config.work_dir)
            remove_stale_groups()

    def _launch_impl(self) -> LocalDesktop:
        return LocalDesktop(self.config)


def _sweep_folders(work_dir: str | None) -> list[Path]:
    """Where desktops' and envs' folders are made: the temp folder, ``work_dir``, /dev/shm."""
    folders = [Path(tempfile.gettempdir())]
    if work_dir is not None:
        folders.append(Path(work_dir))
    if _SHM.is_dir():
        folders.append(_SHM)
    return list(dict.fromkeys(folders))


def remove_leftovers(work_dir: str | None = None) -> list[Path]:
    """Stop the processes of, and delete, the folders that dead processes left behind.

    A desktop's watchdog does this as soon as its launcher dies; this catches what it could
    not (a watchdog killed with its launcher, a machine that lost power). Folders of live
    processes, and folders that are not ours, are never touched.

    Returns:
        The folders removed.
    """
    removed = []
    for folder in _sweep_folders(work_dir):
        removed.extend(processes.remove_dead_folders(folder))
    if removed:
        logger.info("removed %d folders left by dead processes: %s", len(removed), removed)
    return removed


def _teardown(
    marker: str,
    procs: dict[str, subprocess.Popen[bytes]],
    folders: tuple[Path, ...],
    reaper: subprocess.Popen[bytes] | None,
    ports: list[PortReservation],
    namespaces: list[sandbox.Namespaces],
    links: list[PortForwarder | OutboundLink],
    cgroups: DesktopCgroups,
) -> None:
    """Stop every process of a desktop and delete its folders (also run by the GC finalizer)."""
    while links:
        links.pop().close()
    _stop_sandbox(procs)
    processes.kill_marked(marker, timeout=3.0)
    while namespaces:
        namespaces.pop().close()
    for reservation in ports:
        reservation.release()
    for proc in procs.values():
        _reap(proc)
    cgroups.remove()
    if reaper is not None:
        if reaper.stdin is not None:
            reaper.stdin.close()
        _reap(reaper, timeout=5.0)
    for folder in folders:
        processes.remove_tree(folder)


# A Unix socket path holds at most 107 bytes; the D-Bus and AT-SPI sockets live in the runtime
# folder, with names of up to ~20 bytes.
_MAX_RUNTIME_PATH = 80


def _runtime_dir(root: Path, marker: str) -> Path:
    """The desktop's XDG_RUNTIME_DIR: inside its folder, or a short temp path.

    A deep ``work_dir`` would make the sockets' paths too long.
    """
    inside = root / "runtime"
    if len(os.fsencode(inside)) <= _MAX_RUNTIME_PATH:
        inside.mkdir(mode=0o700)
        return inside
    return processes.make_owned_folder("osworld-gym-run-", marker=marker)


def _stop_sandbox(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    """Stop the sandbox's init, which takes every process inside with it at once."""
    holder = procs.get("sandbox")
    if holder is not None and holder.poll() is None:
        processes.terminate(processes.sandbox_chain(holder.pid)[1:], timeout=1.0)


def _empty_folder(folder: Path, keep: tuple[str, ...] = ()) -> None:
    """Delete what ``folder`` holds (except the names in ``keep``), keeping the folder itself."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


_MOUNT_RACE_ATTEMPTS = 3


def _lost_mount_race(error: str) -> bool:
    """Whether a component died because bubblewrap could not copy a host mount that changed."""
    return "bwrap: Can't" in error and "mount" in error


def _reap(proc: subprocess.Popen[bytes], timeout: float = 1.0) -> None:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


_SERVING_STATES = ("R", "S", "D")  # running or sleeping; not stopped ("T"), not a zombie
_STOPPED_STATES = ("T", "t")  # stopped by a signal, or by a tracer
# Seconds a dead component's predecessors get to show they died first (see _check_impl).
_CAUSE_GRACE = 0.3
# Session components the desktop's own programs may stop (same uid): restarted in place during
# an episode, as a session manager restarts them, instead of ending it as an infrastructure
# fault (a way out of a bad episode that a trainer would re-run). Start order.
_REVIVED = ("dbus", "atspi", "wm")
# Restarts in one episode before a component that keeps dying counts as a fault after all.
_MAX_REVIVALS = 50


class LocalDesktop(Desktop):
    """One desktop on this host. Starts in the constructor; use :class:`LocalProvider`."""

    CORE = ("xvfb", "sandbox", "dbus", "wm", "guest")

    def __init__(self, config: LocalProviderConfig) -> None:
        super().__init__()
        if config.network not in NETWORKS:  # before anything is made that would need undoing
            raise ProviderError(f"network must be one of {NETWORKS}, not {config.network!r}")
        for network in config.blocked_networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError as e:
                raise ProviderError(f"blocked_networks: {e}") from None
        self.config = config
        self.marker = uuid.uuid4().hex
        self._bwrap = sandbox.require_bwrap() if config.sandbox else None
        self.root = processes.make_owned_folder(parent=config.work_dir, marker=self.marker)
        self._disk_capped = config.limits.disk_bytes is not None and can_mount_capped()
        if self._disk_capped:
            # Everything the desktop writes lives here: a full disk is the desktop's alone.
            record = processes.read_owner(self.root)
            try:
                mount_capped(self.root, config.limits.disk_bytes)
            except OSError:
                processes.remove_tree(self.root)
                raise
            if record is not None:  # the mount hides the first one
                processes.write_owner(self.root, record)
        # Shared frame files of a desktop without a sandbox (the host's /dev/shm is theirs).
        self.frames_dir: Path | None = None
        if config.shared_frames and not config.sandbox and os.access(_SHM, os.W_OK | os.X_OK):
            self.frames_dir = processes.make_owned_folder(parent=_SHM, marker=self.marker)
        self.home = self.root / "home"
        # Apps' temp files: the sandbox's /tmp, or TMPDIR without a sandbox (see _env).
        self.tmp_dir = self.root / "tmp"
        self.state_dir = self.root / "state"
        self.log_dir = self.root / "logs"
        self.log_dir.mkdir(mode=0o700)
        if config.sandbox:
            # Sockets are made at their paths inside the sandbox: no length limit on the host's.
            self.runtime_dir = self.root / "runtime"
            self.folders: sandbox.SandboxFolders | None = sandbox.SandboxFolders(
                home=self.home,
                tmp=self.tmp_dir,
                var_tmp=self.root / "var-tmp",
                state=self.state_dir,
                runtime=self.runtime_dir,
            )
            self.folders.create()
            install_wrappers(self.state_dir / "bin")
            self._hidden = sandbox.hidden_folders(sandbox.driver_folders())
            # This Python's own files (a venv or checkout under /home or /root), for the guest.
            python = config.python or sys.executable
            python_paths = sandbox.python_paths(python)
            self._keep_visible = sandbox.hidden_paths(python_paths, self._hidden)
            self._masked = sandbox.answer_folders(python_paths)
        else:
            self.runtime_dir = _runtime_dir(self.root, self.marker)
            self.folders = None
            self._hidden = ()
            self._keep_visible = ()
            self._masked = ()
            self.state_dir.mkdir(mode=0o700)
            self.tmp_dir.mkdir(mode=0o700)
        # Who the desktop's programs are on the host: set once its ports are reserved.
        self.identity = HostIdentity(os.getuid(), os.getgid(), dedicated=False)
        # The X server takes this desktop's programs (XAUTHORITY) and the launcher only.
        self._x_cookie = XCookie()
        self._x_server_auth = self.root / "x-server.auth"  # never shown to the desktop
        self.xauthority = self.state_dir / "Xauthority"
        self.display = ""
        self._dbus_address = ""
        self._port = 0
        self._token = secrets.token_urlsafe(24) if config.use_token else None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        # Each sandboxed component's bwrap chain, (PID, start time) outermost first, once it
        # reached the program: finding it scans every process on the host for each link.
        self._chains: dict[str, list[tuple[int, str | None]]] = {}
        # The X server's state when the desktop was new (None until then): resets restore it.
        self._x_fresh: x_state.XServerState | None = None
        # What the window manager showed when new (None until one runs).
        self._wm_state: window_manager.WindowManagerState | None = None
        self._service_ports: list[PortReservation] = []
        self._guest_reservation: PortReservation | None = None  # a private network's guest port
        # The sandbox's namespaces while its init runs (a list: the finalizer closes them).
        self._namespaces: list[sandbox.Namespaces] = []
        # A network of its own needs a sandbox; the relay to it lives while its init does.
        self.private_network = config.network == "private" and self.folders is not None
        # The relays into it and its outbound link (slirp4netns), while its init runs.
        self._forwarders: list[PortForwarder | OutboundLink] = []
        self._outbound = self.private_network and config.internet
        if self._outbound:
            why_not = outbound_available()
            if why_not is not None:
                logger.warning("desktops start without internet: %s", why_not)
                self._outbound = False
        if self._outbound:
            assert self.folders is not None
            (self.folders.state / "resolv.conf").write_text(RESOLV_CONF)
        self._cgroups = DesktopCgroups.create(self.marker, config.limits)
        # Whether the session is complete (revivals happen only then), and restarts so far.
        self._session_ready = False
        self._revivals = 0
        self._reaper = self._start_reaper()
        self._finalizer = weakref.finalize(
            self,
            _teardown,
            self.marker,
            self._procs,
            self._folders_to_remove(),
            self._reaper,
            self._service_ports,
            self._namespaces,
            self._forwarders,
            self._cgroups,
        )
        try:
            # OSWorld's fixed service ports (Chrome's debugging port, CDP, VLC) get ports of
            # this desktop's own, the same inside and on the host (a private network's relay
            # forwards each to its number), so desktops can share the host's network.
            self._service_ports.extend(reserve_port() for _ in OSWORLD_SERVICE_PORTS)
            if self.private_network:
                # The guest's, relayed the same way (released with the others at teardown).
                self._guest_reservation = reserve_port()
                self._service_ports.append(self._guest_reservation)
            if self.folders is not None:
                # A reserved port is unique among the host's live desktops: so is the uid.
                self.identity = HostIdentity.for_desktop(self._service_ports[0].port)
                self.folders.hand_over(self.identity)
                closed = self.identity.unreachable(self._keep_visible)
                if closed:
                    raise ProviderError(
                        f"the desktop runs as an unprivileged uid and cannot open {closed} "
                        "(this Python's files): make them readable by all (chmod o+rX)"
                    )
            self._restart_everything()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"LocalDesktop(display={self.display!r}, endpoint={self.endpoint!r})"

    def _folders_to_remove(self) -> tuple[Path, ...]:
        """The desktop's folders, which teardown (or the watchdog) deletes."""
        extra = () if self.frames_dir is None else (self.frames_dir,)
        return (self.root, self.runtime_dir, *extra)

    # --- Desktop interface ---------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """Base URL of this desktop's guest server."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def token(self) -> str | None:
        """The guest's token."""
        return self._token

    @property
    def client_config(self) -> ClientConfig:
        """Client settings from the provider config."""
        return self.config.client

    @property
    def service_ports(self) -> dict[str, int]:
        """This desktop's own port for each of OSWorld's services (by service name)."""
        return {
            name: reservation.port
            for name, reservation in zip(
                OSWORLD_SERVICE_PORTS,
                self._service_ports[: len(OSWORLD_SERVICE_PORTS)],
                strict=True,
            )
        }

    @property
    def service_urls(self) -> dict[str, str]:
        """The desktop's OSWorld services on loopback, at its own ports."""
        return service_urls("127.0.0.1", self.service_ports)

    def desktop_path(self, path: str | Path) -> str:
        """A host path under this desktop's folders as the desktop's processes see it.

        ``<root>/home/x`` is ``/home/user/x`` inside a sandbox; without one, paths are the same.
        """
        path = Path(path)
        if self.folders is None:
            return str(path)
        for host, inside in (
            (self.folders.home, sandbox.DESKTOP_HOME),
            (self.folders.tmp, "/tmp"),
            (self.folders.var_tmp, "/var/tmp"),
            (self.folders.state, sandbox.STATE_MOUNT),
            (self.folders.runtime, sandbox.RUNTIME_MOUNT),
        ):
            if path == host or host in path.parents:
                return str(Path(inside) / path.relative_to(host))
        raise ValueError(f"{path} is not visible inside {self!r}")

    def pids(self) -> list[int]:
        """PIDs of every live process of this desktop (apps included)."""
        return processes.find_marked(self.marker)

    def component_pid(self, component: str) -> int:
        """PID of a core component: ``"xvfb"``, ``"dbus"``, ``"wm"`` or ``"guest"``.

        For a sandboxed component, the PID of the program itself (not of its ``bwrap``).
        """
        return self._component_pids(component)[-1]

    def _component_pids(self, component: str) -> list[int]:
        """The component's process and, when sandboxed, the ``bwrap`` processes that carry it.

        A complete chain is remembered while every process in it runs (checked by PID and
        start time, so a reused PID never passes): each reset asks for three chains, and a
        walk scans every process on the host, a cost that grows with the desktops.
        """
        pid = self._procs[component].pid
        if not self._sandboxed(component):
            return [pid]
        cached = self._chains.get(component)
        if (
            cached
            and cached[0][0] == pid
            and all(processes.still_running(p, started) for p, started in cached)
        ):
            return [p for p, _ in cached]
        chain = processes.sandbox_chain(pid)
        if len(chain) > 1 and processes.command_name(chain[-1]) != b"bwrap":
            self._chains[component] = [(p, processes.start_time(p)) for p in chain]
        return chain

    def _sandboxed(self, component: str) -> bool:
        return self._bwrap is not None and component != "xvfb"

    def _check_impl(self) -> None:
        """Poll the core processes (no round trip): a dead one raises DesktopDiedError.

        First, session components the desktop's own programs stopped are restarted
        (:meth:`_revive_session`): that is the desktop's doing, not a fault of its host.

        A sandboxed component's handle is the ``bwrap`` that carries it, which exits as soon as
        the program inside does (with its status). When one is found dead, the first dead one in
        ``CORE`` order is named: the X server can finish dying between its poll and a later
        one's, and its clients (the window manager) exit the moment it does, even before the
        server's own exit is complete; so the earlier ones get a moment
        (:data:`_CAUSE_GRACE`) to show they died too. The error names the cause, not a
        consequence.
        """
        self._revive_session()
        for name in self.CORE:
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None:
                cause = self._earlier_dead(name)
                died = self._procs[cause]
                raise DesktopDiedError(cause, died.returncode, self._log_tail(cause))
        stopped = self._stopped_component()
        if stopped is not None:
            raise DesktopDiedError(stopped, None, "stopped (SIGSTOP or a tracer): not answering")
        hits = self._limit_hits()
        if hits:
            raise DesktopLimitError("; ".join(hits))

    def _limit_hits(self) -> list[str]:
        """The desktop's limits it hit (memory, processes, disk), in words."""
        hits = self._cgroups.hits()
        if self._disk_capped and disk_full(self.root):
            hits.append(f"disk full: the desktop wrote {self.config.limits.disk_bytes} bytes")
        return hits

    def _earlier_dead(self, name: str) -> str:
        """The first component before ``name`` in ``CORE`` that is dead too, else ``name``."""
        earlier = [n for n in self.CORE[: self.CORE.index(name)] if n in self._procs]
        deadline = time.monotonic() + _CAUSE_GRACE
        while True:
            for candidate in earlier:
                if self._procs[candidate].poll() is not None:
                    return candidate
            if not earlier or time.monotonic() >= deadline:
                return name
            time.sleep(0.01)

    def _stopped_component(self) -> str | None:
        """The first core component whose program is stopped, or None.

        A stopped process is alive to ``poll()`` but answers nothing: a guest stopped by a
        desktop program (``kill -STOP``) would otherwise be found only after the client's
        timeouts and retries, minutes later.
        """
        for name in self.CORE:
            if name in self._procs and name != "sandbox":
                try:
                    pid = self.component_pid(name)
                except (KeyError, IndexError):
                    continue
                if processes.state(pid) in _STOPPED_STATES:
                    return name
        return None

    def _revive_session(self) -> None:
        """Restart the session components (:data:`_REVIVED`) that died or were stopped.

        The desktop's programs run as the same user as its session bus, accessibility bus and
        window manager, so a task's terminal can ``kill -9`` or ``kill -STOP`` them: that ends
        nothing, as on a desktop whose session manager restarts them. Only while the session
        is complete (not during a start or reset, whose own checks report a component that
        will not start), while the X server, the sandbox and the guest run, the desktop is
        within its limits (a fork bomb's victims are its fault), and at most
        :data:`_MAX_REVIVALS` times an episode; otherwise the checks that follow report it.
        """
        if not self._session_ready or self._revivals >= _MAX_REVIVALS:
            return
        down = [name for name in _REVIVED if name in self._procs and self._down(name)]
        if (
            not down
            or any(
                name in self._procs and self._procs[name].poll() is not None
                for name in ("xvfb", "sandbox", "guest")
            )
            or self._limit_hits()  # what killed it: a fault the check reports
        ):
            return
        self._revivals += 1
        logger.info("%r: restarting %s, which the desktop's programs stopped", self, down)
        # Not complete while it restarts: the checks of the starts below report, not revive.
        self._session_ready = False
        deadline = time.monotonic() + self.config.boot_timeout
        try:
            if "dbus" in down or "atspi" in down:
                # The accessibility bus lives on the session bus: both start again, in order.
                for name in ("atspi", "dbus"):
                    if name in self._procs:
                        self._stop_component(name)
                self._start_dbus(deadline)
            if "wm" in down:
                self._stop_component("wm")
                self._start_window_manager_now(deadline)
        except (OSError, ProviderError, XError, ConnectionClosedError) as e:
            # The session stays incomplete (no more revivals) until the reset that follows.
            raise DesktopDiedError(down[0], None, f"stopped, and not restarted: {e}") from e
        self._session_ready = True

    def _down(self, name: str) -> bool:
        """Whether component ``name`` exited or is stopped (SIGSTOP or a tracer)."""
        if self._procs[name].poll() is not None:
            return True
        try:
            return processes.state(self.component_pid(name)) in _STOPPED_STATES
        except (KeyError, IndexError):
            return False

    def _stop_component(self, name: str) -> None:
        """Stop component ``name`` (whatever its state) and forget it."""
        processes.terminate(self._component_pids(name), timeout=0.0)  # a stopped one: SIGKILL
        _reap(self._procs.pop(name))
        if name == "wm":
            self._wm_state = None

    def _quick_check_impl(self) -> None:
        self._check_impl()  # polls of process handles: cheap enough for every observation

    def _reset_impl(self) -> None:
        self._session_ready = False
        xvfb = self._procs.get("xvfb")
        holder = self._procs.get("sandbox")
        if (
            xvfb is None
            or xvfb.poll() is not None
            or (self._bwrap is not None and (holder is None or holder.poll() is not None))
        ):
            self._restart_everything()
            return
        try:
            self._light_reset(xvfb)
        except (OSError, ProviderError, XError, ConnectionClosedError) as e:
            # Whatever broke the quick path (an X server dying under us, a component that
            # will not start), a full restart from the X server up is the bounded fallback.
            logger.warning("quick reset of %r failed (%s); restarting everything", self, e)
            self._restart_everything()

    def _light_reset(self, xvfb: subprocess.Popen[bytes]) -> None:
        """Kill apps, restore HOME, restart the session.

        Xvfb and the sandbox stay, as do a healthy guest and a window manager as fresh as a new
        one.
        """
        from Xlib import display

        # One X connection for the whole reset: python-xlib spends ~4 ms of CPU opening one.
        conn = display.Display(self.display)
        try:
            self._light_reset_on(xvfb, conn)
        finally:
            conn.close()

    def _light_reset_on(self, xvfb: subprocess.Popen[bytes], conn: Any) -> None:
        guest = self._procs.get("guest")
        keep = [xvfb.pid]
        if "sandbox" in self._procs:
            keep.extend(self._component_pids("sandbox"))
        if guest is not None and guest.poll() is None and self._guest_healthy():
            keep.extend(self._component_pids("guest"))
        # A live window manager stays (a restart costs ~40-60 ms of its CPU, the X server's
        # work for it and a sandbox start); _start_session checks that it is as fresh as a new
        # one, else replaces it.
        wm = self._component_pids("wm") if "wm" in self._procs else []
        keep_wm = bool(wm) and self._window_manager_alive(conn, wm[-1])
        if keep_wm:
            keep.extend(wm)
        # SIGKILL after a zero grace: apps need no chance to save, HOME is restored next. Repeated
        # while processes remain: an app may fork while it is being stopped, and one that
        # outlived the reset would hold what the next task needs (Chromium's debugging port).
        sockets = self._host_sockets(exclude=keep)
        processes.kill_marked(self.marker, exclude=keep, timeout=0)
        for path in sockets:
            processes.remove_stale_socket(path)
        for name in [n for n, p in self._procs.items() if p.pid not in keep]:
            _reap(self._procs.pop(name))
        self._restore_home()
        self._empty_temp_folders()
        for component in ("guest", "wm"):
            if component in self._procs and self._sandboxed(component):
                self._empty_kept_shm(component)
        # The guest's folder (its wallpaper record, scripts, recordings) and the runtime
        # folder (the session bus restarts below): nothing an episode left there stays.
        _empty_folder(self._guest_state)
        _empty_folder(self.runtime_dir)
        x_state.release_input(conn)
        if self._x_fresh is not None:
            restoration = x_state.restore(conn, self._x_fresh)
            if restoration.left:  # a new X server is the bounded fallback (see _reset_impl)
                left = ", ".join(restoration.left)
                raise ProviderError(f"the X server's {left} could not be restored")
            if "keyboard_mapping" in restoration.changed and "guest" in self._procs:
                # The kept guest remembers the spare keys it mapped (now empty again): a new
                # one starts from the keymap as it is.
                processes.terminate(self._component_pids("guest"), timeout=1.0)
                _reap(self._procs.pop("guest"))
        x_state.centre_pointer(conn)
        self._start_session(restart_guest="guest" not in self._procs, keep_wm=keep_wm, conn=conn)

    def _host_sockets(self, exclude: list[int]) -> set[str]:
        """Sockets the desktop's processes bound in the host's temp folders (no sandbox).

        Without a sandbox the desktop's ``/tmp`` is the host's, and some apps put sockets there
        whatever ``TMPDIR`` says (LibreOffice's single-instance pipe); killed with SIGKILL they
        leave them behind. A sandbox's ``/tmp`` is emptied on reset instead.
        """
        if self.folders is not None:
            return set()
        pids = processes.find_marked(self.marker, exclude=exclude)
        return {path for path in processes.socket_paths(pids) if path.startswith(_HOST_TEMP)}

    def _restart_everything(self) -> None:
        """Start from the X server up, after stopping whatever runs.

        Again from scratch when bubblewrap lost a race with the host's mounts: it copies every
        mount of the host read-only, and one that vanishes meanwhile (a Docker engine creating
        or removing a container's layers) fails its start, about 1 start in 15 under container
        churn here. The next try sees the mounts as they are then.
        """
        for attempt in range(1, _MOUNT_RACE_ATTEMPTS + 1):
            try:
                self._start_from_scratch()
                return
            except DesktopDiedError as e:
                if attempt == _MOUNT_RACE_ATTEMPTS or not _lost_mount_race(str(e)):
                    raise
                logger.info("%r: sandbox lost a race with a host mount; starting again", self)

    def _start_from_scratch(self) -> None:
        self._session_ready = False
        sockets = self._host_sockets(exclude=[])  # as a light reset does (no sandbox)
        _stop_sandbox(self._procs)
        processes.kill_marked(self.marker, timeout=3.0)
        for path in sockets:
            processes.remove_stale_socket(path)
        for name in list(self._procs):
            _reap(self._procs.pop(name))
        self.display = ""  # its X server is gone: no socket of it stays (_empty_temp_folders)
        self._restore_home()
        self._empty_temp_folders()
        self._x_fresh = None
        self._start_xvfb()
        self._start_sandbox()
        self._start_session(restart_guest=True)
        self._x_fresh = self._read_x_state()

    def _read_x_state(self) -> x_state.XServerState:
        """The X server's state now (what a light reset restores; see x_state)."""
        from Xlib import display

        conn = display.Display(self.display)
        try:
            return x_state.read(conn)
        finally:
            conn.close()

    def _guest_healthy(self) -> bool:
        if processes.state(self.component_pid("guest")) in _STOPPED_STATES:
            return False  # it would not answer: no need to wait for the client's timeouts
        try:
            self.client.info(refresh=True)
        except GuestError:
            return False
        return True

    def _close_impl(self) -> None:
        self._finalizer()

    def logs(self) -> str:
        """The last lines of each component's log."""
        return "\n".join(f"--- {name} ---\n{self._log_tail(name)}" for name in self._procs)

    # --- start-up ------------------------------------------------------------------------

    def _env(self, component: str) -> dict[str, str]:
        """The environment of a component: an allowlist of the driver's, and the desktop's own."""
        env = passed_through(os.environ)
        inside = self._sandboxed(component)
        tmp = "/tmp" if inside else str(self.tmp_dir)
        env.update(
            HOME=sandbox.DESKTOP_HOME if inside else str(self.home),
            # Apps' temp files stay in the desktop's folder, which teardown deletes.
            TMPDIR=tmp,
            TMP=tmp,
            TEMP=tmp,
            XDG_RUNTIME_DIR=sandbox.RUNTIME_MOUNT if inside else str(self.runtime_dir),
            LANG=env.get("LANG") or "C.UTF-8",
            SAL_USE_VCLPLUGIN="gtk3",
            GTK_MODULES="gail:atk-bridge",
            QT_ACCESSIBILITY="1",
            # Thunderbird's window class as on OSWorld's Ubuntu ("Mail.thunderbird"; Debian's
            # build says "thunderbird-default"): its tasks close it by that class in postconfig.
            MOZ_APP_REMOTINGNAME="thunderbird",
        )
        env.pop("NO_AT_BRIDGE", None)  # it would hide every app from the accessibility tree
        if self.display:
            env["DISPLAY"] = self.display
            env["XAUTHORITY"] = self._inside(self.xauthority, component)
        if self._dbus_address:
            env["DBUS_SESSION_BUS_ADDRESS"] = self._dbus_address
        if inside:
            env.update(
                USER=sandbox.DESKTOP_USER,
                LOGNAME=sandbox.DESKTOP_USER,
                PATH=search_path(env.get("PATH"), _WRITABLE_INSIDE, first=sandbox.BIN_MOUNT),
                OSWORLD_GYM_SUDO_PASSWORD=self.config.sudo_password,
            )
        env.update(port_environment(self.service_ports))
        env.update(dict(self.config.extra_env))
        env[processes.MARKER_VARIABLE] = self.marker
        return env

    def _spawn(self, name: str, argv: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        if not shutil.which(argv[0]):
            raise ProviderError(f"{argv[0]} is not installed; run scripts/install_system_deps.sh")
        if self._sandboxed(name):
            assert self.folders is not None and self._bwrap is not None
            join = None if name == "sandbox" else self._namespaces[0]
            argv = sandbox.wrap(
                argv,
                self.folders,
                join=join,
                bwrap=self._bwrap,
                keep_visible=self._keep_visible,
                identity=self.identity,
                x_socket=f"{sandbox.X11_SOCKETS}/X{self.display.lstrip(':')}",
                hidden=self._hidden,
                masked=self._masked,
                private_network=self.private_network,
                as_guest=name == "guest",
                resolv_conf=self.folders.state / "resolv.conf" if self._outbound else None,
            )
            if join is not None:
                kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), *join.fds)  # type: ignore[misc]
        # Into the desktop's control groups before anything else runs (desktop_limits).
        argv = [*self._cgroups.enter_words(), *argv]
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                argv,
                env=self._env(name),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=self.root,  # HOME is deleted and recreated on reset
                **kwargs,  # type: ignore[call-overload]
            )
        except FileNotFoundError as e:
            raise ProviderError(
                f"{argv[0]} is not installed; run scripts/install_system_deps.sh"
            ) from e
        finally:
            log.close()
        self._procs[name] = proc
        return proc

    def _start_reaper(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if k != processes.MARKER_VARIABLE}
        # Once this process has died, the watchdog also removes its other folders (an env's
        # evaluation folder) and any other dead process's.
        sweep = [f"--sweep={folder}" for folder in _sweep_folders(self.config.work_dir)]
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "osworld_gym.providers.reaper",
                self.marker,
                *map(str, self._folders_to_remove()),
                f"--parent={os.getpid()}",
                *sweep,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    def _restore_home(self) -> None:
        # Emptied, not replaced: a guest kept over a reset has this very folder mounted.
        _empty_folder(self.home)
        write_default_home(self.home)
        if self.config.home_template:
            shutil.copytree(self.config.home_template, self.home, symlinks=True, dirs_exist_ok=True)
        self.identity.hand_over(self.home, recursive=True)

    def _empty_temp_folders(self) -> None:
        """Empty the private ``/tmp`` and ``/var/tmp``, as a VM's revert would."""
        if self.folders is None:
            _empty_folder(self.tmp_dir)  # TMPDIR without a sandbox
        else:
            # Mount points stay: the host's X sockets on /tmp/.X11-unix, and the host paths kept
            # visible (a venv under /tmp), which running programs use.
            for folder, inside in ((self.folders.tmp, "/tmp"), (self.folders.var_tmp, "/var/tmp")):
                keep = {Path(path).relative_to(inside).parts[0] for path in self._keep_visible
                        if path.startswith(inside + "/")}  # fmt: skip
                if inside == "/tmp":
                    keep.add(Path(sandbox.X11_SOCKETS).name)
                _empty_folder(folder, keep=tuple(keep))
            # Only the running X server's socket (its mount point): a replaced server's would
            # stay as an empty file, telling this desktop from a new one.
            current = (f"X{self.display.lstrip(':')}",) if self.display else ()
            _empty_folder(self.folders.tmp / Path(sandbox.X11_SOCKETS).name, keep=current)

    @property
    def _guest_state(self) -> Path:
        """The guest server's folder (the one part of the state folder the desktop writes)."""
        return self.state_dir / sandbox.GUEST_STATE

    def _empty_kept_shm(self, component: str) -> None:
        """Empty the /dev/shm of a kept sandboxed component (the guest's frame files stay).

        The programs it starts share it (Chromium leaves files there when killed; a terminal
        the window manager opened can write there); a new component gets an empty one.
        """
        shm = Path(f"/proc/{self.component_pid(component)}/root{_SHM}")
        frames = self.client.shared_frame_names() if component == "guest" else set()
        try:
            _empty_folder(shm, keep=tuple(frames))
        except OSError as e:  # the component is going away: its /dev/shm goes with it
            logger.debug("cannot empty %s: %s", shm, e)

    def _read_fd_line(self, name: str, fd: int, deadline: float) -> str:
        """Read the line a component writes to our pipe once it is ready (bounded)."""
        data = b""
        while b"\n" not in data:
            remaining = deadline - time.monotonic()
            proc = self._procs[name]
            if proc.poll() is not None:
                raise DesktopDiedError(name, proc.returncode, self._log_tail(name))
            if remaining <= 0:
                raise ProviderError(f"{name} not ready in time\n{self._log_tail(name)}")
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.1))
            if ready:
                chunk = os.read(fd, 256)
                if not chunk and proc.poll() is not None:
                    raise DesktopDiedError(name, proc.returncode, self._log_tail(name))
                data += chunk
        return data.decode().strip()

    def _spawn_reporting(self, name: str, argv: Callable[[int], list[str]], deadline: float) -> str:
        """Start a component that writes one line to an inherited pipe once ready; return it.

        Args:
            name: Component name (log file, ``self._procs`` key).
            argv: Builds the command line from the pipe's write descriptor.
            deadline: ``time.monotonic()`` value by which the line must arrive.
        """
        read_fd, write_fd = os.pipe()
        try:
            self._spawn(name, argv(write_fd), pass_fds=(write_fd,))
            os.close(write_fd)
            write_fd = -1
            return self._read_fd_line(name, read_fd, deadline)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)

    def _start_xvfb(self) -> None:
        width, height = self.config.screen_size
        argv = [
            "Xvfb", "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-dpi", "96",
            "+extension", "XTEST",
            # Without it the server resets whenever its last client leaves (the AT-SPI
            # launcher connects only briefly), dropping connections being opened then.
            "-noreset",
            # Only this desktop's programs (the cookie) and the launcher (localuser) connect.
            # (Its abstract socket stays: it is what keeps display numbers unique on the host,
            # and clients such as python-xlib try it first.)
            "-auth", str(self._x_server_auth),
        ]  # fmt: skip
        self._x_cookie.write_server_file(self._x_server_auth)
        deadline = time.monotonic() + self.config.boot_timeout
        number = self._spawn_reporting("xvfb", lambda fd: [*argv, "-displayfd", str(fd)], deadline)
        self.display = f":{number}"
        self._record_x_server(number)
        self._x_cookie.write_client_file(self.xauthority, self.display)
        self.identity.hand_over(self.xauthority)
        admit_launcher(self.display, self.xauthority)

    def _record_x_server(self, number: str) -> None:
        """Name the X server's lock and socket in the folder's ownership record.

        They live in the host's ``/tmp`` (where X clients look) and the server removes them
        when it exits, unless it is killed with SIGKILL; then a sweep of the dead desktop's
        folder removes them (:func:`osworld_gym.providers.processes.remove_dead_folders`).
        """
        record = processes.read_owner(self.root)
        if record is None:
            return
        pid = self._procs["xvfb"].pid
        record["x_server"] = {
            "pid": pid,
            "start": processes.start_time(pid),
            "lock": f"/tmp/.X{number}-lock",
            "socket": f"{sandbox.X11_SOCKETS}/X{number}",
        }
        processes.write_owner(self.root, record)

    def _start_sandbox(self) -> None:
        """Start the init of the desktop's namespaces; every later process joins them."""
        if self._bwrap is None:
            return
        while self._namespaces:
            self._namespaces.pop().close()
        deadline = time.monotonic() + self.config.boot_timeout
        python = self.config.python or sys.executable
        holder = self._spawn("sandbox", sandbox.holder_command(python))
        while True:
            chain = processes.sandbox_chain(holder.pid)
            # Its namespaces are final once bubblewrap has started the init program.
            if len(chain) > 1 and processes.command_name(chain[-1]) not in (b"bwrap", None):
                try:
                    self._namespaces.append(
                        sandbox.Namespaces.of(
                            chain[-1],
                            user=not self.identity.dedicated,
                            net=self.private_network,
                        )
                    )
                    self._start_forwarder()
                    return
                except OSError:  # gone meanwhile: the checks below say why
                    pass
            self._check_impl()
            if time.monotonic() >= deadline:
                raise ProviderError(f"sandbox not ready in time\n{self._log_tail('sandbox')}")
            time.sleep(0.01)

    def _start_forwarder(self) -> None:
        """Relay the guest's and OSWorld's service ports into the new private network.

        And give it the internet (:mod:`osworld_gym.providers.outbound`) when asked.
        """
        while self._forwarders:
            self._forwarders.pop().close()
        namespaces = self._namespaces[0]
        if namespaces.net is None:
            return
        inbound = tuple(reservation.port for reservation in self._service_ports)
        self._forwarders.append(
            PortForwarder(namespaces.net, inbound, tuple(self.config.host_ports))
        )
        if not self._outbound:
            return
        try:
            self._forwarders.append(
                OutboundLink(
                    namespaces.net,
                    namespaces.user,
                    blocked=(*BLOCKED_NETWORKS, *self.config.blocked_networks),
                    timeout=self.config.boot_timeout,
                    log=self.log_dir / "slirp4netns.log",
                )
            )
        except (OutboundError, OSError, subprocess.TimeoutExpired) as e:
            # The namespace has its loopback only: no internet, nothing of the host's.
            logger.warning("%r starts without internet: %s", self, e)
            self._outbound = False

    @property
    def internet(self) -> bool:
        """Whether the desktop's programs reach the internet.

        Through the host's network, or a private network's outbound link.
        """
        if not self.private_network:
            return True
        return any(isinstance(link, OutboundLink) and link.running() for link in self._forwarders)

    def _start_session(
        self, *, restart_guest: bool = True, keep_wm: bool = False, conn: Any = None
    ) -> None:
        """Start everything above the X server: session bus, a11y, window manager, guest.

        Args:
            restart_guest: Start the guest (False: a healthy one was kept).
            keep_wm: A window manager was kept running: keep it if it is as fresh as a new
                one (:meth:`_window_manager_staleness`), else replace it.
            conn: A connection to an X server that served an earlier session (a light
                reset); None for a new X server.
        """
        from Xlib import display

        deadline = time.monotonic() + self.config.boot_timeout
        if self.config.accessibility and shutil.which("dbus-daemon"):
            self._start_dbus(deadline)
        used = conn is not None
        if conn is None:
            conn = display.Display(self.display)
        try:
            if keep_wm:
                stale = self._window_manager_staleness(conn, deadline)
                if stale is not None:
                    logger.info("%r: restarting the window manager: %s", self, stale)
                    self._stop_window_manager()
            if "wm" not in self._procs:
                self._start_window_manager(conn, deadline, used=used)
        finally:
            if not used:
                conn.close()
        if restart_guest:
            self._start_guest(deadline)
        if not self._session_ready:  # a new episode's session (a revival keeps the count)
            self._revivals = 0
            self._session_ready = True

    def _start_window_manager_now(self, deadline: float) -> None:
        """Start the window manager on the X server an earlier one used (its own connection)."""
        from Xlib import display

        conn = display.Display(self.display)
        try:
            self._start_window_manager(conn, deadline, used=True)
        finally:
            conn.close()

    def _start_window_manager(self, conn: Any, deadline: float, *, used: bool) -> None:
        """Start the window manager once the last one let its selection go; wait until it runs.

        Args:
            conn: A connection to the desktop's X server.
            deadline: ``time.monotonic()`` value by which it must run.
            used: The X server served an earlier window manager, whose settings on the root
                window a new one must not pick up.
        """
        self._wait_for_selection_released(conn, deadline)
        if used:
            window_manager.forget_desktop_settings(conn)
        self._spawn("wm", list(self.config.window_manager))
        self._wait_for_window_manager(conn, deadline)
        self._wm_state = self._fresh_window_manager_state(conn, deadline)

    # --- keeping the window manager over a reset ------------------------------------------

    def _keeps_window_manager(self) -> bool:
        """Whether resets may keep the window manager: openbox, whose freshness is checkable.

        A reconfigured openbox makes its own windows again, so a changed set of its windows
        tells that it may run another configuration than the restored HOME's.
        """
        return Path(self.config.window_manager[0]).name == "openbox"

    def _window_manager_alive(self, conn: Any, pid: int) -> bool:
        """Whether the window manager (program ``pid``) runs, not stopped, and owns ``WM_S0``."""
        proc = self._procs.get("wm")
        return (
            self._wm_state is not None
            and self._keeps_window_manager()
            and proc is not None
            and proc.poll() is None
            and processes.state(pid) in _SERVING_STATES
            and window_manager.selection_owner(conn) == self._wm_state.owner
        )

    def _window_manager_staleness(self, conn: Any, deadline: float) -> str | None:
        """Why the kept window manager is not as fresh as a new one; None when it is.

        Checked after the apps are gone and the X input state is reset: it answers a request,
        holds no grab (an open menu or window switcher), has the windows, desktops and root
        cursor it had when new (a busy cursor would show a launch from the last episode), and
        nothing is shown on screen. A difference can be events it has not handled yet (the X
        server notices killed clients asynchronously): after another round trip through it,
        the check is made once more.
        """
        assert self._wm_state is not None
        budget = min(deadline, time.monotonic() + window_manager.ANSWER_SECONDS)
        why: str | None = None
        for _ in range(2):
            if not window_manager.answers(conn, budget):
                return "it does not answer"
            if window_manager.grabs_free(conn):
                why = window_manager.difference(self._wm_state, window_manager.read_state(conn))
            else:
                why = "it holds a grab (a menu or the window switcher is open)"
            if why is None:
                return None
        return why

    def _fresh_window_manager_state(
        self, conn: Any, deadline: float
    ) -> window_manager.WindowManagerState:
        """What the window manager just started shows, once it handles requests.

        An EWMH window manager publishes its desktops while it starts; until the count is on
        the root window it is read again after another round trip (bounded), so a state taken
        mid-start is not what later resets compare with.
        """
        budget = min(deadline, time.monotonic() + window_manager.ANSWER_SECONDS)
        while True:
            if not window_manager.answers(conn, deadline):
                raise ProviderError(f"window manager does not answer\n{self._log_tail('wm')}")
            state = window_manager.read_state(conn)
            desktops = dict(state.properties).get("_NET_NUMBER_OF_DESKTOPS")
            if desktops or time.monotonic() >= budget:
                return state

    def _stop_window_manager(self) -> None:
        processes.terminate(self._component_pids("wm"), timeout=1.0)
        _reap(self._procs.pop("wm"))
        self._wm_state = None

    def _start_dbus(self, deadline: float) -> None:
        # A fixed socket path: a guest that survives a reset keeps a valid bus address.
        (self.runtime_dir / "bus").unlink(missing_ok=True)
        socket = self._inside(self.runtime_dir / "bus", "dbus")
        argv = [
            "dbus-daemon",
            "--session",
            "--nofork",
            "--nopidfile",
            f"--address=unix:path={socket}",
        ]
        self._spawn_reporting("dbus", lambda fd: [*argv, f"--print-address={fd}"], deadline)
        # Without the ",guid=" the daemon printed: libdbus clients drop a bus whose GUID is not
        # the address's, and a guest kept over a reset hands its programs the address it got
        # when it started, while each reset starts a new daemon (a new GUID) on the same path.
        self._dbus_address = f"unix:path={socket}"
        if os.access(_AT_SPI_LAUNCHER, os.X_OK):
            # Started before any app: Qt apps only export their tree if the bus already runs.
            self._spawn("atspi", [_AT_SPI_LAUNCHER, "--launch-immediately"])

    def _wait_for_selection_released(self, conn: Any, deadline: float) -> None:
        """Wait until no window manager owns ``WM_S0``: the one just killed let it go.

        The X server releases a dead client's selection once it has seen the connection
        close, a moment after the process is gone; a new window manager's wait for the
        selection would otherwise end at once, on the old owner.
        """
        while window_manager.selection_owner(conn):
            if time.monotonic() >= deadline:
                raise ProviderError("the window manager's selection (WM_S0) was never released")
            time.sleep(0.005)

    def _wait_for_window_manager(self, conn: Any, deadline: float) -> None:
        """Wait until a window manager owns the ``WM_S0`` selection (ICCCM).

        Root-window properties such as ``_NET_SUPPORTING_WM_CHECK`` outlive a killed window
        manager, so only the selection tells that the new one manages windows.
        """
        while not window_manager.selection_owner(conn):
            self._check_impl()
            if time.monotonic() >= deadline:
                raise ProviderError(f"window manager not ready in time\n{self._log_tail('wm')}")
            time.sleep(0.02)

    def _start_guest(self, deadline: float) -> None:
        """Start the guest, on its previous port when it had one (clients stay valid)."""
        if self._guest_reservation is not None:  # its own loopback: the relayed port is free
            self._spawn_guest(deadline, self._guest_reservation.port)
            return
        if self._port:
            try:
                self._spawn_guest(deadline, self._port)
                return
            except DesktopDiedError:  # the old port was taken meanwhile: take any
                logger.info("guest port %d is taken; picking a new one", self._port)
        self._spawn_guest(deadline, 0)

    def _inside(self, path: Path, component: str) -> str:
        """``path`` as ``component`` sees it (inside the sandbox or not)."""
        return self.desktop_path(path) if self._sandboxed(component) else str(path)

    def _spawn_guest(self, deadline: float, port: int) -> None:
        port_file = self._guest_state / "port"
        port_file.unlink(missing_ok=True)
        argv = [
            self.config.python or sys.executable,
            "-m",
            "osworld_gym.guest",
            "--display",
            self.display,
            "--port",
            str(port),
            "--port-file",
            self._inside(port_file, "guest"),
            "--state-dir",
            self._inside(self._guest_state, "guest"),
            "--log-level",
            "WARNING",
        ]
        if self.config.official_guest:
            argv.append("--official")
        token_fd = -1
        if self._token:
            # On a descriptor the guest reads and closes, never in a file or its environment,
            # which the desktop's programs (same uid) could read.
            token_fd, write_fd = os.pipe()
            os.write(write_fd, self._token.encode())
            os.close(write_fd)
            argv += ["--token-fd", str(token_fd)]
        try:
            self._spawn("guest", argv, pass_fds=(token_fd,) if token_fd >= 0 else ())
        finally:
            if token_fd >= 0:
                os.close(token_fd)
        while not port_file.exists():
            self._check_impl()
            if time.monotonic() >= deadline:
                raise ProviderError(f"guest server not ready in time\n{self._log_tail('guest')}")
            time.sleep(0.02)
        self._port = int(port_file.read_text())
        self.client.wait_until_ready(max(deadline - time.monotonic(), 1.0))
        self._share_frames()

    def _share_frames(self) -> None:
        """Point the client at the shared frame files of the guest just started.

        A sandboxed guest's /dev/shm is a tmpfs of its own, which goes away with it; this
        process reaches it through ``/proc/<guest>/root`` (the sandbox's user namespace is
        ours). Without a sandbox the files live in :attr:`frames_dir`.
        """
        if not self.config.shared_frames or self.config.official_guest:
            self.client.share_frames(None)
        elif self._sandboxed("guest"):
            root = f"/proc/{self.component_pid('guest')}/root"
            owner = (self.identity.uid, self.identity.gid) if self.identity.dedicated else None
            self.client.share_frames(f"{root}{_SHM}", str(_SHM), owner=owner)
        elif self.frames_dir is not None:
            self.client.share_frames(str(self.frames_dir))

    def _log_tail(self, name: str) -> str:
        path = self.log_dir / f"{name}.log"
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-_LOG_TAIL_LINES:])
