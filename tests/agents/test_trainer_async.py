"""DART-GUI's decoupled mode: versions, staleness, importance weights, and whole runs of ``main``.

The fast runs use the fake text env of the trainer loop tests; one run (marked ``desktop``) uses
the CPU preset's ui-basics suite on real local desktops.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402
from osworld_agents.trainer import PRESETS, TrainConfig  # noqa: E402
from osworld_agents.trainer import train as train_module  # noqa: E402
from osworld_agents.trainer.async_rollout import (  # noqa: E402
    check_async,
    group_version,
    split_stale,
    trajectory_version,
)
from osworld_agents.trainer.config import parse_config  # noqa: E402
from osworld_agents.trainer.samples import TrainSample, set_importance_logprobs  # noqa: E402
from osworld_agents.trainer.train import main  # noqa: E402
from test_trainer_support import TASKS, tiny_model_dir  # noqa: E402
from test_trainer_support import fake_config as loop_config  # noqa: E402

from osworld_gym.pool.trajectory import StepRecord, Trajectory, TrajectoryGroup  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tiny_model_dir(tmp_path_factory)


def fake_config(tiny_dir: Path, output: Path, **changes: object) -> TrainConfig:
    """The trainer loop tests' config (the fake text env), 3 iterations unless told."""
    return loop_config(tiny_dir, output, **{"iterations": 3, **changes})


def episode(*versions: int | None) -> Trajectory:
    steps = [
        StepRecord(None, "a", extra={} if v is None else {"weight_version": v}) for v in versions
    ]
    return Trajectory("t", 0, steps=steps)


def trainer_state(run: Path, iteration: int) -> dict:
    return torch.load(
        run / "checkpoints" / f"ckpt-{iteration}" / "trainer_state.pt", weights_only=False
    )


# --- versions and staleness --------------------------------------------------------------------


def test_the_oldest_step_gives_the_version() -> None:
    assert trajectory_version(episode(4, 3, 5)) == 3
    assert trajectory_version(episode(None, 6)) == 6
    assert trajectory_version(episode(None)) is None
    assert group_version(TrajectoryGroup("t", [episode(7, 8), episode(6), episode()])) == 6


def test_staleness_keeps_the_last_versions_and_unversioned_groups() -> None:
    groups = [TrajectoryGroup("t", [episode(v)]) for v in (2, 3, 4, 5)]
    groups.append(TrajectoryGroup("t", [episode(None)]))  # a scripted policy: nothing to judge
    kept, stale = split_stale(groups, current=5, max_staleness=1)
    assert [group_version(g) for g in kept] == [4, 5, None]
    assert [group_version(g) for g in stale] == [2, 3]
    kept, stale = split_stale(groups, current=5, max_staleness=0)
    assert [group_version(g) for g in kept] == [5, None]
    # A group spanning a push counts as old as its oldest step.
    kept, stale = split_stale([TrajectoryGroup("t", [episode(4, 5)])], 5, 0)
    assert not kept and len(stale) == 1
    with pytest.raises(ValueError, match=">= 0"):
        split_stale(groups, current=5, max_staleness=-1)


def test_importance_log_probs_come_from_the_sampling_ones() -> None:
    def sample(logprobs: list[float] | None, tokens: int, replayed: bool = False) -> TrainSample:
        return TrainSample(
            conversation=None,  # type: ignore[arg-type]
            task_id="t",
            reward=0.0,
            advantage=0.0,
            replayed=replayed,
            length=tokens,
            loss_tokens=tokens,
            rollout_logprobs=None if logprobs is None else torch.tensor(logprobs),
        )

    samples = [sample([-0.5, -1.0], 2), sample(None, 2), sample([-0.5], 2)]
    samples.append(sample([-0.5, -1.0], 2, replayed=True))
    assert set_importance_logprobs(samples) == 2  # no log-probs, or too few
    assert samples[0].importance_logprobs is samples[0].rollout_logprobs
    assert samples[1].importance_logprobs is None and samples[2].importance_logprobs is None
    assert samples[3].importance_logprobs is None  # a replayed success trains as ARPO's does


def test_config_alias_validation_and_refusals() -> None:
    assert parse_config(["--preset", "cpu", "--async"]).async_rollouts
    assert not parse_config(["--preset", "cpu"]).async_rollouts  # coupled stays the default
    assert not TrainConfig().async_rollouts
    with pytest.raises(ValueError, match="max_staleness"):
        dataclasses.replace(PRESETS["cpu"], max_staleness=-1)
    check_async(PRESETS["cpu"])
    sft = dataclasses.replace(PRESETS["cpu"], algo="sft", demo_policy="m:x")
    with pytest.raises(ValueError, match="sft"):
        check_async(sft)


# --- whole runs on the fake env ------------------------------------------------------------------


def test_async_run_trains_on_two_versions_and_checkpoints_the_coupled_schedule(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run = main(fake_config(tiny_dir, tmp_path / "async", async_rollouts=True))
    assert run.iterations_done == 3
    versions = set()
    for record in run.history:
        assert record["charts/samples"] == 4  # 2 tasks x 2 rollouts every iteration
        assert record["async/stale_groups"] == 0  # max_staleness 1 with one iteration ahead
        assert 0 <= record["async/group_staleness"] <= 1
        assert 0 < record["losses/is_weight_mean"] <= 1
        versions |= {record["async/oldest_version"], record["async/newest_version"]}
    assert len(versions) >= 2  # groups of more than one policy version were trained on
    # While the first update ran, the desktops acted on the next iteration's episodes.
    assert run.history[0]["async/update_steps"] > 0
    assert run.history[0]["async/fed_ahead_groups"] == 2

    # The schedule a checkpoint keeps is the coupled loop's, though it was drawn ahead: a
    # resumed run trains on the same tasks.
    coupled = main(fake_config(tiny_dir, tmp_path / "coupled", iterations=2))
    for iteration in (0, 1):
        a = trainer_state(tmp_path / "async", iteration)
        b = trainer_state(tmp_path / "coupled", iteration)
        assert a["schedule"] == b["schedule"]
        assert a["rng"][0]["owned"]["tasks"] == b["rng"][0]["owned"]["tasks"]
    # The coupled default logs nothing of the decoupled mode and weighs nothing.
    assert not any(k.startswith("async/") or "is_weight" in k for k in coupled.history[0])

    resumed = main(fake_config(tiny_dir, tmp_path / "async", iterations=4, resume="auto",
                               async_rollouts=True))  # fmt: skip
    assert [r["step"] for r in resumed.history] == [4]


def test_no_staleness_drops_and_reruns_groups_of_older_versions(
    tiny_dir: Path, tmp_path: Path
) -> None:
    run = main(
        fake_config(
            tiny_dir, tmp_path / "strict", async_rollouts=True, max_staleness=0, iterations=2,
            checkpoint_every=0,
        )
    )  # fmt: skip
    first, second = run.history
    assert first["async/stale_groups"] == 0  # version 0 trains on version 0
    # Iteration 1's groups started under version 0 during the first update: dropped, re-run.
    assert second["async/stale_groups"] > 0
    assert second["async/oldest_version"] == second["async/newest_version"] == 1
    assert second["charts/samples"] == 4  # every scheduled task still trained on
    lines = (tmp_path / "strict" / "metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["async/stale_groups"] == second["async/stale_groups"]


# --- on desktops -------------------------------------------------------------------------------


@pytest.mark.desktop
def test_async_cpu_preset_on_desktops(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    # The tiny model's update can end before a desktop finishes a step, so how many steps fall
    # inside it is down to timing. The first update (iteration 1's episodes are fed by then and
    # cannot all be done: the desktops take episodes in feed order) waits until one is seen, so
    # the test asks whether the desktops *can* act through an update: a coupled loop, or a
    # stream that stops while the trainer updates, times out here.
    streams: list[train_module.AsyncRollouts] = []

    class RecordedRollouts(train_module.AsyncRollouts):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            streams.append(self)

    real_epoch = train_module.train_epoch
    waited: list[bool] = []

    def epoch_then_wait_for_a_step(*args: object, **kwargs: object) -> object:
        before = streams[-1].stats.steps
        result = real_epoch(*args, **kwargs)  # type: ignore[arg-type]
        if not waited:
            waited.append(True)
            deadline = time.monotonic() + 120
            while streams[-1].stats.steps == before:
                assert time.monotonic() < deadline, "no desktop step during the first update"
                time.sleep(0.05)
        return result

    monkeypatch.setattr(train_module, "AsyncRollouts", RecordedRollouts)
    monkeypatch.setattr(train_module, "train_epoch", epoch_then_wait_for_a_step)
    work_dir = tmp_path / "desktops"
    work_dir.mkdir()
    config = dataclasses.replace(
        PRESETS["cpu"],
        output_dir=str(tmp_path / "run"),
        model=str(tiny_model_dir(tmp_path_factory)),
        task_ids=("click-colour-01", "type-word-01"),
        work_dir=str(work_dir),
        num_envs=2,
        max_steps=2,
        tasks_per_iteration=2,
        rollouts_per_task=2,
        max_new_tokens=16,
        iterations=3,
        eval_every=0,
        eval_before_train=False,
        checkpoint_every=3,
        progress=False,
        async_rollouts=True,
    )
    run = main(config)
    assert run.iterations_done == 3
    versions = {r["async/oldest_version"] for r in run.history}
    versions |= {r["async/newest_version"] for r in run.history}
    assert len(versions) >= 2
    # The desktops acted during the updates (the coupled loop's sit idle then).
    assert sum(r["async/update_steps"] for r in run.history) > 0
    assert max(r["async/update_occupancy"] for r in run.history) > 0
    assert all(
        0 < r["losses/is_weight_mean"] <= 1 for r in run.history if "losses/is_weight_mean" in r
    )


def test_cpu_run_async_gets_its_own_folder(tmp_path: Path) -> None:
    from osworld_agents.trainer.cpu_run import parse_args, rl_config

    def config(*argv: str) -> TrainConfig:
        args = parse_args(["--output-dir", str(tmp_path), *argv])
        return rl_config(args, tmp_path / "model", tmp_path / "selection.json", ["a", "b"])

    coupled, decoupled = config(), config("--async", "--max-staleness", "2")
    assert Path(coupled.output_dir) == tmp_path / "arpo" and not coupled.async_rollouts
    assert Path(decoupled.output_dir) == tmp_path / "arpo-async"
    assert decoupled.async_rollouts and decoupled.max_staleness == 2
    assert Path(config("--algo", "grpo", "--async").output_dir).name == "grpo-async"


@pytest.mark.slow
def test_torchrun_two_ranks_async_train_evaluate_then_resume(
    tiny_dir: Path, tmp_path: Path
) -> None:
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
              "--master_addr", "127.0.0.1", "--master_port", str(port),
              "-m", "osworld_agents.trainer.train", "--preset", "cpu",
              "--output-dir", str(tmp_path), "--model", str(tiny_dir), "--tasks", "desktop-basics",
              "--task-ids", *TASKS, "os-tar-folder",
              "--env-entry-point", "test_trainer_support:FakeTextEnv", "--num-envs", "2",
              "--screen-size", "64x64", "--max-pixels", "4096", "--max-steps", "2",
              "--tasks-per-iteration", "2", "--rollouts-per-task", "2", "--max-new-tokens", "12",
              "--eval-every", "2", "--checkpoint-every", "1", "--no-progress", "--no-tensorboard",
              "--async"]  # fmt: skip
    for iterations in ("2", "3"):
        subprocess.run(
            [*launch, "--iterations", iterations, "--resume", "auto"],
            env=env,
            check=True,
            timeout=300,
        )
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2, 3]  # evaluation before training, then 3
    trained = records[1:]
    assert all(r["charts/samples"] == 4 for r in trained)  # 2 tasks x 2 rollouts over 2 ranks
    assert trained[0]["async/update_steps"] > 0
    assert "eval/success_rate" in records[2] and "eval/success_rate" in records[3]
    # After the resume the episodes in flight at the checkpoint were collected again.
    assert trained[2]["async/oldest_version"] == 2
