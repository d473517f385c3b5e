"""Rollout-wise vs lock-step collection on local desktops: utilization, episodes per minute.

    python benchmarks/bench_pool.py [--envs 8 16] [--group-size 4] [--episodes-per-env 4]
                                    [--latency 0.05 0.6] [--steps 2 8]

For each pool size, one pool of ``local`` desktops (launched before timing) runs the same
episodes twice with the same simulated policy:
  * lock-step (ARPO): every env gets one episode of the batch; each step is one batched policy
    call and a wait for the slowest env; the next batch starts when all episodes are over;
  * rollout-wise (DART-GUI): an env starts its next episode the moment it frees; envs waiting
    for an action are batched into policy calls as they come.
The simulated policy's latency varies per call (uniform in --latency seconds; the server serves
calls concurrently, as an inference server would), and each (task, rollout) episode has its own
length (uniform in --steps; then DONE). Each step types a short command into a terminal and
observes the settled screen.

Prints, per mode, with n envs and the collection's wall time:
  * util   -- environment utilization: time envs spend in reset/step calls / (wall x n);
  * bound  -- env / (env + policy) seconds over all steps: the util no scheduler can beat while
              every step waits for its own policy call;
  * busy   -- occupancy, DART-GUI's sense of a utilized environment: time each env spends on its
              own episode -- in a reset/step call or waiting for the policy call that chooses its
              action -- / (wall x n). Idle is time spent waiting for other envs (lock-step's
              slowest-env barrier) or with no episode (a batch's tail);
  * queue  -- share of env time spent waiting for a launch slot (PoolConfig.max_concurrent_resets);
  * ep/min -- episodes per minute;
  * cpu    -- the host's CPU use over the run (1.0: every core busy; then the desktops, not the
              scheduler, bound the throughput);
and the rollout-wise / lock-step ratios; plus the peak memory per env (RSS of each desktop's
processes). Target (issue 5): busy above 0.85 rollout-wise and at least 1.5x the episodes per
minute of lock-step.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from osworld_gym.actions import Done, TypeText
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig, TrajectoryGroup
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector
from osworld_gym.pool.lockstep import LockstepCollector
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.providers.local import LocalProviderConfig

SCREEN = (1280, 720)


def terminal_task(task_id: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "instruction": "Type into the terminal.",
        "config": [
            {"type": "launch", "parameters": {"command": ["xterm", "-title", task_id]}},
            {
                "type": "execute",
                "parameters": {
                    "command": f"wmctrl -l | grep -q {task_id}",
                    "shell": True,
                    "until": {"returncode": 0},
                },
            },
            {"type": "activate_window", "parameters": {"window_name": task_id}},
        ],
        "evaluator": {"func": "infeasible"},
    }


class SimulatedPolicy:
    """Async batched policy: latency drawn per call; episode lengths drawn per (task, rollout)."""

    def __init__(
        self, latency: tuple[float, float], lengths: dict[tuple[str, int], int], seed: int
    ) -> None:
        self.latency, self.lengths = latency, lengths
        self.rng = np.random.default_rng(seed)
        self.calls = 0

    def length(self, task_id: str, rollout: int) -> int:
        return self.lengths[(task_id, rollout)]

    async def __call__(self, requests: list[PolicyRequest]) -> list[Any]:
        self.calls += 1
        await asyncio.sleep(float(self.rng.uniform(*self.latency)))
        return [
            Done()
            if r.step + 1 >= self.length(r.task_id, r.rollout)
            else TypeText(text=f"echo step {r.step}\n")
            for r in requests
        ]


class MemorySampler:
    """Peak total RSS of the processes whose HOME or working folder lies under a folder."""

    def __init__(self, root: Path, interval: float = 0.5) -> None:
        self.root, self.interval = str(root), interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            total = 0
            for proc in psutil.process_iter(["cwd", "environ", "memory_info"]):
                try:
                    home = (proc.info["environ"] or {}).get("HOME", "")
                    if home.startswith(self.root) or (proc.info["cwd"] or "").startswith(self.root):
                        total += proc.info["memory_info"].rss
                except (psutil.Error, AttributeError, TypeError):
                    continue
            self.peak = max(self.peak, total)


def step_bound(groups: list[TrajectoryGroup]) -> float:
    """env / (env + policy) seconds over all episodes (resets included): the utilization no
    scheduler can beat while each step waits for its own policy call."""
    episodes = [t for g in groups for t in g.trajectories]
    env = sum(sum(t.reset_timings.values()) for t in episodes)
    env += sum(s.timings["env"] for t in episodes for s in t.steps)
    return env / (env + sum(s.timings["policy"] for t in episodes for s in t.steps))


def measure(
    pool: EnvPool, run: Callable[[], list[TrajectoryGroup]], episodes: int
) -> dict[str, float]:
    before = pool.stats()
    psutil.cpu_percent()  # starts the host CPU measurement window
    start = time.monotonic()
    groups = run()
    wall = time.monotonic() - start
    cpu = psutil.cpu_percent() / 100
    after = pool.stats()
    busy = after["pool/busy_seconds"] - before["pool/busy_seconds"]
    queued = after["pool/reset_queue_seconds"] - before["pool/reset_queue_seconds"]
    done = sum(len(g) for g in groups)
    assert done == episodes, (done, episodes)
    n = pool.num_envs
    own_policy = sum(s.timings["policy"] for g in groups for t in g.trajectories for s in t.steps)
    return {
        "wall": wall,
        "utilization": busy / (wall * n),
        "occupancy": (busy + own_policy) / (wall * n),
        "reset_queue": queued / (wall * n),
        "cpu": cpu,
        "bound": step_bound(groups),
        "episodes_per_min": done / wall * 60,
        "steps": sum(len(t.steps) for g in groups for t in g.trajectories),
    }


def bench(num_envs: int, args: argparse.Namespace) -> None:
    n_tasks = max(1, num_envs * args.episodes_per_env // args.group_size)
    tasks = [f"bench-{i}" for i in range(n_tasks)]
    episodes = n_tasks * args.group_size
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as work:
        spec = EnvSpec(
            kwargs={
                "tasks": [terminal_task(t) for t in tasks],
                "action_format": "structured",
                "screen_size": SCREEN,
                "max_steps": args.steps[1] + 1,
                "provider": LocalProviderConfig(screen_size=SCREEN, work_dir=work),
            }
        )
        config = PoolConfig(  # workers encode the stored screenshots, in parallel, as in training
            max_concurrent_resets=args.max_concurrent_resets, screenshot_format="png"
        )
        with MemorySampler(Path(work)) as memory, EnvPool(spec, num_envs, config=config) as pool:
            launch = time.monotonic()
            pool.reset(options={"task_id": tasks[0]})  # launch every desktop before timing
            launch = time.monotonic() - launch
            collect = CollectorConfig(group_size=args.group_size)
            rng = np.random.default_rng(args.seed)
            low, high = args.steps
            lengths = {
                (t, r): int(rng.integers(low, high + 1))
                for t in tasks
                for r in range(args.group_size)
            }
            lock = SimulatedPolicy(tuple(args.latency), lengths, args.seed)
            lockstep = measure(
                pool, lambda: LockstepCollector(pool, lock, collect).collect(tasks), episodes
            )
            roll = SimulatedPolicy(tuple(args.latency), lengths, args.seed)
            rollout_config = CollectorConfig(
                group_size=args.group_size, policy_concurrency=args.policy_concurrency or num_envs
            )
            rollout = measure(
                pool,
                lambda: RolloutCollector(pool, roll, rollout_config).collect(tasks),
                episodes,
            )
        peak_mb = memory.peak / num_envs / 2**20
    print(
        f"\n{num_envs} envs, {episodes} episodes ({n_tasks} tasks x {args.group_size}), "
        f"desktops launched in {launch:.1f} s, peak memory per env {peak_mb:.0f} MB"
    )
    print(
        f"{'mode':<14}{'wall s':>8}{'util':>7}{'bound':>7}{'busy':>7}{'queue':>7}"
        f"{'ep/min':>8}{'steps':>7}{'cpu':>6}"
    )
    for name, row in (("lock-step", lockstep), ("rollout-wise", rollout)):
        print(
            f"{name:<14}{row['wall']:>8.1f}{row['utilization']:>7.2f}{row['bound']:>7.2f}"
            f"{row['occupancy']:>7.2f}{row['reset_queue']:>7.2f}"
            f"{row['episodes_per_min']:>8.1f}{row['steps']:>7.0f}{row['cpu']:>6.2f}"
        )
    ratio = {k: rollout[k] / lockstep[k] for k in ("utilization", "occupancy", "episodes_per_min")}
    print(
        f"ratio rollout-wise / lock-step: util {ratio['utilization']:.2f}x, busy "
        f"{ratio['occupancy']:.2f}x, episodes per minute {ratio['episodes_per_min']:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--episodes-per-env", type=int, default=4)
    parser.add_argument("--latency", type=float, nargs=2, default=[0.05, 0.6])
    parser.add_argument("--steps", type=int, nargs=2, default=[2, 8])
    parser.add_argument("--policy-concurrency", type=int, default=0, help="0: one per env")
    parser.add_argument("--max-concurrent-resets", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for num_envs in args.envs:
        bench(num_envs, args)


if __name__ == "__main__":
    main()
