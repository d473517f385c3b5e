"""Side venvs for the trainer adapters' tests: a trainer's own PyPI packages, kept off our env.

Some trainers pin libraries that clash with the project's ``train`` extra (verl:
``transformers<5.11``) or need another Python (SkyRL's trainer: 3.12). Their adapter tests run a
script inside a venv built for them on first use and cached under
``~/.cache/osworld-gym/venvs/<name>-<key>`` (``$OSWORLD_VENV_CACHE`` overrides the folder), where
the key hashes the interpreter, the build steps and this checkout's package metadata: CI reuses a
venv between runs while those hold. Builds take a file lock, so parallel runs wait for one
build; a build that died half-way (no ``.complete`` marker) is redone.

Two kinds of venv:

* ``inherit=True``: ``--system-site-packages`` over the running interpreter, so osworld-gym,
  torch and the test tools come from our env and the venv only adds (or overrides) what the
  trainer pins;
* ``inherit=False`` with another ``python``: a clean venv into which the steps install this
  checkout (``--no-deps``) and what it needs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from wheel_helpers import copy_checkout

BUILD_TIMEOUT_S = 2400.0
_MARKER = ".complete"
REPO = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """Where side venvs are kept (``$OSWORLD_VENV_CACHE`` or ``~/.cache/osworld-gym/venvs``)."""
    configured = os.environ.get("OSWORLD_VENV_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "osworld-gym" / "venvs"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: Sequence[str], log: Path, deadline: float) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        completed = subprocess.run(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=max(1.0, deadline - time.monotonic()),
            check=False,
            cwd=REPO,
        )
    if completed.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"side venv build step failed ({completed.returncode}): {tail}")


def _package_fingerprint() -> str:
    """What a clean venv's copy of this checkout depends on: its metadata and source files."""
    digest = hashlib.sha256()
    for name in ("setup.cfg", "setup.py", "pyproject.toml"):
        digest.update((REPO / name).read_bytes())
    for folder in ("osworld_gym", "agents", "envs"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(REPO)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_venv(
    name: str,
    pip_steps: Sequence[Sequence[str]],
    *,
    python: Path | str | None = None,
    inherit: bool = True,
    install_checkout: bool = False,
) -> Path:
    """The side venv's Python, building the venv first when it is not there yet.

    Args:
        name: Folder name prefix (``verl``, ``skyrl-py312``).
        pip_steps: ``pip install`` argument lists, run in order (``["torch==2.13.0"]``,
            ``["verl[verl-core]==0.9.1"]``).
        python: The interpreter to build from (default: the running one).
        inherit: ``--system-site-packages``: see our env's packages.
        install_checkout: Install this checkout into the venv (``--no-deps``) after the steps;
            the key then covers the package's files, so an edit rebuilds only this step's venv.

    Raises:
        RuntimeError: A build step failed (the log's tail is in the message).
    """
    interpreter = str(python or sys.executable)
    payload = {
        "python": subprocess.run(
            [interpreter, "-c", "import sys; print(sys.version)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip(),  # fmt: skip
        "inherit": inherit,
        "steps": [list(step) for step in pip_steps],
        "checkout": _package_fingerprint() if install_checkout else None,
    }
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]
    root = cache_root()
    target = root / f"{name}-{key}"
    venv_python = target / "bin" / "python"
    if (target / _MARKER).is_file():
        return venv_python
    with _locked(root / f"{name}-{key}.lock"):
        if (target / _MARKER).is_file():  # another run built it while we waited
            return venv_python
        for stale in root.glob(f"{name}-*"):  # older keys of this venv: superseded
            if stale.is_dir() and stale != target:
                shutil.rmtree(stale, ignore_errors=True)
                for leftover in (stale.with_name(stale.name + ".log"),):
                    leftover.unlink(missing_ok=True)
        log = root / f"{name}-{key}.log"
        log.write_text("")
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        shutil.rmtree(target, ignore_errors=True)
        argv = [interpreter, "-m", "venv", str(target)]
        _run(argv + (["--system-site-packages"] if inherit else []), log, deadline)
        pip = [str(venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        for step in pip_steps:
            _run([*pip, *step], log, deadline)
        if install_checkout:
            # From a copy without build/: setuptools reuses a checkout's build/lib and never
            # removes what it holds, so files a move deleted would ship again.
            with tempfile.TemporaryDirectory(prefix="osworld-gym-side-venv-") as folder:
                source = copy_checkout(Path(folder) / "checkout")
                _run([*pip, "--no-deps", str(source)], log, deadline)
        (target / _MARKER).write_text(json.dumps(payload, indent=1))
    return venv_python


def run_in_venv(
    python: Path, args: Sequence[str], *, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python args...`` from the repository root with output captured as text."""
    merged = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [str(python), *args],
        cwd=REPO,
        env=merged,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
