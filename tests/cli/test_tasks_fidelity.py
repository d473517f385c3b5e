"""`osworld-gym tasks report --fidelity` on real OSWorld task files, run as a user runs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import osworld_gym
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks
from PIL import Image


@pytest.mark.desktop
@pytest.mark.osworld_tasks
@needs_osworld_tasks
def test_the_report_plays_real_tasks_on_a_desktop(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "os"
    folder.mkdir(parents=True)
    # Infeasible (FAIL scores 1), the volume (a fresh sound server below 100%), and the time
    # zone (timedatectl: not runnable here, never a silent 0).
    for prefix in ("4783cc41", "28cc3b7e", "b6781586"):
        (source,) = (OSWORLD_TASKS / "examples" / "os").glob(f"{prefix}*.json")
        shutil.copy(source, folder / source.name)
    done = osworld_gym(
        "tasks", "report", str(tmp_path / "tasks"), "--provider", "local", "--fidelity",
        "--session", "minimal", "--screen-size", "1280x720", "--json",
        "--cache", str(tmp_path / "cache"), "--gallery", str(tmp_path / "gallery"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    scores = {t["task_id"][:8]: (t["done_score"], t["fail_score"]) for t in report["tasks"]}
    assert scores == {"4783cc41": (0.0, 1.0), "28cc3b7e": (0.0, 0.0)}
    assert report["counts"]["early_first_frames"] == 0 and report["counts"]["resets"] == 4
    ((task, reason),) = [(t["task_id"][:8], t["reason"]) for t in report["not_run"]]
    assert task == "b6781586" and "timedated" in reason
    # The gallery: the first frame of the domain's first task, half size.
    assert [p.name for p in (tmp_path / "gallery").iterdir()] == ["os.png"]
    assert Image.open(tmp_path / "gallery" / "os.png").size == (640, 360)
