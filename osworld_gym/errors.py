"""The one exception hierarchy of osworld-gym.

Every error raised on purpose by the library derives from ``OSWorldGymError``, so a caller
can catch the family with one clause and a specific failure with another. Errors are always
raised ``from`` their cause, and their messages say what to do next.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


class OSWorldGymError(Exception):
    """Base class of every error osworld-gym raises on purpose."""


class DependencyNotInstalled(OSWorldGymError, ImportError):
    """An optional dependency is missing; the message carries the install command."""


class MissingExtraError(DependencyNotInstalled):
    """Something to be run needs an extra of osworld-gym that is not installed: refused up front.

    Raised before any desktop starts (``osworld_gym.extras``); ``osworld-gym`` reports it as
    one line and exit status 2.

    Attributes:
        extras: The extras with a missing library (``("eval",)``).
        packages: Their missing distributions (``("openpyxl", "pandas")``).
        command: The exact command that installs the extras with the running interpreter's pip.
    """

    def __init__(
        self, message: str, *, extras: tuple[str, ...], packages: tuple[str, ...], command: str
    ) -> None:
        self.extras = extras
        self.packages = packages
        self.command = command
        super().__init__(message)


# --- desktops -------------------------------------------------------------------------------


class ProviderError(OSWorldGymError):
    """A desktop provider could not launch, reset or stop a desktop."""


class TooManyRestartsError(ProviderError):
    """A desktop could not be brought up within the bounded number of relaunches."""


class DesktopDiedError(ProviderError):
    """A process of a running desktop (X server, window manager, guest server) has exited.

    Attributes:
        component: Which part died, e.g. ``"xvfb"`` or ``"guest"``.
        returncode: Its exit status, when known.
    """

    def __init__(self, component: str, returncode: int | None, detail: str = "") -> None:
        self.component = component
        self.returncode = returncode
        message = f"desktop component {component!r} is not running (exit status {returncode})"
        if detail:
            message += f": {detail}"
        super().__init__(message)


class DesktopLimitError(DesktopDiedError):
    """A desktop ran into one of its limits (memory, processes): its own excess, not the host's.

    Reported like a dead component (``component`` is ``"limits"``): the episode ends as an
    infrastructure fault and the next reset starts the desktop clean.
    """

    def __init__(self, detail: str) -> None:
        super().__init__("limits", None, detail)


# --- guest protocol -------------------------------------------------------------------------


class GuestError(OSWorldGymError):
    """A call to a guest server failed.

    Attributes:
        endpoint: The path that was called, e.g. ``"/screenshot"``.
    """

    def __init__(self, endpoint: str, message: str) -> None:
        self.endpoint = endpoint
        super().__init__(f"{endpoint}: {message}")


class GuestUnreachableError(GuestError):
    """The guest server did not accept the connection (not started, crashed, wrong address)."""


class GuestTimeoutError(GuestError):
    """The guest server accepted the call but did not answer within the deadline."""


class GuestHTTPError(GuestError):
    """The guest server answered with an error status.

    Attributes:
        status: The HTTP status code.
        body: The decoded JSON error body, or the raw text when it was not JSON.
    """

    def __init__(self, endpoint: str, status: int, body: object) -> None:
        self.status = status
        self.body = body
        detail = body.get("message") or body.get("error") if isinstance(body, dict) else body
        super().__init__(endpoint, f"HTTP {status}: {detail}")


class GuestAuthError(GuestHTTPError):
    """The guest server refused the call's token (HTTP 401)."""


class GuestProtocolError(GuestError):
    """The guest server answered something this client cannot interpret."""


class UnsupportedByGuestError(GuestError):
    """The guest server lacks an endpoint or capability (e.g. an official OSWorld image)."""


# --- tasks ----------------------------------------------------------------------------------


class TaskFormatError(OSWorldGymError, ValueError):
    """A task file, task dict or index file is malformed.

    The message names where the data came from and which field is wrong, for example
    ``examples/os/abc.json: evaluator.func: expected a string or a list of strings, got 3``.

    Attributes:
        origin: Where the data came from: a file path (relative to the loaded folder when there
            is one) or a label such as ``tasks[3]`` for in-memory data.
        field: Dotted path of the offending field (``config[2].parameters.command``), or ``""``
            when the problem concerns the whole document.
        reason: What is wrong and, where possible, what is expected instead.
        path: The file on disk, when the data came from one.
    """

    def __init__(self, origin: str, field: str, reason: str, *, path: Path | None = None) -> None:
        self.origin = origin
        self.field = field
        self.reason = reason
        self.path = path
        where = f"{origin}: {field}" if field else origin
        super().__init__(f"{where}: {reason}")


class TaskSourceNotFoundError(OSWorldGymError, FileNotFoundError):
    """A task source path (folder, index file or task file) does not exist."""


class UnknownTaskError(OSWorldGymError, KeyError):
    """A name (task id, domain, suite) is not among the available ones.

    The message lists the closest matches (``difflib``) and, when there are few, all choices.

    Attributes:
        name: The name that was asked for.
        choices: All names that exist.
        suggestions: The closest matches, best first (possibly empty).
    """

    kind = "task id"

    def __init__(self, name: str, choices: Iterable[str], *, hint: str = "") -> None:
        self.name = name
        self.choices = tuple(choices)
        self.suggestions = _suggest(name, self.choices)
        parts = [f"unknown {self.kind} {name!r}"]
        if self.suggestions:
            parts.append("did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?")
        if not self.choices:
            parts.append(f"there are no {self.kind}s to choose from")
        elif len(self.choices) <= 12:
            parts.append("available: " + ", ".join(self.choices))
        else:
            parts.append(f"{len(self.choices)} {self.kind}s available")
        if hint:
            parts.append(hint)
        self.message = "; ".join(parts)
        super().__init__(self.message)

    def __str__(self) -> str:
        # KeyError's own __str__ shows the repr of its argument, quotes and escapes included.
        return self.message


class UnknownDomainError(UnknownTaskError):
    """A domain asked for (``domain=...``) has no tasks in the source."""

    kind = "domain"


class UnknownSuiteError(UnknownTaskError):
    """A bundled suite name does not exist."""

    kind = "suite"


def _suggest(name: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    """Closest matches: ids that start with ``name`` (abbreviated UUIDs), then ``difflib``'s."""
    prefixed = [c for c in choices if name and c.startswith(name) and c != name][:3]
    if prefixed:
        return tuple(prefixed)
    return tuple(difflib.get_close_matches(name, choices, n=3, cutoff=0.6))


class TaskSetupError(OSWorldGymError):
    """A task's setup (or postconfig) step failed or needs something this host lacks."""


class EvaluatorError(OSWorldGymError):
    """A task's evaluator could not run (unknown metric or getter, a getter failed)."""


class UnknownMetricError(EvaluatorError, KeyError):
    """A task names a metric that is not implemented (the message suggests close names).

    Attributes:
        name: The unknown name.
    """

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        close = difflib.get_close_matches(name, available, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        self.message = f"unknown metric {name!r}{hint} (available: {', '.join(available)})"
        super().__init__(self.message)

    def __str__(self) -> str:
        # KeyError would show the repr of the message; show the message itself.
        return self.message


# --- actions --------------------------------------------------------------------------------


class ActionError(OSWorldGymError):
    """An action is invalid (bad key name, coordinates, button, ...)."""


class UnknownDialectError(ActionError, ValueError):
    """An action dialect name is not registered; the message lists the available ones."""


class ActionParseError(ActionError):
    """Model output could not be parsed into actions (strict mode).

    Attributes:
        position: Character offset in the text where parsing failed, when known.
        text: The text that was being parsed.
    """

    def __init__(self, message: str, *, position: int | None = None, text: str = "") -> None:
        self.position = position
        self.text = text
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{message}{where}")


# --- env pool -------------------------------------------------------------------------------


class PoolError(OSWorldGymError):
    """An ``EnvPool`` was used in a way its state does not allow."""


class AlreadyPendingCallError(PoolError):
    """A call was sent to an env whose previous call's result has not been received yet."""


class NoAsyncCallError(PoolError):
    """``recv`` was called with no call in flight and no result waiting."""


class ClosedPoolError(PoolError):
    """The pool (or the collector using it) was used after ``close()``."""


class ResetNeededError(PoolError):
    """A step was sent to an env whose episode is over (or never started): reset it first."""


class EnvRetiredError(PoolError):
    """An env was retired after its desktop failed to launch a bounded number of times.

    Attributes:
        env_id: The retired env's index in the pool.
    """

    def __init__(self, env_id: int, message: str) -> None:
        self.env_id = env_id
        super().__init__(message)


class PoolTimeoutError(PoolError, TimeoutError):
    """``recv`` (or another pool call) did not complete within its timeout.

    The pool is left as it was: calls stay in flight and finished results stay queued.
    """


class WorkerLostError(PoolError):
    """A pool worker (a Ray actor, say) died or stopped answering; the pool replaces it."""
