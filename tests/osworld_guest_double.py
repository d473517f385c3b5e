"""A test double of OSWorld's own guest server (its Flask app in the VM), on loopback.

Written from the protocol as docs/design/osworld-protocol.md#endpoints describes it, not from
OSWorld's code, and answering the way that server does where ours differs:

- no ``/health`` (Flask's HTML 404 page), so clients fall back to OSWorld's plain routes;
- ``/screen_size`` answers the double's own size (1920x1080 by default, OSWorld's);
- ``/screenshot`` is a full-screen RGB PNG;
- ``/list_directory`` expands nothing (``~/x`` is not a folder: 400) and lists children in
  ``os.listdir`` order, which is arbitrary: the double lists them in reverse name order, so a
  client that relies on any order fails every time, not now and then;
- ``/run_bash_script`` runs the script, then answers 500 with OSWorld's error body (its current
  version calls an undefined ``_append_event`` after the script ran);
- ``/execute`` and ``/file``/``/setup/upload`` expand ``~/`` (``/file`` also ``$VAR``).

Commands run for real on this host with ``HOME`` set to the double's home folder, as OSWorld's
server runs them as its user. The one stand-in is the screen: there is no display, so a
``pyautogui`` module on the commands' ``PYTHONPATH`` records each call (the action code the
client sends is still run by ``python -c``), and ``/setup/launch`` records the program instead
of starting it.
"""

from __future__ import annotations

import collections.abc
import contextlib
import email.parser
import email.policy
import http.server
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from http_helpers import loopback_server
from PIL import Image

OSWORLD_SCREEN = (1920, 1080)
EXECUTE_TIMEOUT = 120  # seconds: OSWorld's /execute limit
APPEND_EVENT_BUG = "Failed to execute script: name '_append_event' is not defined"
FLASK_404 = (
    b"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n"
    b"<p>The requested URL was not found on the server.</p>\n"
)
INPUT_LOG_VARIABLE = "OSWORLD_DOUBLE_INPUTS"
PYAUTOGUI_STUB = '''"""pyautogui for the double: records each call instead of driving a display."""
import json
import os

FAILSAFE = True
PAUSE = 0.1


def _recorder(name):
    def call(*args, **kwargs):
        with open(os.environ["OSWORLD_DOUBLE_INPUTS"], "a", encoding="utf-8") as log:
            log.write(json.dumps([name, list(args), kwargs]) + "\\n")

    return call


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    return _recorder(name)
'''


@dataclass
class OSWorldGuestDouble:
    """The double's state: its home folder, screen, and what it was asked to do.

    Attributes:
        url: Where it listens.
        home: The guest user's home folder (``$HOME`` of the commands it runs).
        screen: Its screen size.
        requests: ``(method, path)`` of every request, in order.
        launched: Commands ``/setup/launch`` was given.
        bash_script_runs: Scripts ``/run_bash_script`` ran.
        dead: Set to make it drop every request unanswered, kept-alive connections included,
            as a VM that died would (``osworld_guest`` also stops listening on exit).
    """

    url: str
    home: Path
    screen: tuple[int, int]
    tools: Path
    requests: list[tuple[str, str]] = field(default_factory=list)
    launched: list[Any] = field(default_factory=list)
    bash_script_runs: int = 0
    dead: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def input_log(self) -> Path:
        """Where the pyautogui stand-in records its calls."""
        return self.tools / "inputs.jsonl"

    def inputs(self) -> list[list[Any]]:
        """The pyautogui calls made so far, each ``[function, args, kwargs]``."""
        if not self.input_log.exists():
            return []
        lines = self.input_log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def paths(self) -> list[str]:
        """The paths requested so far."""
        with self.lock:
            return [path for _, path in self.requests]

    def child_env(self) -> dict[str, str]:
        """The environment of the commands it runs: the guest user's, with the stand-ins."""
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "PYTHONPATH")}
        env.update(
            HOME=str(self.home),
            PATH=f"{self.tools / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=str(self.tools / "lib"),
            **{INPUT_LOG_VARIABLE: str(self.input_log)},
        )
        return env

    def expand(self, path: str) -> str:
        """``~`` and ``$VAR`` expanded as the guest user sees them (for /file and uploads)."""
        if path == "~" or path.startswith("~/"):
            path = str(self.home) + path[1:]
        return os.path.expandvars(path.replace("$HOME", str(self.home)))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: with Nagle's algorithm on, the body waits
    # for the client's delayed ACK of the headers (40 ms a request on Linux).
    disable_nagle_algorithm = True
    double: OSWorldGuestDouble
    png: bytes

    def log_message(self, *args: object) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    # --- plumbing ------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        if self.double.dead:
            self.close_connection = True  # no answer: the client sees the connection drop
            return
        path = urllib.parse.urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        with self.double.lock:
            self.double.requests.append((method, path))
        route = _ROUTES.get((method, path))
        if route is None:
            self._send(404, FLASK_404, "text/html; charset=utf-8")
            return
        route(self)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: object) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _text(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/html; charset=utf-8")

    def _json_body(self) -> dict[str, Any]:
        return json.loads(self.body or b"{}")

    def _form(self) -> dict[str, Any]:
        """Form fields (urlencoded or multipart); file parts as bytes."""
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("multipart/"):
            head = f"Content-Type: {content_type}\r\n\r\n".encode()
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                head + self.body
            )
            fields: dict[str, Any] = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                data = part.get_payload(decode=True)
                fields[str(name)] = data if part.get_filename() else data.decode()
            return fields
        parsed = urllib.parse.parse_qs(self.body.decode(), keep_blank_values=True)
        return {k: v[0] for k, v in parsed.items()}

    # --- routes --------------------------------------------------------------------------

    def screenshot(self) -> None:
        self._send(200, self.png, "image/png")

    def screen_size(self) -> None:
        width, height = self.double.screen
        self._json(200, {"width": width, "height": height})

    def platform(self) -> None:
        self._text(200, "Linux")

    def desktop_path(self) -> None:
        self._json(200, {"desktop_path": str(self.double.home / "Desktop")})

    def terminal(self) -> None:
        self._json(200, {"output": None, "status": "success"})

    def execute(self) -> None:
        body = self._json_body()
        command, shell = body.get("command"), bool(body.get("shell", False))
        if isinstance(command, str) and not shell:
            command = shlex.split(command)
        if isinstance(command, list):  # each argv item starting ~/ is expanded
            home = str(self.double.home)
            command = [home + c[1:] if c.startswith("~/") else c for c in command]
        try:
            done = subprocess.run(
                command,
                shell=shell,
                capture_output=True,
                text=True,
                timeout=EXECUTE_TIMEOUT,
                env=self.double.child_env(),
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as e:
            self._json(500, {"status": "error", "message": str(e)})
            return
        self._json(
            200,
            {
                "status": "success",
                "output": done.stdout,
                "error": done.stderr,
                "returncode": done.returncode,
            },
        )

    def launch(self) -> None:
        command = self._json_body().get("command")
        self.double.launched.append(command)
        shown = " ".join(command) if isinstance(command, list) else command
        self._text(200, f"{shown} launched successfully")

    def list_directory(self) -> None:
        path = self._json_body().get("path")
        if not path or not os.path.isdir(path):  # no ~ expansion: "~/x" is not a folder here
            self._json(400, {"error": f"Directory not found: {path}"})
            return
        self._json(200, {"directory_tree": _tree(Path(path))})

    def file(self) -> None:
        path = self._form().get("file_path")
        if not path:
            self._json(400, {"error": "file_path is required"})
            return
        target = Path(self.double.expand(path))
        if not target.is_file():
            self._json(404, {"error": "File not found"})
            return
        self._send(200, target.read_bytes(), "application/octet-stream")

    def upload(self) -> None:
        form = self._form()
        if "file_path" not in form or "file_data" not in form:
            self._json(400, {"error": "file_path and file_data are required"})
            return
        target = Path(self.double.expand(form["file_path"]))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(form["file_data"])
        self._text(200, f"File Uploaded: {len(form['file_data'])} bytes")

    def run_bash_script(self) -> None:
        body = self._json_body()
        script = body.get("script")
        if not script:
            self._json(400, {"status": "error", "output": "script is required", "returncode": -1})
            return
        if not script.startswith("#!"):
            script = "#!/bin/bash\n" + script
        folder = self.double.expand(body.get("working_dir") or "~")
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
            f.write(script)
        try:
            subprocess.run(
                ["/bin/bash", f.name],
                cwd=folder,
                capture_output=True,
                timeout=float(body.get("timeout", 100)),
                env=self.double.child_env(),
                stdin=subprocess.DEVNULL,
                check=False,
            )
        finally:
            os.unlink(f.name)
        with self.double.lock:
            self.double.bash_script_runs += 1
        # OSWorld's bug: after the script ran, an undefined helper turns the answer into this.
        self._json(500, {"status": "error", "output": APPEND_EVENT_BUG, "returncode": -1})


def _tree(path: Path) -> dict[str, Any]:
    """OSWorld's directory tree, children in reverse name order (any order is possible)."""
    children = []
    for name in sorted(os.listdir(path), reverse=True):
        child = path / name
        if child.is_dir():
            children.append(_tree(child))
        else:
            children.append({"type": "file", "name": name})
    return {"type": "directory", "name": path.name, "children": children}


_ROUTES: dict[tuple[str, str], collections.abc.Callable[[_Handler], None]] = {
    ("GET", "/screenshot"): _Handler.screenshot,
    ("POST", "/screen_size"): _Handler.screen_size,
    ("GET", "/platform"): _Handler.platform,
    ("POST", "/desktop_path"): _Handler.desktop_path,
    ("GET", "/terminal"): _Handler.terminal,
    ("POST", "/execute"): _Handler.execute,
    ("POST", "/setup/execute"): _Handler.execute,
    ("POST", "/setup/launch"): _Handler.launch,
    ("POST", "/list_directory"): _Handler.list_directory,
    ("POST", "/file"): _Handler.file,
    ("POST", "/setup/upload"): _Handler.upload,
    ("POST", "/run_bash_script"): _Handler.run_bash_script,
}


def _screen_png(size: tuple[int, int]) -> bytes:
    """A desktop-like PNG: a teal background with a grey panel at the top."""
    image = Image.new("RGB", size, (30, 110, 120))
    image.paste((200, 200, 200), (0, 0, size[0], 28))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _install_tools(tools: Path, python_flags: tuple[str, ...] = ()) -> None:
    """The pyautogui stand-in, and ``python`` meaning this interpreter (as on the VM's PATH).

    With ``python_flags``, ``python`` is a script running this interpreter with them first.
    """
    (tools / "lib").mkdir(parents=True)
    (tools / "lib" / "pyautogui.py").write_text(PYAUTOGUI_STUB)
    (tools / "bin").mkdir()
    python = tools / "bin" / "python"
    if not python_flags:
        python.symlink_to(sys.executable)
        return
    flags = " ".join(shlex.quote(flag) for flag in python_flags)
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {flags} "$@"\n')
    python.chmod(0o755)


@contextlib.contextmanager
def osworld_guest(
    root: Path, screen: tuple[int, int] = OSWORLD_SCREEN, python_flags: tuple[str, ...] = ()
) -> collections.abc.Iterator[OSWorldGuestDouble]:
    """Run the double on 127.0.0.1 with its home and tools under ``root``; stop afterwards.

    ``python_flags`` go to every ``python`` the commands run (``("-S",)`` skips ``site``).
    """
    home, tools = root / "home", root / "tools"
    (home / "Desktop").mkdir(parents=True)
    _install_tools(tools, python_flags)
    double = OSWorldGuestDouble(url="", home=home, screen=screen, tools=tools)
    handler = type("OSWorldHandler", (_Handler,), {"double": double, "png": _screen_png(screen)})
    with loopback_server(handler) as url:
        double.url = url
        yield double
