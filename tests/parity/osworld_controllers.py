"""Drives a guest with OSWorld's own host controllers, for the parity suite: a side-venv script.

Run by ``test_parity_controllers.py`` with the side venv's Python (which has ``desktop-env``, not
osworld-gym). It reads one JSON request on stdin::

    {"ip": "127.0.0.1", "port": 5000, "screen": [w, h], "cache_dir": "...",
     "calls": [{"on": "python" | "setup", "method": "get_screenshot", "args": [], "kwargs": {}}]}

builds OSWorld's ``PythonController(ip, port)`` and ``SetupController(ip, port, ...)``, makes
the calls in order and writes one JSON answer on stdout: per call ``{"ok": true, "value": ...}``
(bytes as ``{"bytes_b64": ...}``) or ``{"ok": false, "type": ..., "message": ...}``.

OSWorld's modules are imported under empty stand-in ``desktop_env`` packages whose ``__path__``
is the real folder, so no package ``__init__`` runs. ``controllers/setup.py`` imports libraries
that only its Google Drive, proxy and Chrome steps use (pydrive, playwright) and reads a ``.env``
file (dotenv): where those are not installed, a stand-in satisfies the import and fails if a
step touches it. The steps driven here use none of them.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import json
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

PACKAGE = "desktop_env"
STUB_PACKAGES = (
    "",
    "controllers",
    "providers",
    "providers/aws",
    "evaluators",
    "evaluators/metrics",
)
# Imported at the top of controllers/setup.py for steps this suite does not drive.
STAND_INS = {
    "pydrive": "Google Drive steps",
    "pydrive.auth": "Google Drive steps",
    "pydrive.drive": "Google Drive steps",
    "playwright": "Chrome steps",
    "playwright.sync_api": "Chrome steps",
    "dotenv": "reading a .env file",
}


class StandInUsed(Exception):
    """OSWorld's code touched a stand-in library."""


def _stand_in(name: str, why: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def missing(attribute: str) -> Any:
        if name == "dotenv" and attribute == "load_dotenv":
            return lambda *args, **kwargs: False  # no .env file: nothing to load
        if name == "playwright.sync_api" and attribute == "TimeoutError":
            return TimeoutError  # only named in except clauses of the Chrome steps

        def fail(*args: Any, **kwargs: Any) -> Any:
            raise StandInUsed(f"{name}.{attribute} is a stand-in here ({why})")

        return fail

    module.__getattr__ = missing  # type: ignore[method-assign]
    module.__path__ = []  # a package, so its submodules' stand-ins import
    return module


def _prepare(root: Path) -> None:
    for relative in STUB_PACKAGES:
        name = ".".join([PACKAGE, *filter(None, relative.split("/"))])
        package = types.ModuleType(name)
        package.__path__ = [str(root / relative) if relative else str(root)]
        sys.modules[name] = package
    missing = {
        n.split(".")[0] for n in STAND_INS if importlib.util.find_spec(n.split(".")[0]) is None
    }
    for name, why in STAND_INS.items():
        if name.split(".")[0] in missing:
            sys.modules[name] = _stand_in(name, why)


def _wire(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"bytes_b64": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {str(k): _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    return value


def main() -> None:
    request = json.load(sys.stdin)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # OSWorld's code prints: keep stdout for the answer
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("desktop_env is not installed in this interpreter")
    _prepare(Path(next(iter(spec.submodule_search_locations))))
    python_module = importlib.import_module("desktop_env.controllers.python")
    setup_module = importlib.import_module("desktop_env.controllers.setup")
    width, height = request["screen"]
    controllers = {
        "python": python_module.PythonController(request["ip"], request["port"]),
        "setup": setup_module.SetupController(
            request["ip"],
            request["port"],
            cache_dir=request["cache_dir"],
            client_password="password",
            screen_width=width,
            screen_height=height,
        ),
    }
    answers = []
    for call in request["calls"]:
        try:
            method = getattr(controllers[call["on"]], call["method"])
            value = method(*call.get("args", []), **call.get("kwargs", {}))
            answers.append({"ok": True, "value": _wire(value)})
        except Exception as e:  # noqa: BLE001 - reported to the test, which decides
            answers.append(
                {
                    "ok": False,
                    "type": type(e).__name__,
                    "message": str(e),
                    "traceback": traceback.format_exc(),
                }
            )
    json.dump(answers, out)
    out.flush()


if __name__ == "__main__":
    main()
