"""Decoupled (DART-GUI async) vs coupled training loop on local desktops: throughput, utilization.

    python benchmarks/bench_async.py [--envs 4] [--iterations 6] [--tasks-per-iteration 4]
                                     [--group-size 2] [--latency 0.05 0.4] [--update 2 4]
                                     [--max-staleness 1] [--seed 0]

One pool of ``local`` desktops (launched and warmed up before timing) runs the same training
schedule twice -- ``--iterations`` iterations of ``--tasks-per-iteration`` tasks of the bundled
``ui-basics`` suite, ``--group-size`` rollouts each, drawn once from ``--seed`` -- with the same
policy and the same updates:

* coupled (the trainer's default loop): collect the iteration's groups rollout-wise
  (``RolloutCollector.collect``), then update; the desktops idle during the update;
* async (``osworld-arpo --async``): one streaming collection (``RolloutCollector.stream``) fed
  ``max(1, --max-staleness)`` iterations ahead, as ``osworld_agents.trainer.async_rollout.
  AsyncRollouts`` feeds it; the trainer takes an iteration's groups, updates, bumps the policy
  version, while the desktops go on with the next iterations' episodes.

The policy is scripted: the ui-basics oracle's response for the step (real clicks and typing on
the desktops), answered after a latency drawn uniformly from ``--latency`` seconds with a seed
fixed per (task, rollout, step) -- the same draw in both modes -- and one batched call at a time
(as the trainer's in-process engine: ``policy_concurrency=1``). It records the policy version
of each step, so the staleness the async mode trains on is reported too.

The update is a fixed seeded duration, the same per iteration in both modes (uniform in
``--update`` seconds; a sleep: it takes no CPU). On a GPU machine the real update runs on the
GPU, as does the rollout engine's generation, so the overlap costs the desktops nothing; on this
2-core CPU host a real tiny-model update and the rollout engine's generation would share the
same cores with the desktops, so the async gain measured here with a CPU-free update is an
upper bound for a CPU-only run.

Prints, per mode: wall time, trained episodes per minute, desktop utilization (time in reset
and step calls / (wall x envs), the whole run: updates included), occupancy (that, or waiting
for the env's own policy call), and for async the steps the desktops took during updates and
the staleness of the groups trained on; then the async / coupled ratios (DART-GUI reports 1.9x
training throughput and 5.5x environment utilization at its scale).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from osworld_gym.policies.oracles import UIBasicsOracle
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig, TrajectoryGroup
from osworld_gym.pool.collector import CollectionStats, CollectorConfig, RolloutCollector, TaskFeed
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.providers.local.provider import LocalProviderConfig
from osworld_gym.tasks import load_tasks

SUITE = "ui-basics"
SCREEN = (336, 224)  # the CPU preset's screen
MAX_STEPS = 3


class ScriptedPolicy:
    """The oracle's responses after a seeded latency; each output records the policy version.

    Args:
        tasks: The suite's task ids (latency keys).
        latency: Uniform range of a call's latency, seconds (the slowest request's draw).
        seed: Seeds the draws.
    """

    max_concurrent_calls = 1

    def __init__(self, tasks: list[str], latency: tuple[float, float], seed: int) -> None:
        self.oracle = UIBasicsOracle(screen_size=SCREEN)
        self.index = {t: i for i, t in enumerate(tasks)}
        self.latency, self.seed = latency, seed
        self.version = 0
        self._lock = threading.Lock()

    def request_latency(self, request: PolicyRequest) -> float:
        """The same draw for a (task, rollout, step) in both modes and any batch."""
        key = [self.seed, self.index[request.task_id], request.rollout, request.step]
        return float(np.random.default_rng(key).uniform(*self.latency))

    async def __call__(self, requests: list[PolicyRequest]) -> list[PolicyOutput]:
        with self._lock:
            version = self.version  # the weights this call samples with
        await asyncio.sleep(max(self.request_latency(r) for r in requests))
        outputs = self.oracle(requests)
        for output in outputs:
            output.extra["weight_version"] = version
        return outputs


@dataclass
class Result:
    wall: float
    episodes: int
    stats: CollectionStats
    num_envs: int
    update_steps: int = 0
    staleness: list[int] | None = None

    @property
    def episodes_per_minute(self) -> float:
        return 60.0 * self.episodes / self.wall

    @property
    def utilization(self) -> float:
        return self.stats.env_seconds / (self.wall * self.num_envs)

    @property
    def occupancy(self) -> float:
        return (self.stats.env_seconds + self.stats.policy_seconds) / (self.wall * self.num_envs)


def collector(pool: EnvPool, policy: ScriptedPolicy, seed: int) -> RolloutCollector:
    config = CollectorConfig(seed=seed, screenshot_format="png", policy_concurrency=1)
    return RolloutCollector(pool, policy, config)


def coupled(
    pool: EnvPool, policy: ScriptedPolicy, schedule: list[list[str]], updates: list[float], n: int
) -> Result:
    stats, episodes = CollectionStats(), 0
    start = time.monotonic()
    for k, (tasks, update) in enumerate(zip(schedule, updates, strict=True)):
        c = collector(pool, policy, seed=k)
        groups = c.collect(tasks, [n] * len(tasks))
        stats = stats + c.stats
        episodes += sum(len(g.trajectories) for g in groups)
        time.sleep(update)  # the update: the desktops idle
        policy.version = k + 1
    return Result(time.monotonic() - start, episodes, stats, pool.num_envs)


def decoupled(
    pool: EnvPool,
    policy: ScriptedPolicy,
    schedule: list[list[str]],
    updates: list[float],
    n: int,
    max_staleness: int,
) -> Result:
    lookahead = max(1, max_staleness)
    c = collector(pool, policy, seed=0)
    feed = TaskFeed()
    stream = c.stream(feed)
    received: dict[int, list[TrajectoryGroup]] = defaultdict(list)
    fed, episodes, staleness, update_steps = 0, 0, [], 0

    def feed_through(last: int) -> None:
        nonlocal fed
        while fed <= min(last, len(schedule) - 1):
            for task in schedule[fed]:
                feed.put(task, n, tag=fed)
            fed += 1

    start = time.monotonic()
    for k, update in enumerate(updates):
        feed_through(k + lookahead)
        while len(received[k]) < len(schedule[k]):
            tag, group = next(stream)
            received[tag].append(group)
        groups = received.pop(k)
        for group in groups:
            versions = [s.extra["weight_version"] for t in group.trajectories for s in t.steps]
            staleness.append(k - min(versions) if versions else 0)
        episodes += sum(len(g.trajectories) for g in groups)
        before = c.stats.steps
        time.sleep(update)  # the update: the desktops keep acting
        update_steps += c.stats.steps - before
        with policy._lock:
            policy.version = k + 1  # the push after the update
    wall = time.monotonic() - start
    feed.close()
    for _ in stream:  # nothing is fed past the last iteration: this ends at once
        pass
    return Result(wall, episodes, c.stats, pool.num_envs, update_steps, staleness)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=4, help="local desktops")
    parser.add_argument("--iterations", type=int, default=6, help="training iterations per mode")
    parser.add_argument(
        "--tasks-per-iteration", type=int, default=4, help="ui-basics tasks per iteration"
    )
    parser.add_argument("--group-size", type=int, default=2, help="rollouts per task")
    parser.add_argument(
        "--latency",
        type=float,
        nargs=2,
        default=[0.05, 0.4],
        metavar=("LOW", "HIGH"),
        help="policy latency per call, drawn uniformly from [LOW, HIGH] seconds (seeded)",
    )
    parser.add_argument(
        "--update",
        type=float,
        nargs=2,
        default=[2.0, 4.0],
        metavar=("LOW", "HIGH"),
        help="update time per iteration, drawn uniformly from [LOW, HIGH] seconds (seeded)",
    )
    parser.add_argument(
        "--max-staleness", type=int, default=1, help="versions a trained group may lag"
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the latencies and updates")
    args = parser.parse_args()

    ids = list(load_tasks(SUITE).ids)
    rng = np.random.default_rng(args.seed)
    schedule = [
        [str(t) for t in rng.choice(ids, args.tasks_per_iteration, replace=False)]
        for _ in range(args.iterations)
    ]
    updates = [float(u) for u in rng.uniform(*args.update, size=args.iterations)]
    with tempfile.TemporaryDirectory(prefix="bench-async-") as work:
        spec = EnvSpec(
            kwargs={
                "tasks": SUITE,
                "action_format": "uitars",
                "screen_size": SCREEN,
                "max_steps": MAX_STEPS,
                "provider": LocalProviderConfig(screen_size=SCREEN, work_dir=work),
            }
        )
        config = PoolConfig(screenshot_format="png")
        with EnvPool(spec, num_envs=args.envs, config=config) as pool:
            # Launch and warm every desktop before timing (one episode each, not counted).
            collector(pool, ScriptedPolicy(ids, (0.0, 0.0), args.seed), seed=99).collect(
                ids[: args.envs], [1] * args.envs
            )
            results: dict[str, Any] = {}
            results["coupled"] = coupled(
                pool, ScriptedPolicy(ids, args.latency, args.seed), schedule, updates,
                args.group_size,
            )  # fmt: skip
            results["async"] = decoupled(
                pool, ScriptedPolicy(ids, args.latency, args.seed), schedule, updates,
                args.group_size, args.max_staleness,
            )  # fmt: skip
    print(
        f"{args.envs} desktops, {args.iterations} iterations x {args.tasks_per_iteration} "
        f"{SUITE} tasks x {args.group_size} rollouts; policy latency U{tuple(args.latency)} s "
        f"per call; update U{tuple(args.update)} s (a fixed seeded sleep, "
        f"{sum(updates):.1f} s in all)"
    )
    print(f"{'mode':8} {'wall s':>7} {'episodes':>8} {'ep/min':>7} {'util':>6} {'occ':>6}")
    for name, r in results.items():
        print(
            f"{name:8} {r.wall:7.1f} {r.episodes:8d} {r.episodes_per_minute:7.1f} "
            f"{r.utilization:6.3f} {r.occupancy:6.3f}"
        )
    a, c = results["async"], results["coupled"]
    print(
        f"async steps during updates: {a.update_steps}; staleness of the groups trained on: "
        f"mean {np.mean(a.staleness):.2f}, max {max(a.staleness)}"
    )
    print(
        f"async / coupled: episodes/min {a.episodes_per_minute / c.episodes_per_minute:.2f}x, "
        f"utilization {a.utilization / c.utilization:.2f}x, "
        f"occupancy {a.occupancy / c.occupancy:.2f}x"
    )


if __name__ == "__main__":
    main()
