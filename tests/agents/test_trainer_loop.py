"""The whole training loop on a fast fake text env: ARPO, GRPO, RS-SFT and SFT through one
``main``, checkpoints, and a killed run resumed to exactly the uninterrupted result."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402
from osworld_agents.trainer.evaluation import TASK_SUCCESS_PREFIX  # noqa: E402
from osworld_agents.trainer.train import cli, main  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from test_trainer_support import TASKS, fake_config, tiny_model_dir  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tiny_model_dir(tmp_path_factory)


def weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    return load_file(str(checkpoint / "model" / "model.safetensors"))


def test_killed_run_resumes_to_the_uninterrupted_result(tiny_dir: Path, tmp_path: Path) -> None:
    straight = main(fake_config(tiny_dir, tmp_path / "straight", iterations=2))
    assert straight.iterations_done == 2
    first = main(fake_config(tiny_dir, tmp_path / "resumed", iterations=1))
    assert first.checkpoint == tmp_path / "resumed" / "checkpoints" / "ckpt-0"
    resumed = main(fake_config(tiny_dir, tmp_path / "resumed", iterations=2, resume="auto"))
    assert [r["step"] for r in resumed.history] == [2]  # only the second iteration ran
    assert (tmp_path / "resumed" / "checkpoints" / "latest").read_text().strip() == "ckpt-1"

    # Same episodes, same update: the metrics and the weights match exactly.
    a, b = straight.history[-1], resumed.history[-1]
    for key in ("rollout/reward_mean", "rollout/success_rate", "losses/policy_loss"):
        assert a[key] == b[key], key
    wa, wb = weights(straight.checkpoint), weights(resumed.checkpoint)
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    # ... and training did move the weights.
    w0 = weights(first.checkpoint)
    assert any(not torch.equal(w0[k], wb[k]) for k in wb)

    lines = (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2]
    record = json.loads(lines[-1])
    for key in ("rollout/reward_mean", "losses/grad_norm", "replay/size", "timing/rollout"):
        assert key in record


@pytest.mark.parametrize("algo", ["grpo", "rs-sft"])
def test_grpo_and_rs_sft_run_through_the_same_loop(
    tiny_dir: Path, tmp_path: Path, algo: str
) -> None:
    result = main(fake_config(tiny_dir, tmp_path, algo=algo, checkpoint_every=0))
    (record,) = result.history
    assert record["replay/size"] == 0  # replay is ARPO's only
    episodes = 4
    if algo == "rs-sft":
        successes = round(record["rollout/success_rate"] * episodes)
        assert record["charts/samples"] == successes
        assert ("losses/nll" in record) == (successes > 0)
        assert "losses/policy_loss" not in record
    else:
        assert record["charts/samples"] == episodes
        assert math.isfinite(record["losses/policy_loss"])


def test_sft_on_demonstrations_learns_them(tiny_dir: Path, tmp_path: Path) -> None:
    config = fake_config(
        tiny_dir,
        tmp_path,
        algo="sft",
        demo_policy="test_trainer_support:scripted_demo",
        iterations=5,
        sft_epochs=5,
        lr=3e-3,
        rollouts_per_task=1,
        checkpoint_every=0,
        eval_every=5,
        max_new_tokens=24,
    )
    result = main(config)
    assert all(r["rollout/success_rate"] == 1.0 for r in result.history)
    nll = [r["losses/token_nll"] for r in result.history]
    assert nll[-1] < nll[0] / 10
    # The model now answers like the demonstrator: every evaluation episode finishes.
    assert result.history[-1]["eval/success_rate"] == 1.0
    assert result.history[-1]["eval/parse_error_rate"] == 0.0
    assert {k: v for k, v in result.history[-1].items() if k.startswith(TASK_SUCCESS_PREFIX)} == {
        f"{TASK_SUCCESS_PREFIX}{task}": 1.0 for task in TASKS
    }


def cli_args(tiny_dir: Path, output: Path) -> list[str]:
    return [
        "--preset", "cpu", "--output-dir", str(output), "--model", str(tiny_dir),
        "--tasks", "desktop-basics", "--task-ids", *TASKS, "os-tar-folder",
        "--env-entry-point", "test_trainer_support:FakeTextEnv", "--num-envs", "2",
        "--screen-size", "64x64", "--max-pixels", "4096", "--max-steps", "2",
        "--tasks-per-iteration", "2", "--rollouts-per-task", "2", "--max-new-tokens", "12",
        "--eval-every", "0", "--checkpoint-every", "1", "--no-progress", "--no-tensorboard",
    ]  # fmt: skip


def test_cli_parses_a_preset_with_overrides_and_trains(tiny_dir: Path, tmp_path: Path) -> None:
    assert cli([*cli_args(tiny_dir, tmp_path), "--iterations", "1", "--algo", "grpo"]) == 0
    saved = json.loads((tmp_path / "checkpoints" / "ckpt-0" / "config.json").read_text())
    assert saved["algo"] == "grpo" and saved["screen_size"] == [64, 64]


@pytest.mark.slow
def test_torchrun_two_ranks_train_then_resume(tiny_dir: Path, tmp_path: Path) -> None:
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
              "--master_addr", "127.0.0.1", "--master_port", str(port),
              "-m", "osworld_agents.trainer.train", *cli_args(tiny_dir, tmp_path)]  # fmt: skip
    for iterations in ("1", "2"):
        subprocess.run(
            [*launch, "--iterations", iterations, "--resume", "auto"],
            env=env,
            check=True,
            timeout=240,
        )
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2]  # rank 0 alone writes
    assert all(r["charts/samples"] == 4 for r in records)  # 2 tasks x 2 rollouts over 2 ranks
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "ckpt-1"


def test_baseline_pass_selects_tasks_and_dart_budgets_follow_the_rates(
    tiny_dir: Path, tmp_path: Path
) -> None:
    from osworld_agents.arpo import SelectionRule, load_selection, rollout_count
    from osworld_agents.trainer.baseline import run_selection

    selection_file = tmp_path / "selection.json"
    config = fake_config(tiny_dir, tmp_path / "baseline", temperature=1.0)
    selection = run_selection(
        config, rollouts=4, rule=SelectionRule(require_success=False), output=selection_file
    )
    saved = load_selection(selection_file)
    assert saved.selected == selection.selected == list(TASKS)
    assert {s.rollouts for s in saved.stats.values()} == {4}
    rates = {t: s.rate for t, s in saved.stats.items()}

    run = fake_config(
        tiny_dir,
        tmp_path / "run",
        task_selection=str(selection_file),
        tasks_per_iteration=3,
        dart_rollouts=(1, 3),
    )
    (record,) = main(run).history
    expected = sum(rollout_count(rates[t], min_n=1, max_n=3) for t in TASKS)
    assert record["charts/samples"] + record["rollout/dropped_untrainable"] == expected
    state = torch.load(
        tmp_path / "run" / "checkpoints" / "ckpt-0" / "trainer_state.pt", weights_only=False
    )
    assert set(state["rollout_budget"]["rates"]) == set(TASKS)  # replaced by the new groups


def test_a_selection_that_keeps_nothing_is_written_and_reported(
    tiny_dir: Path, tmp_path: Path
) -> None:
    from osworld_agents.arpo import SelectionRule
    from osworld_agents.trainer.baseline import cli as select_cli

    out = tmp_path / "none.json"
    argv = ["--output", str(out), "--baseline-rollouts", "2", "--min-rate", "1.0"]
    config_flags = ["--preset", "cpu", "--model", str(tiny_dir), "--tasks", "desktop-basics"]
    config_flags += ["--task-ids", TASKS[0], "--env-entry-point"]
    config_flags += ["test_trainer_support:FakeTextEnv", "--num-envs", "1", "--max-steps", "1"]
    config_flags += ["--screen-size", "64x64", "--max-pixels", "4096", "--max-new-tokens", "4"]
    assert select_cli(argv + config_flags) == 0
    document = json.loads(out.read_text())
    assert document["rule"] == {**SelectionRule().__dict__, "min_rate": 1.0}
    record = document["tasks"][TASKS[0]]
    assert record["rollouts"] == 2
    if record["successes"] == 0:
        expected = "no success"
    else:
        expected = "selected" if record["rate"] == 1.0 else "success rate below band"
    assert record["decision"] == expected
    assert document["selected"] == ([TASKS[0]] if expected == "selected" else [])
