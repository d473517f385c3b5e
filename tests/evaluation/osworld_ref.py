"""OSWorld's own evaluator modules, for tests that compare scores with them when installed.

The ``desktop-env`` package is never a dependency: a test that wants one of its modules gets
it from ``$OSWORLD_DESKTOP_ENV`` (the ``desktop_env`` folder), an importable ``desktop_env``,
or a side venv at ``/tmp/dvenv`` (``pip install --no-deps desktop-env``), and is skipped when
none is there or the module's own imports are missing. Modules are loaded by file path, one at
a time, so the package's ``__init__`` (which imports every app library) is not run.
"""

from __future__ import annotations

import glob
import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest


def desktop_env_dir() -> Path | None:
    """Where OSWorld's ``desktop_env`` package is, or None."""
    configured = os.environ.get("OSWORLD_DESKTOP_ENV")
    if configured:
        return Path(configured)
    try:
        spec = importlib.util.find_spec("desktop_env")
    except ValueError:  # a stand-in module in sys.modules (a test's stub of a sibling module)
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    found = sorted(glob.glob("/tmp/dvenv/lib/python3*/site-packages/desktop_env"))
    return Path(found[-1]) if found else None


def load(relative: str) -> ModuleType:
    """OSWorld's module at ``desktop_env/<relative>``; skips the test when unavailable."""
    root = desktop_env_dir()
    if root is None or not (root / relative).is_file():
        pytest.skip("OSWorld's desktop_env is not installed (set OSWORLD_DESKTOP_ENV)")
    name = "_osworld_ref_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, root / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        pytest.skip(f"OSWorld's {relative} needs {e.name or e}, not installed here")
    return module
