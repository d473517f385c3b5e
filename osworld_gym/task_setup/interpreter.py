"""The interpreter of OSWorld's setup steps (a task's ``config`` and ``evaluator.postconfig``).

Each step type of OSWorld's SetupController (``docs/design/task-format.md#setup-steps``) maps to
guest calls with a success condition and bounded retries. Unlike OSWorld, failures are reported
rather than logged and forgotten: a step that cannot succeed raises ``TaskSetupError``
naming the step (or, when the guest itself keeps failing, the guest's error, which callers treat
as an infrastructure fault), and softer problems (a window to activate that is not there, which
OSWorld ignores) are kept as warnings in the returned ``SetupReport``.

Errors or warnings, the rule: a step fails the task (``TaskSetupError``; the env's
``reset`` raises it, ``osworld-gym run`` records the task as an error, never as a 0) when the task
cannot be valid without it: a ``download`` whose file cannot be had (not cached offline, or the
download failed), an ``upload_file`` whose local file is missing, a ``launch`` of a program the
desktop lacks, a step the guest refuses (HTTP 4xx: an ``open`` of a missing file), an unknown or
unimplemented step type, malformed parameters, and a browser that never answers for the Chrome
steps (a library a step needs that is not installed raises ``DependencyNotInstalled``, with
the ``pip install`` command). A step OSWorld lets fail without stopping is a warning
(``info["setup_warnings"]`` after ``reset``), because OSWorld's own scores were made with those
tasks started that way: an ``execute`` that exits non-zero (many run ``pkill`` and the like, which
may find nothing) or whose ``until`` is not met in time, an ``activate_window`` or
``close_window`` that finds no window, and a Chrome tab whose page did not load within 60 s. A
``sleep`` capped at ``max_sleep`` is noted the same way.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_gym.errors import GuestError, GuestHTTPError, TaskSetupError
from osworld_gym.extras import Need, callable_needs
from osworld_gym.guest.client import GuestClient
from osworld_gym.task_setup import chrome as chrome_setup
from osworld_gym.task_setup.downloads import AssetCache, AssetUnavailableError, resolve_local_path
from osworld_gym.tasks.placeholders import (
    download_cache_name,
    placeholder_values,
    substitute_placeholders,
)
from osworld_gym.tasks.requirements import app_label

logger = logging.getLogger(__name__)

_NO_SUCH_FILE = re.compile(r"No such file or directory: '([^']+)'")

# Step types that need something this package does not provide yet, and what that is.
NEEDS: dict[str, str] = {
    "googledrive": "a Google Drive account with OAuth credentials",
    "login": "a Google account and Chrome DevTools",
    "proxy": "a proxy provider",
    "tidy_desktop": "an implementation (OSWorld has none either)",
    "act": "an implementation (OSWorld has none either)",
    "replay": "an implementation (OSWorld has none either)",
}


# Step type -> the SetupInterpreter method that runs it (``command`` is OSWorld's alias).
_STEP_METHODS: dict[str, str] = {
    "download": "_download",
    "upload_file": "_upload_file",
    "launch": "_launch",
    "open": "_open",
    "execute": "_execute",
    "command": "_execute",
    "execute_with_verification": "_execute_with_verification",
    "sleep": "_sleep_step",
    "activate_window": "_activate_window",
    "close_window": "_close_window",
    "change_wallpaper": "_change_wallpaper",
    "chrome_open_tabs": "_chrome_open_tabs",
    "chrome_close_tabs": "_chrome_close_tabs",
    "update_browse_history": "_update_browse_history",
}
SUPPORTED_STEP_TYPES = frozenset(_STEP_METHODS)


@dataclass(frozen=True)
class SetupContext:
    """What setup steps run against.

    Attributes:
        client: The desktop's guest client.
        task_id: Task id (names the per-task cache folder).
        cache: Host-side asset cache for ``download`` steps.
        task_dir: Folder of the task file; relative ``upload_file`` paths resolve against it.
        screen_size: (width, height) for the ``{SCREEN_WIDTH}``-style placeholders.
        client_password: Value of ``{CLIENT_PASSWORD}``.
        step_retries: Extra attempts of a step after a transient guest failure.
        open_timeout: Seconds an ``open`` step waits for the file's window.
        until_timeout: Seconds an ``execute`` step with ``until`` keeps retrying.
        max_sleep: Cap on a ``sleep`` step's seconds.
        services: Where the host reaches the desktop's OSWorld services (``"cdp"``: Chrome
            DevTools, ``"vlc"``: VLC's HTTP interface), as ``http://host:port`` by name.
    """

    client: GuestClient
    task_id: str
    cache: AssetCache
    task_dir: Path | None = None
    screen_size: tuple[int, int] = (1920, 1080)
    client_password: str = "password"
    step_retries: int = 2
    open_timeout: float = 60.0
    until_timeout: float = 60.0
    max_sleep: float = 60.0
    services: Mapping[str, str] = field(default_factory=dict)


@dataclass
class StepOutcome:
    """What happened to one step."""

    index: int
    type: str
    seconds: float
    warning: str | None = None


@dataclass
class SetupReport:
    """Outcomes of a sequence of steps, in order."""

    phase: str
    steps: list[StepOutcome] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """Warnings of all steps, prefixed with the step index and type."""
        return [f"{s.index} ({s.type}): {s.warning}" for s in self.steps if s.warning]

    @property
    def seconds(self) -> float:
        """Total time of the steps."""
        return sum(s.seconds for s in self.steps)


def steps_needs(steps: Iterable[Any]) -> frozenset[Need]:
    """The optional libraries setup steps may import (Playwright for the Chrome steps...).

    Read from the code of each step's type (``osworld_gym.extras.callable_needs()``); a
    malformed or unknown step needs nothing here (running it fails with its own error).
    """
    needs: set[Need] = set()
    for step in steps:
        try:
            kind, _ = _step_fields(step)
        except TaskSetupError:
            continue
        method = _STEP_METHODS.get(kind)
        if method is not None:
            needs |= callable_needs(getattr(SetupInterpreter, method))
    return frozenset(needs)


def _fill(command: Any, context: SetupContext) -> Any:
    values = placeholder_values(
        client_password=context.client_password, screen_size=context.screen_size
    )
    return substitute_placeholders(command, values) if command is not None else None


def _step_fields(step: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(step, Mapping):
        kind, params = step.get("type"), step.get("parameters", {})
    else:
        kind, params = getattr(step, "type", None), getattr(step, "parameters", {})
    if not isinstance(kind, str) or not isinstance(params, Mapping):
        raise TaskSetupError(f"malformed setup step {step!r}: needs a 'type' and 'parameters'")
    return kind, dict(params)


class SetupInterpreter:
    """Runs setup steps against one desktop.

    Args:
        context: The desktop, task and limits the steps run with.
        sleep: Injected for tests; ``time.sleep`` by default.
    """

    def __init__(self, context: SetupContext, sleep: Callable[[float], None] = time.sleep) -> None:
        self.context = context
        self._sleep = sleep
        self._handlers: dict[str, Callable[[dict[str, Any]], str | None]] = {
            kind: getattr(self, method) for kind, method in _STEP_METHODS.items()
        }

    @property
    def supported_types(self) -> frozenset[str]:
        """Step types this interpreter runs."""
        return frozenset(self._handlers)

    def run(self, steps: Iterable[Any], phase: str = "config") -> SetupReport:
        """Run the steps in order.

        Raises:
            TaskSetupError: a step failed after its retries, or needs something missing.
        """
        report = SetupReport(phase)
        for index, step in enumerate(steps):
            kind, params = _step_fields(step)
            start = time.perf_counter()
            warning = self._run_step(index, kind, params, phase)
            report.steps.append(StepOutcome(index, kind, time.perf_counter() - start, warning))
        return report

    def _run_step(self, index: int, kind: str, params: dict[str, Any], phase: str) -> str | None:
        where = f"{self.context.task_id}: {phase} step {index} ({kind})"
        handler = self._handlers.get(kind)
        if handler is None:
            need = NEEDS.get(kind, "an implementation of this unknown step type")
            raise TaskSetupError(f"{where} needs {need}")
        for attempt in range(self.context.step_retries + 1):
            try:
                return handler(params)
            except (TypeError, KeyError) as e:
                raise TaskSetupError(f"{where}: bad parameters {params!r}: {e}") from e
            except AssetUnavailableError as e:
                raise TaskSetupError(f"{where}: {e}") from e
            except GuestHTTPError as e:
                if e.status < 500:
                    raise TaskSetupError(f"{where} failed: {e}") from e
                if attempt == self.context.step_retries:
                    raise  # the guest itself failed: an infrastructure fault for the caller
            except GuestError:  # unreachable or timed out: worth another try
                if attempt == self.context.step_retries:
                    raise
            logger.info("%s: retrying (attempt %d)", where, attempt + 2)
        raise AssertionError("unreachable")

    # --- step types ------------------------------------------------------------------------

    def _download(self, params: dict[str, Any]) -> None:
        for item in params["files"]:
            url, path = item["url"], item["path"]
            local = self.context.cache.fetch(
                url, self.context.task_id, download_cache_name(url, path)
            )
            self.context.client.upload(path, local.read_bytes())

    def _upload_file(self, params: dict[str, Any]) -> None:
        for item in params["files"]:
            local = resolve_local_path(item["local_path"], self.context.task_dir)
            if not local.is_file():
                raise AssetUnavailableError(f"local file {local} does not exist")
            self.context.client.upload(item["path"], local.read_bytes())

    def _launch(self, params: dict[str, Any]) -> None:
        command = _fill(params["command"], self.context)
        try:
            self.context.client.launch(command, shell=bool(params.get("shell", False)))
        except GuestHTTPError as e:
            missing = _missing_program(e)
            if missing is None:
                raise
            raise TaskSetupError(
                f"{self.context.task_id}: the desktop has no {app_label(missing)} to launch "
                f"(command {command!r}): the task needs an app this desktop lacks"
            ) from e

    def _open(self, params: dict[str, Any]) -> None:
        self.context.client.open_file(params["path"], timeout=self.context.open_timeout)

    def _execute(self, params: dict[str, Any]) -> str | None:
        command = _fill(params["command"], self.context)
        shell = bool(params.get("shell", False))
        until = params.get("until")
        deadline = time.monotonic() + self.context.until_timeout
        while True:
            result = self.context.client.execute(command, shell=shell)
            self._save_output(params, result.output, result.error)
            if not until or _until_satisfied(until, result.returncode, result.output, result.error):
                break
            if time.monotonic() >= deadline:
                return f"'until' {until!r} not met within {self.context.until_timeout:g} s"
            self._sleep(0.3)  # OSWorld's polling interval for `until`
        if result.returncode != 0 and not until:
            return f"exit status {result.returncode}: {result.error.strip()[-300:]}"
        return None

    def _save_output(self, params: dict[str, Any], output: str, error: str) -> None:
        for key, text in (("stdout", output), ("stderr", error)):
            name = params.get(key)
            if name:
                path = self.context.cache.root / self.context.task_id / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)

    def _execute_with_verification(self, params: dict[str, Any]) -> None:
        verification = params.get("verification") or {}
        self.context.client.execute_with_verification(
            _fill(params["command"], self.context),
            shell=bool(params.get("shell", False)),
            window_exists=verification.get("window_exists"),
            command_success=verification.get("command_success"),
            max_wait_time=float(params.get("max_wait_time", 10)),
            check_interval=float(params.get("check_interval", 1)),
        )

    def _sleep_step(self, params: dict[str, Any]) -> str | None:
        seconds = float(params["seconds"])
        self._sleep(min(max(seconds, 0.0), self.context.max_sleep))
        return None if seconds <= self.context.max_sleep else f"capped {seconds:g} s sleep"

    def _window_step(self, params: dict[str, Any], close: bool) -> str | None:
        name = params["window_name"]
        strict, by_class = bool(params.get("strict", False)), bool(params.get("by_class", False))
        call = self.context.client.close_window if close else self.context.client.activate_window
        try:
            call(name, strict=strict, by_class=by_class)
        except GuestHTTPError as e:
            if e.status != 404:
                raise
            return f"no window {name!r}"  # OSWorld ignores this too; kept as a warning
        return None

    def _activate_window(self, params: dict[str, Any]) -> str | None:
        return self._window_step(params, close=False)

    def _close_window(self, params: dict[str, Any]) -> str | None:
        return self._window_step(params, close=True)

    def _change_wallpaper(self, params: dict[str, Any]) -> None:
        self.context.client.change_wallpaper(params["path"])

    def _chrome_open_tabs(self, params: dict[str, Any]) -> str | None:
        urls = list(params["urls_to_open"])
        warnings = chrome_setup.open_tabs(self.context.services.get("cdp"), urls)
        return "; ".join(warnings) or None

    def _chrome_close_tabs(self, params: dict[str, Any]) -> str | None:
        urls = list(params["urls_to_close"])
        warnings = chrome_setup.close_tabs(self.context.services.get("cdp"), urls)
        return "; ".join(warnings) or None

    def _update_browse_history(self, params: dict[str, Any]) -> None:
        chrome_setup.update_browse_history(self.context.client, list(params["history"]))


def _missing_program(error: GuestHTTPError) -> str | None:
    """The program a failed ``/setup/launch`` could not find, if that is why it failed.

    Our guest names it in ``missing_command``; OSWorld's answers 500 with the message of the
    ``FileNotFoundError`` (``[Errno 2] No such file or directory: 'vlc'``).
    """
    body = error.body if isinstance(error.body, Mapping) else {}
    if isinstance(body.get("missing_command"), str):
        return str(body["missing_command"])
    found = _NO_SUCH_FILE.search(str(body.get("message") or error.body))
    return found.group(1) if found else None


def _until_satisfied(until: Mapping[str, Any], returncode: int, stdout: str, stderr: str) -> bool:
    """OSWorld's ``until`` check: an exit status, or text contained in stdout/stderr."""
    if "returncode" in until and returncode != until["returncode"]:
        return False
    if "stdout" in until and str(until["stdout"]) not in stdout:
        return False
    return not ("stderr" in until and str(until["stderr"]) not in stderr)
