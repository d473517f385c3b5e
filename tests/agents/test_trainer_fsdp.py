"""Sharded training (FSDP2) on CPU: two gloo processes train the tiny model sharded and
unsharded on the same uneven data and agree; each kind's checkpoint resumes the other kind.

The two-process tests take a minute or more on two cores (``-m trainers`` runs them); the
world-of-one test runs in the default suite."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from osworld_agents.arpo import Injection, ReplayBuffer  # noqa: E402
from osworld_agents.models import PolicyModel  # noqa: E402
from osworld_agents.trainer import PRESETS, TrainConfig  # noqa: E402
from osworld_agents.trainer.checkpoint import (  # noqa: E402
    gather_full_state,
    load_checkpoint,
    save_checkpoint,
)
from osworld_agents.trainer.components import load_policy, make_optimizer  # noqa: E402
from osworld_agents.trainer.distributed import (  # noqa: E402
    DistContext,
    shutdown,
)
from osworld_agents.trainer.samples import TrainSample, rl_samples  # noqa: E402
from osworld_agents.trainer.sharding import full_tensor, is_sharded  # noqa: E402
from osworld_agents.trainer.update import (  # noqa: E402
    LossSettings,
    compute_logprobs,
    padding_passes,
    train_epoch,
)
from test_trainer_support import groups_of, join_gloo_world, tiny_model_dir, tools  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

KINDS = ("fsdp", "plain")


def make_config(tiny_dir: Path, out: Path, *, fsdp: bool, **changes: Any) -> TrainConfig:
    return dataclasses.replace(
        PRESETS["cpu"],
        model=str(tiny_dir),
        output_dir=str(out),
        device="cpu",
        dtype="float32",
        lr=3e-3,
        fsdp=fsdp,
        # Recomputation must gather each layer again under FSDP; exact in fp32.
        gradient_checkpointing=fsdp,
        **changes,
    )


def rank_samples(policy: PolicyModel, rank: int) -> list[TrainSample]:
    """Rank 0: two groups (6 episodes); rank 1: one episode, so in a 2-step epoch its second
    mini-batch is empty and it must pad with a sample borrowed from rank 0."""
    agent, encoder = tools(policy)
    groups = groups_of(0) if rank == 0 else groups_of(1)[:1]
    injections = [Injection(g, (False,) * len(g)) for g in groups]
    samples, _ = rl_samples(
        injections, agent, encoder, format_coef=0.5, norm_by_std=True, max_tokens=10_000
    )
    return samples if rank == 0 else samples[:1]


def epoch(policy: PolicyModel, optimizer: Any, ctx: DistContext, seed: int) -> dict:
    """Old log-probs (no ctx given: the process group's), then two optimizer steps."""
    _, encoder = tools(policy)
    samples = rank_samples(policy, ctx.rank)
    policy.model.train()
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=2, temperature=1.0)
    metrics = train_epoch(
        policy.model,
        optimizer,
        encoder,
        samples,
        settings=LossSettings(),
        steps=2,
        micro_batch_size=2,
        max_grad_norm=1.0,
        rng=np.random.default_rng(seed + ctx.rank),
        ctx=ctx,
    )
    return metrics.means(ctx)


def full_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter whole (a collective for a sharded model)."""
    return {n: full_tensor(p.detach()).clone() for n, p in model.named_parameters()}


def worker(rank: int, world: int, port: int, tiny_dir: str, out_dir: str) -> None:
    ctx = join_gloo_world(rank, world, port)
    out = Path(out_dir)
    try:
        # 1. Both kinds train two optimizer steps from the same weights on the same data.
        for kind in KINDS:
            config = make_config(Path(tiny_dir), out / kind, fsdp=kind == "fsdp")
            policy = load_policy(config, None, ctx)
            assert is_sharded(policy.model) == (kind == "fsdp")
            optimizer = make_optimizer(config, policy.model)
            metrics = epoch(policy, optimizer, ctx, seed=0)
            weights = full_weights(policy.model)
            full = gather_full_state(policy.model, optimizer, is_writer=ctx.is_main)
            if ctx.is_main:
                save_checkpoint(out / kind / "checkpoints", 0, policy=policy,
                                optimizer=optimizer, replay=ReplayBuffer(),
                                trainer_state={"iteration": 0}, config={},
                                full_state=full)  # fmt: skip
                torch.save(weights, out / f"{kind}-weights.pt")
                (out / f"{kind}-metrics.json").write_text(json.dumps(metrics))
            if kind == "fsdp":
                # A rank without micro-batches pads with a sample borrowed from rank 0.
                mine = rank_samples(policy, 0)[:3] if rank == 0 else []
                passes, filler = padding_passes(mine, 2, policy.model, ctx)
                if rank == 0:
                    assert (passes, filler) == (0, None)
                else:
                    assert passes == 2 and filler is not None and filler.task_id == "task-0-0"
            dist.barrier()
        # 2. Each kind resumes from the other kind's checkpoint and trains on.
        for kind, other in zip(KINDS, reversed(KINDS), strict=True):
            folder = out / other / "checkpoints" / "ckpt-0"
            config = make_config(Path(tiny_dir), out / kind, fsdp=kind == "fsdp")
            policy = load_policy(config, folder, ctx)
            optimizer = make_optimizer(config, policy.model)
            load_checkpoint(folder, optimizer=optimizer, replay=ReplayBuffer(),
                            model=policy.model, is_main=ctx.is_main)  # fmt: skip
            # Copied: some of the state's tensors are the live ones (the step counts).
            loaded = copy.deepcopy(
                gather_full_state(policy.model, optimizer, is_writer=ctx.is_main)
            )
            weights = full_weights(policy.model)
            metrics = epoch(policy, optimizer, ctx, seed=1)
            after = full_weights(policy.model)
            if ctx.is_main:
                assert loaded is not None
                torch.save(
                    {"optimizer": loaded.optimizer, "weights": weights, "after": after},
                    out / f"{kind}-resumed.pt",
                )
                (out / f"{kind}-resumed.json").write_text(json.dumps(metrics))
    finally:
        shutdown(ctx)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_close_dicts(a: dict, b: dict, atol: float = 1e-5) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=atol, rtol=0, msg=key)


def assert_equal_optimizer(a: dict, b: dict) -> None:
    assert a["state"].keys() == b["state"].keys()
    for name, state in a["state"].items():
        assert state.keys() == b["state"][name].keys(), name
        for key, tensor in state.items():
            assert torch.equal(tensor.cpu(), b["state"][name][key].cpu()), (name, key)
    for group, other in zip(a["param_groups"], b["param_groups"], strict=True):
        # torch's gathering writes betas as a list, the optimizer's own state dict a tuple
        assert json.dumps(group, sort_keys=True) == json.dumps(other, sort_keys=True)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tiny_model_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def two_rank_run(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fsdp-run")
    mp.start_processes(
        worker, args=(2, free_port(), str(tiny_dir), str(out)), nprocs=2, start_method="spawn"
    )
    return out


@pytest.mark.trainers
def test_sharded_and_unsharded_training_agree(two_rank_run: Path, tiny_dir: Path) -> None:
    out = two_rank_run
    fsdp, plain = (json.loads((out / f"{k}-metrics.json").read_text()) for k in KINDS)
    assert fsdp["losses/skipped_step_frac"] == plain["losses/skipped_step_frac"] == 0.0
    for key in ("losses/policy_loss", "losses/grad_norm", "losses/approx_kl"):
        assert fsdp[key] == pytest.approx(plain[key], abs=1e-5), key
    sharded, unsharded = (torch.load(out / f"{k}-weights.pt") for k in KINDS)
    assert_close_dicts(sharded, unsharded)
    saved = torch.load(out / "fsdp" / "checkpoints" / "ckpt-0" / "optimizer.pt")
    assert saved["optimizer"]["state"].keys() == sharded.keys()  # AdamW state by name, all


@pytest.mark.trainers
def test_either_kinds_checkpoint_resumes_the_other(two_rank_run: Path) -> None:
    out = two_rank_run
    for kind, other in (("fsdp", "plain"), ("plain", "fsdp")):
        resumed = torch.load(out / f"{kind}-resumed.pt")
        saved = torch.load(out / other / "checkpoints" / "ckpt-0" / "optimizer.pt")
        assert saved["keys"] == "fqn"
        assert_equal_optimizer(resumed["optimizer"], saved["optimizer"])
        written = torch.load(out / f"{other}-weights.pt")
        for name, tensor in resumed["weights"].items():
            assert torch.equal(tensor, written[name]), name
    # Training goes on the same way from either checkpoint, sharded or not.
    fsdp, plain = (json.loads((out / f"{k}-resumed.json").read_text()) for k in KINDS)
    assert fsdp["losses/policy_loss"] == pytest.approx(plain["losses/policy_loss"], abs=1e-5)
    a, b = (torch.load(out / f"{k}-resumed.pt")["after"] for k in KINDS)
    assert_close_dicts(a, b)
    assert any(not torch.equal(a[n], torch.load(out / "fsdp-resumed.pt")["weights"][n]) for n in a)


@pytest.mark.trainers
def test_the_sharded_checkpoints_model_folder_loads_with_transformers(two_rank_run: Path) -> None:
    from transformers import Qwen2_5_VLForConditionalGeneration

    folder = two_rank_run / "fsdp" / "checkpoints" / "ckpt-0" / "model"
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(folder, dtype=torch.float32)
    trained = torch.load(two_rank_run / "fsdp-weights.pt")
    loaded = dict(model.named_parameters())
    assert loaded.keys() == trained.keys()
    for name, tensor in trained.items():
        assert torch.equal(loaded[name].detach(), tensor), name
    assert (folder / "tokenizer_config.json").is_file()


def test_a_world_of_one_shards_trains_and_loads_an_old_checkpoint(
    tiny_dir: Path, tmp_path: Path
) -> None:
    """fsdp=True in a plain process: a one-rank group of its own (CPU offload on: on a CPU it
    only exercises the path); the update equals the unsharded one, and a position-keyed
    (pre-FSDP) optimizer file loads into it."""
    solo = DistContext()
    plain_config = make_config(tiny_dir, tmp_path / "plain", fsdp=False)
    plain = load_policy(plain_config, None, solo)
    plain_optimizer = make_optimizer(plain_config, plain.model)
    plain_metrics = epoch(plain, plain_optimizer, solo, seed=0)
    old = tmp_path / "old"
    old.mkdir()
    # What checkpoints held before optimizer states were keyed by name.
    torch.save({"optimizer": plain_optimizer.state_dict()}, old / "optimizer.pt")
    ReplayBuffer().save(old / "replay.pkl")
    torch.save({"iteration": 0}, old / "trainer_state.pt")
    config = make_config(tiny_dir, tmp_path / "fsdp", fsdp=True, fsdp_cpu_offload=True)
    try:
        policy = load_policy(config, None, solo)
        assert is_sharded(policy.model) and dist.get_world_size() == 1
        assert padding_passes(rank_samples(policy, 0), 2, policy.model, solo) == (0, None)
        optimizer = make_optimizer(config, policy.model)
        metrics = epoch(policy, optimizer, solo, seed=0)
        for key in ("losses/policy_loss", "losses/grad_norm"):
            assert metrics[key] == pytest.approx(plain_metrics[key], abs=1e-5), key
        assert_close_dicts(full_weights(policy.model), full_weights(plain.model))
        load_checkpoint(old, optimizer=optimizer, replay=ReplayBuffer(), model=policy.model)
        full = gather_full_state(policy.model, optimizer, is_writer=True)
        expected = gather_full_state(plain.model, plain_optimizer, is_writer=True)
        assert full is not None and expected is not None
        assert_equal_optimizer(full.optimizer, expected.optimizer)
    finally:
        shutdown(solo)
    assert not dist.is_initialized()
