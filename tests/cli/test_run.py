"""`osworld-gym run` as a user runs it, on real `local` desktops: the oracle over the bundled suite
on 4 envs, a kill halfway and a rerun that runs only what is left, the step-limit modes, and the
random, module:callable and OpenAI-endpoint agents."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import OracleRun, count_result_files, osworld_gym, start_osworld_gym, wait_for

from osworld_gym import load_tasks
from osworld_gym.providers.desktop import gnome_session

pytestmark = [pytest.mark.desktop]
SUITE = load_tasks("desktop-basics")


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.battery
@pytest.mark.apps
def test_oracle_over_the_bundled_suite_on_4_envs(oracle_run: OracleRun) -> None:
    done = oracle_run.done
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"full oracle run: {len(SUITE)} tasks on 4 envs in {oracle_run.seconds:.0f} s")
    assert "100.0%" in done.stdout.splitlines()[-2], done.stdout  # the table's "all" row
    summary = _summary(oracle_run.run_dir)
    assert summary["overall"]["scored"] == len(SUITE)
    assert summary["overall"]["success_rate"] == 1.0
    assert summary["invocation"]["episodes_run"] == len(SUITE)
    assert set(summary["domains"]) == set(SUITE.domains)
    settings = summary["settings"]
    assert settings["mode"] == "standard" and settings["max_steps"] == 15
    assert settings["provider"] == "local" and settings["agent"] == "oracle"
    for key in ("history_images", "temperature", "image", "package_version", "screen_size"):
        assert key in settings
    # OSWorld's layout: <result_dir>/<action_space>/<observation_type>/<model>/<domain>/<task_id>/
    for task in SUITE:
        task_dir = oracle_run.result_dir / "structured/screenshot/oracle" / task.domain / task.id
        assert (task_dir / "result.txt").read_text() == "1.0\n"
        lines = (task_dir / "traj.jsonl").read_text().splitlines()
        steps = [json.loads(line) for line in lines]
        assert [s["step_num"] for s in steps] == list(range(1, len(steps) + 1))
        for step in steps:
            for key in ("action_timestamp", "action", "response", "reward", "done", "info"):
                assert key in step
            shot = task_dir / step["screenshot_file"]
            assert shot.name.startswith(f"step_{step['step_num']}_") and shot.is_file()
            assert shot.read_bytes()[:4] == b"\x89PNG"
        assert steps[-1]["done"] and steps[-1]["reward"] == 1.0
        assert len(list(task_dir.glob("step_*.png"))) == len(steps) + 1  # + the reset's screen


def test_oracle_over_ui_basics(tmp_path: Path) -> None:
    # The other bundled suite: its oracle answers in UI-TARS text on a 336x224 screen.
    ids = ["click-colour-01", "click-label-02", "find-ok-03", "type-word-04"]
    done = osworld_gym(
        "run", "--tasks", "ui-basics", *(a for i in ids for a in ("--task-id", i)),
        "--num-envs", "2", "--output-dir", str(tmp_path), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = _summary(tmp_path / "structured" / "screenshot" / "oracle")
    assert summary["overall"]["scored"] == 4 and summary["overall"]["success_rate"] == 1.0
    assert summary["settings"]["screen_size"] == [336, 224]
    step = json.loads(
        (tmp_path / "structured/screenshot/oracle/click_label/click-label-02/traj.jsonl")
        .read_text()
        .splitlines()[0]
    )
    assert step["response"].startswith("Thought: Click the Open button.")
    assert step["parsed_actions"][0]["kind"] == "click"


def test_killed_run_resumes_with_the_remaining_tasks_only(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run_dir = results / "structured" / "screenshot" / "oracle"
    args = ("run", "--domain", "os", "--num-envs", "2", "--output-dir", str(results))
    total = len(SUITE.filter(domain="os"))

    # Ctrl-C after two tasks: the run stops, says so, and keeps what finished.
    first = start_osworld_gym(*args, log=tmp_path / "first.log")
    wait_for(lambda: count_result_files(run_dir) >= 2, 180, "two finished tasks")
    first.send_signal(signal.SIGINT)
    assert first.wait(timeout=120) == 130, (tmp_path / "first.log").read_text()[-3000:]
    after_first = count_result_files(run_dir)
    summary = _summary(run_dir)
    assert summary["invocation"]["interrupted"] is True
    assert 2 <= after_first < total

    # SIGKILL after two more: nothing can clean up, and no half-written task may count as done.
    second = start_osworld_gym(*args, log=tmp_path / "second.log")
    wait_for(lambda: count_result_files(run_dir) >= after_first + 2, 180, "two more tasks")
    os.kill(second.pid, signal.SIGKILL)
    second.wait(timeout=60)
    after_second = count_result_files(run_dir)
    assert after_second < total, "the kill came too late to test a resume"
    for result in run_dir.rglob("result.txt"):
        task_dir = result.parent
        assert (task_dir / "traj.jsonl").is_file() and (task_dir / "task.json").is_file()

    # The rerun runs exactly the tasks without a result.
    third = osworld_gym(*args, timeout=300)
    assert third.returncode == 0, third.stderr[-3000:]
    summary = _summary(run_dir)
    assert summary["invocation"]["skipped_done"] == after_second
    assert summary["invocation"]["episodes_run"] == total - after_second
    assert summary["overall"]["scored"] == total and summary["overall"]["success_rate"] == 1.0
    assert f"{after_second} task(s) already done" in third.stderr

    # Changing a setting that moves scores into the same folder is refused.
    other = osworld_gym(*args, "--max-steps", "10", timeout=120)
    assert other.returncode == 2 and "max_steps" in other.stderr


def test_step_limit_modes_on_an_infeasible_task(tmp_path: Path) -> None:
    # A do-nothing agent on an infeasible task: standard mode puts FAIL on the last allowed
    # step (scores 1), Hard mode does not (scores 0).
    scores = {}
    for mode in ("standard", "hard"):
        results = tmp_path / mode
        hard = ["--hard"] if mode == "hard" else []
        done = osworld_gym(
            "run", "--agent", "noop", "--task-id", "os-infeasible-network-share",
            "--max-steps", "2", "--output-dir", str(results), *hard, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        run_dir = results / "uitars" / "screenshot" / "noop"
        summary = _summary(run_dir)
        assert summary["settings"]["mode"] == mode
        task_dir = run_dir / "os" / "os-infeasible-network-share"
        steps = [json.loads(line) for line in (task_dir / "traj.jsonl").read_text().splitlines()]
        assert len(steps) == 2
        assert steps[-1]["info"]["fail_replaced"] is (mode == "standard")
        scores[mode] = summary["overall"]["success_rate"]
    assert scores == {"standard": 1.0, "hard": 0.0}


def test_random_agent(tmp_path: Path) -> None:
    done = osworld_gym(
        "run", "--agent", "random", "--task-id", "os-chmod-script", "--max-steps", "3",
        "--output-dir", str(tmp_path), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    task_dir = tmp_path / "uitars" / "screenshot" / "random" / "os" / "os-chmod-script"
    steps = [json.loads(line) for line in (task_dir / "traj.jsonl").read_text().splitlines()]
    assert steps and all(s["response"].startswith(("Thought", "Action")) for s in steps)
    assert all(s["parsed_actions"] for s in steps)  # random valid UI-TARS actions parse


POLICY_MODULE = '''
class TypeThenDone:
    """Types a shell command into the focused terminal, then declares the task done."""

    action_format = "pyautogui"

    def __init__(self, command):
        self.command = command
        self.settings = {"policy": "scripted"}

    def __call__(self, requests):
        return [
            f"pyautogui.typewrite({self.command + chr(10)!r})" if r.step == 0 else "DONE"
            for r in requests
        ]
'''


def test_module_callable_agent(tmp_path: Path) -> None:
    (tmp_path / "my_policy.py").write_text(POLICY_MODULE)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = osworld_gym(
        "run", "--agent", "my_policy:TypeThenDone",
        "--agent-arg", "command=chmod 750 ~/scripts/backup.sh",
        "--task-id", "os-chmod-script", "--output-dir", str(tmp_path / "results"),
        timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "results" / "pyautogui" / "screenshot" / "my_policy.TypeThenDone"
    summary = _summary(run_dir)
    assert summary["overall"]["success_rate"] == 1.0
    assert summary["settings"]["policy"] == "scripted"
    bad = osworld_gym("run", "--agent", "my_policy:Missing", timeout=60, env=env)
    assert bad.returncode == 2 and "Missing" in bad.stderr


class _FakeModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint answering as UI-TARS would for os-chmod-script."""

    requests: list[dict[str, Any]] = []
    listed: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the handler API
        """``/v1/models``, which `run` asks for before it starts any desktop."""
        type(self).listed.append(self.path)
        data = json.dumps({"object": "list", "data": [{"id": "org/ui-tars-test"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - the handler API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        answered = sum(m["role"] == "assistant" for m in body["messages"])
        text = (
            "Thought: Set the permissions in the terminal.\n"
            "Action: type(content='chmod 750 ~/scripts/backup.sh\\n')"
            if answered == 0
            else "Thought: Done.\nAction: finished(content='')"
        )
        payload = {
            "id": "c1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],  # fmt: skip
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


@pytest.fixture()
def fake_model() -> Iterator[str]:
    _FakeModel.requests = []
    _FakeModel.listed = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_openai_agent_against_a_local_endpoint(tmp_path: Path, fake_model: str) -> None:
    done = osworld_gym(
        "run", "--agent", "openai", "--base-url", fake_model, "--model", "org/ui-tars-test",
        "--temperature", "0.3", "--history-images", "2", "--task-id", "os-chmod-script",
        "--output-dir", str(tmp_path), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "uitars" / "screenshot" / "org_ui-tars-test"
    summary = _summary(run_dir)
    assert summary["overall"]["success_rate"] == 1.0
    settings = summary["settings"]
    assert settings["temperature"] == 0.3 and settings["history_images"] == 2
    assert settings["model"] == "org/ui-tars-test"
    assert _FakeModel.listed == ["/v1/models"]  # asked once, before the desktops
    first, second = _FakeModel.requests
    assert first["model"] == "org/ui-tars-test" and first["temperature"] == 0.3
    prompt = json.dumps(first["messages"])
    assert "backup.sh" in prompt and "data:image/png;base64," in prompt
    assert json.dumps(second["messages"]).count("data:image/") == 2  # --history-images 2
    steps = (run_dir / "os" / "os-chmod-script" / "traj.jsonl").read_text().splitlines()
    assert json.loads(steps[0])["response"].startswith("Thought: Set the permissions")


@pytest.mark.skipif(gnome_session.available() is not None, reason="no GNOME session here")
def test_run_on_gnome_desktops(tmp_path: Path) -> None:
    done = osworld_gym(
        "run", "--tasks", "desktop-basics", "--task-id", "os-chmod-script", "--session", "gnome",
        "--output-dir", str(tmp_path), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = _summary(tmp_path / "structured" / "screenshot" / "oracle")
    assert summary["overall"]["success_rate"] == 1.0
    assert summary["settings"]["image"].endswith(", gnome")
    wrong = osworld_gym(
        "run", "--provider", "remote", "--guest-url", "http://127.0.0.1:9", "--session", "gnome",
        timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 2 and "for the local, docker and qemu providers" in wrong.stderr
