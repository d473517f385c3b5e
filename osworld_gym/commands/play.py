"""``osworld-gym play``: a few episodes of ``OSWorld-v0`` with a random or do-nothing agent."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from osworld_gym.cli_options import ScreenSideAlias, positive_int, screen_size


def add_parser(sub: Any) -> None:
    """Register ``play``."""
    play = sub.add_parser(
        "play", help="run episodes with a random or do-nothing agent", description=__doc__
    )
    play.add_argument("--tasks", default="desktop-basics", help="suite, folder or index JSON")
    play.add_argument(
        "--agent", choices=["random", "noop"], default="random", help="what acts each step"
    )
    play.add_argument("--episodes", type=positive_int, default=2, help="episodes to run")
    play.add_argument("--max-steps", type=positive_int, default=15, help="step limit per episode")
    play.add_argument("--hard", action="store_true", help="OSWorld-Hard-v0: no FAIL replacement")
    play.add_argument(
        "--screen-size", type=screen_size, default=(1280, 720), metavar="WxH", help="screen"
    )
    for side, option in enumerate(("--width", "--height")):  # deprecated: --screen-size WxH
        play.add_argument(
            option, dest="screen_size", action=ScreenSideAlias, side=side, help=argparse.SUPPRESS
        )
    play.add_argument("--seed", type=int, default=0, help="seeds the episodes and the agent")
    play.set_defaults(func=play_command)


def play_command(args: argparse.Namespace) -> int:
    """Run the ``play`` subcommand."""
    import gymnasium as gym

    import osworld_gym  # noqa: F401 - registers the ids

    env_id = "OSWorld-Hard-v0" if args.hard else "OSWorld-v0"
    env = gym.make(
        env_id,
        tasks=args.tasks,
        screen_size=args.screen_size,
        max_steps=args.max_steps,
        action_format="uitars",
    )
    space = env.unwrapped.action_space
    sampler = type(space)(dialect="uitars", screen_size=args.screen_size, seed=args.seed)
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
