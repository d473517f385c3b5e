"""The GNOME session of osworld-gym's guest image (``OSWORLD_SESSION=gnome``).

The image (``vm_images/``: the docker provider's containers, the qemu recipe's VM) runs the same
GNOME session as a ``local`` desktop (``osworld_gym.providers.desktop.gnome_session``): its files
are written once, when the image is built, into ``STATE`` (root's: no program of the desktop can
change them), and the image's session script (``/usr/local/lib/osworld-gym/session.sh``) starts
it with their help. Run as ``python -m osworld_gym.providers.desktop.gnome_image COMMAND``:

- ``install`` (image build, root): the session's files, and the environment its programs get
  (``session.env``, ``shell.env``: ``KEY=VALUE`` lines the scripts export).
- ``monitors WIDTHxHEIGHT`` (the container's start, root): GNOME Shell's monitor configuration
  for the container's screen size.
- ``start`` (each start of the session, as the desktop's user, on its X server): first what a
  local desktop's reset gives a GNOME session: HOME's GNOME files (``gnome_session.write_home()``)
  on top of the restored HOME, the time settings of a new episode, the X server's fast mode and
  none of the last shell's settings on its root window; then it prints ``prepared``, and waits
  until the GNOME Shell the session script starts meanwhile manages windows and has laid the
  desktop out and drawn its icons. One process for both: each Python start with this package's
  imports costs about 0.4 s of the reset.

Unlike a local desktop, the image's reset restarts GNOME Shell (a new container, or the in-place
reset): nothing of the last episode's shell is kept.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from osworld_gym.providers.desktop import gnome_session

logger = logging.getLogger(__name__)

STATE = Path("/usr/share/osworld-gym")  # the session's files are in STATE / "gnome"
# Where a system bus is on Debian and Ubuntu: programs find it without being told.
SYSTEM_BUS_SOCKET = "/run/dbus/system_bus_socket"
SESSION_ENV = "session.env"  # every program of the session
SHELL_ENV = "shell.env"  # GNOME Shell, besides SESSION_ENV
_POLL_SECONDS = 0.02
PREPARED = "prepared"  # what ``start`` says once the shell may start


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


def prepare(state: Path, home: Path, runtime_dir: Path, display: str, deadline: float) -> None:
    """Make HOME, the runtime folder and the X server a new GNOME episode's (as the user).

    Args:
        state: Where the image keeps the session's files (``STATE``).
        home: The desktop user's HOME, just restored.
        runtime_dir: The user's runtime folder (the time settings go there).
        display: The desktop's X server.
        deadline: ``time.monotonic()`` by which the last session's shell has let the X server go.

    Raises:
        OSError: the session's files are missing (an image built without them).
        TimeoutError: the last shell still owns the window manager's selection.
    """
    files = gnome_session.GnomeFiles.in_state(state)
    if not files.user_database.is_file():
        raise OSError(f"no GNOME session files in {_folder(state)} (an image without GNOME)")
    gnome_session.write_home(home, files)
    gnome_session.write_time_settings(runtime_dir)
    from Xlib import display as xdisplay

    from osworld_gym.providers.desktop import window_manager, x_state

    conn = xdisplay.Display(display)
    try:
        # At an in-place reset the killed shell's settings stay on the root window: the new shell
        # would take some over, and its readiness (the work area) would read as laid out at once.
        while window_manager.selection_owner(conn):
            if time.monotonic() >= deadline:
                raise TimeoutError("the last window manager still holds the X server")
            time.sleep(_POLL_SECONDS)
        window_manager.forget_desktop_settings(conn)
        if not x_state.set_refresh_rate(conn, gnome_session.REFRESH_HZ):
            logger.warning("the X server %s has no RandR mode to set: 60 frames a second", display)
    finally:
        conn.close()


def _not_ready(conn: Any) -> str | None:
    """What GNOME Shell has yet to do before the desktop is ready; None once it is."""
    from osworld_gym.providers.desktop import window_manager

    if not window_manager.selection_owner(conn):
        return "no window manager owns WM_S0"
    properties = dict(window_manager.root_properties(conn))
    if not gnome_session.laid_out(properties):
        area = properties.get("_NET_WORKAREA")
        return f"the desktop is not laid out (work area {area!r})"
    return None


def wait_ready(display: str, deadline: float, icons_home: Path | None = None) -> str | None:
    """Wait until GNOME Shell manages windows (``WM_S0``) and has laid the desktop out.

    Then, with ``icons_home`` (HOME, whose ``~/Desktop`` the session shows as desktop icons),
    until the icons are drawn, in the theme the XSETTINGS manager announces
    (``desktop_icons``).

    Returns:
        None once it does, else (at the deadline) what it had yet to do.
    """
    from Xlib import display as xdisplay

    from osworld_gym.providers.desktop import desktop_icons, window_manager

    conn = xdisplay.Display(display)
    try:
        while True:
            missing = _not_ready(conn)
            if missing is None and icons_home is not None:
                if not window_manager.selection_owner(conn, "_XSETTINGS_S0"):
                    missing = "no XSETTINGS manager runs"
            if missing is None or time.monotonic() >= deadline:
                break
            time.sleep(_POLL_SECONDS)  # the shell lays out on its own main loop
        if missing is None and icons_home is not None:
            try:
                desktop_icons.wait_drawn(conn, None, icons_home, deadline, lambda: None)
            except TimeoutError as e:
                missing = str(e)
        return missing
    finally:
        conn.close()


def start(state: Path, environ: Mapping[str, str], timeout: float, out: TextIO) -> str | None:
    """Prepare a new episode's session, say so on ``out``, then wait for the shell's layout.

    Args:
        state: Where the image keeps the session's files (``STATE``).
        environ: The session's environment (``HOME``, ``XDG_RUNTIME_DIR``, ``DISPLAY``).
        timeout: Seconds for all of it.
        out: Where ``prepared`` goes, once the shell may start.

    Returns:
        None once the shell has laid the desktop out, else what it had yet to do in time.

    Raises:
        KeyError: ``environ`` lacks one of the three.
        OSError, TimeoutError: see ``prepare()``.
    """
    deadline = time.monotonic() + timeout
    display = environ["DISPLAY"]
    prepare(state, Path(environ["HOME"]), Path(environ["XDG_RUNTIME_DIR"]), display, deadline)
    print(PREPARED, file=out, flush=True)
    return wait_ready(display, deadline, Path(environ["HOME"]))


def _screen(text: str) -> tuple[int, int]:
    width, sep, height = text.partition("x")
    if not sep or not width.isdigit() or not height.isdigit():
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}")
    return int(width), int(height)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="python -m osworld_gym.providers.desktop.gnome_image")
    parser.add_argument("--state", type=Path, default=STATE, help="where the files are")
    commands = parser.add_subparsers(dest="command", required=True)
    install_cmd = commands.add_parser("install", help="write the session's files (image build)")
    install_cmd.add_argument("--home", type=Path, required=True)
    install_cmd.add_argument("--runtime-dir", required=True)
    monitors = commands.add_parser("monitors", help="GNOME Shell's monitor configuration")
    monitors.add_argument("screen", type=_screen)
    start_cmd = commands.add_parser(
        "start", help="prepare a new episode's session, then wait until GNOME Shell has laid out"
    )
    start_cmd.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="gnome_image: %(message)s")
    try:
        if args.command == "install":
            install(args.state, args.home, args.runtime_dir)
        elif args.command == "monitors":
            gnome_session.write_monitors(
                gnome_session.GnomeFiles.in_state(args.state).config, args.screen
            )
        elif (missing := start(args.state, os.environ, args.timeout, sys.stdout)) is not None:
            logger.error("GNOME Shell was not ready in %.0f s: %s", args.timeout, missing)
            return 1
    except KeyError as e:
        logger.error("%s needs %s in the environment", args.command, e)
        return 1
    except OSError as e:  # TimeoutError among them
        logger.error("%s failed: %s", args.command, e)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
