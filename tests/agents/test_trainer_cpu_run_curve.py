"""The CPU preset's summary curve: every evaluation of a run, resumed parts included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from osworld_agents.trainer.cpu_run import eval_curve  # noqa: E402


def test_curve_spans_resumed_runs_and_keeps_the_latest_value(tmp_path: Path) -> None:
    task = "eval/task_success/click-colour-01"
    records = [
        {"step": 0, "eval/success_rate": 0.4, task: 0.25},
        {"step": 1, "rollout/success_rate": 0.3},  # no evaluation: not on the curve
        {"step": 5, "eval/success_rate": 0.5, task: 0.5},
        {"step": 5, "eval/success_rate": 0.55, task: 0.75},  # redone after a kill: latest counts
        {"step": 10, "eval/success_rate": 0.6, task: 1.0},  # written by the resumed process
    ]
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert eval_curve(metrics) == [
        {"step": 0, "success_rate": 0.4, "per_task": {"click-colour-01": 0.25}},
        {"step": 5, "success_rate": 0.55, "per_task": {"click-colour-01": 0.75}},
        {"step": 10, "success_rate": 0.6, "per_task": {"click-colour-01": 1.0}},
    ]
