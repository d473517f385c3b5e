"""``osworld-gym desktop``: launch a ``local`` desktop, show that it works, maybe keep it up."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from osworld_gym.cli_options import ScreenSideAlias, screen_size
from osworld_gym.providers.base import Desktop


def add_parser(sub: Any) -> None:
    """Register ``desktop``."""
    desktop = sub.add_parser("desktop", help="launch a local desktop", description=__doc__)
    desktop.add_argument(
        "--screen-size", type=screen_size, default=(1920, 1080), metavar="WxH", help="screen"
    )
    for side, option in enumerate(("--width", "--height")):  # deprecated: --screen-size WxH
        desktop.add_argument(
            option, dest="screen_size", action=ScreenSideAlias, side=side, help=argparse.SUPPRESS
        )
    desktop.add_argument("--demo", action="store_true", help="type into a terminal and check it")
    desktop.add_argument("--screenshot", help="save a settled screenshot to this PNG path")
    desktop.add_argument(
        "--hold", type=float, default=0.0, help="keep the desktop up this many seconds"
    )
    desktop.set_defaults(func=desktop_command)


def desktop_command(args: argparse.Namespace) -> int:
    """Run the ``desktop`` subcommand."""
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    config = LocalProviderConfig(screen_size=args.screen_size)
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


def _demo(desktop: Desktop) -> None:
    """Open a terminal, type a command into it, and check its effect through the guest."""
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
