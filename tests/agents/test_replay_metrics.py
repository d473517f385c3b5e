"""The training loop logs the replay budget per task and the empty triggers (tiny model, fake
text env, a byte budget small enough to force evictions)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from osworld_agents.trainer.train import main  # noqa: E402
from test_trainer_support import (
    fake_config,  # noqa: E402
    tiny_model_dir,  # noqa: E402
)

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

BUDGET = 60_000  # bytes: one or two 2-step episodes of 64x64 random-pixel PNGs


def test_replay_budget_metrics_and_eviction_log(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    config = fake_config(
        tiny_model_dir(tmp_path_factory),
        tmp_path,
        iterations=4,
        checkpoint_every=0,
        replay_max_bytes=BUDGET,
    )
    with caplog.at_level(logging.INFO, logger="osworld_agents.arpo.replay"):
        history = main(config).history
    first = history[0]
    # Nothing is stored before the first iteration: every all-failed group is an empty trigger.
    assert first["replay/injected_groups"] == 0
    groups = config.tasks_per_iteration
    for record in history:
        assert 0 <= record["replay/injected_groups"] + record["replay/empty_triggers"] <= groups
        assert record["replay/bytes"] <= BUDGET
        assert record["replay/budget_used"] == pytest.approx(record["replay/bytes"] / BUDGET)
        assert record["replay/task_share_max"] == pytest.approx(
            record["replay/task_bytes_max"] / BUDGET
        )
        assert record["replay/task_bytes_min"] <= record["replay/task_bytes_max"]
        assert record["replay/single_tasks"] <= record["replay/tasks"]
    stored = sum(r["replay/stored"] for r in history)
    last = history[-1]
    assert stored == last["replay/size"] + last["replay/evicted"]
    evictions = [r.getMessage() for r in caplog.records if "byte budget" in r.getMessage()]
    # The seeded run stores more than the budget holds: the INFO summary says so.
    assert last["replay/evicted"] > 0 and evictions
    assert "'largest-task' evicted" in evictions[0]
