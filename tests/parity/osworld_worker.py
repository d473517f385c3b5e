"""Runs OSWorld's metric functions for the parity suite: a script for the side venv's Python.

Started once per test session by ``parity_harness.OSWorld``; stdlib only (it runs in the side
venv, which has ``desktop-env`` but not osworld-gym). It speaks JSON lines: one request per line
on stdin, one response per line on stdout.

* On start it writes ``{"ready": true, "desktop_env": <folder>, "version": ..., "python": ...,
  "libraries": {...}}``.
* Request: ``{"id": n, "module": "evaluators/metrics/general.py", "func": "exact_match",
  "args": [...], "options": {...}, "timeout": seconds}``.
* Response: ``{"id": n, "ok": true, "score": float}``; ``{"id": n, "ok": false, "kind":
  "raised" | "non_numeric" | "unavailable" | "stand_in" | "timeout" | "bad_request", "type": name,
  "message": str, "traceback": str}``.

OSWorld's modules are imported one at a time by name under stand-in ``desktop_env`` packages
whose ``__path__`` is the real folder, so a module's own imports (``from .utils import ...``,
``from desktop_env.evaluators.metrics.utils import ...``) resolve while the package
``__init__`` files, which import every metric module and all their libraries, never run.

OSWorld's metrics ``print``; file descriptor 1 is pointed at stderr on start, so only this
script writes the protocol, through a private duplicate of the original stdout.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import numbers
import os
import signal
import sys
import traceback
import types
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGE = "desktop_env"
STUB_PACKAGES = ("", "evaluators", "evaluators/metrics", "evaluators/getters")
REPORTED_LIBRARIES = (
    "numpy",
    "pandas",
    "openpyxl",
    "python-docx",
    "python-pptx",
    "pypdf",
    "PyPDF2",
    "pymupdf",
    "rapidfuzz",
    "lxml",
    "Pillow",
    "tldextract",
)


# Libraries one OSWorld module imports at its top for a single function, too heavy for the side
# venv: a stand-in satisfies the import so the module's other functions can run; using it raises
# StandInUsed, which the client reports as "unavailable" (the case is skipped, never scored).
STAND_INS = {
    "easyocr": "needs torch; docs.py uses it only in compare_image_text",
}


class Deadline(BaseException):
    """Raised into a metric that ran past its request's deadline."""


class StandInUsed(Exception):
    """OSWorld's code touched a stand-in library."""


def install_stand_ins() -> dict[str, str]:
    """Stand-in modules for the ``STAND_INS`` libraries that are not installed."""
    installed = {}
    for name, why in STAND_INS.items():
        if importlib.util.find_spec(name) is not None:
            continue
        module = types.ModuleType(name)

        def missing(attribute: str, name: str = name, why: str = why) -> Any:
            if attribute.startswith("__"):
                # Module introspection (inspect.stack() reads every module's __file__, as
                # librosa's lazy loader does) is not a use of the library.
                raise AttributeError(attribute)
            raise StandInUsed(f"{name}.{attribute}: {name} is not in the side venv ({why})")

        module.__getattr__ = missing  # type: ignore[method-assign]
        sys.modules[name] = module
        installed[name] = why
    return installed


def desktop_env_root() -> Path:
    """The installed ``desktop_env`` folder (``$OSWORLD_DESKTOP_ENV`` overrides it)."""
    configured = os.environ.get("OSWORLD_DESKTOP_ENV")
    if configured:
        return Path(configured)
    spec = importlib.util.find_spec(PACKAGE)  # finds the folder without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("desktop_env is not installed in this interpreter")
    return Path(next(iter(spec.submodule_search_locations)))


def install_stub_packages(root: Path) -> None:
    """Empty ``desktop_env`` packages over the real folders, so no ``__init__`` runs."""
    for relative in STUB_PACKAGES:
        parts = [PACKAGE, *filter(None, relative.split("/"))]
        name = ".".join(parts)
        package = types.ModuleType(name)
        package.__path__ = [str(root / relative) if relative else str(root)]
        package.__package__ = name
        sys.modules[name] = package


def module_name(relative: str) -> str:
    """``evaluators/metrics/table.py`` -> ``desktop_env.evaluators.metrics.table``."""
    path = Path(relative)
    if path.is_absolute() or ".." in path.parts or path.suffix != ".py":
        raise ValueError(f"not a module path inside desktop_env: {relative!r}")
    if path.parts[0] != "evaluators":
        raise ValueError(f"only evaluator modules are served: {relative!r}")
    return ".".join([PACKAGE, *path.with_suffix("").parts])


def as_score(value: Any) -> float | None:
    """A float for OSWorld's number-like results (bool, int, float, numpy scalars); else None."""
    if isinstance(value, bool | numbers.Real) or hasattr(type(value), "dtype"):
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    return None


def _error(kind: str, exc: BaseException | None, message: str = "") -> dict[str, Any]:
    return {
        "ok": False,
        "kind": kind,
        "type": type(exc).__name__ if exc is not None else kind,
        "message": message or (str(exc) if exc is not None else ""),
        "traceback": traceback.format_exc(limit=-8)[-4000:] if exc is not None else "",
    }


class Worker:
    """Imports OSWorld's modules on demand and calls their functions."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.unavailable: dict[str, dict[str, Any]] = {}
        self.timed_out = False
        self.armed = False  # the alarm interrupts only OSWorld's code, never this loop

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one request; never raises except for ``KeyboardInterrupt``."""
        relative = request.get("module", "")
        try:
            name = module_name(relative)
            func_name = str(request["func"])
            args = list(request.get("args", []))
            options = dict(request.get("options", {}))
        except (KeyError, TypeError, ValueError) as e:
            return _error("bad_request", e)
        if relative in self.unavailable:
            return self.unavailable[relative]
        timeout = float(request.get("timeout") or 0)
        self.timed_out = False
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            return self._call(relative, name, func_name, args, options)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _call(
        self,
        relative: str,
        name: str,
        func_name: str,
        args: list[Any],
        options: dict[str, Any],
    ) -> dict[str, Any]:
        try:
            self.armed = True
            module = importlib.import_module(name)
        except Deadline as e:
            return _error("timeout", e, f"importing {relative} ran past the deadline")
        except Exception as e:  # noqa: BLE001 - any import failure makes the module unavailable
            self.unavailable[relative] = _error("unavailable", e, f"{type(e).__name__}: {e}")
            return self.unavailable[relative]
        finally:
            self.armed = False
        func = getattr(module, func_name, None)
        if not callable(func):
            return _error("bad_request", None, f"{relative} has no function {func_name!r}")
        try:
            self.armed = True
            value = func(*args, **options)
        except Deadline as e:
            return _error("timeout", e, f"{func_name} ran past the deadline")
        except StandInUsed as e:
            return _error("stand_in", e)
        except BaseException as e:  # noqa: BLE001 - OSWorld's exception is the answer
            if self.timed_out:
                return _error("timeout", e, f"{func_name} ran past the deadline")
            return _error("raised", e)
        finally:
            self.armed = False
        if self.timed_out:  # a bare ``except:`` in OSWorld's code swallowed the Deadline
            return _error("timeout", None, f"{func_name} ran past the deadline")
        score = as_score(value)
        if score is None:
            return _error("non_numeric", None, f"returned {type(value).__name__}: {value!r:.300}")
        return {"ok": True, "score": score}

    def on_alarm(self, signum: int, frame: Any) -> None:
        """SIGALRM handler: interrupt the running metric."""
        self.timed_out = True
        if self.armed:
            raise Deadline("deadline")


def library_versions() -> dict[str, str]:
    """Versions of the main libraries in this venv, for the session summary."""
    found = {}
    for name in REPORTED_LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def main() -> None:
    """Serve requests until stdin closes."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # OSWorld's prints, and any C library's writes, go to the log
    sys.stdout = sys.stderr
    root = desktop_env_root()
    install_stub_packages(root)
    stand_ins = install_stand_ins()
    worker = Worker(root)
    signal.signal(signal.SIGALRM, worker.on_alarm)
    try:
        version = metadata.version("desktop-env")
    except metadata.PackageNotFoundError:
        version = "unknown"
    hello = {
        "ready": True,
        "desktop_env": str(root),
        "version": version,
        "python": sys.version.split()[0],
        "libraries": library_versions(),
        "stand_ins": stand_ins,
    }
    protocol.write(json.dumps(hello) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as e:
            protocol.write(json.dumps({"id": None, **_error("bad_request", e)}) + "\n")
            continue
        response = worker.handle(request)
        response["id"] = request.get("id")
        protocol.write(json.dumps(response, default=repr) + "\n")


if __name__ == "__main__":
    main()
