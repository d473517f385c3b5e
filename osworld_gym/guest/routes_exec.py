"""Guest routes that run programs: /execute, /setup/launch, /run_python, /run_bash_script, ...

Request and response shapes follow OSWorld's server (``docs/design/osworld-protocol.md#endpoints``)
so host code written for it works unchanged; where OSWorld has a bug (``/run_bash_script`` answering
500 after running the script) we answer what it intended.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from osworld_gym.guest.bounded_output import run_bounded
from osworld_gym.guest.context import GuestContext
from osworld_gym.guest.http import HTTPError, Request, Response, finite_number, os_string
from osworld_gym.guest.identity import desktop_user

RUN_PYTHON_TIMEOUT = 30.0
RUN_BASH_DEFAULT_TIMEOUT = 100.0
MAX_SCRIPT_TIMEOUT = 3600.0


def _command_argv(command: Any, shell: bool) -> list[str] | str:
    """Normalise OSWorld's ``command`` (list or string) the way its server does."""
    if isinstance(command, str):
        if shell:
            return os_string(command, "command")
        try:
            command = shlex.split(command)
        except ValueError as e:
            raise HTTPError(400, f"command is not valid shell syntax: {e}") from e
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise HTTPError(400, "command must be a non-empty string or list of strings")
    argv = [os.path.expanduser(c) if c.startswith("~/") else c for c in command]
    for word in argv:
        os_string(word, "command")
    return " ".join(argv) if shell else argv


def _run(ctx: GuestContext, argv: list[str] | str, shell: bool, timeout: float) -> dict[str, Any]:
    completed = run_bounded(
        argv,
        shell=shell,
        timeout=timeout,
        env=ctx.child_env(),
        cwd=ctx.home,
        stdin=subprocess.DEVNULL,
        **desktop_user(),
    )
    return {
        "status": "success",
        "output": completed.stdout,
        "error": completed.stderr,
        "returncode": completed.returncode,
    }


def execute(ctx: GuestContext, request: Request) -> Response:
    """``/execute`` and ``/setup/execute``: run a command, answer its output and exit status."""
    body = request.json()
    shell = bool(body.get("shell", False))
    argv = _command_argv(body.get("command"), shell)
    try:
        return Response.json(_run(ctx, argv, shell, ctx.config.execute_timeout))
    except subprocess.TimeoutExpired as e:
        message = f"Command timed out after {ctx.config.execute_timeout:g} seconds"
        raise HTTPError(500, message) from e
    except OSError as e:
        raise HTTPError(500, f"could not run command: {e}") from e


def execute_with_verification(ctx: GuestContext, request: Request) -> Response:
    """Run a command, then poll until a window exists or a check command succeeds."""
    body = request.json()
    verification = body.get("verification")
    if verification and not isinstance(verification, dict):
        raise HTTPError(400, "verification must be an object")
    if verification:
        for name in ("window_exists", "command_success"):
            value = verification.get(name)
            # A check command must be text: str() of a list or object would run as one.
            if value is not None and not isinstance(value, str):
                raise HTTPError(400, f"verification.{name} must be a string")
        os_string(verification.get("command_success") or "", "verification.command_success")
    # Checked before the command runs: a bad field is refused, never half-done.
    max_wait = min(max(finite_number(body.get("max_wait_time", 10), "max_wait_time"), 0.0), 300.0)
    interval = min(max(finite_number(body.get("check_interval", 1), "check_interval"), 0.05), 10.0)
    result = execute(ctx, request)
    if not verification:
        return result
    start = time.monotonic()
    while True:
        if _verified(ctx, verification):
            payload = dict(_json_of(result), verification="passed")
            payload["wait_time"] = time.monotonic() - start
            return Response.json(payload)
        if time.monotonic() - start >= max_wait:
            payload = dict(_json_of(result), status="verification_failed", verification="failed")
            payload["wait_time"] = time.monotonic() - start
            return Response.json(payload, status=500)
        time.sleep(interval)


def _json_of(response: Response) -> dict[str, Any]:
    return json.loads(response.body)


def _verified(ctx: GuestContext, verification: dict[str, Any]) -> bool:
    title = verification.get("window_exists")
    if title and not ctx.x11.find_windows(str(title)):
        return False
    check = verification.get("command_success")
    if check:
        try:
            done = subprocess.run(
                str(check),
                shell=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=5,
                env=ctx.child_env(),
                cwd=ctx.home,
                **desktop_user(),
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0
    return True


_SHELL_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_./+-]+$")


def _shell_program(text: str) -> str | None:
    """The program a simple shell command line starts (after ``VAR=value`` words), if plain."""
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    words = [w for w in words if not _SHELL_ASSIGNMENT.match(w)]
    return words[0] if words and _PLAIN_WORD.match(words[0]) else None


def _missing_program(ctx: GuestContext, argv: list[str] | str) -> str | None:
    """The program of a launch that is not installed (the shell would answer 127), if any."""
    program = _shell_program(argv) if isinstance(argv, str) else argv[0]
    if program is None:
        return None
    env = ctx.child_env()
    if "/" in program:  # relative to the home, or absolute
        # By the effective ids: a split identity's real uid cannot enter the home (identity).
        found = os.access(os.path.join(ctx.home, program), os.X_OK, effective_ids=True)
    else:
        found = shutil.which(program, path=env.get("PATH")) is not None
    if found or (isinstance(argv, str) and _shell_knows(ctx, program)):
        return None
    return program


def _shell_knows(ctx: GuestContext, word: str) -> bool:
    """Whether the shell runs ``word`` without a program (a builtin such as ``cd``)."""
    script = 'command -v -- "$1" >/dev/null'
    done = subprocess.run(
        ["/bin/sh", "-c", script, "sh", word],
        env=ctx.child_env(),
        capture_output=True,
        timeout=5,
        **desktop_user(),
    )
    return done.returncode == 0


def launch(ctx: GuestContext, request: Request) -> Response:
    """``/setup/launch``: start a program and return at once (OSWorld answers plain text).

    A program that is not installed gets OSWorld's answer to a failed start (500 with a
    message) plus ``missing_command``, an extension naming it; for shell command lines this is
    checked before the shell starts, where OSWorld would answer 200 and the shell exit 127.
    """
    body = request.json()
    shell = bool(body.get("shell", False))
    argv = _command_argv(body.get("command"), shell)
    missing = _missing_program(ctx, argv)
    if missing is not None:
        raise HTTPError(
            500, f"[Errno 2] No such file or directory: {missing!r}", missing_command=missing
        )
    try:
        ctx.spawn_detached(argv, shell=shell)
    except FileNotFoundError as e:
        named = {"missing_command": argv[0]} if isinstance(argv, list) else {}
        raise HTTPError(500, str(e), **named) from e
    except OSError as e:
        raise HTTPError(500, f"could not launch {argv!r}: {e}") from e
    shown = argv if isinstance(argv, str) else " ".join(argv)
    return Response.text(f"{shown} launched successfully")


def run_python(ctx: GuestContext, request: Request) -> Response:
    """``/run_python``: run a Python program (30 s limit) and answer OSWorld's result shape."""
    code = request.json().get("code")
    if not isinstance(code, str) or not code:
        raise HTTPError(400, "code is required")
    source = os_string(code, "code", allow_nul=True).encode("utf-8", "surrogateescape")
    with tempfile.NamedTemporaryFile("wb", suffix=".py", dir=ctx.state_dir, delete=False) as f:
        f.write(source)
    try:
        done = run_bounded(
            [sys.executable, f.name],
            timeout=RUN_PYTHON_TIMEOUT,
            env=ctx.child_env(),
            cwd=ctx.home,
            stdin=subprocess.DEVNULL,
            **desktop_user(),
        )
    except subprocess.TimeoutExpired as e:
        message = f"Execution timed out after {RUN_PYTHON_TIMEOUT:g} seconds"
        raise HTTPError(500, message, need_more=False, output="", return_code=-1) from e
    finally:
        os.unlink(f.name)
    return Response.json(
        {
            "status": "success" if done.returncode == 0 else "error",
            "message": done.stdout + done.stderr,
            "need_more": False,
            "output": done.stdout,
            "error": done.stderr,
            "return_code": done.returncode,
        }
    )


def run_bash_script(ctx: GuestContext, request: Request) -> Response:
    """``/run_bash_script``: run a bash script once and answer its merged output."""
    body = request.json()
    script = body.get("script")
    if not isinstance(script, str) or not script:
        raise HTTPError(400, "script is required", output="", returncode=-1)
    os_string(script, "script", allow_nul=True)
    timeout = _bounded_timeout(body.get("timeout", RUN_BASH_DEFAULT_TIMEOUT))
    workdir = body.get("working_dir") or str(ctx.home)
    if not isinstance(workdir, str):
        raise HTTPError(400, "working_dir must be a string", output="", returncode=-1)
    workdir = os.path.expanduser(os_string(workdir, "working_dir"))
    if not os.path.isdir(workdir):
        raise HTTPError(400, f"working_dir does not exist: {workdir}", output="", returncode=-1)
    if not script.startswith("#!"):
        script = "#!/bin/bash\n" + script
    with tempfile.NamedTemporaryFile("wb", suffix=".sh", dir=ctx.state_dir, delete=False) as f:
        f.write(script.encode("utf-8", "surrogateescape"))
    try:
        done = run_bounded(
            ["/bin/bash", f.name],
            merge_stderr=True,
            timeout=timeout,
            env=ctx.child_env(),
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            **desktop_user(),
        )
    except subprocess.TimeoutExpired as e:
        raise HTTPError(
            500, f"Script timed out after {timeout:g} seconds", output="", returncode=-1
        ) from e
    finally:
        os.unlink(f.name)
    return Response.json(
        {
            "status": "success" if done.returncode == 0 else "error",
            "output": done.stdout,
            "error": "",
            "returncode": done.returncode,
        }
    )


def _bounded_timeout(value: Any) -> float:
    timeout = finite_number(value, "timeout")
    if not 0 < timeout <= MAX_SCRIPT_TIMEOUT:
        raise HTTPError(400, f"timeout must be in (0, {MAX_SCRIPT_TIMEOUT:g}]")
    return timeout


ROUTES = (
    ("POST", "/execute", execute),
    ("POST", "/setup/execute", execute),
    ("POST", "/execute_with_verification", execute_with_verification),
    ("POST", "/setup/execute_with_verification", execute_with_verification),
    ("POST", "/setup/launch", launch),
    ("POST", "/run_python", run_python),
    ("POST", "/run_bash_script", run_bash_script),
)
