"""The one exception hierarchy of osworld-gym.

Every error raised on purpose by the library derives from :class:`OSWorldGymError`, so a caller
can catch the family with one clause and a specific failure with another. Errors are always
raised ``from`` their cause, and their messages say what to do next.
"""

from __future__ import annotations


class OSWorldGymError(Exception):
    """Base class of every error osworld-gym raises on purpose."""


class DependencyNotInstalled(OSWorldGymError, ImportError):
    """An optional dependency is missing; the message carries the install command."""


# --- desktops -------------------------------------------------------------------------------


class ProviderError(OSWorldGymError):
    """A desktop provider could not launch, reset or stop a desktop."""


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


class TaskSetupError(OSWorldGymError):
    """A task's setup (or postconfig) step failed or needs something this host lacks."""


class EvaluatorError(OSWorldGymError):
    """A task's evaluator could not run (unknown metric or getter, a getter failed)."""


# --- actions --------------------------------------------------------------------------------


class ActionError(OSWorldGymError):
    """An action is invalid (bad key name, coordinates, button, ...)."""


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
