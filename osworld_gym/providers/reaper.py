"""A watchdog that stops a desktop's processes when the process that launched it goes away.

Started by the ``local`` and ``qemu`` providers with a pipe on stdin. The launcher never writes
to it; when the launcher exits for any reason (including SIGKILL) the pipe closes, ``read``
returns, and the reaper kills every process carrying the desktop's marker, then deletes the
desktop's folders given after the marker (its private home and state would otherwise stay in
the temp folder).

When the launcher died (``--parent`` names it, and this process has been handed to another
parent since), the reaper also sweeps the ``--sweep`` folders: every folder there whose owning
process is gone (``osworld_gym.providers.processes.remove_dead_folders()``), such as the
launcher's env evaluation folders, which have no watchdog of their own. A watchdog killed
together with its launcher (Ray kills a dead worker's children, so does a tree kill) cleans
nothing: the next provider start sweeps then.

Run as ``python -m osworld_gym.providers.reaper MARKER [FOLDER ...] [--parent PID]
[--sweep DIR ...]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from osworld_gym.providers.processes import kill_marked, remove_dead_folders, remove_tree


class _Stop(Exception):
    """Raised by the SIGTERM handler to leave the blocking read."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m osworld_gym.providers.reaper")
    parser.add_argument("marker", help="the desktop's process marker")
    parser.add_argument("folders", nargs="*", type=Path, help="the desktop's folders to delete")
    parser.add_argument("--parent", type=int, help="PID of the launcher")
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        type=Path,
        help="where to remove dead processes' folders once the launcher has died",
    )
    return parser.parse_args(argv)


def _wait_for_launcher() -> None:
    """Block until stdin closes (the launcher closed it or died) or SIGTERM arrives."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (_Stop, OSError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Wait for stdin to close (or SIGTERM), then stop the desktop and delete its folders."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    # Ctrl-C in the launcher's terminal reaches this process group too: survive it, so the
    # sweep happens after the launcher is gone rather than racing its own cleanup.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    _wait_for_launcher()
    kill_marked(args.marker)
    for folder in args.folders:
        remove_tree(folder)
    # An orphan is re-parented: a launcher that closed the pipe itself is still the parent.
    if args.parent is not None and os.getppid() != args.parent:
        for parent in dict.fromkeys(args.sweep):
            remove_dead_folders(parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
