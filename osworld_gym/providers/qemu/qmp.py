"""A small synchronous client of the QEMU Machine Protocol (QMP) over a Unix socket.

QMP is JSON, one message per line: the server greets, the client negotiates capabilities with
``qmp_capabilities``, then each ``{"execute": ..., "id": ...}`` gets a ``return`` or ``error``
with the same id; asynchronous ``event`` messages may arrive in between and are kept. The
VM-snapshot commands (``savevm``/``loadvm``) are reached through ``human-monitor-command``,
which answers the monitor's text output (empty on success).
"""

from __future__ import annotations

import collections
import json
import logging
import socket
import threading
import time
from typing import Any

from osworld_gym.errors import ProviderError

logger = logging.getLogger(__name__)

_MAX_EVENTS = 100


class QMPError(ProviderError):
    """QEMU answered a command with an error, or the monitor connection failed."""


class QMPClient:
    """A connected, negotiated QMP session.

    Args:
        path: The monitor's Unix socket (``-qmp unix:PATH,server=on,wait=off``).
        timeout: Seconds a command may take unless told otherwise.

    Attributes:
        greeting: QEMU's greeting (its version and capabilities).
        events: The latest asynchronous events (``{"event": ..., "data": ...}``).
    """

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=_MAX_EVENTS)
        self._lock = threading.Lock()
        self._buffer = b""
        self._next_id = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(path)
            self.greeting = self._read_message(time.monotonic() + timeout)
            if "QMP" not in self.greeting:
                raise QMPError(f"not a QMP monitor at {path}: {self.greeting!r}")
            self.execute("qmp_capabilities")
        except BaseException:
            self._sock.close()
            raise

    def execute(
        self, command: str, arguments: dict[str, Any] | None = None, timeout: float | None = None
    ) -> Any:
        """Run a QMP command and return its ``return`` value.

        Raises:
            QMPError: QEMU reported an error, or the connection broke or timed out.
        """
        budget = timeout if timeout is not None else self.timeout
        # Bounded: a teardown's ``quit`` must not wait behind a long ``loadvm`` of another
        # thread; it then stops QEMU by signal instead.
        if not self._lock.acquire(timeout=budget):
            raise QMPError(f"QMP {command}: the monitor is busy with another command")
        try:
            self._next_id += 1
            request: dict[str, Any] = {"execute": command, "id": self._next_id}
            if arguments:
                request["arguments"] = arguments
            deadline = time.monotonic() + budget
            try:
                self._sock.sendall(json.dumps(request).encode() + b"\n")
                while True:
                    message = self._read_message(deadline)
                    if "event" in message:
                        self.events.append(message)
                        continue
                    if message.get("id") != self._next_id:
                        logger.debug("ignoring QMP message %r", message)
                        continue
                    if "error" in message:
                        error = message["error"]
                        raise QMPError(f"{command}: {error.get('class')}: {error.get('desc')}")
                    return message.get("return")
            except (OSError, ValueError) as e:
                raise QMPError(f"QMP {command} failed: {type(e).__name__}: {e}") from e
        finally:
            self._lock.release()

    def human_command(self, command_line: str, timeout: float | None = None) -> str:
        """Run a human-monitor (HMP) command, e.g. ``savevm ready``; return its text output."""
        output = self.execute(
            "human-monitor-command", {"command-line": command_line}, timeout=timeout
        )
        return str(output or "")

    def close(self) -> None:
        """Close the monitor connection (QEMU keeps running)."""
        self._sock.close()

    def __enter__(self) -> QMPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer from QEMU in time")
            self._sock.settimeout(remaining)
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("QEMU closed the monitor connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError(f"unexpected QMP message {message!r}")
        return message
