"""The side venv that holds OSWorld's ``desktop-env`` for the parity suite (never our dependency).

``desktop-env`` is installed with ``--no-deps`` (its full requirements pull in torch, Playwright,
cloud SDKs, ...), together with the libraries its metric modules import:

* ``SHARED_LIBRARIES`` — libraries both sides use, pinned to the versions installed in *our*
  environment (``importlib.metadata``), so that only the metric code differs between the two;
* ``OSWORLD_ONLY_LIBRARIES`` — what only OSWorld's modules import, pinned here for repeatable
  builds.

The venv lives under ``~/.cache/osworld-gym/parity/venv-<key>`` (``$OSWORLD_PARITY_CACHE``
overrides the folder), where the key hashes the Python version, the ``desktop-env`` version and
every pin, and is reused while the key holds. Builds take a file lock, so parallel runs wait for
one build instead of colliding; a build that died half-way (no ``.complete`` marker) is redone.
``$OSWORLD_PARITY_PYTHON`` names an existing interpreter to use instead (no build).

To extend the venv for a new family, add the libraries its OSWorld module imports to one of the
two tuples: the key changes, and the next run builds a fresh venv.
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
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

DESKTOP_ENV_VERSION = "1.0.2"

# Libraries OSWorld's metric modules import that our metrics use as well: same version as ours.
SHARED_LIBRARIES: tuple[str, ...] = (
    "numpy",
    "scipy",
    "pandas",
    "openpyxl",
    "python-docx",
    "python-pptx",
    "odfpy",
    "pypdf",
    "pymupdf",
    "rapidfuzz",
    "lxml",
    "cssselect",
    "Pillow",
    "PyYAML",
    "tldextract",
    "xmltodict",
    "mutagen",
    "librosa",
    "fastdtw",
    "opencv-python-headless",
    "ImageHash",
    "requests",
    "formulas",
)

# What only OSWorld's modules import (easyocr, for docs.py, is left out: it needs torch).
OSWORLD_ONLY_LIBRARIES: tuple[str, ...] = (
    "PyPDF2==3.0.1",
    "pdfplumber==0.11.7",
    "borb==2.1.25",
    "scikit-image==0.25.2",
    "pyacoustid==1.3.0",
    "beautifulsoup4==4.14.2",
    # controllers/setup.py: its upload step encodes files with it
    "requests-toolbelt==1.0.0",
    # evaluators/getters/misc.py (rule_relativeTime's time zones)
    "pytz==2025.2",
)

BUILD_TIMEOUT_S = 1800.0
_MARKER = ".complete"


def cache_root() -> Path:
    """Where side venvs are kept (``$OSWORLD_PARITY_CACHE`` or ``~/.cache/osworld-gym/parity``)."""
    configured = os.environ.get("OSWORLD_PARITY_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "osworld-gym" / "parity"


def _installed_version(distribution: str) -> str | None:
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
    # A local build (``+cpu``) is not on PyPI: let the side venv take PyPI's release instead.
    return None if "+" in version else version


def requirements() -> list[str]:
    """The side venv's requirement lines besides ``desktop-env`` itself (sorted, pinned)."""
    shared = []
    for name in SHARED_LIBRARIES:
        version = _installed_version(name)
        shared.append(f"{name}=={version}" if version else name)
    return sorted(shared + list(OSWORLD_ONLY_LIBRARIES), key=str.lower)


def venv_key(reqs: list[str]) -> str:
    """A short hash of everything that decides the venv's contents."""
    payload = {
        "python": list(sys.version_info[:2]),
        "desktop-env": DESKTOP_ENV_VERSION,
        "requirements": reqs,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: list[str], log: Path, deadline: float) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        completed = subprocess.run(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=max(1.0, deadline - time.monotonic()),
            check=False,
        )
    if completed.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"side venv build step failed ({completed.returncode}): {tail}")


def _build(target: Path, reqs: list[str], log: Path) -> None:
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    shutil.rmtree(target, ignore_errors=True)
    log.write_text("")
    _run([sys.executable, "-m", "venv", str(target)], log, deadline)
    python = str(target / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "--no-deps", f"desktop-env=={DESKTOP_ENV_VERSION}"], log, deadline)
    _run([*pip, *reqs], log, deadline)
    (target / _MARKER).write_text(json.dumps({"requirements": reqs}, indent=1))


def ensure_venv() -> Path:
    """The side venv's Python, building the venv first when it is not there yet.

    Returns:
        Path of the interpreter to run OSWorld's code with.

    Raises:
        RuntimeError: The build failed (the pip log's tail is in the message).
        subprocess.TimeoutExpired: The build took longer than ``BUILD_TIMEOUT_S``.
    """
    configured = os.environ.get("OSWORLD_PARITY_PYTHON")
    if configured:
        return Path(configured)
    reqs = requirements()
    root = cache_root()
    target = root / f"venv-{venv_key(reqs)}"
    if (target / _MARKER).is_file():
        return target / "bin" / "python"
    with _locked(root / f"venv-{venv_key(reqs)}.lock"):
        if not (target / _MARKER).is_file():  # another run may have built it while we waited
            _build(target, reqs, root / f"venv-{venv_key(reqs)}.log")
    return target / "bin" / "python"


if __name__ == "__main__":  # build (or find) the venv by hand: python tests/parity/parity_venv.py
    started = time.monotonic()
    print(ensure_venv(), f"({time.monotonic() - started:.1f} s)")
