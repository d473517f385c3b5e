"""The GNOME session of osworld-gym's guest image (``OSWORLD_SESSION=gnome``).

The image (``vm_images/``: the docker provider's containers, the qemu recipe's VM) runs the same
GNOME session as a ``local`` desktop (:mod:`osworld_gym.providers.gnome_session`): its files are
written once, when the image is built, into :data:`STATE` (root's: no program of the desktop can
change them), and the image's session script (``/usr/local/lib/osworld-gym/session.sh``) starts
it with their help. Run as ``python -m osworld_gym.providers.gnome_image COMMAND``:

- ``install`` (image build, root): the session's files, and the environment its programs get
  (``session.env``, ``shell.env``: ``KEY=VALUE`` lines the scripts export).
- ``monitors WIDTHxHEIGHT`` (the container's start, root): GNOME Shell's monitor configuration
  for the container's screen size.
- ``prepare`` (each start of the session, as the desktop's user, on its X server): what a local
  desktop's reset gives a GNOME session: HOME's GNOME files (:func:`gnome_session.write_home`) on
  top of the restored HOME, the time settings of a new episode, the X server's fast mode.
- ``wait-ready`` (as the user): until GNOME Shell manages windows and has laid the desktop out.

Unlike a local desktop, the image's reset restarts GNOME Shell (a new container, or the in-place
reset): nothing of the last episode's shell is kept.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from osworld_gym.providers import gnome_session

logger = logging.getLogger(__name__)

STATE = Path("/usr/share/osworld-gym")  # the session's files are in STATE / "gnome"
# Where a system bus is on Debian and Ubuntu: programs find it without being told.
SYSTEM_BUS_SOCKET = "/run/dbus/system_bus_socket"
SESSION_ENV = "session.env"  # every program of the session
SHELL_ENV = "shell.env"  # GNOME Shell, besides SESSION_ENV
_POLL_SECONDS = 0.02


def _folder(state: Path) -> Path:
    return state / "gnome"


def install(state: Path, home: Path, runtime_dir: str) -> gnome_session.GnomeFiles:
    """Write the session's files into ``state / "gnome"`` (an image build).

    Args:
        state: Where they go; the desktop sees them at the same path.
        home: The image's default HOME (its settings database, if any, is the template's).
        runtime_dir: The desktop user's runtime folder (where the time settings are).
    """
    files = gnome_session.write_files(
        state,
        SYSTEM_BUS_SOCKET,
        str(home),
        state_inside=str(state),
        runtime_inside=runtime_dir,
    )
    session = gnome_session.session_environment(
        schemas=str(files.schemas), data=str(files.data), system_bus=SYSTEM_BUS_SOCKET
    )
    shell = gnome_session.window_manager_environment(str(files.config))
    for name, env in ((SESSION_ENV, session), (SHELL_ENV, shell)):
        (_folder(state) / name).write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return files


def prepare(state: Path, home: Path, runtime_dir: Path, display: str) -> None:
    """Make HOME, the runtime folder and the X server a new GNOME episode's (as the user).

    Raises:
        OSError: the session's files are missing (an image built without them).
    """
    files = gnome_session.GnomeFiles.in_state(state)
    if not files.user_database.is_file():
        raise OSError(f"no GNOME session files in {_folder(state)} (an image without GNOME)")
    gnome_session.write_home(home, files)
    gnome_session.write_time_settings(runtime_dir)
    from Xlib import display as xdisplay

    from osworld_gym.providers import x_state

    conn = xdisplay.Display(display)
    try:
        if not x_state.set_refresh_rate(conn, gnome_session.REFRESH_HZ):
            logger.warning("the X server %s has no RandR mode to set: 60 frames a second", display)
    finally:
        conn.close()


def wait_ready(display: str, timeout: float) -> bool:
    """Wait until GNOME Shell manages windows (``WM_S0``) and has laid the desktop out."""
    from Xlib import display as xdisplay

    from osworld_gym.providers import window_manager

    deadline = time.monotonic() + timeout
    conn = xdisplay.Display(display)
    try:
        while True:
            if window_manager.selection_owner(conn):
                properties = dict(window_manager.read_state(conn).properties)
                if gnome_session.laid_out(properties):
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_SECONDS)  # the shell lays out on its own main loop
    finally:
        conn.close()


def _screen(text: str) -> tuple[int, int]:
    width, sep, height = text.partition("x")
    if not sep or not width.isdigit() or not height.isdigit():
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}")
    return int(width), int(height)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="python -m osworld_gym.providers.gnome_image")
    parser.add_argument("--state", type=Path, default=STATE, help="where the files are")
    commands = parser.add_subparsers(dest="command", required=True)
    install_cmd = commands.add_parser("install", help="write the session's files (image build)")
    install_cmd.add_argument("--home", type=Path, required=True)
    install_cmd.add_argument("--runtime-dir", required=True)
    monitors = commands.add_parser("monitors", help="GNOME Shell's monitor configuration")
    monitors.add_argument("screen", type=_screen)
    commands.add_parser("prepare", help="HOME, time settings and X mode of a new episode")
    ready = commands.add_parser("wait-ready", help="wait until GNOME Shell has laid out")
    ready.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="gnome_image: %(message)s")
    try:
        if args.command == "install":
            install(args.state, args.home, args.runtime_dir)
        elif args.command == "monitors":
            gnome_session.write_monitors(
                gnome_session.GnomeFiles.in_state(args.state).config, args.screen
            )
        elif args.command == "prepare":
            prepare(
                args.state,
                Path(os.environ["HOME"]),
                Path(os.environ["XDG_RUNTIME_DIR"]),
                os.environ["DISPLAY"],
            )
        elif not wait_ready(os.environ["DISPLAY"], args.timeout):
            logger.error("GNOME Shell did not lay the desktop out in %.0f s", args.timeout)
            return 1
    except KeyError as e:
        logger.error("%s needs %s in the environment", args.command, e)
        return 1
    except OSError as e:
        logger.error("%s failed: %s", args.command, e)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
