"""The ``osworld-gym`` command.

Subcommands:
    serve-guest  run the guest server for a display (what runs inside each desktop)
    desktop      launch a ``local`` desktop, show that it works, and optionally keep it up
    tasks        list or show tasks of a suite or folder, or report which are fully supported
    play         run episodes of ``OSWorld-v0`` with a random or do-nothing agent
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

logger = logging.getLogger(__name__)


def _serve_guest(args: argparse.Namespace) -> int:
    from osworld_gym.guest.server import main as guest_main

    return guest_main(args.guest_args)


def _desktop(args: argparse.Namespace) -> int:
    from osworld_gym.providers.local import LocalProvider, LocalProviderConfig

    config = LocalProviderConfig(screen_size=(args.width, args.height))
    with LocalProvider(config).launch() as desktop:
        client = desktop.client
        info = client.info()
        sys.stdout.write(
            f"desktop {desktop.display} up; guest {desktop.endpoint} "
            f"(version {info.version}, screen {info.screen_size})\n"
        )
        if args.demo:
            _demo(desktop)
        if args.screenshot:
            shot = client.screenshot(settle=True)
            Path(args.screenshot).write_bytes(shot.data)
            sys.stdout.write(f"screenshot {shot.width}x{shot.height} -> {args.screenshot}\n")
        if args.hold:
            token = f" token {desktop.token}" if desktop.token else ""
            sys.stdout.write(f"holding for {args.hold:g} s (Ctrl-C to stop);{token}\n")
            sys.stdout.flush()
            try:
                time.sleep(args.hold)  # the user asked to keep the desktop up this long
            except KeyboardInterrupt:
                pass
    sys.stdout.write("desktop closed\n")
    return 0


def _demo(desktop: object) -> None:
    """Open a terminal, type a command into it, and check its effect through the guest."""
    from osworld_gym.providers.base import Desktop

    assert isinstance(desktop, Desktop)
    client = desktop.client
    client.launch(["xterm", "-title", "demo", "-geometry", "100x30+40+40"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if "demo" in client.execute("wmctrl -l", shell=True).output:
            break
        time.sleep(0.1)
    client.activate_window("demo")
    client.actions(
        [
            {"kind": "click", "x": 300, "y": 200},
            {"kind": "type", "text": "echo 'hello from osworld-gym' > ~/Desktop/hello.txt\n"},
        ]
    )
    deadline = time.monotonic() + 10
    content = b""
    while time.monotonic() < deadline and not content:
        try:
            content = client.download("~/Desktop/hello.txt")
        except Exception:  # noqa: BLE001 - not written yet
            time.sleep(0.1)
    sys.stdout.write(f"typed into xterm; ~/Desktop/hello.txt holds {content.decode().strip()!r}\n")


def _tasks(args: argparse.Namespace) -> int:
    from osworld_gym.support import format_report, support_report
    from osworld_gym.tasks import available_suites, load_tasks

    if args.action == "suites":
        sys.stdout.write("\n".join(available_suites()) + "\n")
        return 0
    tasks = load_tasks(args.source, domain=args.domain)
    if args.action == "list":
        for task in tasks:
            flag = " (infeasible)" if task.infeasible else ""
            sys.stdout.write(f"{task.domain}/{task.id}{flag}: {task.instruction}\n")
    elif args.action == "show":
        import json

        sys.stdout.write(json.dumps(tasks[args.task_id].to_dict(), indent=2) + "\n")
    else:
        report = support_report(tasks)
        sys.stdout.write(format_report(report, verbose=not args.summary) + "\n")
    return 0


def _play(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``osworld-gym``."""
    parser = argparse.ArgumentParser(prog="osworld-gym", description=__doc__.split("\n")[0])
    parser.add_argument("--log-level", default="WARNING")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve-guest", help="run the guest server (args as osworld-gym-guest)")
    serve.add_argument("guest_args", nargs=argparse.REMAINDER)
    serve.set_defaults(func=_serve_guest)

    desktop = sub.add_parser("desktop", help="launch a local desktop")
    desktop.add_argument("--width", type=int, default=1920)
    desktop.add_argument("--height", type=int, default=1080)
    desktop.add_argument("--demo", action="store_true", help="type into a terminal and check it")
    desktop.add_argument("--screenshot", help="save a settled screenshot to this PNG path")
    desktop.add_argument("--hold", type=float, default=0.0, help="keep the desktop up N seconds")
    desktop.set_defaults(func=_desktop)

    tasks = sub.add_parser("tasks", help="list, show and check tasks")
    tasks.add_argument("action", choices=["suites", "list", "show", "report"])
    tasks.add_argument(
        "source",
        nargs="?",
        default="desktop-basics",
        help="suite name, OSWorld folder, index JSON or task file",
    )
    tasks.add_argument("task_id", nargs="?", help="for show: the task id")
    tasks.add_argument("--domain", help="only this domain")
    tasks.add_argument("--summary", action="store_true", help="report: counts only")
    tasks.set_defaults(func=_tasks)

    play = sub.add_parser("play", help="run episodes with a random or do-nothing agent")
    play.add_argument("--tasks", default="desktop-basics", help="suite, folder or index JSON")
    play.add_argument("--agent", choices=["random", "noop"], default="random")
    play.add_argument("--episodes", type=int, default=2)
    play.add_argument("--max-steps", type=int, default=15)
    play.add_argument("--hard", action="store_true", help="OSWorld-Hard-v0: no FAIL replacement")
    play.add_argument("--width", type=int, default=1280)
    play.add_argument("--height", type=int, default=720)
    play.add_argument("--seed", type=int, default=0)
    play.set_defaults(func=_play)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``osworld-gym`` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
