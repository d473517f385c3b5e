"""Malformed numeric and typed fields get 400 from a live guest, run nothing, and end.

NaN, infinities, ``null``, lists, objects and booleans where a number belongs; an action
``kind`` that is a list or an object; a JSON body nested deeper than the parser's recursion
limit. Each used to answer 500 or, for NaN deadlines, loop forever.
"""

from __future__ import annotations

import collections.abc
import os

import pytest
import requests
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop

BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "null", "[1]", '{"s": 1}', "true", '"soon"']


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop() as launched:
        yield launched


def _post(desktop: LocalDesktop, path: str, body: str) -> requests.Response:
    """A raw JSON body on a fresh connection (no keep-alive thread left in the guest)."""
    headers = {"Content-Type": "application/json", "Connection": "close"}
    if desktop.token:
        headers["Authorization"] = f"Bearer {desktop.token}"
    return requests.post(desktop.endpoint + path, data=body, headers=headers, timeout=30)


def _threads(desktop: LocalDesktop) -> int:
    return len(os.listdir(f"/proc/{desktop.component_pid('guest')}/task"))


def _marker_absent(desktop: LocalDesktop, name: str) -> bool:
    return not (desktop.home / name).exists()


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_bad_numbers_are_refused_and_nothing_runs(desktop: LocalDesktop, value: str) -> None:
    threads = _threads(desktop)
    touch = '["sh", "-c", "touch ~/ran.txt"]'
    cases = [
        ("/setup/open_file", f'{{"path": "~/Desktop", "timeout": {value}}}'),
        (
            "/setup/execute_with_verification",
            f'{{"command": {touch}, "verification": {{"command_success": "true"}}, '
            f'"max_wait_time": {value}}}',
        ),
        (
            "/setup/execute_with_verification",
            f'{{"command": {touch}, "verification": {{"command_success": "true"}}, '
            f'"check_interval": {value}}}',
        ),
        ("/run_bash_script", f'{{"script": "touch ~/ran.txt", "timeout": {value}}}'),
    ]
    for path, body in cases:
        answer = _post(desktop, path, body)
        assert answer.status_code == 400, (path, body, answer.status_code, answer.text)
        assert "must be" in answer.json()["message"]
    assert _marker_absent(desktop, "ran.txt")
    wait_until(lambda: _threads(desktop) <= threads, message="the request threads to end")


def test_bad_screenshot_settle_options_are_refused(desktop: LocalDesktop) -> None:
    headers = {"Authorization": f"Bearer {desktop.token}"} if desktop.token else {}
    for option in ("settle_timeout", "settle_quiet", "settle_interval"):
        for value in ("nan", "inf", "soon"):
            answer = requests.get(
                f"{desktop.endpoint}/screenshot?settle=1&{option}={value}",
                headers=headers,
                timeout=30,
            )
            assert answer.status_code == 400, (option, value, answer.text)


@pytest.mark.parametrize("kind", ['["click"]', '{"k": "click"}', "7", "null"])
def test_an_action_kind_that_is_no_string_is_refused(desktop: LocalDesktop, kind: str) -> None:
    answer = _post(desktop, "/actions", f'{{"actions": [{{"kind": {kind}, "x": 1, "y": 1}}]}}')
    assert answer.status_code == 400, answer.text


def test_json_nested_too_deeply_is_refused_and_the_guest_lives(desktop: LocalDesktop) -> None:
    depth = 100_000
    answer = _post(desktop, "/execute", '{"command": ' + "[" * depth + "]" * depth + "}")
    assert answer.status_code == 400, answer.text
    assert desktop.client.execute(["true"]).returncode == 0


def test_file_of_a_proc_file_sends_its_real_length(desktop: LocalDesktop) -> None:
    # /proc files report a size of 0 and have content: the length must be what is sent, or
    # the next request on the same connection reads the rest as its answer.
    headers = {"Authorization": f"Bearer {desktop.token}"} if desktop.token else {}
    with requests.Session() as session:
        for _ in range(2):  # the second request reuses the connection
            answer = session.post(
                desktop.endpoint + "/file",
                data={"file_path": "/proc/self/status"},
                headers=headers,
                timeout=30,
            )
            assert answer.status_code == 200
            assert int(answer.headers["Content-Length"]) == len(answer.content) > 0
            assert answer.content.startswith(b"Name:")
        assert session.post(desktop.endpoint + "/screen_size", headers=headers, timeout=30).ok
