"""`osworld-gym tasks report --provider` and `osworld-gym tasks fetch`, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import osworld_gym
from http_helpers import Served, file_server
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

pytestmark = pytest.mark.heavy  # the console script, a fresh interpreter each


def write_tasks(folder: Path, base: str) -> None:
    """Two tasks in OSWorld's folder layout: one fetches a file and a reference, one a 404."""

    def task(task_id: str, url: str, gold: str) -> dict[str, Any]:
        return {
            "id": task_id,
            "instruction": "check the file",
            "config": [
                {
                    "type": "download",
                    "parameters": {"files": [{"url": url, "path": "/home/user/a"}]},
                }
            ],
            "evaluator": {
                "func": "exact_match",
                "result": {"type": "vm_file", "path": "/home/user/a", "dest": "a"},
                "expected": {"type": "cloud_file", "path": gold, "dest": "gold.txt"},
            },
        }

    (folder / "os").mkdir(parents=True)
    good = task("good", base + "/a.txt", base + "/gold.txt")
    bad = task("bad", base + "/a.txt", base + "/missing.txt")
    for item in (good, bad):
        (folder / "os" / f"{item['id']}.json").write_text(json.dumps(item))


def report(folder: Path, cache: Path) -> dict[str, Any]:
    done = osworld_gym(
        "tasks", "report", str(folder), "--provider", "local", "--json", "--cache", str(cache)
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_fetch_fills_the_cache_and_the_report_counts_it(tmp_path: Path) -> None:
    served = Served(files={"/a.txt": b"a" * 200_000, "/gold.txt": b"gold"}, drop_once={"/a.txt"})
    cache = tmp_path / "cache"
    with file_server(served) as base:
        write_tasks(tmp_path / "tasks", base)
        before = {t["task_id"]: t for t in report(tmp_path / "tasks", cache)["tasks"]}
        assert before["good"]["verdict"] == "online" and before["good"]["cached"] == 0
        fetched = osworld_gym(
            "tasks", "fetch", str(tmp_path / "tasks"), "--cache", str(cache), "--jobs", "2"
        )
    assert fetched.returncode == 1  # one URL failed
    assert "failed URLs:" in fetched.stdout
    assert f"{base}/missing.txt: HTTP 404" in fetched.stdout
    assert "2 downloaded" in fetched.stdout and "1 failed" in fetched.stdout
    assert "Traceback" not in fetched.stderr
    assert fetched.stderr.count(" downloaded ") == 2  # a line per URL off a terminal
    after = {t["task_id"]: t for t in report(tmp_path / "tasks", cache)["tasks"]}
    assert after["good"]["verdict"] == "runnable" and after["good"]["cached"] == 2
    assert after["bad"]["verdict"] == "online" and after["bad"]["cached"] == 1
    manifest = json.loads((cache / "sha256-manifest.json").read_text())
    assert {key.split("/")[0] for key in manifest} == {"good", "bad"}  # one file, both tasks
    assert {entry["url"] for entry in manifest.values()} == {base + "/a.txt", base + "/gold.txt"}


def test_report_table_for_a_provider_that_is_not_probed(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks", "http://127.0.0.1:9")
    done = osworld_gym("tasks", "report", str(tmp_path / "tasks"), "--provider", "qemu")
    assert done.returncode == 0
    assert "apps on qemu desktops are not probed" in done.stdout
    assert "os/good: runnable online only" in done.stdout  # no app needed: assets decide
    header = next(line for line in done.stdout.splitlines() if line.startswith("domain"))
    columns = "domain tasks supported apps cached online fetched offline"
    assert header.split() == columns.split()


def test_fetch_of_an_unknown_source_fails_clearly(tmp_path: Path) -> None:
    done = osworld_gym("tasks", "fetch", str(tmp_path / "nothing"))
    assert done.returncode == 2 and "Traceback" not in done.stderr


@needs_osworld_tasks
def test_report_over_the_real_tasks_on_local(tmp_path: Path) -> None:
    args = ("tasks", "report", str(OSWORLD_TASKS), "--provider", "local")
    done = osworld_gym(*args, "--json", "--cache", str(tmp_path / "empty"))
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["total"]["tasks"] == 369
    assert set(data["domains"]) >= {"chrome", "os", "vs_code", "multi_apps"}
    total = data["total"]
    assert total["runnable_offline"] <= total["runnable_when_fetched"] <= total["runnable"]
    assert data["total"]["runnable"] <= data["total"]["supported"]
    chrome = [t for t in data["tasks"] if t["domain"] == "chrome"]
    assert all("google-chrome" in t["commands"] for t in chrome)
    text = osworld_gym(*args, "--summary")
    assert text.returncode == 0 and "most common reasons:" in text.stdout
