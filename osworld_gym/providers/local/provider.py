"""The ``local`` provider: a desktop made of processes on this host, no VM.

Each desktop is an Xvfb display (a free number chosen by Xvfb itself through ``-displayfd``), a
private D-Bus session bus with the AT-SPI launcher (so apps export accessibility trees), a
window manager and a guest server on a free port. Everything above the X server runs in the
desktop's sandbox (``osworld_gym.providers.local.sandbox``): as OSWorld's user ``user`` with its
private folder mounted at ``/home/user``, private ``/tmp``, the host read-only, and command
wrappers for OSWorld's ``google-chrome``, ``socat``, ``vlc`` and ``sudo`` first on PATH
(``osworld_gym.providers.desktop.bin``). Every process carries the desktop's marker in its
environment, so ``close()``, garbage collection, interpreter exit, and a watchdog that notices
the launching process die (even by SIGKILL) can find and stop all of them, including apps that
daemonised.

Each desktop's files live in its own folder, apps' temp files included: the sandbox's ``/tmp``
is a folder in it, and without a sandbox ``TMPDIR`` points there. The folder records its owner
(``osworld_gym.providers.processes.make_owned_folder()``), so when a watchdog was killed
together with its launcher, the next provider start stops the processes and deletes the folders
of dead runs (``remove_leftovers()``).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from Xlib.error import ConnectionClosedError, DisplayError, XError

from osworld_gym.errors import DesktopDiedError, DesktopLimitError, ProviderError
from osworld_gym.guest.client import ClientConfig
from osworld_gym.providers import processes
from osworld_gym.providers.base import Desktop, Provider, ProviderConfig
from osworld_gym.providers.desktop import gnome_session, x_state
from osworld_gym.providers.local import sandbox
from osworld_gym.providers.local.components import ComponentTable, reap
from osworld_gym.providers.local.environment import passed_through, search_path
from osworld_gym.providers.local.folders import SHM, DesktopFolders, empty_folder, empty_tree
from osworld_gym.providers.local.guest import GuestServer
from osworld_gym.providers.local.identity import HostIdentity
from osworld_gym.providers.local.isolation import DesktopSandbox
from osworld_gym.providers.local.limits import (
    DesktopCgroups,
    DesktopLimits,
    remove_stale_groups,
)
from osworld_gym.providers.local.outbound import BLOCKED_NETWORKS, OutboundLink
from osworld_gym.providers.local.session import PARTS, Session
from osworld_gym.providers.local.x_server import XServer
from osworld_gym.providers.netns import PortForwarder
from osworld_gym.providers.ports import PortReservation, reserve_port
from osworld_gym.providers.services import OSWORLD_SERVICE_PORTS, port_environment, service_urls
from osworld_gym.providers.session_choice import SESSIONS

logger = logging.getLogger(__name__)

NETWORKS = ("private", "host")  # LocalProviderConfig.network
# GNOME's settings daemons a GNOME session runs: the apps' theme and fonts (XSETTINGS), and the
# media keys, among them Ubuntu's ctrl+alt+t for a terminal.
# XSETTINGS before the shell: the desktop icons' program, which the shell starts, draws with
# the theme it announces from its first frame. The media keys after: they grab through the shell.
_GNOME_EARLY_DAEMONS = (("gsd-xsettings", ("/usr/libexec/gsd-xsettings",)),)
_GNOME_DAEMONS = (("gsd-media-keys", ("/usr/libexec/gsd-media-keys",)),)
# Where a sandboxed desktop's programs can write (so never on their PATH).
_WRITABLE_INSIDE = (sandbox.DESKTOP_HOME, "/tmp", "/var/tmp", "/run/user", "/dev/shm",
                    f"{sandbox.STATE_MOUNT}/{sandbox.GUEST_STATE}")  # fmt: skip


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
            the guest writes and the client reads, ``osworld_gym.guest.client.SharedFrames``)
            instead of the guest's HTTP answer. False: over HTTP, as for a remote guest.
        session: ``"minimal"``: openbox (``window_manager``), the lightest desktop.
            ``"gnome"``: GNOME Shell laid out as OSWorld's Ubuntu VM (top bar, the dock on the
            left, Yaru; ``osworld_gym.providers.desktop.gnome_session``); needs a sandbox.
            None: the env picks by its tasks, GNOME for OSWorld's task files
            (``session_for()``); a desktop launched
            outside an env with None runs ``"minimal"``.
        network: ``"private"``: a sandboxed desktop has a network namespace of its own, with a
            loopback of its own and nothing of the host's (its services, other desktops); the
            driver reaches the guest and OSWorld's service ports through a relay
            (``osworld_gym.providers.netns``). ``"host"``: the desktop shares the host's
            network, internet and loopback services included.
        internet: A private network reaches the internet through slirp4netns, behind a filter
            that keeps the host's addresses, its local networks and the cloud's metadata
            service out (``osworld_gym.providers.local.outbound``). False: no internet. Where
            slirp4netns or iptables is missing, or the filter cannot be set, the desktop starts
            without internet and says so in the log (``osworld-gym doctor`` checks it).
        blocked_networks: More IPv4 networks (``"203.0.113.0/24"``) or addresses the internet
            of a private network must not reach, beyond the filter's own list
            (``osworld_gym.providers.local.outbound.BLOCKED_NETWORKS``) and the host's addresses.
        host_ports: Ports of the host's loopback that a private network's desktop may reach
            at the same port on its own loopback (a page server for its browser in a test).
        limits: Memory, process and disk limits of each desktop
            (``osworld_gym.providers.local.limits``); hitting one ends the episode as an
            infrastructure fault (``DesktopLimitError``).
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
    session: str | None = None
    network: str = "private"
    internet: bool = True
    blocked_networks: tuple[str, ...] = ()
    host_ports: tuple[int, ...] = ()
    limits: DesktopLimits = DesktopLimits()


class LocalProvider(Provider):
    """Launches ``LocalDesktop`` instances."""

    name = "local"

    def __init__(self, config: LocalProviderConfig | None = None) -> None:
        super().__init__(config or LocalProviderConfig())
        self.config: LocalProviderConfig
        if self.config.reap_leftovers:
            remove_leftovers(self.config.work_dir)
            # Not the groups of desktops other envs are starting (empty until their first
            # process): a pool makes its envs' providers while earlier ones launch.
            remove_stale_groups(processes.live_markers(_sweep_folders(self.config.work_dir)))

    def _launch_impl(self) -> LocalDesktop:
        return LocalDesktop(self.config)


def _sweep_folders(work_dir: str | None) -> list[Path]:
    """Where desktops' and envs' folders are made: the temp folder, ``work_dir``, /dev/shm."""
    folders = [Path(tempfile.gettempdir())]
    if work_dir is not None:
        folders.append(Path(work_dir))
    if SHM.is_dir():
        folders.append(SHM)
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
        reap(proc)
    cgroups.remove()
    if reaper is not None:
        if reaper.stdin is not None:
            reaper.stdin.close()
        reap(reaper, timeout=5.0)
    for folder in folders:
        processes.remove_tree(folder)


def _stop_sandbox(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    """Stop the sandbox's init, which takes every process inside with it at once."""
    holder = procs.get("sandbox")
    if holder is not None and holder.poll() is None:
        processes.terminate(processes.sandbox_chain(holder.pid)[1:], timeout=1.0)


_MOUNT_RACE_ATTEMPTS = 3
# A new GNOME session has started its services once no new process appeared for this long
# (they start within about a second of the shell); bounded by _STARTUP_SECONDS.
_STARTUP_QUIET = 1.0
_STARTUP_SECONDS = 8.0
_STARTUP_POLL = 0.1
# Reloading a kept GNOME session's settings through dconf (two short commands on its bus).
_SETTINGS_SECONDS = 10.0
# The screen stays unchanged this long once the kept shell has applied reloaded settings.
_REDRAW_QUIET = 0.25


def _inode(path: Path) -> int:
    """The inode of ``path``, 0 when it is missing."""
    try:
        return path.stat().st_ino
    except OSError:
        return 0


# Where GVfs's metadata daemon keeps its database, in HOME.
GVFS_METADATA = Path(".local") / "share" / "gvfs-metadata"


def _unflagged_dconf_flags(pid: int, flag: str, current: int) -> list[int]:
    """The dconf change flags ``pid`` maps, but the ``current`` one, that were never flagged.

    dconf's service flags the change flag at ``flag`` (as ``pid`` sees it: one byte, set to 1)
    before it replaces it: a reader that maps a flagged one reads the settings anew at its next
    read. One that maps an unflagged one that is not the current one would never learn of a
    change: a program replaced the flag under it. The byte is read from the reader's memory;
    where that cannot be read it counts as unflagged.
    """
    try:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        return []
    unflagged = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[5].removesuffix(" (deleted)") != flag:
            continue
        inode = int(fields[4])
        if inode == current:
            continue
        try:
            with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
                memory.seek(int(fields[0].split("-")[0], 16))
                flagged = memory.read(1) not in (b"", b"\0")
        except OSError:
            flagged = False
        if not flagged:
            unflagged.append(inode)
    return unflagged


def _lost_mount_race(error: str) -> bool:
    """Whether a component died because bubblewrap could not copy a host mount that changed."""
    return "bwrap: Can't" in error and "mount" in error


# Seconds a dead component's predecessors get to show they died first (see _check_impl).
_CAUSE_GRACE = 0.3
# Restarts of session parts (local_session.PARTS) in one episode before one that keeps dying
# counts as a fault after all.
_MAX_REVIVALS = 50


class LocalDesktop(Desktop):
    """One desktop on this host. Starts in the constructor; use ``LocalProvider``.

    It puts together its components, each of which keeps its own rules: the folders
    (``DesktopFolders``), the sandbox with its
    identity and network (``DesktopSandbox``), the
    X server (``XServer``), the session
    (``Session``) and the guest server
    (``GuestServer``), all started and watched through
    one table (``ComponentTable``). This class
    decides when each starts, what a reset keeps and what a check reports.
    """

    CORE = ("xvfb", "sandbox", "dbus", "wm", "guest")

    def __init__(self, config: LocalProviderConfig) -> None:
        super().__init__()
        if config.network not in NETWORKS:  # before anything is made that would need undoing
            raise ProviderError(f"network must be one of {NETWORKS}, not {config.network!r}")
        if config.session is not None and config.session not in SESSIONS:
            raise ProviderError(f"session must be one of {SESSIONS}, not {config.session!r}")
        if config.session == "gnome":
            if not config.sandbox:
                raise ProviderError("session='gnome' needs the sandbox (sandbox=True)")
            why_not = gnome_session.available()
            if why_not is not None:
                raise ProviderError(f"session='gnome' cannot run here: {why_not}")
        for network in config.blocked_networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError as e:
                raise ProviderError(f"blocked_networks: {e}") from None
        self.config = config
        self.marker = uuid.uuid4().hex
        self._bwrap = sandbox.require_bwrap() if config.sandbox else None
        self.files = DesktopFolders(
            self.marker,
            work_dir=config.work_dir,
            disk_bytes=config.limits.disk_bytes,
            sandboxed=config.sandbox,
            shared_frames=config.shared_frames,
        )
        python = config.python or sys.executable
        self.sandbox: DesktopSandbox | None = None
        if self._bwrap is not None:
            self.sandbox = DesktopSandbox(
                self.files,
                bwrap=self._bwrap,
                python=python,
                private_network=config.network == "private",
                internet=config.internet,
                blocked_networks=(*BLOCKED_NETWORKS, *config.blocked_networks),
                host_ports=tuple(config.host_ports),
                log_dir=self.files.log_dir,
                systemd_services=config.session == "gnome",
            )
        # A network of its own needs a sandbox.
        self.private_network = self.sandbox is not None and self.sandbox.private_network
        self._token = secrets.token_urlsafe(24) if config.use_token else None
        self._cgroups = DesktopCgroups.create(self.marker, config.limits)
        self.components = ComponentTable(
            self.files.log_dir,
            self.files.root,  # HOME is deleted and recreated on reset
            wrap=self._wrap,
            environment=self._env,
            sandboxed=self._sandboxed,
        )
        self.x_server = XServer(
            self.components,
            root=self.files.root,
            xauthority=self.files.state_dir / "Xauthority",
            screen_size=config.screen_size,
            # GNOME Shell composites each change on its next frame: at 240 frames a second a
            # step's settle waits ~4 ms for it, not up to 17 (openbox does not composite).
            refresh_hz=gnome_session.REFRESH_HZ if config.session == "gnome" else None,
        )
        self._gnome: gnome_session.GnomeFiles | None = None
        window_manager = tuple(config.window_manager)
        if config.session == "gnome":
            socket = self.files.desktop_path(self.files.runtime_dir / "system_bus_socket")
            self._gnome = gnome_session.write_files(
                self.files.state_dir,
                socket,
                config.home_template,
                state_inside=self.files.desktop_path(self.files.state_dir),
                runtime_inside=self.files.desktop_path(self.files.runtime_dir),
                screen_size=config.screen_size,
            )
            window_manager = ("gnome-shell", "--x11", f"--mode={gnome_session.SESSION_MODE}")
        self.session = Session(
            self.components,
            window_manager_command=window_manager,
            accessibility=config.accessibility,
            bus_socket=self.files.runtime_dir / "bus",
            inside=self._inside,
            connect=self.x_server.connect,
            check=self._check_impl,
            system_bus=None
            if self._gnome is None
            else (self._gnome.system_bus_config, self.files.runtime_dir / "system_bus_socket"),
            daemons=() if self._gnome is None else _GNOME_DAEMONS,
            early_daemons=() if self._gnome is None else _GNOME_EARLY_DAEMONS,
            ready_line=None if self._gnome is None else "GNOME Shell started",
            bus_config=None if self._gnome is None else self._gnome.session_bus_config,
            runtime_dir=self.files.runtime_dir,
            keep_session=self._gnome is not None,
            laid_out=None if self._gnome is None else gnome_session.laid_out,
            freshness=None if self._gnome is None else self._shell_staleness,
            icons_home=None if self._gnome is None else self.files.home,
        )
        self._service_ports: list[PortReservation] = []
        self.guest = GuestServer(
            self.components,
            state_dir=self.files.guest_state,
            inside=self._inside,
            python=python,
            official=config.official_guest,
            token=self._token,
            check=self._check_impl,
        )
        # dconf's change flag as the session's settings readers were left with it (see
        # _settings_changed).
        self._dconf_flag_inode = 0
        # Set while a reset that started GNOME Shell again is followed by another (see
        # _light_reset): that one is not followed again.
        self._settling_a_restart = False
        # Whether the session is complete (revivals happen only then), and restarts so far.
        self._session_ready = False
        self._revivals = 0
        self._reaper = self._start_reaper()
        self._finalizer = weakref.finalize(
            self,
            _teardown,
            self.marker,
            self.components.procs,
            self.files.to_remove(),
            self._reaper,
            self._service_ports,
            [] if self.sandbox is None else self.sandbox.namespaces,
            [] if self.sandbox is None else self.sandbox.links,
            self._cgroups,
        )
        try:
            # OSWorld's fixed service ports (Chrome's debugging port, CDP, VLC) get ports of
            # this desktop's own, the same inside and on the host (a private network's relay
            # forwards each to its number), so desktops can share the host's network.
            self._service_ports.extend(reserve_port() for _ in OSWORLD_SERVICE_PORTS)
            if self.private_network:
                # The guest's, relayed the same way (released with the others at teardown).
                self._service_ports.append(reserve_port())
                self.guest.fixed_port = self._service_ports[-1].port
            if self.sandbox is not None:
                # A reserved port is unique among the host's live desktops: so is the uid.
                self.sandbox.take_identity(self._service_ports[0].port)
            self._restart_everything()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"LocalDesktop(display={self.display!r}, endpoint={self.endpoint!r})"

    # --- what other code reads -------------------------------------------------------------

    @property
    def root(self) -> Path:
        """The desktop's folder on the host."""
        return self.files.root

    @property
    def home(self) -> Path:
        """Its HOME on the host (``/home/user`` inside a sandbox)."""
        return self.files.home

    @property
    def tmp_dir(self) -> Path:
        """Its ``/tmp`` on the host."""
        return self.files.tmp_dir

    @property
    def state_dir(self) -> Path:
        """Its state folder on the host."""
        return self.files.state_dir

    @property
    def log_dir(self) -> Path:
        """Its components' logs."""
        return self.files.log_dir

    @property
    def runtime_dir(self) -> Path:
        """Its ``XDG_RUNTIME_DIR`` on the host."""
        return self.files.runtime_dir

    @property
    def frames_dir(self) -> Path | None:
        """Shared frame files of a desktop without a sandbox."""
        return self.files.frames_dir

    @property
    def folders(self) -> sandbox.SandboxFolders | None:
        """What the sandbox mounts (None without a sandbox)."""
        return self.files.sandbox_folders

    @property
    def identity(self) -> HostIdentity:
        """Who the desktop's programs are on the host."""
        if self.sandbox is None:
            return HostIdentity(os.getuid(), os.getgid(), dedicated=False)
        return self.sandbox.identity

    @property
    def display(self) -> str:
        """The X display (``":N"``), empty while none runs."""
        return self.x_server.display

    @property
    def xauthority(self) -> Path:
        """The desktop's ``XAUTHORITY`` file on the host."""
        return self.x_server.xauthority

    @property
    def internet(self) -> bool:
        """Whether the desktop's programs reach the internet."""
        return self.sandbox is None or self.sandbox.internet

    @property
    def _procs(self) -> dict[str, subprocess.Popen[bytes]]:
        return self.components.procs

    # --- Desktop interface ---------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """Base URL of this desktop's guest server."""
        return f"http://127.0.0.1:{self.guest.port}"

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
        try:
            return self.files.desktop_path(path)
        except ValueError:
            raise ValueError(f"{path} is not visible inside {self!r}") from None

    def pids(self) -> list[int]:
        """PIDs of every live process of this desktop (apps included)."""
        return processes.find_marked(self.marker)

    def component_pid(self, component: str) -> int:
        """PID of a core component: ``"xvfb"``, ``"dbus"``, ``"wm"`` or ``"guest"``.

        For a sandboxed component, the PID of the program itself (not of its ``bwrap``).

        Raises:
            ProcessLookupError: The sandboxed program has exited and its ``bwrap`` not yet
                (a few milliseconds): no PID is the program's then, until the check restarts it.
        """
        return self.components.program_pid(component)

    def _sandboxed(self, component: str) -> bool:
        return self._bwrap is not None and component != "xvfb"

    # --- checks ----------------------------------------------------------------------------

    def _check_impl(self) -> None:
        """Poll the core processes (no round trip): a dead one raises DesktopDiedError.

        First, session parts the desktop's own programs stopped are restarted
        (``_revive_session()``): that is the desktop's doing, not a fault of its host.

        A sandboxed component's handle is the ``bwrap`` that carries it, which exits as soon as
        the program inside does (with its status). When one is found dead, the first dead one in
        ``CORE`` order is named: the X server can finish dying between its poll and a later
        one's, and its clients (the window manager) exit the moment it does, even before the
        server's own exit is complete; so the earlier ones get a moment
        (``_CAUSE_GRACE``) to show they died too. The error names the cause, not a
        consequence.
        """
        self._revive_session()
        dead = self._dead_core()
        if dead in PARTS and self._revive_session():
            # It died between the first look and the poll (its bwrap exits a moment after it).
            dead = self._dead_core()
        if dead is not None:
            cause = self._earlier_dead(dead)
            died = self.components.procs[cause]
            raise DesktopDiedError(cause, died.returncode, self.components.log_tail(cause))
        stopped = self._stopped_component()
        if stopped is not None:
            raise DesktopDiedError(stopped, None, "stopped (SIGSTOP or a tracer): not answering")
        hits = self._limit_hits()
        if hits:
            raise DesktopLimitError("; ".join(hits))

    def _dead_core(self) -> str | None:
        """The first core component (``CORE`` order) whose handle has exited, or None."""
        procs = self.components.procs
        for name in self.CORE:
            proc = procs.get(name)
            if proc is not None and proc.poll() is not None:
                return name
        return None

    def _limit_hits(self) -> list[str]:
        """The desktop's limits it hit (memory, processes, disk), in words."""
        hits = self._cgroups.hits()
        full = self.files.disk_full()
        if full is not None:
            hits.append(full)
        return hits

    def _earlier_dead(self, name: str) -> str:
        """The first component before ``name`` in ``CORE`` that is dead too, else ``name``."""
        procs = self.components.procs
        earlier = [n for n in self.CORE[: self.CORE.index(name)] if n in procs]
        deadline = time.monotonic() + _CAUSE_GRACE
        while True:
            for candidate in earlier:
                if procs[candidate].poll() is not None:
                    return candidate
            if not earlier or time.monotonic() >= deadline:
                return name
            time.sleep(0.01)

    def _stopped_component(self) -> str | None:
        """The first core component whose program is stopped, or None.

        A stopped process is alive to ``poll()`` but answers nothing: a guest stopped
        (``kill -STOP``) would otherwise be found only after the client's timeouts and
        retries, minutes later.
        """
        for name in self.CORE:
            if name in self.components and name != "sandbox" and self.components.stopped(name):
                return name
        return None

    def _revive_session(self) -> bool:
        """Restart the session parts (``local_session.PARTS``) that died or were stopped.

        The desktop's programs run as the same user as its session bus, accessibility bus and
        window manager, so a task's terminal can ``kill -9`` or ``kill -STOP`` them: that ends
        nothing, as on a desktop whose session manager restarts them. Only while the session
        is complete (not during a start or reset, whose own checks report a component that
        will not start), while the X server, the sandbox and the guest run, the desktop is
        within its limits (a fork bomb's victims are its fault), and at most
        ``_MAX_REVIVALS`` times an episode; otherwise the checks that follow report it.

        Returns:
            Whether it restarted anything.
        """
        if not self._session_ready or self._revivals >= _MAX_REVIVALS:
            return False
        down = [name for name in PARTS if name in self.components and self.components.down(name)]
        if (
            not down
            or any(self.components.exited(name) for name in ("xvfb", "sandbox", "guest"))
            or self._limit_hits()  # what killed it: a fault the check reports
        ):
            return False
        self._revivals += 1
        logger.info("%r: restarting %s, which the desktop's programs stopped", self, down)
        # Not complete while it restarts: the checks of the starts below report, not revive.
        self._session_ready = False
        try:
            self.session.restart(down, time.monotonic() + self.config.boot_timeout)
        except (OSError, ProviderError, XError, ConnectionClosedError, DisplayError) as e:
            # The session stays incomplete (no more revivals) until the reset that follows.
            # What stopped the part may be an earlier core component dying with it (the X
            # server: its clients exit first, and no new one connects): that one is the cause.
            cause = self._earlier_dead(down[0]) if down[0] in self.CORE else down[0]
            if cause != down[0]:
                died = self.components.procs[cause]
                raise DesktopDiedError(
                    cause, died.returncode, self.components.log_tail(cause)
                ) from e
            raise DesktopDiedError(down[0], None, f"stopped, and not restarted: {e}") from e
        self._session_ready = True
        return True

    def _quick_check_impl(self) -> None:
        self._check_impl()  # polls of process handles: cheap enough for every observation

    # --- reset -----------------------------------------------------------------------------

    def _reset_impl(self) -> None:
        self._session_ready = False
        procs = self.components.procs
        xvfb = procs.get("xvfb")
        holder = procs.get("sandbox")
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
        # One X connection for the whole reset: python-xlib spends ~4 ms of CPU opening one.
        conn = self.x_server.connect()
        try:
            restarted = self._light_reset_on(xvfb, conn)
        finally:
            conn.close()
        if restarted and self._gnome is not None and not self._settling_a_restart:
            # GNOME Shell started again (the episode left it stale, or killed it): its start has
            # the bus start services and writes runtime files, as at a new desktop's start, and
            # the next episode must begin as every other does.
            self._settling_a_restart = True
            try:
                self._as_after_a_reset()
            finally:
                self._settling_a_restart = False

    def _light_reset_on(self, xvfb: subprocess.Popen[bytes], conn: Any) -> bool:
        """The light reset on ``conn``; True when the window manager had to start again."""
        components = self.components
        keep = [xvfb.pid]
        if "sandbox" in components:
            keep.extend(components.pids("sandbox"))
        if "guest" in components and self.guest.healthy(self.client):
            keep.extend(components.pids("guest"))
        # A live window manager stays (a restart costs ~40-60 ms of its CPU, the X server's
        # work for it and a sandbox start); the session checks that it is as fresh as a new
        # one, else replaces it. GNOME Shell lives on its session: it stays only with the
        # buses and daemons, themselves untouched.
        wm = components.pids("wm") if "wm" in components else []
        keep_wm = bool(wm) and self.session.window_manager_alive(conn, wm[-1])
        keep_session = False
        if keep_wm and self.session.keep_session:
            why_not = self.session.keepable()
            keep_session = why_not is None
            keep_wm = keep_session
            if why_not is not None:
                logger.info("%r: restarting the session: %s", self, why_not)
        if keep_wm:
            keep.extend(wm)
            keep.extend(self.session.window_manager_companions())
        if keep_session:
            keep.extend(self.session.kept_pids())
        settings_changed = keep_session and self._settings_changed()
        # SIGKILL after a zero grace: apps need no chance to save, HOME is restored next. Repeated
        # while processes remain: an app may fork while it is being stopped, and one that
        # outlived the reset would hold what the next task needs (Chromium's debugging port).
        sockets = self.files.host_sockets(self.marker, exclude=keep)
        processes.kill_marked(self.marker, exclude=keep, timeout=0)
        processes.remove_sockets_once_released(sockets)
        for name in [n for n, p in components.procs.items() if p.pid not in keep]:
            components.forget(name)
        icons_folders = self.session.icons_folders() if keep_wm else ()
        if icons_folders:
            # Before HOME is restored: what their redraw writes there goes with the rest.
            self._settle_kept_icons(conn, keep, icons_folders, reload_settings=settings_changed)
        self._restore_files(
            self.session.kept_runtime_files() if keep_session else set(), icons_folders
        )
        for component in ("guest", "wm"):
            if component in components and self._sandboxed(component):
                frames = self.client.shared_frame_names() if component == "guest" else set()
                self.files.empty_shm_of(components.pid(component), keep=tuple(frames))
        restoration = self.x_server.restore(conn)  # raises: a new X server (see _reset_impl)
        if "keyboard_mapping" in restoration.changed and "guest" in components:
            # The kept guest remembers the spare keys it mapped (now empty again): a new one
            # starts from the keymap as it is.
            components.stop("guest")
        if settings_changed and not icons_folders:
            self._reload_settings()
        self._start_session(keep_wm=keep_wm, conn=conn)
        restarted = not keep_wm or (components.pids("wm") if "wm" in components else []) != wm
        # A window manager started again (a stale one replaced) may have moved the pointer as it
        # started, as GNOME Shell does: back where a new desktop has it.
        x_state.centre_pointer(conn)
        if settings_changed:
            self._wait_for_redraw()
            self._stop_settings_writer()
            if icons_folders and not restarted:
                # The shell's redraw (workspaces, work area) has the icons' program lay its
                # icons out again, writing their positions through GVfs's metadata daemon.
                self.session.settle_icons(conn)
                self._stop_metadata_writer()
        return restarted

    def _settle_kept_icons(
        self,
        conn: Any,
        keep: list[int],
        folders: tuple[tuple[str, int], ...],
        *,
        reload_settings: bool,
    ) -> None:
        """Bring the kept desktop icons back to a new desktop's before the rest of the reset.

        Their folders are emptied in place and the settings reloaded (when changed): their
        program redraws, and as it does, it calls services the bus starts and writes GVfs's
        metadata into HOME. Once it is done (``Session.settle_icons``), what it started is
        stopped, and the HOME restore that follows removes what it wrote: the next episode
        starts as a new desktop's first one does. With nothing to redraw (the folders as new,
        the settings unchanged) there is nothing to wait for.
        """
        changed = self.files.empty_in_place(folders)
        if reload_settings:
            self._reload_settings()
        if changed or reload_settings:
            self.session.settle_icons(conn)
            processes.kill_marked(self.marker, exclude=keep, timeout=0)

    def _stop_settings_writer(self) -> None:
        """Stop dconf's service, which the settings reload started.

        A new desktop runs none (a program's first write starts it), and the next episode must
        not tell a reset desktop from a new one. The kept shell has redrawn with the reloaded
        settings, so the service has written them.
        """
        writers = [
            pid
            for pid in processes.find_marked(self.marker)
            if processes.command_name(pid) == b"dconf-service"
        ]
        processes.terminate(writers, timeout=2.0)

    def _stop_metadata_writer(self) -> None:
        """Stop GVfs's metadata daemon and remove what it wrote in HOME.

        The desktop icons' program stores its icons' positions through it whenever it lays them
        out. A new desktop runs none and has no metadata once its first reset is done.
        """
        writers = [
            pid
            for pid in processes.find_marked(self.marker)
            if processes.command_name(pid) == b"gvfsd-metadata"
        ]
        processes.terminate(writers, timeout=2.0)
        self.files.restore_home_folder(GVFS_METADATA, self.identity, self.config.home_template)

    def _wait_for_redraw(self) -> None:
        """Wait until the kept shell has redrawn what the reloaded settings changed.

        GNOME Shell applies changed settings on its own main loop (the dock rebuilds its icons,
        loaded asynchronously): the screen must be still before the task's setup begins, or
        its first frame would show the dock half built.
        """
        events = "screenshot.settle_mode" in self.client.info().capabilities
        shot = self.client.screenshot(
            format="raw",
            settle=True,
            settle_mode="events" if events else "poll",
            settle_quiet=_REDRAW_QUIET,
            settle_timeout=_SETTINGS_SECONDS,
        )
        if shot.settled is False:
            logger.info("%r: the screen was still changing after the settings reload", self)

    def _settings_changed(self) -> bool:
        """Whether the episode changed the user's settings or dconf's change flag.

        The settings: a GNOME session's database in HOME. The flag: the one its readers were
        left with at the last reset.
        """
        assert self._gnome is not None
        if _inode(self.session.dconf_flag) != self._dconf_flag_inode:
            return True
        try:
            now = (self.files.home / gnome_session.USER_DATABASE).read_bytes()
        except OSError:
            return True
        return now != self._gnome.user_database.read_bytes()

    def _reload_settings(self) -> None:
        """Tell the programs kept running that the user's settings are a new desktop's again.

        The reset restored the database file; GNOME Shell, the settings daemons and the
        desktop icons' program learn of changes only from dconf's service, which rewrites each
        key here, then flags and replaces dconf's change flag: each reader maps the new one as
        it reads the keys it was told changed, or keeps a flagged one until its next read. One
        that maps an unflagged old one (a program of the episode replaced the flag under it)
        would never see a change again: the session is started anew instead.

        Raises:
            ProviderError: The settings could not be reloaded, or a reader kept an old flag.
        """
        assert self._gnome is not None
        deadline = time.monotonic() + _SETTINGS_SECONDS
        settings = self._inside(self._gnome.user_settings, "settings")
        argv = list(gnome_session.reload_settings_command(settings))
        code, _ = self.components.run("settings", argv, deadline)
        if code != 0:
            tail = self.components.log_tail("settings")
            raise ProviderError(f"the settings could not be reloaded (status {code})\n{tail}")
        seen_as = self._inside(self.session.dconf_flag, "wm")
        while True:
            flag = _inode(self.session.dconf_flag)
            stale = [
                pid
                for pid in self.session.dconf_clients()
                if _unflagged_dconf_flags(pid, seen_as, flag)
            ]
            if not stale:
                self._put_back_settings_file()
                return
            if time.monotonic() >= deadline:
                raise ProviderError(f"programs {stale} keep reading an old dconf change flag")
            time.sleep(0.01)  # a poll interval: each reader remaps on its own main loop

    def _put_back_settings_file(self) -> None:
        """The new desktop's settings file again, byte for byte, after dconf's service rewrote it.

        The service writes the same keys in a layout of its own: a program of the next
        episode could tell from the file's bytes that the last episode changed a setting. The
        readers keep the service's file mapped until the next change (same values); the
        service reads the file anew when it writes one.
        """
        assert self._gnome is not None
        database = self.files.home / gnome_session.USER_DATABASE
        partial = database.with_name(f".{database.name}.osworld-gym")
        try:
            before = database.stat()
            shutil.copyfile(self._gnome.user_database, partial)
            os.chown(partial, before.st_uid, before.st_gid)
            os.chmod(partial, stat.S_IMODE(before.st_mode))
            partial.replace(database)
        except OSError as e:
            raise ProviderError(f"the settings file could not be put back: {e}") from e
        finally:
            partial.unlink(missing_ok=True)

    def _shell_staleness(self, deadline: float) -> str | None:
        """What GNOME Shell says an episode left in it (its shell-state extension); None: fresh."""
        argv = list(gnome_session.FRESHEN_COMMAND)
        code, out = self.components.run("freshen", argv, deadline)
        if code != 0:
            tail = self.components.log_tail("freshen")
            return f"GNOME Shell did not answer (status {code}): {tail}"
        # gdbus prints the reply as a GVariant tuple: ('reasons',)
        stale = out.strip().removeprefix("(").removesuffix(",)").strip("'\"")
        return stale or None

    def _restore_files(
        self,
        kept_runtime_files: set[Path] | None = None,
        kept_home_folders: tuple[tuple[str, int], ...] = (),
    ) -> None:
        """HOME as new; ``/tmp``, ``/var/tmp``, the guest's and the runtime folder emptied.

        The guest's folder holds its wallpaper record, scripts and recordings; the runtime
        folder the buses' sockets (they start again, unless the session is kept: then its
        ``kept_runtime_files``, which it checked, stay) and a GNOME session's time settings
        (written anew): nothing an episode left there stays. ``kept_home_folders`` (name,
        mode): folders of HOME that kept programs watch, emptied in place
        (``Folders.restore_home``).
        """
        gnome = self._gnome
        session_files = (
            None if gnome is None else functools.partial(gnome_session.write_home, files=gnome)
        )
        self.files.restore_home(
            self.identity, self.config.home_template, session_files, kept_home_folders
        )
        keep_visible = () if self.sandbox is None else self.sandbox.keep_visible
        self.files.empty_temp_folders(keep_visible, self.display)
        empty_folder(self.files.guest_state)
        empty_tree(self.files.runtime_dir, kept_runtime_files or set())
        if gnome is not None:
            gnome_session.write_time_settings(self.files.runtime_dir)

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
                if self.session.keep_session:
                    self._first_episode_as_later_ones()
                return
            except DesktopDiedError as e:
                if attempt == _MOUNT_RACE_ATTEMPTS or not _lost_mount_race(str(e)):
                    raise
                logger.info("%r: sandbox lost a race with a host mount; starting again", self)

    def _first_episode_as_later_ones(self) -> None:
        """``_as_after_a_reset()``, or, where that reset fails, a new start without it.

        A desktop half reset would be no desktop; one whose first episode still runs the
        session's start-up services is only less uniform.
        """
        try:
            self._as_after_a_reset()
        except (OSError, ProviderError, XError, ConnectionClosedError) as e:
            logger.warning(
                "%r: the reset before the first episode failed (%s); starting again without it",
                self,
                e,
            )
            self._start_from_scratch()

    def _as_after_a_reset(self) -> None:
        """Make a new GNOME session's first episode start as every later one does.

        As GNOME Shell starts, its dock has the session bus start services (Files, GVfs's
        trash and volume monitors, Tracker, the accessibility registry) and the shell writes
        files into the runtime folder. A reset that keeps the session stops the first and
        empties the second, and nothing starts them again until a program asks: so an episode
        after a reset would differ from a desktop's first one. Once no new process has
        appeared for ``_STARTUP_QUIET`` seconds (the services have started), the desktop
        is reset the same way, so every episode begins from the same desktop.
        """
        deadline = time.monotonic() + _STARTUP_SECONDS
        seen = set(processes.find_marked(self.marker))
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < _STARTUP_QUIET and time.monotonic() < deadline:
            time.sleep(_STARTUP_POLL)  # a poll interval: services start on their own
            now = set(processes.find_marked(self.marker))
            if now - seen:
                quiet_since = time.monotonic()
            seen = now
        self._light_reset(self.components.procs["xvfb"])

    def _start_from_scratch(self) -> None:
        self._session_ready = False
        sockets = self.files.host_sockets(self.marker, exclude=[])  # as a light reset does
        _stop_sandbox(self.components.procs)
        processes.kill_marked(self.marker, timeout=3.0)
        processes.remove_sockets_once_released(sockets)
        for name in list(self.components.procs):
            self.components.forget(name)
        self.x_server.forget()  # its X server is gone: no socket of it stays (empty_temp...)
        self._restore_files()
        self.x_server.start(self.identity, time.monotonic() + self.config.boot_timeout)
        if self.sandbox is not None:
            inbound = tuple(reservation.port for reservation in self._service_ports)
            python = self.config.python or sys.executable
            deadline = time.monotonic() + self.config.boot_timeout
            self.sandbox.start(self.components, python, inbound, deadline, self._check_impl)
        self._start_session()
        self.x_server.remember_fresh()

    def _start_session(self, *, keep_wm: bool = False, conn: Any = None) -> None:
        """Start everything above the X server: session bus, a11y, window manager, guest.

        Args:
            keep_wm: A window manager was kept running: keep it if it is as fresh as a new one.
            conn: A connection to an X server that served an earlier session (a light reset);
                None for a new X server.
        """
        deadline = time.monotonic() + self.config.boot_timeout
        self.session.start(deadline, keep_wm=keep_wm, conn=conn)
        if "guest" not in self.components:
            self.guest.start(self.display, lambda: self.client, deadline)
            self.guest.share_frames(
                self.client,
                enabled=self.config.shared_frames,
                identity=self.identity,
                frames_dir=self.files.frames_dir,
            )
        self._revivals = 0  # a new episode's session
        self._session_ready = True
        self._dconf_flag_inode = _inode(self.session.dconf_flag)

    def _close_impl(self) -> None:
        self._finalizer()

    def logs(self) -> str:
        """The last lines of each component's log."""
        return self.components.logs()

    # --- how components start --------------------------------------------------------------

    def _wrap(self, name: str, argv: list[str]) -> tuple[list[str], tuple[int, ...]]:
        """Component ``name``'s command line: in the sandbox, in the desktop's control groups."""
        fds: tuple[int, ...] = ()
        if self.sandbox is not None and self._sandboxed(name):
            argv, fds = self.sandbox.command(name, argv, self.display)
        # Into the desktop's control groups before anything else runs (desktop_limits).
        return [*self._cgroups.enter_words(), *argv], fds

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
        if self.session.bus_address:
            env["DBUS_SESSION_BUS_ADDRESS"] = self.session.bus_address
        if self._gnome is not None:
            env.update(self._gnome_environment(component))
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

    def _gnome_environment(self, component: str) -> dict[str, str]:
        """What a GNOME session's programs see (``gnome_session.session_environment()``)."""
        assert self._gnome is not None
        env = gnome_session.session_environment(
            schemas=self._inside(self._gnome.schemas, component),
            data=self._inside(self._gnome.data, component),
            system_bus=self._inside(self.files.runtime_dir / "system_bus_socket", component),
        )
        if component == "wm":
            env.update(
                gnome_session.window_manager_environment(
                    self._inside(self._gnome.config, component)
                )
            )
        return env

    def _inside(self, path: Path, component: str) -> str:
        """``path`` as ``component`` sees it (inside the sandbox or not)."""
        return self.desktop_path(path) if self._sandboxed(component) else str(path)

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
                *map(str, self.files.to_remove()),
                f"--parent={os.getpid()}",
                *sweep,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
