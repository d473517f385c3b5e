r"""Run OSWorld episodes with UI-TARS behind any OpenAI-compatible endpoint (``osworld_episode``).

The hook for trainers that put a recording proxy in front of the model and want "an async
function that returns a reward" (rLLM AgentFlow, AReaL proxy agents, Agent Lightning): point
``--base-url`` at that proxy. Without a trainer, point it at a vLLM server:

    # GPU machine: serve the model (vLLM), then run 8 episodes on 4 local desktops
    vllm serve ByteDance-Seed/UI-TARS-1.5-7B --served-model-name ui-tars \
        --limit-mm-per-prompt '{"image": 15}'
    python examples/openai_endpoint/run_episodes.py --base-url http://127.0.0.1:8000/v1 \
        --model ui-tars --tasks desktop-basics --desktops 4 --episodes 8

Each episode borrows a desktop from a shared lease desk (launched once, reset per episode),
re-runs when an infrastructure fault cuts it, and prints its task, reward and steps.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from osworld_gym import load_tasks
from osworld_gym.integrations import close_shared_leases
from osworld_gym.integrations.episode import osworld_episode


async def run(args: argparse.Namespace) -> None:
    task_ids = load_tasks(args.tasks).ids
    chosen = [task_ids[i % len(task_ids)] for i in range(args.episodes)]
    env = {"tasks": args.tasks, "provider": args.provider}
    if args.screen_size:
        width, height = (int(v) for v in args.screen_size.lower().split("x"))
        env["screen_size"] = (width, height)
    outcomes = await asyncio.gather(
        *(
            osworld_episode(
                task_id, args.base_url, args.model, env=env, desk_size=args.desktops, rollout=i
            )
            for i, task_id in enumerate(chosen)
        )
    )
    for task_id, outcome in zip(chosen, outcomes, strict=True):
        print(f"{task_id:40s} reward={outcome.reward} steps={len(outcome.trajectory.steps)}")
    scored = [o.reward for o in outcomes if o.reward is not None]
    print(f"success rate {sum(scored) / max(1, len(scored)):.3f} over {len(scored)} scored")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", required=True, help="the served model name")
    parser.add_argument("--tasks", default="desktop-basics", help="suite, domain or file")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--screen-size", default=None, help="WxH (default: the env's 1920x1080)")
    parser.add_argument("--desktops", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    try:
        asyncio.run(run(args))
    finally:
        close_shared_leases()


if __name__ == "__main__":
    main()
