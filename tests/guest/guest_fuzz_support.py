"""Raw HTTP exchanges and hypothesis strategies for fuzzing a live guest (``test_guest_fuzz``).

Requests go out over a plain socket, so anything can be sent: bad methods and versions, odd
targets, duplicate or malformed headers, a ``Content-Length`` that lies. After the request the
socket's write side is shut: the guest sees the end of the stream where a lying length asks it
to wait for more, answers, and its request thread ends (no keep-alive connection is left).

Dangerous-action safety: the guest runs in its sandbox (the host read-only, a throwaway home
and ``/tmp``), and on top of that nothing generated here can run an arbitrary program. Fields
that the guest executes (``command``, ``script``, ``code``, ``verification.command_success``)
get a command from a small harmless set or a value that is no command (a number, an object, a
list that holds a non-string); free text elsewhere is only ever a path, a title or typed text.
Paths written to are under the desktop's home or ``/tmp`` (both throwaway folders), plus
traversal attempts at a host folder that must be refused (the sandbox mounts it read-only).
"""

from __future__ import annotations

import errno
import functools
import http.client
import io
import json
import math
import re
import socket
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from osworld_gym.guest import protocol

# --- raw exchange ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class RawRequest:
    """One request as bytes on the wire, with what it was generated from."""

    method: str
    target: str
    version: str  # "" sends an HTTP/0.9-style request line (two words)
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    trailer: bytes = b""  # bytes after the body: a pipelined second request or garbage

    def __repr__(self) -> str:
        body = self.body if len(self.body) <= 300 else self.body[:300] + b"..."
        return (
            f"RawRequest(method={self.method!r}, target={self.target[:300]!r}, "
            f"version={self.version!r}, headers={self.headers!r}, "
            f"body={body!r} ({len(self.body)} bytes), trailer={self.trailer!r})"
        )

    def encode(self) -> bytes:
        """The bytes sent: request line, headers, blank line, body, trailer."""
        line = f"{self.method} {self.target}" + (f" {self.version}" if self.version else "")
        head = line + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in self.headers)
        return (head + "\r\n").encode("utf-8", errors="surrogateescape") + self.body + self.trailer

    def words(self) -> list[str]:
        """The request line split as ``http.server`` splits it."""
        first = self.encode().split(b"\n", 1)[0]
        return first.decode("iso-8859-1").rstrip("\r\n").split()

    @property
    def path(self) -> str:
        """The target's path, as the guest routes on it."""
        return urllib.parse.urlsplit(self.target).path


@dataclass
class Answer:
    """One HTTP response read back (``status`` None for a headerless HTTP/0.9 answer)."""

    status: int | None
    headers: dict[str, str]
    body: bytes

    def payload(self) -> dict[str, Any]:
        """The JSON object of the body, or {} when it is none."""
        try:
            value = json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            return {}
        return value if isinstance(value, dict) else {}


class _Buffer(io.BytesIO):
    """A bytes buffer ``HTTPResponse`` cannot close (it closes its file after the body)."""

    def close(self) -> None:
        """Keep the buffer readable for the next pipelined response."""


class _Socket:
    """Enough of a socket for ``http.client.HTTPResponse`` to read from a buffer."""

    def __init__(self, buffer: _Buffer) -> None:
        self._buffer = buffer

    def makefile(self, mode: str) -> _Buffer:
        return self._buffer


@dataclass
class Reply:
    """What came back on a connection: the bytes, and whether it ended in a reset."""

    data: bytes
    reset: bool


def exchange(port: int, data: bytes, timeout: float = 30.0) -> Reply:
    """Send ``data`` on a fresh connection, shut the write side, read until the guest closes.

    A guest that answers and closes before reading all of a request (413, a bad version)
    resets the connection, as TCP does with unread bytes; the answer may then be lost.
    """
    chunks: list[bytes] = []
    reset = False
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                raise
            reset = True  # the guest closed before reading everything
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except ConnectionResetError:
                reset = True
                break
            if not chunk:
                break
            chunks.append(chunk)
    return Reply(b"".join(chunks), reset)


def parse_answers(data: bytes, method: str | None, headerless_first: bool) -> list[Answer]:
    """Split the bytes a guest sent back into responses (pipelined ones too).

    ``http.server`` answers a request line without an HTTP/1.x version with the body alone
    (see ``has_version()``): allowed first where ``headerless_first``, and last, for a
    pipelined line whose version is not known here.

    Raises:
        http.client.HTTPException: the bytes are not well-formed HTTP responses.
    """
    buffer = _Buffer(data)
    answers: list[Answer] = []
    while buffer.tell() < len(data):
        if not data.startswith(b"HTTP/", buffer.tell()) and (answers or headerless_first):
            answers.append(Answer(None, {}, data[buffer.tell() :]))
            break
        response = http.client.HTTPResponse(
            _Socket(buffer),  # type: ignore[arg-type]
            method=method if not answers else None,
        )
        response.begin()
        body = response.read()
        answers.append(Answer(response.status, dict(response.getheaders()), body))
    return answers


# --- generic values --------------------------------------------------------------------------


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Draw from one of ``choices``, each picked in proportion to its weight."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


# Text whose str() of any structure holding it is no shell command with side effects: no
# quotes, no $, ;, |, &, `, <, >, no newline.
INERT_TEXT = st.text(string.ascii_letters + string.digits + " _-.,:", max_size=12)
ANY_TEXT = st.one_of(
    st.text(max_size=24),
    st.sampled_from(["", "\x00", "\ud800", "\udcff", "é", "\u202e", "a" * 5000, "%00", "\r\n"]),
)


def _json_values(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        text,
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(INERT_TEXT, inner, max_size=4)
        ),
        max_leaves=8,
    )


INERT_JSON = _json_values(INERT_TEXT)
ANY_JSON = _json_values(ANY_TEXT)

# Values that are no command: never a string, never a non-empty list of strings.
_NOT_STRINGS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.dictionaries(INERT_TEXT, INERT_JSON, max_size=3),
)
NOT_A_COMMAND = st.one_of(
    _NOT_STRINGS,
    st.just([]),
    st.tuples(st.lists(INERT_TEXT, max_size=3), _NOT_STRINGS).map(lambda t: [*t[0], t[1]]),
)

SAFE_ARGVS = [
    ["true"],
    ["false"],
    ["echo", "fuzz"],
    ["printf", "%s\\n", "a b", "é"],
    ["sh", "-c", "exit 3"],
    ["ls", "~/fuzz"],
    ["no-such-program-fuzz"],  # OSWorld's 500 for a program that is not installed
    ["~/fuzz/absent"],
    ["echo", "\x00"],
    ["echo", "\ud800"],
    ["echo", "\udcff"],
    [""],
]
SAFE_SHELL = [
    "true",
    "echo fuzz",
    "exit 7",
    "echo 'unterminated",
    "A=1 true",
    "cd ~ && pwd",
    "test -d ~/fuzz",
    "no-such-program-fuzz --flag",
    "echo \x00",
    "echo \ud800",
    "",
]
SAFE_PYTHON = [
    "print(1)",
    "import sys; sys.exit(3)",
    "raise SystemExit('x')",
    "1/0",
    "def f(:",
    "import sys; sys.stdout.buffer.write(bytes([255, 0]))",
    "print('\\u00e9')",
    "\x00",
    "\ud800",
    "#\udcff",
    "",
]
COMMANDS = weighted(
    (3, st.sampled_from(SAFE_ARGVS)), (2, st.sampled_from(SAFE_SHELL)), (1, NOT_A_COMMAND)
)
SHELL_TEXT = weighted((3, st.sampled_from(SAFE_SHELL)), (1, _NOT_STRINGS))
PYTHON_CODE = weighted((3, st.sampled_from(SAFE_PYTHON)), (1, _NOT_STRINGS))

# What is no finite number, for timeouts. (A huge finite one would be valid: clamped to the
# route's longest wait, minutes.)
BAD_NUMBERS = st.one_of(
    st.sampled_from(["NaN", "nan", "inf", "-inf", "soon", "", "1e400", "0x10"]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.none(),
    st.booleans(),
    st.dictionaries(INERT_TEXT, INERT_JSON, max_size=3),
    st.lists(st.integers(), max_size=2),
)


def small_numbers(high: float) -> st.SearchStrategy[Any]:
    """A wait field: a number in [-1, high] (also as a string), or no valid number."""
    number = st.floats(min_value=-1.0, max_value=high)
    return weighted(
        (3, number), (1, number.map(str)), (1, st.integers(-1, int(high))), (1, BAD_NUMBERS)
    )


# --- paths -----------------------------------------------------------------------------------

_NAME = st.text(string.ascii_letters + string.digits + "._- é", min_size=1, max_size=10)


@dataclass(frozen=True)
class Places:
    """Where generated paths point, as the guest (inside its sandbox) sees them.

    Attributes:
        escape_dir: A host folder the sandbox shows read-only; nothing may appear in it.
    """

    escape_dir: str
    scratch: str = "~/fuzz"  # made by the test; files for reads live here
    existing: tuple[str, ...] = (
        "~/fuzz/a.txt",
        "~/fuzz/image.png",
        "~/fuzz/empty",
        "~/fuzz/d",
        "~/fuzz/fifo",
    )

    def escapes(self) -> list[str]:
        """Paths into ``escape_dir`` (directly and by traversal) that must stay unwritten."""
        relative = self.escape_dir.lstrip("/")
        return [
            f"{self.escape_dir}/fuzz-escape",
            f"~/../../{relative}/fuzz-escape",
            f"/tmp/../{relative}/fuzz-escape-tmp",
            f"~/fuzz/../../../{relative}/d/fuzz-escape",
        ]


ODD_PATHS = [
    "",
    "~",
    ".",
    "..",
    "~/fuzz/",
    "~/fuzz/\x00x",
    "~/fuzz/\ud800",
    "~/fuzz/\udcff",
    "~/fuzz/" + "n" * 300,
    "~/" + "d/" * 2100,
    "$UNSET_FUZZ_VARIABLE/x",
    "${HOME",
    "~nobody/x",
    "~/fuzz/a.txt/below",
    "/dev/null",
    "/proc/self/status",
    "/proc/self/mem",
    "/proc/self/pagemap",
    "/sys/devices/system/cpu/online",
    "relative-fuzz",
]


# Odd paths to write at. An explicit list, never derived from ODD_PATHS: the sandbox binds
# the host's /dev (and its X sockets) writable, so a write to /dev/null replaced the host's
# /dev/null before the guest refused non-regular targets. No relative paths either.
ODD_WRITE_PATHS = [
    "",
    "~",
    ".",
    "..",
    "~/fuzz/",
    "~/fuzz/\x00x",
    "~/fuzz/\ud800",
    "~/fuzz/\udcff",
    "~/fuzz/" + "n" * 300,
    "~/" + "d/" * 2100,
    "~nobody/x",
    "~/fuzz/a.txt/below",
    "~/fuzz/fifo",  # a FIFO the test makes: not a regular file
    "~/fuzz/d",
]


def read_paths(places: Places) -> st.SearchStrategy[Any]:
    """Paths to read or list: the scratch files, odd paths, escapes; or no string at all."""
    return weighted(
        (3, st.sampled_from(places.existing)),
        (1, _NAME.map(lambda n: f"{places.scratch}/{n}")),
        (2, st.sampled_from(ODD_PATHS + places.escapes())),
        (1, _NOT_STRINGS),
    )


def write_paths(places: Places) -> st.SearchStrategy[Any]:
    """Paths to write: under the throwaway home and /tmp, odd paths, escapes; or no string."""
    return weighted(
        (2, _NAME.map(lambda n: f"{places.scratch}/w/{n}")),
        (1, st.tuples(_NAME, _NAME).map(lambda t: f"{places.scratch}/w/{t[0]}/{t[1]}")),
        (1, _NAME.map(lambda n: f"/tmp/fuzz/{n}")),
        (1, _NAME.map(lambda n: f"$HOME/fuzz/w/{n}")),
        (2, st.sampled_from(ODD_WRITE_PATHS)),
        (1, st.sampled_from(places.escapes())),
        (1, _NOT_STRINGS),
    )


# --- route bodies ----------------------------------------------------------------------------


def _actions() -> st.SearchStrategy[Any]:
    """Action lists: well-formed, nearly so, and not at all (no right button: no root menu)."""
    kinds = [k for k in protocol.ACTION_KINDS if k != "right_click"]
    coordinate = st.one_of(
        st.integers(0, 1279), st.integers(-(2**40), 2**40), st.floats(), INERT_JSON
    )
    values: dict[str, st.SearchStrategy[Any]] = {
        "x": coordinate,
        "y": coordinate,
        "to_x": coordinate,
        "to_y": coordinate,
        "button": st.one_of(st.sampled_from(["left", "middle"]), INERT_JSON),
        "clicks": st.one_of(st.integers(0, 4), INERT_JSON),
        "presses": st.one_of(st.integers(0, 3), st.just(101), INERT_JSON),
        "dx": st.one_of(st.integers(-3, 3), st.just(10**6), INERT_JSON),
        "dy": st.one_of(st.integers(-3, 3), INERT_JSON),
        # Typed into whatever has the focus: no newline, so nothing is ever "entered".
        "text": st.one_of(
            st.text(st.characters(exclude_characters="\n\r"), max_size=8),
            st.just("\ud800"),
            INERT_JSON,
        ),
        "keys": st.one_of(
            st.lists(st.sampled_from(["shift", "a", "F5", "tab", "nosuchkey"]), max_size=9),
            INERT_JSON,
        ),
        "key": st.one_of(st.sampled_from(["a", "Escape", "esc", "nosuchkey", ""]), INERT_JSON),
    }
    action = st.fixed_dictionaries(
        {"kind": st.one_of(st.sampled_from(kinds), INERT_JSON)},
        optional={**values, "extra": INERT_JSON},
    )
    return st.one_of(st.lists(action, max_size=3), INERT_JSON)


@functools.cache
def route_fields(places: Places) -> dict[str, dict[str, st.SearchStrategy[Any]]]:
    """The JSON fields each route reads, with generators for them (every route is listed)."""
    command = {"command": COMMANDS, "shell": INERT_JSON}
    verification = st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "window_exists": st.one_of(ANY_TEXT, INERT_JSON),
                "command_success": SHELL_TEXT,
            },
        ),
        INERT_JSON.filter(lambda v: not isinstance(v, dict)),
    )
    window = {"window_name": ANY_JSON, "strict": INERT_JSON, "by_class": INERT_JSON}
    no_fields: dict[str, st.SearchStrategy[Any]] = {}
    return {
        "/health": no_fields,
        # Query options (bounded: a valid settle wait takes at most 0.3 s).
        "/screenshot": {
            "format": st.sampled_from(["png", "jpeg", "raw", "PNG", "gif", ""]),
            "quality": st.sampled_from(["1", "95", "0", "96", "x", ""]),
            "png_level": st.sampled_from(["0", "9", "10", "-1"]),
            "max_pixels": st.sampled_from(["0", "1", "100", "-5", "1e3", "9" * 30]),
            "cursor": st.sampled_from(["0", "1", "yes", "x"]),
            "settle": st.sampled_from(["1", "0", "true"]),
            "settle_timeout": st.sampled_from(["0.1", "0.3", "0", "nan", "inf", "61", "x"]),
            "settle_quiet": st.sampled_from(["0", "0.05", "11", "-1", "nan"]),
            "settle_interval": st.sampled_from(["0.01", "0.004", "2", "x"]),
        },
        "/actions": {"actions": _actions()},
        "/screen_size": no_fields,
        "/cursor_position": no_fields,
        "/platform": no_fields,
        "/window_size": {"app_class_name": ANY_JSON},
        "/setup/activate_window": window,
        "/setup/close_window": window,
        # Only paths that do not exist: nothing opens a window or outlives the request.
        # (``true``, a program, is in OPEN_TRUE: it waits for a window until the timeout.)
        "/setup/open_file": {
            "path": weighted(
                (2, _NAME.map(lambda n: f"~/fuzz/absent-{n}")),
                (2, st.sampled_from(["", "\x00", "\ud800", "$NOPE/x", "n" * 300])),
                (1, _NOT_STRINGS),
            ),
            "timeout": small_numbers(0.3),
        },
        "/wallpaper": no_fields,
        "/setup/change_wallpaper": {"path": read_paths(places)},
        "/execute": command,
        "/setup/execute": command,
        "/execute_with_verification": {
            **command,
            "verification": verification,
            "max_wait_time": small_numbers(0.3),
            "check_interval": small_numbers(0.2),
        },
        "/setup/execute_with_verification": {
            **command,
            "verification": verification,
            "max_wait_time": small_numbers(0.3),
            "check_interval": small_numbers(0.2),
        },
        "/setup/launch": command,
        "/run_python": {"code": PYTHON_CODE},
        "/run_bash_script": {
            "script": SHELL_TEXT,
            "timeout": st.one_of(st.floats(-10, 5000), BAD_NUMBERS),
            "working_dir": st.one_of(read_paths(places), write_paths(places)),
        },
        "/file": {"file_path": read_paths(places)},
        "/setup/upload": {"file_path": write_paths(places)},
        "/list_directory": {"path": read_paths(places)},
        "/desktop_path": no_fields,
        "/setup/download_file": {
            "url": st.one_of(
                st.sampled_from(
                    [
                        "file:///home/user/fuzz/a.txt",
                        "file:///home/user/fuzz/empty",
                        "nourl",
                        "",
                        "gopher://x/",
                        "http://[::1",
                        "http:///no-host",
                        "file:///home/user/fuzz/\x00",
                        "javascript:alert(1)",
                    ]
                ),
                _NOT_STRINGS,
            ),
            "path": write_paths(places),
        },
        "/start_recording": no_fields,
        "/end_recording": no_fields,
        "/accessibility": no_fields,
        "/terminal": no_fields,
    }


# A body each route accepts (200, or 404 where it names a window or file that is not
# there); the generator mostly varies one or two fields of it, so the route runs deep.
VALID_BODIES: dict[str, dict[str, Any]] = {
    "/actions": {"actions": [{"kind": "move", "x": 10, "y": 10}, {"kind": "scroll", "dy": 1}]},
    "/window_size": {"app_class_name": "fuzz-no-such-class"},
    "/setup/activate_window": {"window_name": "fuzz-no-such-window", "strict": False},
    "/setup/close_window": {"window_name": "fuzz-no-such-window", "by_class": True},
    "/setup/open_file": {"path": "~/fuzz/absent", "timeout": 0.1},
    "/setup/change_wallpaper": {"path": "~/fuzz/image.png"},
    "/execute": {"command": ["echo", "fuzz"], "shell": False},
    "/setup/execute": {"command": "echo fuzz", "shell": True},
    "/execute_with_verification": {
        "command": ["true"],
        "verification": {"command_success": "true"},
        "max_wait_time": 0.2,
        "check_interval": 0.05,
    },
    "/setup/execute_with_verification": {
        "command": "true",
        "verification": {"command_success": "test -d ~/fuzz"},
        "max_wait_time": 0.1,
        "check_interval": 0.05,
    },
    "/setup/launch": {"command": ["true"]},
    "/run_python": {"code": "print(1)"},
    "/run_bash_script": {"script": "echo fuzz", "timeout": 10, "working_dir": "~/fuzz"},
    "/file": {"file_path": "~/fuzz/a.txt"},
    "/list_directory": {"path": "~/fuzz"},
    "/setup/download_file": {"url": "file:///home/user/fuzz/a.txt", "path": "~/fuzz/w/got"},
}


@st.composite
def varied_bodies(
    draw: st.DrawFn, base: dict[str, Any], fields: dict[str, st.SearchStrategy[Any]]
) -> dict[str, Any]:
    """``base`` with up to two of its fields replaced by generated values or left out.

    ``max_wait_time`` is never left out: its default (10 s) would make a failed verification
    the slowest example of all.
    """
    body = dict(base)
    if not fields:
        return body
    for name in draw(st.lists(st.sampled_from(sorted(fields)), max_size=2, unique=True)):
        if name == "max_wait_time" or draw(st.sampled_from([True, True, True, False])):
            body[name] = draw(fields[name])
        else:
            body.pop(name, None)
    return body


# open_file of ``true``: no file has that name, so the program starts and the guest waits for
# its window until the timeout, given always (the default is a minute) and at most 0.3 s.
# (``/bin/true`` is a file: xdg-open would open it in an app that stays.)
OPEN_TRUE = st.fixed_dictionaries({"path": st.just("true"), "timeout": small_numbers(0.3)})


def json_bodies(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object with all (mostly) or some of a route's fields, now and then one more."""
    return weighted(
        (2, st.fixed_dictionaries(fields, optional={"unknown_field": INERT_JSON})),
        (1, st.fixed_dictionaries({}, optional={**fields, "unknown_field": INERT_JSON})),
    )


def encode_json(value: Any) -> bytes:
    """JSON as a client might send it (NaN and infinities as Python writes them)."""
    return json.dumps(value, allow_nan=True).encode("utf-8")


# --- multipart ------------------------------------------------------------------------------

_GOOD_BOUNDARIES = st.text(string.ascii_letters + string.digits + "'_-.+", min_size=1, max_size=70)
_BOUNDARIES = st.one_of(
    st.text(string.ascii_letters + string.digits + "'()+_,-./:=?", min_size=1, max_size=70),
    st.sampled_from(["", "a b", '"quoted"', "--", "x" * 200]),
)


@st.composite
def multipart_bodies(draw: st.DrawFn, places: Places) -> tuple[str, bytes]:
    """A ``multipart/form-data`` (Content-Type, body) for /setup/upload.

    Well-formed two times in three (any path, any file name and bytes), else malformed.
    """
    path = draw(write_paths(places))
    path_text = path if isinstance(path, str) else json.dumps(path)
    filename = draw(
        weighted(
            (3, _NAME),
            (1, st.sampled_from(["../../etc/passwd", "/etc/passwd", "", "a\x00b", '"', "é"])),
        )
    )
    path_part = _part("file_path", None, path_text.encode("utf-8", "surrogatepass"))
    data_part = _part("file_data", filename, draw(st.binary(max_size=512)))
    if draw(st.sampled_from([True, True, False])):
        boundary = draw(_GOOD_BOUNDARIES)
        parts = draw(st.permutations([path_part, data_part]))
        delimiter = b"--" + boundary.encode()
        body = b"".join(delimiter + b"\r\n" + part + b"\r\n" for part in parts)
        value = f'"{boundary}"' if draw(st.booleans()) else boundary
        return f"multipart/form-data; boundary={value}", body + delimiter + b"--\r\n"
    boundary = draw(_BOUNDARIES)
    parts = [part for part in (path_part, data_part) if draw(st.booleans())]
    for _ in range(draw(st.integers(0, 2))):
        parts.append(
            draw(
                st.one_of(
                    st.builds(_part, st.sampled_from(["file_path", "file_data", "x"]), st.none()),
                    st.binary(max_size=80),  # a part that is not one
                    st.just(b"Content-Disposition: attachment\r\n\r\nx"),
                    st.just(b"Content-Disposition: form-data\r\n\r\nno name"),
                )
            )
        )
    delimiter = b"--" + boundary.encode("latin-1", errors="replace")
    body = b"".join(delimiter + b"\r\n" + part + b"\r\n" for part in parts)
    ending = draw(st.sampled_from([delimiter + b"--\r\n", delimiter + b"--", b"", delimiter]))
    body += ending
    ctype = draw(
        st.sampled_from(
            [
                f"multipart/form-data; boundary={boundary}",
                f'multipart/form-data; boundary="{boundary}"',
                "multipart/form-data",
                f"multipart/form-data; boundary={boundary}; charset=utf-8",
                f"Multipart/Form-Data; BOUNDARY={boundary}",
            ]
        )
    )
    return ctype, body


def _part(name: str, filename: str | None, content: bytes = b"v") -> bytes:
    disposition = f'form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    head = f"Content-Disposition: {disposition}\r\n"
    if filename is not None:
        head += "Content-Type: application/octet-stream\r\n"
    return head.encode("utf-8", "surrogatepass") + b"\r\n" + content


# --- the request line and headers ------------------------------------------------------------

HANDLED_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")
OTHER_METHODS = ["HEAD", "OPTIONS", "TRACE", "CONNECT", "get", "FUZZ", "P0ST", "\x7f"]


def targets(routes: list[str]) -> st.SearchStrategy[str]:
    """Request targets: routes (plain, with queries, percent-encoded, decorated) and junk."""
    route = st.sampled_from(routes)
    query = st.lists(
        st.tuples(
            st.sampled_from(
                ["format", "quality", "max_pixels", "settle", "settle_quiet", "cursor", "x"]
            ),
            st.sampled_from(["png", "jpeg", "raw", "gif", "0", "1", "95", "-1", "nan", "", "%zz"]),
        ),
        max_size=4,
    ).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))
    encoded = route.map(lambda r: "".join(f"%{ord(c):02X}" if c.isalpha() else c for c in r))
    return st.one_of(
        route,
        st.tuples(route, query).map(lambda t: f"{t[0]}?{t[1]}"),
        encoded,
        st.tuples(
            route, st.sampled_from(["/", "//", "/..", "?", "#frag", ";p=1", "%00", "/%2e%2e"])
        ).map("".join),
        route.map(lambda r: "/" + r),  # "//route": http.server collapses the leading slashes
        route.map(lambda r: "http://127.0.0.1" + r),
        st.text(string.printable.strip(), max_size=40).map(lambda t: "/" + t),
        st.integers(1000, 70_000).map(lambda n: "/" + "a" * n),  # past 65,536: 414
        st.sampled_from(["*", "", "/", "screenshot", "/\x7f", "/é", "/\xa0x", "/a\tb"]),
    )


_HEADER_NAME = st.text(string.ascii_letters + string.digits + "-_!#$%&'*+.^`|~", min_size=1)
_HEADER_VALUE = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=40
)


def extra_headers() -> st.SearchStrategy[list[tuple[str, str]]]:
    """Headers beyond the ones a request needs: random, special, duplicated, malformed."""
    special = st.sampled_from(
        [
            ("Expect", "100-continue"),
            ("Expect", "nonsense"),
            ("Connection", "keep-alive"),
            ("Connection", "close, Upgrade"),
            ("Transfer-Encoding", "chunked"),
            ("Transfer-Encoding", "gzip"),
            ("Host", ""),
            ("Host", "a b"),
            ("Content-Encoding", "gzip"),
            ("Content-Type", "multipart/form-data"),
            ("Content-Type", "application/json; charset=latin-1"),
            ("Content-Type", "text/plain"),
            ("Content-Type", ";;;"),
            ("Accept", "*/*"),
            ("X-Long", "v" * 70_000),  # a header line past http.client's limit: 431
            ("No-Colon-Here\r\nX", "y"),  # a line without a colon
            (" Folded", "continuation"),
        ]
    )
    return st.lists(st.one_of(st.tuples(_HEADER_NAME, _HEADER_VALUE), special), max_size=5)


AUTH_CHOICES = ["right"] * 8 + [
    "missing",
    "wrong",
    "lower-bearer",
    "no-scheme",
    "basic",
    "padded",
    "twice-right-then-wrong",
    "twice-wrong-then-right",
]


def authorization(choice: str, token: str | None) -> list[tuple[str, str]]:
    """The Authorization header(s) for an ``AUTH_CHOICES`` entry."""
    right = f"Bearer {token or ''}"
    return {
        "right": [("Authorization", right)],
        "missing": [],
        "wrong": [("Authorization", "Bearer wrong-token")],
        "lower-bearer": [("Authorization", f"bearer {token or ''}")],
        "no-scheme": [("Authorization", token or "")],
        "basic": [("Authorization", "Basic dXNlcjpwYXNz")],
        "padded": [("Authorization", right + " ")],
        "twice-right-then-wrong": [("Authorization", right), ("Authorization", "Bearer x")],
        "twice-wrong-then-right": [("Authorization", "Bearer x"), ("Authorization", right)],
    }[choice]


LENGTH_CHOICES = ["exact"] * 10 + [
    "missing",
    "short",
    "long",
    "garbage",
    "negative",
    "huge",
    "twice",
    "chunked",
]


def content_length(choice: str, body: bytes, garbage: str) -> tuple[list[tuple[str, str]], bytes]:
    """Length header(s) for a ``LENGTH_CHOICES`` entry, and the body bytes then sent."""
    size = len(body)
    if choice == "exact":
        return [("Content-Length", str(size))], body
    if choice == "missing":
        return [], body  # the body is read as the next request
    if choice == "short":
        return [("Content-Length", str(max(size - 3, 0)))], body
    if choice == "long":
        return [("Content-Length", str(size + 17))], body  # the guest meets the stream's end
    if choice == "garbage":
        return [("Content-Length", garbage)], body
    if choice == "negative":
        return [("Content-Length", "-1")], body
    if choice == "huge":
        return [("Content-Length", str(1 << 40))], b""  # past every cap: 413, body unsent
    if choice == "twice":
        return [("Content-Length", str(size)), ("Content-Length", str(size + 1))], body
    chunked = f"{size:x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    return [("Transfer-Encoding", "chunked")], chunked


GARBAGE_LENGTHS = ["abc", "", " 3", "+3", "1e3", "0x10", "3, 3", "99999999999999999999", "٣"]


# --- the oracle ------------------------------------------------------------------------------

# Answers >= 500 that are not server faults, each with why. Anything else >= 500 fails.
#
# Protocol level (http.server, in GuestRequestHandler): 501 for a method with no handler
# (RFC 9110 says 501 for an unrecognised method; HEAD and OPTIONS have handlers), 505 for
# HTTP/2 and later on this HTTP/1.1 server.
#
# Route level, kept for OSWorld compatibility (its server answers 500 for these, and host
# code such as task setup reads a 5xx from them as "the step failed in the desktop"): a
# command whose program is missing or cannot start, a launch of a program that is not
# installed (with ``missing_command``), a verification that timed out, open_file whose window
# did not appear within the (fuzzed, tiny) timeout.
_ROUTE_500S: dict[str, Callable[[dict[str, Any]], bool]] = {
    "/execute": lambda p: p.get("message", "").startswith("could not run command"),
    "/execute_with_verification": lambda p: (
        p.get("status") == "verification_failed"
        or p.get("message", "").startswith("could not run command")
    ),
    "/setup/launch": lambda p: (
        "missing_command" in p or p.get("message", "").startswith("could not launch")
    ),
    "/setup/open_file": lambda p: bool(
        re.match(r"no window for .* appeared", p.get("message", ""))
    ),
}
_ROUTE_500S["/setup/execute"] = _ROUTE_500S["/execute"]
_ROUTE_500S["/setup/execute_with_verification"] = _ROUTE_500S["/execute_with_verification"]


def has_version(words: list[str]) -> bool:
    """Whether ``http.server`` takes an HTTP/1.x version from this request line.

    When it does not (one or two words, HTTP/0.9, a malformed version, HTTP/2 and later), it
    answers the way HTTP/0.9 would: the body alone, no status line and no headers.
    """
    if len(words) < 3 or words[-1] == "HTTP/0.9":
        return False
    found = re.fullmatch(r"HTTP/([0-9]{1,10})\.([0-9]{1,10})", words[-1])
    return found is not None and int(found.group(1)) < 2


def problems(request: RawRequest, answers: list[Answer], reset: bool = False) -> list[str]:
    """What is wrong with the guest's answers to ``request`` (empty when nothing is).

    No answer at all is what ``http.server`` gives a blank request line (it closes) and a
    HEAD without an HTTP/1.x version (no head, see ``has_version()``, and no body for HEAD);
    it may also be where the connection was reset (the answer is lost with the unread bytes).
    """
    found = []
    words = request.words()
    headless_head = bool(words) and words[0] == "HEAD" and not has_version(words)
    if not answers and words and not reset and not headless_head:
        found.append("no answer")
    for index, answer in enumerate(answers):
        payload = answer.payload()
        message = str(payload.get("message", ""))
        if "internal error" in message or b"internal error" in answer.body:
            found.append(f"answer {index}: unhandled exception: {answer.body[:300]!r}")
        if answer.status is None or answer.status < 500:
            continue
        if answer.status == 501 and (
            message.startswith("Unsupported method") and words[0] not in HANDLED_METHODS
        ):
            continue
        if answer.status == 505 and message.startswith("Invalid HTTP version"):
            continue
        if answer.status == 505 and index == 0 and words[0] == "HEAD" and not answer.body:
            # The guest refuses the version before it reads the method, so its 505 carries the
            # JSON message; a client that sent HEAD (as http.client here) skips any body.
            continue
        allowed = _ROUTE_500S.get(request.path) if index == 0 else None
        if answer.status == 500 and allowed is not None and allowed(payload):
            continue
        found.append(f"answer {index}: status {answer.status}: {answer.body[:300]!r}")
    return found


def read_answers(request: RawRequest, data: bytes) -> list[Answer]:
    """The guest's answers to ``request`` (see ``parse_answers()``).

    Raises:
        http.client.HTTPException: the answer is not well-formed HTTP.
    """
    words = request.words()
    return parse_answers(data, words[0] if words else None, not has_version(words))
