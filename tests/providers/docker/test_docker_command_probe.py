"""The docker provider's "apps present" answer comes from the image itself."""

from __future__ import annotations

from pathlib import Path

from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

from osworld_gym.providers.command_probe import DockerImageProbe
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.runnable import format_runnable_report, runnable_report
from osworld_gym.tasks import load_tasks


def test_the_image_is_asked_with_command_v(guest_image: str) -> None:
    result = DockerImageProbe(guest_image).probe(["sh", "python", "osworld-gym-no-such-cmd"])
    assert result.note is None, result.note
    assert result.present == {"sh": True, "python": True, "osworld-gym-no-such-cmd": False}


@needs_osworld_tasks
def test_the_real_tasks_report_on_docker(guest_image: str, tmp_path: Path) -> None:
    tasks = load_tasks(OSWORLD_TASKS)
    probe = DockerImageProbe(guest_image)
    report = runnable_report(tasks, probe, AssetCache(tmp_path), "docker")
    assert report.probe.note is None and len(report.tasks) == 369
    assert all(t.verdict != "unknown" for t in report.tasks)
    vs_code = [t for t in report.tasks if t.domain == "vs_code"]
    if report.probe.present.get("code") is False:
        assert all(t.verdict == "not runnable" for t in vs_code)
    assert "all" in format_runnable_report(report, verbose=False)
