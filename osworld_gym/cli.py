"""The ``osworld-gym`` command.

Subcommands (each in ``osworld_gym.commands``):
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

The same names mean the same things in every subcommand: --output-dir (a folder written),
--output (a single file written), --screen-size WxH, --tasks, --provider, --num-envs, --seed.
Each subcommand's --help shows its options with their defaults.

Exit status: 0 success; 1 an error while running (one line on stderr; --log-level DEBUG adds
the traceback); 2 a usage error (bad arguments, one line on stderr) or a missing extra (refused
before anything starts, with the exact command that installs it); 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys

from osworld_gym.cli_options import Parser, add_log_level, report_missing_part, report_run_error
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
from osworld_gym.errors import DependencyNotInstalled

logger = logging.getLogger(__name__)

_SUBCOMMANDS = (doctor, tasks, run, view, export, guest, serve_env, image, desktop, play)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``osworld-gym``."""
    parser = Parser(
        prog="osworld-gym",
        description=__doc__.split("\n")[0],
        epilog="\n".join(__doc__.splitlines()[2:]),
    )
    add_log_level(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _SUBCOMMANDS:
        module.add_parser(sub)
    for subparser in sub.choices.values():
        # Also after the subcommand's name; unset there, so the main option's value stands.
        if not any("--log-level" in a.option_strings for a in subparser._actions):
            add_log_level(subparser, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``osworld-gym`` console script.

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).

    Returns:
        The exit status (see the epilog): also for help, ``--version`` and usage errors, which
        argparse ends with ``SystemExit``.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    split = _subcommand_index(argv)
    try:
        if split is not None and argv[split] == "serve-guest":
            # Everything after serve-guest belongs to the guest's own parser, which argparse's
            # REMAINDER would not hand over when it starts with an option (--display ...).
            args = parser.parse_args(argv[: split + 1])
            args.guest_args = argv[split + 1 :]
        else:
            args = parser.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code is None else e.code if isinstance(e.code, int) else 2
    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    return run_subcommand(args)


def run_subcommand(args: argparse.Namespace) -> int:
    """Run the parsed subcommand: an error it raises is one line on stderr and status 1.

    A missing optional part (``DependencyNotInstalled``, whose message
    holds the install command) is status 2, as for a usage error: the command cannot run here
    as asked. ``--log-level DEBUG`` logs the traceback as well; Ctrl-C is status 130.
    """
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        sys.stderr.write(f"osworld-gym {args.command}: interrupted\n")
        return 130
    except DependencyNotInstalled as e:
        return report_missing_part(f"osworld-gym {args.command}", e, args.log_level, logger)
    except Exception as e:  # noqa: BLE001 - every error a subcommand lets out becomes one line
        return report_run_error(f"osworld-gym {args.command}", e, args.log_level, logger)


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
