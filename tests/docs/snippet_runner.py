"""Running documentation blocks and example scripts for real, each in a subprocess.

A block runs with the test's interpreter (``sys.executable``; shell blocks find it first on
``PATH`` as ``python``, ``python3`` and the console scripts beside it), in a folder of its own
that links the checkout's ``examples``, ``scripts``, ``benchmarks`` and ``vm_images`` (commands
name them relative to the repository root) and, where OSWorld's task files are present,
``evaluation_examples``; whatever it writes stays in that folder. It is stopped, with every
process it started, at its deadline.

A page whose block serves on a fixed address (``serves 127.0.0.1:8000``) runs its blocks in a
network namespace of their own when the test runs as root, so the address is the page's alone;
elsewhere it uses the host's loopback, and a taken port skips the page's blocks.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from doc_snippets import REPO, Snippet

logger = logging.getLogger(__name__)

LINKED = ("examples", "scripts", "benchmarks", "vm_images")
STOP_GRACE_S = 30.0  # a server's desktops stop on SIGTERM; past this it is killed
_NAMESPACES = itertools.count()


@dataclass
class Outcome:
    """How a block's process ended."""

    returncode: int | None  # None: killed at its deadline
    output: str  # stdout and stderr, interleaved
    seconds: float

    def tail(self, chars: int = 6000) -> str:
        """The end of the output, for a failure message."""
        return self.output[-chars:]


def block_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a block: ours, the interpreter's folder first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def make_workdir(folder: Path, osworld_tasks: Path | None) -> Path:
    """``folder`` with the checkout's folders that commands name linked into it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        (folder / name).symlink_to(REPO / name, target_is_directory=True)
    if osworld_tasks is not None:
        (folder / "evaluation_examples").symlink_to(osworld_tasks, target_is_directory=True)
    return folder


def command_for(snippet: Snippet, folder: Path) -> list[str]:
    """Write the block's program into ``folder``; the command that runs it there."""
    if snippet.kind == "python":
        path = folder / "snippet.py"
        path.write_text(snippet.program(), encoding="utf-8")
        return [sys.executable, path.name]
    path = folder / "snippet.sh"
    path.write_text(snippet.program(), encoding="utf-8")
    return ["bash", "-e", "-o", "pipefail", path.name]


def _stop_group(process: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM the process's group, then SIGKILL what is left after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if _group_gone(process):
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        deadline = time.monotonic() + wait
        while not _group_gone(process) and time.monotonic() < deadline:
            time.sleep(0.05)
    if not _group_gone(process):
        logger.warning("processes of group %d outlived SIGKILL", process.pid)


def _group_gone(process: subprocess.Popen[str]) -> bool:
    process.poll()  # reap the leader: a zombie still counts as a member
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return True
    return False


def run(
    command: list[str],
    folder: Path,
    timeout: float,
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
) -> Outcome:
    """Run ``command`` in ``folder`` until it exits or ``timeout`` passes; stop what it left."""
    # Output goes to a file, not a pipe: a process the block leaves behind (a desktop's
    # watchdog) may hold a pipe open long after the block itself has exited.
    log = folder / "output.log"
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as sink:
        process = subprocess.Popen(
            [*(prefix or []), *command],
            cwd=folder,
            env=env or block_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    returncode: int | None
    try:
        returncode = process.wait(timeout)
    except subprocess.TimeoutExpired:
        returncode = None
    seconds = time.monotonic() - started
    _stop_group(process, 5.0)  # at the deadline: all of it; else what it left running
    return Outcome(returncode, log.read_text(encoding="utf-8", errors="replace"), seconds)


class Namespace:
    """A private network namespace (``ip netns``) with its loopback up."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prefix = ["ip", "netns", "exec", name]

    @classmethod
    def create(cls) -> Namespace | None:
        """A new namespace; None where none can be made (not root, no iproute2, refused)."""
        if os.geteuid() != 0 or shutil.which("ip") is None:
            return None
        namespace = cls(f"osworld-snippets-{os.getpid()}-{next(_NAMESPACES)}")
        added = subprocess.run(
            ["ip", "netns", "add", namespace.name], capture_output=True, text=True, timeout=30
        )
        if added.returncode:
            logger.warning("no network namespace (ip netns add: %s)", added.stderr.strip())
            return None
        up = [*namespace.prefix, "ip", "link", "set", "lo", "up"]
        if subprocess.run(up, capture_output=True, timeout=30).returncode:
            namespace.close()
            return None
        return namespace

    def close(self) -> None:
        """Remove the namespace (its processes are gone by then)."""
        done = subprocess.run(
            ["ip", "netns", "del", self.name], capture_output=True, text=True, timeout=30
        )
        if done.returncode:
            logger.warning("ip netns del %s: %s", self.name, done.stderr.strip())


def port_answers(host: str, port: int, prefix: list[str]) -> bool:
    """Whether ``host:port`` accepts a connection (from inside the namespace of ``prefix``)."""
    if not prefix:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return True
        return False
    probe = f"exec 3<>/dev/tcp/{host}/{port}"  # bash connects (and fails at once if refused)
    done = subprocess.run([*prefix, "bash", "-c", probe], capture_output=True, timeout=30)
    return done.returncode == 0


def port_free(host: str, port: int) -> bool:
    """Whether ``host:port`` can be bound here (the host's network)."""
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


@dataclass
class Server:
    """A serving block running in the background."""

    snippet: Snippet
    process: subprocess.Popen[str]
    log: Path

    def output(self) -> str:
        """What it printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")


@dataclass
class PageServers:
    """The serving blocks of one page, and where the page's blocks run."""

    page: str
    prefix: list[str] = field(default_factory=list)
    namespace: Namespace | None = None
    servers: list[Server] = field(default_factory=list)
    skip: str | None = None  # why the page's blocks cannot run here
    error: str | None = None  # a server that did not come up


class Servers:
    """Starts a page's serving blocks when one of its blocks first runs; one page at a time."""

    def __init__(self, root: Path, osworld_tasks: Path | None) -> None:
        self.root = root
        self.osworld_tasks = osworld_tasks
        self.current: PageServers | None = None

    def for_page(self, page: str, serving: list[Snippet]) -> PageServers:
        """The page's servers, started (and the previous page's stopped) on first use."""
        if self.current is not None and self.current.page == page:
            return self.current
        self.close()
        state = PageServers(page)
        self.current = state
        if not serving:
            return state
        state.namespace = Namespace.create()
        if state.namespace is not None:
            state.prefix = state.namespace.prefix
        else:
            taken = [s for s in serving if s.serves and not port_free(*s.serves)]
            if taken:
                host, port = taken[0].serves or ("", 0)
                state.skip = f"{host}:{port} is taken here and no private network (needs root)"
                return state
        for snippet in serving:
            self._start(state, snippet)
            if state.error:
                break
        return state

    def _start(self, state: PageServers, snippet: Snippet) -> None:
        assert snippet.serves is not None
        folder = make_workdir(self.root / snippet.name.replace("/", "_"), self.osworld_tasks)
        command = command_for(snippet, folder)
        log = folder / "server.log"
        with open(log, "w", encoding="utf-8") as sink:
            process = subprocess.Popen(
                [*state.prefix, *command],
                cwd=folder,
                env=block_env(),
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        server = Server(snippet, process, log)
        state.servers.append(server)
        host, port = snippet.serves
        deadline = time.monotonic() + snippet.timeout
        while not port_answers(host, port, state.prefix):
            if process.poll() is not None or time.monotonic() > deadline:
                why = "exited" if process.poll() is not None else f"not up in {snippet.timeout} s"
                state.error = f"{snippet.name} ({why}):\n{server.output()[-6000:]}"
                return
            time.sleep(0.2)
        logger.info("%s serves %s:%d", snippet.name, host, port)

    def close(self) -> None:
        """Stop the current page's servers and remove its namespace."""
        state, self.current = self.current, None
        if state is None:
            return
        for server in state.servers:
            _stop_group(server.process, STOP_GRACE_S)
        if state.namespace is not None:
            state.namespace.close()


@contextlib.contextmanager
def servers(root: Path, osworld_tasks: Path | None) -> Iterator[Servers]:
    """A ``Servers`` that stops whatever is still running at the end."""
    registry = Servers(root, osworld_tasks)
    try:
        yield registry
    finally:
        registry.close()
