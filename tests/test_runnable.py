"""Whether tasks are "runnable here": code support, apps on a provider, cached assets."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

from osworld_gym.errors import GuestUnreachableError
from osworld_gym.guest.client import CommandResult
from osworld_gym.providers.command_probe import (
    DockerImageProbe,
    GuestCommandProbe,
    LocalCommandProbe,
    ProbeResult,
    UnprobedCommands,
    probe_for,
)
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.runnable import (
    TaskRunnability,
    format_runnable_report,
    is_cached,
    runnable_report,
    task_runnability,
)
from osworld_gym.tasks import Task, load_tasks
from osworld_gym.tasks.requirements import task_assets, task_requirements

GOLD = "https://h.example/gold.txt"


def make_task(config: list[dict[str, Any]], **fields: Any) -> Task:
    data = {
        "id": fields.pop("id", "t1"),
        "instruction": "do it",
        "config": config,
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a.txt"},
            "expected": {"type": "cloud_file", "path": GOLD, "dest": "gold.txt"},
        },
    }
    data.update(fields)
    return Task.from_dict(data, domain="os")


def launch(*command: str) -> dict[str, Any]:
    return {"type": "launch", "parameters": {"command": list(command)}}


@pytest.fixture()
def cache(tmp_path: Path) -> AssetCache:
    return AssetCache(tmp_path / "cache", offline=True)


def judge(task: Task, cache: AssetCache, **present: bool | None) -> Any:
    return task_runnability(task, present, cache, "local")


def test_verdicts_and_their_one_line_reasons(cache: AssetCache) -> None:
    task = make_task([launch("vlc"), launch("socat", "a", "b")])
    missing = judge(task, cache, vlc=False, socat=True)
    assert (missing.verdict, missing.missing, missing.apps_present) == (
        "not runnable",
        ("vlc",),
        False,
    )
    assert missing.reason == "needs VLC (vlc), which the local desktop lacks"
    unknown = judge(task, cache, vlc=None, socat=True)
    assert unknown.verdict == "unknown" and "VLC (vlc)" in unknown.reason
    online = judge(task, cache, vlc=True, socat=True)
    assert online.verdict == "online" and (online.assets, online.cached) == (1, 0)
    assert "1 of 1 assets not cached" in online.reason
    (cache.root / "t1").mkdir(parents=True)
    (cache.root / "t1" / "gold.txt.part").write_text("partial")  # never taken as the asset
    assert judge(task, cache, vlc=True, socat=True).cached == 0
    (cache.root / "t1" / "gold.txt").write_text("gold")
    ready = judge(task, cache, vlc=True, socat=True)
    assert (ready.verdict, ready.reason, ready.apps_present) == ("runnable", None, True)


def test_vs_code_google_proxy_and_code_lacks(cache: AssetCache) -> None:
    code = judge(make_task([launch("code")]), cache, code=False)
    assert code.reason == "VS Code is not packaged by Debian"
    proxy = judge(make_task([launch("code")], proxy=True), cache, code=False)
    assert proxy.verdict == "not runnable" and proxy.reason.startswith("needs a proxy")
    drive = make_task([{"type": "login", "parameters": {"settings_file": "s", "platform": "x"}}])
    assert judge(drive, cache).reason == "needs OSWorld's Google account (a 'login' step)"
    unknown_step = make_task([{"type": "tidy_desktop", "parameters": {}}])
    lacks = judge(unknown_step, cache)
    assert lacks.verdict == "not runnable" and lacks.reason.startswith("the package lacks")
    assert not lacks.supported
    live = make_task([launch("google-chrome", "https://example.org")])
    (cache.root / "t1").mkdir(parents=True)
    (cache.root / "t1" / "gold.txt").write_text("gold")
    web = judge(live, cache, **{"google-chrome": True})
    assert web.verdict == "online" and web.reason == "needs the live web: https://example.org"


def test_upload_file_sources_must_exist(cache: AssetCache, tmp_path: Path) -> None:
    files = [{"local_path": str(tmp_path / "no"), "path": "/home/user/x"}]
    upload = {"type": "upload_file", "parameters": {"files": files}}
    verdict = judge(make_task([upload]), cache)
    assert verdict.verdict == "not runnable" and "upload_file step" in verdict.reason


def test_host_references_must_exist_and_are_no_download(cache: AssetCache, tmp_path: Path) -> None:
    # A cloud_file local_path, relative to the task file: read in place, never fetched.
    folder = tmp_path / "suite" / "examples"
    folder.mkdir(parents=True)
    local = {"type": "cloud_file", "local_path": "../gold.txt", "dest": "gold.txt"}
    task = make_task([], evaluator={**make_task([]).to_dict()["evaluator"], "expected": local})
    task = dataclasses.replace(task, path=folder / "t1.json")
    missing = judge(task, cache)
    assert missing.verdict == "not runnable" and missing.assets == 0
    reference = folder / "../gold.txt"
    assert missing.reason == f"needs the host file {reference} (cloud_file reference)"
    (tmp_path / "suite" / "gold.txt").write_text("gold")
    assert judge(task, cache).verdict == "runnable"


def test_shared_cache_folder_counts(cache: AssetCache) -> None:
    (asset,) = task_assets(make_task([]))
    cache.root.mkdir(parents=True)
    (cache.root / "gold.txt").write_text("shared")
    assert is_cached(cache, asset)


def executable(folder: Path, name: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_local_probe_counts_host_commands_and_working_wrappers(tmp_path: Path) -> None:
    executable(tmp_path, "gimp")
    probe = LocalCommandProbe(wrappers=["google-chrome", "sudo"], path=str(tmp_path))
    result = probe.probe(["gimp", "google-chrome", "sudo", "vlc", str(tmp_path / "gimp")])
    assert result.present == {
        "gimp": True,
        "google-chrome": True,
        "sudo": True,
        "vlc": False,
        str(tmp_path / "gimp"): True,
    }
    assert result.note is None


def test_local_probe_uses_the_desktop_wrappers_that_work_here() -> None:
    from osworld_gym.providers.desktop.bin import available_wrappers

    probe = LocalCommandProbe(path="")
    assert probe.wrappers == frozenset(available_wrappers())
    assert probe.has("sudo")  # wraps nothing: always there


class FakeGuest:
    base_url = "http://127.0.0.1:1"

    def __init__(self, output: str | None) -> None:
        self.output = output
        self.calls: list[Any] = []

    def execute(self, command: Any, *, shell: bool = False) -> CommandResult:
        self.calls.append(command)
        if self.output is None:
            raise GuestUnreachableError("/execute", "connection refused")
        return CommandResult(self.output, "", 0)


def test_guest_probe_asks_command_v_through_execute() -> None:
    guest = FakeGuest("+vlc\n-code\n")
    result = GuestCommandProbe(guest).probe(["vlc", "code", "gimp"])  # type: ignore[arg-type]
    assert result.present == {"vlc": True, "code": False, "gimp": None}
    assert guest.calls[0][:2] == ["sh", "-c"] and guest.calls[0][-3:] == ["vlc", "code", "gimp"]
    down = GuestCommandProbe(FakeGuest(None)).probe(["vlc"])  # type: ignore[arg-type]
    assert down.present == {"vlc": None} and "connection refused" in (down.note or "")


def test_docker_probe_says_why_when_there_is_no_engine(tmp_path: Path) -> None:
    probe = DockerImageProbe(base_url=f"unix://{tmp_path}/no-engine.sock")
    result = probe.probe(["vlc"])
    assert result.present == {"vlc": None}
    assert result.note and "no Docker engine answers" in result.note


def test_docker_probe_runs_command_v_in_the_image(monkeypatch: pytest.MonkeyPatch) -> None:
    import osworld_gym.providers.docker.client as docker_client

    runs: list[dict[str, Any]] = []

    class Containers:
        def run(self, image: str, command: list[str], **kwargs: Any) -> bytes:
            runs.append({"image": image, "command": command, **kwargs})
            return b"+vlc\n-code\n"

    class Images:
        def get(self, image: str) -> object:
            return object()

    class Client:
        containers, images = Containers(), Images()

        def close(self) -> None:
            pass

    monkeypatch.setattr(docker_client, "connect", lambda *a, **k: Client())
    result = DockerImageProbe("img:1").probe(["vlc", "code"])
    assert result.present == {"vlc": True, "code": False} and result.where == "image img:1"
    (run,) = runs
    assert run["entrypoint"] == "sh" and run["remove"] and run["network_disabled"]
    assert run["command"][0] == "-c" and run["command"][-2:] == ["vlc", "code"]
    assert "/opt/osworld-gym/bin" in run["command"][1]


def test_docker_probe_names_a_missing_image(monkeypatch: pytest.MonkeyPatch) -> None:
    import docker

    import osworld_gym.providers.docker.client as docker_client

    class Images:
        def get(self, image: str) -> object:
            raise docker.errors.ImageNotFound(image)

    class Client:
        images = Images()

        def close(self) -> None:
            pass

    monkeypatch.setattr(docker_client, "connect", lambda *a, **k: Client())
    result = DockerImageProbe("img:2").probe(["vlc"])
    assert result.present == {"vlc": None}
    assert "image img:2 is not on the Docker engine" in (result.note or "")


def test_unprobed_providers_say_so() -> None:
    result = UnprobedCommands("qemu").probe(["vlc"])
    assert result.present == {"vlc": None} and "not probed" in (result.note or "")
    assert isinstance(probe_for("remote"), UnprobedCommands)
    assert isinstance(probe_for("local"), LocalCommandProbe)
    with pytest.raises(ValueError, match="unknown provider"):
        probe_for("vmware")


class StaticProbe:
    def __init__(self, present: dict[str, bool | None]) -> None:
        self.present = present

    def probe(self, commands: Any) -> ProbeResult:
        return ProbeResult({c: self.present.get(c, True) for c in commands}, "static")


def test_report_table_and_json(cache: AssetCache) -> None:
    tasks = [make_task([launch("vlc")], id="a"), make_task([launch("gimp")], id="b")]
    (cache.root / "b").mkdir(parents=True)
    (cache.root / "b" / "gold.txt").write_text("gold")
    report = runnable_report(tasks, StaticProbe({"vlc": False}), cache, "local")
    assert [t.verdict for t in report.tasks] == ["not runnable", "runnable"]
    data = report.to_dict()
    assert data["total"] == {
        "tasks": 2,
        "supported": 2,
        "apps_present": 1,
        "apps_unknown": 0,
        "assets_cached": 1,
        "runnable": 1,
        "runnable_when_fetched": 1,
        "runnable_offline": 1,
    }
    assert data["commands"] == {"gimp": True, "vlc": False}
    text = format_runnable_report(report)
    assert "os/a: not runnable: needs VLC (vlc)" in text
    (total,) = [line.split() for line in text.splitlines() if line.startswith("all ")]
    assert total == ["all", "2", "2", "1", "1", "1", "1", "1"]


@needs_osworld_tasks
def test_real_osworld_tasks_on_the_local_provider() -> None:
    tasks = load_tasks(OSWORLD_TASKS)
    report = runnable_report(tasks, LocalCommandProbe(), AssetCache.default(), "local")
    assert len(report.tasks) == 369
    by_id = {t.task_id: t for t in report.tasks}
    has_code = LocalCommandProbe().has("code")
    for task in tasks:
        entry, needs = by_id[task.id], task_requirements(task)
        if task.domain == "chrome":
            assert "google-chrome" in entry.commands
        if task.domain == "vs_code":
            assert "code" in entry.commands
            if not has_code:
                assert entry.verdict == "not runnable"
        if "googledrive" in {s.type for s in task.config} or task.proxy:
            assert entry.verdict == "not runnable"
        if needs.google_account:
            assert "Google account" in (entry.reason or "")
        if entry.missing:
            assert entry.verdict == "not runnable" and entry.reason
        if entry.verdict == "runnable":
            assert entry.supported and entry.cached == entry.assets and not entry.live_web
        assert entry.verdict != "unknown"  # the local probe always knows
        assert (entry.reason is None) == (entry.verdict == "runnable")
    drive = [t for t in tasks if "googledrive" in {s.type for s in t.config}]
    assert len(drive) == 8
    assert sum(t.proxy for t in tasks) == 52
    text = format_runnable_report(report, verbose=False)
    assert text.splitlines()[-1] != "" and "all" in text
    assert os.path.isabs(str(report.cache_root))


@pytest.mark.desktop
def test_guest_probe_on_a_real_desktop(clean_desktop: Any) -> None:
    result = GuestCommandProbe(clean_desktop.client).probe(["sh", "python", "osworld-no-such"])
    assert result.present == {"sh": True, "python": True, "osworld-no-such": False}
    assert result.note is None


def test_timedatectl_runs_only_where_a_system_bus_answers_for_timedated() -> None:
    task = Task.from_dict(
        {
            "id": "tz",
            "instruction": "Set the time zone to UTC+0.",
            "config": [],
            "evaluator": {
                "func": "is_utc_0",
                "result": {"type": "vm_command_line", "command": "timedatectl status"},
            },
        }
    )
    present = {"timedatectl": True}

    def judge(provider: str, session: str | None) -> TaskRunnability:
        cache = AssetCache(Path("/nonexistent"))
        return task_runnability(task, present, cache, provider, None, session)

    assert judge("local", "gnome").verdict == "runnable"
    assert judge("docker", "gnome").verdict == "runnable"  # the image's GNOME session
    for provider, session in (
        ("local", "minimal"),
        ("local", None),
        ("docker", None),
        ("docker", "minimal"),
    ):
        verdict = judge(provider, session)
        assert verdict.verdict == "not runnable" and "timedated" in (verdict.reason or "")
    assert judge("qemu", None).verdict == "runnable"  # OSWorld's VM runs systemd
