"""Soak (issue 18): 4 desktops per provider, 100 episodes under random kills, nothing lost.

A shorter run of ``benchmarks/soak.py`` (see its docstring; its 1,000-episode figures are the
issue's): every requested episode comes back with a defined outcome, no exception escapes the
pool's API, nothing of the run is left after ``close()`` (processes, containers, folders, X
locks), no env is retired, and memory after warm-up stays flat. Providers that cannot run
here are skipped with the reason (docker without an engine or its image, qemu without a
cached image).

    pytest -m slow tests/suite/test_soak.py
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from osworld_gym import load_tasks
from osworld_gym.actions import Click, Done, Fail, TypeText, Wait
from osworld_gym.pool import TrajectoryGroup
from osworld_gym.pool.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[2]


def _load_soak() -> ModuleType:
    """``benchmarks/soak.py`` as a module (benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("osworld_soak", REPO / "benchmarks" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


soak = _load_soak()

EPISODES = 100
WARMUP = 30
# After warm-up, over the remaining ~70 episodes. The 1,000-episode runs measured (MB):
# see the closing note; these bounds leave room for the allocator's noise.
DRIVER_GROWTH_MB = 40.0
GUEST_GROWTH_MB = 10.0


def _docker_engine_or_skip() -> None:
    """Start an engine as the docker tests do (root and docker.io), or skip."""
    try:
        import docker  # noqa: F401
    except ImportError:
        pytest.skip("the docker SDK is not installed: pip install 'osworld-gym[docker]'")
    from osworld_gym.errors import ProviderError
    from osworld_gym.providers.docker.client import connect

    try:
        connect().close()
        return
    except ProviderError as e:
        if os.geteuid() != 0 or not shutil.which("dockerd"):
            pytest.skip(f"no Docker engine, and starting one needs root and docker.io: {e}")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "start_docker.sh")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"start_docker.sh failed:\n{done.stdout}{done.stderr}"


@pytest.mark.slow
@pytest.mark.timeout(2400)
@pytest.mark.parametrize(
    "provider",
    [
        pytest.param("local", marks=pytest.mark.desktop),
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("qemu", marks=pytest.mark.desktop),
    ],
)
def test_soak_accounts_every_episode_and_leaves_nothing(provider: str, tmp_path: Path) -> None:
    if provider == "docker":
        _docker_engine_or_skip()
    config = soak.SoakConfig(
        provider=provider,
        desktops=4,
        episodes=EPISODES,
        sample_every=10,
        warmup=WARMUP,
        kill_interval=(0.5, 2.0),
        stall_timeout=600.0,
        log_path=str(tmp_path / "soak.log"),
    )
    report = soak.run_soak(config)
    if report.skipped:
        pytest.skip(report.skipped)
    print(soak.format_report(report))

    assert report.accounted == report.requested == EPISODES, report.missing
    assert not report.missing
    assert report.exceptions == [], report.exceptions
    assert report.leftover_count == 0, report.leftovers
    assert report.pool_stats["pool/retired"] == 0
    hits = [f for f in report.faults if f.outcome == "hit"]
    assert len(hits) >= 10, report.fault_counts
    # The kills cut episodes and the cut ones were run again.
    assert report.rerun_attempts >= 1
    assert sum(report.outcomes.values()) == EPISODES

    driver = report.memory["driver_rss_mb"]
    assert driver["start_episodes"] >= WARMUP
    assert driver["end"] - driver["start"] < DRIVER_GROWTH_MB, driver
    guest = report.memory["guest_rss_mb_mean"]
    assert guest["end"] - guest["start"] < GUEST_GROWTH_MB, guest
    fds = report.memory["driver_fds"]
    assert fds["end"] - fds["start"] < 20, fds


# --- the soak's bookkeeping, without desktops ---------------------------------------------------


def test_every_outcome_is_accounted_and_a_lost_rollout_is_not() -> None:
    report = soak.SoakReport(provider="local", config={}, requested=5)
    pending = [("a", 4), ("b", 1), ("a", 4)]
    group = TrajectoryGroup(
        "a",
        [
            Trajectory("a", 0, terminated=True, score=1.0, final_screenshot=b"x" * 10),
            Trajectory("a", 1, truncated=True, score=0.0),
            Trajectory("a", 2, attempt=2, truncated=True, infra_error="GuestTimeoutError: /x"),
            Trajectory("a", 3, error="TaskSetupError: no window"),
        ],
        discarded=[
            Trajectory("a", 2, truncated=True, infra_error="worker crash: KeyError: 'x'"),
            Trajectory("a", 2, attempt=1, truncated=True, infra_error="DesktopDiedError: x"),
        ],
    )
    assert soak.account(report, group, pending) == 10
    assert pending == [("b", 1), ("a", 4)]
    assert report.accounted == 4 and not report.missing
    assert report.outcomes == {"complete-scored": 2, "fault-final": 1, "reset-error": 1}
    assert report.scores == {"1": 1, "0": 1}
    assert report.final_faults == {"GuestTimeoutError": 1, "reset: TaskSetupError": 1}
    assert report.rerun_attempts == 2
    assert report.rerun_causes == {"worker crash: KeyError": 1, "DesktopDiedError": 1}
    assert group.trajectories == [] and group.discarded == []

    odd = TrajectoryGroup("b", [Trajectory("b", 1)])  # wrong rollout index, no outcome
    soak.account(report, odd, pending)
    assert report.accounted == 4
    assert len(report.missing) == 2


def test_scripted_policy_plays_are_seeded_and_valid() -> None:
    policy = soak.ScriptedPolicy(seed=3, max_steps=3)
    tasks = load_tasks(soak.SUITE)
    plays = set()
    for task in tasks:
        layout = task.raw["ui_basics"]
        for rollout in range(8):
            play, actions = policy.plan(task.id, rollout, 0)
            assert (play, actions) == policy.plan(task.id, rollout, 0)
            plays.add(play)
            first = actions[0]
            if play in ("right", "wrong") and layout["action"] == "click":
                x, y, w, h = layout["buttons"][layout["answer"]]
                assert isinstance(first, Click)
                assert (x <= first.x < x + w and y <= first.y < y + h) == (play == "right")
            elif play in ("right", "wrong"):
                assert isinstance(first, TypeText)
                assert (first.text == f"{layout['answer']}\n") == (play == "right")
            expected_last = {"right": Done, "wrong": Done, "fail": Fail, "idle": Wait}[play]
            assert isinstance(actions[-1], expected_last)
    assert plays == {"right", "wrong", "fail", "idle"}


def test_memory_summary_fits_the_slope_after_warm_up() -> None:
    points = [(0, 50.0), (10, 90.0), (20, 100.0), (30, 101.0), (40, 102.0)]
    summary = soak._series_summary(points, warmup=20)
    assert summary["first"] == 50.0 and summary["start"] == 100.0 and summary["end"] == 102.0
    assert summary["peak"] == 102.0 and summary["start_episodes"] == 20
    assert summary["slope_per_1000_episodes"] == pytest.approx(100.0)
