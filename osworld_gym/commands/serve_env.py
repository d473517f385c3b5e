"""``osworld-gym serve-env``: desktops as an OpenEnv environment server, one desktop per session.

Serves ``osworld_gym.integrations.openenv`` with uvicorn: ``--num-envs`` desktops, as many
concurrent WebSocket sessions (OpenEnv's ``/ws``; clients: ``OSWorldEnvClient``, TRL, SkyRL,
verifiers). Desktops launch at their first session's first reset and are reset per episode.
The server has no authentication and its clients drive real desktops: it binds loopback unless
``--host`` says otherwise. SIGTERM or Ctrl-C stops it and its desktops.

Before anything starts, the command checks what it needs: the ``openenv`` extra (OpenEnv and
the uvicorn server), the provider's extra (``docker``), and the extras the served tasks need
(``eval`` for office files, ``chrome`` for Chrome's...): a missing one is refused with exit status
2 and the exact command that installs it.

Exit status: 0 after SIGTERM, 130 after Ctrl-C, 1 when the server could not start (a port in
use), 2 for bad arguments or a missing extra.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from osworld_gym.cli_options import one_line, positive_int, screen_size
from osworld_gym.commands.run import (
    add_session_option,
    check_installed,
    provider_from_args,
    remote_config,
    suite_screen,
)
from osworld_gym.env_config import ACTION_FORMATS, EVALUATION_MODES
from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.references import DEFAULT_REFERENCE, REFERENCES
from osworld_gym.extras import Need, install_command
from osworld_gym.providers import PROVIDER_NAMES
from osworld_gym.tasks import TaskSet, load_tasks

SERVER_MODULES = ("openenv", "fastapi", "uvicorn")
"""What the server imports, all installed by the openenv extra (uvicorn serves OpenEnv's app)."""
GRACEFUL_SHUTDOWN_S = 30
"""Seconds open sessions get to finish their current message when the server stops."""


def add_parser(sub: Any) -> None:
    """Register ``serve-env``."""
    serve = sub.add_parser(
        "serve-env",
        help="serve desktops as an OpenEnv environment (one desktop per WebSocket session)",
        description=__doc__.split("\n\n")[0],
    )
    serve.add_argument("--tasks", default="desktop-basics", help="suite, folder or index JSON")
    serve.add_argument(
        "--num-envs", type=positive_int, default=1, help="desktops = sessions at once"
    )
    serve.add_argument(
        "--provider", choices=PROVIDER_NAMES, default="local", help="where the desktops run"
    )
    serve.add_argument("--image", help="the docker provider's desktop image")
    add_session_option(serve)
    serve.add_argument(
        "--guest-url",
        action="append",
        dest="guest_urls",
        metavar="URL",
        help="remote: a running guest server (repeatable; one env per URL)",
    )
    serve.add_argument(
        "--guest-token-env", metavar="VAR", help="remote: the variable holding the guests' token"
    )
    serve.add_argument(
        "--screen-size",
        type=screen_size,
        metavar="WxH",
        help="screen in pixels, e.g. 1280x720 (default: the suite's, or 1920x1080)",
    )
    serve.add_argument("--max-steps", type=positive_int, default=15, help="step limit per episode")
    serve.add_argument("--hard", action="store_true", help="OSWorld-Hard: no FAIL at the limit")
    serve.add_argument(
        "--action-format",
        choices=ACTION_FORMATS,
        default="uitars",
        help="how text actions are parsed (tool calls are structured whatever this says)",
    )
    serve.add_argument(
        "--screenshot-format",
        choices=("png", "jpeg"),
        default="png",
        help="how observations' screenshots are encoded",
    )
    serve.add_argument(
        "--evaluation",
        choices=EVALUATION_MODES,
        default="osworld",
        help="osworld: score exactly as OSWorld's code; fixed: with the metric fixes of "
        "docs/concepts/evaluation.md",
    )
    serve.add_argument(
        "--evaluator-reference",
        choices=REFERENCES,
        default=DEFAULT_REFERENCE,
        help="whose OSWorld evaluator code the scores follow: the one that goes with the task "
        "files (default) or desktop-env 1.0.2's",
    )
    serve.add_argument("--online", action="store_true", help="allow downloading task assets")
    serve.add_argument("--step-timeout", type=float, default=600.0, help="seconds per step")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (loopback; there is no auth)"
    )
    serve.add_argument("--port", type=_port, default=8000, help="TCP port; 0 picks a free one")
    serve.add_argument("--port-file", help="write the bound port to this file once listening")
    serve.set_defaults(func=serve_env_command)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535, got {port}")
    return port


def serve_env_command(args: argparse.Namespace) -> int:
    """Run the ``serve-env`` subcommand."""
    try:
        env_kwargs, tasks = _env_kwargs(args)
    except ValueError as e:
        sys.stderr.write(f"osworld-gym serve-env: error: {one_line(e)}\n")
        return 2
    from osworld_gym.evaluation.evaluator import Evaluator

    # Every missing part at once, before the port is bound or a desktop launches (a
    # MissingExtraError: one line and status 2).
    check_installed(
        tasks,
        args.provider,
        Evaluator(mode=args.evaluation, reference=args.evaluator_reference),
        what=f" of {args.tasks!r}",
        also={"osworld-gym serve-env": [Need(m, "openenv") for m in SERVER_MODULES]},
    )
    try:
        import uvicorn

        from osworld_gym.integrations.openenv import create_osworld_app
    except ImportError as e:  # installed, but broken: a missing part all the same (status 2)
        raise DependencyNotInstalled(
            f"missing extra 'openenv' ({e}) for osworld-gym serve-env: install with "
            f"{install_command('openenv')}"
        ) from e
    try:
        sock = _bind(args.host, args.port)
    except OSError as e:
        sys.stderr.write(
            f"osworld-gym serve-env: error: cannot listen on {args.host}:{args.port}: {e}\n"
        )
        return 1
    from osworld_gym.integrations.lease import DesktopLeases
    from osworld_gym.pool import PoolConfig

    config = PoolConfig(screenshot_format=args.screenshot_format, step_timeout=args.step_timeout)
    desk = DesktopLeases(env_kwargs, args.num_envs, config=config)
    try:
        app = create_osworld_app(desk)
        server = uvicorn.Server(
            uvicorn.Config(app, log_config=None, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
        )
        return _serve(server, sock, args)
    finally:
        desk.close()


class _Terminated(Exception):
    """SIGTERM arrived (outside uvicorn's own handling, or re-raised by it after shutdown)."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def _serve(server: Any, sock: socket.socket, args: argparse.Namespace) -> int:
    """Serve until SIGTERM (0) or Ctrl-C (130).

    uvicorn handles both signals with a graceful shutdown, then re-raises the signal to the
    handler it found; a handler of ours (not the default, which would kill the process before
    the desktops are stopped) turns SIGTERM into a normal return.
    """
    port = sock.getsockname()[1]
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args.port_file:
            _write_port_file(Path(args.port_file), port)
        _announce(args, port)
        server.run(sockets=[sock])
        return 0
    except _Terminated:
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
        sys.stderr.write("osworld-gym serve-env: stopped; closing the desktops\n")


def _env_kwargs(args: argparse.Namespace) -> tuple[dict[str, Any], TaskSet]:
    """The desktops' ``OSWorldEnv`` keyword arguments, and the tasks served.

    Raises:
        ValueError: A usage error.
    """
    if args.num_envs < 1 or args.max_steps < 1:
        raise ValueError("--num-envs and --max-steps must be at least 1")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0-65535, got {args.port}")
    remote = remote_config(args)
    try:
        tasks = load_tasks(args.tasks)
    except (OSError, LookupError) as e:
        why = e.args[0] if type(e) is KeyError and e.args else e
        raise ValueError(f"cannot load tasks {args.tasks!r}: {why}") from e
    if not len(tasks):
        raise ValueError(f"no tasks in {args.tasks!r}")
    screen = args.screen_size or suite_screen(args.tasks)
    provider, _ = provider_from_args(
        args.provider, args.image, screen, remote, session=args.session, tasks=tasks
    )
    kwargs = {
        "tasks": args.tasks,
        "provider": provider,
        "action_format": args.action_format,
        "max_steps": args.max_steps,
        "hard": args.hard,
        "screen_size": screen,
        "offline": not args.online,
        "evaluation": args.evaluation,
        "evaluator_reference": args.evaluator_reference,
    }
    return kwargs, tasks


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket; bound here (not by uvicorn) so that ``--port 0`` can be reported."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def _write_port_file(path: Path, port: int) -> None:
    """Write the port atomically: a reader never sees a half-written number."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


def _announce(args: argparse.Namespace, port: int) -> None:
    host = f"[{args.host}]" if ":" in args.host else args.host
    sys.stderr.write(
        f"osworld-gym serve-env: {args.num_envs} {args.provider} desktop(s) of {args.tasks!r} "
        f"(launched at first reset); OpenEnv sessions at ws://{host}:{port}/ws, HTTP at "
        f"http://{host}:{port}; SIGTERM or Ctrl-C stops\n"
    )
    if not _is_loopback(args.host):
        sys.stderr.write(
            f"osworld-gym serve-env: warning: listening on {args.host} without authentication: "
            "anyone who can reach this port can drive the desktops\n"
        )
    sys.stderr.flush()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
