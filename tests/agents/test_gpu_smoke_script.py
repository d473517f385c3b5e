"""scripts/gpu_smoke_train.py on CPU: the paper code path's wiring, against a canned fake vLLM.

The GPU machine runs the script for real (``bash scripts/gpu_check.sh train``); here its flow
(FSDP2 in a world of one, one full weight push per iteration from the sharded model, versions,
sleep/wake) keeps working between GPU runs. No figure it prints here describes vLLM.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.trainers
@pytest.mark.timeout(600)
def test_smoke_run_passes_every_check_on_cpu(tmp_path: Path) -> None:
    command = [
        sys.executable,
        str(ROOT / "scripts" / "gpu_smoke_train.py"),
        "--fake-vllm",
        "--device",
        "cpu",
        "--tasks",
        "1",
        "--rollouts",
        "2",
        "--max-new-tokens",
        "64",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=580, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "SUMMARY: PASS" in done.stdout
    checks = [line for line in done.stdout.splitlines() if line.startswith(("[PASS]", "[FAIL]"))]
    assert len(checks) >= 4 and not any(line.startswith("[FAIL]") for line in checks), checks
