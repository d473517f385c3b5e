"""``osworld-arpo-select`` leaves infeasible tasks out (ARPO's list does), unless told to keep
them, and its file says what it excluded and why: task folders written here, one real OSWorld
infeasible task, the tiny model on the fake text env."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from osworld_agents.arpo import SelectionRule, load_selection  # noqa: E402
from osworld_agents.arpo.selection import INFEASIBLE_TASK  # noqa: E402
from osworld_agents.trainer.baseline import cli as select_cli  # noqa: E402
from real_tasks import real_task  # noqa: E402
from test_trainer_support import tiny_model_dir  # noqa: E402

from osworld_gym.tasks import load_tasks  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


def feasible(task_id: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "instruction": f"Write {task_id} into ~/out.txt.",
        "config": [],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "cat ~/out.txt", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": task_id}},
        },
    }


def infeasible(task_id: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "instruction": "Make the desktop print on paper.",
        "config": [],
        "evaluator": {"func": "infeasible"},
    }


def task_folder(folder: Path, tasks: list[dict[str, Any]]) -> Path:
    folder.mkdir()
    for task in tasks:
        (folder / f"{task['id']}.json").write_text(json.dumps(task))
    return folder


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tiny_model_dir(tmp_path_factory)


def run_select(tiny_dir: Path, suite: Path, out: Path, *extra: str) -> int:
    """The command on ``suite`` with every task kept by the rule (``--keep-unsolved``)."""
    argv = ["--output", str(out), "--baseline-rollouts", "2", "--keep-unsolved", *extra]
    argv += ["--preset", "cpu", "--model", str(tiny_dir), "--tasks", str(suite)]
    argv += ["--env-entry-point", "test_trainer_support:FakeTextEnv", "--num-envs", "1"]
    argv += ["--max-steps", "1", "--screen-size", "64x64", "--max-pixels", "4096"]
    argv += ["--max-new-tokens", "4", "--log-level", "WARNING"]
    return select_cli(argv)


def test_infeasible_tasks_are_excluded_without_a_rollout(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = [feasible("write-a"), infeasible("print-paper"), feasible("write-b")]
    suite = task_folder(tmp_path / "tasks", tasks)
    out = tmp_path / "selection.json"
    assert run_select(tiny_dir, suite, out) == 0
    assert "selected 2 of 3 task(s) (1 infeasible excluded)" in capsys.readouterr().out
    document = json.loads(out.read_text())
    # Sorted by file name, as the folder is loaded; the rule alone would have kept all three.
    assert document["selected"] == ["write-a", "write-b"]
    assert document["excluded"] == {"print-paper": INFEASIBLE_TASK}
    assert document["infeasible"] == ["print-paper"]
    assert document["include_infeasible"] is False
    assert document["tasks"]["print-paper"] == {
        "rollouts": 0,  # never rolled out
        "successes": 0,
        "rate": None,
        "decision": INFEASIBLE_TASK,
    }
    assert {document["tasks"][t]["rollouts"] for t in ("write-a", "write-b")} == {2}
    assert document["rollouts_per_task"] == 2
    assert document["rule"] == {**SelectionRule().__dict__, "require_success": False}


def test_include_infeasible_rolls_them_out_for_the_rule(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = task_folder(tmp_path / "tasks", [feasible("write-a"), infeasible("print-paper")])
    out = tmp_path / "selection.json"
    assert run_select(tiny_dir, suite, out, "--include-infeasible") == 0
    assert "selected 2 of 2 task(s) ->" in capsys.readouterr().out
    selection = load_selection(out)
    assert selection.selected == ["print-paper", "write-a"]
    assert selection.stats["print-paper"].rollouts == 2
    assert selection.excluded == {}
    assert selection.infeasible == ("print-paper",)
    assert selection.include_infeasible


def test_a_real_osworld_infeasible_task_is_excluded(tiny_dir: Path, tmp_path: Path) -> None:
    # OSWorld's "change VS Code's background to a photo": evaluator func "infeasible".
    real = real_task("vs_code", "dcbe20e8")
    assert real["evaluator"]["func"] == "infeasible"
    suite = task_folder(tmp_path / "tasks", [real, feasible("write-a")])
    assert load_tasks(suite)[real["id"]].infeasible
    out = tmp_path / "selection.json"
    assert run_select(tiny_dir, suite, out) == 0
    selection = load_selection(out)
    assert selection.selected == ["write-a"]
    assert selection.excluded == {real["id"]: INFEASIBLE_TASK}
    assert selection.stats[real["id"]].rollouts == 0
