"""``osworld-gym play``: a few episodes of ``OSWorld-v0`` with a random or do-nothing agent."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``play``."""
    play = sub.add_parser("play", help="run episodes with a random or do-nothing agent")
    play.add_argument("--tasks", default="desktop-basics", help="suite, folder or index JSON")
    play.add_argument("--agent", choices=["random", "noop"], default="random")
    play.add_argument("--episodes", type=int, default=2)
    play.add_argument("--max-steps", type=int, default=15)
    play.add_argument("--hard", action="store_true", help="OSWorld-Hard-v0: no FAIL replacement")
    play.add_argument("--width", type=int, default=1280)
    play.add_argument("--height", type=int, default=720)
    play.add_argument("--seed", type=int, default=0)
    play.set_defaults(func=play_command)


def play_command(args: argparse.Namespace) -> int:
    """Run the ``play`` subcommand."""
    import gymnasium as gym

    import osworld_gym  # noqa: F401 - registers the ids

    env_id = "OSWorld-Hard-v0" if args.hard else "OSWorld-v0"
    env = gym.make(
        env_id,
        tasks=args.tasks,
        screen_size=(args.width, args.height),
        max_steps=args.max_steps,
        action_format="uitars",
    )
    space = env.unwrapped.action_space
    sampler = type(space)(dialect="uitars", screen_size=(args.width, args.height), seed=args.seed)
    try:
        for episode in range(args.episodes):
            obs, info = env.reset(seed=args.seed + episode)
            sys.stdout.write(f"episode {episode}: task {info['task_id']}: {obs['instruction']}\n")
            done = False
            while not done:
                action = "Action: wait()" if args.agent == "noop" else sampler.sample()
                obs, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            timing = ", ".join(f"{k} {v:.2f}s" for k, v in info["timings"].items())
            sys.stdout.write(
                f"  {info['step']} steps, reward {reward:.2f}, "
                f"fail replaced {info['fail_replaced']}; last step: {timing}\n"
            )
    finally:
        env.close()
    return 0
