"""A ``local`` desktop's session: session bus, accessibility bus, window manager.

The session bus (``dbus-daemon``) with the AT-SPI launcher lets apps export accessibility
trees; the window manager (openbox, or GNOME Shell) manages their windows. A light reset keeps a
window manager that is as fresh as a new one (``osworld_gym.providers.desktop.window_manager``) and
starts a new session bus, or, for a window manager that lives on the session (GNOME Shell dies
with its session bus), keeps the buses and daemons too while they and the runtime files they
serve are as they were (``Session.keepable()``). During an episode, ``Session.restart()``
starts again the parts the desktop's own programs killed or stopped (they run as the same
user), as a session manager would.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from Xlib.error import XError

from osworld_gym.errors import ProviderError
from osworld_gym.providers import processes
from osworld_gym.providers.desktop import desktop_icons, window_manager
from osworld_gym.providers.local.components import SERVING_STATES, ComponentTable

logger = logging.getLogger(__name__)

# How long a kept window manager that lays out on its own main loop may take to come back to its
# first state once the episode's apps are gone (GNOME Shell's dock regrows its icons).
_RELAYOUT_SECONDS = 0.5
# How long kept desktop icons may take to look as they did when new once a reset emptied
# ~/Desktop and reloaded the settings (their program redraws on its own main loop).
_ICONS_REDRAW_SECONDS = 1.5
# Their program has done what a reset set off once it used no CPU for this long (its writes,
# the services it calls, happen while it redraws).
_ICONS_IDLE_SECONDS = 0.1


def _identity(path: Path) -> tuple[int, int, int]:
    """What tells a file from its replacement: device, inode, mode; zeros when it is gone."""
    try:
        info = path.lstat()
    except OSError:
        return (0, 0, 0)
    return (info.st_dev, info.st_ino, info.st_mode)


AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
# Session components the desktop's own programs may stop (same uid), in start order.
PARTS = ("dbus", "atspi", "wm")


class Session:
    """The session bus, accessibility bus and window manager of one desktop.

    Args:
        components: The desktop's components.
        window_manager_command: The window manager's command line.
        accessibility: Start a session bus and the AT-SPI launcher.
        bus_socket: The session bus's socket on the host (a fixed path: a guest kept over a
            reset keeps a valid address).
        inside: A host path as a component sees it (inside the sandbox or not).
        connect: Opens a new connection to the desktop's X server.
        check: Raises when a core component died (polled while waiting).
        system_bus: A private system bus first, as ``(configuration, socket)`` on the host
            (a GNOME session: the shell and ``timedatectl`` want one; the configuration names
            the socket), or None.
        daemons: Programs started, by component name, once the window manager runs (GNOME's
            media keys for ``ctrl+alt+t``, which it grabs through the shell).
        early_daemons: Programs started, by component name, before the window manager
            (GNOME's XSETTINGS daemon: the apps' theme and fonts, which the desktop icons are
            drawn with from their first frame).
        ready_line: A line the window manager writes to its log once it has drawn its first
            frame (GNOME Shell's "GNOME Shell started"), waited for after it took ``WM_S0``;
            None: ``WM_S0`` is enough (openbox).
        bus_config: The session bus's configuration on the host (None: the system's own).
        runtime_dir: The desktop's ``XDG_RUNTIME_DIR`` on the host.
        keep_session: Light resets keep the buses and daemons with a kept window manager.
        laid_out: Whether the window manager has laid out the desktop, from its root window
            properties (``window_manager.WM_PROPERTIES``): what a new one shows is read once
            it has (GNOME Shell reserves its panels' room a moment after it says it started);
            None: once it publishes its desktops.
        freshness: Asks the kept window manager itself what an episode left in it that a new
            one would not have (``deadline`` in, a reason or None out); None: nothing to ask.
        icons_home: HOME on the host, whose ``~/Desktop`` the window manager shows as desktop
            icons (GNOME Shell's, drawn by a program of its own: ``desktop_icons``); each start
            waits until they are drawn, and a light reset keeps their program with the window
            manager while they are as fresh as new; None: no desktop icons.

    Attributes:
        bus_address: The session bus's address once started, else empty.
    """

    def __init__(
        self,
        components: ComponentTable,
        *,
        window_manager_command: tuple[str, ...],
        accessibility: bool,
        bus_socket: Path,
        inside: Callable[[Path, str], str],
        connect: Callable[[], Any],
        check: Callable[[], None],
        system_bus: tuple[Path, Path] | None = None,
        daemons: tuple[tuple[str, tuple[str, ...]], ...] = (),
        early_daemons: tuple[tuple[str, tuple[str, ...]], ...] = (),
        ready_line: str | None = None,
        bus_config: Path | None = None,
        runtime_dir: Path | None = None,
        keep_session: bool = False,
        laid_out: Callable[[dict[str, object]], bool] | None = None,
        freshness: Callable[[float], str | None] | None = None,
        icons_home: Path | None = None,
    ) -> None:
        self._laid_out = laid_out
        self._icons_home = icons_home
        # What the desktop icons showed when new (None until drawn, or without icons).
        self._icons: desktop_icons.IconsState | None = None
        self._components = components
        self._bus_config = bus_config
        self._runtime_dir = runtime_dir
        self.keep_session = keep_session
        self._freshness = freshness
        # The runtime files the kept session serves, with what identifies each (see keepable).
        self._runtime_files: dict[Path, tuple[int, int, int]] = {}
        self._ready_line = ready_line
        self._system_bus = system_bus
        self._daemons = daemons
        self._early_daemons = early_daemons
        self._command = list(window_manager_command)
        self._accessibility = accessibility
        self._bus_socket = bus_socket
        self._inside = inside
        self._connect = connect
        self._check = check
        self.bus_address = ""
        # What the window manager showed when new (None until one runs).
        self._wm_state: window_manager.WindowManagerState | None = None

    # --- the whole session -----------------------------------------------------------------

    def start(self, deadline: float, *, keep_wm: bool = False, conn: Any = None) -> None:
        """Start the session bus (when asked for) and a window manager.

        Args:
            deadline: ``time.monotonic()`` value by which all of it must run.
            keep_wm: A window manager was kept running: keep it if it is as fresh as a new
                one (``_staleness()``), else replace it.
            conn: A connection to an X server that served an earlier session (a light
                reset); None for a new X server.
        """
        if self._system_bus is not None and "sysbus" not in self._components:
            self._start_system_bus(deadline)
        if self._accessibility and shutil.which("dbus-daemon") and "dbus" not in self._components:
            self.start_bus(deadline)
        for name, argv in self._early_daemons:
            if name not in self._components:
                self._components.spawn(name, list(argv))
        used = conn is not None
        if conn is None:
            conn = self._connect()
        try:
            if keep_wm:
                stale = self._staleness(conn, deadline)
                if stale is not None:
                    logger.info("restarting the window manager: %s", stale)
                    self.stop_window_manager()
            if "wm" not in self._components:
                self.start_window_manager(conn, deadline, used=used)
        finally:
            if not used:
                conn.close()
        for name, argv in self._daemons:
            if name not in self._components:
                self._components.spawn(name, list(argv))
        if self.keep_session:
            self._record_runtime_files()

    def restart(self, down: list[str], deadline: float) -> None:
        """Start again the parts in ``down`` (of ``PARTS``), whatever their state.

        The accessibility bus lives on the session bus: either one down starts both again.
        """
        if "dbus" in down or "atspi" in down:
            for name in ("atspi", "dbus"):
                if name in self._components:
                    self._components.stop(name, timeout=0.0)  # a stopped one: SIGKILL
            self.start_bus(deadline)
        if "wm" in down:
            self.stop_window_manager(timeout=0.0)
            conn = self._connect()
            try:
                self.start_window_manager(conn, deadline, used=True)
            finally:
                conn.close()
        if self.keep_session:
            self._record_runtime_files()

    # --- a session kept over a light reset --------------------------------------------------

    def _part_names(self) -> list[str]:
        """The components the session starts besides the window manager, in start order."""
        names = ["sysbus"] if self._system_bus is not None else []
        if self._accessibility and shutil.which("dbus-daemon"):
            names.append("dbus")
            if os.access(AT_SPI_LAUNCHER, os.X_OK):
                names.append("atspi")
        daemons = (*self._early_daemons, *self._daemons)
        return [*names, *(name for name, _ in daemons)]

    def kept_parts(self) -> list[str]:
        """The components a light reset keeps with the window manager (``keep_session``)."""
        return [name for name in self._part_names() if name in self._components]

    def kept_pids(self) -> list[int]:
        """The processes of ``kept_parts()``, with the accessibility bus the launcher runs."""
        pids: list[int] = []
        for name in self.kept_parts():
            chain = self._components.pids(name)
            pids.extend(chain)
            if name == "atspi":
                pids.extend(processes.children(chain[-1]))
        return pids

    def keepable(self) -> str | None:
        """Why the session's buses and daemons cannot be kept over a reset; None if they can.

        Each must run (not stopped), and the sockets of the buses must be the very files they
        made, with their modes (and the folders leading to them): a program of the desktop
        could have replaced one (a socket of its own at the bus's path) or closed it to
        others, and the next episode would meet what it left. dconf's change flag is checked
        by the desktop (``dconf_clients()``): dconf's service replaces it at every write.
        """
        for name in self._part_names():
            if name not in self._components or self._components.down(name):
                return f"{name} is not running"
        if not self._runtime_files:
            return "its runtime files were never recorded"
        for path, identity in self._runtime_files.items():
            if _identity(path) != identity:
                return f"{path.name} in the runtime folder changed"
        return None

    def kept_runtime_files(self) -> set[Path]:
        """The runtime files a reset that keeps the session leaves in place."""
        return {*self._runtime_files, self.dconf_flag.parent, self.dconf_flag}

    @property
    def dconf_flag(self) -> Path:
        """The change flag of dconf (its "shm" file), which settings' readers map."""
        assert self._runtime_dir is not None
        return self._runtime_dir / "dconf" / "user"

    def dconf_clients(self) -> list[int]:
        """The kept programs that read settings (the window manager, its icons, the daemons)."""
        names = ["wm", *(name for name, _ in (*self._early_daemons, *self._daemons))]
        pids = [self._components.pid(name) for name in names if name in self._components]
        return pids + self.window_manager_companions()

    def window_manager_companions(self) -> list[int]:
        """Programs a light reset keeps with the window manager: its desktop icons' program."""
        icons = self._icons
        if icons is None or not processes.still_running(icons.pid, icons.started):
            return []
        return [icons.pid]

    def icons_folders(self) -> tuple[tuple[str, int], ...]:
        """The folders of HOME the kept desktop icons watch, as (name, mode) each.

        A reset empties them in place: their program watches those very folders.
        """
        if self._icons is None:
            return ()
        watched = zip(desktop_icons.WATCHED_FOLDERS, self._icons.folders, strict=True)
        return tuple((name, identity[2]) for name, identity in watched if identity[2])

    def _record_runtime_files(self) -> None:
        """Remember the buses' sockets, and the folders that lead to them."""
        assert self._runtime_dir is not None
        found = [self._runtime_dir / "bus"]
        if self._system_bus is not None:
            found.append(self._system_bus[1])
        found.extend(sorted((self._runtime_dir / "at-spi").glob("bus*")))
        paths = set(found)
        for path in found:
            paths.update(p for p in path.parents if self._runtime_dir in (p, *p.parents))
        self._runtime_files = {path: _identity(path) for path in paths}

    # --- the buses ------------------------------------------------------------------------

    def _start_system_bus(self, deadline: float) -> None:
        assert self._system_bus is not None
        config, socket = self._system_bus
        socket.unlink(missing_ok=True)
        argv = [
            "dbus-daemon",
            f"--config-file={self._inside(config, 'sysbus')}",
            "--nofork",
            "--nopidfile",
        ]
        self._components.spawn_reporting(
            "sysbus", lambda fd: [*argv, f"--print-address={fd}"], deadline
        )

    def start_bus(self, deadline: float) -> None:
        """Start the session bus, then the AT-SPI launcher on it."""
        self._bus_socket.unlink(missing_ok=True)
        socket = self._inside(self._bus_socket, "dbus")
        config = (
            ["--session"]
            if self._bus_config is None
            else [f"--config-file={self._inside(self._bus_config, 'dbus')}"]
        )
        argv = [
            "dbus-daemon",
            *config,
            "--nofork",
            "--nopidfile",
            f"--address=unix:path={socket}",
        ]
        self._components.spawn_reporting(
            "dbus", lambda fd: [*argv, f"--print-address={fd}"], deadline
        )
        # Without the ",guid=" the daemon printed: libdbus clients drop a bus whose GUID is not
        # the address's, and a guest kept over a reset hands its programs the address it got
        # when it started, while each reset starts a new daemon (a new GUID) on the same path.
        self.bus_address = f"unix:path={socket}"
        if os.access(AT_SPI_LAUNCHER, os.X_OK):
            # Started before any app: Qt apps only export their tree if the bus already runs.
            self._components.spawn("atspi", [AT_SPI_LAUNCHER, "--launch-immediately"])

    # --- the window manager ----------------------------------------------------------------

    def start_window_manager(self, conn: Any, deadline: float, *, used: bool) -> None:
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
        log = self._components.log_dir / "wm.log"
        offset = log.stat().st_size if log.exists() else 0
        self._components.spawn("wm", list(self._command))
        self._wait_for_window_manager(conn, deadline)
        if self._ready_line is not None:
            self._wait_for_log_line(log, offset, self._ready_line, deadline)
        if self._icons_home is not None:
            # Before the state is read: the icons' window is one of the windows it lists. They
            # are drawn with the theme XSETTINGS announces: its manager first (started early).
            self._wait_for_selection(conn, "_XSETTINGS_S0", deadline)
            try:
                self._icons = desktop_icons.wait_drawn(
                    conn, self._components.pid("wm"), self._icons_home, deadline, self._check
                )
            except TimeoutError as e:
                raise ProviderError(f"{e}\n{self._components.log_tail('wm')}") from e
        self._wm_state = self._fresh_state(conn, deadline)

    def stop_window_manager(self, timeout: float = 1.0) -> None:
        """Stop the window manager (and its icons' program); forget what they showed when new.

        The icons' program outlives GNOME Shell: a new shell would start a second one.
        """
        companions = self.window_manager_companions()
        if "wm" in self._components:
            self._components.stop("wm", timeout=timeout)
        processes.terminate(companions, timeout=timeout)
        self._wm_state = None
        self._icons = None

    def keeps_window_manager(self) -> bool:
        """Whether resets may keep the window manager: one whose freshness is checkable.

        openbox: a reconfigured openbox makes its own windows again, so a changed set of its
        windows tells that it may run another configuration than the restored HOME's. GNOME
        Shell: what it holds beyond its windows (notifications, code run in it, extensions)
        it tells itself (``freshness``).
        """
        name = Path(self._command[0]).name
        return name == "openbox" or (name == "gnome-shell" and self._freshness is not None)

    def window_manager_alive(self, conn: Any, pid: int) -> bool:
        """Whether the window manager (program ``pid``) runs, not stopped, and owns ``WM_S0``."""
        proc = self._components.procs.get("wm")
        return (
            self._wm_state is not None
            and self.keeps_window_manager()
            and proc is not None
            and proc.poll() is None
            and processes.state(pid) in SERVING_STATES
            and window_manager.selection_owner(conn) == self._wm_state.owner
        )

    def _staleness(self, conn: Any, deadline: float) -> str | None:
        """Why the kept window manager is not as fresh as a new one; None when it is.

        Checked after the apps are gone and the X input state is reset: it answers a request,
        holds no grab (an open menu or window switcher), has the windows, desktops and root
        cursor it had when new (a busy cursor would show a launch from the last episode), and
        nothing is shown on screen. A difference can be events it has not handled yet (the X
        server notices killed clients asynchronously): after another round trip through it,
        the check is made once more. A window manager that lays the desktop out on its own
        main loop (``laid_out``: GNOME Shell's dock grows its icons back once the apps'
        are gone) gets until ``_RELAYOUT_SECONDS`` to come back to its first state.
        """
        assert self._wm_state is not None
        budget = min(deadline, time.monotonic() + window_manager.ANSWER_SECONDS)
        relayout = time.monotonic() + (_RELAYOUT_SECONDS if self._laid_out is not None else 0.0)
        why: str | None = None
        for attempt in itertools.count():
            if not window_manager.answers(conn, budget):
                return "it does not answer"
            if window_manager.grabs_free(conn):
                why = window_manager.difference(self._wm_state, window_manager.read_state(conn))
            else:
                why = "it holds a grab (a menu or the window switcher is open)"
            if why is None or (attempt >= 1 and time.monotonic() >= min(relayout, budget)):
                break
            if attempt >= 1:
                time.sleep(0.02)  # a poll interval: the shell lays out on its own main loop
        if why is None:
            why = self._icons_staleness(conn)
        if why is None and self._freshness is not None:
            why = self._freshness(budget)
        return why

    def settle_icons(self, conn: Any) -> None:
        """Wait until the kept desktop icons look as when new and their program is idle.

        A reset that emptied ~/Desktop or reloaded the settings sets their program redrawing;
        while it does, it calls services (GVfs's metadata daemon) that the reset then stops, as
        a new desktop's first reset stops them. Pixels as when new tell that a visible redraw
        is done; no CPU used for ``_ICONS_IDLE_SECONDS`` that an unseen one (the same icons
        drawn again) is. Gives up after ``_ICONS_REDRAW_SECONDS``: the staleness check decides.
        """
        fresh = self._icons
        if fresh is None or self._icons_home is None:
            return
        until = time.monotonic() + _ICONS_REDRAW_SECONDS
        ticks, since = processes.cpu_ticks(fresh.pid), time.monotonic()
        while time.monotonic() < until:
            time.sleep(0.02)  # a poll interval: the program redraws on its own main loop
            now = processes.cpu_ticks(fresh.pid)
            if now is None:
                return
            if now != ticks:
                ticks, since = now, time.monotonic()
                continue
            if time.monotonic() - since < _ICONS_IDLE_SECONDS:
                continue
            try:
                if desktop_icons.read(conn, fresh.pid, self._icons_home).digest == fresh.digest:
                    return
            except XError:  # a window of theirs went while being read
                continue

    def _icons_staleness(self, conn: Any) -> str | None:
        """Why the kept desktop icons are not as fresh as new ones; None when they are.

        Their program is checked as the window manager is (running, the windows it had), and
        their pixels must come back to a new desktop's: after a reset emptied ~/Desktop and
        reloaded the settings, the program redraws on its own main loop, so only a pixel
        difference is looked at again, until ``_ICONS_REDRAW_SECONDS``.
        """
        fresh = self._icons
        if fresh is None or self._icons_home is None:
            return None
        if processes.state(fresh.pid) not in SERVING_STATES:
            return "the desktop icons' program is not running"
        until = time.monotonic() + _ICONS_REDRAW_SECONDS
        why: str | None
        while True:
            try:
                now = desktop_icons.read(conn, fresh.pid, self._icons_home)
            except XError:  # a window of theirs went while being read (a menu closing)
                why = "their windows changed while read"
            else:
                why = desktop_icons.difference(fresh, now)
                if why is None or now.digest == fresh.digest:
                    return why
            if time.monotonic() >= until:
                return f"the desktop icons: {why}"
            time.sleep(0.02)  # a poll interval: the program redraws on its own main loop

    def _fresh_state(self, conn: Any, deadline: float) -> window_manager.WindowManagerState:
        """What the window manager just started shows, once it handles requests.

        An EWMH window manager publishes its desktops while it starts (and GNOME Shell its
        panels' room after that, ``laid_out``); until then the state is read again after
        another round trip (bounded), so a state taken mid-start is not what later resets
        compare with.
        """
        budget = min(deadline, time.monotonic() + window_manager.ANSWER_SECONDS)
        while True:
            if not window_manager.answers(conn, deadline):
                log = self._components.log_tail("wm")
                raise ProviderError(f"window manager does not answer\n{log}")
            state = window_manager.read_state(conn)
            properties = dict(state.properties)
            done = bool(properties.get("_NET_NUMBER_OF_DESKTOPS")) and (
                self._laid_out is None or self._laid_out(properties)
            )
            if done or time.monotonic() >= budget:
                return state
            if self._laid_out is not None:
                time.sleep(0.01)  # a poll interval: the shell lays out on its own main loop

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

    def _wait_for_log_line(self, log: Path, offset: int, line: str, deadline: float) -> None:
        """Wait until the window manager wrote ``line`` to its log after ``offset``.

        The log is the driver's (outside the sandbox): no program of the desktop can write it.
        """
        wanted = line.encode()
        while True:
            with open(log, "rb") as f:
                f.seek(offset)
                if wanted in f.read():
                    return
            self._check()
            if time.monotonic() >= deadline:
                tail = self._components.log_tail("wm")
                raise ProviderError(f"window manager never said {line!r}\n{tail}")
            time.sleep(0.02)

    def _wait_for_selection(self, conn: Any, selection: str, deadline: float) -> None:
        """Wait until a program owns ``selection`` (a settings manager's, say)."""
        while not window_manager.selection_owner(conn, selection):
            self._check()
            if time.monotonic() >= deadline:
                raise ProviderError(f"no program took the {selection} selection in time")
            time.sleep(0.02)  # a poll interval: the program starts on its own

    def _wait_for_window_manager(self, conn: Any, deadline: float) -> None:
        """Wait until a window manager owns the ``WM_S0`` selection (ICCCM).

        Root-window properties such as ``_NET_SUPPORTING_WM_CHECK`` outlive a killed window
        manager, so only the selection tells that the new one manages windows.
        """
        while not window_manager.selection_owner(conn):
            self._check()
            if time.monotonic() >= deadline:
                log = self._components.log_tail("wm")
                raise ProviderError(f"window manager not ready in time\n{log}")
            time.sleep(0.02)
