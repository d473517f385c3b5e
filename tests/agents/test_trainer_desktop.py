"""One full ARPO iteration on two real local desktops with the tiny model, then a resume.

The first call collects 2 tasks x 2 rollouts through the pool (the tiny model's text goes
through the env's UI-TARS parser), updates, and checkpoints; a second call -- a new process
in real life -- resumes from the checkpoint, runs the next iteration and evaluates.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import psutil  # noqa: E402
from osworld_agents.trainer import PRESETS  # noqa: E402
from osworld_agents.trainer.train import main  # noqa: E402
from test_trainer_support import tiny_model_dir  # noqa: E402

pytestmark = pytest.mark.desktop

TASKS = ("os-write-file-content", "os-count-error-lines")  # terminal tasks: quick resets


def desktop_processes(work_dir: Path) -> list[psutil.Process]:
    """Live processes whose HOME or working folder is inside ``work_dir`` (our desktops)."""
    found = []
    for proc in psutil.process_iter(["cwd", "environ", "status"]):
        try:
            home = (proc.info["environ"] or {}).get("HOME", "")
            cwd = proc.info["cwd"] or ""
        except (psutil.Error, AttributeError):
            continue
        inside = home.startswith(str(work_dir)) or cwd.startswith(str(work_dir))
        if inside and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def test_arpo_iteration_on_desktops_then_resume(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    work_dir = tmp_path / "desktops"
    work_dir.mkdir()
    config = dataclasses.replace(
        PRESETS["cpu"],
        output_dir=str(tmp_path / "run"),
        model=str(tiny_model_dir(tmp_path_factory)),
        suite="desktop-basics",
        task_ids=TASKS,
        work_dir=str(work_dir),
        num_envs=2,
        screen_size=(160, 120),
        max_pixels=160 * 120,
        max_steps=2,
        tasks_per_iteration=2,
        rollouts_per_task=2,
        max_new_tokens=16,
        iterations=1,
        eval_every=2,
        eval_before_train=False,
        eval_tasks=TASKS[:1],
        checkpoint_every=1,
        progress=False,
    )
    first = main(config)
    (record,) = first.history
    assert first.checkpoint == tmp_path / "run" / "checkpoints" / "ckpt-0"
    assert record["charts/samples"] + record["rollout/dropped_untrainable"] == 4
    assert record["rollout/episode_steps"] >= 1
    assert record["rollout/parse_error_rate"] > 0  # an untrained model's text rarely parses
    assert record["losses/grad_norm"] >= 0 and "timing/rollout" in record
    # The desktops were busy part of the collection, and waited for the in-process model too.
    assert 0 < record["rollout/utilization"] < record["rollout/occupancy"] <= 1.0 + 1e-9
    assert record["rollout/episodes_per_minute"] > 0
    assert (first.checkpoint / "model" / "model.safetensors").is_file()
    assert desktop_processes(work_dir) == []  # the pool stopped its desktops

    second = main(dataclasses.replace(config, iterations=2, resume="auto"))
    (record,) = second.history
    assert record["step"] == 2 and second.iterations_done == 2
    assert second.checkpoint == tmp_path / "run" / "checkpoints" / "ckpt-1"
    assert 0.0 <= record["eval/success_rate"] <= 1.0
    assert (tmp_path / "run" / "tb").is_dir()
    assert desktop_processes(work_dir) == []
