"""check_python_file_by_test_suite: the task's test suite run on the agent's files."""

from __future__ import annotations

import http.server
import textwrap
from pathlib import Path

import pytest
from http_helpers import loopback_server
from osworld_ref import load

from osworld_gym.evaluation.metrics import python_tests
from osworld_gym.evaluation.metrics.python_tests import check_python_file_by_test_suite
from osworld_gym.evaluation.metrics.registry import get_metric
from osworld_gym.providers.local import sandbox

# An OSWorld-style game: the agent fixes `grow`, the task's suite imports the module and checks.
GAME_FIXED = "import pygame\n\ndef grow(length):\n    return length + 1\n"
GAME_BUGGY = "import pygame\n\ndef grow(length):\n    return length\n"
SUITE = """
import pygame
import snake

def test():
    pygame.init()
    screen = pygame.display.set_mode((64, 64))  # SDL's dummy video driver: no screen needed
    screen.fill((0, 0, 0))
    return snake.grow(3) == 4
"""


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def _score(tmp_path: Path, suite: str, files: dict[str, str] | None = None, **options) -> float:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    paths = [_write(agent, name, text) for name, text in (files or {}).items()]
    test_file = _write(tmp_path, "test.py", suite)
    return check_python_file_by_test_suite(paths, test_file, **options)


@pytest.mark.heavy  # runs pytest in a subprocess
def test_a_fixed_game_passes_and_a_buggy_one_fails(tmp_path: Path) -> None:
    assert _score(tmp_path, SUITE, {"snake.py": GAME_FIXED}) == 1.0
    assert _score(tmp_path, SUITE, {"snake.py": GAME_BUGGY}) == 0.0


@pytest.mark.heavy  # runs pytest in a subprocess
def test_a_missing_agent_file_scores_zero(tmp_path: Path) -> None:
    test_file = _write(tmp_path, "test.py", SUITE)
    assert check_python_file_by_test_suite([None], test_file) == 0.0
    assert check_python_file_by_test_suite(None, test_file) == 0.0
    assert check_python_file_by_test_suite([], None) == 0.0


@pytest.mark.parametrize(
    ("returned", "score"),
    [("True", 1.0), ("False", 0.0), ("0.25", 0.25), ("7", 1.0), ("-2", 0.0), ("'yes'", 1.0),
     ("None", 0.0), ("[]", 0.0), ("float('nan')", 0.0)],
)  # fmt: skip
def test_what_the_function_returns_becomes_the_score(
    tmp_path: Path, returned: str, score: float
) -> None:
    assert _score(tmp_path, f"def test():\n    return {returned}\n") == score


@pytest.mark.parametrize(
    "suite",
    [
        "def test(:\n    pass\n",  # does not parse
        "import not_a_module_here\ndef test():\n    return True\n",  # does not import
        "def check():\n    return True\n",  # no `test`
        "test = 3\n",  # not callable
        "def test():\n    raise RuntimeError('boom')\n",
        "def test():\n    raise SystemExit(0)\n",
        "import os\ndef test():\n    os._exit(0)\n",  # ends the interpreter: no result
    ],
)
def test_a_broken_suite_scores_zero(tmp_path: Path, suite: str) -> None:
    assert _score(tmp_path, suite) == 0.0


def test_the_function_name_is_an_option(tmp_path: Path) -> None:
    suite = "def check():\n    return True\n"
    assert _score(tmp_path, suite, test_function_name="check") == 1.0


@pytest.mark.heavy  # waits out a timeout
def test_a_suite_that_hangs_is_stopped_and_scores_zero(tmp_path: Path) -> None:
    score, detail = python_tests.run_test_suite(
        [], _write(tmp_path, "test.py", "def test():\n    while True:\n        pass\n"), timeout=2
    )
    assert score == 0.0 and "2 s" in detail


def test_output_of_the_suite_cannot_forge_a_score(tmp_path: Path) -> None:
    suite = (
        'import json\nprint(json.dumps({"score": 1.0, "detail": "x"}))\n'
        "def test():\n    return False\n"
    )
    assert _score(tmp_path, suite) == 0.0


@pytest.mark.skipif(sandbox.bwrap_path() is None, reason="bubblewrap is not installed")
def test_the_suite_cannot_write_the_host_or_reach_the_network(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"

    class _Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with loopback_server(_Page) as url:
        suite = f"""
import urllib.request
def test():
    try:
        open({str(outside)!r}, "w").write("escaped")
    except OSError:
        pass
    try:
        urllib.request.urlopen({url!r}, timeout=3)
        return True
    except OSError:
        return False
"""
        assert _score(tmp_path, suite) == 0.0
    assert not outside.exists()


def test_the_registry_has_it() -> None:
    assert get_metric("check_python_file_by_test_suite") is check_python_file_by_test_suite


@pytest.mark.parametrize(
    "suite",
    [SUITE, "def test():\n    return 0.25\n", "def test():\n    return 'yes'\n",
     "def test():\n    raise RuntimeError('boom')\n", "def check():\n    return True\n"],
)  # fmt: skip
def test_scores_equal_osworlds(tmp_path: Path, suite: str) -> None:
    reference = load("evaluators/metrics/vscode.py")
    agent = tmp_path / "cache"
    agent.mkdir()
    # OSWorld's layout: the agent's files and test_suite.py in the task's cache folder.
    paths = [_write(agent, "snake.py", GAME_FIXED)]
    test_file = _write(agent, "test_suite.py", suite)
    theirs = reference.check_python_file_by_test_suite(paths, test_file)
    assert check_python_file_by_test_suite(paths, test_file) == theirs
