"""``osworld-gym play``: a few episodes of ``OSWorld-v0`` with a random or do-nothing agent.

Episodes sample tasks from ``--tasks``, so before the first one every task there is checked for
the extras it needs (``eval`` for office files...). Tasks that need a missing one are left out,
said once on stderr with the command that installs it (a first look at the env works on a core
install); when no task is left, the command is refused with exit status 2 before any desktop
starts.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

from osworld_gym.cli_options import ScreenSideAlias, positive_int, screen_size
from osworld_gym.errors import MissingExtraError
from osworld_gym.extras import check_tasks, missing_needs, runs_this_python, task_needs


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
        playable = _playable_task_ids(env.unwrapped, args.tasks)
        for episode in range(args.episodes):
            seed = args.seed + episode
            # All playable: the env samples as it always does; else among the playable ones.
            chosen = None if playable is None else random.Random(seed).choice(playable)
            options = None if chosen is None else {"task_id": chosen}
            obs, info = env.reset(seed=seed, options=options)
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


def _playable_task_ids(osworld: Any, suite: str) -> list[str] | None:
    """The tasks ``play`` may sample: None for all, else those whose extras are installed.

    Any task may be sampled, so each is checked before the first episode, not when drawn.

    Raises:
        MissingExtraError: No task of the suite can run here (naming the extras to install).
    """
    guest_python = runs_this_python(osworld.provider)
    try:
        check_tasks(
            osworld.tasks, osworld.evaluator, what=f" of {suite!r}", guest_python=guest_python
        )
    except MissingExtraError as missing:
        playable = [
            task.id
            for task in osworld.tasks
            if not missing_needs(task_needs(task, osworld.evaluator, guest_python=guest_python))
        ]
        if not playable:
            raise
        sys.stderr.write(f"osworld-gym play: {missing}; playing the other {len(playable)} tasks\n")
        return playable
    return None
