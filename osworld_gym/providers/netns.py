"""A desktop's own network namespace, and the ports the host reaches through it.

A ``local`` desktop's programs run in a network namespace of their own (bubblewrap's
``--unshare-net``): a loopback of their own, nothing of the host's. Services on the host's
loopback (a vLLM server, Ray's dashboard and job API, Jupyter), other desktops' guests and the
X servers' abstract sockets are out of reach.

The driver still needs the desktop's guest server and OSWorld's service ports (Chrome's
debugging port, CDP, VLC's HTTP interface). ``PortForwarder`` listens on the host's
loopback for each and relays every connection to the same port on the desktop's loopback. A
test that serves pages to the desktop's browser from the host names those ports the other way
(``outbound``): the desktop then reaches exactly them, nothing else of the host.

One thread per desktop relays every connection; it opens each socket in the namespace it
belongs to (``setns`` applies to the calling thread alone).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import selectors
import socket
import threading
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

_CLONE_NEWNET = 0x40000000
_CHUNK = 256 * 1024
_BACKLOG = 64


def _setns(fd: int) -> None:
    """Move the calling thread into the network namespace open as ``fd``."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setns: {os.strerror(code)}")


@dataclass
class _Pipe:
    """One relayed connection: two sockets, what each still has to receive, who ended."""

    a: socket.socket
    b: socket.socket
    to_send: dict[int, bytearray] = field(default_factory=dict)  # by the receiving fd
    ended: set[int] = field(default_factory=set)  # fds that sent EOF
    shut: set[int] = field(default_factory=set)  # fds whose writing side we shut down
    dead: set[int] = field(default_factory=set)  # fds reset by their peer: nothing goes there
    watched: dict[int, int] = field(default_factory=dict)  # fd -> selector events

    def other(self, sock: socket.socket) -> socket.socket:
        return self.b if sock is self.a else self.a


class PortForwarder:
    """Relays loopback ports between the host and a desktop's network namespace.

    Args:
        netns_fd: An open descriptor of the desktop's network namespace (duplicated here).
        inbound: Host ports to listen on, each relayed to the same port inside the desktop.
        outbound: Ports to listen on inside the desktop, each relayed to the same port on the
            host's loopback.

    Raises:
        OSError: a port could not be bound, or the namespace entered.
    """

    def __init__(
        self, netns_fd: int, inbound: tuple[int, ...], outbound: tuple[int, ...] = ()
    ) -> None:
        self._inside = os.dup(netns_fd)
        self._host = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self._selector = selectors.DefaultSelector()
        self._pipes: dict[int, _Pipe] = {}
        self._wake_read, self._wake_write = socket.socketpair()
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        self._stopping = threading.Event()
        ready: list[BaseException | None] = []
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(inbound, outbound, ready, started),
            name="osworld-gym-port-forwarder",
            daemon=True,
        )
        self._thread.start()
        started.wait()
        if ready and ready[0] is not None:
            self._thread.join()
            self._close_descriptors()
            raise ready[0]

    def _listen(self, port: int, towards: str) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen(_BACKLOG)
        server.setblocking(False)
        self._selector.register(server, selectors.EVENT_READ, ("listen", towards, port))

    def _run(
        self,
        inbound: tuple[int, ...],
        outbound: tuple[int, ...],
        ready: list[BaseException | None],
        started: threading.Event,
    ) -> None:
        try:
            for port in inbound:  # on the host: this thread is in the host's namespace yet
                self._listen(port, "inside")
            _setns(self._inside)
            for port in outbound:
                self._listen(port, "host")
        except BaseException as e:  # handed to the constructor, which raises it
            ready.append(e)
            started.set()
            return
        ready.append(None)
        started.set()
        try:
            self._loop()
        except Exception:  # a bug here would silently cut every connection: say it
            logger.exception("the port relay stopped")
        finally:
            for pipe in {id(p): p for p in self._pipes.values()}.values():
                self._drop(pipe)
            for key in list(self._selector.get_map().values()):
                if key.data != "wake":
                    key.fileobj.close()  # type: ignore[union-attr]
            self._selector.close()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            for key, events in self._selector.select():
                if key.data == "wake":
                    return
                if isinstance(key.data, tuple):
                    self._accept(key.fileobj, key.data[1], key.data[2])  # type: ignore[arg-type]
                else:
                    self._service(key.fileobj, events)  # type: ignore[arg-type]

    def _connect(self, towards: str, port: int) -> socket.socket:
        """A connection to ``port`` on the loopback of ``towards`` (``inside`` or ``host``)."""
        target = self._inside if towards == "inside" else self._host
        _setns(target)
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=5.0)
        finally:
            _setns(self._inside)  # listening sockets inside are made here: stay inside

    def _accept(self, server: socket.socket, towards: str, port: int) -> None:
        try:
            client, _ = server.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # out of descriptors: this one waits, the others go on
            logger.warning("port %d: cannot accept a connection: %s", port, e)
            return
        try:
            peer = self._connect(towards, port)
        except OSError as e:
            logger.debug("port %d: no one listens %s (%s)", port, towards, e)
            client.close()
            return
        pipe = _Pipe(client, peer)
        for sock in (client, peer):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pipe.to_send[sock.fileno()] = bytearray()
            self._pipes[sock.fileno()] = pipe
        self._update(pipe)

    def _service(self, sock: socket.socket, events: int) -> None:
        pipe = self._pipes.get(sock.fileno())
        if pipe is None:
            return
        if events & selectors.EVENT_WRITE:
            self._send(pipe, sock)
        if events & selectors.EVENT_READ:
            self._receive(pipe, sock)
        both = {pipe.a.fileno(), pipe.b.fileno()}
        if pipe.ended >= both and not any(pipe.to_send.values()) or pipe.dead >= both:
            self._drop(pipe)
        else:
            self._update(pipe)

    def _receive(self, pipe: _Pipe, sock: socket.socket) -> None:
        try:
            data = sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # reset: an end, and nothing more can go to it
            logger.debug("relay: a side was reset: %s", e)
            self._kill(pipe, sock)
            return
        other = pipe.other(sock)
        if data and other.fileno() not in pipe.dead:
            pipe.to_send[other.fileno()] += data
        elif not data:
            pipe.ended.add(sock.fileno())
        self._send(pipe, other)

    def _send(self, pipe: _Pipe, sock: socket.socket) -> None:
        """Send what ``sock`` has to receive; pass an EOF on once nothing is left.

        A side that was reset gets nothing more, but what the other side still has to receive
        (a server's error answer sent just before it closed) is delivered first.
        """
        if sock.fileno() in pipe.dead:
            return
        buffer = pipe.to_send[sock.fileno()]
        try:
            while buffer:
                del buffer[: sock.send(buffer)]
            source = pipe.other(sock)
            if source.fileno() in pipe.ended and sock.fileno() not in pipe.shut:
                pipe.shut.add(sock.fileno())
                sock.shutdown(socket.SHUT_WR)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            logger.debug("relay: a side was reset: %s", e)
            self._kill(pipe, sock)

    def _kill(self, pipe: _Pipe, sock: socket.socket) -> None:
        """``sock`` was reset: it takes nothing more; the other side gets the rest, then the end.

        What ``sock`` sent before its reset and the relay has not read yet (a server's error
        answer to a request it refused midway) is read out first and delivered.
        """
        other = pipe.other(sock)
        while True:
            try:
                data = sock.recv(_CHUNK)
            except OSError:
                break
            if not data:
                break
            if other.fileno() not in pipe.dead:
                pipe.to_send[other.fileno()] += data
        pipe.dead.add(sock.fileno())
        pipe.ended.add(sock.fileno())
        pipe.to_send[sock.fileno()].clear()
        self._send(pipe, other)

    def _update(self, pipe: _Pipe) -> None:
        """Watch each socket for what it can do now (reading waits while its peer is full)."""
        for sock in (pipe.a, pipe.b):
            fd, other = sock.fileno(), pipe.other(sock).fileno()
            events = 0
            if fd not in pipe.ended and not pipe.to_send[other]:
                events |= selectors.EVENT_READ
            if pipe.to_send[fd] and fd not in pipe.dead:
                events |= selectors.EVENT_WRITE
            was = pipe.watched.get(fd, 0)
            if events == was:
                continue
            if not events:
                self._selector.unregister(sock)
            elif not was:
                self._selector.register(sock, events, "pipe")
            else:
                self._selector.modify(sock, events, "pipe")
            pipe.watched[fd] = events

    def _drop(self, pipe: _Pipe) -> None:
        for sock in (pipe.a, pipe.b):
            self._pipes.pop(sock.fileno(), None)
            if pipe.watched.pop(sock.fileno(), 0):
                self._selector.unregister(sock)
            sock.close()

    def close(self) -> None:
        """Stop relaying and close every port and connection. Safe to call twice."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        try:
            self._wake_write.send(b"x")
        except OSError as e:
            if e.errno != errno.EPIPE:
                logger.debug("waking the port forwarder: %s", e)
        self._thread.join(timeout=5.0)
        self._close_descriptors()

    def _close_descriptors(self) -> None:
        for fd in (self._inside, self._host):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_read.close()
        self._wake_write.close()
