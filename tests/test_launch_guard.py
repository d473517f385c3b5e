"""The marks derived from fixtures and the launch guard (``fixture_marks``, ``launch_guard``).

Planted tests run in a pytest subprocess with this suite's own conftest as a plugin: unmarked
tests that start a local desktop, a docker desktop, a Ray backend or an X server in a
subprocess must fail with a message naming the mark to add; the same starts in tests marked
for them get past the guard; a fixture's declared marks reach the tests that use it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest
from fixture_marks import can_select, needs, static_module_marks

TESTS = Path(__file__).resolve().parent
PLANTED = """
import asyncio
import subprocess

import pytest
from fixture_marks import can_select, needs, static_module_marks

from osworld_gym.pool.ray_backend import RayBackend
from osworld_gym.providers.docker.provider import DockerDesktop
from osworld_gym.providers.local.provider import LocalDesktop, LocalProviderConfig


@pytest.fixture()
@needs("docker")
def engine():
    return "engine"


@pytest.fixture()
def uses_engine(engine):
    return engine


def test_unmarked_local_desktop():
    LocalDesktop(LocalProviderConfig())


def test_unmarked_local_desktop_error_swallowed():
    try:
        LocalDesktop(LocalProviderConfig())
    except Exception:
        pass


def test_unmarked_docker_desktop():
    DockerDesktop(None)


def test_unmarked_ray_backend():
    asyncio.run(RayBackend.start(None))


def test_unmarked_xvfb_in_a_subprocess():
    subprocess.run(["Xvfb", "-help"], capture_output=True, timeout=30)


@pytest.mark.ray
def test_marked_ray_backend_gets_past_the_guard():
    with pytest.raises(AttributeError):  # RayBackend.start itself, on a None backend
        asyncio.run(RayBackend.start(None))


def test_marks_come_from_fixtures_through_other_fixtures(uses_engine, request):
    assert request.node.get_closest_marker("docker") is not None
    assert request.node.get_closest_marker("fast") is None


def test_a_plain_test_is_fast(request):
    assert request.node.get_closest_marker("fast") is not None
"""


@dataclass
class Outcome:
    """One planted test's result: ``passed``, ``failed``, ``error`` or ``skipped``, and its text."""

    result: str
    text: str


@pytest.fixture(scope="module")
@needs("heavy")  # a pytest subprocess: seconds of start-up
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Outcome], str]:
    """Each planted test's outcome (from the run's JUnit XML), and the run's output."""
    folder = tmp_path_factory.mktemp("planted")
    (folder / "test_planted.py").write_text(textwrap.dedent(PLANTED))
    report = folder / "report.xml"
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
         "-o", "addopts=", "-W", "ignore::pytest.PytestUnknownMarkWarning",
         "--rootdir", str(folder), f"--junitxml={report}", "-q", str(folder)],
        capture_output=True, text=True, timeout=300, cwd=folder, env=env,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert report.is_file(), output
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        result, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                result = child.tag if child.tag != "failure" else "failed"
                text += (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "system-out":
                text += child.text or ""
        outcomes[case.get("name", "")] = Outcome(result, text)
    return outcomes, output


@pytest.mark.parametrize(
    ("test", "mark"),
    [
        ("test_unmarked_local_desktop", "desktop"),
        ("test_unmarked_local_desktop_error_swallowed", "desktop"),
        ("test_unmarked_docker_desktop", "docker"),
        ("test_unmarked_ray_backend", "ray"),
        ("test_unmarked_xvfb_in_a_subprocess", "desktop"),
    ],
)
def test_an_unmarked_start_fails_naming_the_mark(
    planted: tuple[dict[str, Outcome], str], test: str, mark: str
) -> None:
    outcomes, output = planted
    if test.endswith("xvfb_in_a_subprocess") and shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed: nothing can start one")
    outcome = outcomes.get(test)
    assert outcome is not None and outcome.result == "failed", output
    assert f"without the `{mark}` mark" in outcome.text, outcome.text
    assert f"@pytest.mark.{mark}" in outcome.text and f'@needs("{mark}")' in outcome.text


@pytest.mark.parametrize(
    "test",
    [
        "test_marked_ray_backend_gets_past_the_guard",
        "test_marks_come_from_fixtures_through_other_fixtures",
        "test_a_plain_test_is_fast",
    ],
)
def test_what_the_marks_allow_passes(planted: tuple[dict[str, Outcome], str], test: str) -> None:
    outcomes, output = planted
    outcome = outcomes.get(test)
    assert outcome is not None and outcome.result == "passed", output


def test_needs_takes_known_marks_on_either_side_of_pytest_fixture() -> None:
    with pytest.raises(ValueError, match="needs"):
        needs("gpu")
    with pytest.raises(ValueError, match="needs"):
        needs()

    def below() -> None: ...

    def above() -> None: ...

    fixture_below = pytest.fixture(needs("desktop")(below))
    fixture_above = needs("ray", "desktop")(pytest.fixture(above))
    assert fixture_below is not None and fixture_above is not None
    assert below.__osworld_gym_test_marks__ == ("desktop",)  # type: ignore[attr-defined]
    assert above.__osworld_gym_test_marks__ == ("ray", "desktop")  # type: ignore[attr-defined]


DEFAULT = "not slow and not osworld_tasks and not parity and not trainers and not release"


@pytest.mark.parametrize(
    ("expression", "marks", "selectable"),
    [
        ("fast", {"heavy"}, False),
        ("fast", {"skipif"}, True),
        ("not fast", {"skipif"}, True),
        (DEFAULT, {"parity"}, False),
        (DEFAULT, {"desktop", "apps"}, True),
        ("desktop and not apps", {"apps"}, False),
        ("heavy or (docker and not slow)", {"slow"}, True),  # heavy may come from a fixture
        ("docker", {"desktop"}, True),
        ("mark(x=1)", {"desktop"}, True),  # keyword arguments: not analysed
        ("not (", {"desktop"}, True),  # bad syntax: pytest reports it
    ],
)
def test_can_select_is_exact_for_plain_expressions(
    expression: str, marks: set[str], selectable: bool
) -> None:
    assert can_select(expression, marks) is selectable


def test_static_module_marks_read_the_written_out_pytestmark(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text(
        "import pytest\n"
        "pytestmark = [pytest.mark.desktop, pytest.mark.skipif(True, reason='r'), *EXTRA,\n"
        "              pytest.mark.timeout(10)]\n"
    )
    assert static_module_marks(module) == {"desktop", "skipif", "timeout"}
    other = tmp_path / "test_y.py"
    other.write_text("import pytest\nMARKS = pytest.mark.heavy\npytestmark = MARKS\n")
    assert static_module_marks(other) == frozenset()
    broken = tmp_path / "test_z.py"
    broken.write_text("pytestmark = (\n")
    assert static_module_marks(broken) == frozenset()
