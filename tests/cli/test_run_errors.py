"""`osworld-gym run`'s accounting of tasks it cannot score, without desktops: a fake pool hands
back finished episodes (scored, or with an evaluation, infrastructure or reset error), and the
command's exit status, ``error.txt``, ``task.json``, ``summary.json`` and messages are checked.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import osworld_gym.pool
from osworld_gym.actions import Done
from osworld_gym.cli import main
from osworld_gym.commands import run as run_command
from osworld_gym.commands.results import ERROR_KINDS, read_task
from osworld_gym.commands.summary import (
    METRIC_EXTRAS,
    DomainRow,
    format_table,
    library_versions,
    settings_conflicts,
)
from osworld_gym.pool.trajectory import StepRecord, Trajectory, TrajectoryGroup

SCORED = "os-chmod-script"
CALC = "calc-rename-sheet"
MISSING_LIBRARY = (
    "DependencyNotInstalled: this metric needs the 'openpyxl' package, which is not installed: "
    "pip install 'osworld-gym[eval]'"
)
Outcome = Callable[[str], Trajectory]


def scored(task_id: str) -> Trajectory:
    """An episode the agent ended with DONE, scored 1."""
    step = StepRecord(None, Done(), reward=1.0)
    return Trajectory(task_id, 0, steps=[step], score=1.0, terminated=True)


def evaluation_error(task_id: str) -> Trajectory:
    """An episode that ran to its end, but whose metric's library is not installed."""
    step = StepRecord(None, Done(), reward=0.0)
    return Trajectory(task_id, 0, steps=[step], terminated=True, evaluation_error=MISSING_LIBRARY)


def infra_error(task_id: str) -> Trajectory:
    """An episode a dead desktop cut short."""
    step = StepRecord(None, Done(), reward=0.0)
    error = "GuestUnreachableError: /screenshot: connection refused"
    return Trajectory(task_id, 0, steps=[step], truncated=True, infra_error=error)


def reset_error(task_id: str) -> Trajectory:
    """An episode whose setup failed (a download step whose file cannot be had)."""
    error = "TaskSetupError: calc-rename-sheet: config step 0 (download): asset missing"
    return Trajectory(task_id, 0, error=error)


class FakePool:
    """Stands in for ``EnvPool``: records the env spec, starts nothing."""

    specs: list[Any] = []

    def __init__(self, spec: Any, num_envs: int, config: Any) -> None:
        FakePool.specs.append(spec)

    def __enter__(self) -> FakePool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class FakeCollector:
    """Hands back one finished episode per task, as ``OUTCOMES`` says it ended."""

    outcomes: dict[str, Outcome] = {}

    def __init__(self, pool: Any, policy: Any, config: Any) -> None:
        self.requeued = 0

    def groups(self, task_ids: Sequence[str]) -> Iterator[TrajectoryGroup]:
        for task_id in task_ids:
            yield TrajectoryGroup(task_id, [self.outcomes.get(task_id, scored)(task_id)])


@pytest.fixture()
def fake_pool(monkeypatch: pytest.MonkeyPatch) -> type[FakeCollector]:
    """`run` on the fake pool; set ``FakeCollector.outcomes`` to choose how episodes end."""
    monkeypatch.setattr(osworld_gym.pool, "EnvPool", FakePool)
    monkeypatch.setattr(osworld_gym.pool, "RolloutCollector", FakeCollector)
    monkeypatch.setattr(FakeCollector, "outcomes", {})
    monkeypatch.setattr(FakePool, "specs", [])
    return FakeCollector


def run(result_dir: Path, *args: str) -> int:
    """``osworld-gym run`` in this process, over the scored task and the Calc task."""
    argv = ["run", "--task-id", SCORED, "--task-id", CALC, "--progress", "lines"]
    return main([*argv, "--output-dir", str(result_dir), *args])


def run_dir(result_dir: Path) -> Path:
    return result_dir / "structured" / "screenshot" / "oracle"


def summary(result_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir(result_dir) / "summary.json").read_text())


def test_an_evaluation_error_is_no_score_and_the_run_exits_1(
    tmp_path: Path, fake_pool: type[FakeCollector], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pool.outcomes = {CALC: evaluation_error}
    assert run(tmp_path) == 1
    out, err = capsys.readouterr()
    task_dir = run_dir(tmp_path) / "libreoffice_calc" / CALC
    assert not (task_dir / "result.txt").exists()
    assert (task_dir / "error.txt").read_text() == f"{MISSING_LIBRARY}\n"
    meta = json.loads((task_dir / "task.json").read_text())
    assert meta["score"] is None and meta["evaluation_error"] == MISSING_LIBRARY
    assert meta["evaluation"] == "osworld" and meta["seed"] == 0
    assert read_task(task_dir).error_kind == "evaluation"

    # Counted apart, never as a 0: the success rate is over the scored task only.
    result = summary(tmp_path)
    assert result["overall"]["scored"] == 1 and result["overall"]["errors"] == 1
    assert result["overall"]["success_rate"] == 1.0
    assert result["error_kinds"] == {"reset": 0, "infrastructure": 0, "evaluation": 1,
                                     "unfinished": 0}  # fmt: skip
    assert result["tasks"][CALC]["error_kind"] == "evaluation"
    assert result["tasks"][CALC]["score"] is None
    assert result["domains"]["libreoffice_calc"]["errors"] == 1
    assert result["invocation"]["errors"] == 1

    # The user is told why, with the command that fixes it, and what the exit status means.
    assert f"{CALC}: not scored (evaluation error): {MISSING_LIBRARY}" in err
    assert "1 task(s) not scored in this invocation" in err
    assert "exit status 1 (--allow-errors exits 0 with errors)" in err
    assert "1 error(s) not scored" in out.splitlines()[-1]
    assert "errors" in out.splitlines()[0]  # the table's column


def test_allow_errors_exits_0_and_still_counts_them(
    tmp_path: Path, fake_pool: type[FakeCollector], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pool.outcomes = {CALC: evaluation_error}
    assert run(tmp_path, "--allow-errors") == 0
    err = capsys.readouterr().err
    assert "1 task(s) not scored" in err and "exit status 1" not in err
    assert summary(tmp_path)["overall"]["errors"] == 1


def test_a_rerun_runs_the_unscored_tasks_again(
    tmp_path: Path, fake_pool: type[FakeCollector], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pool.outcomes = {CALC: evaluation_error}
    assert run(tmp_path) == 1
    fake_pool.outcomes = {}  # the eval extra installed: now it scores
    assert run(tmp_path) == 0
    result = summary(tmp_path)
    assert result["invocation"]["skipped_done"] == 1 and result["invocation"]["episodes_run"] == 1
    assert result["overall"] == result["overall"] | {"scored": 2, "errors": 0}
    assert not (run_dir(tmp_path) / "libreoffice_calc" / CALC / "error.txt").exists()


@pytest.mark.parametrize(
    ("outcome", "kind", "reason"),
    [
        (infra_error, "infrastructure", "GuestUnreachableError"),
        (reset_error, "reset", "TaskSetupError"),
    ],
)
def test_every_kind_of_unscored_task_is_an_error(
    tmp_path: Path,
    fake_pool: type[FakeCollector],
    capsys: pytest.CaptureFixture[str],
    outcome: Outcome,
    kind: str,
    reason: str,
) -> None:
    fake_pool.outcomes = {CALC: outcome}
    assert run(tmp_path) == 1
    result = summary(tmp_path)
    assert result["error_kinds"][kind] == 1 and result["overall"]["errors"] == 1
    assert result["tasks"][CALC]["error"].startswith(reason)
    assert f"({kind} error): {reason}" in capsys.readouterr().err


def test_evaluation_mode_and_seed_are_options_and_records(
    tmp_path: Path, fake_pool: type[FakeCollector], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "--evaluation", "fixed", "--seed", "7") == 0
    assert FakePool.specs[-1].kwargs["evaluation"] == "fixed"  # what each env gets
    settings = summary(tmp_path)["settings"]
    assert settings["evaluation"] == "fixed" and settings["seed"] == 7
    meta = json.loads((run_dir(tmp_path) / "os" / SCORED / "task.json").read_text())
    assert meta["evaluation"] == "fixed" and meta["seed"] == 7
    # Another evaluation mode moves scores: continuing the folder with it is refused.
    assert run(tmp_path, "--evaluation", "osworld") == 2
    assert "evaluation: 'fixed' before, 'osworld' now" in capsys.readouterr().err
    assert run(tmp_path, "--evaluation", "lenient") == 2  # a usage error, one line
    assert "argument --evaluation: invalid choice: 'lenient'" in capsys.readouterr().err


def test_evaluator_reference_is_an_option_and_a_record(
    tmp_path: Path, fake_pool: type[FakeCollector], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path) == 0
    assert FakePool.specs[-1].kwargs["evaluator_reference"] == "osworld-2026.04"  # the default
    assert summary(tmp_path)["settings"]["evaluator_reference"] == "osworld-2026.04"
    meta = json.loads((run_dir(tmp_path) / "os" / SCORED / "task.json").read_text())
    assert meta["evaluator_reference"] == "osworld-2026.04"
    # Scores of another reference mean something else: continuing the folder is refused.
    assert run(tmp_path, "--evaluator-reference", "osworld-1.0.2") == 2
    err = capsys.readouterr().err
    assert "evaluator_reference: 'osworld-2026.04' before, 'osworld-1.0.2' now" in err


def test_a_run_recorded_before_references_continues_only_as_1_0_2(
    tmp_path: Path, fake_pool: type[FakeCollector], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "--evaluator-reference", "osworld-1.0.2") == 0
    path = run_dir(tmp_path) / "summary.json"
    old = json.loads(path.read_text())
    del old["settings"]["evaluator_reference"]  # as written before the setting existed
    path.write_text(json.dumps(old))
    assert run(tmp_path) == 2  # its scores followed 1.0.2, the default now is 2026.04
    assert "'osworld-1.0.2' before, 'osworld-2026.04' now" in capsys.readouterr().err
    assert run(tmp_path, "--evaluator-reference", "osworld-1.0.2") == 0


def test_versions_are_recorded(tmp_path: Path, fake_pool: type[FakeCollector]) -> None:
    assert run(tmp_path) == 0
    versions = summary(tmp_path)["versions"]
    assert versions == library_versions()
    assert versions["osworld-gym"] == osworld_gym.__version__ and versions["python"]
    for dist, version in versions["packages"].items():
        assert importlib.metadata.version(dist) == version


def test_missing_and_changed_libraries_are_announced_before_the_run(
    tmp_path: Path,
    fake_pool: type[FakeCollector],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = {"python": "3", "osworld-gym": "0", "packages": {"openpyxl": "3.1.0"}, "missing": {}}
    monkeypatch.setattr(run_command, "library_versions", lambda: before)
    assert run(tmp_path) == 0
    now = {"python": "3", "osworld-gym": "0", "packages": {}, "missing": {"eval": ["openpyxl"]}}
    monkeypatch.setattr(run_command, "library_versions", lambda: now)
    run(tmp_path)
    err = capsys.readouterr().err
    assert "metric libraries not installed: openpyxl" in err
    assert "pip install 'osworld-gym[eval]'" in err
    assert "openpyxl 3.1.0 -> -" in err


def test_library_versions_cover_the_metric_extras() -> None:
    versions = library_versions()
    assert set(versions) == {"python", "osworld-gym", "packages", "missing"}
    assert set(versions["missing"]) <= set(METRIC_EXTRAS)
    installed = set(versions["packages"])
    for dists in versions["missing"].values():
        assert not installed & set(dists)


def test_table_has_an_errors_column() -> None:
    rows = [DomainRow("os", 3, 2, 1.0, 4), DomainRow("all", 3, 2, 1.0, 4)]
    header, line, *_ = format_table(rows).splitlines()
    assert header.split() == ["domain", "tasks", "scored", "errors", "success", "mean", "steps"]
    assert line.split() == ["os", "3", "2", "1", "50.0%", "2.0"]
    assert ERROR_KINDS == ("reset", "infrastructure", "evaluation", "unfinished")


def test_a_folder_from_before_the_evaluation_setting_ran_osworld_scoring() -> None:
    old = {"mode": "standard"}  # written before settings recorded the evaluation mode
    now = {"mode": "standard", "evaluator_reference": "osworld-1.0.2"}
    assert settings_conflicts(old, {**now, "evaluation": "osworld"}) == []
    assert settings_conflicts(old, {**now, "evaluation": "fixed"}) == [
        "evaluation: 'osworld' before, 'fixed' now"
    ]
