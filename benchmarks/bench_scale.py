"""Throughput as desktops are added: episodes/min, CPU and memory per desktop, where it flattens.

    flock /tmp/osworld-bench.lock python benchmarks/bench_scale.py \\
        [--provider local docker] [--session minimal gnome] [--suite ui-basics calc terminal] \\
        [--envs 1 2 4 8 16 32] \\
        [--warmup S] [--seconds S] [--max-concurrent-resets N] \\
        [--docker-reset-mode recreate|session] [--json FILE]

For each provider, suite and pool size, one ``EnvPool`` with the shipped
defaults (``gym.make("OSWorld-v0")`` envs, the rollout-wise collector, PNG-encoded stored
screenshots as ``osworld-gym run`` and the trainer keep them) runs the bundled oracle on a stream
of episodes, one rollout each, as long as the measurement lasts. The desktops are launched before
timing; the first ``--warmup`` seconds of the stream (every desktop's first reset at once) are not
counted; episodes that end in the next ``--seconds`` are. Suites:

* ``ui-basics``: its 38 tasks in turn (336x224; a dialog or a terminal, one action, DONE);
* ``calc``: desktop-basics' ``calc-sum-sales-total`` (1280x720; Calc opens an .xlsx at reset,
  the oracle types a SUM into its cell, saves keeping the format, DONE; scored by reading the
  file back). The oracle is the one ``osworld-gym run --agent oracle`` plays: it acts on the
  first observation and waits only where its script expects something on the screen.
* ``terminal``: desktop-basics' nine feasible ``os-*`` tasks in turn (1280x720; a terminal
  opens at reset, the oracle types one command line, DONE; scored by the files it left). Their
  oracles pass on both sessions, so ``--session minimal gnome`` compares the two desktops.

Printed per pool size: episodes per minute and its ratio to one desktop (``x1``) and to the size
before (``x prev``), the share of episodes solved (a drop means observations or input suffered
under load), the host's busy cores, CPU seconds per episode, busy cores per desktop, memory per
desktop (peak host memory in use over the launch and run, minus before, per desktop), median
episode, reset and step seconds, and where the busy CPU went (the desktops' X servers, window
managers, guests, apps, the docker engine, the driver process running the pool, policy and
scoring, and short-lived processes such as task setup commands; the busiest "other" processes
are named under the table). Under each table: where doubling the desktops first gave less than
1.25x the episodes per minute, and the state of the host there. ``--max-concurrent-resets`` and
``--docker-reset-mode`` change those settings from the shipped ones, to see what binds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import statistics
import threading
import time
from typing import Any

import psutil

from osworld_gym.commands.run import provider_from_args
from osworld_gym.policies.oracles.agent import OracleAgent
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector
from osworld_gym.providers.session_choice import SESSIONS
from osworld_gym.tasks import load_tasks

logger = logging.getLogger("bench_scale")


@dataclasses.dataclass(frozen=True)
class Suite:
    """A workload: the tasks to cycle through and the screen they are laid out for."""

    name: str
    source: str
    task_ids: tuple[str, ...] | None
    screen: tuple[int, int]
    warmup: float
    seconds: float


TERMINAL_TASKS = (
    "os-chmod-script", "os-count-error-lines", "os-create-project-tree", "os-delete-tmp-files",
    "os-find-and-copy", "os-rename-by-prefix", "os-sort-downloads-by-type", "os-tar-folder",
    "os-write-file-content",
)  # fmt: skip
SUITES = {
    "ui-basics": Suite("ui-basics", "ui-basics", None, (336, 224), warmup=15.0, seconds=45.0),
    "calc": Suite(
        "calc", "desktop-basics", ("calc-sum-sales-total",), (1280, 720), warmup=40, seconds=90
    ),
    # The oracles that pass on both sessions (GNOME's windows sit elsewhere than openbox's,
    # and the office oracles click and watch openbox's places): to compare the two.
    "terminal": Suite(
        "terminal",
        "desktop-basics",
        TERMINAL_TASKS,
        (1280, 720),
        warmup=20,
        seconds=60,
    ),
}

# Where host CPU goes, by process name (the guest is recognised by its command line).
COMPONENTS = {
    "Xvfb": "X server",
    "Xorg": "X server",
    "openbox": "window manager",
    "gnome-shell": "window manager",
    "soffice.bin": "app",
    "oosplash": "app",
    "xterm": "app",
    "lxterminal": "app",
    "mousepad": "app",
    "gnome-terminal-server": "app",
    "xmessage": "app",
    "gedit": "app",
    "dockerd": "docker engine",
    "containerd": "docker engine",
    "containerd-shim": "docker engine",
    "containerd-shim-runc-v2": "docker engine",
    "docker-proxy": "docker engine",
    "runc": "docker engine",
    "docker-init": "docker engine",
    "dbus-daemon": "session services",
    "at-spi-bus-launcher": "session services",
    "at-spi2-registryd": "session services",
    "dconf-service": "session services",
    "gjs": "session services",  # GNOME Shell's notification service
    "pulseaudio": "session services",
}
SESSION_SERVICE_PREFIXES = ("gsd-", "gvfs", "xdg-")  # GNOME's settings daemons, GVfs, portals
COMPONENT_ORDER = (
    "driver", "guest", "X server", "window manager", "app", "session services", "docker engine",
    "other", "short-lived",
)  # fmt: skip


class CpuLedger:
    """Host CPU time and each process's CPU time between two marks, sampled in a thread.

    Processes are sampled every ``interval`` seconds; one that lives and dies between two samples
    is not seen, so the host's busy time not attributed to a seen process is "short-lived".
    """

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.me = os.getpid()
        self._kinds: dict[tuple[int, float], str] = {}
        self._cpu: dict[tuple[int, float], float] = {}
        self._names: dict[tuple[int, float], str] = {}
        self._marks: list[tuple[dict[tuple[int, float], float], Any, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._mark_at: list[float] = []
        self.peak_used = 0
        self._thread = threading.Thread(target=self._run, name="cpu-ledger", daemon=True)

    def __enter__(self) -> CpuLedger:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def mark_at(self, when: float) -> None:
        """Take a mark at monotonic time ``when`` (the sampler thread takes it on time)."""
        with self._lock:
            self._mark_at.append(when)

    def marks(self) -> int:
        """Marks taken so far."""
        with self._lock:
            return len(self._marks)

    def _run(self) -> None:
        while True:
            with self._lock:
                due = [t for t in self._mark_at if t <= time.monotonic() + self.interval]
            wait = self.interval
            if due:
                wait = max(0.0, min(due) - time.monotonic())
            if self._stop.wait(wait):
                return
            self._sample()
            with self._lock:
                now = time.monotonic()
                if self._mark_at and min(self._mark_at) <= now:
                    self._mark_at.remove(min(self._mark_at))
                    self._marks.append((dict(self._cpu), psutil.cpu_times(), now))

    def _sample(self) -> None:
        self.peak_used = max(self.peak_used, psutil.virtual_memory().used)
        for proc in psutil.process_iter(["name", "create_time", "cpu_times"]):
            info = proc.info
            if info["cpu_times"] is None or info["create_time"] is None:
                continue
            key = (proc.pid, info["create_time"])
            if key not in self._kinds:
                self._kinds[key] = self._classify(proc, info["name"] or "")
                self._names[key] = info["name"] or "?"
            times = info["cpu_times"]
            self._cpu[key] = times.user + times.system

    def _classify(self, proc: psutil.Process, name: str) -> str:
        if proc.pid == self.me:
            return "driver"
        if name in COMPONENTS:
            return COMPONENTS[name]
        if name.startswith(SESSION_SERVICE_PREFIXES):
            return "session services"
        if name.startswith("python"):
            try:
                cmdline = " ".join(proc.cmdline())
            except psutil.Error:
                return "other"
            if "osworld_gym.guest" in cmdline or "serve-guest" in cmdline:
                return "guest"
        return "other"

    def between(self, first: int, second: int) -> tuple[float, dict[str, float], dict[str, float]]:
        """Busy host CPU seconds between two marks, their split by component, and "other"'s
        split by process name."""
        with self._lock:
            (cpu0, host0, _), (cpu1, host1, _) = self._marks[first], self._marks[second]
        busy = _busy(host1) - _busy(host0)
        split = dict.fromkeys(COMPONENT_ORDER, 0.0)
        others: dict[str, float] = {}
        for key, seconds in cpu1.items():
            used = seconds - cpu0.get(key, 0.0)
            split[self._kinds[key]] += used
            if self._kinds[key] == "other" and used > 0:
                others[self._names[key]] = others.get(self._names[key], 0.0) + used
        split["short-lived"] = max(0.0, busy - sum(split.values()))
        return busy, split, others


def cores() -> int:
    """This host's CPU count."""
    return psutil.cpu_count() or 1


def _busy(times: Any) -> float:
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def measure(
    provider: str, suite: Suite, num_envs: int, args: argparse.Namespace, session: str | None
) -> dict:
    tasks = load_tasks(suite.source, ids=list(suite.task_ids) if suite.task_ids else None)
    ids = [task.id for task in tasks]
    policy = OracleAgent(tasks)
    provider_config, _ = provider_from_args(provider, None, suite.screen, session=session)
    if provider == "docker" and args.docker_reset_mode:
        provider_config = dataclasses.replace(provider_config, reset_mode=args.docker_reset_mode)
    spec = EnvSpec(
        kwargs={
            "tasks": suite.source,
            "provider": provider_config,
            "action_format": "structured",
            "screen_size": suite.screen,
        }
    )
    warmup = args.warmup if args.warmup is not None else suite.warmup
    seconds = args.seconds if args.seconds is not None else suite.seconds
    # More episodes than the measurement can end (ui-basics: ~0.1 CPU-s each), so it ends on time.
    stream = [ids[i % len(ids)] for i in range(int(max(500, 20 * (warmup + seconds) * cores())))]
    pool_config = PoolConfig(
        screenshot_format="png", max_concurrent_resets=args.max_concurrent_resets
    )
    used_before = psutil.virtual_memory().used
    ended: list[tuple[float, Any]] = []
    with (
        CpuLedger() as ledger,
        EnvPool(spec, num_envs, config=pool_config) as pool,
    ):
        launch = time.monotonic()
        pool.reset(options={"task_id": ids[0]})  # every desktop launched before timing
        launch = time.monotonic() - launch
        collector = RolloutCollector(pool, policy, CollectorConfig(group_size=1))
        start = time.monotonic()
        window = (start + warmup, start + warmup + seconds)
        ledger.mark_at(window[0])
        ledger.mark_at(window[1])
        for group in collector.groups(stream):
            now = time.monotonic()
            ended.extend((now, trajectory) for trajectory in group.trajectories)
            if now >= window[1]:
                break
        else:
            raise RuntimeError(f"all {len(stream)} episodes ended before the measurement did")
        deadline = time.monotonic() + 10
        while ledger.marks() < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the sampler takes the window's last mark on its own clock
        stats = collector.stats
    counted = [t for when, t in ended if window[0] <= when < window[1]]
    busy, split, others = ledger.between(0, 1)
    memory = (ledger.peak_used - used_before) / num_envs / 2**20
    resets = [
        sum(t.reset_timings.get(k, 0.0) for k in ("desktop", "setup", "observe")) for t in counted
    ]
    steps = [
        s.timings.get("action", 0.0) + s.timings.get("observe", 0.0)
        for t in counted
        for s in t.steps
    ]
    return {
        "provider": provider
        + (
            f" (reset_mode={args.docker_reset_mode})"
            if provider == "docker" and args.docker_reset_mode
            else ""
        )
        + (f" ({session} session)" if session else ""),
        "suite": suite.name,
        "envs": num_envs,
        "launch_s": launch,
        "window_s": seconds,
        "episodes": len(counted),
        "episodes_per_min": 60 * len(counted) / seconds,
        "solved": statistics.fmean([t.score or 0.0 for t in counted]) if counted else 0.0,
        "errors": sum(1 for t in counted if t.error or t.infra_error),
        "busy_cores": busy / seconds,
        "cpu_s_per_episode": busy / len(counted) if counted else float("nan"),
        "cores_per_desktop": busy / seconds / num_envs,
        "memory_mb_per_desktop": memory,
        "episode_s": statistics.median([t.wall_seconds for t in counted]) if counted else 0.0,
        "reset_s": statistics.median(resets) if resets else 0.0,
        "step_ms": 1000 * statistics.median(steps) if steps else 0.0,
        "utilization": stats.utilization,
        "cpu_split": {k: v / busy if busy else 0.0 for k, v in split.items()},
        "other_processes": {
            k: v / busy for k, v in sorted(others.items(), key=lambda kv: -kv[1])[:5] if busy
        },
    }


def report(rows: list[dict], num_cores: int) -> None:
    first = rows[0]
    print(
        f"\n{first['provider']} / {first['suite']}: {num_cores} cores, "
        f"{first['window_s']:.0f} s counted after the warm-up"
    )
    print(
        f"{'envs':>5}{'ep/min':>8}{'x1':>6}{'x prev':>7}{'solved':>7}{'busy':>6}{'cpu-s/ep':>9}"
        f"{'cores/dt':>9}{'MB/dt':>7}{'ep s':>6}{'reset s':>8}{'step ms':>8}{'util':>6}  cpu split"
    )
    previous = None
    for row in rows:
        base = first["episodes_per_min"] * row["envs"] / first["envs"]
        prev = row["episodes_per_min"] / previous["episodes_per_min"] if previous else 1.0
        row["x1"] = row["episodes_per_min"] / first["episodes_per_min"]
        row["x_prev"] = prev
        row["linear_share"] = row["episodes_per_min"] / base if base else 0.0
        split = ", ".join(
            f"{k} {v:.0%}"
            for k, v in sorted(row["cpu_split"].items(), key=lambda kv: -kv[1])
            if v >= 0.03
        )
        print(
            f"{row['envs']:>5}{row['episodes_per_min']:>8.1f}{row['x1']:>6.1f}{prev:>7.2f}"
            f"{row['solved']:>7.0%}{row['busy_cores']:>6.2f}{row['cpu_s_per_episode']:>9.2f}"
            f"{row['cores_per_desktop']:>9.3f}{row['memory_mb_per_desktop']:>7.0f}"
            f"{row['episode_s']:>6.1f}{row['reset_s']:>8.2f}{row['step_ms']:>8.0f}"
            f"{row['utilization']:>6.2f}  {split}"
        )
        previous = row
    for row in rows:
        if row["cpu_split"].get("other", 0) >= 0.03:
            named = ", ".join(f"{k} {v:.0%}" for k, v in row["other_processes"].items())
            print(f"  other with {row['envs']} desktops: {named}")
    flat = next((r for r in rows[1:] if r["x_prev"] < 1.25), None)
    if flat is None:
        print("flattens: not within these sizes (every doubling gave >= 1.25x)")
        return
    top = max(flat["cpu_split"].items(), key=lambda kv: kv[1])
    saturated = flat["busy_cores"] >= 0.9 * num_cores
    print(
        f"flattens at {flat['envs']} desktops ({flat['x_prev']:.2f}x the size before, "
        f"{flat['linear_share']:.0%} of linear from {first['envs']}): host CPU "
        f"{flat['busy_cores']:.2f} of {num_cores} cores busy"
        f"{' (saturated)' if saturated else ''}, {flat['cpu_s_per_episode']:.2f} CPU-s per "
        f"episode (vs {first['cpu_s_per_episode']:.2f} with {first['envs']}); the largest "
        f"share: {top[0]} {top[1]:.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", nargs="+", default=["local"], choices=("local", "docker"))
    parser.add_argument("--suite", nargs="+", default=["ui-basics", "calc"], choices=SUITES)
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--warmup", type=float, default=None, help="default: per suite")
    parser.add_argument("--seconds", type=float, default=None, help="default: per suite")
    parser.add_argument(
        "--docker-reset-mode",
        choices=("recreate", "session"),
        default=None,
        help="the docker provider's reset_mode (default: the shipped recreate)",
    )
    parser.add_argument(
        "--max-concurrent-resets", type=int, default=None, help="default: the shipped automatic cap"
    )
    parser.add_argument(
        "--session",
        nargs="+",
        default=["minimal"],
        choices=SESSIONS,
        help="local: the desktops' sessions to measure, each in turn (default: minimal)",
    )
    parser.add_argument("--json", default=None, help="write every row here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logger.setLevel(logging.INFO)
    everything = []
    runs = [
        (provider, session)
        for provider in args.provider
        for session in (args.session if provider == "local" else [None])
    ]
    for provider, session in runs:
        for name in args.suite:
            rows = []
            for n in args.envs:
                rows.append(measure(provider, SUITES[name], n, args, session))
                logger.info("%s / %s, %d desktops: %.1f episodes/min", provider, name, n,
                            rows[-1]["episodes_per_min"])  # fmt: skip
            report(rows, cores())
            everything.extend(rows)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
