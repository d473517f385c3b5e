"""The guest server's connection handling: one selector thread, a thread per request.

``http.server``'s threading server gives every connection a thread from accept to close, and
waits on it forever. Any local process could then hold the guest's threads and file descriptors
with idle connections, before the token is ever checked, until the real client could not get
in. Here a connection costs only its socket until a whole request head has arrived:

- One thread (the caller of ``ConnectionServer.serve_forever()``) accepts connections and
  reads request heads without blocking. A head that does not arrive within
  ``ConnectionLimits.header_timeout``, or a keep-alive connection idle for
  ``ConnectionLimits.idle_timeout``, is closed.
- A complete head is handed to a short-lived thread that runs one request (the handler checks
  the token before reading any body) and then gives the connection back to the selector.
- At most ``ConnectionLimits.max_connections`` are open (by default what the process's file
  limit leaves). A new connection at the cap pushes out the idle connection that has gone
  longest without a request, preferring ones that never sent a valid token: strangers can only
  push out each other, never lock the real client out.
- At most ``ConnectionLimits.max_active`` requests run at once; heads beyond that wait.
"""

from __future__ import annotations

import collections
import errno
import logging
import resource
import selectors
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

_RECV = 65536
# Descriptors the process needs besides client connections: X connections, logs, pipes to the
# programs it runs, files it serves.
_RESERVED_FDS = 64


# A connection closed after its answer waits this long, and reads at most this much, for the
# client to stop sending (Connection.finish).
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 16 << 20


@dataclass(frozen=True)
class ConnectionLimits:
    """How long and how many connections the guest keeps.

    Attributes:
        header_timeout: Seconds a request line and headers may take to arrive, counted from the
            connection's first byte of that request (or from accept).
        idle_timeout: Seconds a keep-alive connection may wait between requests.
        body_timeout: Seconds a request body may go without a byte arriving.
        max_connections: Open connections at most; None for the file limit less a reserve.
        max_active: Requests run at once at most; more complete heads wait their turn.
        max_header_bytes: Largest request head (line and headers); larger ones get 431.
        backlog: The listen backlog, sized for a pool's bursts of connects.
    """

    header_timeout: float = 10.0
    idle_timeout: float = 300.0
    body_timeout: float = 60.0
    max_connections: int | None = None
    max_active: int = 64
    max_header_bytes: int = 65536
    backlog: int = 1024

    def connection_cap(self) -> int:
        """``max_connections``, or what the soft file limit leaves after a reserve."""
        if self.max_connections is not None:
            return self.max_connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 65536
        return max(16, soft - _RESERVED_FDS)


@dataclass(eq=False)
class Connection:
    """One client connection and the bytes read from it but not yet parsed."""

    sock: socket.socket
    address: Any
    pending: bytearray = field(default_factory=bytearray)
    since: float = field(default_factory=time.monotonic)  # start of the current wait
    head_started: float | None = None  # when the first byte of the current head arrived
    trusted: bool = False  # has sent a request that passed the token check
    closed: bool = False

    def close(self) -> None:
        """Close the socket (once)."""
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def finish(self) -> None:
        """Close after an answer, so that all of it reaches a client that is still sending.

        Closed with input unread (a body refused midway), the socket would be reset by the
        kernel, which throws away the part of the answer not yet delivered. So the sending
        side is shut first and what the client still sends is read and dropped, for at most
        ``_LINGER_SECONDS`` and ``_LINGER_BYTES``, then the socket closed.
        """
        if self.closed:
            return
        try:
            self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + _LINGER_SECONDS
            drained = 0
            while drained < _LINGER_BYTES:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.sock.settimeout(remaining)
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:  # reset, or timed out: nothing more to wait for
            pass
        self.close()

    def head_complete(self) -> bool:
        """Whether ``pending`` holds a whole request head (or a line http.server answers alone).

        Empty lines before a request are dropped (RFC 9112 2.2: a server should ignore at
        least one). A first line with fewer than three words is an HTTP/0.9 request or
        garbage: either way the handler answers it without reading headers.
        """
        while self.pending.startswith((b"\r\n", b"\n")):
            del self.pending[: 2 if self.pending.startswith(b"\r\n") else 1]
        end = self.pending.find(b"\n")
        if end < 0:
            return False
        if len(self.pending[:end].split()) < 3:
            return True
        return b"\r\n\r\n" in self.pending or b"\n\n" in self.pending


class ConnectionReader:
    """File-like reads (``readline``, ``read``) over a connection's buffered bytes and socket.

    Reads never go past what the caller asks for, so whatever follows the current request stays
    in ``Connection.pending`` for the next one.
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def _fill(self) -> bool:
        chunk = self._conn.sock.recv(_RECV)
        if not chunk:
            return False
        self._conn.pending += chunk
        return True

    def _take(self, size: int) -> bytes:
        pending = self._conn.pending
        data = bytes(pending[:size])
        del pending[:size]
        return data

    def readline(self, limit: int = -1) -> bytes:
        """A line including its newline, at most ``limit`` bytes; short at end of stream."""
        pending = self._conn.pending
        while True:
            end = pending.find(b"\n")
            if end >= 0 and (limit < 0 or end < limit):
                return self._take(end + 1)
            if 0 <= limit <= len(pending):
                return self._take(limit)
            if not self._fill():
                return self._take(len(pending))

    def read(self, size: int = -1) -> bytes:
        """Exactly ``size`` bytes, fewer only at end of stream (``size`` < 0: not supported)."""
        if size < 0:
            raise ValueError("read() needs a size: request bodies are read by Content-Length")
        pending = self._conn.pending
        if len(pending) >= size:
            return self._take(size)
        out = bytearray(size)
        view = memoryview(out)
        have = len(pending)
        view[:have] = pending
        pending.clear()
        while have < size:
            got = self._conn.sock.recv_into(view[have:], min(size - have, 1 << 20))
            if not got:
                break
            have += got
        view.release()
        del out[have:]
        return bytes(out)


class SocketWriter:
    """The ``wfile`` of a request: every write goes out whole (``sendall``)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def write(self, data: bytes) -> int:
        """Send all of ``data``."""
        self._sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered."""

    def writable(self) -> bool:
        """Always: the socket is open for writing while a request runs."""
        return True


class ConnectionServer(socketserver.TCPServer):
    """A listening socket whose connections are served by ``serve_forever()``'s selector.

    Subclasses implement ``run_request()``.
    """

    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], limits: ConnectionLimits) -> None:
        self.limits = limits
        self.request_queue_size = limits.backlog
        super().__init__(address, socketserver.BaseRequestHandler, bind_and_activate=True)
        self.socket.setblocking(False)
        self._cap = limits.connection_cap()
        self._lock = threading.Lock()
        # Connections waiting in the selector, oldest wait first (dicts keep insertion order).
        self._idle: dict[Connection, None] = {}
        self._ready: collections.deque[Connection] = collections.deque()
        self._returned: collections.deque[Connection] = collections.deque()
        self._active = 0
        self._open = 0
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._accepting = False
        self._out_of_files = False  # accept paused until a connection closes

    # --- what subclasses provide ---------------------------------------------------------

    def run_request(self, conn: Connection) -> bool:
        """Serve one request from ``conn`` (its head is in ``pending``); True keeps it open."""
        raise NotImplementedError

    # --- public --------------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept and serve connections until ``shutdown()``."""
        self._stop.clear()
        self._stopped.clear()
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._resume_accepting()
        sweep_every = max(0.05, min(poll_interval, self.limits.header_timeout / 4))
        next_sweep = time.monotonic() + sweep_every
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(timeout=sweep_every):
                    if key.data == "listen":
                        self._accept_some()
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._read_head(key.data)
                self._take_back_returned()
                now = time.monotonic()
                if now >= next_sweep:
                    self._expire(now)
                    next_sweep = now + sweep_every
        finally:
            self._selector.unregister(self._wake_r)
            if self._accepting:
                self._selector.unregister(self.socket)
                self._accepting = False
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop ``serve_forever()`` and wait until it has returned."""
        self._stop.set()
        self._wake()
        self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket and every connection waiting in the selector."""
        super().server_close()
        for conn in list(self._idle) + list(self._ready) + list(self._returned):
            self._forget(conn)
        self._idle.clear()
        self._ready.clear()
        self._returned.clear()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    # --- accepting -----------------------------------------------------------------------

    def _resume_accepting(self) -> None:
        if not self._accepting:
            self._selector.register(self.socket, selectors.EVENT_READ, "listen")
            self._accepting = True

    def _pause_accepting(self) -> None:
        if self._accepting:
            self._selector.unregister(self.socket)
            self._accepting = False

    def _accept_some(self) -> None:
        """Accept what the backlog holds (bounded per wake-up, so heads keep being read)."""
        for _ in range(256):
            if self._open >= self._cap and not self._evict_one():
                self._refuse_one()
                return
            try:
                sock, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # Out of descriptors: free one if a connection is idle, else stop listening
                    # until one closes (the listener would otherwise wake us in a busy loop).
                    if not self._evict_one():
                        logger.warning("out of file descriptors; pausing accept: %s", e)
                        self._pause_accepting()
                        self._out_of_files = True
                    return
                if e.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EINTR):
                    continue
                raise
            self._adopt(sock, address)

    def _refuse_one(self) -> None:
        """At the cap with nothing idle to push out: take the next connect and close it."""
        try:
            sock, _ = self.socket.accept()
        except OSError:
            self._pause_accepting()
            return
        sock.close()

    def _adopt(self, sock: socket.socket, address: Any) -> None:
        sock.setblocking(False)
        try:
            # Headers and body go out in separate writes; with Nagle on, delayed ACKs add 40 ms.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        except OSError:
            pass  # not a TCP socket
        conn = Connection(sock, address)
        with self._lock:
            self._open += 1
        self._wait_for_head(conn)

    def _evict_one(self) -> bool:
        """Close the longest-idle connection, a stranger's if any; False if none is idle."""
        victim = next((c for c in self._idle if not c.trusted), None)
        if victim is None:
            victim = next(iter(self._idle), None)
        if victim is None:
            return False
        logger.debug("connection cap reached: closing idle connection from %s", victim.address)
        self._forget(victim)
        return True

    # --- waiting for heads ---------------------------------------------------------------

    def _wait_for_head(self, conn: Connection) -> None:
        conn.since = time.monotonic()
        conn.head_started = conn.since if conn.pending else None
        if conn.head_complete():
            self._dispatch(conn)
            return
        self._idle[conn] = None
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _read_head(self, conn: Connection) -> None:
        try:
            chunk = conn.sock.recv(_RECV)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._forget(conn)
            return
        if conn.head_started is None:
            conn.head_started = time.monotonic()
        conn.pending += chunk
        if conn.head_complete():
            self._unwatch(conn)
            self._dispatch(conn)
        elif len(conn.pending) > self.limits.max_header_bytes:
            self._unwatch(conn)
            self._answer_and_close(conn, 431, "request head too large")

    def _expire(self, now: float) -> None:
        limits = self.limits
        expired = []
        for conn in self._idle:
            if conn.head_started is not None or not conn.trusted:
                # A head under way, or a connection that never sent a valid request: the head
                # deadline (a stranger gets no keep-alive allowance).
                started = conn.head_started if conn.head_started is not None else conn.since
                if now - started > limits.header_timeout:
                    expired.append(conn)
            elif now - conn.since > limits.idle_timeout:
                expired.append(conn)
        for conn in expired:
            logger.debug("closing connection from %s: timed out waiting", conn.address)
            self._forget(conn)

    def _unwatch(self, conn: Connection) -> None:
        self._idle.pop(conn, None)
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _forget(self, conn: Connection) -> None:
        """Close a connection this thread holds (not one a request thread is serving)."""
        self._unwatch(conn)
        conn.close()
        with self._lock:
            self._open -= 1
        self._out_of_files = False  # a descriptor was freed
        if not self._accepting and not self._stop.is_set() and self.socket.fileno() >= 0:
            self._resume_accepting()

    def _answer_and_close(self, conn: Connection, status: int, reason: str) -> None:
        body = f'{{"status": "error", "message": "{reason}"}}'.encode()
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:
            conn.sock.send(head + body)  # best effort: never block the selector thread
        except OSError:
            pass
        self._forget(conn)

    # --- running requests ----------------------------------------------------------------

    def _dispatch(self, conn: Connection) -> None:
        with self._lock:
            if self._active >= self.limits.max_active:
                self._ready.append(conn)
                return
            self._active += 1
        self._start(conn)

    def _start(self, conn: Connection) -> None:
        thread = threading.Thread(
            target=self._serve_one, args=(conn,), name="guest-request", daemon=True
        )
        try:
            thread.start()
        except RuntimeError as e:  # the process cannot start another thread now
            logger.warning("cannot start a request thread (%s); closing the connection", e)
            with self._lock:
                self._active -= 1
            self._forget(conn)

    def _serve_one(self, conn: Connection) -> None:
        while True:
            keep = False
            try:
                conn.sock.setblocking(True)
                conn.sock.settimeout(self.limits.body_timeout)
                keep = self.run_request(conn)
            except Exception:  # noqa: BLE001 - one connection's failure must not stop others
                logger.exception("error serving a connection from %s", conn.address)
            if not keep or self._stop.is_set():
                conn.finish()  # before the lock: it may wait a moment for the client
            with self._lock:
                if keep and not self._stop.is_set():
                    self._returned.append(conn)
                else:
                    conn.close()
                    self._open -= 1
                    self._out_of_files = False  # a descriptor was freed
                if self._ready:
                    conn = self._ready.popleft()  # keep this thread for the next waiting head
                else:
                    self._active -= 1
                    conn = None
            self._wake()
            if conn is None:
                return

    def _take_back_returned(self) -> None:
        """Connections whose request finished go back to waiting for their next head."""
        while True:
            with self._lock:
                if not self._returned:
                    break
                conn = self._returned.popleft()
            try:
                conn.sock.setblocking(False)
            except OSError:
                self._forget(conn)
                continue
            self._wait_for_head(conn)
        if not self._accepting and self._open < self._cap and not self._out_of_files:
            self._resume_accepting()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # already woken, or closing

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
