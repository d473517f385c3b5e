"""The CPU preset command: its summary curve (resumed parts included), RL batch and warm start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from osworld_agents.trainer.cpu_run import (  # noqa: E402
    check_reusable,
    eval_curve,
    parse_args,
    rl_config,
    warm_start_config,
)

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


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


SELECTED = [f"click-colour-{i:02d}" for i in range(1, 18)]


def test_rl_batch_defaults_to_every_selected_task() -> None:
    config = rl_config(parse_args([]), Path("model"), Path("selection.json"), SELECTED)
    assert (config.tasks_per_iteration, config.rollouts_per_task) == (17, 4)
    assert config.task_selection == "selection.json" and config.model == "model"


def test_rl_batch_takes_a_subset_of_tasks_when_asked() -> None:
    args = parse_args(["--tasks-per-iteration", "9", "--rollouts-per-task", "8"])
    config = rl_config(args, Path("model"), Path("selection.json"), SELECTED)
    assert (config.tasks_per_iteration, config.rollouts_per_task) == (9, 8)
    many = rl_config(parse_args(["--tasks-per-iteration", "40"]), Path("m"), Path("s"), SELECTED)
    assert many.tasks_per_iteration == 17  # never more than were selected


def test_dart_rollouts_are_off_unless_asked() -> None:
    assert rl_config(parse_args([]), Path("m"), Path("s"), SELECTED).dart_rollouts is None
    args = parse_args(["--dart-rollouts", "2", "6"])
    assert rl_config(args, Path("m"), Path("s"), SELECTED).dart_rollouts == (2, 6)
    with pytest.raises(SystemExit) as usage:  # a usage error: one line, exit status 2
        parse_args(["--dart-rollouts", "6", "2"])
    assert usage.value.code == 2
    args.dart_rollouts = [6, 2]  # past the parser, the config refuses it all the same
    with pytest.raises(ValueError, match="dart_rollouts"):
        rl_config(args, Path("m"), Path("s"), SELECTED)


def test_the_warm_start_demonstrates_every_task_of_the_suite(tmp_path: Path) -> None:
    from osworld_gym import load_tasks

    warm = warm_start_config(tmp_path, seed=1, iterations=10, num_envs=16)
    assert warm.tasks_per_iteration == len(load_tasks(warm.suite)) == 38
    assert (warm.algo, warm.rollouts_per_task, warm.iterations) == ("sft", 1, 10)


def test_a_warm_start_is_reused_only_with_the_same_settings(tmp_path: Path) -> None:
    checkpoint = tmp_path / "warm-start" / "checkpoints" / "ckpt-4"
    checkpoint.mkdir(parents=True)
    made = warm_start_config(tmp_path, seed=2, iterations=5, num_envs=16, width=96)
    assert made.tiny_hidden_size == 96 and made.model == "tiny"
    (checkpoint / "config.json").write_text(json.dumps(made.to_dict()))
    check_reusable(checkpoint, warm_start_config(tmp_path, 2, 5, num_envs=4, width=96))
    with pytest.raises(ValueError, match="tiny_hidden_size=96, this run asks for 64"):
        check_reusable(checkpoint, warm_start_config(tmp_path, 2, 5, 16))
    with pytest.raises(ValueError, match="seed=2"):
        check_reusable(checkpoint, warm_start_config(tmp_path, 3, 5, 16, width=96))
    # a warm start saved before the width was a setting was made at the default, 64
    old = {k: v for k, v in made.to_dict().items() if k != "tiny_hidden_size"}
    (checkpoint / "config.json").write_text(json.dumps(old))
    check_reusable(checkpoint, warm_start_config(tmp_path, 2, 5, 16))
    # one made on the 22-task suite demonstrated other tasks: not reused
    (checkpoint / "config.json").write_text(json.dumps({**old, "tasks_per_iteration": 22}))
    with pytest.raises(ValueError, match="tasks_per_iteration=22, this run asks for 38"):
        check_reusable(checkpoint, warm_start_config(tmp_path, 2, 5, 16))
