"""AT-SPI accessibility trees for the guest's ``/accessibility`` and ``/terminal`` endpoints.

The walk itself runs in a subprocess, ``a11y_walker.py`` next to this file, with Debian's
``/usr/bin/python3`` (which has ``python3-gi``/``python3-pyatspi``; the project's Python usually
cannot import ``gi``). A subprocess per walk also suits libatspi, which binds a process to one
accessibility bus for good, and lets a hard timeout kill a walk stuck on a hung application.

Walks of one display are serialised with a lock the caller owns (the guest server has one per
display: a LibreOffice walk keeps both cores busy for seconds); walks of different displays may
run at the same time. Every failure surfaces as
``AccessibilityUnavailable`` with a one-line reason; nothing here hangs or raises anything
else.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from pathlib import Path

from osworld_gym.guest.identity import desktop_user

logger = logging.getLogger(__name__)

#: Debian's interpreter, which has ``gi`` and ``pyatspi`` from apt.
SYSTEM_PYTHON = "/usr/bin/python3"
#: The walker script run in the subprocess.
WALKER = Path(__file__).with_name("a11y_walker.py")
#: Default hard limits (seconds) for one call, lock wait included.
TREE_TIMEOUT_S = 30.0
TERMINAL_TIMEOUT_S = 10.0

# Exit statuses of the walker (see a11y_walker.py).
_EXIT_NO_GI = 2
_EXIT_NO_BUS = 3
_EXIT_NO_TERMINAL = 4

_APT_HINT = "apt-get install python3-pyatspi"


class AccessibilityUnavailable(RuntimeError):
    """No accessibility tree can be had on this desktop; the message says why."""


def accessibility_tree(
    display: str,
    env: dict[str, str],
    *,
    timeout: float = TREE_TIMEOUT_S,
    python: str = SYSTEM_PYTHON,
    prune: bool = False,
    lean: bool = False,
    lock: threading.Lock | None = None,
) -> str:
    """Return OSWorld's XML accessibility tree of ``display``.

    The root is ``desktop-frame`` with one element per AT-SPI application; see
    ``a11y_walker.py`` for the format.

    Args:
        display: X display, e.g. ``":3"``; overrides ``DISPLAY`` in ``env`` when not empty.
        env: Environment of the desktop's child processes (``DISPLAY`` and, on local desktops,
            ``DBUS_SESSION_BUS_ADDRESS`` of its private session bus).
        timeout: Hard limit in seconds for the whole call, waiting for the lock included.
        python: Interpreter that runs the walker; it must be able to import
            ``gi.repository.Atspi``.
        prune: Skip the subtrees of nodes that are not showing (2-6x faster on LibreOffice,
            not OSWorld-identical).
        lean: Leave out ``attr:``, ``val:`` and ``act:`` attributes (not OSWorld-identical).
        lock: Serialises walks of one display: pass the same lock (the guest owns one per
            display); without one, the call is not serialised with others.

    Returns:
        The XML document as a string.

    Raises:
        AccessibilityUnavailable: No tree could be had; the message says why.
    """
    args = []
    if prune:
        args.append("--prune")
    if lean:
        args.append("--lean")
    status, out = _run_guarded(display, env, args, timeout, python, lock)
    if status != 0:
        raise AccessibilityUnavailable(out)
    if not out.startswith("<"):
        raise AccessibilityUnavailable("the accessibility walker printed no XML")
    return out


def terminal_text(
    display: str,
    env: dict[str, str],
    *,
    timeout: float = TERMINAL_TIMEOUT_S,
    python: str = SYSTEM_PYTHON,
    lock: threading.Lock | None = None,
) -> str | None:
    """Return the text of the focused terminal of ``display``, or None.

    As OSWorld's ``/terminal``: the text of the one AT-SPI ``terminal`` that is focused inside
    the active top-level window (e.g. gnome-terminal), trailing whitespace removed; None when the
    active window holds no focused terminal.

    Args:
        display: X display, e.g. ``":3"``; overrides ``DISPLAY`` in ``env`` when not empty.
        env: Environment of the desktop's child processes.
        timeout: Hard limit in seconds for the whole call, waiting for the lock included.
        python: Interpreter that runs the walker.
        lock: Serialises walks of one display (see ``accessibility_tree()``).

    Returns:
        The terminal's text, or None.

    Raises:
        AccessibilityUnavailable: The accessibility tree could not be read at all.
    """
    status, out = _run_guarded(display, env, ["--terminal"], timeout, python, lock)
    if status == _EXIT_NO_TERMINAL:
        return None
    if status != 0:
        raise AccessibilityUnavailable(out)
    return out


def _walker_env(display: str, env: dict[str, str]) -> dict[str, str]:
    child_env = {str(k): str(v) for k, v in (env or {}).items()}
    if display:
        child_env["DISPLAY"] = display
    if not child_env.get("DISPLAY") and not child_env.get("DBUS_SESSION_BUS_ADDRESS"):
        raise AccessibilityUnavailable(
            "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no DISPLAY "
            "(libatspi would abort)"
        )
    return child_env


def _run_guarded(
    display: str,
    env: dict[str, str],
    args: list[str],
    timeout: float,
    python: str,
    lock: threading.Lock | None,
) -> tuple[int, str]:
    """Run the walker under the display's lock; never raises anything but the one error.

    Returns:
        ``(0, stdout)`` on success, ``(4, "")`` when no terminal is focused, otherwise
        ``(status, reason)``.
    """
    try:
        child_env = _walker_env(display, env)
        key = child_env.get("DISPLAY") or child_env.get("DBUS_SESSION_BUS_ADDRESS", "")
        deadline = time.monotonic() + timeout
        lock = lock or threading.Lock()
        if not lock.acquire(timeout=max(0.0, timeout)):
            raise AccessibilityUnavailable(
                f"another accessibility walk of display {key} was still running after {timeout:g} s"
            )
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AccessibilityUnavailable(
                    f"walker timed out after {timeout:g} s (waiting for another walk of {key})"
                )
            return _run_walker(args, child_env, remaining, timeout, python, key)
        finally:
            lock.release()
    except AccessibilityUnavailable:
        raise
    except Exception as exc:  # never let a walk take the server down
        logger.exception("accessibility walk failed unexpectedly")
        raise AccessibilityUnavailable(
            f"accessibility walk failed: {type(exc).__name__}: {exc}"
        ) from exc


def _run_walker(
    args: list[str],
    child_env: dict[str, str],
    remaining: float,
    timeout: float,
    python: str,
    key: str,
) -> tuple[int, str]:
    if not WALKER.is_file():
        raise AccessibilityUnavailable(f"the accessibility walker {WALKER} is missing")
    # -I: ignore PYTHON* variables and the user's site-packages, which belong to the project's
    # Python and could break Debian's.
    cmd = [python, "-I", str(WALKER), *args]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            **desktop_user(),
        )
    except OSError as exc:
        raise AccessibilityUnavailable(
            f"cannot run {python} for the accessibility walker ({exc.strerror or exc}): {_APT_HINT}"
        ) from exc
    try:
        out, err = proc.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            logger.warning("accessibility walker %d did not exit after SIGKILL", proc.pid)
        raise AccessibilityUnavailable(f"walker timed out after {timeout:g} s") from None
    finally:
        if proc.poll() is None:  # only when communicate() itself failed
            proc.kill()
    elapsed = time.monotonic() - started
    stderr = err.decode("utf-8", "replace")
    status = proc.returncode
    if stderr.strip():
        logger.debug("accessibility walker stderr (display %s): %s", key, stderr.strip())
    if status == 0:
        text = out.decode("utf-8", "replace")
        logger.debug(
            "accessibility walk %s of %s: %d chars in %.2f s",
            " ".join(args) or "tree",
            key,
            len(text),
            elapsed,
        )
        return 0, text
    if status == _EXIT_NO_TERMINAL and "--terminal" in args:
        return status, ""
    reason = _last_line(stderr)
    if status == _EXIT_NO_GI:
        return status, f"python3-pyatspi is not installed for {python}: {_APT_HINT} ({reason})"
    if status == _EXIT_NO_BUS:
        return status, reason or "no accessibility bus can be reached"
    if status < 0:
        try:
            signame = signal.Signals(-status).name
        except ValueError:
            signame = f"signal {-status}"
        explanation = (
            "libatspi could not connect to the accessibility bus"
            if -status == signal.SIGTRAP
            else "the walker crashed"
        )
        return status, f"{explanation} on display {key} ({signame}): {reason or 'no message'}"
    return status, f"accessibility walker failed (exit {status}): {reason or 'no message'}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
