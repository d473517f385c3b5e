"""Fuzz a live guest with hypothesis-generated HTTP requests (issue 18).

Three generators drive one sandboxed desktop's guest over raw sockets:

- route bodies: every route with the right method and token, and JSON, form, query or junk
  bodies whose fields have random shapes and types;
- the protocol: methods, targets (percent-encoded, very long, absolute), versions, missing,
  wrong or doubled tokens, lying or malformed ``Content-Length``, odd and duplicate headers,
  pipelined trailers;
- multipart uploads: random parts, boundaries, file names (path traversal included).

Each answer must be well-formed HTTP with a status below 500 (the few 5xx that are not server
faults are listed, with why, in ``guest_fuzz_support``), no answer may report an unhandled
exception, and the guest must answer a cheap request after every example. After each run the
guest's threads return to what they were, nothing appears in a host folder the traversal
attempts aim at, and the guest logged no unhandled error. What the generators may run and
write is described in ``guest_fuzz_support`` (harmless commands, throwaway folders).

Runs are derandomized (the same examples every time, so CI failures reproduce); the ``slow``
tests run ten times as many.
"""

from __future__ import annotations

import collections.abc
import http.client
import io
import json
import os
import stat
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs
from guest_fuzz_support import (
    ANY_JSON,
    AUTH_CHOICES,
    GARBAGE_LENGTHS,
    HANDLED_METHODS,
    LENGTH_CHOICES,
    OPEN_TRUE,
    OTHER_METHODS,
    VALID_BODIES,
    Places,
    RawRequest,
    authorization,
    content_length,
    encode_json,
    exchange,
    extra_headers,
    json_bodies,
    multipart_bodies,
    problems,
    read_answers,
    route_fields,
    targets,
    varied_bodies,
    weighted,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from urllib3 import encode_multipart_formdata

from osworld_gym.guest.server import build_routes
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop


# Routes the generators leave out: a recording runs ffmpeg until stopped (CPU for the rest
# of the run); it is fuzzed only with methods it does not take.
NOT_FUZZED = frozenset({"/start_recording"})
FUZZED_ROUTES = sorted(set(build_routes()) - NOT_FUZZED)
ESCAPE_DIR = Path(__file__).resolve().parent  # host folder the sandbox shows read-only
# What a write there answers: the host is read-only to the desktop, and so is the empty folder
# that hides the driver's (the checkout, when the tests run from it).
_OUTSIDE_WRITE = b"Read-only file system"

FUZZ = settings(
    deadline=None,
    derandomize=True,  # the same examples every run: a CI failure reproduces locally
    database=None,
    print_blob=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
ROUTE_EXAMPLES = 40  # per route
FIELDLESS_ROUTE_EXAMPLES = 10  # per route that reads no field (the body is ignored)
PROTOCOL_EXAMPLES = 300
MULTIPART_EXAMPLES = 150


@dataclass
class Guest:
    """The fuzzed guest: where it listens, its process, its threads at rest, its routes."""

    desktop: LocalDesktop
    port: int
    token: str | None
    pid: int
    threads_at_rest: int
    routes: dict[str, tuple[str, ...]]  # path -> methods
    places: Places
    log_seen: int = 0  # bytes of the guest's log already checked

    def threads(self) -> int:
        """Threads of the guest process now."""
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def auth(self) -> list[tuple[str, str]]:
        """The right Authorization header."""
        return [("Authorization", f"Bearer {self.token}")] if self.token else []


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
@needs("desktop")
def guest() -> collections.abc.Iterator[Guest]:
    with launch_desktop(sandbox=True) as desktop:
        client = desktop.client
        client.execute(["mkdir", "-p", "~/fuzz/d", "~/fuzz/w", "/tmp/fuzz"])
        client.execute(["mkfifo", "~/fuzz/fifo"])
        client.upload("~/fuzz/a.txt", b"hello\n")
        client.upload("~/fuzz/image.png", _png())
        client.upload("~/fuzz/empty", b"")
        routes = {path: tuple(sorted(methods)) for path, methods in build_routes().items()}
        port = urllib.parse.urlsplit(desktop.endpoint).port
        assert port is not None
        fuzzed = Guest(
            desktop=desktop,
            port=port,
            token=desktop.token,
            pid=desktop.component_pid("guest"),
            threads_at_rest=0,
            routes=routes,
            places=Places(escape_dir=str(ESCAPE_DIR)),
        )
        _assert_alive(fuzzed)
        fuzzed.threads_at_rest = fuzzed.threads()
        yield fuzzed


def _assert_alive(guest: Guest) -> None:
    """The guest (the same process) answers a cheap request that touches its X connection."""
    request = RawRequest(
        "POST",
        "/screen_size",
        "HTTP/1.1",
        (*guest.auth(), ("Content-Length", "0"), ("Connection", "close")),
    )
    answers = read_answers(request, exchange(guest.port, request.encode(), timeout=15).data)
    assert [a.status for a in answers] == [200], answers
    assert guest.desktop.component_pid("guest") == guest.pid


def _check(guest: Guest, request: RawRequest) -> None:
    """Send one request; its answers must be well-formed and fault-free; the guest lives."""
    reply = exchange(guest.port, request.encode())
    try:
        answers = read_answers(request, reply.data)
    except http.client.HTTPException as e:
        pytest.fail(f"malformed answer ({e!r}) to {request!r}: {reply.data[:300]!r}")
    found = problems(request, answers, reply.reset)
    assert not found, found
    _assert_alive(guest)


def _assert_settled(guest: Guest) -> None:
    """After a run: threads back to rest, no escaped file, no unhandled error logged."""
    wait_until(
        lambda: guest.threads() <= guest.threads_at_rest,
        timeout=30,
        message=f"the guest's threads to return to {guest.threads_at_rest}",
    )
    escaped = sorted(str(p) for p in ESCAPE_DIR.rglob("fuzz-escape*"))
    assert not escaped, escaped
    assert not Path("/tmp/fuzz").exists(), "a write to the desktop's /tmp reached the host's"
    with open(guest.desktop.log_dir / "guest.log", "rb") as f:
        f.seek(guest.log_seen)  # what earlier runs logged was checked by them
        log = f.read().decode(errors="replace")
        guest.log_seen = f.tell()
    assert "unhandled error" not in log, log[-3000:]


# --- route bodies ----------------------------------------------------------------------------

BODY_KINDS = ["json"] * 10 + ["form", "query", "not-an-object", "bytes", "empty", "bad-type"]


@st.composite
def route_requests(draw: st.DrawFn, guest: Guest, path: str) -> RawRequest:
    """A request to ``path`` with its own method and the right token, a body of any shape."""
    method = draw(st.sampled_from(guest.routes[path]))
    fields = route_fields(guest.places)[path]
    # A GET route's fields are query options.
    kind = draw(st.sampled_from(["query"] * 3 + BODY_KINDS if method == "GET" else BODY_KINDS))
    ctype, target = "application/json", path
    if kind in ("json", "bad-type"):
        varied = varied_bodies(VALID_BODIES.get(path, {}), fields)
        bodies = weighted((3, varied), (1, json_bodies(fields)))
        if path == "/setup/open_file":
            bodies = st.one_of(bodies, OPEN_TRUE)
        body = encode_json(draw(bodies))
        if kind == "bad-type":
            ctype = draw(st.sampled_from(["text/plain", "", "application/JSON", "json"]))
    elif kind in ("form", "query"):
        values = draw(json_bodies(fields))
        pairs = {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
        encoded = urllib.parse.urlencode(pairs, errors="surrogatepass")
        body = encoded.encode() if kind == "form" else b""
        ctype = "application/x-www-form-urlencoded"
        if kind == "query":
            target = f"{path}?{encoded}"
    elif kind == "not-an-object":
        body = encode_json(draw(ANY_JSON.filter(lambda v: not isinstance(v, dict))))
    elif kind == "bytes":
        body = draw(st.binary(max_size=64))
    else:
        body = b""
    headers = (
        *guest.auth(),
        ("Content-Type", ctype),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    )
    return RawRequest(method, target, "HTTP/1.1", headers, body)


def _fuzz_route(guest: Guest, path: str, examples: int) -> None:
    @settings(FUZZ, max_examples=examples)
    @given(request=route_requests(guest, path))
    def run(request: RawRequest) -> None:
        _check(guest, request)

    run()
    _assert_settled(guest)


def test_every_route_has_field_generators(guest: Guest) -> None:
    # A new route must be added to route_fields, or it would be fuzzed with empty bodies only.
    assert set(guest.routes) == set(route_fields(guest.places))


@pytest.mark.parametrize("path", sorted(VALID_BODIES))
def test_valid_bodies_are_accepted(guest: Guest, path: str) -> None:
    # The bodies the route fuzz varies must reach the route's work, not stop at a 400.
    status, payload = _post(guest, path, VALID_BODIES[path])
    assert status in (200, 404), (status, payload)


@pytest.mark.parametrize("path", FUZZED_ROUTES)
def test_route_bodies(guest: Guest, path: str) -> None:
    fields = route_fields(guest.places)[path]
    _fuzz_route(guest, path, ROUTE_EXAMPLES if fields else FIELDLESS_ROUTE_EXAMPLES)


# --- the protocol ----------------------------------------------------------------------------


@st.composite
def protocol_requests(draw: st.DrawFn, guest: Guest) -> RawRequest:
    """Anything on the request line and in the headers; bodies of any route's shape."""
    target = draw(targets(FUZZED_ROUTES))
    own = guest.routes.get(urllib.parse.urlsplit(target).path, ("GET", "POST"))
    method = draw(
        weighted(
            (4, st.sampled_from(own)),
            (1, st.sampled_from(HANDLED_METHODS)),
            (1, st.sampled_from(OTHER_METHODS)),
        )
    )
    version = draw(
        st.sampled_from(
            ["HTTP/1.1"] * 6 + ["HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1.1", "HTTX/1.1", ""]
        )
    )
    fields = route_fields(guest.places).get(urllib.parse.urlsplit(target).path, {})
    body = draw(
        st.one_of(
            json_bodies(fields).map(encode_json),
            st.binary(max_size=128),
            st.just(b""),
            st.just(b'{"padding": "' + b"a" * (2 << 20) + b'"}'),  # large, within the cap
        )
    )
    length_headers, sent = content_length(
        draw(st.sampled_from(LENGTH_CHOICES)), body, draw(st.sampled_from(GARBAGE_LENGTHS))
    )
    headers = [
        *authorization(draw(st.sampled_from(AUTH_CHOICES)), guest.token),
        *length_headers,
        *draw(extra_headers()),
    ]
    if draw(st.sampled_from([False] * 19 + [True])):
        headers += [(f"X-Many-{i}", "v") for i in range(101)]  # past http.client's 100: 431
    headers = draw(st.permutations(headers))
    pipelined = RawRequest("GET", "/platform", "HTTP/1.1", tuple(guest.auth())).encode()
    trailer = draw(st.sampled_from([b""] * 6 + [pipelined, b"\r\n", b"\x00\xff garbage\r\n\r\n"]))
    return RawRequest(method, target, version, tuple(headers), sent, trailer)


def test_protocol(guest: Guest) -> None:
    _fuzz_protocol(guest, PROTOCOL_EXAMPLES)


def _fuzz_protocol(guest: Guest, examples: int) -> None:
    @settings(FUZZ, max_examples=examples)
    @given(request=protocol_requests(guest))
    def run(request: RawRequest) -> None:
        _check(guest, request)

    run()
    _assert_settled(guest)


# --- multipart uploads -----------------------------------------------------------------------


@st.composite
def upload_requests(draw: st.DrawFn, guest: Guest) -> RawRequest:
    """A multipart body (often malformed) for /setup/upload, now and then for /file."""
    ctype, body = draw(multipart_bodies(guest.places))
    path = draw(st.sampled_from(["/setup/upload"] * 5 + ["/file"]))
    headers = (
        *guest.auth(),
        ("Content-Type", ctype),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    )
    return RawRequest("POST", path, "HTTP/1.1", headers, body)


def test_multipart_uploads(guest: Guest) -> None:
    _fuzz_uploads(guest, MULTIPART_EXAMPLES)


def _fuzz_uploads(guest: Guest, examples: int) -> None:
    @settings(FUZZ, max_examples=examples)
    @given(request=upload_requests(guest))
    def run(request: RawRequest) -> None:
        _check(guest, request)

    run()
    _assert_settled(guest)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("path", FUZZED_ROUTES)
def test_route_bodies_long(guest: Guest, path: str) -> None:
    fields = route_fields(guest.places)[path]
    _fuzz_route(guest, path, 10 * (ROUTE_EXAMPLES if fields else FIELDLESS_ROUTE_EXAMPLES))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_protocol_long(guest: Guest) -> None:
    _fuzz_protocol(guest, 10 * PROTOCOL_EXAMPLES)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_multipart_uploads_long(guest: Guest) -> None:
    _fuzz_uploads(guest, 10 * MULTIPART_EXAMPLES)


# --- regressions: what the fuzz found --------------------------------------------------------


def _post(guest: Guest, path: str, body: Any) -> tuple[int | None, dict[str, Any]]:
    data = encode_json(body)
    headers = (
        *guest.auth(),
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(data))),
        ("Connection", "close"),
    )
    request = RawRequest("POST", path, "HTTP/1.1", headers, data)
    answers = read_answers(request, exchange(guest.port, request.encode()).data)
    assert len(answers) == 1, answers
    return answers[0].status, answers[0].payload()


# Each case answered 500 (or worse) before; expected status, and words of the message.
REFUSED: list[tuple[str, dict[str, Any], int, str]] = [
    ("/execute", {"command": ["echo", "\x00"]}, 400, "NUL"),
    ("/execute", {"command": "echo \x00", "shell": True}, 400, "NUL"),
    ("/execute", {"command": ["echo", "\ud800"]}, 400, "not valid text"),
    ("/setup/launch", {"command": "\x00", "shell": True}, 400, "NUL"),
    ("/run_python", {"code": "\ud800"}, 400, "not valid text"),
    ("/run_bash_script", {"script": "echo \ud800"}, 400, "not valid text"),
    ("/run_bash_script", {"script": "true", "working_dir": ["~"]}, 400, "must be a string"),
    (
        "/setup/execute_with_verification",
        {"command": "true", "verification": {"command_success": ["touch", "x"]}},
        400,
        "must be a string",
    ),
    (
        "/setup/execute_with_verification",
        {"command": "true", "verification": {"command_success": "true\x00"}},
        400,
        "NUL",
    ),
    ("/file", {"file_path": "~/fuzz/" + "n" * 300}, 400, "longer than 255"),
    ("/list_directory", {"path": "~/" + "d/" * 2100}, 400, "longer than 4095"),
    ("/setup/change_wallpaper", {"path": "~/fuzz/a.txt"}, 400, "feh failed"),
    ("/setup/open_file", {"path": "~/fuzz/\x00", "timeout": 0}, 400, "NUL"),
    ("/file", {"file_path": "/proc/self/mem"}, 400, "could not read"),
    # The guest's own pagemap is closed to it (the guest is not dumpable); another process's
    # is the file far over the limit (test_a_file_far_over_the_limit_is_refused).
    ("/file", {"file_path": "/proc/self/pagemap"}, 400, "could not read"),
    ("/setup/download_file", {"url": "nourl", "path": "~/fuzz/w/x"}, 400, "url must be"),
    ("/setup/download_file", {"url": "http://[::1", "path": "~/fuzz/w/x"}, 400, "not a valid"),
    ("/setup/download_file", {"url": "http:///x", "path": "~/fuzz/w/x"}, 400, "no host"),
    (
        "/setup/download_file",
        {"url": "file:///home/user/fuzz/a.txt", "path": f"{ESCAPE_DIR}/fuzz-escape"},
        400,
        _OUTSIDE_WRITE.decode(),
    ),
    ("/setup/download_file", {"url": "file:///x", "path": "~/fuzz/fifo"}, 400, "special file"),
]


@pytest.mark.parametrize(("path", "body", "status", "words"), REFUSED)
def test_refused_with_a_clear_400(
    guest: Guest, path: str, body: dict[str, Any], status: int, words: str
) -> None:
    answer, payload = _post(guest, path, body)
    assert answer == status, payload
    assert words in payload["message"], payload


def test_a_file_far_over_the_limit_is_refused(guest: Guest) -> None:
    """A special file that reports no size and holds gigabytes: a program's page map."""
    client = guest.desktop.client
    client.launch(["sleep", "600"])
    pid = wait_until(
        lambda: client.execute("pgrep -n -x sleep", shell=True).output.strip(),
        message="the sleeper",
    )
    try:
        answer, payload = _post(guest, "/file", {"file_path": f"/proc/{pid}/pagemap"})
        assert answer == 413, payload
        assert "holds more than" in payload["message"], payload
    finally:
        client.execute(["kill", str(pid)])


def test_a_bad_download_is_refused_before_any_retry(guest: Guest) -> None:
    # It used to try three times, sleeping 1, 2 and 4 s, before answering 500.
    started = time.monotonic()
    status, _ = _post(guest, "/setup/download_file", {"url": "gopher://x/", "path": "~/fuzz/w/x"})
    assert status == 400
    assert time.monotonic() - started < 3.0


def _upload(guest: Guest, target: str) -> tuple[int | None, bytes]:
    body, ctype = encode_multipart_formdata({"file_path": target, "file_data": ("f", b"data")})
    headers = (
        *guest.auth(),
        ("Content-Type", ctype),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    )
    request = RawRequest("POST", "/setup/upload", "HTTP/1.1", headers, body)
    answers = read_answers(request, exchange(guest.port, request.encode()).data)
    assert len(answers) == 1, answers
    return answers[0].status, answers[0].body


@pytest.mark.parametrize(
    ("target", "words"),
    [
        # The sandbox shows the host read-only: this used to be an unhandled 500.
        (f"{ESCAPE_DIR}/fuzz-escape", _OUTSIDE_WRITE),
        (f"~/../..{ESCAPE_DIR}/fuzz-escape", _OUTSIDE_WRITE),
        ("~", b"names a folder"),
        ("~/fuzz/\x00", b"NUL"),
        ("~/fuzz/" + "n" * 256, b"longer than 255"),
        # A FIFO (as /dev/null, a device) was replaced by a plain file: the host's /dev/null
        # once, through the sandbox's /dev. Now special files are refused.
        ("~/fuzz/fifo", b"special file"),
    ],
)
def test_upload_to_a_bad_target_is_a_400(guest: Guest, target: str, words: bytes) -> None:
    status, body = _upload(guest, target)
    assert status == 400, body
    assert words in body
    assert not list(ESCAPE_DIR.glob("fuzz-escape*"))
    assert stat.S_ISFIFO((guest.desktop.home / "fuzz" / "fifo").stat().st_mode)


def test_file_answers_the_length_it_sends_for_sys_files(guest: Guest) -> None:
    # /sys files report 4,096 bytes and hold fewer: the answer was cut short.
    target = "/sys/devices/system/cpu/online"
    if not Path(target).exists():
        pytest.skip(f"{target} does not exist here")
    data = encode_json({"file_path": target})
    headers = (
        *guest.auth(),
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(data))),
        ("Connection", "close"),
    )
    request = RawRequest("POST", "/file", "HTTP/1.1", headers, data)
    answers = read_answers(request, exchange(guest.port, request.encode()).data)
    assert [a.status for a in answers] == [200]
    assert answers[0].body == Path(target).read_bytes()


def test_launch_echoes_undecodable_arguments(guest: Guest) -> None:
    # The text answer repeats the command: a lone surrogate (an undecodable byte) made it 500.
    status, _ = _post(guest, "/setup/launch", {"command": ["true", "\udcff"]})
    assert status == 200
