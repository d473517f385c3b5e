"""A loopback HTTP file server for download tests (importable as ``http_helpers``).

It serves bytes by path with ``Range`` support, and can misbehave on purpose: drop the
connection half-way through a file, ignore ``Range``, or fail a number of times first.
"""

from __future__ import annotations

import collections.abc
import contextlib
import http.server
import re
import socket
import ssl
import threading
import urllib.parse
from dataclasses import dataclass, field


@dataclass
class Served:
    """What the server knows: files, misbehaviours, and a log of the requests it got."""

    files: dict[str, bytes] = field(default_factory=dict)
    drop_once: set[str] = field(default_factory=set)  # first full GET stops half-way
    ignore_range: set[str] = field(default_factory=set)
    fail_first: dict[str, int] = field(default_factory=dict)  # path -> 503s before success
    log: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(served: Served) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:
            path, wanted = self.path, self.headers.get("Range")
            with served.lock:
                served.log.append((path, wanted))
                failures = served.fail_first.get(path, 0)
                if failures:
                    served.fail_first[path] = failures - 1
                drop = path in served.drop_once and not wanted
                if drop:
                    served.drop_once.discard(path)
            if failures:
                self._answer(503, b"busy")
                return
            data = served.files.get(path)
            if data is None:
                self._answer(404, b"not found")
                return
            found = re.match(r"bytes=(\d+)-$", wanted or "")
            if found and path not in served.ignore_range:
                start = int(found.group(1))
                if start >= len(data):
                    self._answer(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                    return
                content_range = f"bytes {start}-{len(data) - 1}/{len(data)}"
                self._answer(206, data[start:], {"Content-Range": content_range})
                return
            if drop:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self._answer(200, data)

        def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextlib.contextmanager
def file_server(served: Served) -> collections.abc.Iterator[str]:
    """Serve ``served`` on 127.0.0.1 (a free port); yield the base URL; stop afterwards."""
    with loopback_server(_handler(served)) as url:
        yield url


@contextlib.contextmanager
def loopback_server(
    handler: type[http.server.BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
) -> collections.abc.Iterator[str]:
    """Run ``handler`` on 127.0.0.1 (a free port); yield the base URL; stop afterwards.

    With ``tls`` (a server context holding its certificate) it serves HTTPS.
    """
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        # The handshake happens in each request's thread, not in the accepting one.
        server.socket = tls.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    scheme = "http" if tls is None else "https"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def port_of(url: str) -> int:
    """The port of a ``loopback_server`` URL: a desktop on a private network is given it."""
    port = urllib.parse.urlsplit(url).port
    assert port is not None, url
    return port
