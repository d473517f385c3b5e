"""The fidelity report (``osworld-gym tasks report --fidelity``; issue 36, item 4)."""

from __future__ import annotations

import json

import numpy as np

from osworld_gym.fidelity import FidelityReport, TaskFidelity, frame_difference


def _frame() -> np.ndarray:
    return np.zeros((720, 1280, 3), dtype=np.uint8)


def test_a_first_frame_is_early_only_where_more_than_a_caret_pointer_or_clock_differs() -> None:
    first, settled = _frame(), _frame()
    assert frame_difference(first, settled) is None
    settled[300:318, 400:402] = 255  # a caret that blinked
    assert frame_difference(first, settled) is None
    settled[5:20, 600:700] = 255  # the top bar's clock
    assert frame_difference(first, settled) is None
    settled[500:550, 900:950] = 255  # the pointer's shape
    assert frame_difference(first, settled) is None
    third = settled.copy()
    third[650:660, 40:44] = 255  # a third spot: more than a caret and a pointer
    assert frame_difference(first, third) == "0.3% of the pixels differ, in 910x360 at (40, 300)"
    settled[100:400, 100:900] = 255  # a window drawn after the first frame
    why = frame_difference(first, settled)
    assert why == "26.3% of the pixels differ, in 850x450 at (100, 100)"
    assert "(720, 1280)" in str(frame_difference(first, settled[:600]))


def test_findings_name_what_is_not_as_on_osworlds_vm() -> None:
    fine = TaskFidelity("a", "os", infeasible=False, done_score=0.0, fail_score=0.0, resets=2)
    solved = TaskFidelity("b", "os", infeasible=False, done_score=1.0, fail_score=0.0, resets=2)
    no_fail = TaskFidelity("c", "os", infeasible=True, done_score=0.0, fail_score=0.0, resets=2)
    broken = TaskFidelity(
        "d", "os", infeasible=False, errors=("DONE episode: EvaluatorError: x",), resets=2
    )
    early = TaskFidelity(
        "e", "os", infeasible=False, done_score=0.0, early_frames=("DONE reset: 5%",), resets=2
    )
    assert fine.findings() == []
    assert solved.findings() == ["scores 1 with DONE: the starting state solves it"]
    assert no_fail.findings() == ["infeasible, but FAIL scores 0"]
    assert broken.findings() == ["cannot be scored: DONE episode: EvaluatorError: x"]
    assert early.findings() == ["first frame early in 1 of 2 resets: DONE reset: 5%"]
    report = FidelityReport("here", 1, (fine, solved, no_fail, broken, early), (("f", "why"),))
    assert report.counts() == {
        "tasks": 5,
        "feasible_scoring_1_with_done": 1,
        "infeasible_not_1_with_fail": 1,
        "not_scored": 1,
        "early_first_frames": 1,
        "resets": 10,
        "not_run": 1,
    }
    assert json.loads(json.dumps(report.to_dict()))["tasks"][1]["findings"] == solved.findings()
