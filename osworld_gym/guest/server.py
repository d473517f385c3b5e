"""The guest server: OSWorld's HTTP protocol (plus extensions) for one X display.

Run it inside any Linux desktop::

    python -m osworld_gym.guest --display :0 --port 5000

It binds to loopback unless told otherwise, requires ``Authorization: Bearer <token>`` on every
request when a token is set (compared in constant time), caps request bodies, and answers JSON
4xx errors to malformed requests; no request can stop it. Idle and slow connections are closed
and their number capped (``osworld_gym.guest.connections``), so no client without the token
can starve the one with it. One ``/actions`` request's work is bounded too (``--max-actions``,
``--max-action-keys``, ``--action-seconds``; advertised in ``/health``).

The token comes from ``--token-file``, an inherited descriptor (``--token-fd``) or the
``OSWORLD_GYM_GUEST_TOKEN`` variable, which the server removes from its environment: the
programs it starts never see the token.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from email.message import Message
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from osworld_gym.guest import routes_desktop, routes_exec, routes_files, routes_media
from osworld_gym.guest.connections import (
    Connection,
    ConnectionLimits,
    ConnectionReader,
    ConnectionServer,
    SocketWriter,
)
from osworld_gym.guest.context import GuestConfig, GuestContext
from osworld_gym.guest.http import HTTPError, Request, Response
from osworld_gym.guest.protocol import ActionLimits
from osworld_gym.guest.settle import presses_enter

logger = logging.getLogger(__name__)

Route = Callable[[GuestContext, Request], Response]
_UPLOAD_PATHS = frozenset({"/setup/upload"})
_CHUNK = 1 << 20
_REALM = "osworld-gym-guest"
TOKEN_VARIABLE = "OSWORLD_GYM_GUEST_TOKEN"


EXTENSION_PATHS = frozenset({"/health", "/actions"})
# Requests that may start programs or change the screen: processes started from one of them
# on are launch candidates for the events settle (osworld_gym.guest.settle).
ACTING_PATHS = frozenset(
    {
        "/actions",
        "/execute",
        "/setup/execute",
        "/execute_with_verification",
        "/setup/execute_with_verification",
        "/setup/launch",
        "/run_python",
        "/run_bash_script",
        "/setup/open_file",
    }
)


def build_routes(official: bool = False) -> dict[str, dict[str, Route]]:
    """Map path -> method -> handler for every route the guest serves.

    Args:
        official: Serve only what OSWorld's own server has (no extensions), so host code can
            be tested against the behaviour of an official OSWorld image.
    """
    table: dict[str, dict[str, Route]] = {}
    for module in (routes_desktop, routes_exec, routes_files, routes_media):
        for method, path, handler in module.ROUTES:
            if official and path in EXTENSION_PATHS:
                continue
            table.setdefault(path, {})[method] = handler
    return table


class GuestHTTPServer(ConnectionServer):
    """The guest's HTTP server: its context, route table and connection limits."""

    def __init__(self, ctx: GuestContext) -> None:
        self.ctx = ctx
        self.routes = build_routes(official=ctx.config.official)
        super().__init__((ctx.config.host, ctx.config.port), ctx.config.limits)

    def run_request(self, conn: Connection) -> bool:
        """Serve the request whose head ``conn`` holds; True keeps the connection open."""
        handler = GuestRequestHandler(conn, conn.address, self)
        return not handler.close_connection


class GuestRequestHandler(BaseHTTPRequestHandler):
    """Parses one request, checks the token and size limits, dispatches, and never raises.

    It serves exactly one request of a ``Connection``; the server's selector waits for the
    next one, so an idle keep-alive connection holds no thread.
    """

    server: GuestHTTPServer  # type: ignore[assignment]
    request: Connection  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses one connection per desktop
    server_version = "osworld-gym-guest"
    # Errors to a request line without a usable version still get a status line and headers
    # (http.server's default, HTTP/0.9, answers with a bare body).
    default_request_version = "HTTP/1.0"

    def setup(self) -> None:
        """Read from the connection's buffer and socket; write straight to the socket."""
        self.connection = self.request.sock
        self.rfile = ConnectionReader(self.request)  # type: ignore[assignment]
        self.wfile = SocketWriter(self.request.sock)  # type: ignore[assignment]

    def handle(self) -> None:
        """One request (``http.server`` would loop over the connection's requests here)."""
        self.close_connection = True
        self.handle_one_request()

    def finish(self) -> None:
        """Nothing to flush or close: the server owns the connection."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """Serve a GET request."""
        self._handle()

    def do_POST(self) -> None:  # noqa: N802
        """Serve a POST request."""
        self._handle()

    def do_PUT(self) -> None:  # noqa: N802
        """Answer 405 in JSON rather than http.server's HTML 501."""
        self._handle()

    do_DELETE = do_PATCH = do_PUT  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802
        """A GET route's status and headers without its body."""
        self._handle()

    def do_OPTIONS(self) -> None:  # noqa: N802
        """The methods a path allows, in ``Allow`` (``*`` for the server's)."""
        self._handle()

    def _handle(self) -> None:
        try:
            response = self._dispatch()
        except HTTPError as e:
            response = Response.json(e.payload, status=e.status)
        except Exception as e:  # noqa: BLE001 - one bad request must not stop the server
            logger.exception("unhandled error serving %s %s", self.command, self.path)
            payload = {"status": "error", "message": f"internal error: {e}", "error": str(e)}
            response = Response.json(payload, status=500)
        self._send(response)

    def _dispatch(self) -> Response:
        url = urlsplit(self.path)
        refused = self._check_token()
        if refused is not None:
            return refused
        if self.command == "OPTIONS":
            return self._options(url.path)
        methods = self.server.routes.get(url.path)
        if methods is None:
            self._discard_body()
            raise HTTPError(404, f"no such endpoint: {url.path}")
        handler = methods.get("GET" if self.command == "HEAD" else self.command)
        if handler is None:
            self._discard_body()
            raise HTTPError(405, f"{self.command} not allowed on {url.path}; use {sorted(methods)}")
        body = self._read_body(url.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        request = Request(self.command, url.path, query, self._headers_message(), body)
        if url.path in ACTING_PATHS:
            self.server.ctx.settler.mark_action(commits=presses_enter(body))
        return handler(self.server.ctx, request)

    def _check_token(self) -> Response | None:
        """None when the request may go on, else the 401 answer (its body left unread)."""
        expected = self.server.ctx.config.token
        if expected:
            given = self.headers.get("Authorization", "")
            token = given[len("Bearer ") :] if given.startswith("Bearer ") else ""
            if not hmac.compare_digest(token.encode(), expected.encode()):
                # Close rather than read a stranger's body: reading costs us, not them.
                self.close_connection = True
                message = "missing or wrong token (send 'Authorization: Bearer <token>')"
                payload = {"status": "error", "message": message, "error": message}
                response = Response.json(payload, status=401)
                response.headers["WWW-Authenticate"] = f'Bearer realm="{_REALM}"'
                return response
        self.request.trusted = True
        return None

    def _options(self, path: str) -> Response:
        self._discard_body()
        if path == "*":
            allowed = {m for methods in self.server.routes.values() for m in methods}
        else:
            methods = self.server.routes.get(path)
            if methods is None:
                raise HTTPError(404, f"no such endpoint: {path}")
            allowed = set(methods)
        if "GET" in allowed:
            allowed.add("HEAD")
        allowed.add("OPTIONS")
        response = Response(b"", status=200, content_type="application/json")
        response.headers["Allow"] = ", ".join(sorted(allowed))
        return response

    def _content_length(self) -> int:
        lengths = self.headers.get_all("Content-Length") or []
        if len(set(lengths)) > 1 or (lengths and self.headers.get("Transfer-Encoding")):
            # Two framings of one body: whichever we chose, a proxy might choose the other
            # (request smuggling, RFC 9112 6.3): refuse, and the connection with it.
            self.close_connection = True
            raise HTTPError(400, "conflicting Content-Length or Transfer-Encoding headers")
        raw = lengths[0] if lengths else None
        if raw is None:
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                raise HTTPError(411, "chunked bodies are not supported; send Content-Length")
            return 0
        try:
            length = int(raw)
        except ValueError as e:
            self.close_connection = True
            raise HTTPError(400, f"bad Content-Length: {raw!r}") from e
        if length < 0:
            self.close_connection = True
            raise HTTPError(400, f"bad Content-Length: {raw!r}")
        return length

    def _read_body(self, path: str) -> bytes:
        length = self._content_length()
        config = self.server.ctx.config
        limit = config.max_upload_bytes if path in _UPLOAD_PATHS else config.max_body_bytes
        if length > limit:
            self.close_connection = True  # the unread body makes the connection unusable
            raise HTTPError(413, f"request body of {length} bytes exceeds the limit of {limit}")
        try:
            body = self.rfile.read(length)
        except OSError as e:  # the body stalled past the body timeout, or the client left
            self.close_connection = True
            raise HTTPError(408, f"request body not received: {e}") from e
        if len(body) != length:
            self.close_connection = True
            raise HTTPError(400, "request body shorter than its Content-Length")
        return body

    def _discard_body(self) -> None:
        try:
            length = self._content_length()
        except HTTPError:
            return
        if length > self.server.ctx.config.max_body_bytes:
            self.close_connection = True
            return
        try:
            self.rfile.read(length)
        except OSError:
            self.close_connection = True

    def _headers_message(self) -> Message:
        message = Message()
        for name, value in self.headers.items():
            message[name] = value
        return message

    def _send(self, response: Response) -> None:
        try:
            if response.file_path:
                self._send_file(response)
                return
            self._send_head(response, len(response.body))
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("client went away before the response to %s was sent", self.path)
        except OSError as e:
            logger.warning("could not send response to %s: %s", self.path, e)
            self.close_connection = True

    def _send_head(self, response: Response, size: int) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(size))
        for name, value in response.headers.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def _send_file(self, response: Response) -> None:
        """A file's bytes with the length actually sent in ``Content-Length``.

        The file is opened before anything is sent, so a file that cannot be read gets a JSON
        error. The size is taken once, from the open file: a file that grows meanwhile is sent
        as it was then. Files whose size the kernel reports as 0 while they have content
        (``/proc``) are read whole first. A file that shrinks or fails under us cannot keep
        the promised length: the connection is closed after it, so the client sees a short
        body, never the next answer.
        """
        assert response.file_path is not None
        try:
            f = open(response.file_path, "rb")  # noqa: SIM115 - closed below
        except OSError as e:
            self.close_connection = True
            message = f"could not read {response.file_path}: {e.strerror or e}"
            error = Response.json({"status": "error", "message": message}, status=404)
            self._send_head(error, len(error.body))
            if self.command != "HEAD":
                self.wfile.write(error.body)
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                data = f.read()
                self._send_head(response, len(data))
                if self.command != "HEAD":
                    self.wfile.write(data)
                return
            self._send_head(response, size)
            if self.command == "HEAD":
                return
            left = size
            while left > 0:
                try:
                    chunk = f.read(min(_CHUNK, left))
                except OSError as e:
                    logger.warning("reading %s failed mid-answer: %s", response.file_path, e)
                    chunk = b""
                if not chunk:
                    self.close_connection = True
                    return
                self.wfile.write(chunk)
                left -= len(chunk)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Answer protocol-level errors (bad request line, headers) in JSON too."""
        payload = {"status": "error", "message": message or explain or "bad request"}
        body = json.dumps(payload).encode()
        try:
            self.send_response(code, message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(body)
        except OSError:
            pass
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Route http.server's access log to logging (debug level)."""
        logger.debug("%s - " + format, self.address_string(), *args)


def serve(config: GuestConfig, ready: threading.Event | None = None) -> GuestHTTPServer:
    """Create the server for ``config`` and write its port file; the caller runs it."""
    ctx = GuestContext(config)
    server = GuestHTTPServer(ctx)
    port = server.server_address[1]
    if config.port_file:
        tmp = f"{config.port_file}.tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, config.port_file)  # atomic: a reader never sees a half-written port
    logger.info("guest server for display %s listening on %s:%s", config.display, config.host, port)
    if ready is not None:
        ready.set()
    return server


_PR_SET_DUMPABLE = 4  # prctl option (linux/prctl.h)


def forbid_inspection() -> bool:
    """Make this process non-dumpable, before it reads its token.

    The desktop's programs run as the same user as the guest; a dumpable guest would let them
    read the token from ``/proc/<guest>/mem`` or ``environ``, or ``ptrace`` it. A non-dumpable
    process's ``/proc`` files belong to root and ``ptrace`` needs a capability the desktop
    lacks; the programs the guest starts are dumpable again once they ``exec``.

    Returns:
        Whether it worked (False off Linux).
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        logging.getLogger(__name__).warning(
            "could not make the guest non-dumpable: errno %d", ctypes.get_errno()
        )
        return False
    return True


def read_token(token_file: str | None = None, token_fd: int | None = None) -> str | None:
    """The shared token from a file, an inherited descriptor, or ``OSWORLD_GYM_GUEST_TOKEN``.

    The variable is removed from this process's environment once read, so no program the guest
    starts inherits it (``/execute env`` would print it otherwise). A file or a descriptor
    keeps it out of every environment, and out of ``ps`` and ``/proc/<pid>/environ``.
    """
    token = os.environ.pop(TOKEN_VARIABLE, None)
    if token_file:
        with open(token_file) as f:
            token = f.read()
    elif token_fd is not None:
        with os.fdopen(token_fd, "r", closefd=True) as f:
            token = f.read()
    return token.strip() or None if token else None


def parse_args(argv: list[str] | None = None, prog: str = "osworld-gym-guest") -> GuestConfig:
    """Parse the command line into a ``GuestConfig``.

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).
        prog: The program named in help and errors (``osworld-gym serve-guest`` from there).
    """
    # cli_options is stdlib-only (plus the version string): the guest's dependency rule holds.
    from osworld_gym.cli_options import Parser, add_log_level

    parser = Parser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--display", default=os.environ.get("DISPLAY"), help="X display, e.g. :0")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (loopback)")
    parser.add_argument("--port", type=int, default=5000, help="TCP port; 0 picks a free one")
    parser.add_argument("--port-file", help="write the bound port to this file once listening")
    parser.add_argument("--token-file", help="file holding the shared token")
    parser.add_argument(
        "--token-fd",
        type=int,
        help="inherited file descriptor to read the shared token from (closed after reading)",
    )
    parser.add_argument("--max-upload-mb", type=int, default=512, help="largest upload accepted")
    parser.add_argument("--state-dir", help="folder for recordings and temporary scripts")
    parser.add_argument(
        "--official",
        action="store_true",
        help="behave like OSWorld's own server: no extensions (for testing)",
    )
    defaults = ConnectionLimits()
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=defaults.header_timeout,
        help="seconds a request's line and headers may take",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=defaults.idle_timeout,
        help="seconds a keep-alive connection may wait between requests",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        help="open connections at most (default: the file limit less a reserve)",
    )
    _add_action_limits(parser)
    add_log_level(parser, default="INFO")
    args = parser.parse_args(argv)
    if not args.display:
        parser.error("no display: pass --display or set DISPLAY")
    try:
        action_limits = ActionLimits(args.max_actions, args.max_action_keys, args.action_seconds)
    except ValueError as e:
        parser.error(str(e))
    forbid_inspection()
    token = read_token(args.token_file, args.token_fd)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(message)s")
    return GuestConfig(
        display=args.display,
        host=args.host,
        port=args.port,
        token=token or None,
        port_file=args.port_file,
        max_upload_bytes=args.max_upload_mb * 1024 * 1024,
        state_dir=args.state_dir,
        official=args.official,
        limits=ConnectionLimits(
            header_timeout=args.header_timeout,
            idle_timeout=args.idle_timeout,
            max_connections=args.max_connections,
        ),
        action_limits=action_limits,
    )


def _add_action_limits(parser: argparse.ArgumentParser) -> None:
    """The options that bound one ``/actions`` request (advertised in ``/health``)."""
    defaults = ActionLimits()
    parser.add_argument(
        "--max-actions",
        type=int,
        default=defaults.max_actions,
        help="actions one /actions request may hold",
    )
    parser.add_argument(
        "--max-action-keys",
        type=int,
        default=defaults.max_keys,
        help="key presses (typed characters, hotkey keys, presses) one /actions request may make",
    )
    parser.add_argument(
        "--action-seconds",
        type=float,
        default=defaults.max_seconds,
        help="seconds one /actions request may run; no action starts after them",
    )


def main(argv: list[str] | None = None, prog: str = "osworld-gym-guest") -> int:
    """Console entry point: serve until SIGTERM or SIGINT.

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).
        prog: The program named in help and errors.
    """
    config = parse_args(argv, prog)
    server = serve(config)

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        server.ctx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
