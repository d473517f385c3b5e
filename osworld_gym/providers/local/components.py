"""The running components of one ``local`` desktop: start them, find them, tell their state.

A component (``"xvfb"``, ``"sandbox"``, ``"dbus"``, ``"atspi"``, ``"wm"``, ``"guest"``) is a
process the desktop started, with a log file of its own. A sandboxed one is carried by a chain
of ``bwrap`` processes: its handle is the outermost, which exits as soon as the program
inside does (with its status), and ``ComponentTable.pids()`` finds the program itself.
How a command is wrapped (sandbox, control groups) and its environment come from the desktop.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from osworld_gym.errors import DesktopDiedError, ProviderError
from osworld_gym.providers import processes

SERVING_STATES = ("R", "S", "D")  # running or sleeping; not stopped ("T"), not a zombie
STOPPED_STATES = ("T", "t")  # stopped by a signal, or by a tracer
_LOG_TAIL_LINES = 15

# Builds the command line that starts component ``name`` (sandbox, control groups) and the
# descriptors the child must inherit for it.
Wrapper = Callable[[str, list[str]], tuple[list[str], tuple[int, ...]]]


def reap(proc: subprocess.Popen[bytes], timeout: float = 1.0) -> None:
    """Wait for ``proc`` (bounded), then kill it."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class ComponentTable:
    """The components of one desktop, by name.

    Args:
        log_dir: Where each component's log goes (``<name>.log``).
        cwd: The components' working directory (HOME is deleted and recreated on resets).
        wrap: Wraps a component's command line (see ``Wrapper``).
        environment: The environment of a component, by name.
        sandboxed: Whether a component runs in the sandbox (its handle is a ``bwrap``).

    Attributes:
        procs: The handles of the components started and not yet forgotten.
    """

    def __init__(
        self,
        log_dir: Path,
        cwd: Path,
        *,
        wrap: Wrapper,
        environment: Callable[[str], dict[str, str]],
        sandboxed: Callable[[str], bool],
    ) -> None:
        self.log_dir = log_dir
        self._cwd = cwd
        self._wrap = wrap
        self._environment = environment
        self.sandboxed = sandboxed
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        # Each sandboxed component's bwrap chain, (PID, start time) outermost first, once it
        # reached the program: finding it scans every process on the host for each link.
        self._chains: dict[str, list[tuple[int, str | None]]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.procs

    def spawn(
        self, name: str, argv: list[str], pass_fds: tuple[int, ...] = ()
    ) -> subprocess.Popen[bytes]:
        """Start component ``name`` running ``argv`` (wrapped); it replaces any of that name.

        Raises:
            ProviderError: the program is not installed.
        """
        if not shutil.which(argv[0]):
            raise ProviderError(f"{argv[0]} is not installed; run scripts/install_system_deps.sh")
        command, fds = self._wrap(name, argv)
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                command,
                env=self._environment(name),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=self._cwd,
                pass_fds=(*pass_fds, *fds),
            )
        except FileNotFoundError as e:
            raise ProviderError(
                f"{command[0]} is not installed; run scripts/install_system_deps.sh"
            ) from e
        finally:
            log.close()
        self.procs[name] = proc
        return proc

    def run(self, name: str, argv: list[str], deadline: float) -> tuple[int, str]:
        """Run a one-shot command as component ``name`` (wrapped), until it exits or ``deadline``.

        Returns:
            Its exit status (``-9`` when killed at the deadline) and what it printed (stdout;
            its errors go to its log).
        """
        command, fds = self._wrap(name, argv)
        with open(self.log_dir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                command,
                env=self._environment(name),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                cwd=self._cwd,
                pass_fds=fds,
            )
        try:
            out, _ = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            processes.terminate(processes.sandbox_chain(proc.pid), timeout=0.0)
            proc.kill()
            out, _ = proc.communicate()
        return proc.returncode, out.decode(errors="replace")

    def spawn_reporting(self, name: str, argv: Callable[[int], list[str]], deadline: float) -> str:
        """Start a component that writes one line to an inherited pipe once ready; return it.

        Args:
            name: Component name.
            argv: Builds the command line from the pipe's write descriptor.
            deadline: ``time.monotonic()`` value by which the line must arrive.

        Raises:
            DesktopDiedError: it exited first.
            ProviderError: no line by the deadline.
        """
        read_fd, write_fd = os.pipe()
        try:
            self.spawn(name, argv(write_fd), pass_fds=(write_fd,))
            os.close(write_fd)
            write_fd = -1
            return self._read_line(name, read_fd, deadline)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)

    def _read_line(self, name: str, fd: int, deadline: float) -> str:
        data = b""
        while b"\n" not in data:
            remaining = deadline - time.monotonic()
            proc = self.procs[name]
            if proc.poll() is not None:
                raise DesktopDiedError(name, proc.returncode, self.log_tail(name))
            if remaining <= 0:
                raise ProviderError(f"{name} not ready in time\n{self.log_tail(name)}")
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.1))
            if ready:
                chunk = os.read(fd, 256)
                if not chunk and proc.poll() is not None:
                    raise DesktopDiedError(name, proc.returncode, self.log_tail(name))
                data += chunk
        return data.decode().strip()

    def pid(self, name: str) -> int:
        """PID of component ``name``'s program (not of its ``bwrap``)."""
        return self.pids(name)[-1]

    def pids(self, name: str) -> list[int]:
        """The component's process and, when sandboxed, the ``bwrap`` processes that carry it.

        A complete chain is remembered while every process in it runs (checked by PID and
        start time, so a reused PID never passes): each reset asks for three chains, and a
        walk scans every process on the host, a cost that grows with the desktops.
        """
        pid = self.procs[name].pid
        if not self.sandboxed(name):
            return [pid]
        cached = self._chains.get(name)
        if (
            cached
            and cached[0][0] == pid
            and all(processes.still_running(p, started) for p, started in cached)
        ):
            return [p for p, _ in cached]
        chain = processes.sandbox_chain(pid)
        if len(chain) > 1 and processes.command_name(chain[-1]) != b"bwrap":
            self._chains[name] = [(p, processes.start_time(p)) for p in chain]
        return chain

    def program_pid(self, name: str) -> int:
        """PID of component ``name``'s program, which ``pid()`` may not be for a moment.

        Raises:
            ProcessLookupError: The sandboxed program has exited and its ``bwrap`` not yet (a
                few milliseconds): the chain ends at the ``bwrap``, whose PID is not the
                program's.
        """
        pid = self.pid(name)
        if self.sandboxed(name) and processes.command_name(pid) in (b"bwrap", None):
            raise ProcessLookupError(f"{name}'s program has exited")
        return pid

    def exited(self, name: str) -> bool:
        """Whether component ``name`` (started) has exited."""
        return name in self.procs and self.procs[name].poll() is not None

    def stopped(self, name: str) -> bool:
        """Whether component ``name``'s program is stopped (SIGSTOP or a tracer).

        A stopped process is alive to ``poll()`` but answers nothing.
        """
        try:
            return processes.state(self.pid(name)) in STOPPED_STATES
        except (KeyError, IndexError):
            return False

    def down(self, name: str) -> bool:
        """Whether component ``name`` exited, is exiting, or is stopped.

        Its program, not only its handle: a sandboxed program's ``bwrap`` exits a few
        milliseconds after the program does.
        """
        if self.exited(name):
            return True
        try:
            pid = self.program_pid(name)
        except (KeyError, IndexError):
            return False
        except ProcessLookupError:
            return True
        return processes.state(pid) in (*STOPPED_STATES, "Z", "X", None)

    def stop(self, name: str, timeout: float = 1.0) -> None:
        """Stop component ``name`` (SIGTERM, SIGKILL after ``timeout``) and forget it."""
        processes.terminate(self.pids(name), timeout=timeout)
        self.forget(name)

    def forget(self, name: str) -> None:
        """Reap component ``name`` (already stopped, or going) and forget it."""
        reap(self.procs.pop(name))

    def log_tail(self, name: str) -> str:
        """The last lines of component ``name``'s log."""
        try:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-_LOG_TAIL_LINES:])

    def logs(self) -> str:
        """The last lines of each component's log."""
        return "\n".join(f"--- {name} ---\n{self.log_tail(name)}" for name in self.procs)
