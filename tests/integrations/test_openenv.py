"""The OpenEnv adapter, driven through OpenEnv's own server and clients.

Without desktops: the action and observation models, the wire round trip, and a server (OpenEnv's
app in a thread) over the pool tests' fake env, for the protocol and its errors. With desktops
(marked ``trainers``): the real ``osworld-gym serve-env`` command with 2 ``local`` desktops on
``ui-basics``, two sessions at once, tool calls, the FAIL replacement and a killed desktop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from fixture_marks import needs
from PIL import Image
from pool_fakes import FakeFactory

from osworld_gym.cli import main as cli_main
from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.integrations.lease import DesktopLeases
from osworld_gym.pool import PoolConfig

pytestmark = pytest.mark.heavy  # OpenEnv's stack takes seconds to import

try:
    import uvicorn
    from openenv.core import GenericEnvClient
    from openenv.core.env_server.serialization import serialize_observation
    from pydantic import ValidationError

    from osworld_gym.integrations.openenv import (
        OSWorldAction,
        OSWorldEnvClient,
        OSWorldEnvironment,
        create_osworld_app,
        decode_screenshot,
        observation_content,
        observation_image,
    )
except (DependencyNotInstalled, ImportError):  # the tests below that need it are skipped
    HAVE_OPENENV = False
else:
    HAVE_OPENENV = True

needs_openenv = pytest.mark.skipif(
    not HAVE_OPENENV, reason="needs the openenv extra: pip install 'osworld-gym[openenv]'"
)

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 90.0


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``predicate`` until it is true; fail the test at the deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


# --- models and the wire, no server ------------------------------------------------------------


@needs_openenv
def test_an_action_is_text_or_one_tool_call() -> None:
    assert OSWorldAction(text="Action: wait()").text == "Action: wait()"
    call = OSWorldAction.tool_call("click", '{"x": 3, "y": 4}')
    assert (call.tool, call.arguments) == ("click", '{"x": 3, "y": 4}')
    for bad in ({}, {"text": "a", "tool": "click"}, {"text": "a", "arguments": {"x": 1}}):
        with pytest.raises(ValidationError, match="osworld_action|text|tool"):
            OSWorldAction(**bad)
    with pytest.raises(ValidationError):
        OSWorldAction(text="a", typo=1)  # OpenEnv's models forbid unknown fields


@needs_openenv
def test_observations_cross_the_wire_as_png_bytes() -> None:
    desk = DesktopLeases(FakeFactory(), 1, config=PoolConfig(screenshot_format="png"))
    env = OSWorldEnvironment(desk)
    try:
        first = env.reset(task_id="short", episode_id="ep-1")
        assert (first.task_id, first.reward, first.done) == ("short", None, False)
        assert env.state.episode_id == "ep-1" and env.state.env_id == 0
        last = env.step(OSWorldAction(text="done"))
    finally:
        env.close()
        desk.close()
    # What OpenEnv's server sends, parsed by our client: the same observation.
    client = OSWorldEnvClient(base_url="http://127.0.0.1:1")
    wire = json.loads(json.dumps(serialize_observation(last)))
    parsed = client._parse_result(wire)
    assert parsed.observation == last
    assert (parsed.reward, parsed.done, parsed.metadata["score"]) == (1.0, True, 1.0)
    png = decode_screenshot(parsed.observation)
    assert png.startswith(b"\x89PNG")
    assert observation_image(parsed.observation).size == (8, 6)  # the fake's 6 x 8 frame
    assert isinstance(parsed.observation.screenshot, str)  # base64 text, not pixel lists
    assert base64.b64decode(parsed.observation.screenshot) == png
    parts = observation_content(first, first_turn=True)
    assert [p["type"] for p in parts] == ["image_url", "text"]
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert parts[1]["text"] == "do short"
    hf = observation_content(first, first_turn=False, style="hf")
    assert [p["type"] for p in hf] == ["image"]  # no error to report after the first turn
    with pytest.raises(ValueError, match="no screenshot"):
        decode_screenshot({"screenshot": ""})


def test_without_openenv_the_module_and_the_command_name_the_extra() -> None:
    block = "import sys; sys.modules['openenv'] = None\n"
    probe = (
        f"{block}from osworld_gym.errors import DependencyNotInstalled\n"
        "try:\n    import osworld_gym.integrations.openenv\n"
        "except DependencyNotInstalled as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "pip install 'osworld-gym[openenv]'" in out.stdout
    command = f"{block}from osworld_gym.cli import main; sys.exit(main(['serve-env']))"
    done = subprocess.run(
        [sys.executable, "-c", command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2  # a missing extra: refused before the server starts
    assert "missing extra 'openenv' (openenv not installed)" in done.stderr
    assert "-m pip install 'osworld-gym[openenv]'" in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--screen-size", "big"], "--screen-size: must look like"),
        (["--tasks", "no-such-suite"], "cannot load tasks"),
        (["--num-envs", "0"], "at least 1"),
        (["--guest-url", "http://10.0.0.5:5000"], "for --provider remote"),
    ],
)
def test_serve_env_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["serve-env", *argv]) == 2
    assert message in capsys.readouterr().err


# --- OpenEnv's server over the fake env ----------------------------------------------------------


@contextlib.contextmanager
def serving(desk: DesktopLeases) -> Iterator[str]:
    """OpenEnv's app for ``desk``, served by uvicorn in a thread on a free loopback port."""
    app = create_osworld_app(desk)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_config=None))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 30, "the in-thread server")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        assert not thread.is_alive()


@pytest.fixture()
def fake_desk() -> Iterator[DesktopLeases]:
    with DesktopLeases(FakeFactory(), 2, config=PoolConfig(screenshot_format="png")) as desk:
        yield desk


@needs_openenv
def test_sessions_bad_input_and_capacity_on_a_fake_desk(fake_desk: DesktopLeases) -> None:
    async def scenario(url: str) -> None:
        async with OSWorldEnvClient(base_url=url) as a, OSWorldEnvClient(base_url=url) as b:
            with pytest.raises(RuntimeError, match="no episode is running"):
                await a.step("done")
            with pytest.raises(RuntimeError, match="unknown task id 'nope'.*short"):
                await a.reset(task_id="nope")
            with pytest.raises(RuntimeError, match=r"unknown reset option\(s\) \['taskid'\]"):
                await a.reset(taskid="short")
            with pytest.raises(RuntimeError, match="options must be an object"):
                await a.reset(task_id="short", options=[1])
            with pytest.raises(RuntimeError, match="episode_id must be a string"):
                await a.reset(task_id="short", episode_id=5)
            assert (await a.reset(task_id="short")).observation.task_id == "short"
            assert (await b.reset(task_id="long")).observation.task_id == "long"
            assert {(await a.state()).env_id, (await b.state()).env_id} == {0, 1}
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                async with OSWorldEnvClient(base_url=url) as c:
                    await c.reset()
            # A tool call the model got wrong is a no-op step with a parse error.
            bad = await b.step(OSWorldAction.tool_call("click", {"x": 1}))
            assert not bad.done and bad.observation.step == 1
            assert "missing argument(s) ['y']" in bad.observation.last_action_error
            assert bad.metadata["parse_error"] == bad.observation.last_action_error
            end = await a.step("done")
            assert (end.reward, end.done, end.metadata["score"]) == (1.0, True, 1.0)
            with pytest.raises(RuntimeError, match="no episode is running"):
                await a.step("done")
        # Raw payloads OpenEnv's generic client can send: refused, the session lives on.
        async with GenericEnvClient(base_url=url) as raw:
            await raw.reset(task_id="short")
            for payload in ({"foo": 1}, {"text": "a", "tool": "click"}, {}):
                with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                    await raw.step(payload)
            assert (await raw.step({"text": "done"})).reward == 1.0

    with serving(fake_desk) as url:
        asyncio.run(scenario(url))
        # Each closed session handed its desktop back.
        wait_until(lambda: fake_desk.available == 2, 30, "both desktops back on the desk")
        with urllib.request.urlopen(f"{url}/health", timeout=30) as answer:
            assert json.load(answer)["status"] == "healthy"


# --- the real command on real desktops -----------------------------------------------------------


@dataclass
class Server:
    """A running ``osworld-gym serve-env``."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def desktop_processes(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
@needs("desktop")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``osworld-gym serve-env`` with 2 local ui-basics desktops on a free loopback port."""
    from osworld_gym.policies.oracles.ui_basics import SUITE

    folder = tmp_path_factory.mktemp("serve-env")
    port_file, log = folder / "port", folder / "server.log"
    script = shutil.which("osworld-gym")
    assert script, "the osworld-gym console script is not installed"
    argv = [script, "serve-env", "--tasks", SUITE, "--num-envs", "2", "--port", "0"]
    with open(log, "wb") as out:
        proc = subprocess.Popen([*argv, "--port-file", str(port_file)], stdout=out, stderr=out)
    try:
        wait_until(
            lambda: port_file.exists() or proc.poll() is not None, START_TIMEOUT_S, "the port"
        )
        assert proc.poll() is None, log.read_text()
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        wait_until(lambda: _healthy(url), START_TIMEOUT_S, "/health")
        running = Server(proc, url, log)
        yield running
        desktops = running.desktop_processes()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        try:
            rc = proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            pytest.fail(f"serve-env ignored SIGTERM for {STOP_TIMEOUT_S} s:\n{log.read_text()}")
    assert rc == 0, log.read_text()
    _, alive = psutil.wait_procs(desktops, timeout=30)
    assert not alive, f"serve-env left desktop processes behind: {alive}"


def _answers(task_id: str, correct: bool) -> list[str]:
    from osworld_gym import load_tasks
    from osworld_gym.policies.oracles.ui_basics import distractor_answer, oracle_responses

    if correct:
        return oracle_responses(task_id)
    wrong = distractor_answer(load_tasks("ui-basics")[task_id])
    return oracle_responses(task_id, answer=wrong)


@needs_openenv
@pytest.mark.desktop
@pytest.mark.trainers
def test_two_sessions_at_once_score_their_own_answers(server: Server) -> None:
    async def episode(task_id: str, correct: bool) -> tuple[float | None, int, int]:
        async with OSWorldEnvClient(base_url=server.url) as env:
            result = await env.reset(task_id=task_id)
            shot = result.observation
            assert observation_image(shot).size == (336, 224)
            assert Image.open(io.BytesIO(decode_screenshot(shot))).format == "PNG"
            assert shot.instruction and shot.task_id == task_id
            for answer in _answers(task_id, correct):
                result = await env.step(answer)
                assert result.observation.task_id == task_id  # never the other session's
            state = await env.state()
            assert (state.task_id, state.done, state.step_count) == (task_id, True, 2)
            return result.reward, result.observation.step, state.env_id

    async def both() -> list[tuple[float | None, int, int]]:
        right, wrong = episode("click-colour-01", True), episode("type-word-01", False)
        return await asyncio.gather(right, wrong)

    (right, _, env_a), (wrong, _, env_b) = asyncio.run(both())
    assert (right, wrong) == (1.0, 0.0)
    assert env_a != env_b


@needs_openenv
@pytest.mark.desktop
@pytest.mark.trainers
def test_tool_calls_bad_input_and_a_third_session(server: Server) -> None:
    from osworld_gym.policies.oracles.ui_basics import task_layout

    x, y = task_layout("click-label-02").centre()
    with OSWorldEnvClient(base_url=server.url).sync() as env:
        with pytest.raises(RuntimeError, match="unknown task id 'click-label-99'"):
            env.reset(task_id="click-label-99")
        env.reset(task_id="click-label-02")
        bad = env.step(OSWorldAction.tool_call("click", {"x": x}))
        assert not bad.done and bad.metadata["parse_error"]
        assert "missing argument(s) ['y']" in bad.observation.last_action_error
        env.step(OSWorldAction.tool_call("click", {"x": x, "y": y}))
        end = env.step(OSWorldAction.tool_call("done"))
        assert (end.done, end.reward, end.metadata["score"]) == (True, 1.0, 1.0)
        with OSWorldEnvClient(base_url=server.url).sync() as other:
            other.reset(task_id="find-ok-01")
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                with OSWorldEnvClient(base_url=server.url).sync() as third:
                    third.reset(task_id="find-ok-01")
    assert _healthy(server.url)


@needs_openenv
@pytest.mark.desktop
@pytest.mark.trainers
def test_fifteen_steps_end_with_the_fail_replacement(server: Server) -> None:
    with OSWorldEnvClient(base_url=server.url).sync() as env:
        env.reset(task_id="click-colour-03")
        for step in range(1, 16):
            result = env.step("Action: wait()")
            assert result.done == (step == 15), step
    assert result.metadata["fail_replaced"] and result.metadata["step"] == 15
    assert (result.reward, result.metadata["score"]) == (0.0, 0.0)


@needs_openenv
@pytest.mark.desktop
@pytest.mark.trainers
def test_a_desktop_killed_mid_episode_ends_it_and_the_session_goes_on(server: Server) -> None:
    task_id = "click-colour-02"
    with OSWorldEnvClient(base_url=server.url).sync() as env:
        env.reset(task_id=task_id)
        assert not env.step("Action: wait()").done
        # From outside the server we cannot tell which X server is this session's; the other
        # desktop is idle and relaunches at its next reset, so kill both.
        xservers = [p for p in server.desktop_processes() if p.name() == "Xvfb"]
        assert len(xservers) == 2
        for proc in xservers:
            proc.kill()
        cut = env.step("Action: wait()")
        assert cut.done and cut.metadata["truncated"]
        assert "xvfb" in cut.metadata["infra_error"].lower()
        assert cut.reward is None  # no reward signal, not a made-up 0
        result = env.reset(task_id=task_id)
        assert not result.done and result.metadata["infra_error"] is None
        for answer in _answers(task_id, correct=True):
            result = env.step(answer)
        assert result.reward == 1.0
