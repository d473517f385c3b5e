"""One guest request's work is bounded: ``/actions`` limits and budget, download bounds.

The server runs in this process on a bare Xvfb (no window manager, no session), so its module
constants can be lowered for a test and its answers read directly. The limits are tiny here:
a test batch goes over them with a handful of actions.
"""

from __future__ import annotations

import collections.abc
import http.server
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from desktop_helpers import bare_display
from fixture_marks import needs

from osworld_gym.errors import ActionError, GuestHTTPError
from osworld_gym.guest import protocol, routes_files
from osworld_gym.guest.client import ActionBatchTooLargeError, GuestClient, GuestInfo
from osworld_gym.guest.context import GuestConfig
from osworld_gym.guest.protocol import ActionLimitError, ActionLimits, check_limits, count_keys
from osworld_gym.guest.server import GuestHTTPServer, parse_args, serve

LIMITS = ActionLimits(max_actions=6, max_keys=20, max_seconds=0.12)


# --- the limits themselves (no server) --------------------------------------------------------


def test_keys_are_counted_per_kind() -> None:
    batch = protocol.validate_actions(
        [
            {"kind": "type", "text": "héllo\n"},
            {"kind": "hotkey", "keys": ["ctrl", "shift", "t"]},
            {"kind": "press", "key": "down", "presses": 4},
            {"kind": "key_down", "key": "shift"},
            {"kind": "key_up", "key": "shift"},
            {"kind": "click", "x": 1, "y": 2},
            {"kind": "scroll", "dy": 5},
        ]
    )
    assert [count_keys(a) for a in batch] == [6, 3, 4, 1, 1, 0, 0]


def test_check_limits_names_the_limit() -> None:
    moves = [{"kind": "move", "x": i, "y": 0} for i in range(7)]
    with pytest.raises(ActionLimitError, match=r"7 actions.*at most 6 \(max_actions\)") as caught:
        check_limits(protocol.validate_actions(moves), LIMITS)
    assert (caught.value.limit, caught.value.maximum, caught.value.requested) == (
        "max_actions",
        6,
        7,
    )
    typed = protocol.validate_actions([{"kind": "type", "text": "x" * 21}])
    with pytest.raises(ActionLimitError, match=r"21 key presses.*\(max_keys\)"):
        check_limits(typed, LIMITS)
    check_limits(protocol.validate_actions(moves[:6]), LIMITS)  # at the limit: fine


@pytest.mark.parametrize(
    "fields",
    [
        {"max_actions": 0},
        {"max_keys": -1},
        {"max_actions": 1.5},
        {"max_actions": True},
        {"max_seconds": 0},
        {"max_seconds": float("nan")},
        {"max_seconds": float("inf")},
        {"max_seconds": "30"},
    ],
)
def test_bad_limits_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ActionLimits(**fields)


def test_limits_round_trip_through_json() -> None:
    assert ActionLimits.from_json(LIMITS.to_json()) == LIMITS
    assert ActionLimits.from_json({"max_actions": 3, "future_limit": 1}) == ActionLimits(3)
    with pytest.raises(ValueError):
        ActionLimits.from_json([1, 2])


def test_guest_options_set_the_limits() -> None:
    config = parse_args(
        [
            "--display",
            ":99",
            "--max-actions",
            "7",
            "--max-action-keys",
            "9",
            "--action-seconds",
            "2",
        ]
    )
    assert config.action_limits == ActionLimits(7, 9, 2.0)
    assert parse_args(["--display", ":99"]).action_limits == ActionLimits()
    for bad in (["--max-actions", "0"], ["--action-seconds", "nan"], ["--max-action-keys", "x"]):
        with pytest.raises(SystemExit):
            parse_args(["--display", ":99", *bad])


def test_client_refuses_an_oversized_batch_for_an_official_guest() -> None:
    """An official guest advertises nothing: the defaults apply, and nothing is sent."""
    client = GuestClient("http://127.0.0.1:9")  # nothing listens: a request would fail
    client._info = GuestInfo(extended=False)
    moves = [{"kind": "move", "x": 1, "y": 1}] * (ActionLimits().max_actions + 1)
    with pytest.raises(ActionBatchTooLargeError, match="max_actions") as caught:
        client.actions(moves)
    assert isinstance(caught.value, ActionError)  # what the env reports as an action error
    assert caught.value.limit == "max_actions"


# --- a live guest server in this process -------------------------------------------------------


@pytest.fixture(scope="module")
@needs("desktop")
def display() -> collections.abc.Iterator[str]:
    """A bare Xvfb display (chosen by Xvfb itself)."""
    with bare_display("320x240") as name:
        yield name


@pytest.fixture(scope="module")
def guest(
    display: str, tmp_path_factory: pytest.TempPathFactory
) -> collections.abc.Iterator[GuestHTTPServer]:
    config = GuestConfig(
        display=display,
        port=0,
        state_dir=str(tmp_path_factory.mktemp("guest-state")),
        action_limits=LIMITS,
    )
    server = serve(config)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=30)
        server.server_close()
        server.ctx.close()


def _url(guest: GuestHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{guest.server_address[1]}{path}"


def _post_actions(guest: GuestHTTPServer, batch: list[dict[str, Any]]) -> requests.Response:
    return requests.post(_url(guest, "/actions"), json={"actions": batch}, timeout=30)


def _cursor(guest: GuestHTTPServer) -> tuple[int, int]:
    x, y = requests.get(_url(guest, "/cursor_position"), timeout=30).json()
    return x, y


def _park(guest: GuestHTTPServer) -> None:
    """Put the pointer at (5, 5), so a test can tell whether its batch moved it."""
    answer = _post_actions(guest, [{"kind": "move", "x": 5, "y": 5}])
    assert answer.status_code == 200, answer.text
    assert _cursor(guest) == (5, 5)


@pytest.mark.desktop
def test_health_advertises_the_limits(guest: GuestHTTPServer) -> None:
    health = requests.get(_url(guest, "/health"), timeout=30).json()
    assert "actions.limits" in health["capabilities"]
    assert health["action_limits"] == {"max_actions": 6, "max_keys": 20, "max_seconds": 0.12}


@pytest.mark.desktop
def test_a_batch_over_the_count_limit_is_refused_and_runs_nothing(guest: GuestHTTPServer) -> None:
    _park(guest)
    batch = [{"kind": "move", "x": 50 + i, "y": 50} for i in range(7)]
    answer = _post_actions(guest, batch)
    assert answer.status_code == 413
    body = answer.json()
    assert body["status"] == "error" and "max_actions" in body["message"]
    assert (body["limit"], body["maximum"], body["requested"], body["executed"]) == (
        "max_actions",
        6,
        7,
        0,
    )
    assert _cursor(guest) == (5, 5)


@pytest.mark.desktop
def test_a_batch_over_the_key_limit_is_refused_and_runs_nothing(guest: GuestHTTPServer) -> None:
    _park(guest)
    batch = [{"kind": "move", "x": 60, "y": 60}, {"kind": "press", "key": "shift", "presses": 21}]
    answer = _post_actions(guest, batch)
    assert answer.status_code == 413
    assert answer.json()["limit"] == "max_keys"
    assert _cursor(guest) == (5, 5)


@pytest.mark.desktop
def test_a_huge_list_is_refused_before_it_is_validated(guest: GuestHTTPServer) -> None:
    """Counted first: 200,000 malformed actions get the limit's 413, not a 400 per action."""
    answer = _post_actions(guest, [{"kind": "nonsense"}] * 200_000)
    assert answer.status_code == 413
    assert answer.json()["requested"] == 200_000


@pytest.mark.desktop
def test_the_time_budget_stops_the_batch_between_actions(guest: GuestHTTPServer) -> None:
    """Each hotkey holds its keys 50 ms: a 0.12 s budget is spent by the third at the latest."""
    _park(guest)
    hotkeys = [{"kind": "hotkey", "keys": ["shift"]}] * 4
    batch = [{"kind": "move", "x": 20, "y": 20}, *hotkeys, {"kind": "move", "x": 90, "y": 90}]
    answer = _post_actions(guest, batch)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["limit"] == "max_seconds" and body["requested"] == 6
    assert 2 <= body["executed"] <= 4  # the move and at least one hotkey; never the last move
    assert f"after {body['executed']} of 6 actions" in body["message"]
    assert body["seconds"] >= 0.12
    assert _cursor(guest) == (20, 20)  # the first move ran, the last did not


@pytest.mark.desktop
def test_a_batch_within_the_limits_runs_whole(guest: GuestHTTPServer) -> None:
    _park(guest)
    batch = [{"kind": "move", "x": 30 + i, "y": 30} for i in range(6)]
    answer = _post_actions(guest, batch)
    assert answer.status_code == 200, answer.text
    assert answer.json()["executed"] == 6
    assert _cursor(guest) == (35, 30)


@pytest.mark.desktop
def test_client_reads_the_limits_and_refuses_what_exceeds_them(guest: GuestHTTPServer) -> None:
    client = GuestClient(f"http://127.0.0.1:{guest.server_address[1]}")
    assert client.info().action_limits == LIMITS
    _park(guest)
    with pytest.raises(ActionBatchTooLargeError, match="max_keys"):
        client.actions([{"kind": "move", "x": 70, "y": 70}, {"kind": "type", "text": "y" * 21}])
    assert _cursor(guest) == (5, 5)  # not sent
    with pytest.raises(GuestHTTPError) as caught:
        client.actions([{"kind": "hotkey", "keys": ["shift"]}] * 5)
    assert caught.value.status == 422
    assert client.actions([{"kind": "move", "x": 8, "y": 9}])["executed"] == 1
    assert _cursor(guest) == (8, 9)


# --- /setup/download_file is bounded too -------------------------------------------------------


@pytest.mark.desktop
def test_a_download_past_the_size_cap_is_refused_and_leaves_no_file(
    guest: GuestHTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_files, "MAX_DOWNLOAD_BYTES", 3 << 20)
    target = tmp_path / "zeros.bin"
    body = {"url": "file:///dev/zero", "path": str(target)}  # a source that never ends
    answer = requests.post(_url(guest, "/setup/download_file"), json=body, timeout=60)
    assert answer.status_code == 413, answer.text
    assert "more than 3145728 bytes" in answer.json()["message"]
    assert os.listdir(tmp_path) == []  # neither the file nor a partial one


@pytest.fixture()
def dripping_url() -> collections.abc.Iterator[str]:
    """A URL whose server sends one byte every 20 ms of a 100,000-byte body, until torn down."""
    stop = threading.Event()

    class Drip(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            # Paced on purpose (a slow source); ends when the test is over.
            while not stop.wait(0.02):
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/slow.bin"
    finally:
        stop.set()
        server.shutdown()
        thread.join(timeout=30)
        server.server_close()


@pytest.mark.desktop
def test_a_download_past_its_deadline_stops_and_leaves_no_file(
    guest: GuestHTTPServer, dripping_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_files, "DOWNLOAD_DEADLINE", 0.3)
    target = tmp_path / "slow.bin"
    body = {"url": dripping_url, "path": str(target)}
    answer = requests.post(_url(guest, "/setup/download_file"), json=body, timeout=60)
    assert answer.status_code == 500, answer.text
    assert "did not finish within 0.3 s" in answer.json()["message"]
    assert os.listdir(tmp_path) == []
