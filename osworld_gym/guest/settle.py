"""Event-driven settle: wait on X events and launch signals instead of comparing frames.

The ``"poll"`` settle (:mod:`osworld_gym.guest.capture`) copies the whole screen every few tens
of milliseconds and is blind to work that does not draw: a LibreOffice that loads for seconds
behind a still terminal looks settled. The ``"events"`` settle here

* wakes on X DAMAGE events on the root window (any drawing on the screen) and on window
  structure events (SubstructureNotify on the root: windows created, mapped, moved), with no
  frame copied while waiting;
* treats the desktop as busy while a launch is in progress: a process started since the last
  acting request (or still busy at the end of the previous settle) that runs on this display
  and used CPU lately, an X startup notification (``_NET_STARTUP_INFO``) not yet removed, the
  busy cursor (XFixes cursor names such as ``watch``), or a top-level window created and not
  mapped yet;
* ends once nothing is pending and the screen stayed unchanged for ``settle_quiet``, or at
  ``settle_timeout``, and says which ended it and which signals were pending or seen.

One X connection, owned by a background thread started on first use, reads the events; the
requests that wait on them share its state under a condition variable. Damage is reported
"non-empty" and re-armed (DamageSubtract) at most every ``REARM_SECONDS`` and only while a
settle is waiting, so a screen that animates between observations costs one event, not one
per frame.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from Xlib import X, display
from Xlib.ext import damage, xfixes
from Xlib.protocol import rq

logger = logging.getLogger(__name__)

SETTLE_MODES = ("poll", "events")
# Signals a settle reports (pending at its end, or seen during it).
SIGNAL_SCREEN = "screen"  # the screen changed less than settle_quiet ago
SIGNAL_WINDOWS = "windows"  # windows created/mapped/configured (SubstructureNotify)
SIGNAL_UNMAPPED = "unmapped_window"  # a top-level window created and not mapped yet
SIGNAL_PROCESS = "process"  # a process started since the last action is using CPU
SIGNAL_STARTUP = "startup"  # an X startup notification is in progress
SIGNAL_CURSOR = "busy_cursor"  # the pointer shows a busy cursor

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
REARM_SECONDS = 0.005  # at most one damage wake-up per this, whatever the frame rate
CPU_WINDOW = 0.3  # a process is busy if it used CPU within this many seconds
UNMAPPED_GRACE = 0.5  # seconds a created, unmapped top-level window counts as pending
STARTUP_TIMEOUT = 15.0  # launchers drop a startup sequence after this (startup-notification spec)
_CLK_TCK = os.sysconf("SC_CLK_TCK")


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
    cpu_ticks: int = -1
    busy_until: float = 0.0


@dataclass
class ProcessWatch:
    """New processes on this display, from ``/proc``: which are still busy launching.

    Only processes started since the last :meth:`mark` (an acting request) or still busy at
    the previous settle's end are looked at closely; the rest cost one ``listdir`` a sample.

    Attributes:
        display_name: Processes count only if their ``DISPLAY`` is this one (several local
            desktops share one machine and one user).
        proc_root: Where procfs is mounted.
    """

    display_name: str
    proc_root: str = "/proc"
    _mark_ticks: float = 0.0
    _procs: dict[int, _Proc] = field(default_factory=dict)
    _carried: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._self_pid = os.getpid()
        self.mark()

    def mark(self) -> None:
        """Note that an action begins: processes started from now on are launch candidates."""
        with self._lock:
            # One tick of slack: starttime is rounded down to the tick.
            self._mark_ticks = time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK - 1

    def busy(self, now: float) -> list[str]:
        """Names of candidate processes that used CPU within ``CPU_WINDOW`` (one sample)."""
        with self._lock:
            try:
                pids = {int(p) for p in os.listdir(self.proc_root) if p.isdigit()}
            except OSError:
                return []
            for gone in set(self._procs) - pids:
                del self._procs[gone]
            self._carried &= pids
            busy = []
            for pid in pids:
                proc = self._procs.get(pid)
                if proc is None:
                    stat = self._stat(pid)
                    if stat is None:
                        continue
                    proc = self._procs[pid] = _Proc(start_ticks=stat[1], name=stat[0])
                if pid == self._self_pid or not (
                    proc.start_ticks >= self._mark_ticks or pid in self._carried
                ):
                    continue
                if proc.ours is None:
                    proc.ours = self._on_display(pid)
                if not proc.ours:
                    continue
                stat = self._stat(pid)
                if stat is None or stat[2] == "Z":
                    continue
                if stat[3] != proc.cpu_ticks:
                    # First sight counts as busy: it just started or just used CPU.
                    proc.cpu_ticks, proc.busy_until = stat[3], now + CPU_WINDOW
                if now < proc.busy_until:
                    busy.append(proc.name)
            return busy

    def carry(self, names: Iterable[str]) -> None:
        """Keep watching the processes still busy when a settle timed out, past the next mark."""
        wanted = set(names)
        with self._lock:
            self._carried = {
                pid
                for pid, proc in self._procs.items()
                if proc.name in wanted and proc.start_ticks >= self._mark_ticks
            } | self._carried

    def _stat(self, pid: int) -> tuple[str, int, str, int] | None:
        """(name, start ticks, state, utime+stime ticks) of a process, None if it is gone."""
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

    def _on_display(self, pid: int) -> bool:
        try:
            with open(f"{self.proc_root}/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # another user's process, or gone
            return False
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
        self._startups: dict[str, float] = {}  # startup id -> began at
        self._startup_buffers: dict[int, bytes] = {}
        self._cursor_busy = False
        self._cursor_seen_busy = 0

    # --- the waiting side ------------------------------------------------------------------

    def wait(self, timeout: float, quiet: float, interval: float) -> SettleResult:
        """Wait until nothing is pending and the screen stayed still ``quiet`` seconds.

        Args:
            timeout: Seconds to wait at most.
            quiet: Seconds without damage or window events that count as settled.
            interval: Seconds between process samples while a candidate process exists.

        Raises:
            SettleUnavailableError: the display lacks the DAMAGE or XFIXES extension, or the
                event thread stopped.
        """
        self._ensure_started()
        start = time.monotonic()
        deadline = start + timeout
        seen: set[str] = set()
        wakeups = 0
        busy: list[str] = []
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
                with self._cond:
                    now = time.monotonic()
                    pending = self._pending(now, busy)
                    if self._changes > base[0]:
                        seen.add(SIGNAL_SCREEN)
                    if self._window_events > base[1]:
                        seen.add(SIGNAL_WINDOWS)
                    if self._cursor_seen_busy > base[2]:
                        seen.add(SIGNAL_CURSOR)
                    seen.update(pending)
                    quiet_at = max(self._last_change, quiet_since) + quiet
                    quiet_now = not pending and now >= quiet_at
                    if not quiet_now and now < deadline:
                        wake = min(deadline, next_sample)
                        if not pending:
                            wake = min(wake, quiet_at)
                        self._cond.wait(max(wake - now, 0.0005))
                        wakeups += 1
                        continue
                if quiet_now:
                    # Look once more: a shell may have forked the app a moment ago.
                    busy = self.processes.busy(now)
                    if not busy:
                        return SettleResult(True, "quiet", (), tuple(sorted(seen)), wakeups)
                    seen.add(SIGNAL_PROCESS)
                    next_sample = now + interval
                    continue
                if now < quiet_at:
                    pending.append(SIGNAL_SCREEN)
                self.processes.carry(busy)
                return SettleResult(
                    False,
                    "timeout",
                    tuple(sorted(set(pending))),
                    tuple(sorted(seen)),
                    wakeups,
                    tuple(sorted(set(busy))),
                )
        finally:
            with self._cond:
                self._armed -= 1

    def _pending(self, now: float, busy: list[str]) -> list[str]:
        pending = []
        if busy:
            pending.append(SIGNAL_PROCESS)
        if any(now - t < STARTUP_TIMEOUT for t in self._startups.values()):
            pending.append(SIGNAL_STARTUP)
        if self._cursor_busy:
            pending.append(SIGNAL_CURSOR)
        if any(now - t < UNMAPPED_GRACE for t in self._unmapped.values()):
            pending.append(SIGNAL_UNMAPPED)
        return pending

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
            if kind == codes["damage"]:
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
                else:
                    self._unmapped.pop(ev.window.id, None)  # type: ignore[attr-defined]
            elif kind in (X.DestroyNotify, X.ReparentNotify):
                self._last_change = now
                self._window_events += 1
                self._unmapped.pop(ev.window.id, None)  # type: ignore[attr-defined]
            elif kind == X.ClientMessage and ev.client_type in startup_atoms:  # type: ignore[attr-defined]
                self._startup_message(ev, now)
            elif kind == codes["cursor"]:
                atom = ev.name  # type: ignore[attr-defined]
                name = atoms.get(atom)
                if name is None and atom:
                    name = atoms[atom] = disp.get_atom_name(atom)
                self._cursor_busy = (name or "") in BUSY_CURSORS
                self._cursor_seen_busy += self._cursor_busy
                self._last_change = now
            else:
                return
            self._cond.notify_all()

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
