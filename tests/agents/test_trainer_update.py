"""Trainer units on the tiny model: samples, the update's math, checkpoints, schedule, config."""

from __future__ import annotations

import copy
import dataclasses
import os
import random
import typing
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from osworld_agents.arpo import Injection, ReplayBuffer, ReplayConfig  # noqa: E402
from osworld_agents.arpo.loss import AGG_MODES  # noqa: E402
from osworld_agents.models import PolicyModel, load_policy_model  # noqa: E402
from osworld_agents.trainer import PRESETS, parse_config  # noqa: E402
from osworld_agents.trainer.checkpoint import (  # noqa: E402
    capture_rng,
    list_checkpoints,
    load_checkpoint,
    resolve_resume,
    restore_rng,
    save_checkpoint,
)
from osworld_agents.trainer.config import AggMode  # noqa: E402
from osworld_agents.trainer.distributed import DistContext  # noqa: E402
from osworld_agents.trainer.samples import rl_samples, sft_samples  # noqa: E402
from osworld_agents.trainer.tasks import TaskSchedule  # noqa: E402
from osworld_agents.trainer.update import (  # noqa: E402
    LossSettings,
    accumulate_gradients,
    compute_logprobs,
    train_epoch,
)
from test_trainer_support import (  # noqa: E402
    DEMO_TEXT,
    groups_of,
    synthetic_trajectory,
    tiny_model_dir,
    tools,
)

from osworld_gym.pool import StepRecord, Trajectory, TrajectoryGroup  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

SOLO = DistContext()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tiny_model_dir(tmp_path_factory)


@pytest.fixture()
def policy(tiny_dir: Path) -> PolicyModel:
    loaded = load_policy_model(tiny_dir, "float32")
    loaded.model.train()
    return loaded


def samples_of(policy: PolicyModel, seed: int = 0) -> list:
    agent, encoder = tools(policy)
    injections = [Injection(g, (False,) * len(g)) for g in groups_of(seed)]
    samples, stats = rl_samples(
        injections, agent, encoder, format_coef=0.5, norm_by_std=True, max_tokens=10_000
    )
    assert stats.kept == 6 and len({s.length for s in samples}) > 1
    return samples


def grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


# --- samples ----------------------------------------------------------------------------------


def test_samples_carry_advantages_and_the_engines_logprobs(policy: PolicyModel) -> None:
    samples = samples_of(policy)
    advantages = [s.advantage for s in samples]
    assert advantages[0] > 0 > advantages[1] and abs(sum(advantages[:3])) < 1e-9
    for sample in samples:
        assert sample.rollout_logprobs is not None
        assert sample.rollout_logprobs.numel() == sample.loss_tokens > 0
    # The recomputed scores line up with the loss tokens, one per sampled id.
    agent, encoder = tools(policy)
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=4, temperature=1.0)
    assert all(s.old_logprobs.shape == s.rollout_logprobs.shape for s in samples)
    assert all(bool((s.old_logprobs < 0).all()) for s in samples)


def test_a_replayed_success_becomes_a_sample_of_its_failed_group(policy: PolicyModel) -> None:
    agent, encoder = tools(policy)
    replay = ReplayBuffer(ReplayConfig(), seed=0)
    success = synthetic_trajectory("t", 5, steps=2, score=1.0, seed=1)
    assert replay.add(success)  # stored compactly: ids and log-probs as numpy arrays
    failed = TrajectoryGroup(
        "t", [synthetic_trajectory("t", r, steps=1, score=0.0, seed=10 + r) for r in range(3)]
    )
    injection = replay.inject(failed)
    assert injection.replayed == (True, False, False)
    samples, _ = rl_samples(
        [injection], agent, encoder, format_coef=0.5, norm_by_std=True, max_tokens=10_000
    )
    replayed = samples[0]
    assert replayed.replayed and replayed.advantage > 0 > samples[1].advantage
    expected = sum(len(s.extra["token_ids"]) for s in success.steps)
    assert replayed.loss_tokens == expected == replayed.rollout_logprobs.numel()


def test_sft_samples_keep_successes_and_teacher_force_scripted_text(policy: PolicyModel) -> None:
    agent, encoder = tools(policy)
    shot = synthetic_trajectory("d", 0, steps=1, score=1, seed=9).steps[0].screenshot
    scripted = Trajectory(
        "demo",
        0,
        instruction="do it",
        steps=[StepRecord(shot, DEMO_TEXT, text=DEMO_TEXT)],
        score=1.0,
        terminated=True,
    )
    failed = dataclasses.replace(scripted, score=0.0)
    group = TrajectoryGroup("demo", [scripted, failed])
    forced, stats = sft_samples(
        [group], agent, encoder, success_threshold=0.1, teacher_force=True, max_tokens=10_000
    )
    assert stats.unsuccessful == 1 and len(forced) == 1
    # Every response token plus the end-of-turn token is a target.
    assert forced[0].loss_tokens == len(encoder.tokenize(DEMO_TEXT)) + 1
    plain, stats = sft_samples(
        [group], agent, encoder, success_threshold=0.1, teacher_force=False, max_tokens=10_000
    )
    assert plain == [] and stats.no_loss_tokens == 1
    _, stats = sft_samples(
        [group], agent, encoder, success_threshold=0.1, teacher_force=True, max_tokens=10
    )
    assert stats.too_long == 1


# --- the update's math ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", AGG_MODES)
def test_micro_batch_size_does_not_change_the_gradient(policy: PolicyModel, mode: str) -> None:
    samples = samples_of(policy)
    _, encoder = tools(policy)
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=1, temperature=1.0)
    # Move away from the old policy so that the ratio, and the clipping, matter.
    with torch.no_grad():
        for p in policy.model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    settings = LossSettings(mode=mode)  # type: ignore[arg-type]
    normalizer = sum(s.norm_count(mode) for s in samples)
    results = []
    for size in (1, 4):
        policy.model.zero_grad(set_to_none=True)
        shares, _ = accumulate_gradients(
            policy.model,
            encoder,
            samples,
            settings=settings,
            normalizer=normalizer,
            micro_batch_size=size,
        )
        results.append((shares["losses/policy_loss"], grads(policy.model)))
    (loss1, g1), (loss4, g4) = results
    assert loss1 == pytest.approx(loss4, abs=1e-6)
    assert g1.keys() == g4.keys() and len(g1) > 10
    for name in g1:
        torch.testing.assert_close(g1[name], g4[name], atol=1e-6, rtol=1e-4, msg=name)


def test_ppo_loss_decreases_on_a_repeated_batch(policy: PolicyModel) -> None:
    samples = samples_of(policy)
    _, encoder = tools(policy)
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=3, temperature=1.0)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(6):
        metrics = train_epoch(
            policy.model,
            optimizer,
            encoder,
            samples,
            settings=LossSettings(),
            steps=1,
            micro_batch_size=3,
            max_grad_norm=1.0,
            rng=rng,
            ctx=SOLO,
        ).means()
        losses.append(metrics["losses/policy_loss"])
    assert losses[0] == pytest.approx(0.0, abs=1e-6)  # ratio 1 and advantages summing to 0
    assert losses[-1] < losses[0] - 0.05
    assert metrics["losses/clipfrac_high"] + metrics["losses/clipfrac_low"] > 0
    assert metrics["losses/skipped_step_frac"] == 0


def test_an_update_favours_above_average_episodes(policy: PolicyModel) -> None:
    """The direction of learning: likelihood rises for A > 0 and falls for A < 0."""
    samples = samples_of(policy)
    _, encoder = tools(policy)
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=3, temperature=1.0)
    before = [float(s.old_logprobs.sum()) for s in samples]
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    for _ in range(3):
        compute_logprobs(policy.model, encoder, samples, micro_batch_size=3, temperature=1.0)
        train_epoch(
            policy.model, optimizer, encoder, samples, settings=LossSettings(), steps=1,
            micro_batch_size=3, max_grad_norm=1.0, rng=np.random.default_rng(0), ctx=SOLO,
        )  # fmt: skip
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=3, temperature=1.0)
    for sample, old in zip(samples, before, strict=True):
        change = float(sample.old_logprobs.sum()) - old
        assert change * sample.advantage > 0, (sample.advantage, change)


def test_kl_to_the_reference_is_zero_at_the_start_and_grows(policy: PolicyModel) -> None:
    samples = samples_of(policy)[:3]
    _, encoder = tools(policy)
    for field in ("old_logprobs", "ref_logprobs"):
        compute_logprobs(policy.model, encoder, samples, micro_batch_size=3, temperature=1.0,
                         field=field)  # fmt: skip
    settings = LossSettings(kl_coef=0.1)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-2)
    kl = []
    for seed in range(3):
        metrics = train_epoch(policy.model, optimizer, encoder, samples, settings=settings,
                              steps=1, micro_batch_size=3, max_grad_norm=1.0,
                              rng=np.random.default_rng(seed), ctx=SOLO).means()  # fmt: skip
        kl.append(metrics["losses/kl_loss"])
    assert kl[0] == pytest.approx(0.0, abs=1e-6) and kl[-1] > 1e-4


def test_non_finite_gradients_skip_the_step(policy: PolicyModel) -> None:
    samples = samples_of(policy)[:2]
    _, encoder = tools(policy)
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=2, temperature=1.0)
    samples[0].advantage = float("nan")
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    metrics = train_epoch(
        policy.model,
        torch.optim.AdamW(policy.model.parameters(), lr=1e-3),
        encoder,
        samples,
        settings=LossSettings(),
        steps=1,
        micro_batch_size=2,
        max_grad_norm=1.0,
        rng=np.random.default_rng(0),
        ctx=SOLO,
    ).means()
    assert metrics["losses/skipped_step_frac"] == 1.0
    assert all(torch.equal(before[n], p) for n, p in policy.model.named_parameters())


def test_nll_decreases_on_a_repeated_batch(policy: PolicyModel) -> None:
    samples = samples_of(policy)
    _, encoder = tools(policy)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=3e-3)
    nll = [
        train_epoch(
            policy.model,
            optimizer,
            encoder,
            samples,
            settings=LossSettings(kind="nll"),
            steps=2,
            micro_batch_size=2,
            max_grad_norm=1.0,
            rng=np.random.default_rng(i),
            ctx=SOLO,
        ).means()["losses/token_nll"]
        for i in range(5)
    ]
    assert nll[-1] < nll[0] - 0.3


# --- checkpoints ------------------------------------------------------------------------------


def test_checkpoint_restores_model_optimizer_replay_and_rng_exactly(
    policy: PolicyModel, tmp_path: Path
) -> None:
    samples = samples_of(policy)
    _, encoder = tools(policy)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    owned = {"tasks": np.random.default_rng(1), "replay": random.Random(2)}
    replay = ReplayBuffer(ReplayConfig(), rng=owned["replay"])
    for group in groups_of(3):
        replay.add_group(group)
    assert len(replay) == 3

    def train_once() -> None:
        train_epoch(policy.model, optimizer, encoder, samples, settings=LossSettings(kind="nll"),
                    steps=1, micro_batch_size=6, max_grad_norm=1.0,
                    rng=owned["tasks"], ctx=SOLO)  # fmt: skip

    def draws() -> list[float]:
        return [
            random.random(),
            float(np.random.rand()),
            float(torch.rand(1)),
            float(owned["tasks"].random()),
            owned["replay"].random(),
        ]

    train_once()
    saved = save_checkpoint(
        tmp_path / "checkpoints",
        4,
        policy=policy,
        optimizer=optimizer,
        replay=replay,
        trainer_state={"iteration": 4, "rng": [capture_rng(owned)]},
        config={"seed": 1},
    )
    weights = {k: v.clone() for k, v in policy.model.state_dict().items()}
    optimizer_state = copy.deepcopy(optimizer.state_dict())  # live tensors otherwise
    replay_state = replay.state_dict()
    expected_draws = draws()
    train_once()  # the run goes on, then dies

    assert resolve_resume("auto", tmp_path / "checkpoints") == saved
    restored = load_policy_model(saved / "model", "float32")
    for name, tensor in restored.model.state_dict().items():
        assert torch.equal(tensor, weights[name]), name
    assert (saved / "model" / "chat_template.jinja").is_file()  # copied from the source folder
    new_optimizer = torch.optim.AdamW(restored.model.parameters(), lr=1e-3)
    new_owned = {"tasks": np.random.default_rng(99), "replay": random.Random(99)}
    new_replay = ReplayBuffer(ReplayConfig(), rng=new_owned["replay"])
    state = load_checkpoint(saved, optimizer=new_optimizer, replay=new_replay)
    restore_rng(state["rng"][0], new_owned)
    assert state["iteration"] == 4
    for key, value in optimizer_state["state"].items():
        for name, tensor in value.items():
            assert torch.equal(new_optimizer.state_dict()["state"][key][name], tensor)
    assert new_replay.task_sizes() == replay.task_sizes()
    assert new_replay.stats() == replay.stats()
    assert new_replay.state_dict()["rng_state"] == replay_state["rng_state"]
    owned = new_owned
    assert draws() == expected_draws


def test_optimizer_state_is_saved_by_name_and_old_files_still_load(
    policy: PolicyModel, tmp_path: Path
) -> None:
    samples = samples_of(policy)
    _, encoder = tools(policy)
    params = list(policy.model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    train_epoch(policy.model, optimizer, encoder, samples, settings=LossSettings(kind="nll"),
                steps=1, micro_batch_size=6, max_grad_norm=1.0,
                rng=np.random.default_rng(0), ctx=SOLO)  # fmt: skip
    saved = save_checkpoint(tmp_path, 0, policy=policy, optimizer=optimizer,
                            replay=ReplayBuffer(), trainer_state={"iteration": 0},
                            config={})  # fmt: skip
    file = torch.load(saved / "optimizer.pt", weights_only=False)
    names = [n for n, _ in policy.model.named_parameters()]
    assert file["keys"] == "fqn" and list(file["optimizer"]["state"]) == names
    # By name: an optimizer listing the parameters in another order gets each one's state.
    backwards = torch.optim.AdamW(params[::-1], lr=1e-3)
    load_checkpoint(saved, optimizer=backwards, replay=ReplayBuffer(), model=policy.model)
    for p in params:
        assert torch.equal(backwards.state[p]["exp_avg"], optimizer.state[p]["exp_avg"])
    # A checkpoint from before names (keyed by position) loads as it always did.
    torch.save({"optimizer": optimizer.state_dict()}, saved / "optimizer.pt")
    old = torch.optim.AdamW(params, lr=1e-3)
    load_checkpoint(saved, optimizer=old, replay=ReplayBuffer())
    assert all(torch.equal(old.state[p]["exp_avg_sq"], optimizer.state[p]["exp_avg_sq"])
               for p in params)  # fmt: skip


def test_fsdp_options() -> None:
    config = parse_config(["--preset", "cpu", "--fsdp", "--fsdp-cpu-offload"])
    assert config.fsdp and config.fsdp_cpu_offload
    assert not PRESETS["cpu"].fsdp
    with pytest.raises(ValueError, match="fsdp_cpu_offload needs fsdp"):
        dataclasses.replace(PRESETS["cpu"], fsdp_cpu_offload=True)


def test_checkpoints_are_pruned_and_latest_points_at_the_newest(
    policy: PolicyModel, tmp_path: Path
) -> None:
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    root = tmp_path / "checkpoints"
    for iteration in range(3):
        save_checkpoint(root, iteration, policy=policy, optimizer=optimizer,
                        replay=ReplayBuffer(), trainer_state={"iteration": iteration},
                        config={}, keep=2)  # fmt: skip
    assert [i for i, _ in list_checkpoints(root)] == [1, 2]
    assert resolve_resume("auto", root) == root / "ckpt-2"
    assert resolve_resume(str(root), root) == root / "ckpt-2"
    assert resolve_resume("auto", tmp_path / "nothing") is None
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no temporary leftovers
    with pytest.raises(FileNotFoundError):
        resolve_resume(str(tmp_path / "missing"), root)


# --- schedule and config ----------------------------------------------------------------------


def test_task_schedule_epochs_drop_the_tail_and_restore() -> None:
    schedule = TaskSchedule(list("abcde"), 2, np.random.default_rng(0))
    first_epoch = schedule.next() + schedule.next()
    assert len(set(first_epoch)) == 4 and schedule.epoch == 0
    state = schedule.state_dict()
    later = [schedule.next() for _ in range(4)]
    assert schedule.epoch == 2  # the fifth task was dropped: a new epoch began
    again = TaskSchedule(list("abcde"), 2, np.random.default_rng(123))
    again.load_state_dict(state)
    assert [again.next() for _ in range(4)] == later
    with pytest.raises(ValueError, match="between 1 and the 5"):
        TaskSchedule(list("abcde"), 6, np.random.default_rng(0))


def test_presets_and_command_line() -> None:
    paper = PRESETS["paper"]
    assert (paper.tasks_per_iteration, paper.rollouts_per_task, paper.max_steps) == (16, 8, 15)
    assert (paper.lr, paper.betas, paper.weight_decay, paper.max_grad_norm) == (
        1e-6, (0.9, 0.999), 1e-2, 1.0,
    )  # fmt: skip
    assert (paper.clip_low, paper.clip_high, paper.dual_clip, paper.kl_coef) == (0.2, 0.3, 3.0, 0)
    assert (paper.temperature, paper.eval_temperature, paper.dtype) == (1.0, 0.6, "bfloat16")
    assert (paper.replay, paper.replay_capacity, paper.success_threshold) == (True, 8, 0.1)
    assert paper.optimizer_steps_per_iteration == 2 and paper.history_images is None
    assert paper.fsdp and not PRESETS["cpu"].fsdp  # a 7B model needs sharding; the tiny one not
    assert (paper.min_pixels, paper.max_pixels) == (3136, 2116800)
    assert PRESETS["cpu"].model == "tiny" and PRESETS["cpu"].suite == "ui-basics"
    assert set(typing.get_args(AggMode)) == set(AGG_MODES)

    config = parse_config(["--preset", "cpu", "--algo", "grpo", "--lr", "3e-4",
                           "--screen-size", "160", "120", "--task-ids", "a", "b"])  # fmt: skip
    assert config.algo == "grpo" and not config.uses_replay and config.lr == 3e-4
    assert config.screen_size == (160, 120) and config.task_ids == ("a", "b")
    assert config.num_envs == PRESETS["cpu"].num_envs
    with pytest.raises(ValueError, match="demo-policy"):
        dataclasses.replace(paper, algo="sft")
    assert paper.optimizer == "adamw" and paper.ppo_epochs == 1
    assert parse_config(["--preset", "cpu", "--ppo-epochs", "4"]).ppo_epochs == 4
    with pytest.raises(ValueError, match="ppo_epochs"):
        dataclasses.replace(paper, ppo_epochs=0)


def test_tiny_model_width_is_configurable(tmp_path: Path) -> None:
    from osworld_agents.trainer.components import load_policy

    config = dataclasses.replace(
        PRESETS["cpu"], output_dir=str(tmp_path), tiny_hidden_size=96, device="cpu"
    )
    policy = load_policy(config, None, SOLO)
    text = policy.model.config.text_config
    assert (text.hidden_size, text.intermediate_size) == (96, 192)
    assert policy.model.config.vision_config.out_hidden_size == 96
    assert (tmp_path / "tiny-model" / "config.json").is_file()
    with pytest.raises(ValueError, match="multiple of 8"):
        dataclasses.replace(PRESETS["cpu"], tiny_hidden_size=48)  # head dimension 12
    with pytest.raises(ValueError, match="divide"):
        dataclasses.replace(PRESETS["cpu"], tiny_hidden_size=66)
    # only the model 'tiny' is built from the width
    assert dataclasses.replace(PRESETS["paper"], tiny_hidden_size=48).tiny_hidden_size == 48


def test_the_optimizer_is_adamw_or_sgd(policy: PolicyModel) -> None:
    from osworld_agents.trainer.components import make_optimizer

    paper = PRESETS["paper"]
    assert isinstance(make_optimizer(paper, policy.model), torch.optim.AdamW)
    sgd = make_optimizer(dataclasses.replace(paper, optimizer="sgd", lr=0.1), policy.model)
    assert isinstance(sgd, torch.optim.SGD) and sgd.param_groups[0]["lr"] == 0.1
