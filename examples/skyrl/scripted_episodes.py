"""Drive the SkyRL ``osworld`` env with scripted answers, the way SkyRL's generator does (CPU).

No model and no GPU: each trajectory is made with ``skyrl_gym.make("osworld", ...)`` from a
dataset row, then ``init`` / ``step`` / ``get_metrics`` / ``close`` run on a thread pool as in
SkyRL's VLM generator (``environment.skyrl_gym.max_env_workers`` threads). The "model" answers
with the ``ui-basics`` oracle (scores 1) or a distractor (scores 0). Prints each trajectory's
rewards and the batch metrics SkyRL would log as ``environment/*``.

Usage (osworld-gym with the ``skyrl`` extra and the desktop stack installed)::

    python examples/skyrl/scripted_episodes.py                 # 8 trajectories on 2 desktops
    python examples/skyrl/scripted_episodes.py --desktops 4 --trajectories 16
"""

from __future__ import annotations

import argparse
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import skyrl_gym

from osworld_gym.integrations import skyrl as osworld_skyrl  # registers env class "osworld"
from osworld_gym.integrations.lease import close_shared_leases
from osworld_gym.policies.oracles.ui_basics import (
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    oracle_responses,
)


def trajectory(row: dict[str, Any], correct: bool, max_turns: int) -> dict[str, Any]:
    """One trajectory in SkyRL's call order; the answers come from the oracle, not a model."""
    task_id = row["task_id"]
    answers = oracle_responses(task_id)
    if not correct:
        answers = oracle_responses(task_id, answer=distractor_answer(task_id))
    # SkyRL passes every non-prompt column as extras and sets max_turns from generator.max_turns.
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = max_turns
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    conversation, _ = env.init(row["prompt"])
    rewards = []
    done = False
    while not done:
        text = answers[min(len(rewards), len(answers) - 1)]  # the "model's" response
        out = env.step(text)
        conversation.append({"role": "assistant", "content": text})
        conversation.extend(out["observations"])
        rewards.append(out["reward"])
        done = out["done"]
    metrics = env.get_metrics()
    env.close()
    return {"task_id": task_id, "correct": correct, "rewards": rewards, "metrics": metrics}


def main() -> None:
    """Run a batch of scripted trajectories and print what SkyRL would see."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--desktops", type=int, default=2, help="desk_size (local desktops)")
    parser.add_argument("--trajectories", type=int, default=8)
    parser.add_argument("--max-env-workers", type=int, default=32)
    parser.add_argument("--max-turns", type=int, default=15, help="generator.max_turns")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    config = {"tasks": SUITE, "screen_size": list(SCREEN_SIZE), "desk_size": args.desktops}
    rows = osworld_skyrl.skyrl_dataset_rows(config=config)
    batch = [(rows[i % len(rows)], i % 2 == 0) for i in range(args.trajectories)]
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(args.max_env_workers) as pool:
            futures = [pool.submit(trajectory, row, ok, args.max_turns) for row, ok in batch]
            results = [future.result() for future in futures]
    finally:
        close_shared_leases()
    elapsed = time.monotonic() - started
    for result in results:
        answer = "oracle" if result["correct"] else "distractor"
        print(f"{result['task_id']:<18} {answer:<10} rewards={result['rewards']}")
    aggregated = osworld_skyrl.OSWorldTextEnv.aggregate_metrics([r["metrics"] for r in results])
    for key, value in aggregated.items():
        print(f"environment/{key} = {value:.3f}")
    print(f"{len(results)} trajectories on {args.desktops} desktops in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
