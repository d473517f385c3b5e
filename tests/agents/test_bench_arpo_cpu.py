"""``benchmarks/bench_arpo_cpu.py``'s report: reruns compared exactly, spreads over runs and seeds.

The runs themselves take hours (the benchmark's docstring); here finished run folders are
written by hand, as ``osworld-arpo-cpu`` leaves them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """The benchmark as a module (benchmarks are scripts, not a package)."""
    path = REPO / "benchmarks" / "bench_arpo_cpu.py"
    spec = importlib.util.spec_from_file_location("bench_arpo_cpu", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def write_run(
    out: Path, seed: int, index: int, curve: list[float], selected: list[str], per_task: float = 0.5
) -> None:
    """A finished run's ``selection.json`` and ``arpo/summary.json``."""
    folder = out / f"seed-{seed}" / f"run-{index}"
    (folder / "arpo").mkdir(parents=True)
    tasks = {t: {"rollouts": 8, "successes": 4} for t in selected}
    (folder / "selection.json").write_text(json.dumps({"selected": selected, "tasks": tasks}))
    points = [
        {"step": 10 * i, "success_rate": rate, "per_task": dict.fromkeys(selected, per_task)}
        for i, rate in enumerate(curve)
    ]
    summary = {
        "before": curve[0],
        "after": curve[-1],
        "curve": points,
        "training_tasks": selected,
        "seconds": 1500.0,
        "base_model": str(folder / "warm-start"),
        "config": {},
    }
    (folder / "arpo" / "summary.json").write_text(json.dumps(summary))


def test_reruns_are_compared_exactly_and_spreads_reported(
    bench: ModuleType, tmp_path: Path
) -> None:
    write_run(tmp_path, 1, 1, [0.5, 0.6, 0.7, 0.7], ["a", "b"])
    write_run(tmp_path, 1, 2, [0.5, 0.6, 0.7, 0.7], ["a", "b"])  # the same run again
    write_run(tmp_path, 1, 3, [0.5, 0.6, 0.7, 0.7], ["a", "b"], per_task=0.25)  # a task moved
    write_run(tmp_path, 2, 1, [0.6, 0.7, 0.8, 0.9], ["a", "c"])
    runs = bench.finished_runs(tmp_path, [1, 2, 3], runs=3)  # seed 3 has no run: left out
    assert [(r.seed, r.index) for r in runs] == [(1, 1), (1, 2), (1, 3), (2, 1)]
    noise = {1: {"before": [0.5, 0.52], "after": [0.7]}}
    lines = bench.report(runs, noise).splitlines()
    assert lines[1].split()[:6] == ["1", "1", "2", "0.500", "0.700", "+20.0"]
    assert ".500/.600/.700/.700" in lines[1]
    assert lines[2].endswith("= run 1")
    assert lines[3].endswith("differs from run 1")  # same curve, another task's rate
    assert "seed 1: gain over 3 run(s): mean +20.0, sd 0.0, min +20.0, max +20.0" in lines
    assert "seed 2: gain over 1 run(s): +30.0 (one value)" in lines
    assert (
        "over 2 seed(s) (each seed's mean): mean +25.0, sd 7.1, min +20.0, max +30.0; "
        "target +15: 1.67x"
    ) in lines
    assert (
        "evaluation noise, seed 1, before RL: success 0.500 0.520 over 2 evaluation seed(s): "
        "sd 1.4 points"
    ) in lines
    assert lines[-2].endswith(
        "after RL: success 0.700 over 1 evaluation seed(s): one evaluation, no spread"
    )
    assert lines[-1] == "seed 1, run 1's gain on the mean of those evaluations: +19.0"


def test_a_finished_run_is_not_run_again(bench: ModuleType, tmp_path: Path) -> None:
    write_run(tmp_path, 4, 1, [0.1, 0.2], ["a"])
    # No command runs: a missing osworld-arpo-cpu would fail, and the options are nonsense.
    run = bench.ensure_run(tmp_path, 4, 1, ["--no-such-option"])
    assert run.gain == pytest.approx(10.0)


@pytest.mark.heavy  # imports torch
def test_the_run_config_comes_back_with_its_tuples(bench: ModuleType) -> None:
    pytest.importorskip("torch")
    config = bench._run_config({"seed": 7, "screen_size": [336, 224], "not_a_field": 1})
    assert config.seed == 7 and config.screen_size == (336, 224)
