"""Soak test: N desktops, 1,000+ episodes under random kills; accounting, leftovers, memory.

    python benchmarks/soak.py --provider local --desktops 4 --episodes 1000 [--json soak.json]
    python benchmarks/soak.py --provider docker --desktops 4 --episodes 1000
    python benchmarks/soak.py --provider local docker qemu ...   # one soak after the other

One ``EnvPool`` of ``gym.make("OSWorld-v0")`` envs on the bundled
``ui-basics`` suite (a dialog or a terminal on a 336x224 screen; one action and DONE) runs the
requested episodes through the rollout-wise collector, ``--chunk`` episodes per collection (as
a trainer collects a batch per iteration; ``--chunk 0`` streams every episode through one
collection, which keeps no group once it has handed it over). ``--max-minutes`` starts no new
collection after that long (the requested episodes are then those of the collections started).
A seeded scripted policy plays each (task, rollout, attempt) one of four ways: the right
answer, a wrong one, FAIL at once, or WAIT until the step limit. Meanwhile a killer thread,
every ``--kill-interval`` seconds (uniform), picks a random desktop, looks at its processes,
waits a random part of ``--kill-jitter`` (so the kill lands in a reset, a step or an
evaluation, not only between calls) and SIGKILLs one of them, or SIGSTOPs it (``--stop-share``):

* local: ``xvfb``, ``sandbox`` (the init of the desktop's namespaces), ``dbus``, ``atspi``,
  ``wm`` (openbox), ``guest``, or ``app`` (any other process of the desktop: the task's
  xmessage or xterm, the shell, AT-SPI's registry);
* docker: ``container`` (``docker kill``), or ``xvfb``, ``wm``, ``guest``, ``dbus``, ``app``
  inside it, killed from the host (containers share its kernel);
* qemu: ``vm`` (the QEMU process).

Every process is checked by its start time before it is signalled, so a reused PID is never
hit; only this run's desktops are touched.

Reported per provider (a table here, everything with the fault log in ``--json``):

* episodes accounted / requested: every requested (task, rollout) must come back in its group
  exactly once, as a completed episode (scored or not) or as a defined fault outcome (cut by
  an infrastructure fault on its last try, or a reset error); re-run attempts are listed too;
* exceptions that escaped the pool's API (collection, ``call``, ``close``): must be 0; and
  the warnings and errors the library logged, by message;
* leftovers after ``close()`` (after up to ``--settle`` seconds): processes of the run (any
  process whose environment carries this run's variable, with its descendants; every marker
  seen through ``processes.find_marked``; zombie children of this process), containers (the
  docker provider's labels naming this process; every container the engine's event stream
  showed this process create, and any process still in one of their cgroups), folders (the
  run's temp folder: ``TMPDIR`` points into a private folder for the run, so the desktops'
  folders and ``osworld-gym-eval-*`` land there; the host-wide port-lock folder stays shared
  through a link), and
  stale X lock files of this run's X servers in ``/tmp``;
* memory every ``--sample-every`` episodes: this process's RSS, threads and file descriptors,
  each desktop's guest RSS and its processes' total RSS; start (first sample after
  ``--warmup`` episodes) vs end, peak, and the least-squares slope after warm-up in MB per
  1,000 episodes.

What it leaves behind is removed after the report (``--keep-leftovers`` keeps it).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import faulthandler
import gc
import io
import json
import logging
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_gym import load_tasks
from osworld_gym.actions import Click, Done, Fail, TypeText, Wait
from osworld_gym.errors import ClosedPoolError, EnvRetiredError, OSWorldGymError, ProviderError
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig, TrajectoryGroup
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.pool.state import EnvState
from osworld_gym.providers import ports, processes

SUITE = "ui-basics"
SCREEN = (336, 224)
RUN_VARIABLE = "OSWORLD_SOAK_RUN"
PROVIDERS = ("local", "docker", "qemu")
TARGETS = {
    "local": ("xvfb", "sandbox", "dbus", "atspi", "wm", "guest", "app"),
    "docker": ("container", "xvfb", "wm", "guest", "dbus", "app"),
    "qemu": ("vm",),
}
MB = 1024.0  # /proc reports kB

logger = logging.getLogger("soak")


# --- settings and records --------------------------------------------------------------------


@dataclass(frozen=True)
class SoakConfig:
    """Settings of one soak.

    Attributes:
        provider: ``"local"``, ``"docker"`` or ``"qemu"``.
        desktops: Envs in the pool (one desktop each).
        episodes: Episodes requested.
        group_size: Rollouts per task (the last group takes what is left).
        max_steps: The env's step limit.
        kill_interval: Seconds between faults, uniform in this range (0, 0: no faults).
        kill_jitter: Seconds, uniform from 0, between looking at a desktop and the kill.
        targets: What may be killed (a subset of ``TARGETS[provider]``; empty: all of them).
        stop_share: Share of faults that SIGSTOP the process instead (a hang the pool's
            ``step_timeout`` / ``reset_timeout`` must cut).
        sample_every: Episodes between memory samples.
        warmup: Episodes before the "start" memory sample.
        chunk: Episodes per collection (``collect()`` call), as a trainer collects a batch
            per iteration; 0: one collection for every episode. A collection keeps each
            finished trajectory (screenshots included) until it ends.
        max_minutes: Start no new collection after this long (0: no limit); the episodes of
            the collections started are then the ones requested.
        step_timeout: ``PoolConfig.step_timeout``.
        reset_timeout: ``PoolConfig.reset_timeout``.
        max_attempts: Tries per episode (``CollectorConfig.max_attempts``).
        settle: Seconds to wait after ``close()`` for leftovers to go before counting them.
        stall_timeout: Seconds without a finished group before the soak counts as hung (the
            pool is then closed under the collection).
        seed: Seeds the policy, the task order and the killer.
        docker_image: Image of the docker provider.
        keep_leftovers: Leave what the run left behind in place (default: removed after
            counting).
        log_path: File for the library's log records (WARNING and up).
    """

    provider: str = "local"
    desktops: int = 4
    episodes: int = 1000
    group_size: int = 4
    max_steps: int = 3
    kill_interval: tuple[float, float] = (1.0, 4.0)
    kill_jitter: float = 1.0
    targets: tuple[str, ...] = ()
    stop_share: float = 0.0
    sample_every: int = 50
    warmup: int = 100
    chunk: int = 100
    max_minutes: float = 0.0
    step_timeout: float = 60.0
    reset_timeout: float = 300.0
    max_attempts: int = 3
    settle: float = 15.0
    stall_timeout: float = 900.0
    seed: int = 0
    docker_image: str = "osworld-gym/desktop:latest"
    keep_leftovers: bool = False
    log_path: str | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {PROVIDERS}, got {self.provider!r}")
        unknown = set(self.targets) - set(TARGETS[self.provider])
        if unknown:
            raise ValueError(
                f"targets {sorted(unknown)} do not exist for {self.provider}; "
                f"choose from {TARGETS[self.provider]}"
            )
        if self.episodes < 1 or self.desktops < 1 or self.group_size < 1:
            raise ValueError("episodes, desktops and group_size must be >= 1")
        low, high = self.kill_interval
        if low < 0 or high < low:
            raise ValueError(f"kill_interval must be 0 <= low <= high, got {self.kill_interval}")
        if not 0.0 <= self.stop_share <= 1.0:
            raise ValueError(f"stop_share must be in [0, 1], got {self.stop_share}")

    @property
    def faults_enabled(self) -> bool:
        """Whether the killer runs."""
        return self.kill_interval[1] > 0

    @property
    def active_targets(self) -> tuple[str, ...]:
        """The kill targets in use."""
        return self.targets or TARGETS[self.provider]


@dataclass
class Fault:
    """One fault the killer tried to inject.

    Attributes:
        t: Seconds since the soak started.
        env_id: The env whose desktop was hit.
        target: The target kind (``guest``, ``container``, ...).
        signal: ``"SIGKILL"`` or ``"SIGSTOP"`` (``"kill"`` for ``docker kill``).
        pid: The process signalled (its host PID), if a process.
        name: Its command name, or the container's name.
        outcome: ``"hit"``; ``"gone"`` (it had exited before the signal); ``"absent"`` (the
            desktop had no such process, e.g. no app yet); ``"no-desktop"``; ``"retired"``.
    """

    t: float
    env_id: int
    target: str
    signal: str
    pid: int | None
    name: str
    outcome: str


@dataclass
class DesktopProbe:
    """What the killer and the memory sampler know of one desktop (taken in its worker).

    Attributes:
        kind: ``"local"``, ``"docker"``, ``"qemu"`` or the desktop's class name.
        components: Target kind -> PIDs (host PIDs), e.g. ``{"guest": [1234]}``.
        starts: PID -> start time in clock ticks (identity against PID reuse).
        names: PID -> command name.
        marker: The local or qemu desktop's marker.
        display: The local desktop's X display.
        container_id: The docker desktop's container.
        container_name: Its name.
    """

    kind: str
    components: dict[str, list[int]] = field(default_factory=dict)
    starts: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    marker: str | None = None
    display: str | None = None
    container_id: str | None = None
    container_name: str | None = None

    @property
    def pids(self) -> list[int]:
        """Every process of the desktop that was found."""
        return sorted({pid for pids in self.components.values() for pid in pids})


@dataclass
class Sample:
    """Memory at one point of the soak.

    Attributes:
        episodes: Episodes accounted when it was taken.
        t: Seconds since the soak started.
        driver_rss_mb: This process's RSS.
        driver_threads: Its threads.
        driver_fds: Its open file descriptors.
        guest_rss_mb: Each desktop's guest RSS (None where none was running).
        desktop_rss_mb: Each desktop's processes' total RSS.
        desktop_procs: Each desktop's process count.
        collection_held_mb: Encoded screenshots of the trajectories the running collection
            has handed back so far (its bookkeeping holds them until it ends).
        driver_py_blocks: Memory blocks the interpreter has allocated
            (``sys.getallocatedblocks``): objects kept alive grow it, allocator
            fragmentation (which RSS also shows) does not.
        driver_gc_objects: Objects the garbage collector tracks.
        driver_fd_kinds: This process's descriptors by kind (``tcp ESTABLISHED``, ``unix
            /run/docker.sock``, ``pipe``, ...).
    """

    episodes: int
    t: float
    driver_rss_mb: float
    driver_threads: int
    driver_fds: int
    guest_rss_mb: list[float | None]
    desktop_rss_mb: list[float | None]
    desktop_procs: list[int | None]
    driver_fd_kinds: dict[str, int] = field(default_factory=dict)
    collection_held_mb: float = 0.0
    driver_py_blocks: int = 0
    driver_gc_objects: int = 0

    @property
    def guest_mean_mb(self) -> float | None:
        """Mean guest RSS over the desktops that had a guest."""
        values = [v for v in self.guest_rss_mb if v is not None]
        return sum(values) / len(values) if values else None

    @property
    def desktop_mean_mb(self) -> float | None:
        """Mean desktop RSS over the desktops that were up."""
        values = [v for v in self.desktop_rss_mb if v is not None]
        return sum(values) / len(values) if values else None


@dataclass
class SoakReport:
    """Everything one soak measured (``asdict`` is the JSON).

    Attributes:
        provider: The provider.
        config: The settings.
        skipped: Why the soak did not run, or None.
        git: The checkout's commit and its uncommitted files.
        wall_seconds: Time from the pool's creation to the end of the collection.
        close_seconds: Time ``close()`` took.
        requested: Episodes requested.
        accounted: Episodes that came back with a defined outcome.
        outcomes: Accounted episodes by outcome (``complete-scored``, ``complete-unscored``,
            ``fault-final``, ``reset-error``).
        scores: Scored episodes by score.
        final_faults: The final outcome's fault kind -> count (episodes cut on their last try).
        rerun_attempts: Attempts cut by a fault and run again.
        rerun_causes: Their fault kinds -> count.
        missing: Requested (task, rollouts) that never came back, if any.
        pool_stats: ``EnvPool.stats()`` at the end of the collection.
        faults: Every fault injected.
        fault_counts: ``target/outcome`` -> count.
        exceptions: Exceptions that escaped the pool's API (where, type, message, traceback).
        log_counts: Library log records of WARNING and up, by level and message shape.
        leftovers: Kind -> what was left after ``close()`` and the settle time.
        leftovers_at_close: The same, right after ``close()`` returned.
        samples: The memory samples.
        memory: Start/end/peak/slope per measure.
    """

    provider: str
    config: dict[str, Any]
    skipped: str | None = None
    git: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    close_seconds: float = 0.0
    requested: int = 0
    accounted: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)
    final_faults: dict[str, int] = field(default_factory=dict)
    rerun_attempts: int = 0
    rerun_causes: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    pool_stats: dict[str, float] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    fault_counts: dict[str, int] = field(default_factory=dict)
    exceptions: list[dict[str, str]] = field(default_factory=list)
    log_counts: dict[str, int] = field(default_factory=dict)
    leftovers: dict[str, list[str]] = field(default_factory=dict)
    leftovers_at_close: dict[str, list[str]] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    memory: dict[str, dict[str, float | None]] = field(default_factory=dict)

    @property
    def leftover_count(self) -> int:
        """Everything left after the settle time, all kinds together."""
        return sum(len(items) for items in self.leftovers.values())

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        data = dataclasses.asdict(self)
        data["leftover_count"] = self.leftover_count
        data["samples_summary"] = [
            {"episodes": s.episodes, "guest_mean_mb": s.guest_mean_mb} for s in self.samples
        ]
        return data


# --- /proc helpers ---------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int, str] | None:
    """``(state, ppid, start time, comm)`` of a process, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    comm = raw[raw.find(b"(") + 1 : raw.rfind(b")")].decode(errors="replace")
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[19]), comm


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _rss_kb(pid: int) -> int | None:
    """VmRSS of a process in kB (None when it is gone or a zombie)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def _descendants(roots: Sequence[int]) -> list[int]:
    """``roots`` and every live process below them."""
    kids: dict[int, list[int]] = collections.defaultdict(list)
    for pid in _all_pids():
        stat = _stat(pid)
        if stat is not None and stat[0] not in ("Z", "X"):
            kids[stat[1]].append(pid)
    found: set[int] = set()
    pending = list(roots)
    while pending:
        pid = pending.pop()
        if pid not in found and _stat(pid) is not None:
            found.add(pid)
            pending.extend(kids.get(pid, ()))
    return sorted(found)


def _describe(pid: int) -> str:
    stat = _stat(pid)
    if stat is None:
        return f"{pid} (gone)"
    state, ppid, _, comm = stat
    return f"pid {pid} ppid {ppid} state {state} {comm}: {_cmdline(pid)[:160]}"


_TCP_STATES = {"01": "ESTABLISHED", "06": "TIME_WAIT", "08": "CLOSE_WAIT", "0A": "LISTEN"}


def _socket_table() -> dict[str, str]:
    """Socket inode -> ``tcp <state>`` or ``unix <path>`` for this process's network view."""
    table: dict[str, str] = {}
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/self/net/{name}").read_text().splitlines()[1:]:
                cols = line.split()
                table[cols[9]] = f"tcp {_TCP_STATES.get(cols[3], cols[3])}"
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/net/unix").read_text().splitlines()[1:]:
            cols = line.split()
            table[cols[6]] = f"unix {cols[7] if len(cols) > 7 else '(unnamed)'}"
    return table


def _fd_kinds() -> dict[str, int]:
    """This process's open descriptors by kind."""
    sockets = _socket_table()
    kinds: collections.Counter[str] = collections.Counter()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            kinds[sockets.get(target[8:-1], "socket (other)")] += 1
        elif target.startswith("pipe:"):
            kinds["pipe"] += 1
        elif target.startswith("anon_inode:"):
            kinds[f"anon {target[11:].strip('[]')}"] += 1
        else:
            kinds[f"file {os.path.dirname(target)[:60]}"] += 1
    return dict(kinds.most_common())


def _signal_if_same(pid: int, start: int | None, sig: int) -> bool:
    """Signal ``pid`` only if it is still the process that started at ``start``."""
    stat = _stat(pid)
    if stat is None or stat[0] in ("Z", "X") or (start is not None and stat[2] != start):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


# --- probing desktops (runs in the env's worker through EnvPool.call) ---------------------------


def _classify(pid: int) -> str:
    """Target kind of a process inside a container, from its command."""
    stat = _stat(pid)
    comm = stat[3] if stat else ""
    if comm == "Xvfb":
        return "xvfb"
    if comm == "openbox":
        return "wm"
    if comm == "dbus-daemon":
        return "dbus"
    if "osworld_gym.guest" in _cmdline(pid):
        return "guest"
    return "app"


def _fill_identity(probe: DesktopProbe) -> DesktopProbe:
    """Record each process's start time and name; drop the ones already gone."""
    for pid in probe.pids:
        stat = _stat(pid)
        if stat is not None and stat[0] not in ("Z", "X"):
            probe.starts[pid], probe.names[pid] = stat[2], stat[3]
    for name, pids in probe.components.items():
        probe.components[name] = [pid for pid in pids if pid in probe.starts]
    return probe


def probe_desktop(env: Any) -> DesktopProbe | None:
    """The processes of an env's desktop (None while it has none); run with ``pool.call``.

    Reaches the desktop through the env's ``desktop`` property.
    """
    desktop = env.unwrapped.desktop
    if desktop is None:
        return None
    kind = type(desktop).__name__
    if kind == "LocalDesktop":
        probe = DesktopProbe("local", marker=desktop.marker, display=desktop.display)
        known: set[int] = set()
        for name in ("xvfb", "sandbox", "dbus", "atspi", "wm", "guest"):
            try:
                pid = desktop.component_pid(name)
            except (KeyError, IndexError, OSError):
                continue  # not started (yet), or gone
            probe.components[name] = [pid]
            known.add(pid)
        apps = []
        for pid in desktop.pids():
            stat = _stat(pid)
            if pid not in known and stat is not None and stat[3] != "bwrap":
                apps.append(pid)
        probe.components["app"] = apps
        return _fill_identity(probe)
    if kind == "DockerDesktop":
        container = desktop.container
        if container is None:
            return None
        probe = DesktopProbe("docker", container_id=container.id, container_name=container.name)
        try:
            container.reload()
            init = int(container.attrs.get("State", {}).get("Pid") or 0)
        except Exception as e:  # docker errors: the container went away meanwhile
            logger.debug("probe of %s: %r", container.name, e)
            init = 0
        if init:
            for pid in _descendants([init]):
                probe.components.setdefault(_classify(pid), []).append(pid)
        return _fill_identity(probe)
    marker = getattr(desktop, "marker", None)
    probe = DesktopProbe("qemu" if kind == "QemuDesktop" else kind, marker=marker)
    vm = getattr(desktop, "pid", None)
    if isinstance(vm, int):
        probe.components["vm"] = [vm]
        probe.components["guest"] = [vm]  # the VM is the guest's memory
    if marker:
        probe.components["app"] = [p for p in processes.find_marked(marker) if p not in probe.pids]
    return _fill_identity(probe)


# --- the policy --------------------------------------------------------------------------------


class ScriptedPolicy:
    """Seeded plays of ``ui-basics``: per (task, rollout, attempt) right, wrong, FAIL or idle.

    Args:
        seed: Varies the plays.
        max_steps: The env's step limit (the idle play waits until it).
    """

    PLAYS = (("right", 0.5), ("wrong", 0.2), ("fail", 0.1), ("idle", 0.2))

    def __init__(self, seed: int, max_steps: int) -> None:
        self.seed, self.max_steps = seed, max_steps
        self.layouts = {t.id: t.raw.get("ui_basics", {}) for t in load_tasks(SUITE)}
        self.plays: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()  # calls run on several threads at once

    def _answer(self, task_id: str, right: bool) -> Any:
        layout = self.layouts[task_id]
        if layout.get("action") == "type":
            return TypeText(text=f"{layout['answer'] if right else 'wrong'}\n")
        buttons = layout["buttons"]
        label = layout["answer"]
        if not right:
            label = next(name for name in buttons if name != layout["answer"])
        x, y, width, height = buttons[label]
        return Click(x=x + width // 2, y=y + height // 2)

    def plan(self, task_id: str, rollout: int, attempt: int) -> tuple[str, list[Any]]:
        """The play and its actions for one attempt of one rollout."""
        rng = random.Random(f"{self.seed}:{task_id}:{rollout}:{attempt}")
        names, weights = zip(*self.PLAYS, strict=True)
        play = rng.choices(names, weights)[0]
        if play == "right":
            return play, [self._answer(task_id, True), Done()]
        if play == "wrong":
            return play, [self._answer(task_id, False), Done()]
        if play == "fail":
            return play, [Fail()]
        return play, [Wait(seconds=0.05)] * self.max_steps

    def __call__(self, requests: list[PolicyRequest]) -> list[Any]:
        """One action per waiting env."""
        actions = []
        for request in requests:
            play, plan = self.plan(request.task_id, request.rollout, request.trajectory.attempt)
            if request.step == 0:
                with self._lock:
                    self.plays[play] += 1
            actions.append(plan[min(request.step, len(plan) - 1)])
        return actions


# --- the killer --------------------------------------------------------------------------------


class Killer:
    """A thread that injects faults into random desktops of a pool until stopped."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.config = soak.config
        self.rng = random.Random(f"killer:{self.config.seed}")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="soak-killer", daemon=True)
        self._docker: Any = None

    def start(self) -> None:
        """Start injecting."""
        if self.config.faults_enabled:
            self.thread.start()

    def join(self) -> None:
        """Stop injecting and wait for the thread."""
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        if self._docker is not None:
            self._docker.close()

    def _run(self) -> None:
        while not self.stop.wait(self.rng.uniform(*self.config.kill_interval)):
            try:
                self._one()
            except ClosedPoolError as e:
                if not self.stop.is_set():
                    self.soak.record_exception("killer: pool.call", e)
                return
            except Exception as e:  # a pool error, or a fault of the killer itself
                self.soak.record_exception("killer", e)

    def _one(self) -> None:
        """Look at a random desktop, pick one of its processes (or its container), hit it."""
        pool = self.soak.pool
        assert pool is not None
        live = [i for i in pool.live_env_ids if pool.env_state(i) is not EnvState.RETIRED]
        if not live:
            return
        env_id = self.rng.choice(live)
        try:
            (probe,) = pool.call(probe_desktop, env_ids=[env_id])
        except EnvRetiredError:
            self._log(env_id, "-", "-", None, "", "retired")
            return
        if probe is None:
            self._log(env_id, "-", "-", None, "", "no-desktop")
            return
        self.soak.note_probe(probe)
        present = [
            t
            for t in self.config.active_targets
            if probe.components.get(t) or (t == "container" and probe.container_id)
        ]
        if not present:
            self._log(env_id, "-", "-", None, "", "absent")
            return
        target = self.rng.choice(present)
        stop = target != "container" and self.rng.random() < self.config.stop_share
        if self.stop.wait(self.rng.uniform(0.0, self.config.kill_jitter)):
            return
        if target == "container":
            self._kill_container(env_id, probe)
            return
        pid = self.rng.choice(probe.components[target])
        hit = _signal_if_same(pid, probe.starts[pid], signal.SIGSTOP if stop else signal.SIGKILL)
        self._log(
            env_id,
            target,
            "SIGSTOP" if stop else "SIGKILL",
            pid,
            probe.names.get(pid, ""),
            "hit" if hit else "gone",
        )

    def _kill_container(self, env_id: int, probe: DesktopProbe) -> None:
        from osworld_gym.providers.docker.client import docker_sdk
        from osworld_gym.providers.docker.provider import PID_LABEL

        name = probe.container_name or ""
        if probe.container_id is None:
            self._log(env_id, "container", "kill", None, name, "absent")
            return
        if self._docker is None:
            self._docker = _docker_client()
        errors = docker_sdk().errors
        try:
            container = self._docker.containers.get(probe.container_id)
            if container.labels.get(PID_LABEL) != str(os.getpid()):
                raise RuntimeError(f"{name} is not this process's container")  # never ours
            container.kill()
        except (errors.NotFound, errors.APIError):  # removed, or no longer running
            self._log(env_id, "container", "kill", None, name, "gone")
            return
        self._log(env_id, "container", "kill", None, name, "hit")

    def _log(
        self, env_id: int, target: str, sig: str, pid: int | None, name: str, outcome: str
    ) -> None:
        fault = Fault(self.soak.elapsed(), env_id, target, sig, pid, name, outcome)
        self.soak.report.faults.append(fault)
        logger.debug("fault: %s", fault)


def _docker_client() -> Any:
    from osworld_gym.providers.docker.client import connect

    return connect()


class ContainerWatcher:
    """Follows the engine's event stream: every container this process creates, and removes.

    The engine answers ``since`` queries from a short in-memory buffer (other users' events
    push ours out), so the stream is read live from the start of the soak.
    """

    def __init__(self) -> None:
        from osworld_gym.providers.docker.provider import PID_LABEL

        self.label = f"{PID_LABEL}={os.getpid()}"
        self.created: set[str] = set()
        self.destroyed: set[str] = set()
        self._changed = threading.Condition()
        self._client = _docker_client()
        self._stream = self._client.events(
            filters={"type": "container", "label": self.label}, decode=True
        )
        self._thread = threading.Thread(target=self._run, name="soak-docker-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._stream:
                action, cid = event.get("Action"), event.get("id", "")
                with self._changed:
                    if action == "create":
                        self.created.add(cid)
                    elif action == "destroy":
                        self.destroyed.add(cid)
                    self._changed.notify_all()
        except Exception as e:  # the stream closed under the iteration: the watch is over
            logger.debug("docker event stream ended: %r", e)

    def close(self) -> None:
        """Stop following, once every container seen created was seen removed (bounded).

        Events trail the API calls that cause them by a few milliseconds.
        """
        with self._changed:
            self._changed.wait_for(lambda: self.created <= self.destroyed, timeout=10.0)
        self._stream.close()
        self._thread.join(timeout=10)
        self._client.close()


# --- log counting ------------------------------------------------------------------------------


class LogCounter(logging.Handler):
    """Counts library log records of WARNING and up by level and message shape."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: collections.Counter[str] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        """Count one record (digits and hex runs folded, the first 90 characters kept)."""
        try:
            message = record.getMessage().splitlines()[0] if record.getMessage() else ""
        except (TypeError, ValueError):
            message = str(record.msg)
        shape = re.sub(r"\b[0-9a-f]{8,}\b|\d+(\.\d+)?", "#", message)[:90]
        self.counts[f"{record.levelname} {record.name}: {shape}"] += 1


# --- one soak ----------------------------------------------------------------------------------


def _git_state() -> dict[str, Any]:
    repo = Path(__file__).resolve().parents[1]
    state: dict[str, Any] = {}
    for key, argv in (("commit", ["rev-parse", "HEAD"]), ("dirty", ["status", "--short"])):
        try:
            done = subprocess.run(
                ["git", "-C", str(repo), *argv], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            state[key] = f"unknown ({e})"
            continue
        state[key] = done.stdout.strip() if key == "commit" else done.stdout.split("\n")[:40]
    if isinstance(state.get("dirty"), list):
        state["dirty"] = [line for line in state["dirty"] if line]
    return state


def _slope_per_1000(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of value over episodes, per 1,000 episodes."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return None
    cov = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return cov / var * 1000


def _series_summary(points: list[tuple[int, float]], warmup: int) -> dict[str, float | None]:
    after = [(x, y) for x, y in points if x >= warmup] or points[-1:]
    return {
        "first": points[0][1] if points else None,
        "start": after[0][1] if after else None,
        "end": points[-1][1] if points else None,
        "peak": max(y for _, y in points) if points else None,
        "slope_per_1000_episodes": _slope_per_1000(after),
        "start_episodes": after[0][0] if after else None,
        "end_episodes": points[-1][0] if points else None,
    }


class Soak:
    """One soak on one provider; ``run()`` returns its report."""

    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.report = SoakReport(
            provider=config.provider, config=dataclasses.asdict(config), requested=config.episodes
        )
        self.pool: EnvPool | None = None
        self.started = time.monotonic()
        self.run_id = uuid.uuid4().hex[:12]
        self.root = Path(tempfile.mkdtemp(prefix="osworld-soak-"))
        self.tmp = self.root / "tmp"
        self.markers: set[str] = set()
        self.xvfb: dict[int, str] = {}  # our X servers' PIDs -> display
        self.children_before = {p.pid for p in _children()}
        self.last_progress = time.monotonic()
        self._lock = threading.Lock()
        self.collection_held = 0  # bytes of screenshots the running collection still holds
        self._next_sample = 0  # episodes accounted at which the next memory sample is due

    def elapsed(self) -> float:
        """Seconds since the soak started."""
        return round(time.monotonic() - self.started, 2)

    def record_exception(self, where: str, error: BaseException | None) -> None:
        """Count an exception that escaped the pool's API."""
        if error is None:
            return
        with self._lock:
            self.report.exceptions.append(
                {
                    "where": where,
                    "type": type(error).__name__,
                    "message": str(error)[:2000],
                    "traceback": "".join(traceback.format_exception(error))[-4000:],
                    "t": str(self.elapsed()),
                }
            )
        logger.error("exception from %s: %r", where, error)

    def note_probe(self, probe: DesktopProbe) -> None:
        """Remember the desktop's marker and X server (for the leftover checks)."""
        with self._lock:
            if probe.marker:
                self.markers.add(probe.marker)
            for pid in probe.components.get("xvfb", []) if probe.kind == "local" else []:
                self.xvfb[pid] = probe.display or ""

    # --- set-up -------------------------------------------------------------------------

    def _provider_config(self) -> Any:
        if self.config.provider == "local":
            from osworld_gym.providers.local.provider import LocalProviderConfig

            return LocalProviderConfig(screen_size=SCREEN)
        if self.config.provider == "docker":
            from osworld_gym.providers.docker.provider import DockerProviderConfig

            return DockerProviderConfig(
                image=self.config.docker_image, screen_size=SCREEN, cpus=1.0, memory="1g"
            )
        from osworld_gym.providers.qemu.provider import QemuProviderConfig

        return QemuProviderConfig.from_built_image(screen_size=SCREEN)

    def _precheck(self) -> str | None:
        """Why this provider cannot run here, or None."""
        if self.config.provider == "docker":
            try:
                client = _docker_client()
            except (OSWorldGymError, ImportError) as e:
                return f"no Docker engine answers ({e}); start one: bash scripts/start_docker.sh"
            try:
                client.images.get(self.config.docker_image)
            except Exception as e:  # docker.errors.ImageNotFound and API errors
                return (
                    f"image {self.config.docker_image} is not on the engine ({e}); build it: "
                    "bash scripts/build_guest_image.sh"
                )
            finally:
                client.close()
        if self.config.provider == "qemu":
            try:
                self._provider_config()
            except ProviderError as e:
                return f"no cached qemu image: {e}"
        return None

    def _tasks(self) -> tuple[list[str], list[int]]:
        ids = list(load_tasks(SUITE).ids)
        rng = random.Random(f"tasks:{self.config.seed}")
        tasks: list[str] = []
        sizes: list[int] = []
        left = self.config.episodes
        order: list[str] = []
        while left > 0:
            if not order:
                order = rng.sample(ids, len(ids))
            size = min(self.config.group_size, left)
            tasks.append(order.pop())
            sizes.append(size)
            left -= size
        return tasks, sizes

    # --- the run ------------------------------------------------------------------------

    def run(self) -> SoakReport:
        """Soak, close, count leftovers, clean up; never raises for what it measures."""
        self.report.git = _git_state()
        reason = self._precheck()
        if reason:
            self.report.skipped = reason
            shutil.rmtree(self.root, ignore_errors=True)
            return self.report
        counter = LogCounter()
        handlers: list[logging.Handler] = [counter]
        if self.config.log_path:
            handler = logging.FileHandler(self.config.log_path)
            handler.setLevel(logging.WARNING)
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s %(threadName)s %(message)s")
            )
            handlers.append(handler)
        root_logger = logging.getLogger()
        saved_level = root_logger.level
        root_logger.setLevel(logging.WARNING)
        for handler in handlers:
            root_logger.addHandler(handler)
        try:
            with self._private_temp():
                self._soak()
            self.report.log_counts = dict(counter.counts.most_common())
        finally:
            for handler in handlers:
                root_logger.removeHandler(handler)
                handler.close()
            root_logger.setLevel(saved_level)
        self._clean_up()
        return self.report

    @contextlib.contextmanager
    def _private_temp(self) -> Iterator[None]:
        """Point the temp folder and a run variable of this process at the run.

        The host-wide folder of port locks stays shared (a link to it): this run's desktops
        must not take ports that other osworld-gym processes on the host hold.
        """
        self.tmp.mkdir()
        shared = ports.default_lock_dir()
        if not shared.exists():
            shared.mkdir(parents=True, exist_ok=True)
            shared.chmod(0o1777)  # as the library makes it: shared by every user
        (self.tmp / shared.name).symlink_to(shared)
        saved = {k: os.environ.get(k) for k in ("TMPDIR", RUN_VARIABLE)}
        saved_tempdir = tempfile.tempdir
        os.environ["TMPDIR"] = str(self.tmp)
        os.environ[RUN_VARIABLE] = self.run_id
        tempfile.tempdir = str(self.tmp)
        try:
            yield
        finally:
            tempfile.tempdir = saved_tempdir
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def _spec(self) -> EnvSpec:
        return EnvSpec(
            entry_point="OSWorld-v0",  # gym.make, as users build it
            kwargs={
                "tasks": SUITE,
                "action_format": "structured",
                "screen_size": SCREEN,
                "max_steps": self.config.max_steps,
                "provider": self._provider_config(),
                "offline": True,
            },
        )

    def _soak(self) -> None:
        config = self.config
        pool_config = PoolConfig(
            max_concurrent_resets=config.desktops,
            step_timeout=config.step_timeout,
            reset_timeout=config.reset_timeout,
        )
        self.started = time.monotonic()
        watcher = ContainerWatcher() if config.provider == "docker" else None
        try:
            self.pool = EnvPool(self._spec(), num_envs=config.desktops, config=pool_config)
        except Exception as e:  # the pool could not even start: report, count nothing more
            self.record_exception("EnvPool()", e)
            if watcher is not None:
                watcher.close()
            return
        killer = Killer(self)
        stall = threading.Event()
        watchdog = threading.Thread(
            target=self._watch_for_stall, args=(stall,), name="soak-watchdog", daemon=True
        )
        policy = ScriptedPolicy(config.seed, config.max_steps)
        try:
            watchdog.start()
            killer.start()
            self._collect(policy)
        finally:
            killer.join()
            stall.set()
            watchdog.join()
            self.report.wall_seconds = self.elapsed()
            self._sample()
            with contextlib.suppress(ClosedPoolError):
                self.report.pool_stats = self.pool.stats()
            close_start = time.monotonic()
            try:
                self.pool.close()
            except Exception as e:  # counted: close() must not raise
                self.record_exception("pool.close", e)
            self.report.close_seconds = round(time.monotonic() - close_start, 2)
        self.report.fault_counts = dict(
            collections.Counter(f"{f.target}/{f.outcome}" for f in self.report.faults)
        )
        self.report.config["plays"] = dict(policy.plays)
        if watcher is not None:
            watcher.close()
        self._count_leftovers(watcher)

    def _collect(self, policy: ScriptedPolicy) -> None:
        """Run every requested group, ``chunk`` episodes per collection."""
        tasks, sizes = self._tasks()
        groups = list(zip(tasks, sizes, strict=True))
        chunks: list[list[tuple[str, int]]] = [[]]
        for group in groups:
            if self.config.chunk and sum(n for _, n in chunks[-1]) >= self.config.chunk:
                chunks.append([])
            chunks[-1].append(group)
        left = list(chunks)
        budget = self.config.max_minutes * 60
        while left:
            if budget and time.monotonic() - self.started > budget:
                self.report.requested -= sum(n for c in left for _, n in c)
                self.report.config["stopped_by_time_budget"] = True
                return
            pending = left.pop(0)
            open_ = self._collect_chunk(policy, pending)
            self.report.missing.extend(f"never came back: {t} x{n}" for t, n in pending)
            if not open_:
                self.report.missing.extend(f"never started: {t} x{n}" for c in left for t, n in c)
                return

    def _collect_chunk(self, policy: ScriptedPolicy, pending: list[tuple[str, int]]) -> bool:
        """One collection (a fresh one after an exception); False once the pool is closed."""
        assert self.pool is not None
        for _ in range(4):
            self.collection_held = 0
            collector = RolloutCollector(
                self.pool,
                policy,
                CollectorConfig(
                    group_size=self.config.group_size,
                    max_attempts=self.config.max_attempts,
                    policy_concurrency=self.config.desktops,
                    seed=self.config.seed,
                ),
            )
            try:
                for group in collector.groups([t for t, _ in pending], [n for _, n in pending]):
                    self.collection_held += account(self.report, group, pending)
                    self.last_progress = time.monotonic()
                    if self.report.accounted >= self._next_sample:
                        self._sample()
                        self._next_sample += self.config.sample_every
            except ClosedPoolError as e:
                self.record_exception("collector.groups", e)
                return False
            except Exception as e:  # anything else escaping the collection is a finding
                self.record_exception("collector.groups", e)
            else:
                break
        self.collection_held = 0
        return True

    def _watch_for_stall(self, stop: threading.Event) -> None:
        while not stop.wait(5.0):
            if time.monotonic() - self.last_progress > self.config.stall_timeout:
                stacks = io.StringIO()
                with tempfile.TemporaryFile("w+") as dump:
                    faulthandler.dump_traceback(dump, all_threads=True)
                    dump.seek(0)
                    stacks.write(dump.read())
                self.record_exception(
                    "stall",
                    TimeoutError(
                        f"no group finished for {self.config.stall_timeout:g} s; "
                        f"threads:\n{stacks.getvalue()[-3000:]}"
                    ),
                )
                assert self.pool is not None
                self.pool.close()  # unblocks the collection with ClosedPoolError
                return

    # --- memory -------------------------------------------------------------------------

    def _sample(self) -> None:
        assert self.pool is not None
        live = [i for i in self.pool.live_env_ids]
        try:
            probes = self.pool.call(probe_desktop, env_ids=live) if live else []
        except ClosedPoolError:
            return
        except OSWorldGymError as e:
            self.record_exception("sampler: pool.call", e)
            return
        guests: list[float | None] = []
        totals: list[float | None] = []
        counts: list[int | None] = []
        for probe in probes:
            if probe is None:
                guests.append(None)
                totals.append(None)
                counts.append(None)
                continue
            self.note_probe(probe)
            guest = [_rss_kb(p) for p in probe.components.get("guest", [])]
            guest_kb = [kb for kb in guest if kb is not None]
            guests.append(sum(guest_kb) / MB if guest_kb else None)
            rss = [kb for kb in (_rss_kb(p) for p in probe.pids) if kb is not None]
            totals.append(sum(rss) / MB if rss else None)
            counts.append(len(rss))
        me = Path("/proc/self")
        sample = Sample(
            episodes=self.report.accounted,
            t=self.elapsed(),
            driver_rss_mb=(_rss_kb(os.getpid()) or 0) / MB,
            driver_threads=len(os.listdir(me / "task")),
            driver_fds=len(os.listdir(me / "fd")),
            guest_rss_mb=guests,
            desktop_rss_mb=totals,
            desktop_procs=counts,
            driver_fd_kinds=_fd_kinds(),
            collection_held_mb=round(self.collection_held / 2**20, 2),
            driver_py_blocks=sys.getallocatedblocks(),
            driver_gc_objects=len(gc.get_objects()),
        )
        self.report.samples.append(sample)
        mean = sample.guest_mean_mb
        print(
            f"  [{self.config.provider}] {sample.episodes:>5}/{self.config.episodes} episodes "
            f"t={sample.t:7.1f}s faults={len(self.report.faults):>4} "
            f"driver={sample.driver_rss_mb:6.1f}MB thr={sample.driver_threads} "
            f"fds={sample.driver_fds} guest~{'-' if mean is None else f'{mean:.1f}'}MB",
            flush=True,
        )

    def _summarise_memory(self) -> None:
        samples = self.report.samples
        warmup = self.config.warmup
        series: dict[str, list[tuple[int, float]]] = {
            "driver_rss_mb": [(s.episodes, s.driver_rss_mb) for s in samples],
            "driver_threads": [(s.episodes, float(s.driver_threads)) for s in samples],
            "driver_fds": [(s.episodes, float(s.driver_fds)) for s in samples],
            "collection_held_mb": [(s.episodes, s.collection_held_mb) for s in samples],
            "driver_py_kblocks": [(s.episodes, s.driver_py_blocks / 1000) for s in samples],
            "driver_gc_kobjects": [(s.episodes, s.driver_gc_objects / 1000) for s in samples],
            "guest_rss_mb_mean": [
                (s.episodes, s.guest_mean_mb) for s in samples if s.guest_mean_mb is not None
            ],
            "desktop_rss_mb_mean": [
                (s.episodes, s.desktop_mean_mb) for s in samples if s.desktop_mean_mb is not None
            ],
        }
        self.report.memory = {
            name: _series_summary(points, warmup) for name, points in series.items()
        }

    # --- leftovers ------------------------------------------------------------------------

    def _count_leftovers(self, watcher: ContainerWatcher | None) -> None:
        self._summarise_memory()
        self.report.leftovers_at_close = self._leftovers(watcher)
        deadline = time.monotonic() + self.config.settle
        leftovers = self.report.leftovers_at_close
        while any(leftovers.values()) and time.monotonic() < deadline:
            threading.Event().wait(0.5)
            leftovers = self._leftovers(watcher)
        self.report.leftovers = leftovers

    def _leftovers(self, watcher: ContainerWatcher | None) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {
            "processes": [_describe(p) for p in self._run_processes()],
            "zombie_children": [
                f"pid {p.pid} {p.name}"
                for p in _children()
                if p.zombie and p.pid not in self.children_before
            ],
            "folders": self._folders_left(),
        }
        if self.config.provider == "local":
            found["x_locks"] = self._stale_x_locks()
        if watcher is not None:
            found["containers"], found["container_processes"] = self._docker_leftovers(watcher)
        return found

    def _folders_left(self) -> list[str]:
        """What is left in the run's temp folder (the link to the port locks aside)."""
        if not self.tmp.is_dir():
            return []
        lock_link = self.tmp / ports.default_lock_dir().name
        left = []
        for entry in sorted(self.tmp.iterdir()):
            if entry == lock_link and entry.is_symlink():
                continue
            inside = sorted(p.name for p in entry.iterdir())[:8] if entry.is_dir() else []
            left.append(f"{entry} {inside}" if inside else str(entry))
        return left

    def _run_processes(self) -> list[int]:
        """Live processes of this run: the run variable, a marker seen, or this run's folder."""
        entry = f"{RUN_VARIABLE}={self.run_id}".encode()
        markers = {processes.marker_entry(m) for m in self.markers}
        root = str(self.root).encode()
        roots = []
        for pid in _all_pids():
            if pid == os.getpid():
                continue
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                environ = []
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                cmdline = b""
            if entry in environ or markers.intersection(environ) or root in cmdline:
                roots.append(pid)
        for marker in self.markers:
            roots.extend(processes.find_marked(marker))
        live = []
        for pid in _descendants(roots):
            stat = _stat(pid)
            if pid != os.getpid() and stat is not None and stat[0] not in ("Z", "X"):
                live.append(pid)
        return live

    def _stale_x_locks(self) -> list[str]:
        """``/tmp/.X<n>-lock`` files naming one of this run's X servers that is gone."""
        stale = []
        for pid, display in sorted(self.xvfb.items()):
            lock = Path(f"/tmp/.X{display.lstrip(':')}-lock")
            try:
                holder = int(lock.read_text().strip())
            except (OSError, ValueError):
                continue
            if holder == pid and _stat(pid) is None:
                stale.append(f"{lock} (Xvfb {pid}, gone)")
        return stale

    def _docker_leftovers(self, watcher: ContainerWatcher) -> tuple[list[str], list[str]]:
        """This process's containers still on the engine, and processes still in their cgroups."""
        client = _docker_client()
        try:
            containers = [
                f"{c.name} ({c.status})"
                for c in client.containers.list(all=True, filters={"label": watcher.label})
            ]
        finally:
            client.close()
        self.report.config["containers_created"] = len(watcher.created)
        self.report.config["containers_removed"] = len(watcher.created & watcher.destroyed)
        ids = {cid for cid in watcher.created if cid}
        stray = []
        for pid in _all_pids():
            try:
                cgroup = Path(f"/proc/{pid}/cgroup").read_text()
            except OSError:
                continue
            if any(cid in cgroup for cid in ids) and (_stat(pid) or ("Z",))[0] not in ("Z", "X"):
                stray.append(_describe(pid))
        return containers, stray

    def _clean_up(self) -> None:
        """Remove what the run left behind (after it was counted), unless asked to keep it."""
        if self.config.keep_leftovers:
            print(f"  leftovers kept under {self.root}", flush=True)
            return
        for pid in self._run_processes():
            _signal_if_same(pid, None, signal.SIGKILL)
        if self.config.provider == "docker" and self.report.leftovers.get("containers"):
            from osworld_gym.providers.docker.provider import PID_LABEL

            client = _docker_client()
            try:
                label = f"{PID_LABEL}={os.getpid()}"
                for container in client.containers.list(all=True, filters={"label": label}):
                    container.remove(force=True)
            finally:
                client.close()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class _Child:
    pid: int
    name: str
    zombie: bool


def _children() -> list[_Child]:
    me = os.getpid()
    found = []
    for pid in _all_pids():
        stat = _stat(pid)
        if stat is not None and stat[1] == me:
            found.append(_Child(pid, stat[3], stat[0] == "Z"))
    return found


def account(report: SoakReport, group: TrajectoryGroup, pending: list[tuple[str, int]]) -> int:
    """Count a group's episodes into ``report`` and take it off ``pending``.

    Every trajectory must carry a defined outcome: ``reset-error`` (its reset failed for a
    reason the pool does not retry), ``fault-final`` (cut by an infrastructure fault on its
    last try), or ``complete-scored`` / ``complete-unscored`` (DONE, FAIL or the step limit).
    The group's lists are emptied (only the counts are kept).

    Returns:
        Bytes of the encoded screenshots of the group's trajectories (the collection that
        handed the group back still holds them until it ends).
    """
    size = len(group.trajectories)
    try:
        pending.remove((group.task_id, size))
    except ValueError:
        report.missing.append(f"unrequested group {group.task_id} x{size}")
    rollouts = [t.rollout for t in group.trajectories]
    if rollouts != list(range(size)):
        report.missing.append(f"{group.task_id}: rollouts {rollouts}")
    for trajectory in group.trajectories:
        outcome = None
        if trajectory.error is not None:
            outcome = "reset-error"
            kind = f"reset: {trajectory.error.split(':', 1)[0]}"
            report.final_faults[kind] = report.final_faults.get(kind, 0) + 1
        elif trajectory.infra_error is not None:
            outcome = "fault-final"
            kind = _fault_kind(trajectory.infra_error)
            report.final_faults[kind] = report.final_faults.get(kind, 0) + 1
        elif trajectory.terminated or trajectory.truncated:
            outcome = "complete-scored" if trajectory.score is not None else "complete-unscored"
            if trajectory.score is not None:
                key = f"{trajectory.score:g}"
                report.scores[key] = report.scores.get(key, 0) + 1
        if outcome is None:
            report.missing.append(f"{group.task_id}#{trajectory.rollout}: no outcome")
            continue
        report.outcomes[outcome] = report.outcomes.get(outcome, 0) + 1
        report.accounted += 1
    held = sum(t.nbytes() for t in group.trajectories)
    for attempt in group.discarded:
        report.rerun_attempts += 1
        kind = _fault_kind(attempt.infra_error or "?")
        report.rerun_causes[kind] = report.rerun_causes.get(kind, 0) + 1
    group.trajectories.clear()
    group.discarded.clear()
    return held


def _fault_kind(infra_error: str) -> str:
    """The exception type named at the start of an ``info["infra_error"]``."""
    text = infra_error.removeprefix("worker crash: ")
    kind = text.split(":", 1)[0].strip()
    return f"worker crash: {kind}" if infra_error.startswith("worker crash") else kind


def run_soak(config: SoakConfig) -> SoakReport:
    """Run one soak and return its report (``report.skipped`` says why it did not run)."""
    return Soak(config).run()


# --- printing ----------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def format_report(report: SoakReport) -> str:
    """The report as a table."""
    c = report.config
    if report.skipped:
        return f"\nsoak {report.provider}: SKIPPED: {report.skipped}"
    lines = []
    rate = report.accounted / report.wall_seconds * 60 if report.wall_seconds else 0.0
    budget = (
        f" (of {c['episodes']} planned: time budget of {c['max_minutes']:g} min reached)"
        if c.get("stopped_by_time_budget")
        else ""
    )
    lines.append(
        f"\nsoak {report.provider}: {c['desktops']} desktops, {report.requested} episodes "
        f"requested{budget}, {report.wall_seconds:.0f} s ({rate:.1f} episodes/min), close "
        f"{report.close_seconds:.1f} s"
    )
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items()))
    lines.append(
        f"{'episodes':<11}accounted {report.accounted}/{report.requested} ({outcomes}); "
        f"scores {dict(sorted(report.scores.items()))}"
    )
    if report.final_faults:
        lines.append(f"{'':<11}cut on their last try: {report.final_faults}")
    lines.append(f"{'':<11}re-run attempts {report.rerun_attempts}: {report.rerun_causes}")
    if report.missing:
        lines.append(f"{'':<11}MISSING: {report.missing[:10]}")
    hits = [f for f in report.faults if f.outcome == "hit"]
    by_target = collections.Counter(f"{f.target}" for f in hits)
    signals = collections.Counter(f.signal for f in hits)
    lines.append(
        f"{'faults':<11}{len(hits)} landed of {len(report.faults)} tried "
        f"({dict(signals)}): {dict(sorted(by_target.items()))}"
    )
    others = collections.Counter(f.outcome for f in report.faults if f.outcome != "hit")
    if others:
        lines.append(f"{'':<11}not landed: {dict(others)}")
    stats = report.pool_stats
    if stats:
        names = ("resets", "steps", "infra_errors", "reset_errors", "launch_failures",
                 "hung_calls", "retired")  # fmt: skip
        counts = ", ".join(f"{n.replace('_', ' ')} {stats.get(f'pool/{n}', 0):.0f}" for n in names)
        lines.append(f"{'pool':<11}{counts}")
    lines.append(f"{'exceptions':<11}{len(report.exceptions)}")
    for e in report.exceptions[:5]:
        lines.append(f"{'':<11}{e['where']}: {e['type']}: {e['message'][:200]}")
    at_close = sum(len(v) for v in report.leftovers_at_close.values())
    kinds = ", ".join(f"{k} {len(v)}" for k, v in report.leftovers.items())
    lines.append(
        f"{'leftovers':<11}{report.leftover_count} after {c['settle']:g} s ({kinds}); "
        f"{at_close} right after close()"
    )
    for kind, items in report.leftovers_at_close.items():
        for item in items[:5]:
            lines.append(f"{'':<11}at close, {kind}: {item}")
    lines.append(
        f"{'memory':<11}{'':<22}{'first':>8}{'start':>8}{'end':>8}{'peak':>8}{'per 1000 ep':>13}"
    )
    for name, summary in report.memory.items():
        digits = 0 if name in ("driver_threads", "driver_fds") else 1
        lines.append(
            f"{'':<11}{name:<22}{_fmt(summary['first'], digits):>8}"
            f"{_fmt(summary['start'], digits):>8}{_fmt(summary['end'], digits):>8}"
            f"{_fmt(summary['peak'], digits):>8}"
            f"{_fmt(summary['slope_per_1000_episodes'], 1):>13}"
        )
    if report.memory:
        first = next(iter(report.memory.values()))
        lines.append(
            f"{'':<11}(start = first sample at >= {c['warmup']} episodes: "
            f"{first['start_episodes']}; end: {first['end_episodes']}; slope fitted after warm-up)"
        )
    if report.samples:
        first, last = report.samples[0].driver_fd_kinds, report.samples[-1].driver_fd_kinds
        grew = {k: f"{first.get(k, 0)}->{n}" for k, n in last.items() if n > first.get(k, 0)}
        lines.append(f"{'':<11}driver descriptors that grew since the first sample: {grew or 0}")
    top = list(report.log_counts.items())[:8]
    if top:
        lines.append(f"{'log':<11}{sum(report.log_counts.values())} records >= WARNING; top:")
        for key, count in top:
            lines.append(f"{'':<11}{count:>5}  {key}")
    return "\n".join(lines)


# --- command line ------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", nargs="+", default=["local"], choices=PROVIDERS)
    parser.add_argument("--desktops", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument(
        "--kill-interval",
        type=float,
        nargs=2,
        default=[1.0, 4.0],
        metavar=("MIN", "MAX"),
        help="seconds between faults (0 0: none)",
    )
    parser.add_argument("--kill-jitter", type=float, default=1.0)
    parser.add_argument(
        "--targets", nargs="*", default=[], help="kill targets (default: all of the provider's)"
    )
    parser.add_argument(
        "--stop-share",
        type=float,
        default=0.0,
        help="share of faults that SIGSTOP instead of SIGKILL",
    )
    parser.add_argument("--sample-every", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument(
        "--chunk", type=int, default=100, help="episodes per collection (0: one collection for all)"
    )
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=0.0,
        help="start no new collection after this long (0: no limit)",
    )
    parser.add_argument("--step-timeout", type=float, default=60.0)
    parser.add_argument("--reset-timeout", type=float, default=300.0)
    parser.add_argument("--max-attempts", type=int, default=3)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--stall-timeout", type=float, default=900.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--docker-image", default="osworld-gym/desktop:latest")
    parser.add_argument("--keep-leftovers", action="store_true")
    parser.add_argument("--log", default=None, help="write the library's warnings here")
    parser.add_argument("--json", default=None, help="write the reports here")
    return parser.parse_args(argv)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soaks; exit status 1 if any run lost an episode, raised, or left something."""
    args = _parse(argv)
    reports = []
    for provider in args.provider:
        config = SoakConfig(
            provider=provider,
            desktops=args.desktops,
            episodes=args.episodes,
            group_size=args.group_size,
            max_steps=args.max_steps,
            kill_interval=tuple(args.kill_interval),
            kill_jitter=args.kill_jitter,
            targets=tuple(t for t in args.targets if t in TARGETS[provider]),
            stop_share=args.stop_share,
            sample_every=args.sample_every,
            warmup=args.warmup,
            chunk=args.chunk,
            max_minutes=args.max_minutes,
            step_timeout=args.step_timeout,
            reset_timeout=args.reset_timeout,
            max_attempts=args.max_attempts,
            settle=args.settle,
            stall_timeout=args.stall_timeout,
            seed=args.seed,
            docker_image=args.docker_image,
            keep_leftovers=args.keep_leftovers,
            log_path=args.log,
        )
        print(f"soak {provider}: starting", flush=True)
        report = run_soak(config)
        print(format_report(report), flush=True)
        reports.append(report)
        if args.json:
            Path(args.json).write_text(json.dumps([r.to_json() for r in reports], indent=1))
    failed = [
        r.provider
        for r in reports
        if not r.skipped and (r.accounted != r.requested or r.exceptions or r.leftover_count)
    ]
    if failed:
        print(f"\nFAILED: {failed}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
