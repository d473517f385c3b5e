"""``osworld-arpo-cpu`` end to end at the smallest size: warm start, RL, summary (slow: ~2 min).

The full run (6 warm-start iterations, 60 RL iterations) is the CPU preset's learning check;
this test runs one iteration of each through the real command path on real desktops.
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

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_warm_start_then_rl_prints_before_and_after(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "osworld_agents.trainer.cpu_run", "--output-dir", str(out),
        "--warm-start-iterations", "1", "--iterations", "1", "--eval-every", "1",
        "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "arpo: success rate on the training tasks" in done.stdout
    summary = json.loads((out / "arpo" / "summary.json").read_text())
    assert [p["step"] for p in summary["curve"]] == [0, 1]
    assert 0.0 <= summary["before"] <= 1.0 and 0.0 <= summary["after"] <= 1.0
    assert (out / "warm-start" / "checkpoints" / "latest").is_file()
    # A second run (the GRPO ablation) reuses the same warm start.
    done = subprocess.run(
        [*command, "--algo", "grpo"], capture_output=True, text=True, timeout=900, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reusing the warm start" in done.stderr
    assert json.loads((out / "grpo" / "summary.json").read_text())["config"]["algo"] == "grpo"
