"""``osworld-arpo-cpu`` end to end, shortened: warm start, selection, RL, summary (slow: ~5 min).

The full run (10 warm-start iterations, a baseline pass of 8 rollouts per task, 30 RL
iterations) is the CPU preset's learning check; this test runs the default warm start (so the
baseline pass finds tasks to select), a 2-rollout baseline pass and one RL iteration through
the real command path on real desktops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

# Two subprocess runs of the command (4.6 min on a quiet 2-core host), more than the default limit.
pytestmark = [pytest.mark.desktop, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_warm_start_then_rl_prints_before_and_after(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "osworld_agents.trainer.cpu_run", "--output-dir", str(out),
        "--baseline-rollouts", "2", "--iterations", "1", "--eval-every", "1",
        "--rollouts-per-task", "2", "--eval-rollouts", "1", "--num-envs", "4", "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "arpo: success rate on the training tasks" in done.stdout
    summary = json.loads((out / "arpo" / "summary.json").read_text())
    assert [p["step"] for p in summary["curve"]] == [0, 1]
    assert 0.0 <= summary["before"] <= 1.0 and 0.0 <= summary["after"] <= 1.0
    assert set(summary["curve"][0]["per_task"]) == set(summary["training_tasks"])
    assert summary["seconds"] > 0
    for task in summary["training_tasks"]:
        assert f"  {task}: " in done.stdout  # the per-task before -> after lines
    assert (out / "warm-start" / "checkpoints" / "latest").is_file()
    selection = json.loads((out / "selection.json").read_text())
    assert summary["training_tasks"] == selection["selected"] != []
    assert {r["rollouts"] for r in selection["tasks"].values()} == {2}
    # A second run (the GRPO ablation) reuses the same warm start.
    done = subprocess.run(
        [*command, "--algo", "grpo"], capture_output=True, text=True, timeout=900, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reusing the warm start" in done.stderr
    assert "reusing the task selection" in done.stderr
    assert json.loads((out / "grpo" / "summary.json").read_text())["config"]["algo"] == "grpo"
