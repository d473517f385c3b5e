"""The trainer's rollout engine: which one a config gets, weight pushes (FSDP2 shards gathered
one tensor at a time on two gloo ranks), per-iteration reseeding, and the vLLM wiring of the
training loop against a fake ``vllm`` module.

What the fake vLLM shows: the loop builds one engine from the config, samples through it,
sleeps it before each update, pushes every trainer tensor after it (the values the checkpoint
holds) and tags the next iteration's generations with the new version. What it cannot show:
anything vLLM itself does with those calls (sampling, log-probs, reloading, memory).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import socket
import sys
import types
import weakref
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from osworld_agents.engines.hf import TransformersEngine  # noqa: E402
from osworld_agents.models import PolicyModel, load_policy_model  # noqa: E402
from osworld_agents.trainer import PRESETS, TrainConfig  # noqa: E402
from osworld_agents.trainer.distributed import DistContext  # noqa: E402
from osworld_agents.trainer.rollout import eval_agent, rollout_agent  # noqa: E402
from osworld_agents.trainer.rollout_engine import (  # noqa: E402
    make_rollout_engine,
    push_weights,
    rollout_engine_kind,
    trainer_weights,
)
from test_trainer_support import join_gloo_world, make_image, tiny_model_dir  # noqa: E402

from osworld_gym.policies.conversation import Conversation, TextPart  # noqa: E402
from osworld_gym.policies.engine import SamplingParams  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

MULTIPROCESSING_ENV = "VLLM_ENABLE_V1_MULTIPROCESSING"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tiny_model_dir(tmp_path_factory)


@pytest.fixture()
def policy(tiny_dir: Path) -> PolicyModel:
    return load_policy_model(tiny_dir, "float32")


def config_for(tiny_dir: Path, **changes: Any) -> TrainConfig:
    return dataclasses.replace(PRESETS["cpu"], model=str(tiny_dir), **changes)


def prompt() -> Conversation:
    conversation = Conversation()
    conversation.add("user", make_image(56, 56, 3), TextPart("click the button"))
    return conversation


def state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


# --- which engine ---------------------------------------------------------------------------------


def test_engine_kind_follows_the_config(tiny_dir: Path) -> None:
    assert rollout_engine_kind(config_for(tiny_dir)) == "shared"
    assert rollout_engine_kind(config_for(tiny_dir, fsdp=True)) == "replica"
    assert rollout_engine_kind(config_for(tiny_dir, async_rollouts=True)) == "replica"
    assert rollout_engine_kind(config_for(tiny_dir, rollout_engine="vllm")) == "vllm"
    assert rollout_engine_kind(config_for(tiny_dir, rollout_engine="vllm", fsdp=True)) == "vllm"
    with pytest.raises(ValueError, match="vllm_sleep_level"):
        config_for(tiny_dir, vllm_sleep_level=0)


def test_vllm_settings_come_from_the_trainer_config() -> None:
    from osworld_agents.trainer.rollout_engine import vllm_engine_config

    paper = dataclasses.replace(PRESETS["paper"], rollout_engine="vllm")
    settings = vllm_engine_config(paper, DistContext(), model_max_len=128000)
    assert settings.max_model_len == paper.max_sequence_tokens + paper.max_new_tokens
    assert settings.max_images == paper.max_steps  # history_images None: every screenshot
    assert settings.image_size == paper.screen_size and settings.dtype == "bfloat16"
    assert settings.enable_sleep_mode and settings.distributed_executor_backend is None
    small = vllm_engine_config(paper, DistContext(rank=1, world_size=2), model_max_len=32768)
    assert small.max_model_len == 32768  # never past the model's positions
    assert small.distributed_executor_backend == "external_launcher"  # torchrun: one world
    assert small.seed == paper.seed + 1
    decoupled = dataclasses.replace(paper, async_rollouts=True, vllm_max_model_len=4096)
    settings = vllm_engine_config(decoupled, DistContext(), model_max_len=32768)
    assert not settings.enable_sleep_mode and settings.max_model_len == 4096


def test_shared_engine_is_the_trainer_model_and_a_push_only_sets_the_version(
    tiny_dir: Path, policy: PolicyModel
) -> None:
    engine = make_rollout_engine(config_for(tiny_dir), policy, DistContext())
    assert isinstance(engine, TransformersEngine) and engine.model is policy.model
    stats = push_weights(engine, policy.model, 4)
    assert stats.tensors == 0 and engine.weight_version == 4


def test_replica_receives_the_trainer_weights_and_tags_generations(
    tiny_dir: Path, policy: PolicyModel
) -> None:
    engine = make_rollout_engine(config_for(tiny_dir, async_rollouts=True), policy, DistContext())
    replica = engine.model
    assert replica is not policy.model and not replica.training
    assert not any(p.requires_grad for p in replica.parameters())
    assert all(torch.equal(state(replica)[k], v) for k, v in state(policy.model).items())
    params = SamplingParams(max_new_tokens=4, seed=7)
    assert engine.generate([prompt()], params)[0].extra["weight_version"] == 0

    with torch.no_grad():  # the trainer moves on; the replica does not, until a push
        for p in policy.model.parameters():
            p.add_(0.25)
    assert not torch.equal(replica.lm_head.weight, policy.model.lm_head.weight)
    stats = push_weights(engine, policy.model, 3)
    trainer = state(policy.model)
    assert stats.tensors == len(trainer)
    assert stats.bytes == sum(t.numel() * t.element_size() for t in trainer.values())
    for name, tensor in state(replica).items():
        assert torch.equal(tensor, trainer[name]), name
        assert tensor.data_ptr() != trainer[name].data_ptr()  # a copy, not shared storage
    assert engine.generate([prompt()], params)[0].extra["weight_version"] == 3


def test_a_push_holds_the_engine_lock_throughout(tiny_dir: Path, policy: PolicyModel) -> None:
    """A generate on another thread cannot start mid-push: ``generate`` takes the same lock."""
    engine = make_rollout_engine(config_for(tiny_dir, fsdp=True), policy, DistContext())
    held = []

    def watched() -> Any:
        for item in trainer_weights(policy.model):
            held.append(engine._lock.locked())
            yield item

    engine.update_weights(watched(), version=1)
    assert held and all(held)
    assert not engine._lock.locked()


def test_reseeded_engine_samples_what_a_fresh_engine_would(
    tiny_dir: Path, policy: PolicyModel
) -> None:
    config = config_for(tiny_dir, seeded_rollouts=False, max_new_tokens=6)
    conversations = [prompt(), prompt()]
    engine = make_rollout_engine(config, policy, DistContext())
    # Draw from the engine first: reseeding must erase what earlier iterations consumed.
    rollout_agent(engine, config, iteration=0, rank=0)
    engine.generate(conversations, SamplingParams(max_new_tokens=3))
    eval_agent(engine, config)
    persistent = rollout_agent(engine, config, iteration=5, rank=1)
    fresh = rollout_agent(policy, config, iteration=5, rank=1)  # today's fresh engine
    assert fresh.engine is not engine and fresh.engine.weight_version == 5
    params = persistent.config.sampling
    a = persistent.engine.generate(conversations, params)
    b = fresh.engine.generate(conversations, params)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    c = rollout_agent(engine, config, iteration=6, rank=1).engine.generate(conversations, params)
    assert [g.token_ids for g in c] != [g.token_ids for g in a]


# --- FSDP2: two gloo ranks, a sharded trainer, a full replica each ------------------------------


def fsdp_worker(rank: int, world: int, port: int, tiny_dir: str, out_dir: str) -> None:
    from osworld_agents.trainer.distributed import shutdown
    from osworld_agents.trainer.sharding import shard_model
    from torch.distributed.tensor import DTensor

    ctx = join_gloo_world(rank, world, port)
    try:
        reference = {
            k: v.clone() for k, v in state(load_policy_model(tiny_dir, "float32").model).items()
        }
        policy = load_policy_model(tiny_dir, "float32")
        shard_model(policy.model, ctx)
        sharded = [n for n, p in policy.model.named_parameters() if isinstance(p, DTensor)]
        config = dataclasses.replace(PRESETS["cpu"], model=tiny_dir, fsdp=True)
        engine = make_rollout_engine(config, policy, ctx)  # gathers into an empty replica
        initial_ok = all(
            torch.equal(t, reference[n]) for n, t in state(engine.model).items()
        ) and set(state(engine.model)) == set(reference)

        # Every rank moves its own slice: the full tensors become reference + 1.
        with torch.no_grad():
            for name in sharded:
                dict(policy.model.named_parameters())[name].to_local().add_(1.0)

        # Count the gathered tensors alive whenever a new gather starts.
        original = DTensor.full_tensor
        live, alive_at_gather, gathers = [0], [], [0]

        def tracked(self: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
            alive_at_gather.append(live[0])
            out = original(self, *args, **kwargs)
            gathers[0] += 1
            live[0] += 1
            weakref.finalize(out, lambda: live.__setitem__(0, live[0] - 1))
            return out

        DTensor.full_tensor = tracked  # type: ignore[method-assign]
        try:
            stats = push_weights(engine, policy.model, 1)
        finally:
            DTensor.full_tensor = original  # type: ignore[method-assign]
        moved_ok = all(
            torch.equal(t, reference[n] + 1.0 if n in sharded else reference[n])
            for n, t in state(engine.model).items()
        )
        version = engine.generate([prompt()], SamplingParams(max_new_tokens=2, seed=1))[0].extra[
            "weight_version"
        ]
        result = {
            "sharded": len(sharded),
            "initial_ok": initial_ok,
            "moved_ok": moved_ok,
            "gathers": gathers[0],
            "max_alive_at_gather": max(alive_at_gather),
            "largest_bytes": stats.largest_bytes,
            "version": version,
        }
        (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        shutdown(ctx)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_push_from_an_fsdp2_model_gathers_one_tensor_at_a_time(
    tiny_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch.distributed.fsdp")
    mp.start_processes(
        fsdp_worker,
        args=(2, free_port(), str(tiny_dir), str(tmp_path)),
        nprocs=2,
        start_method="spawn",
    )
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    n_params = len(dict(load_policy_model(tiny_dir, "float32").model.named_parameters()))
    for result in results:
        assert result["sharded"] == n_params  # every parameter was a DTensor shard
        assert result["initial_ok"] and result["moved_ok"]
        assert result["gathers"] == n_params
        # When a gather starts, the previous gathered tensor is already gone.
        assert result["max_alive_at_gather"] == 0
        assert result["version"] == 1


# --- vLLM in the loop, against a fake vllm module ----------------------------------------------


class LoopFakeLLM:
    """Answers each request with one of three UI-TARS texts (chosen by its seed) and records
    the engine's calls and the pushed tensors."""

    TEXTS = ("Action: finished()", "Action: wait()", "Thought: hm\nAction: wait()")

    def __init__(self, calls: list[tuple[Any, ...]], **kwargs: Any):
        from transformers import AutoTokenizer

        self.kwargs = kwargs
        self.calls = calls
        self.pushed: dict[str, torch.Tensor] = {}
        self.tokenizer = AutoTokenizer.from_pretrained(kwargs["model"], local_files_only=True)
        self.llm_engine = types.SimpleNamespace(
            model_executor=object(),
            reset_encoder_cache=lambda: self.calls.append(("reset_encoder_cache",)),
        )

    def generate(self, prompts: list[dict[str, Any]], sampling: list[Any], use_tqdm: bool) -> list:
        from test_vllm_engine import CompletionOutput, Logprob, RequestOutput

        self.calls.append(("generate", len(prompts)))
        outputs = []
        for index, (request, params) in enumerate(zip(prompts, sampling, strict=True)):
            assert request["multi_modal_data"]["image"], "every step carries its screenshot"
            text = self.TEXTS[params.kwargs["seed"] % len(self.TEXTS)]
            ids = [*self.tokenizer.encode(text), params.kwargs["stop_token_ids"][0]]
            logprobs = [{t: Logprob(-1.0)} for t in ids]
            completion = CompletionOutput(0, "", ids, -float(len(ids)), logprobs, "stop")
            outputs.append(
                RequestOutput(f"r{index}", None, request["prompt_token_ids"], [completion])
            )
        return outputs

    def collective_rpc(
        self, method: Any, timeout: Any = None, args: tuple = (), kwargs: Any = None
    ) -> list:
        assert method == "reload_weights" and kwargs["is_checkpoint_format"] is True
        self.calls.append(("reload_weights",))
        for name, tensor in kwargs["weights_iterator"]:
            assert not tensor.requires_grad
            self.pushed[name] = tensor.clone()
        return [None]

    def sleep(self, level: int = 1) -> None:
        self.calls.append(("sleep", level))

    def wake_up(self, tags: list[str] | None = None) -> bool:
        self.calls.append(("wake_up", tags))
        return True

    def reset_prefix_cache(self) -> bool:
        self.calls.append(("reset_prefix_cache",))
        return True

    def update_weight_version(self, version: str) -> None:
        self.calls.append(("update_weight_version", version))

    def shutdown(self) -> None:
        self.calls.append(("shutdown",))


def test_training_loop_with_vllm_rollouts(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osworld_agents.engines.vllm_engine import VLLMEngine
    from osworld_agents.trainer.train import main
    from safetensors.torch import load_file
    from test_trainer_support import fake_config

    calls: list[tuple[Any, ...]] = []
    built: list[LoopFakeLLM] = []

    def make_llm(**kwargs: Any) -> LoopFakeLLM:
        built.append(LoopFakeLLM(calls, **kwargs))
        return built[-1]

    class FakeSamplingParams:
        def __init__(self, **kwargs: Any):
            self.kwargs = kwargs

    module = types.ModuleType("vllm")
    module.LLM = make_llm  # type: ignore[attr-defined]
    module.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setenv(MULTIPROCESSING_ENV, "0")
    monkeypatch.delenv(MULTIPROCESSING_ENV)

    versions: list[int] = []
    original = VLLMEngine.generate

    @functools.wraps(original)
    def generate(self: VLLMEngine, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        versions.extend(int(g.extra["weight_version"]) for g in out)
        calls.append(("versions", tuple(int(g.extra["weight_version"]) for g in out)))
        return out

    monkeypatch.setattr(VLLMEngine, "generate", generate)
    config = fake_config(
        tiny_dir,
        tmp_path / "run",
        rollout_engine="vllm",
        iterations=2,
        vllm_gpu_memory_utilization=0.3,
    )
    result = main(config)
    assert result.iterations_done == 2

    (llm,) = built  # one engine for the whole run
    assert llm.kwargs["model"] == str(tiny_dir)
    assert llm.kwargs["gpu_memory_utilization"] == 0.3
    assert llm.kwargs["enable_sleep_mode"] is True
    assert llm.kwargs["max_model_len"] == config.max_sequence_tokens + config.max_new_tokens
    assert llm.kwargs["limit_mm_per_prompt"]["image"]["count"] == config.max_steps
    assert llm.kwargs["mm_processor_kwargs"] == {
        "min_pixels": config.min_pixels,
        "max_pixels": config.max_pixels,
    }

    # Per iteration: generate (at the current version) -> sleep -> wake weights -> push.
    kinds = [c[0] for c in calls]
    pushes = [i for i, k in enumerate(kinds) if k == "reload_weights"]
    assert len(pushes) == 2
    for iteration, push in enumerate(pushes):
        begin = pushes[iteration - 1] + 1 if iteration else 0
        window = calls[begin:push]
        assert ("sleep", 1) in window and ("wake_up", ["weights"]) in window
        assert window.index(("sleep", 1)) > max(
            i for i, c in enumerate(window) if c[0] == "generate"
        )
        assert calls[push + 1] == ("update_weight_version", str(iteration + 1))
        sampled = {v for c in window if c[0] == "versions" for v in c[1]}
        assert sampled == {iteration}
    assert sorted(set(versions)) == [0, 1]
    assert calls[-1] == ("shutdown",)  # the run stops its engine

    # The last push holds exactly the trained weights the final checkpoint saved.
    saved = load_file(str(result.checkpoint / "model" / "model.safetensors"))
    policy = load_policy_model(result.checkpoint / "model", "float32")
    trained = dict(policy.model.named_parameters())
    assert set(trained) <= set(llm.pushed)
    for name, tensor in trained.items():
        assert torch.equal(llm.pushed[name], tensor), name
    first = load_policy_model(tiny_dir, "float32").model
    assert not torch.equal(first.lm_head.weight, trained["lm_head.weight"])  # it trained
    assert saved  # the checkpoint is there to compare with
