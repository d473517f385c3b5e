"""Trajectories through the lease desk vs the same episodes in TRL's serial call order.

    python benchmarks/bench_leases.py [--envs 4 8] [--rounds 2] [--policy-ms 0 300]

TRL's ``GRPOTrainer(environment_factory=...)`` generates for the whole batch at once but calls the
environments one at a time: ``reset`` for each rollout in turn, then, every turn, each sample's tool
call in turn (trl 1.16.0, ``grpo_trainer.py``;
``docs/howto/other-trainers.md#trl-calls-envs-one-at-a-time``). Trainers that run one coroutine per
trajectory (verl's agent loops, SkyRL's generator, ``osworld_episode``) instead drive every desktop
at once through ``DesktopLeases``.

Both modes run the same episodes on the same ``local`` desktops (``ui-basics``, 336x224,
launched before timing): each of n envs runs ``--rounds`` episodes of the suite's oracle (a
click or a typed word, then ``finished``), with a simulated policy call of ``--policy-ms``
before every action. Serial: the batch's policy call once per turn (TRL batches generation),
then each env's step in turn. Leases: n coroutines, each with its own policy call and step.

Prints episodes/min for each mode and the leases/serial ratio, per pool size.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from osworld_gym import load_tasks
from osworld_gym.integrations import DesktopLeases, Lease
from osworld_gym.policies.oracles.ui_basics import SCREEN_SIZE, SUITE, oracle_responses
from osworld_gym.pool import PoolConfig
from osworld_gym.providers.local.provider import LocalProviderConfig


def _episodes(n: int, rounds: int) -> list[list[str]]:
    """Per env, the task ids of its episodes (the same plan for both modes)."""
    ids = load_tasks(SUITE).ids
    return [[ids[(env * rounds + r) % len(ids)] for r in range(rounds)] for env in range(n)]


def serial(leases: list[Lease], plan: list[list[str]], policy_s: float) -> tuple[float, int]:
    """TRL's order: reset each env in turn; per turn one batched policy call, then each step."""
    started, scored = time.perf_counter(), 0
    for r in range(len(plan[0])):
        tasks = [plan[env][r] for env in range(len(leases))]
        answers = [oracle_responses(t) for t in tasks]
        results = [lease.reset(t) for lease, t in zip(leases, tasks, strict=True)]
        turn = 0
        while not all(result.done for result in results):
            time.sleep(policy_s)  # the batch's generation (simulated model time)
            for i, lease in enumerate(leases):
                if not results[i].done:
                    results[i] = lease.step(answers[i][min(turn, len(answers[i]) - 1)])
            turn += 1
        scored += sum(result.info.get("score") == 1.0 for result in results)
    return time.perf_counter() - started, scored


async def concurrent(
    leases: list[Lease], plan: list[list[str]], policy_s: float
) -> tuple[float, int]:
    """One coroutine per env, each with its own (simulated) policy calls."""

    async def run(lease: Lease, tasks: list[str]) -> int:
        scored = 0
        for task_id in tasks:
            answers = oracle_responses(task_id)
            result = await lease.areset(task_id)
            turn = 0
            while not result.done:
                await asyncio.sleep(policy_s)  # this trajectory's generation
                result = await lease.astep(answers[min(turn, len(answers) - 1)])
                turn += 1
            scored += result.info.get("score") == 1.0
        return scored

    started = time.perf_counter()
    runs = [run(lease, tasks) for lease, tasks in zip(leases, plan, strict=True)]
    scores = await asyncio.gather(*runs)
    return time.perf_counter() - started, sum(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--rounds", type=int, default=2, help="episodes per env per mode")
    parser.add_argument("--policy-ms", type=float, nargs="+", default=[0.0, 300.0])
    args = parser.parse_args()

    print(f"{'envs':>4} {'policy':>7} {'serial ep/min':>14} {'leases ep/min':>14} {'ratio':>6}")
    for n in args.envs:
        with tempfile.TemporaryDirectory(prefix="bench-leases-") as work:
            env = {
                "tasks": SUITE,
                "screen_size": SCREEN_SIZE,
                "provider": LocalProviderConfig(screen_size=SCREEN_SIZE, work_dir=str(Path(work))),
            }
            config = PoolConfig(max_concurrent_resets=n)
            with DesktopLeases(env, n, config=config) as desk:
                leases = [desk.acquire() for _ in range(n)]
                for lease in leases:  # launch every desktop before timing
                    lease.reset(load_tasks(SUITE).ids[0])
                plan = _episodes(n, args.rounds)
                episodes = n * args.rounds
                for policy_ms in args.policy_ms:
                    policy_s = policy_ms / 1000
                    serial_s, serial_ok = serial(leases, plan, policy_s)
                    lease_s, lease_ok = asyncio.run(concurrent(leases, plan, policy_s))
                    assert serial_ok == lease_ok == episodes, (serial_ok, lease_ok, episodes)
                    s_rate, l_rate = 60 * episodes / serial_s, 60 * episodes / lease_s
                    print(
                        f"{n:>4} {policy_ms:>5.0f}ms {s_rate:>14.1f} {l_rate:>14.1f} "
                        f"{l_rate / s_rate:>5.2f}x",
                        flush=True,
                    )
                for lease in leases:
                    lease.release()


if __name__ == "__main__":
    main()
