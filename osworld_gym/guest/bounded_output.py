"""Commands whose output the guest keeps within a bound, whatever they print.

``/execute``, ``/run_python`` and ``/run_bash_script`` answer a command's output. Captured
whole, a command that prints gigabytes (``yes``, a ``print`` in a loop of an agent's pyautogui
code) would fill the guest's memory until the desktop's memory limit ends the episode. So the
pipes are read as the command writes, the first ``MAX_OUTPUT_BYTES`` of each stream kept
and the rest read and dropped (the command is never blocked on a full pipe), with a note in
the answer when more was printed. Nothing goes to disk: a desktop whose disk is full still
gets its commands' errors.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from dataclasses import dataclass
from typing import IO, Any

MAX_OUTPUT_BYTES = 16 * 1024 * 1024  # per stream: far above any task's checks
_CHUNK = 1 << 16


@dataclass(frozen=True)
class BoundedResult:
    """A finished command's exit status and (bounded) output."""

    returncode: int
    stdout: str
    stderr: str


class _Kept:
    """The start of one stream, and how much of it there was."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        room = MAX_OUTPUT_BYTES - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        # Universal newlines, as text-mode capture (and so OSWorld's server) gives them.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if self.size > MAX_OUTPUT_BYTES:
            text += f"\n[osworld-gym: output cut at {MAX_OUTPUT_BYTES} of {self.size} bytes]\n"
        return text


def _drain(proc: subprocess.Popen[bytes], streams: dict[IO[bytes], _Kept], deadline: float) -> None:
    with selectors.DefaultSelector() as selector:
        for stream in streams:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _CHUNK)
                if chunk:
                    streams[key.fileobj].add(chunk)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)


def run_bounded(
    argv: list[str] | str,
    *,
    timeout: float,
    merge_stderr: bool = False,
    **popen_kwargs: Any,
) -> BoundedResult:
    """``subprocess.run`` with each stream's output kept to ``MAX_OUTPUT_BYTES``.

    Args:
        argv: The command (a string with ``shell=True``).
        timeout: Seconds before the command is killed (``subprocess.TimeoutExpired``).
        merge_stderr: Standard error into the same stream as standard output.
        **popen_kwargs: Further ``subprocess.Popen`` arguments (env, cwd, shell, user).

    Raises:
        subprocess.TimeoutExpired: it ran past ``timeout`` (it is killed first).
    """
    deadline = time.monotonic() + timeout
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        **popen_kwargs,
    ) as proc:
        out, err = _Kept(), _Kept()
        streams = {proc.stdout: out}
        if proc.stderr is not None:
            streams[proc.stderr] = err
        try:
            _drain(proc, streams, deadline)  # type: ignore[arg-type]
            returncode = proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired(proc.args, timeout) from None
    return BoundedResult(returncode, out.text(), err.text())
