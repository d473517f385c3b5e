"""Task selection from a baseline pass, its JSON record, and DART-style rollout counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_agents.arpo import (
    SelectionRule,
    TaskStats,
    load_selection,
    rollout_count,
    rollout_counts,
    save_selection,
    select_tasks,
)
from osworld_agents.arpo.selection import (
    ABOVE_BAND,
    BELOW_BAND,
    EXCLUDED,
    INFEASIBLE_TASK,
    NO_SUCCESS,
    SELECTED,
    UNSCORED,
)

BASELINE: dict[str, list[float | None]] = {
    "never": [0.0, 0.0, 0.0, 0.0],
    "edge": [0.1, 0.1, 0.0, 0.0],  # 0.1 is not above the threshold: no success
    "once": [0.0, 1.0, 0.0, 0.0],
    "half": [1.0, 0.5, 0.0, 0.0],
    "always": [1.0, 1.0, 1.0, 1.0],
    "infeasible_x": [1.0, 0.0, 0.0, 0.0],
}


def test_arpo_rule_keeps_tasks_solved_at_least_once() -> None:
    selection = select_tasks(BASELINE)
    assert selection.selected == ["once", "half", "always", "infeasible_x"]
    assert selection.decisions["never"] == NO_SUCCESS
    assert selection.decisions["edge"] == NO_SUCCESS
    assert selection.stats["half"] == TaskStats(rollouts=4, successes=2)
    assert selection.stats["half"].rate == 0.5
    assert selection.rollouts_per_task == 4


def test_success_rate_band() -> None:
    rule = SelectionRule(min_rate=0.3, max_rate=0.75)
    selection = select_tasks(BASELINE, rule)
    assert selection.selected == ["half"]
    assert selection.decisions["once"] == BELOW_BAND
    assert selection.decisions["always"] == ABOVE_BAND


def test_band_without_success_requirement_can_keep_unsolved_tasks() -> None:
    rule = SelectionRule(require_success=False, max_rate=0.0)
    assert select_tasks(BASELINE, rule).selected == ["never", "edge"]


def test_exclusion_predicate() -> None:
    def is_infeasible(task_id: str) -> bool:
        return task_id.startswith("infeasible")

    selection = select_tasks(BASELINE, exclude=is_infeasible)
    assert "infeasible_x" not in selection.selected
    assert selection.decisions["infeasible_x"] == EXCLUDED
    assert selection.exclude_predicate is not None
    assert "is_infeasible" in selection.exclude_predicate


def test_infeasible_tasks_are_excluded_by_default_whatever_their_scores() -> None:
    # "infeasible_x" was solved once; "skipped" was never rolled out (the pass leaves it out).
    selection = select_tasks(BASELINE, infeasible=["infeasible_x", "skipped"])
    assert selection.selected == ["once", "half", "always"]
    assert selection.decisions["infeasible_x"] == INFEASIBLE_TASK
    assert selection.decisions["skipped"] == INFEASIBLE_TASK
    assert selection.stats["skipped"] == TaskStats(rollouts=0, successes=0)
    assert selection.stats["infeasible_x"] == TaskStats(rollouts=4, successes=1)
    assert selection.excluded == {"infeasible_x": INFEASIBLE_TASK, "skipped": INFEASIBLE_TASK}
    assert selection.infeasible == ("infeasible_x", "skipped")
    assert not selection.include_infeasible
    assert selection.rollouts_per_task == 4  # the task never rolled out does not count


def test_include_infeasible_leaves_them_to_the_rule() -> None:
    selection = select_tasks(
        BASELINE, infeasible=["infeasible_x", "skipped"], include_infeasible=True
    )
    assert selection.selected == ["once", "half", "always", "infeasible_x"]
    assert "skipped" not in selection.decisions  # not rolled out: nothing to decide on
    assert selection.excluded == {}
    assert selection.infeasible == ("infeasible_x", "skipped")
    assert selection.include_infeasible


def test_infeasible_and_predicate_exclusions_together() -> None:
    selection = select_tasks(
        BASELINE, infeasible=["infeasible_x"], exclude=lambda t: t in ("half", "infeasible_x")
    )
    # The infeasible reason wins for a task both would drop.
    assert selection.excluded == {"infeasible_x": INFEASIBLE_TASK, "half": EXCLUDED}
    assert selection.selected == ["once", "always"]


def test_unscored_rollouts_are_ignored() -> None:
    selection = select_tasks({"partly": [None, 1.0, 0.0], "none": [None, None]})
    assert selection.stats["partly"] == TaskStats(rollouts=2, successes=1)
    assert selection.decisions["none"] == UNSCORED
    assert selection.selected == ["partly"]
    assert selection.rollouts_per_task is None  # uneven k is reported as such


def test_invalid_band_raises() -> None:
    with pytest.raises(ValueError):
        SelectionRule(min_rate=0.8, max_rate=0.2)


def test_json_round_trip_records_how_it_was_made(tmp_path: Path) -> None:
    path = tmp_path / "selected.json"
    rule = SelectionRule(max_rate=0.9)
    selection = select_tasks(BASELINE, rule, exclude=lambda t: t == "half")
    save_selection(selection, path)
    document = json.loads(path.read_text())
    assert document["rule"] == {
        "success_threshold": 0.1,
        "require_success": True,
        "min_rate": 0.0,
        "max_rate": 0.9,
    }
    assert document["rollouts_per_task"] == 4
    assert document["selected"] == ["once", "infeasible_x"]
    assert document["tasks"]["once"] == {
        "rollouts": 4,
        "successes": 1,
        "rate": 0.25,
        "decision": SELECTED,
    }
    assert document["tasks"]["half"]["decision"] == EXCLUDED
    loaded = load_selection(path)
    assert loaded == selection
    assert loaded.selected == selection.selected


def test_file_records_what_was_excluded_and_why(tmp_path: Path) -> None:
    path = tmp_path / "selected.json"
    selection = select_tasks(BASELINE, infeasible=["infeasible_x", "skipped"])
    save_selection(selection, path)
    document = json.loads(path.read_text())
    assert document["include_infeasible"] is False
    assert document["infeasible"] == ["infeasible_x", "skipped"]
    assert document["excluded"] == {
        "infeasible_x": "infeasible task (evaluator func 'infeasible')",
        "skipped": "infeasible task (evaluator func 'infeasible')",
    }
    assert document["tasks"]["skipped"] == {
        "rollouts": 0,
        "successes": 0,
        "rate": None,
        "decision": INFEASIBLE_TASK,
    }
    assert document["rollouts_per_task"] == 4
    assert load_selection(path) == selection


def test_files_written_before_infeasible_handling_still_load(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    selection = select_tasks(BASELINE, exclude=lambda t: t == "half")
    save_selection(selection, path)
    document = json.loads(path.read_text())
    for key in ("include_infeasible", "infeasible", "excluded"):
        del document[key]
    path.write_text(json.dumps(document))
    loaded = load_selection(path)
    assert loaded.excluded == {"half": EXCLUDED}
    assert loaded.infeasible == () and not loaded.include_infeasible
    assert loaded.selected == selection.selected


def test_load_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "domains.json"
    path.write_text(json.dumps({"chrome": ["a", "b"]}))
    with pytest.raises(ValueError, match="task-selection"):
        load_selection(path)


@pytest.mark.parametrize(
    ("rate", "expected"),
    [(0.0, 12), (0.125, 11), (0.25, 10), (0.5, 8), (0.75, 6), (1.0, 4), (None, 12)],
)
def test_rollout_count_linear(rate: float | None, expected: int) -> None:
    # n = 4 + round(8 * (1 - rate))
    assert rollout_count(rate, min_n=4, max_n=12) == expected


def test_rollout_count_power_and_rounding() -> None:
    # 8 * 0.5**2 = 2 -> 6; 8 * 0.75**2 = 4.5 -> rounds half up to 5 -> 9
    assert rollout_count(0.5, min_n=4, max_n=12, power=2.0) == 6
    assert rollout_count(0.25, min_n=4, max_n=12, power=2.0) == 9
    assert rollout_count(0.3, min_n=8, max_n=8) == 8


def test_rollout_counts_monotone_and_bounded() -> None:
    rates = {f"t{i}": i / 20 for i in range(21)}
    counts = rollout_counts(rates, min_n=2, max_n=16)
    values = [counts[f"t{i}"] for i in range(21)]
    assert values == sorted(values, reverse=True)
    assert values[0] == 16 and values[-1] == 2
    stats = select_tasks(BASELINE).stats
    from_stats = rollout_counts({t: s.rate for t, s in stats.items()}, min_n=4, max_n=8)
    assert from_stats["never"] == 8 and from_stats["always"] == 4


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0.5, "min_n": 0, "max_n": 4},
        {"rate": 0.5, "min_n": 5, "max_n": 4},
        {"rate": 1.5, "min_n": 1, "max_n": 4},
        {"rate": 0.5, "min_n": 1, "max_n": 4, "power": 0.0},
    ],
)
def test_rollout_count_rejects_bad_arguments(kwargs: dict[str, float]) -> None:
    rate = kwargs.pop("rate")
    with pytest.raises(ValueError):
        rollout_count(rate, **kwargs)  # type: ignore[arg-type]
