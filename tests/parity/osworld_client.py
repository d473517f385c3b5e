"""The client of the parity worker: one process running OSWorld's metric code in the side venv.

``OSWorld`` starts ``osworld_worker.py`` with the side venv's Python and talks JSON lines
to it, each call under a deadline; ``metric_modules()`` maps OSWorld's metric names to the
modules that define them.
"""

from __future__ import annotations

import ast
import json
import os
import selectors
import subprocess
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORKER_SCRIPT = Path(__file__).with_name("osworld_worker.py")
DEFAULT_TIMEOUT_S = float(os.environ.get("OSWORLD_PARITY_TIMEOUT", "60"))
IMPORT_TIMEOUT_S = 180.0  # a module's first call also imports it (and its libraries)
START_TIMEOUT_S = 60.0
_KILL_GRACE_S = 5.0


class OSWorldError(Exception):
    """OSWorld's metric gave no score: it raised, or returned something that is not a number.

    Attributes:
        name: OSWorld's exception class name (``"KeyError"``), or ``"NonNumericResult"``.
        message: The exception's message (or the returned value's repr).
        traceback: The worker-side traceback, when there is one.
    """

    def __init__(self, name: str, message: str, traceback: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.traceback = traceback


class OSWorldUnavailable(Exception):
    """OSWorld's code cannot run here: its module cannot be imported, or it used a stand-in.

    Attributes:
        where: The module (``evaluators/metrics/docs.py``) or function (``...:name``).
    """

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


class WorkerError(RuntimeError):
    """The worker died, hung past its deadline, or broke the protocol."""


@dataclass
class _Process:
    popen: subprocess.Popen[bytes]
    selector: selectors.BaseSelector
    log: Path
    buffer: bytes = b""


class OSWorld:
    """Client of one long-lived worker process running OSWorld's code in the side venv.

    Args:
        python: The side venv's interpreter.
        workdir: The worker's working folder (some OSWorld metrics write scratch files to the
            current folder) and where its log (``worker.log``: OSWorld's prints) goes.
        timeout: Default deadline of one call, seconds.
        import_timeout: Extra seconds for a module's first call, which imports it.

    A call that runs past its deadline, or a worker that dies, raises ``WorkerError``
    and the worker is killed; the next call starts a fresh one.
    """

    def __init__(
        self,
        python: Path,
        workdir: Path,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        import_timeout: float = IMPORT_TIMEOUT_S,
    ) -> None:
        self.python = python
        self.workdir = workdir
        self.timeout = timeout
        self.import_timeout = import_timeout
        self.info: dict[str, Any] = {}
        self._proc: _Process | None = None
        self._next_id = 0
        self._imported: set[str] = set()
        self._unavailable: dict[str, str] = {}
        self._modules: dict[str, str] | None = None

    # --- process ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (if not running) and read its greeting."""
        if self._proc is not None:
            return
        log = self.workdir / "worker.log"
        env = dict(os.environ, PYTHONUTF8="1", TLDEXTRACT_CACHE_TIMEOUT="5")
        env.pop("PYTHONPATH", None)  # nothing of ours on the side venv's path
        with open(log, "ab") as log_file:
            popen = subprocess.Popen(
                [str(self.python), "-u", str(WORKER_SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                cwd=self.workdir,
                env=env,
                bufsize=0,
            )
        assert popen.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(popen.stdout, selectors.EVENT_READ)
        self._proc = _Process(popen, selector, log)
        self._imported.clear()
        hello = self._read(time.monotonic() + START_TIMEOUT_S)
        if not hello.get("ready"):
            self._kill()
            raise WorkerError(f"the worker did not start: {hello}")
        self.info = hello

    def close(self) -> None:
        """Stop the worker: close its stdin, then kill it if it does not exit."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.popen.stdin is not None
        try:
            proc.popen.stdin.close()
            proc.popen.wait(timeout=_KILL_GRACE_S)
        except (OSError, subprocess.TimeoutExpired):
            proc.popen.kill()
            proc.popen.wait(timeout=_KILL_GRACE_S)
        proc.selector.close()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.popen.kill()
        proc.popen.wait(timeout=_KILL_GRACE_S)
        proc.selector.close()

    def _log_tail(self, proc: _Process) -> str:
        try:
            return proc.log.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _read(self, deadline: float) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.popen.stdout is not None
        fd = proc.popen.stdout.fileno()
        while b"\n" not in proc.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not proc.selector.select(timeout=remaining):
                self._kill()
                raise WorkerError(
                    f"no answer from the worker in time; log:\n{self._log_tail(proc)}"
                )
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = proc.popen.wait(timeout=_KILL_GRACE_S)
                self._proc = None
                raise WorkerError(f"the worker exited ({code}); log:\n{self._log_tail(proc)}")
            proc.buffer += chunk
        line, _, proc.buffer = proc.buffer.partition(b"\n")
        return json.loads(line)

    # --- calls -----------------------------------------------------------------------------

    def call(
        self,
        module: str,
        func: str,
        args: list[Any],
        options: Mapping[str, Any],
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One raw request: the worker's response dict (see ``osworld_worker.py``).

        Raises:
            OSWorldUnavailable: The module cannot be imported in the side venv.
            WorkerError: No answer in time, or the worker died.
        """
        if module in self._unavailable:
            raise OSWorldUnavailable(self._unavailable[module], module)
        self.start()
        proc = self._proc
        assert proc is not None and proc.popen.stdin is not None
        limit = timeout or self.timeout
        wait = limit + (self.import_timeout if module not in self._imported else 0.0)
        self._next_id += 1
        request = {
            "id": self._next_id,
            "module": module,
            "func": func,
            "args": _to_wire(list(args)),
            "options": _to_wire(dict(options)),
            "timeout": wait,
        }
        try:
            proc.popen.stdin.write((json.dumps(request) + "\n").encode())
        except OSError as e:
            self._kill()
            raise WorkerError(f"cannot write to the worker: {e}") from e
        response = self._read(time.monotonic() + wait + _KILL_GRACE_S)
        if response.get("id") != request["id"]:
            self._kill()
            raise WorkerError(f"protocol error: {response!r} answers request {request['id']}")
        kind = response.get("kind")
        if kind == "unavailable":
            self._unavailable[module] = (
                f"OSWorld's {module} cannot be imported: {response['message']}"
            )
            raise OSWorldUnavailable(self._unavailable[module], module)
        self._imported.add(module)
        if kind == "stand_in":
            where = f"{module}:{func}"
            raise OSWorldUnavailable(
                f"OSWorld's {where} used a stand-in: {response['message']}", where
            )
        if kind in ("timeout", "bad_request"):
            if kind == "timeout":
                self._kill()  # its state is unknown after an interrupted call
            raise WorkerError(f"{module}:{func}: {kind}: {response.get('message')}")
        return response

    def score(self, module: str, func: str, *args: Any, **options: Any) -> float:
        """OSWorld's ``func`` of ``desktop_env/<module>`` called as ``func(*args, **options)``.

        Args:
            module: Path inside ``desktop_env``, e.g. ``"evaluators/metrics/table.py"``.
            func: The function's name.
            *args: JSON values; file paths must be absolute (the worker runs elsewhere).
            **options: Keyword arguments, as a task's ``options`` dict.

        Returns:
            The score as a float (bools and numpy numbers converted).

        Raises:
            OSWorldError: OSWorld raised (``.name`` is its exception's class name) or returned
                something that is not a number (``.name == "NonNumericResult"``).
            OSWorldUnavailable: The module cannot be imported in the side venv.
            WorkerError: No answer in time, or the worker died.
        """
        response = self.call(module, func, list(args), options)
        if response["ok"]:
            return float(response["score"])
        name = "NonNumericResult" if response["kind"] == "non_numeric" else response["type"]
        raise OSWorldError(name, response["message"], response.get("traceback", ""))

    # --- names ----------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        """OSWorld's ``desktop_env`` folder in the side venv."""
        self.start()
        return Path(self.info["desktop_env"])

    def module_of(self, func: str) -> str:
        """The metrics module OSWorld takes ``func`` from, e.g. ``evaluators/metrics/general.py``.

        Raises:
            KeyError: No OSWorld metric module defines ``func``.
        """
        if self._modules is None:
            self._modules = metric_modules(self.root / "evaluators" / "metrics")
        return self._modules[func]


def metric_modules(folder: Path) -> dict[str, str]:
    """Metric name -> module path (relative to ``desktop_env``), read from OSWorld's sources.

    Every top-level ``def <name>(`` of ``folder/*.py`` is a candidate; where several modules
    define a name, the one the package's ``__init__`` imports it from wins (that is the
    function OSWorld's evaluator gets).
    """
    relative = "evaluators/metrics"
    defined: dict[str, list[str]] = defaultdict(list)
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                defined[node.name].append(f"{relative}/{path.name}")
    exported: dict[str, str] = {}
    init = folder / "__init__.py"
    if init.is_file():
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    exported[alias.asname or alias.name] = f"{relative}/{node.module}.py"
    return {name: exported.get(name, modules[0]) for name, modules in defined.items()}


def _to_wire(value: Any) -> Any:
    """JSON-plain data for both sides; a ``Path`` becomes its absolute text."""
    if isinstance(value, Path):
        assert value.is_absolute(), f"paths given to OSWorld must be absolute: {value}"
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_wire(v) for v in value]
    return json.loads(json.dumps(value))
