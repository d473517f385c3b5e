"""The ``osworld-gym`` command.

Subcommands (each in :mod:`osworld_gym.commands`):
    doctor       check the host for each provider and the metric libraries (the eval extra);
                 print the exact fix for what is missing
    tasks        list suites and tasks, show one, report which are supported or runnable on a
                 provider here, fetch their assets into the cache
    run          run an agent over tasks on N envs; OSWorld's results layout; resumable
    view         a self-contained HTML report of a run
    export       a run or a replay buffer as a Hugging Face datasets Parquet dataset
    serve-guest  run the guest server for a display (what runs inside each desktop)
    serve-env    serve desktops as an OpenEnv environment, one per WebSocket session (the
                 openenv extra)
    image        build guest images from the vm_images/ recipes
    desktop      launch a ``local`` desktop, show that it works, and optionally keep it up
    play         run a few episodes of ``OSWorld-v0`` with a random or do-nothing agent
"""

from __future__ import annotations

import argparse
import logging
import sys

from osworld_gym.commands import (
    desktop,
    doctor,
    export,
    guest,
    image,
    play,
    run,
    serve_env,
    tasks,
    view,
)

logger = logging.getLogger(__name__)

_SUBCOMMANDS = (doctor, tasks, run, view, export, guest, serve_env, image, desktop, play)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``osworld-gym``."""
    parser = argparse.ArgumentParser(
        prog="osworld-gym",
        description=__doc__.split("\n")[0],
        epilog="\n".join(__doc__.splitlines()[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--log-level", default="WARNING")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in _SUBCOMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``osworld-gym`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    split = _subcommand_index(argv)
    if split is not None and argv[split] == "serve-guest":
        # Everything after serve-guest belongs to the guest's own parser, which argparse's
        # REMAINDER would not hand over when it starts with an option (--display ...).
        args = parser.parse_args(argv[: split + 1])
        args.guest_args = argv[split + 1 :]
    else:
        args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    return int(args.func(args))


def _subcommand_index(argv: list[str]) -> int | None:
    """Where the subcommand's name is: after the global ``--log-level`` option, if any."""
    i = 0
    while i < len(argv):
        if argv[i] == "--log-level":
            i += 2
        elif argv[i].startswith("--log-level="):
            i += 1
        else:
            return i
    return None


if __name__ == "__main__":
    sys.exit(main())
