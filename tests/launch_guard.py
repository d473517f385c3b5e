"""Fails a test that starts a desktop, a container or a Ray cluster without the mark for it.

The marks are what select the fast tier (``fixture_marks``): a test that starts one of these
without saying so would make ``-m fast`` slow, or fail it on a host without a desktop. So
``tests/conftest.py`` watches each test, its fixtures included, from its setup to its
teardown (``LaunchGuard.watching()``):

- in this process, the places where such things start are wrapped once per session
  (``LaunchGuard.install()``): a ``local`` desktop (``LocalDesktop.__init__``), a QEMU VM
  (``QemuDesktop.__init__``), a docker desktop (``DockerDesktop.__init__``), a Ray backend's
  start (``RayBackend.start``). For a test without the mark, the start is refused with a
  ``ProviderError`` (so the library's own error handling ends it quickly) and recorded;
- the Docker engine: a ``connect()`` that reaches one, recorded (not refused: tests of the
  "no engine" errors call it too);
- Ray started directly (``ray.init``): Ray initialised at the end of a phase, not at its start;
- in subprocesses (``osworld-gym run``, a desktop started by a script): a test without the
  ``desktop`` mark runs with a folder first on ``PATH`` whose ``Xvfb`` records its start, then
  runs the real one. Every ``local`` desktop, and any bare X server a test starts, runs
  ``Xvfb`` from ``PATH``.

Then ``violations()`` says what the test started and which mark to add; conftest turns that
into a failure of the phase's report. Not seen: a docker desktop or a Ray cluster started in
a subprocess.
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import os
import shutil
import stat
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_gym.errors import ProviderError

SHIM_PREFIX = "pytest-launch-guard-"


class UnmarkedLaunchError(ProviderError):
    """A test without the mark for it tried to start a desktop, a container or Ray."""


@dataclass
class _Watch:
    """What the guard knows about the test it is watching."""

    marks: frozenset[str]
    shim_log_size: int = 0
    ray_was_up: bool = False
    found: list[str] = field(default_factory=list)


def _fix(mark: str) -> str:
    return (
        f"mark the test `@pytest.mark.{mark}`, or declare the mark on the fixture that starts "
        f'it (`@needs("{mark}")` from tests/fixture_marks.py)'
    )


def _ray_is_up() -> bool:
    ray = sys.modules.get("ray")
    is_initialized = getattr(ray, "is_initialized", None)
    return bool(callable(is_initialized) and is_initialized())


class LaunchGuard:
    """One per test session: the wrapped start points, the ``Xvfb`` shim, the watched test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watch: _Watch | None = None
        self._restore: list[tuple[object, str, object]] = []
        self._shim_dir: Path | None = None

    # --- the session ---------------------------------------------------------------------

    def install(self) -> None:
        """Wrap the start points and write the ``Xvfb`` shim (once per session)."""
        from osworld_gym.pool import ray_backend
        from osworld_gym.providers.docker import client as docker_client
        from osworld_gym.providers.docker import provider as docker_provider
        from osworld_gym.providers.local import provider as local_provider
        from osworld_gym.providers.qemu import provider as qemu_provider

        self._refuse(local_provider.LocalDesktop, "__init__", "desktop", "a local desktop")
        self._refuse(qemu_provider.QemuDesktop, "__init__", "desktop", "a QEMU VM")
        self._refuse(docker_provider.DockerDesktop, "__init__", "docker", "a docker desktop")
        self._refuse_async(ray_backend.RayBackend, "start", "ray", "a Ray backend")
        for module in (docker_client, docker_provider):
            self._record_connect(module)
        self._shim_dir = self._write_shim()

    def uninstall(self) -> None:
        """Undo ``install()``."""
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore.clear()
        if self._shim_dir is not None:
            shutil.rmtree(self._shim_dir, ignore_errors=True)
            self._shim_dir = None

    # --- one test ------------------------------------------------------------------------

    @contextlib.contextmanager
    def watching(self, marks: collections.abc.Iterable[str]) -> collections.abc.Iterator[None]:
        """Watch one test, carrying ``marks``, from its setup to its teardown."""
        watch = _Watch(frozenset(marks), ray_was_up=_ray_is_up())
        watch.shim_log_size = self._shim_log_size()
        with self._lock:
            self._watch = watch
        path = os.environ.get("PATH")
        shimmed = self._shim_dir is not None and "desktop" not in watch.marks
        if shimmed:
            os.environ["PATH"] = os.pathsep.join([str(self._shim_dir), *([path] if path else [])])
        try:
            yield
        finally:
            if shimmed and path is None:
                os.environ.pop("PATH", None)
            elif shimmed and path is not None:
                os.environ["PATH"] = path
            with self._lock:
                self._watch = None

    def violations(self) -> list[str]:
        """What the watched test started without its mark since the last call (then forgotten)."""
        with self._lock:
            watch = self._watch
            if watch is None:
                return []
            found, watch.found = watch.found, []
        size = self._shim_log_size()
        if size > watch.shim_log_size and "desktop" not in watch.marks:
            pids = self._shim_log()[watch.shim_log_size : size].split()
            found.append(
                f"started Xvfb (a desktop or a bare X server) in a subprocess (PIDs "
                f"{', '.join(pids)}) without the `desktop` mark: " + _fix("desktop")
            )
        watch.shim_log_size = size
        if "ray" not in watch.marks and not watch.ray_was_up and _ray_is_up():
            found.append("started Ray (ray.init) without the `ray` mark: " + _fix("ray"))
            watch.ray_was_up = True
        return found

    # --- the wrappers --------------------------------------------------------------------

    def _allowed(self, mark: str, what: str) -> str | None:
        """None when the watched test (if any) may start ``what``; else why not (recorded)."""
        with self._lock:
            watch = self._watch
            if watch is None or mark in watch.marks:
                return None
            message = f"started {what} without the `{mark}` mark: {_fix(mark)}"
            watch.found.append(message)
            return message

    def _replace(self, owner: object, name: str, wrapper: object) -> None:
        self._restore.append((owner, name, vars(owner)[name]))
        setattr(owner, name, wrapper)

    def _refuse(self, owner: type, name: str, mark: str, what: str) -> None:
        original = vars(owner)[name]

        @functools.wraps(original)
        def refusing(*args: Any, **kwargs: Any) -> Any:
            why = self._allowed(mark, what)
            if why is not None:
                raise UnmarkedLaunchError(f"launch guard: {why}")
            return original(*args, **kwargs)

        self._replace(owner, name, refusing)

    def _refuse_async(self, owner: type, name: str, mark: str, what: str) -> None:
        original = vars(owner)[name]

        @functools.wraps(original)
        async def refusing(*args: Any, **kwargs: Any) -> Any:
            why = self._allowed(mark, what)
            if why is not None:
                raise UnmarkedLaunchError(f"launch guard: {why}")
            return await original(*args, **kwargs)

        self._replace(owner, name, refusing)

    def _record_connect(self, module: object) -> None:
        original = vars(module)["connect"]

        @functools.wraps(original)
        def recording(*args: Any, **kwargs: Any) -> Any:
            client = original(*args, **kwargs)
            self._allowed("docker", "a connection to a Docker engine")
            return client

        self._replace(module, "connect", recording)

    # --- the Xvfb shim -------------------------------------------------------------------

    def _write_shim(self) -> Path | None:
        # Never another session's shim (a test that runs pytest in a subprocess).
        path = os.pathsep.join(
            folder
            for folder in os.environ.get("PATH", "").split(os.pathsep)
            if not Path(folder).name.startswith(SHIM_PREFIX)
        )
        real = shutil.which("Xvfb", path=path)
        if real is None:
            return None  # nothing can start one here
        folder = Path(tempfile.mkdtemp(prefix=SHIM_PREFIX))
        # Readable by the user a desktop's X server may run as, and its log writable by it.
        folder.chmod(0o755)
        log = folder / "starts.log"
        log.touch()
        log.chmod(0o666)
        shim = folder / "Xvfb"
        shim.write_text(
            "#!/bin/sh\n"
            "# The test launch guard's Xvfb: records its start, then runs the real one.\n"
            f'echo "$$" >> "{log}"\n'
            f'exec "{real}" "$@"\n'
        )
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return folder

    def _shim_log(self) -> str:
        """The PIDs the shim recorded, one a line (a stat per test phase; read only on growth)."""
        if self._shim_dir is None:
            return ""
        try:
            return (self._shim_dir / "starts.log").read_text()
        except FileNotFoundError:
            return ""

    def _shim_log_size(self) -> int:
        if self._shim_dir is None:
            return 0
        try:
            return (self._shim_dir / "starts.log").stat().st_size
        except FileNotFoundError:
            return 0
