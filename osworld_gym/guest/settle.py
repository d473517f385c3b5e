"""Event-driven settle: wait on X events and launch signals instead of comparing frames.

The ``"poll"`` settle (``osworld_gym.guest.capture``) copies the whole screen every few tens
of milliseconds and is blind to work that does not draw: a LibreOffice that loads for seconds
behind a still terminal looks settled. The ``"events"`` settle here

* wakes on X DAMAGE events on the root window (any drawing on the screen) and on window
  structure events (SubstructureNotify on the root: windows created, mapped, moved), with no
  frame copied while waiting;
* treats the desktop as busy while work is pending: a process started since the last acting
  request that runs on this display and used CPU lately, an app that was idle when the action
  began and has been using CPU since (building a dialog, loading a file: silent until it
  draws), a dialog that got Enter and is still open (GTK's file chooser answers ~0.5 s
  later with nothing else to show for it), an X startup notification (``_NET_STARTUP_INFO``)
  not yet removed, the busy cursor (XFixes cursor names such as ``watch``), a top-level
  window created and not mapped yet, or one mapped and not drawn into yet (LibreOffice maps a
  dialog and paints it a moment later: until then the screen shows its window manager frame
  over what lay beneath, and keys sent then are lost);
* does not call the screen quiet while, early in the wait, a process that was still before
  the action runs (a shell that read a command line and has not forked it yet);
* holds while a process that ran when the action began has ended and the X server has not
  yet closed a client connection since (a dialog that exits on a click: its window stays on
  screen until the server reads the closed connection, which under load can come after the
  screen has been still for the quiet period), at most ``CLOSING_GRACE``;
* ends once nothing is pending and the screen stayed unchanged for ``settle_quiet``; or at
  ``settle_timeout`` when only the screen keeps changing (an animation), or at the longer
  ``settle_launch_timeout`` while work is pending (an app's first start); and says which
  ended it and which signals were pending or seen.

Processes are sampled from ``/proc`` every few tens of milliseconds while a settle waits
(``ProcessWatch``). What no signal here sees: an app's own timers that fire after it went
idle without drawing or working first.

One X connection, owned by a background thread started on first use, reads the events; the
requests that wait on them share its state under a condition variable. Damage is reported
"non-empty" and re-armed (DamageSubtract) at most every ``REARM_SECONDS`` and only while a
settle is waiting, so a screen that animates between observations costs one event, not one
per frame.
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
import time
from dataclasses import dataclass, field

import Xlib.error
from Xlib import X, Xatom, display
from Xlib.ext import damage, res, xfixes
from Xlib.protocol import rq

logger = logging.getLogger(__name__)

SETTLE_MODES = ("poll", "events")
# Signals a settle reports (pending at its end, or seen during it).
SIGNAL_SCREEN = "screen"  # the screen changed less than settle_quiet ago
SIGNAL_WINDOWS = "windows"  # windows created/mapped/configured (SubstructureNotify)
SIGNAL_UNMAPPED = "unmapped_window"  # a top-level window created and not mapped yet
SIGNAL_UNPAINTED = "unpainted_window"  # a top-level window mapped and not drawn into yet
# A top-level window was mapped before its first-paint watch existed (the event thread lagged
# behind the window manager, as under load): it pends as unpainted, drawn or not.
SIGNAL_LATE_WATCH = "late_paint_watch"  # (reported beside SIGNAL_UNPAINTED)
SIGNAL_PROCESS = "process"  # a process started since the last action is using CPU
SIGNAL_APP_BUSY = "app_busy"  # an app idle when the action began has been using CPU since
SIGNAL_STIR = "stirring"  # a process still when the action began ran lately (not yet quiet)
SIGNAL_STARTUP = "startup"  # an X startup notification is in progress
SIGNAL_CURSOR = "busy_cursor"  # the pointer shows a busy cursor
SIGNAL_DIALOG = "dialog_commit"  # Enter went to a dialog that is still open
# A process that ran when the action began ended; the X server has closed no client since.
SIGNAL_CLOSING = "closing_client"

# Cursor names toolkits use for "busy" (X cursor font names, freedesktop names, and the
# hashes Xcursor themes alias them to).
BUSY_CURSORS = frozenset(
    {
        "watch",
        "wait",
        "left_ptr_watch",
        "progress",
        "half-busy",
        "08e8e1c95fe2fc01f976f1e063a24ccd",
        "3ecb610c1bf2410f44200f48c40d3599",
    }
)
EVENTS_INTERVAL = 0.02  # seconds between process samples while waiting, at most
REARM_SECONDS = 0.005  # at most one damage wake-up per this, whatever the frame rate
# A process is busy in a sample when its main thread ran or waited to run this share of the
# time since the previous sample, plus MIN_BUSY_NS (short windows say little).
BUSY_SHARE = 0.25
MIN_BUSY_NS = 2_000_000
BUSY_HOLD = 0.06  # seconds an app that was busy still holds the settle (its event loop naps)
# ... or this share of how long it has been busy, up to MAX_BUSY_HOLD: an app that worked long
# (saved a file, built a dialog) finishes with timers (LibreOffice refreshes its toolbars a
# few hundred ms after a save), a key press in a terminal does not.
BUSY_HOLD_SHARE = 0.5
MAX_BUSY_HOLD = 0.5
LAUNCH_HOLD = 0.3  # the same for a new process (launchers wait on D-Bus, disks, children)
YOUNG_SECONDS = 5.0  # a process this young with an empty environment may be in execve()
STIR_NS = 200_000  # a process "stirs" when its main thread ran or waited this long...
STIR_FACTOR = 4.0  # ... and this many times its rate before the action
# Seconds into a wait that stirring holds it: long enough for a shell to fork what it was
# asked to run; after that an app's new timers (a caret starting to blink) must not.
STIR_WINDOW = 0.3
BACKGROUND_WINDOW = 0.2  # the shortest gap between a settle and the next action that tells
# Seconds a dialog that got Enter may stay open before that counts as its answer: GTK's file
# chooser closes ~0.5 s after Enter with no CPU, drawing or X traffic in between (its own
# timers), which no other signal sees.
DIALOG_COMMIT_GRACE = 1.0
UNMAPPED_GRACE = 0.5  # seconds a created, unmapped top-level window counts as pending
# Seconds a mapped top-level window that nothing drew into yet counts as pending: LibreOffice
# paints a dialog a few hundred ms after mapping it on a loaded 2-core host; a window that
# never draws (one left blank on purpose) costs no more than this.
UNPAINTED_GRACE = 1.0
# Seconds an ended process holds the wait for the X server to close a client: one with an X
# connection closes in milliseconds; one without (a shell around the app) costs this, rarely.
CLOSING_GRACE = 0.5
STARTUP_TIMEOUT = 15.0  # launchers drop a startup sequence after this (startup-notification spec)
_CLK_TCK = os.sysconf("SC_CLK_TCK")
# What a query on the settle's own X connection may raise: an X error, a display that is gone
# or refuses the connection (a dead desktop's acting requests must still answer).
_X_FAILURES = (
    Xlib.error.XError,
    Xlib.error.DisplayError,
    Xlib.error.ConnectionClosedError,
    OSError,
)


class SettleUnavailableError(RuntimeError):
    """The events settle cannot run on this display (an X extension is missing)."""


class _CursorNotify(rq.Event):
    """XFixes DisplayCursorNotify with the cursor's name (python-xlib's lacks it, XFixes >= 2)."""

    _code = None
    _fields = rq.Struct(
        rq.Card8("type"),
        rq.Card8("sub_code"),
        rq.Card16("sequence_number"),
        rq.Window("window"),
        rq.Card32("cursor_serial"),
        rq.Card32("timestamp"),
        rq.Card32("name"),
        rq.Pad(12),
    )


@dataclass(frozen=True)
class SettleResult:
    """How an events settle ended.

    Attributes:
        settled: The wait ended quiet (nothing pending, the screen unchanged long enough).
        end: ``"quiet"`` or ``"timeout"``.
        pending: Signals still pending when the wait ended (empty when quiet).
        seen: Signals seen at any time during the wait.
        wakeups: Times the waiting request woke up (events, process samples, deadlines).
        processes: Names of the busy processes at the end (or last seen busy).
    """

    settled: bool
    end: str
    pending: tuple[str, ...]
    seen: tuple[str, ...]
    wakeups: int
    processes: tuple[str, ...] = ()


@dataclass
class _Proc:
    start_ticks: int
    name: str = ""
    ours: bool | None = None  # runs on our display; None until its environment was read
    # At the last sample: the main thread's run + run-queue wait (ns, exact) and the whole
    # process's run time (clock ticks, all threads); -1: not sampled yet.
    main_ns: int = -1
    ticks: int = -1
    sampled_at: float = 0.0
    busy_until: float = 0.0
    busy_since: float | None = None  # start of the current stretch of busy samples
    # Busy since before the current action (a video, a spinning script): not its doing.
    background_busy: bool = False
    # Main-thread ns per second between the last observation and the action: an app's idle
    # timers (a blinking caret) are its background; stirring must stand out from it.
    background_rate: float = 0.0
    gone: bool = False  # seen ended (a zombie still listed, or its folder gone)


@dataclass(frozen=True)
class BusyProcesses:
    """One sample of ``ProcessWatch``: names of the processes keeping a settle pending.

    Attributes:
        launched: Processes started since the action began that used CPU lately.
        working: Processes that were idle when the action began and have used CPU since (an
            app building a dialog or loading a file, silent until it draws).
        stirring: Processes that ran since the previous sample noticeably more than they did
            before the action (a shell between reading a command line and forking it, an app
            waiting on its file chooser): not work to wait for, but not quiet either.
        ended: Processes that ran when the action began and have ended since (a dialog
            answered by the action): their windows go once the X server closes their
            connection.
    """

    launched: tuple[str, ...] = ()
    working: tuple[str, ...] = ()
    stirring: tuple[str, ...] = ()
    ended: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.launched or self.working)

    @property
    def names(self) -> tuple[str, ...]:
        """The launched and working ones, sorted, without repeats."""
        return tuple(sorted(set(self.launched) | set(self.working)))


@dataclass
class ProcessWatch:
    """The processes on this display, from ``/proc``: which are busy because of the last action.

    A process is busy in a sample when its main thread ran or waited for a CPU (the run queue
    counts: on a loaded host a starved app is still working) for at least ``BUSY_SHARE`` of
    the time since the previous sample, or when all its threads together ran that long (an
    app whose main thread waits on workers, as LibreOffice's threaded import does; clock-tick
    precision only). It stays busy ``BUSY_HOLD`` seconds after that, or ``BUSY_HOLD_SHARE`` of
    how long it has been busy (a new process ``LAUNCH_HOLD``), so the naps of an app's event
    loop between bursts of work, and the timers that finish a long piece of work, do not
    end the wait. Processes busy when the action began (``mark()``) are background and never
    count as busy. A busy process that ends keeps its hold: its parent may fork the next
    command of a list a moment later. A process "stirs" when its main thread ran at least
    ``STIR_NS`` since the previous sample and ``STIR_FACTOR`` times what it ran per second
    before the action, or when it waits for a CPU and has not run since the previous sample
    (unless busy in the background): a starved process shows its wait only once it runs.

    Attributes:
        display_name: Processes count only if their ``DISPLAY`` is this one (several local
            desktops share one machine and one user).
        proc_root: Where procfs is mounted.
    """

    display_name: str
    proc_root: str = "/proc"
    _mark_ticks: float = 0.0
    _procs: dict[int, _Proc] = field(default_factory=dict)
    # Processes that ended while they held the wait (name, launched?, held until): their work
    # goes on in their parent, which forks what comes next (`make && ./app`) a moment later.
    _ended: list[tuple[str, bool, float]] = field(default_factory=list)
    # Processes that ran when the action began and have ended since (names).
    _gone_since_mark: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._self_pid = os.getpid()
        self.mark()

    def mark(self, now: float | None = None) -> None:
        """Note that an action begins.

        Processes busy already become background, and each process's rate of work so far its
        background rate; processes started from now on count as launched by the action.

        Args:
            now: ``time.monotonic()`` of the mark (None: now).
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            self._ended.clear()
            # One tick of slack: starttime is rounded down to the tick.
            self._mark_ticks = time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK - 1
            for proc, main_ns, ticks, _runnable in self._sample():
                window = now - proc.sampled_at
                if proc.main_ns >= 0 and window >= BACKGROUND_WINDOW:
                    proc.background_busy = _busy(proc, main_ns, ticks, window)
                    proc.background_rate = (main_ns - proc.main_ns) / window
                # A shorter gap says too little: the process keeps its earlier verdicts.
                proc.main_ns, proc.ticks, proc.sampled_at = main_ns, ticks, now
            self._gone_since_mark.clear()  # ended before the action: not its doing

    def busy(self, now: float) -> BusyProcesses:
        """Sample the display's processes: which hold a settle now."""
        launched, working, stirring = [], [], []
        with self._lock:
            sampled = self._sample()
            self._ended = [held for held in self._ended if now < held[2]]
            for name, new, _until in self._ended:
                (launched if new else working).append(name)
            for proc, main_ns, ticks, runnable in sampled:
                new = proc.start_ticks >= self._mark_ticks
                if proc.main_ns < 0:
                    # First sight: a new process just started; an old one gets a baseline.
                    if new:
                        proc.busy_until = now + LAUNCH_HOLD
                else:
                    window = now - proc.sampled_at
                    if _busy(proc, main_ns, ticks, window) and (new or not proc.background_busy):
                        if proc.busy_since is None or now >= proc.busy_until:
                            proc.busy_since = proc.sampled_at
                        stretch = now - proc.busy_since
                        hold = min(max(BUSY_HOLD, BUSY_HOLD_SHARE * stretch), MAX_BUSY_HOLD)
                        proc.busy_until = now + (LAUNCH_HOLD if new else hold)
                    rate = 0.0 if new else proc.background_rate
                    if main_ns - proc.main_ns >= max(STIR_NS, STIR_FACTOR * rate * window):
                        stirring.append(proc.name)
                    elif runnable and main_ns == proc.main_ns and not proc.background_busy:
                        # Woken (by the action's input) and still waiting for a CPU: the
                        # kernel adds a wait to schedstat only once the wait ends, so on a
                        # loaded host a starved dialog looks idle until it has answered.
                        stirring.append(proc.name)
                proc.main_ns, proc.ticks, proc.sampled_at = main_ns, ticks, now
                if now < proc.busy_until:
                    (launched if new else working).append(proc.name)
        return BusyProcesses(
            tuple(launched), tuple(working), tuple(stirring), tuple(self._gone_since_mark)
        )

    def forget_ended(self) -> None:
        """Drop the ended processes a settle has waited for (the next one need not again)."""
        with self._lock:
            self._gone_since_mark.clear()

    def _sample(self) -> list[tuple[_Proc, int, int, bool]]:
        """One tuple per display process: (process, ns, ticks, runnable).

        ns: its main thread's run + run-queue wait; ticks: all its threads' run time; runnable:
        its main thread runs or waits for a CPU (state ``R``).
        """
        try:
            pids = {int(p) for p in os.listdir(self.proc_root) if p.isdigit()}
        except OSError:
            return []
        for gone in set(self._procs) - pids:
            proc = self._procs.pop(gone)
            self._note_gone(proc)
            if proc.busy_since is not None:
                # It worked, then ended: its hold stays (a process that never worked between
                # two samples, an `ls`, ends the wait as soon as it is gone).
                self._ended.append(
                    (proc.name, proc.start_ticks >= self._mark_ticks, proc.busy_until)
                )
        sampled = []
        for pid in pids:
            if pid == self._self_pid:
                continue
            proc = self._procs.get(pid)
            stat = None
            if proc is None:
                stat = self._stat(pid)
                if stat is None:
                    continue
                proc = self._procs[pid] = _Proc(start_ticks=stat[1], name=stat[0])
            if proc.ours is None:
                proc.ours = self._on_display(pid, proc.start_ticks)
            if not proc.ours:
                continue
            stat = stat or self._stat(pid)
            main_ns = self._main_ns(pid)
            if stat is not None and main_ns is not None and stat[2] != "Z":
                proc.name = stat[0]  # a fork's name changes when it execs
                sampled.append((proc, main_ns, stat[3], stat[2] == "R"))
                continue
            if not proc.gone:  # a zombie, or going: it ended
                self._note_gone(proc)
            if proc.busy_since is not None:
                self._ended.append(
                    (proc.name, proc.start_ticks >= self._mark_ticks, proc.busy_until)
                )
                proc.busy_since = None
        return sampled

    def _note_gone(self, proc: _Proc) -> None:
        """Count a display process that ran when the action began and has now ended."""
        if proc.ours and not proc.gone and proc.start_ticks < self._mark_ticks:
            self._gone_since_mark.append(proc.name)
        proc.gone = True

    def _main_ns(self, pid: int) -> int | None:
        """Nanoseconds the main thread ran plus waited to run; None if it is gone."""
        try:
            with open(f"{self.proc_root}/{pid}/schedstat", "rb") as f:
                fields = f.read().split()
            return int(fields[0]) + int(fields[1])
        except (OSError, IndexError, ValueError):
            return None

    def _stat(self, pid: int) -> tuple[str, int, str, int] | None:
        """(name, start ticks, state, utime + stime ticks) of a process, None if it is gone."""
        try:
            with open(f"{self.proc_root}/{pid}/stat", "rb") as f:
                data = f.read()
        except OSError:
            return None
        # The name is in parentheses and may hold spaces or parentheses itself.
        close = data.rfind(b")")
        name = data[data.find(b"(") + 1 : close].decode(errors="replace")
        fields = data[close + 2 :].split()
        try:
            return name, int(fields[19]), fields[0].decode(), int(fields[11]) + int(fields[12])
        except (IndexError, ValueError):
            return None

    def _on_display(self, pid: int, start_ticks: int) -> bool | None:
        """Whether a process runs on this display; None: cannot tell yet (ask again)."""
        try:
            with open(f"{self.proc_root}/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # another user's process, or gone
            return False
        if not environ:
            # Kernel threads have none; a process in the middle of execve() reads empty too,
            # and a young one must not be written off for that.
            age = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / _CLK_TCK
            return None if age < YOUNG_SECONDS else False
        return f"DISPLAY={self.display_name}".encode() in environ.split(b"\0")


class EventSettler:
    """The X side of the events settle: one connection, read by a background thread.

    Args:
        display_name: The X display, e.g. ``":3"``.
        processes: The process watch shared with the server (which marks actions on it).
    """

    def __init__(self, display_name: str, processes: ProcessWatch | None = None) -> None:
        self.display_name = display_name
        self.processes = processes or ProcessWatch(display_name)
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._start_error: str | None = None
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        # State below is guarded by self._cond.
        self._armed = 0
        self._arm_requests = 0
        self._arm_done = 0
        self._rearm_at: float | None = None
        self._last_change = 0.0
        self._changes = 0
        self._window_events = 0
        self._unmapped: dict[int, float] = {}  # window id -> created at
        # First-paint tracking of top-level windows (see _track_paint): a damage object per
        # window, created with the window, that reports its first drawing once.
        self._paint_damage: dict[int, int] = {}  # damage id -> window id
        self._paint_serial: dict[int, int] = {}  # window id -> serial of its DamageCreate
        self._painted: set[int] = set()
        self._frames: dict[int, int] = {}  # window manager frame -> the client window in it
        self._unpainted: dict[int, float] = {}  # window id -> mapped at, nothing drawn since
        self._late_watch: set[int] = set()  # unpainted windows mapped before their watch began
        # Late-watched windows whose damage object has yet to send the server's report of the
        # whole window at its creation (not a drawing).
        self._creation_report: set[int] = set()
        self._startups: dict[str, float] = {}  # startup id -> began at
        self._startup_buffers: dict[int, bytes] = {}
        self._cursor_busy = False
        self._cursor_seen_busy = 0
        # A second connection for the waiting side's own queries (the thread owns the first).
        self._query: display.Display | None = None
        self._query_lock = threading.Lock()
        self._commit: tuple[int, float] | None = None  # dialog window that got Enter, when
        # The X server's clients when the action began (see _x_clients); None: the server
        # lacks X-Resource, and an ended process holds nothing.
        self._clients_at_mark: frozenset[tuple[int, int]] | None = None

    # --- the acting side -------------------------------------------------------------------

    def mark_action(self, commits: bool = False) -> None:
        """Note that an acting request begins (see ``ProcessWatch.mark()``).

        Args:
            commits: The request presses Enter: if a dialog has the focus, it may answer
                late (``SIGNAL_DIALOG``), so the next settle waits for it to close, at most
                ``DIALOG_COMMIT_GRACE`` seconds.
        """
        self.processes.mark()
        clients = self._x_clients()
        dialog = self._focused_dialog() if commits else None
        with self._cond:
            self._commit = (dialog, time.monotonic()) if dialog is not None else None
            self._clients_at_mark = clients

    def _x_clients(self) -> frozenset[tuple[int, int]] | None:
        """The X server's client connections now, None if it cannot say.

        Each is (resource base, process id or -1): the server gives a closed client's base to
        the next connection, which is told apart by its process.
        """
        try:
            with self._query_lock:
                conn = self._query_connection()
                if not conn.has_extension(res.extname):
                    return None
                every = {"client": 0, "mask": res.ClientXIDMask | res.LocalClientPIDMask}
                ids = conn.res_query_client_ids([every]).ids
        except _X_FAILURES as e:
            logger.debug("no X client list from %s: %r", self.display_name, e)
            return None
        pids: dict[int, int] = {}
        for entry in ids:
            base = entry.spec.client
            if entry.spec.mask & res.LocalClientPIDMask and entry.value:
                pids[base] = int(entry.value[0])
            else:
                pids.setdefault(base, -1)
        return frozenset(pids.items())

    def _client_closed_since_mark(self) -> bool:
        """Whether a client connected when the action began has been closed by the server."""
        with self._cond:
            before = self._clients_at_mark
        if before is None:
            return True  # nothing to wait on
        now = self._x_clients()
        return now is None or bool(before - now)

    def _focused_dialog(self) -> int | None:
        """The active window if it is a dialog (transient, or typed so), else None."""
        try:
            with self._query_lock:
                conn = self._query_connection()
                root = conn.screen().root
                active = root.get_full_property(
                    conn.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW
                )
                if active is None or not active.value or not active.value[0]:
                    return None
                window = conn.create_resource_object("window", active.value[0])
                kinds = window.get_full_property(
                    conn.intern_atom("_NET_WM_WINDOW_TYPE"), Xatom.ATOM
                )
                dialog_type = conn.intern_atom("_NET_WM_WINDOW_TYPE_DIALOG")
                is_dialog = bool(kinds and dialog_type in kinds.value)
                if is_dialog or window.get_wm_transient_for() is not None:
                    return int(active.value[0])
                return None
        except _X_FAILURES as e:
            logger.debug("no focused dialog found on %s: %r", self.display_name, e)
            return None

    def _dialog_open(self, window: int) -> bool:
        try:
            with self._query_lock:
                conn = self._query_connection()
                attributes = conn.create_resource_object("window", window).get_attributes()
                return bool(attributes.map_state == X.IsViewable)
        except _X_FAILURES:
            return False  # destroyed: it answered

    def _query_connection(self) -> display.Display:
        if self._query is None:
            self._query = display.Display(self.display_name)
        return self._query

    # --- the waiting side ------------------------------------------------------------------

    def wait(
        self,
        timeout: float,
        quiet: float,
        interval: float,
        launch_timeout: float | None = None,
    ) -> SettleResult:
        """Wait until nothing is pending and the screen stayed still ``quiet`` seconds.

        Args:
            timeout: Seconds to wait at most for the screen to stop changing once nothing else
                is pending (an animation alone ends the wait here).
            quiet: Seconds without damage or window events that count as settled.
            interval: Seconds between samples of the display's processes.
            launch_timeout: Seconds to wait at most while work is pending (a launch, an app
                busy since the action, a startup notification, an unmapped window); None:
                ``timeout``. Never less than ``timeout``.

        Raises:
            SettleUnavailableError: the display lacks the DAMAGE or XFIXES extension, or the
                event thread stopped.
        """
        self._ensure_started()
        start = time.monotonic()
        deadline = start + timeout
        work_deadline = start + max(timeout, launch_timeout or 0.0)
        seen: set[str] = set()
        wakeups = 0
        busy = BusyProcesses()
        stirred_at = 0.0
        # An ended process's wait for the X server to close a client: when it began, whether
        # it is over, and when a close was seen (its windows' teardown events follow).
        closing_since: float | None = None
        closing_over = False
        closed_at = 0.0

        def stirs(sample: BusyProcesses, at: float) -> bool:
            # Only early in the wait: later, an app's new timers would hold it to the timeout.
            return bool(sample.stirring) and at - start <= STIR_WINDOW

        def closing(sample: BusyProcesses, at: float) -> bool:
            """Whether an ended process's X connection may still be open (see CLOSING_GRACE)."""
            nonlocal closing_since, closing_over, closed_at
            if closing_over or not sample.ended:
                return False
            seen.add(SIGNAL_CLOSING)
            closing_since = at if closing_since is None else closing_since
            if self._client_closed_since_mark():
                closing_over, closed_at = True, at
            elif at - closing_since >= CLOSING_GRACE:
                closing_over = True  # it had no X connection (a shell around the app)
            if closing_over:
                self.processes.forget_ended()  # a later observation of this action: no wait
            return not closing_over

        with self._cond:
            self._arm_requests += 1
            ticket = self._arm_requests
            self._armed += 1
            self._poke()
            # Until the thread re-armed damage, earlier drawing could still be reported.
            while self._arm_done < ticket and not self._closed:
                self._cond.wait(max(deadline - time.monotonic(), 0.001))
                if time.monotonic() >= deadline:
                    break
            quiet_since = time.monotonic()
            base = (self._changes, self._window_events, self._cursor_seen_busy)
        if self._start_error is not None:
            raise SettleUnavailableError(self._start_error)
        try:
            next_sample = 0.0
            while True:
                now = time.monotonic()
                if now >= next_sample:
                    busy = self.processes.busy(now)
                    next_sample = now + interval
                    self._check_commit(now)
                    if stirs(busy, now):
                        stirred_at = now
                        seen.add(SIGNAL_STIR)
                    closing(busy, now)
                with self._cond:
                    now = time.monotonic()
                    pending = self._pending(now, busy)
                    if closing_since is not None and not closing_over:
                        pending.append(SIGNAL_CLOSING)
                    if self._changes > base[0]:
                        seen.add(SIGNAL_SCREEN)
                    if self._window_events > base[1]:
                        seen.add(SIGNAL_WINDOWS)
                    if self._cursor_seen_busy > base[2]:
                        seen.add(SIGNAL_CURSOR)
                    seen.update(pending)
                    quiet_at = max(self._last_change, quiet_since, stirred_at, closed_at) + quiet
                    quiet_now = not pending and now >= quiet_at
                    limit = work_deadline if pending else deadline
                    if not quiet_now and now < limit:
                        wake = min(limit, next_sample)
                        if not pending:
                            wake = min(wake, quiet_at)
                        self._cond.wait(max(wake - now, 0.0005))
                        wakeups += 1
                        continue
                if quiet_now:
                    # Look once more: a shell may have forked the app a moment ago.
                    busy = self.processes.busy(now)
                    if stirs(busy, now):
                        stirred_at = now
                        seen.add(SIGNAL_STIR)
                    elif closing(busy, now) or closed_at == now:
                        pass  # the server closes its connection, or just did: its teardown
                    elif not busy:
                        return SettleResult(True, "quiet", (), tuple(sorted(seen)), wakeups)
                    seen.update(self._pending(now, busy))
                    next_sample = now + interval
                    continue
                if now < quiet_at:
                    pending.append(
                        SIGNAL_STIR if stirred_at >= self._last_change else SIGNAL_SCREEN
                    )
                return SettleResult(
                    False,
                    "timeout",
                    tuple(sorted(set(pending))),
                    tuple(sorted(seen)),
                    wakeups,
                    busy.names,
                )
        finally:
            with self._cond:
                self._armed -= 1

    def _pending(self, now: float, busy: BusyProcesses) -> list[str]:
        pending = []
        if busy.launched:
            pending.append(SIGNAL_PROCESS)
        if busy.working:
            pending.append(SIGNAL_APP_BUSY)
        if self._commit is not None:
            pending.append(SIGNAL_DIALOG)
        if any(now - t < STARTUP_TIMEOUT for t in self._startups.values()):
            pending.append(SIGNAL_STARTUP)
        if self._cursor_busy:
            pending.append(SIGNAL_CURSOR)
        if any(now - t < UNMAPPED_GRACE for t in self._unmapped.values()):
            pending.append(SIGNAL_UNMAPPED)
        unpainted = [w for w, t in self._unpainted.items() if now - t < UNPAINTED_GRACE]
        if unpainted:
            pending.append(SIGNAL_UNPAINTED)
        if any(w in self._late_watch for w in unpainted):
            pending.append(SIGNAL_LATE_WATCH)
        return pending

    def _check_commit(self, now: float) -> None:
        """Drop the dialog that got Enter once it closed or its grace ran out."""
        with self._cond:
            commit = self._commit
        if commit is None:
            return
        if now - commit[1] < DIALOG_COMMIT_GRACE and self._dialog_open(commit[0]):
            return
        with self._cond:
            if self._commit == commit:
                self._commit = None

    # --- the event thread ------------------------------------------------------------------

    def _ensure_started(self) -> None:
        with self._cond:
            if self._start_error is not None:
                raise SettleUnavailableError(self._start_error)
            if self._thread is not None:
                return
            try:
                disp = self._open()
            except Exception as e:  # noqa: BLE001 - any failure means the mode is unavailable
                self._start_error = f"events settle unavailable on {self.display_name}: {e}"
                raise SettleUnavailableError(self._start_error) from e
            self._thread = threading.Thread(
                target=self._run, args=(disp,), name="settle-events", daemon=True
            )
            self._thread.start()

    def _open(self) -> tuple[display.Display, int, int, int]:
        disp = display.Display(self.display_name)
        for ext in ("DAMAGE", "XFIXES"):
            if not disp.has_extension(ext):
                disp.close()
                raise RuntimeError(f"the X server lacks the {ext} extension")
        disp.damage_query_version()
        # Version 2+ adds the cursor's name to cursor events.
        disp.xfixes_query_version()
        cursor_event = disp.query_extension("XFIXES").first_event + xfixes.XFixesCursorNotify
        damage_event = disp.query_extension("DAMAGE").first_event + damage.DamageNotifyCode
        # python-xlib keeps event classes in one dict shared by every connection of the
        # process, and each new connection re-registers the extensions' own classes: a later
        # one (a capture thread's, the query connection) would swap ours back for XFixes'
        # name-less cursor event. This connection gets a dict of its own.
        shared = disp.display.event_classes
        disp.display.event_classes = {
            code: dict(value) if isinstance(value, dict) else value
            for code, value in shared.items()
        }
        disp.extension_add_subevent(
            cursor_event,
            xfixes.XFixesDisplayCursorNotify,
            _CursorNotify,
        )
        root = disp.screen().root
        root.change_attributes(
            # PropertyChange: startup notification messages are sent to the root with it.
            event_mask=X.SubstructureNotifyMask | X.PropertyChangeMask
        )
        disp.xfixes_select_cursor_input(root, xfixes.XFixesDisplayCursorNotifyMask)
        damage_id = root.damage_create(damage.DamageReportNonEmpty)
        # A window's own damage object fails on an input-only window (BadMatch) or one already
        # gone (BadDrawable): no first paint to wait for then. Other errors are logged.
        disp.set_error_handler(self._x_error)
        disp.sync()
        return disp, damage_id, damage_event, cursor_event

    def _run(self, opened: tuple[display.Display, int, int, int]) -> None:
        # python-xlib clones extension event classes per display: match on event codes.
        disp, damage_id, damage_event, cursor_event = opened
        codes = {"damage": damage_event, "cursor": cursor_event}
        atoms: dict[int, str] = {}
        startup_atoms = {
            disp.intern_atom("_NET_STARTUP_INFO_BEGIN"),
            disp.intern_atom("_NET_STARTUP_INFO"),
        }
        try:
            while not self._closed:
                with self._cond:
                    timeout = None
                    if self._rearm_at is not None:
                        timeout = max(self._rearm_at - time.monotonic(), 0.0)
                readable, _, _ = select.select([disp.fileno(), self._wake_r], [], [], timeout)
                if self._wake_r in readable:
                    os.read(self._wake_r, 4096)
                while disp.pending_events():
                    self._handle(disp, disp.next_event(), atoms, startup_atoms, codes)
                self._rearm(disp, damage_id)
        except Exception:  # noqa: BLE001 - a dead event thread must not hang waiters
            logger.exception("settle event thread on %s stopped", self.display_name)
        finally:
            with self._cond:
                self._start_error = self._start_error or "the settle event thread stopped"
                self._closed = True
                self._cond.notify_all()
            disp.close()

    def _rearm(self, disp: display.Display, damage_id: int) -> None:
        with self._cond:
            now = time.monotonic()
            asked = self._arm_requests > self._arm_done
            due = self._rearm_at is not None and now >= self._rearm_at
            if not (asked or due):
                return
        disp.damage_subtract(damage_id)
        disp.sync()  # the subtract is done: later damage is new
        with self._cond:
            now = time.monotonic()
            if due and not asked:
                # Drawing between the event and this subtract went unreported: count it now.
                self._last_change = now
                self._changes += 1
            self._rearm_at = None
            self._arm_done = self._arm_requests
            self._cond.notify_all()

    def _handle(
        self,
        disp: display.Display,
        ev: object,
        atoms: dict[int, str],
        startup_atoms: set[int],
        codes: dict[str, int],
    ) -> None:
        now = time.monotonic()
        kind = getattr(ev, "type", None)
        with self._cond:
            if kind == codes["damage"] and ev.damage in self._paint_damage:  # type: ignore[attr-defined]
                # A window's first drawing (its damage object reports once: subtracted only
                # after the server's own report at its creation, below).
                window = self._paint_damage[ev.damage]  # type: ignore[attr-defined]
                if window in self._creation_report:
                    # The server damages a viewable window whole when a damage object is made
                    # on it: not a drawing. Subtracting it lets the next drawing report.
                    self._creation_report.discard(window)
                    disp.damage_subtract(ev.damage)  # type: ignore[attr-defined]
                    disp.flush()
                    return
                self._painted.add(window)
                self._unpainted.pop(window, None)
                self._late_watch.discard(window)
                self._last_change = now
            elif kind == codes["damage"]:
                self._last_change = now
                self._changes += 1
                if self._armed and self._rearm_at is None:
                    self._rearm_at = now + REARM_SECONDS
            elif kind in (X.CreateNotify, X.MapNotify, X.ConfigureNotify, X.UnmapNotify):
                self._last_change = now
                self._window_events += 1
                if kind == X.CreateNotify:
                    created = ev  # type: ignore[assignment]
                    if not created.override and created.width > 1 and created.height > 1:
                        self._unmapped[created.window.id] = now
                        self._track_paint(disp, created.window)
                else:
                    self._unmapped.pop(ev.window.id, None)  # type: ignore[attr-defined]
                if kind == X.MapNotify:
                    self._mapped(ev, now)
                elif kind == X.UnmapNotify:
                    frame = ev.window.id  # type: ignore[attr-defined]
                    client = self._frames.get(frame, frame)
                    self._unpainted.pop(client, None)
                    self._late_watch.discard(client)
                    # Its creation report, if the server sent one, came before this event.
                    self._creation_report.discard(client)
            elif kind in (X.DestroyNotify, X.ReparentNotify):
                self._last_change = now
                self._window_events += 1
                window = ev.window.id  # type: ignore[attr-defined]
                self._unmapped.pop(window, None)
                if kind == X.ReparentNotify and ev.parent.id != ev.event.id:  # type: ignore[attr-defined]
                    # A window manager moved a client into its frame, which it maps next: the
                    # client pends from now (no longer "unmapped"), and the frame's MapNotify
                    # (the one a root listener sees) stands for the client's.
                    self._frames[ev.parent.id] = window  # type: ignore[attr-defined]
                    if window in self._paint_serial and window not in self._painted:
                        self._unpainted[window] = now
                else:
                    self._forget_window(window)
            elif kind == X.ClientMessage and ev.client_type in startup_atoms:  # type: ignore[attr-defined]
                self._startup_message(ev, now)
            elif kind == codes["cursor"]:
                atom = getattr(ev, "name", 0)
                name = atoms.get(atom)
                if name is None and atom:
                    name = atoms[atom] = disp.get_atom_name(atom)
                self._cursor_busy = (name or "") in BUSY_CURSORS
                self._cursor_seen_busy += self._cursor_busy
                self._last_change = now
            else:
                return
            self._cond.notify_all()

    def _track_paint(self, disp: display.Display, window: object) -> None:
        """Watch a new top-level window for its first drawing (caller holds ``_cond``).

        The damage object is made while the window is still unmapped (a managed window is
        mapped only after a round trip through the window manager), so nothing it draws once
        mapped can slip by; it reports the window's first drawing, its children's included,
        once, and the server frees it with the window. When this thread reads the creation
        only after the window manager mapped the window, ``_mapped()`` sees it.
        """
        self._forget_window(window.id)  # type: ignore[attr-defined]  # an id used again
        serial = disp.display.request_serial
        damage_id = window.damage_create(damage.DamageReportNonEmpty)  # type: ignore[attr-defined]
        disp.flush()
        self._paint_damage[damage_id] = window.id  # type: ignore[attr-defined]
        self._paint_serial[window.id] = serial  # type: ignore[attr-defined]

    def _mapped(self, ev: object, now: float) -> None:
        """A child of the root was mapped: its window pends until drawn into (holds ``_cond``)."""
        mapped = ev.window.id  # type: ignore[attr-defined]
        window = self._frames.get(mapped, mapped)
        serial = self._paint_serial.get(window)
        if serial is None or window in self._painted:
            # Not watched, or drawn into before (mapped again): nothing to wait for.
            return
        # The event's sequence number is that of our last request the server had done when
        # it mapped the window. A map before our DamageCreate means this thread read the
        # window's creation late (it lagged behind the window manager, as under load): the
        # window may have been drawn before the watch began, or not at all yet. It pends
        # anyway: a drawing missed costs at most the grace, while a step that ends on an
        # empty dialog loses the keys sent to it next.
        if (ev.sequence_number - serial) & 0xFFFF >= 0x8000:  # type: ignore[attr-defined]
            self._late_watch.add(window)
            self._creation_report.add(window)
        self._unpainted[window] = now
        # Old entries go here (a map is rare): windows mapped long ago pend no more anyway.
        for stale in [w for w, t in self._unpainted.items() if now - t >= UNPAINTED_GRACE]:
            del self._unpainted[stale]
            self._late_watch.discard(stale)
            self._creation_report.discard(stale)

    def _forget_window(self, window: int) -> None:
        """Drop a destroyed window's first-paint state, and its client's if it is a frame.

        A client destroyed inside its frame is reported to the frame's listeners only, not to
        the root's: its state goes with its frame, or when a new window reuses its id.
        Caller holds ``_cond``.
        """
        for gone in (window, self._frames.pop(window, None)):
            if gone is None:
                continue
            self._unpainted.pop(gone, None)
            self._late_watch.discard(gone)
            self._creation_report.discard(gone)
            self._painted.discard(gone)
            if self._paint_serial.pop(gone, None) is not None:
                for damage_id in [d for d, w in self._paint_damage.items() if w == gone]:
                    del self._paint_damage[damage_id]

    def _x_error(self, err: object, request: object = None) -> None:
        """Asynchronous X errors of the event connection: a failed window damage, or logged."""
        serial = getattr(err, "sequence_number", None)
        with self._cond:
            failed = [w for w, s in self._paint_serial.items() if s == serial]
            for window in failed:
                self._forget_window(window)
        if not failed:
            logger.debug("X error on the settle connection of %s: %s", self.display_name, err)

    def _startup_message(self, ev: object, now: float) -> None:
        """Collect a ``_NET_STARTUP_INFO`` message (20-byte pieces, NUL-terminated)."""
        window = ev.window.id  # type: ignore[attr-defined]
        chunk = bytes(ev.data[1])  # type: ignore[attr-defined]
        text = self._startup_buffers.pop(window, b"") + chunk
        end = text.find(b"\0")
        if end < 0:
            self._startup_buffers[window] = text
            return
        message = text[:end].decode(errors="replace")
        kind, _, rest = message.partition(":")
        startup_id = _startup_field(rest, "ID")
        if startup_id is None:
            return
        if kind == "new":
            self._startups[startup_id] = now
        elif kind == "remove":
            self._startups.pop(startup_id, None)

    def _poke(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:  # the pipe is full: the thread is already woken
            pass

    def close(self) -> None:
        """Stop the event thread and close its connection."""
        with self._cond:
            self._closed = True
            thread = self._thread
        self._poke()
        if thread is not None:
            thread.join(timeout=5)
        os.close(self._wake_r)
        os.close(self._wake_w)
        with self._query_lock:
            if self._query is not None:
                self._query.close()
                self._query = None


def presses_enter(body: bytes) -> bool:
    """Whether an acting request's body may press Enter (a key name, or an escaped newline).

    Cheap and loose on purpose: a false positive costs one query of the focused window.
    """
    return _ENTER.search(body) is not None


_ENTER = re.compile(rb"(?i)enter|return|\\[nr]")


def _startup_field(text: str, key: str) -> str | None:
    r"""A ``KEY=value`` of a startup-notification message (values may be quoted, ``\``-escaped)."""
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] == " ":
            i += 1
        eq = text.find("=", i)
        if eq < 0:
            return None
        name = text[i:eq]
        i, value, quoted = eq + 1, [], False
        while i < n and (quoted or text[i] != " "):
            if text[i] == "\\" and i + 1 < n:
                value.append(text[i + 1])
                i += 2
                continue
            if text[i] == '"':
                quoted = not quoted
            else:
                value.append(text[i])
            i += 1
        if name == key:
            return "".join(value)
    return None


def _busy(proc: _Proc, main_ns: int, ticks: int, window: float) -> bool:
    """Whether a process worked at least ``BUSY_SHARE`` of ``window`` since its last sample."""
    if main_ns - proc.main_ns >= BUSY_SHARE * window * 1e9 + MIN_BUSY_NS:
        return True
    thread_seconds = (ticks - proc.ticks) / _CLK_TCK
    return thread_seconds > 0 and thread_seconds >= BUSY_SHARE * window
