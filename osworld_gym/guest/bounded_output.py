"""Commands whose output the guest keeps within a bound, whatever they print.

``/execute``, ``/run_python`` and ``/run_bash_script`` answer a command's output. Captured
into memory, a command that prints gigabytes (``yes``, a ``print`` in a loop of an agent's
pyautogui code) would fill the guest's memory until the desktop's memory limit ends the
episode. So the output goes to unnamed files in the guest's folder (on the desktop's capped
disk) and only its first :data:`MAX_OUTPUT_BYTES` per stream are read back, with a note when
more was printed.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_OUTPUT_BYTES = 16 * 1024 * 1024  # per stream: far above any task's checks


@dataclass(frozen=True)
class BoundedResult:
    """A finished command's exit status and (bounded) output."""

    returncode: int
    stdout: str
    stderr: str


def _read_bounded(stream: IO[bytes]) -> str:
    size = stream.seek(0, 2)
    stream.seek(0)
    text = stream.read(MAX_OUTPUT_BYTES).decode("utf-8", errors="replace")
    # Universal newlines, as text-mode capture (and so OSWorld's server) gives them.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if size > MAX_OUTPUT_BYTES:
        text += f"\n[osworld-gym: output cut at {MAX_OUTPUT_BYTES} of {size} bytes]\n"
    return text


def run_bounded(
    argv: list[str] | str,
    *,
    spool: Path,
    timeout: float,
    merge_stderr: bool = False,
    **popen_kwargs: Any,
) -> BoundedResult:
    """``subprocess.run`` with the output on disk and read back within the bound.

    Args:
        argv: The command (a string with ``shell=True``).
        spool: Folder of the unnamed files the output goes to.
        timeout: Seconds before the command is killed (``subprocess.TimeoutExpired``).
        merge_stderr: Standard error into the same stream as standard output.
        **popen_kwargs: Further ``subprocess.run`` arguments (env, cwd, shell, user).
    """
    with tempfile.TemporaryFile(dir=spool) as out, tempfile.TemporaryFile(dir=spool) as err:
        done = subprocess.run(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT if merge_stderr else err,
            timeout=timeout,
            check=False,
            **popen_kwargs,
        )
        return BoundedResult(done.returncode, _read_bounded(out), _read_bounded(err))
