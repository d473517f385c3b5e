"""Calls OSWorld's own evaluator getters against a guest, for the parity suite: a side-venv script.

Run by ``test_parity_getters.py`` with the side venv's Python (which has ``desktop-env``, not
osworld-gym). It reads one JSON request on stdin::

    {"ip": "127.0.0.1", "port": 5000, "now": "2026-03-05T15:30:00+00:00" | null,
     "calls": [{"module": "file", "getter": "get_vm_file", "config": {...},
                "cache_dir": "/tmp/.../osworld/3"}]}

and writes one JSON answer on stdout: per call ``{"ok": true, "value": ...}`` or
``{"ok": false, "type": ..., "message": ..., "traceback": ...}``.

Each getter gets a stand-in for OSWorld's ``DesktopEnv`` with what the getters read from it:
``controller`` (OSWorld's real ``PythonController`` pointed at the guest), ``vm_ip``,
``server_port`` and ``cache_dir`` (the call's own folder, created). Two things differ from a
run of OSWorld's, neither of which changes a getter's answer:

* the controller's pause between its retries is 0 s (OSWorld's is 5 s; a missing file is tried
  3 times either way);
* the host is offline: OSWorld's look-up of the host's time zone (``ipapi.co``, for a
  ``rule_relativeTime`` rule without ``timezone``) fails at once, as it does on a host without
  network, and OSWorld falls back to UTC.

With ``now``, the getters' clock (``datetime.now`` in ``getters/misc.py`` and
``getters/file.py``) stands at that instant.

OSWorld's modules are imported under empty stand-in ``desktop_env`` packages whose
``__path__`` is the real folder, so no package ``__init__`` runs (``getters/__init__.py``
imports the Chrome getters and Playwright).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback
import types
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

PACKAGE = "desktop_env"
STUB_PACKAGES = ("", "controllers", "evaluators", "evaluators/getters")
IP_LOOKUP = "https://ipapi.co/"


def _prepare(root: Path) -> None:
    for relative in STUB_PACKAGES:
        name = ".".join([PACKAGE, *filter(None, relative.split("/"))])
        package = types.ModuleType(name)
        package.__path__ = [str(root / relative) if relative else str(root)]
        sys.modules[name] = package


def _offline_host() -> None:
    """Fail OSWorld's time-zone look-up as on a host without network (nothing is sent)."""
    import requests

    real_get = requests.get

    def get(url: str, *args: Any, **kwargs: Any) -> Any:
        if str(url).startswith(IP_LOOKUP):
            raise requests.ConnectionError(f"offline: {url} is not reachable from this host")
        return real_get(url, *args, **kwargs)

    requests.get = get  # type: ignore[assignment]


def _clock(instant: datetime) -> type[datetime]:
    """A ``datetime`` whose ``now`` is ``instant`` (in ``tz``, or as local time without)."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Clock:  # type: ignore[override]
            moment = instant.astimezone(tz) if tz is not None else instant.astimezone()
            fields = moment.timetuple()[:6]
            return cls(*fields, moment.microsecond, tzinfo=moment.tzinfo if tz else None)

    return Clock


def main() -> None:
    request = json.load(sys.stdin)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # OSWorld's getters print: keep stdout for the answer
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("desktop_env is not installed in this interpreter")
    _prepare(Path(next(iter(spec.submodule_search_locations))))
    _offline_host()
    python_module = importlib.import_module("desktop_env.controllers.python")
    controller = python_module.PythonController(request["ip"], request["port"])
    controller.retry_interval = 0
    clock = _clock(datetime.fromisoformat(request["now"])) if request.get("now") else None
    answers = []
    for call in request["calls"]:
        try:
            module = importlib.import_module(f"desktop_env.evaluators.getters.{call['module']}")
            if clock is not None and hasattr(module, "datetime"):
                module.datetime = clock
            os.makedirs(call["cache_dir"], exist_ok=True)
            env = types.SimpleNamespace(
                controller=controller,
                vm_ip=request["ip"],
                server_port=request["port"],
                cache_dir=call["cache_dir"],
            )
            value = getattr(module, call["getter"])(env, call["config"])
            answers.append({"ok": True, "value": value})
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
