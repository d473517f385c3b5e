"""Evaluator references: which OSWorld's evaluator code the metrics and getters follow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osworld_gym.commands.dataset_card import _reference_line
from osworld_gym.env_config import EnvConfig
from osworld_gym.evaluation.evaluator import Evaluator
from osworld_gym.evaluation.getters import (
    GETTERS,
    NEW_GETTERS_SINCE_1_0_2,
    REFERENCE_1_0_2_GETTERS,
    getters_for,
)
from osworld_gym.evaluation.metrics import METRICS, metrics_for, unknown_to_reference
from osworld_gym.evaluation.metrics.registry import (
    FIXED_BY_2026_04,
    FIXED_METRICS,
    NEW_SINCE_1_0_2,
    REFERENCE_1_0_2_METRICS,
)
from osworld_gym.evaluation.references import (
    DEFAULT_REFERENCE,
    OSWORLD_1_0_2,
    OSWORLD_2026_04,
    REFERENCES,
)
from osworld_gym.task_setup.support import format_report, task_support
from osworld_gym.tasks import Task, load_tasks


def test_the_default_reference_is_the_task_files_osworld() -> None:
    assert DEFAULT_REFERENCE == OSWORLD_2026_04
    assert metrics_for() is metrics_for("osworld", OSWORLD_2026_04)
    assert dict(metrics_for()) == dict(METRICS)
    assert dict(getters_for()) == GETTERS
    assert EnvConfig().evaluator_reference == OSWORLD_2026_04
    assert Evaluator().reference == OSWORLD_2026_04


def test_the_1_0_2_reference_swaps_in_the_old_functions_only() -> None:
    old = metrics_for("osworld", OSWORLD_1_0_2)
    for name, metric in METRICS.items():
        if name in NEW_SINCE_1_0_2:
            assert name not in old
        elif name in REFERENCE_1_0_2_METRICS:
            assert old[name] is REFERENCE_1_0_2_METRICS[name] and old[name] is not metric
        else:
            assert old[name] is metric  # unchanged since 1.0.2: one function for both
    old_getters = getters_for(OSWORLD_1_0_2)
    for kind, getter in GETTERS.items():
        if kind in NEW_GETTERS_SINCE_1_0_2:
            assert kind not in old_getters
        else:
            assert old_getters[kind] is REFERENCE_1_0_2_GETTERS.get(kind, getter)


@pytest.mark.parametrize("reference", REFERENCES)
def test_fixed_mode_corrects_what_the_reference_still_gets_wrong(reference: str) -> None:
    base, fixed = metrics_for("osworld", reference), metrics_for("fixed", reference)
    for name, fix in FIXED_METRICS.items():
        if reference == OSWORLD_2026_04 and name in FIXED_BY_2026_04:
            assert fixed[name] is base[name]  # that OSWorld fixed it itself
        elif name in base:
            assert fixed[name] is fix


def test_an_unknown_reference_is_refused_everywhere() -> None:
    with pytest.raises(ValueError, match="evaluator reference must be one of"):
        metrics_for("osworld", "osworld-0.9")
    with pytest.raises(ValueError, match="evaluator reference must be one of"):
        getters_for("latest")
    with pytest.raises(ValueError, match="evaluator reference must be one of"):
        EnvConfig(evaluator_reference="osworld-1.0")
    with pytest.raises(ValueError, match="evaluator reference must be one of"):
        Evaluator(reference="")


def test_the_evaluator_scores_with_its_reference() -> None:
    for reference in REFERENCES:
        evaluator = Evaluator(reference=reference)
        assert evaluator.metrics == dict(metrics_for("osworld", reference))
        assert evaluator.getters == dict(getters_for(reference))


def test_options_a_reference_ignores_are_named() -> None:
    options = {"containment_ok": True, "_note": "a comment"}
    assert unknown_to_reference("compare_config", options, OSWORLD_1_0_2) == [
        "compare_config option 'containment_ok' (osworld-1.0.2's code ignores it)"
    ]
    assert unknown_to_reference("compare_config", options, OSWORLD_2026_04) == []
    assert unknown_to_reference("exact_match", {"rules": {}}, OSWORLD_1_0_2) == []


def _one_task(folder: Path, domain: str, func: str, expected: str, **options: object) -> Task:
    """A task file of one check (a file against a rule), loaded as OSWorld's folders are."""
    evaluator: dict[str, object] = {
        "func": func,
        "result": {"type": "vm_file", "path": "/home/user/a", "dest": "a"},
        "expected": {"type": "rule", "rules": {"expected": expected}},
    }
    if options:
        evaluator["options"] = options
    path = folder / domain / "t1.json"
    path.parent.mkdir()
    task = {"id": "t1", "instruction": "x", "config": [], "evaluator": evaluator}
    path.write_text(json.dumps(task))
    (loaded,) = load_tasks(str(folder))
    return loaded


def test_tasks_report_warns_of_what_the_reference_does_not_know(tmp_path: Path) -> None:
    loaded = _one_task(tmp_path, "vs_code", "compare_config", "x", containment_ok=True)
    assert task_support(loaded).warnings == ()
    old = task_support(loaded, OSWORLD_1_0_2)
    assert old.supported  # it is scored, as that code scores it
    assert old.warnings == (
        "compare_config option 'containment_ok' (osworld-1.0.2's code ignores it)",
    )
    text = format_report([old])
    assert "vs_code/t1: warning: compare_config option 'containment_ok'" in text
    assert "warnings (scored as the evaluator reference's code scores them):" in text


def test_tasks_report_names_a_metric_the_reference_lacks(tmp_path: Path) -> None:
    loaded = _one_task(tmp_path, "vlc", "check_play_and_exit", "1")
    assert task_support(loaded).supported
    assert task_support(loaded, OSWORLD_1_0_2).lacks == (
        "metric 'check_play_and_exit' (not in osworld-1.0.2's code)",
    )


def test_dataset_cards_say_where_the_scores_come_from() -> None:
    (line,) = _reference_line({"evaluation": "osworld", "evaluator_reference": OSWORLD_2026_04})
    assert "April 2026" in line and "f6cee71" in line
    (line,) = _reference_line({"evaluation": "osworld"})  # a run recorded before the setting
    assert "not recorded" in line and "osworld-1.0.2" in line
    assert _reference_line({}) == []
