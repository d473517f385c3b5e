"""Data parallelism on CPU: two gloo processes on 127.0.0.1 with different data end an update
with identical weights, equal to one process training on all the data."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from osworld_agents.arpo import Injection  # noqa: E402
from osworld_agents.models import PolicyModel, load_policy_model  # noqa: E402
from osworld_agents.trainer.distributed import (  # noqa: E402
    DistContext,
    all_gather_objects,
    broadcast_parameters,
    shutdown,
)
from osworld_agents.trainer.samples import TrainSample, rl_samples  # noqa: E402
from osworld_agents.trainer.update import LossSettings, compute_logprobs, train_epoch  # noqa: E402
from test_trainer_support import groups_of, join_gloo_world, tiny_model_dir, tools  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

LR = 0.5


def rank_samples(policy: PolicyModel, rank: int) -> list[TrainSample]:
    """Rank 0: two groups (6 episodes); rank 1: one group (3) -- whole groups, uneven shares."""
    agent, encoder = tools(policy)
    groups = groups_of(0) if rank == 0 else groups_of(1)[:1]
    injections = [Injection(g, (False,) * len(g)) for g in groups]
    samples, _ = rl_samples(
        injections, agent, encoder, format_coef=0.5, norm_by_std=True, max_tokens=10_000
    )
    return samples


def update(policy: PolicyModel, samples: list[TrainSample], ctx: DistContext, micro: int) -> dict:
    _, encoder = tools(policy)
    compute_logprobs(policy.model, encoder, samples, micro_batch_size=micro, temperature=1.0)
    metrics = train_epoch(
        policy.model,
        torch.optim.SGD(policy.model.parameters(), lr=LR),
        encoder,
        samples,
        settings=LossSettings(),
        steps=1,
        micro_batch_size=micro,
        max_grad_norm=1e9,
        rng=np.random.default_rng(ctx.rank),
        ctx=ctx,
    )
    return metrics.means(ctx)


def worker(rank: int, world: int, port: int, tiny_dir: str, out_dir: str) -> None:
    ctx = join_gloo_world(rank, world, port)
    try:
        policy = load_policy_model(tiny_dir, "float32")
        policy.model.train()
        if rank == 1:  # a rank that starts elsewhere is brought to rank 0's weights
            with torch.no_grad():
                for p in policy.model.parameters():
                    p.add_(1.0)
        broadcast_parameters(policy.model, ctx)
        metrics = update(policy, rank_samples(policy, rank), ctx, micro=4 if rank == 0 else 1)
        assert all_gather_objects(rank, ctx) == [0, 1]
        torch.save(policy.model.state_dict(), Path(out_dir) / f"rank{rank}.pt")
        (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(metrics))
    finally:
        shutdown(ctx)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_with_different_data_end_identical_and_equal_to_one(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    tiny_dir = tiny_model_dir(tmp_path_factory)
    mp.start_processes(
        worker,
        args=(2, free_port(), str(tiny_dir), str(tmp_path)),
        nprocs=2,
        start_method="spawn",
    )
    rank0 = torch.load(tmp_path / "rank0.pt")
    rank1 = torch.load(tmp_path / "rank1.pt")
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0)
    m0, m1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert m0 == m1  # metrics are reduced over ranks

    # One process on the union of the data, in one micro-batch: the same step.
    policy = load_policy_model(tiny_dir, "float32")
    policy.model.train()
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    union = rank_samples(policy, 0) + rank_samples(policy, 1)
    single = update(policy, union, DistContext(), micro=len(union))
    after = policy.model.state_dict()
    moved = [k for k in after if not torch.equal(after[k], before[k])]
    assert len(moved) > 10
    for key in after:
        torch.testing.assert_close(rank0[key], after[key], atol=1e-6, rtol=1e-5, msg=key)
    assert m0["losses/policy_loss"] == pytest.approx(single["losses/policy_loss"], abs=1e-6)
    assert m0["losses/grad_norm"] == pytest.approx(single["losses/grad_norm"], rel=1e-5)
