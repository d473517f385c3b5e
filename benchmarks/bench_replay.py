"""Replay under a byte budget: how often an all-failed group finds a stored success.

    python benchmarks/bench_replay.py [--seeds 5] [--iterations 120] [--budget-gib 2]

Simulates ARPO's schedule with the real ``ReplayBuffer`` (capacity 8
per task, inject into all-failed groups first, then store the original groups' successes) and
prints, side by side, the fraction of all-failed groups that found a stored success to inject,
for the buffer unbounded (ARPO), with ``eviction="oldest"`` and with ``eviction="largest-task"``,
at 300 KiB and 600 KiB per screenshot under the byte budget (2 GiB by default). Every policy
sees the same rollout outcomes (drawn before any buffer exists), so the columns are paired.

Task-difficulty model (stationary: the policy does not improve during the run):

* 128 tasks, 16 per iteration from seeded shuffled epochs (every task seen once per 8
  iterations, 15 times in 120), 8 rollouts per task: ARPO's paper run.
* Task ``t`` succeeds in each rollout independently with probability ``p_t``, drawn once per
  seed from Beta(0.5, 1.0) and clipped to [0.01, 0.95]: many hard tasks solved a few times in
  a hundred rollouts, a tail of easy ones (mean about 0.33; ARPO's tasks were all solved at
  least once by the base model, hence the floor).
* A success of task ``t`` takes ``4 + round(11 * (1 - p_t))`` steps (4 for the easiest, 15,
  the step limit, for the hardest): harder tasks need longer episodes. It is stored with one
  screenshot per step plus the final one, each of the given size; the token arrays are left
  out (a few KiB, under 1 percent of a step's PNG).

Seeds 0..seeds-1 drive everything (task rates, schedule, outcomes, the buffers' draws): the
output is the same on every run.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
import sys
import time

import numpy as np
from osworld_agents.arpo import ReplayBuffer, ReplayConfig

from osworld_gym.pool import StepRecord, Trajectory, TrajectoryGroup

KIB = 1024
TASKS = 128
TASKS_PER_ITERATION = 16
ROLLOUTS = 8


@dataclasses.dataclass(frozen=True)
class World:
    """One seed's tasks and every rollout outcome of the run."""

    rates: np.ndarray  # [TASKS] success probability per rollout
    steps: np.ndarray  # [TASKS] steps of a successful episode
    batches: list[list[int]]  # per iteration, the tasks rolled out
    successes: list[np.ndarray]  # per iteration, [TASKS_PER_ITERATION, ROLLOUTS] bool


def make_world(seed: int, iterations: int) -> World:
    """Draw the tasks, the schedule and every outcome of one seed (see the module docstring)."""
    rng = np.random.default_rng(seed)
    rates = np.clip(rng.beta(0.7, 0.35, TASKS), 0.01, 0.99)
    steps = 4 + np.rint(11 * (1 - rates)).astype(int)
    batches: list[list[int]] = []
    order: list[int] = []
    for _ in range(iterations):
        if len(order) < TASKS_PER_ITERATION:  # a fresh epoch, the leftover tail dropped
            order = [int(t) for t in rng.permutation(TASKS)]
        batches.append(order[:TASKS_PER_ITERATION])
        order = order[TASKS_PER_ITERATION:]
    successes = [rng.random((TASKS_PER_ITERATION, ROLLOUTS)) < rates[b][:, None] for b in batches]
    return World(rates, steps, batches, successes)


def episode(task: int, rollout: int, success: bool, steps: int, shot: bytes) -> Trajectory:
    """A finished episode; only a success carries its screenshots (failures are never stored)."""
    records = [StepRecord(shot, "click", text="Action: click()") for _ in range(steps)]
    return Trajectory(
        f"task-{task:03d}",
        rollout,
        steps=records if success else [],
        final_screenshot=shot if success else None,
        score=1.0 if success else 0.0,
        terminated=True,
    )


@dataclasses.dataclass
class Outcome:
    """One run's replay figures."""

    all_failed: int = 0
    found: int = 0
    evicted: int = 0
    tasks_held_at_end: int = 0

    @property
    def found_frac(self) -> float:
        """Fraction of all-failed groups that got a stored success."""
        return self.found / self.all_failed if self.all_failed else float("nan")


def simulate(world: World, config: ReplayConfig, shot: bytes, seed: int) -> Outcome:
    """Run the schedule through a buffer: inject into every group, then store the originals."""
    buffer = ReplayBuffer(config, seed=seed)
    outcome = Outcome()
    for batch, wins in zip(world.batches, world.successes, strict=True):
        groups = [
            TrajectoryGroup(
                f"task-{task:03d}",
                [
                    episode(task, r, bool(wins[i, r]), int(world.steps[task]), shot)
                    for r in range(ROLLOUTS)
                ],
            )
            for i, task in enumerate(batch)
        ]
        for group in groups:
            injection = buffer.inject(group)
            outcome.all_failed += injection.triggered
            outcome.found += injection.injected
        for group in groups:
            buffer.add_group(group)
    outcome.evicted = buffer.stats()["replay/evicted"]
    outcome.tasks_held_at_end = len(buffer.task_sizes())
    return outcome


def main(argv: list[str] | None = None) -> int:
    """Print the comparison table; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    parser.add_argument("--iterations", type=int, default=120)
    parser.add_argument("--budget-gib", type=float, default=2.0, help="replay_max_bytes in GiB")
    parser.add_argument(
        "--shot-kib", type=int, nargs="+", default=[300, 600], help="bytes per screenshot"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)  # the buffers' INFO eviction lines stay quiet
    budget = int(args.budget_gib * 2**30)
    worlds = [make_world(seed, args.iterations) for seed in range(args.seeds)]
    rates = np.concatenate([w.rates for w in worlds])
    print(
        f"{TASKS} tasks, {TASKS_PER_ITERATION} per iteration x {ROLLOUTS} rollouts, "
        f"{args.iterations} iterations, seeds 0..{args.seeds - 1}; per-rollout success rate "
        f"mean {rates.mean():.2f}, median {np.median(rates):.2f}, "
        f"{(rates < 0.05).mean():.0%} of tasks below 0.05; budget {args.budget_gib:g} GiB"
    )
    policies = [
        ("unbounded", ReplayConfig(max_bytes=None)),
        ("oldest", ReplayConfig(max_bytes=budget, eviction="oldest")),
        ("largest-task", ReplayConfig(max_bytes=budget, eviction="largest-task")),
    ]
    header = f"{'screenshot':>10}  " + "  ".join(f"{name:>22}" for name, _ in policies)
    print("fraction of all-failed groups that found a stored success, mean [min..max] over seeds")
    print(header)
    details: list[str] = []
    start = time.perf_counter()
    for kib in args.shot_kib:
        shot = b"\0" * (kib * KIB)  # one object shared by every step: the buffer counts len()
        cells = []
        for name, config in policies:
            runs = [simulate(w, config, shot, seed) for seed, w in enumerate(worlds)]
            fracs = [r.found_frac for r in runs]
            cells.append(f"{statistics.mean(fracs):6.1%} [{min(fracs):.0%}..{max(fracs):.0%}]")
            details.append(
                f"  {kib} KiB {name}: all-failed groups {sum(r.all_failed for r in runs)}, "
                f"found {sum(r.found for r in runs)}, evicted {sum(r.evicted for r in runs)}, "
                f"tasks held at the end {statistics.mean(r.tasks_held_at_end for r in runs):.1f}"
            )
        print(f"{kib:>6} KiB  " + "  ".join(f"{cell:>22}" for cell in cells))
    print("totals over seeds:")
    print("\n".join(details))
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
