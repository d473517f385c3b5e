"""``osworld-gym serve-guest``: the guest server (what runs inside each desktop)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``serve-guest``."""
    serve = sub.add_parser(
        "serve-guest",
        help="run the guest server (arguments as osworld-gym-guest)",
        add_help=False,  # --help goes to the guest's own parser, with every option
        version=False,
    )
    serve.add_argument("guest_args", nargs=argparse.REMAINDER)
    serve.set_defaults(func=serve_guest_command)


def serve_guest_command(args: argparse.Namespace) -> int:
    """Run the guest server with the remaining arguments."""
    from osworld_gym.guest.server import main as guest_main

    return int(guest_main(args.guest_args, prog="osworld-gym serve-guest") or 0)
