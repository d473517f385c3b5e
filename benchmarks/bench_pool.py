"""Rollout-wise vs lock-step collection on local desktops: utilization, episodes per minute.

    python benchmarks/bench_pool.py [--envs 8 16] [--group-size 4] [--episodes-per-env 8]
                                    [--latency 0.05 0.6] [--latency-per request|call]
                                    [--steps 2 8] [--policy-concurrency N]
                                    [--max-concurrent-resets N]

For each pool size, one pool of ``local`` desktops (launched before timing) runs the same
episodes twice with the same simulated policy, with the shipped defaults unless told otherwise
(``CollectorConfig.policy_concurrency``: a call per ready env; ``PoolConfig.max_concurrent_resets``:
scaled with the envs and this host's cores):
  * lock-step (ARPO): every env gets one episode of the batch; each step is one batched policy
    call and a wait for the slowest env; the next batch starts when all episodes are over;
  * rollout-wise (DART-GUI): an env starts its next episode the moment it frees; an env's
    request goes out as soon as it is ready, batched with the envs ready at that moment.
The simulated policy is an inference server: each request has its own latency (uniform in
--latency seconds, the same for a (task, rollout, step) in both modes) and a call answers when
its slowest request is done (``--latency-per call``: one draw per call, whatever its size).
Each (task, rollout) episode has its own length (uniform in --steps; then DONE). Each step types
a short command into a terminal and observes the settled screen.

Prints, per mode, with n envs and the collection's wall time (``CollectionStats``):
  * util   -- utilization: time desktops spend acting or being observed (in reset/step calls)
              / (wall x n); waiting for the policy is not busy;
  * occ    -- occupancy, DART-GUI's sense of a utilized environment: that, or waiting for the
              env's own policy call; idle is waiting for other envs (lock-step's barrier), for a
              policy call to start, for a launch slot, or with no episode left (a batch's tail);
  * bound  -- env / (env + policy) seconds over all steps: the util no scheduler can beat while
              every step waits for its own policy call; util/bd is how much of it was reached;
  * tail   -- share of desktop time after each env's last episode, while others finish theirs
              (the collection's end: the part of idle that only a longer collection shrinks);
  * launch -- share of desktop time spent waiting for a launch slot (max_concurrent_resets);
  * batch  -- requests per policy call;
  * ep/min -- episodes per minute;
  * cpu    -- the host's CPU use over the run (1.0: every core busy; then the desktops, not the
              scheduler, bound the throughput);
the rollout-wise / lock-step ratios, the issue's targets (rollout-wise >= 1.5x lock-step
episodes per minute; util >= 0.9), and the peak memory per env (RSS of each desktop's processes).
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
from bench_task_files import terminal_task

from osworld_gym.actions import Done, TypeText
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig, TrajectoryGroup
from osworld_gym.pool.collector import CollectionStats, CollectorConfig, RolloutCollector
from osworld_gym.pool.lockstep import LockstepCollector
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.providers.local.provider import LocalProviderConfig

SCREEN = (1280, 720)


class SimulatedPolicy:
    """Async batched policy with per-request latencies; episode lengths drawn per (task, rollout).

    Args:
        latency: Uniform range of a request's latency, seconds.
        lengths: Steps of each (task, rollout) episode (then DONE).
        seed: Seeds the draws.
        per_call: One latency draw per call instead of the slowest of its requests' draws.
    """

    def __init__(
        self,
        latency: tuple[float, float],
        lengths: dict[tuple[str, int], int],
        seed: int,
        *,
        per_call: bool = False,
    ) -> None:
        self.latency, self.lengths, self.seed, self.per_call = latency, lengths, seed, per_call
        self.rng = np.random.default_rng(seed)
        self.tasks = {task: i for i, task in enumerate(sorted({t for t, _ in lengths}))}

    def request_latency(self, request: PolicyRequest) -> float:
        """The same draw for a (task, rollout, step) in every mode and batch."""
        key = [self.seed, self.tasks[request.task_id], request.rollout, request.step]
        return float(np.random.default_rng(key).uniform(*self.latency))

    async def __call__(self, requests: list[PolicyRequest]) -> list[Any]:
        if self.per_call:
            latency = float(self.rng.uniform(*self.latency))
        else:
            latency = max(self.request_latency(r) for r in requests)
        await asyncio.sleep(latency)  # simulated inference
        return [
            Done()
            if r.step + 1 >= self.lengths[(r.task_id, r.rollout)]
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


def measure(
    pool: EnvPool,
    collect: Callable[[], tuple[list[TrajectoryGroup], CollectionStats]],
    episodes: int,
) -> dict[str, float]:
    before = pool.stats()
    psutil.cpu_percent()  # starts the host CPU measurement window
    groups, stats = collect()
    cpu = psutil.cpu_percent() / 100
    after = pool.stats()
    launch_wait = after["pool/reset_queue_seconds"] - before["pool/reset_queue_seconds"]
    done = sum(len(g) for g in groups)
    assert done == episodes, (done, episodes)
    return {
        "wall": stats.wall_seconds,
        "utilization": stats.utilization,
        "occupancy": stats.occupancy,
        "bound": stats.utilization_bound,
        "tail": stats.tail_seconds / stats.desktop_seconds,
        "launch_wait": launch_wait / stats.desktop_seconds,
        "batch": stats.mean_policy_batch,
        "cpu": cpu,
        "episodes_per_min": done / stats.wall_seconds * 60,
        "steps": stats.steps,
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
            # A desktop's first resets after its launch can pay one-time costs (seconds) that
            # would land on whichever mode runs first.
            pool.reset(options={"task_id": tasks[-1]})
            collect = CollectorConfig(
                group_size=args.group_size, policy_concurrency=args.policy_concurrency
            )
            rng = np.random.default_rng(args.seed)
            low, high = args.steps
            lengths = {
                (t, r): int(rng.integers(low, high + 1))
                for t in tasks
                for r in range(args.group_size)
            }
            per_call = args.latency_per == "call"

            def run(kind: type[LockstepCollector] | type[RolloutCollector]) -> Any:
                policy = SimulatedPolicy(tuple(args.latency), lengths, args.seed, per_call=per_call)
                collector = kind(pool, policy, collect)
                return lambda: (collector.collect(tasks), collector.stats)

            lockstep = measure(pool, run(LockstepCollector), episodes)
            rollout = measure(pool, run(RolloutCollector), episodes)
            reset_cap = pool.max_concurrent_resets
        peak_mb = memory.peak / num_envs / 2**20
    calls = "one per ready env" if args.policy_concurrency is None else args.policy_concurrency
    print(
        f"\n{num_envs} envs, {episodes} episodes ({n_tasks} tasks x {args.group_size}, "
        f"{episodes / num_envs:.0f} per env), policy calls in flight: {calls}, "
        f"max_concurrent_resets {reset_cap}, request latency {args.latency[0]}-{args.latency[1]} s "
        f"(per {args.latency_per}); desktops launched in {launch:.1f} s, peak memory per env "
        f"{peak_mb:.0f} MB"
    )
    print(
        f"{'mode':<14}{'wall s':>8}{'util':>7}{'occ':>7}{'bound':>7}{'util/bd':>8}{'tail':>6}"
        f"{'launch':>7}"
        f"{'batch':>7}{'ep/min':>8}{'steps':>7}{'cpu':>6}"
    )
    for name, row in (("lock-step", lockstep), ("rollout-wise", rollout)):
        print(
            f"{name:<14}{row['wall']:>8.1f}{row['utilization']:>7.2f}{row['occupancy']:>7.2f}"
            f"{row['bound']:>7.2f}{row['utilization'] / row['bound']:>8.2f}{row['tail']:>6.2f}"
            f"{row['launch_wait']:>7.2f}{row['batch']:>7.1f}{row['episodes_per_min']:>8.1f}"
            f"{row['steps']:>7.0f}{row['cpu']:>6.2f}"
        )
    ratio = {k: rollout[k] / lockstep[k] for k in ("utilization", "occupancy", "episodes_per_min")}
    print(
        f"ratio rollout-wise / lock-step: episodes per minute {ratio['episodes_per_min']:.2f}x, "
        f"util {ratio['utilization']:.2f}x, occ {ratio['occupancy']:.2f}x"
    )
    print(
        f"targets: episodes per minute >= 1.5x lock-step: "
        f"{'met' if ratio['episodes_per_min'] >= 1.5 else 'NOT met'} "
        f"({ratio['episodes_per_min']:.2f}x); util >= 0.9: "
        f"{'met' if rollout['utilization'] >= 0.9 else 'NOT met'} ({rollout['utilization']:.3f}, "
        f"ceiling {rollout['bound']:.2f} while each step waits for its own policy call; "
        f"tail {rollout['tail']:.2f}; occupancy {rollout['occupancy']:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--episodes-per-env", type=int, default=8)
    parser.add_argument("--latency", type=float, nargs=2, default=[0.05, 0.6])
    parser.add_argument(
        "--latency-per",
        choices=("request", "call"),
        default="request",
        help="request: a call answers when its slowest request is done; call: one draw a call",
    )
    parser.add_argument("--steps", type=int, nargs=2, default=[2, 8])
    parser.add_argument(
        "--policy-concurrency", type=int, default=None, help="default: the shipped default"
    )
    parser.add_argument(
        "--max-concurrent-resets", type=int, default=None, help="default: automatic (shipped)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for num_envs in args.envs:
        bench(num_envs, args)


if __name__ == "__main__":
    main()
