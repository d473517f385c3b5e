"""A watchdog that stops a desktop's processes when the process that launched it goes away.

Started by the ``local`` provider with a pipe on stdin. The launcher never writes to it; when
the launcher exits for any reason (including SIGKILL) the pipe closes, ``read`` returns, and the
reaper kills every process carrying the desktop's marker, then deletes the desktop's folders
given after the marker (its private home and state would otherwise stay in the temp folder).
Run as ``python -m osworld_gym.providers.reaper MARKER [FOLDER ...]``.
"""

from __future__ import annotations

import shutil
import signal
import sys

from osworld_gym.providers.processes import kill_marked


class _Stop(Exception):
    """Raised by the SIGTERM handler to leave the blocking read."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def main(argv: list[str] | None = None) -> int:
    """Wait for stdin to close (or SIGTERM), then stop the desktop and delete its folders."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stderr.write("usage: python -m osworld_gym.providers.reaper MARKER [FOLDER ...]\n")
        return 2
    marker, folders = args[0], args[1:]
    # Ctrl-C in the launcher's terminal reaches this process group too: survive it, so the
    # sweep happens after the launcher is gone rather than racing its own cleanup.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (_Stop, OSError):
        pass
    kill_marked(marker)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
