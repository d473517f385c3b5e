"""VLLMEngine without vLLM: request building, sampling arguments, output conversion, weight names,
and the engine's orchestration (construction, generate, weight pushes, sleep) against a fake
``vllm`` module. The real engine is exercised by scripts/gpu_check.sh on a GPU machine."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from osworld_agents.engines.chat_encoding import QwenChatEncoder  # noqa: E402
from osworld_agents.engines.vllm_engine import (  # noqa: E402
    VLLM_INSTALL_HINT,
    VLLMEngine,
    VLLMEngineConfig,
    build_request,
    hf_to_vllm_name,
    import_vllm,
    iter_trainer_weights,
    llm_kwargs,
    normalize_trainer_name,
    sampled_logprobs,
    sampling_kwargs,
    to_generation,
    vllm_parameter_name,
)
from osworld_agents.models import load_policy_model  # noqa: E402
from safetensors import safe_open  # noqa: E402
from test_trainer_support import make_image, tiny_model_dir  # noqa: E402
from transformers import AutoImageProcessor, AutoTokenizer  # noqa: E402

from osworld_gym.errors import DependencyNotInstalled  # noqa: E402
from osworld_gym.policies.conversation import Conversation, TextPart  # noqa: E402
from osworld_gym.policies.engine import RolloutEngine, SamplingParams  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

MULTIPROCESSING_ENV = "VLLM_ENABLE_V1_MULTIPROCESSING"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory)  # one build per session, shared


@pytest.fixture(scope="module")
def encoder(tiny_dir: Path) -> QwenChatEncoder:
    return QwenChatEncoder(
        AutoTokenizer.from_pretrained(tiny_dir), AutoImageProcessor.from_pretrained(tiny_dir)
    )


@pytest.fixture(scope="module")
def trainer_state_dict(tiny_dir: Path) -> dict[str, torch.Tensor]:
    return load_policy_model(tiny_dir, "float32").model.state_dict()


def multi_turn(encoder: QwenChatEncoder) -> Conversation:
    """Two screenshots in different turns, and a sampled assistant turn spliced as its ids."""
    conversation = Conversation()
    conversation.add("system", TextPart("You are a GUI agent."))
    conversation.add("user", TextPart("Open the file."), make_image(84, 56, 0))
    sampled = tuple(encoder.tokenize("click(start_box='(1,2)')")) + (encoder.end_of_turn_id,)
    conversation.add("assistant", TextPart("click(start_box='(1,2)')"), token_ids=sampled)
    conversation.add(
        "user", TextPart("Next."), make_image(56, 112, 1), TextPart("And"), make_image(56, 56, 2)
    )
    return conversation


def text_only() -> Conversation:
    conversation = Conversation()
    conversation.add("user", TextPart("No screenshot this time."))
    return conversation


def expand(collapsed: list[int], pad: int, counts: list[int]) -> list[int]:
    """What vLLM does with a token prompt: each placeholder becomes the image's token count."""
    out, images = [], iter(counts)
    for token in collapsed:
        out.extend([pad] * next(images) if token == pad else [token])
    assert next(images, None) is None, "more images than placeholders"
    return out


# --- requests -----------------------------------------------------------------------------------


def test_request_is_the_collapsed_encoder_prompt_with_images_in_order(
    encoder: QwenChatEncoder,
) -> None:
    conversation = multi_turn(encoder)
    request = build_request(encoder, conversation)
    encoded = encoder.encode_prompt(conversation)
    pad = encoder.image_token_id

    assert request.prompt_token_ids == encoded.collapsed_input_ids()
    assert request.prompt_tokens == len(encoded)
    assert request.prompt_token_ids.count(pad) == 3
    # Expanded with the encoder's own per-image counts, the prompt is the training prefix.
    counts = (encoded.image_grid_thw.prod(-1) // encoder.image_processor.merge_size**2).tolist()
    assert counts == [6, 8, 4]
    assert expand(request.prompt_token_ids, pad, counts) == encoded.input_ids
    # The spliced assistant ids appear verbatim.
    sampled = list(conversation.turns[2].token_ids)
    ids = request.prompt_token_ids
    assert any(ids[i : i + len(sampled)] == sampled for i in range(len(ids)))
    # Images: PIL, RGB, same pixels and order as the conversation's.
    originals = list(conversation.images())
    assert [im.size for im in request.images] == [(84, 56), (56, 112), (56, 56)]
    for image, original in zip(request.images, originals, strict=True):
        assert image.mode == "RGB"
        assert np.array_equal(np.asarray(image), np.asarray(original.to_pil()))

    prompt = request.to_prompt()
    assert set(prompt) == {"prompt_token_ids", "multi_modal_data"}
    assert prompt["prompt_token_ids"] == request.prompt_token_ids
    assert prompt["multi_modal_data"]["image"] == request.images


def test_text_only_request_has_no_multimodal_data(encoder: QwenChatEncoder) -> None:
    request = build_request(encoder, text_only())
    assert request.images == []
    assert request.prompt_token_ids == encoder.encode_prompt(text_only()).input_ids
    assert request.to_prompt() == {"prompt_token_ids": request.prompt_token_ids}


# --- sampling -----------------------------------------------------------------------------------


def test_sampling_kwargs_for_rollouts() -> None:
    kwargs = sampling_kwargs(
        SamplingParams(temperature=1.0, max_new_tokens=64, seed=3),
        stop_token_ids=(7, 5),
        banned_token_ids=(11, 12),
        seed=42,
    )
    assert kwargs == {
        "n": 1,
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,  # 0 (off) becomes vLLM's -1
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tokens": 64,
        "min_tokens": 0,
        "seed": 42,
        "logprobs": 0,
        "stop_token_ids": [7, 5],
        "ignore_eos": False,
        "logit_bias": {11: -100.0, 12: -100.0},
        "detokenize": False,
        "skip_special_tokens": False,
    }


def test_sampling_kwargs_top_k_top_p_and_greedy() -> None:
    truncated = sampling_kwargs(
        SamplingParams(temperature=0.6, top_p=0.9, top_k=20), stop_token_ids=(7,), seed=1
    )
    assert (truncated["temperature"], truncated["top_p"], truncated["top_k"]) == (0.6, 0.9, 20)
    assert truncated["logit_bias"] is None

    greedy = sampling_kwargs(
        SamplingParams(temperature=0.0, top_p=0.5, top_k=3, max_new_tokens=8),
        stop_token_ids=(7,),
        seed=9,
    )
    assert greedy["temperature"] == 0.0
    assert (greedy["top_p"], greedy["top_k"], greedy["seed"]) == (1.0, -1, None)
    assert (greedy["max_tokens"], greedy["logprobs"]) == (8, 0)


# --- outputs ------------------------------------------------------------------------------------


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    outputs: list[CompletionOutput]
    finished: bool = True
    num_cached_tokens: int | None = 0


def completion(
    ids: list[int], values: list[float], finish: str, stop_reason: Any = None
) -> CompletionOutput:
    # Each dict also holds another (top-ranked) id, as with logprobs=N > 0 or a non-top sample.
    logprobs = [
        {t: Logprob(v, rank=2), t + 1: Logprob(-0.01, rank=1)}
        for t, v in zip(ids, values, strict=True)
    ]
    return CompletionOutput(0, "", ids, sum(values), logprobs, finish, stop_reason)


def text_ids(encoder: QwenChatEncoder, text: str) -> list[int]:
    return encoder.tokenize(text)


def test_output_stopped_at_end_of_turn(encoder: QwenChatEncoder) -> None:
    ids = text_ids(encoder, "type(content='hi')") + [encoder.end_of_turn_id]
    values = [-0.5 - i for i in range(len(ids))]
    output = RequestOutput(
        "r1", None, [1, 2, 3], [completion(ids, values, "stop", encoder.end_of_turn_id)]
    )
    generation = to_generation(output, encoder, prompt_tokens=40, weight_version=3, temperature=0.7)
    assert generation.token_ids == ids
    assert generation.logprobs == values
    assert generation.finish_reason == "stop"
    assert generation.text == encoder.decode(ids) == "type(content='hi')"
    assert generation.prompt_tokens == 40
    assert generation.extra["weight_version"] == 3
    assert generation.extra["logprob_temperature"] == 0.7
    assert generation.extra["engine_prompt_tokens"] == 3
    assert generation.extra["request_id"] == "r1"


def test_output_cut_by_length(encoder: QwenChatEncoder) -> None:
    ids = text_ids(encoder, "hotkey(key='ctrl c')")
    output = RequestOutput("r2", None, None, [completion(ids, [-1.0] * len(ids), "length")])
    generation = to_generation(output, encoder, prompt_tokens=5, weight_version=0, temperature=1)
    assert generation.finish_reason == "length"
    assert generation.token_ids == ids
    assert "engine_prompt_tokens" not in generation.extra


def test_output_is_cut_after_the_first_end_of_turn(encoder: QwenChatEncoder) -> None:
    # <|endoftext|> is a stop id too; whatever vLLM returned after it is dropped.
    ids = text_ids(encoder, "wait()") + [encoder.stop_token_ids[1]] + text_ids(encoder, "x")
    output = RequestOutput("r3", None, None, [completion(ids, [-1.0] * len(ids), "stop")])
    generation = to_generation(output, encoder, prompt_tokens=5, weight_version=0, temperature=1)
    assert generation.token_ids == ids[: len(ids) - 1]
    assert len(generation.logprobs) == len(generation.token_ids)
    assert generation.finish_reason == "stop"


def test_output_errors(encoder: QwenChatEncoder) -> None:
    ids = text_ids(encoder, "wait()")
    aborted = RequestOutput("r4", None, None, [completion(ids, [-1.0] * len(ids), "abort")])
    with pytest.raises(RuntimeError, match="aborted"):
        to_generation(aborted, encoder, prompt_tokens=1, weight_version=0, temperature=1)
    with pytest.raises(ValueError, match="no log-probs"):
        sampled_logprobs(ids, None)
    with pytest.raises(ValueError, match="entries"):
        sampled_logprobs(ids, [{ids[0]: Logprob(-1.0)}])
    with pytest.raises(ValueError, match="no log-prob for sampled token"):
        sampled_logprobs([5], [{6: Logprob(-1.0)}])
    assert sampled_logprobs([5, 6], [{5: -0.25}, {6: Logprob(-2.0)}]) == [-0.25, -2.0]


# --- weight names -------------------------------------------------------------------------------


def expected_vllm_name(hf_name: str) -> str:
    """The spec's mapping, for transformers >= 4.52 names."""
    for prefix, replacement in (
        ("model.language_model.", "language_model.model."),
        ("model.visual.", "visual."),
        ("lm_head.", "language_model.lm_head."),
    ):
        if hf_name.startswith(prefix):
            return replacement + hf_name[len(prefix) :]
    raise AssertionError(f"unexpected trainer name {hf_name}")


def test_every_tiny_weight_maps_to_its_vllm_name(
    tiny_dir: Path, trainer_state_dict: dict[str, torch.Tensor]
) -> None:
    names = list(trainer_state_dict)
    assert len(names) == 57
    mapped = {name: hf_to_vllm_name(name) for name in names}
    assert mapped == {name: expected_vllm_name(name) for name in names}
    assert mapped["lm_head.weight"] == "language_model.lm_head.weight"
    assert (
        mapped["model.language_model.embed_tokens.weight"]
        == "language_model.model.embed_tokens.weight"
    )
    assert mapped["model.visual.blocks.1.attn.qkv.bias"] == "visual.blocks.1.attn.qkv.bias"
    assert mapped["model.visual.merger.mlp.2.weight"] == "visual.merger.mlp.2.weight"
    # Idempotent: vLLM's own mapper leaves its names alone, so either form can be pushed.
    assert all(hf_to_vllm_name(v) == v for v in mapped.values())

    # The checkpoint on disk uses the original names (model.layers..., visual...): same targets.
    with safe_open(str(tiny_dir / "model.safetensors"), "pt") as checkpoint:
        checkpoint_names = list(checkpoint.keys())
    assert {hf_to_vllm_name(n) for n in checkpoint_names} == set(mapped.values())
    assert any(n.startswith("model.layers.") for n in checkpoint_names)


def test_vllm_parameter_names_fuse_qkv_and_gate_up(
    trainer_state_dict: dict[str, torch.Tensor],
) -> None:
    assert vllm_parameter_name("model.language_model.layers.0.self_attn.k_proj.bias") == (
        "language_model.model.layers.0.self_attn.qkv_proj.bias",
        "k",
    )
    assert vllm_parameter_name("model.language_model.layers.1.mlp.up_proj.weight") == (
        "language_model.model.layers.1.mlp.gate_up_proj.weight",
        1,
    )
    assert vllm_parameter_name("model.visual.blocks.0.mlp.gate_proj.bias") == (
        "visual.blocks.0.mlp.gate_up_proj.bias",
        0,
    )
    assert vllm_parameter_name("model.visual.blocks.0.attn.qkv.weight") == (
        "visual.blocks.0.attn.qkv.weight",
        None,
    )
    targets = {vllm_parameter_name(n)[0] for n in trainer_state_dict}
    # Per decoder layer q/k/v weight+bias -> 2 and gate/up -> 1 (-5 each); per vision block
    # gate/up weight+bias -> 2 (-2 each).
    assert len(targets) == 57 - 2 * 5 - 2 * 2


def test_trainer_names_are_normalised_and_checked() -> None:
    assert (
        normalize_trainer_name(
            "module.model.language_model.layers.0._checkpoint_wrapped_module.mlp.up_proj.weight"
        )
        == "model.language_model.layers.0.mlp.up_proj.weight"
    )
    assert normalize_trainer_name("_orig_mod.lm_head.weight") == "lm_head.weight"

    class FakeDTensor:
        def __init__(self, full: torch.Tensor):
            self.full = full

        def full_tensor(self) -> torch.Tensor:
            return self.full

    weight = torch.ones(2, requires_grad=True)
    pushed = list(
        iter_trainer_weights(
            [
                ("module.lm_head.weight", weight),
                ("model.language_model.rotary_emb.inv_freq", torch.ones(1)),
                ("model.visual.rotary_pos_emb.original_inv_freq", torch.ones(1)),
                ("model.visual.merger.ln_q.weight", FakeDTensor(torch.zeros(3))),
            ]
        )
    )
    assert [name for name, _ in pushed] == ["lm_head.weight", "model.visual.merger.ln_q.weight"]
    assert not pushed[0][1].requires_grad
    assert torch.equal(pushed[1][1], torch.zeros(3))
    with pytest.raises(KeyError, match="value_head"):
        list(iter_trainer_weights({"value_head.weight": torch.ones(1)}))


# --- construction -------------------------------------------------------------------------------


def test_llm_kwargs_use_arpo_settings() -> None:
    kwargs = llm_kwargs("/models/ui-tars", VLLMEngineConfig())
    assert kwargs == {
        "model": "/models/ui-tars",
        "dtype": "bfloat16",
        "seed": 0,
        "max_model_len": 65536,
        "limit_mm_per_prompt": {"image": 15},
        "gpu_memory_utilization": 0.6,
        "enforce_eager": False,
        "enable_sleep_mode": False,
        "enable_prefix_caching": True,
        "tensor_parallel_size": 1,
        "logprobs_mode": "processed_logprobs",
        "generation_config": "vllm",
    }
    custom = llm_kwargs(
        Path("/m"),
        VLLMEngineConfig(
            max_images=4,
            image_size=(1932, 1092),
            enforce_eager=True,
            kv_cache_memory_bytes=1 << 30,
            mm_processor_kwargs={"max_pixels": 2116800},
            distributed_executor_backend="external_launcher",
            extra_llm_kwargs={"max_num_seqs": 8},
        ),
    )
    assert custom["limit_mm_per_prompt"] == {"image": {"count": 4, "width": 1932, "height": 1092}}
    assert custom["enforce_eager"] is True
    assert custom["kv_cache_memory_bytes"] == 1 << 30
    assert custom["mm_processor_kwargs"] == {"max_pixels": 2116800}
    assert custom["distributed_executor_backend"] == "external_launcher"
    assert custom["max_num_seqs"] == 8


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        VLLMEngineConfig(gpu_memory_utilization=1.5)
    with pytest.raises(ValueError, match="weight_sync"):
        VLLMEngineConfig(weight_sync="nccl")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="worker in this process"):
        VLLMEngineConfig(distributed_executor_backend="ray")
    VLLMEngineConfig(distributed_executor_backend="ray", weight_sync="none")


def test_missing_vllm_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tiny_dir: Path) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'osworld-gym\[vllm\]'") as e:
        VLLMEngine(tiny_dir)
    assert isinstance(e.value, ImportError)
    assert VLLM_INSTALL_HINT in str(e.value)
    with pytest.raises(DependencyNotInstalled):
        import_vllm()


# --- the engine against a fake vLLM -------------------------------------------------------------


class FakeModel:
    """The worker's model: load_weights as vLLM's (renames, fuses, returns the loaded names)."""

    def __init__(self, parameter_names: set[str]):
        self.parameter_names = parameter_names
        self.loaded: list[str] = []

    def load_weights(self, weights: Any) -> set[str]:
        loaded = set()
        for name, tensor in weights:
            assert isinstance(tensor, torch.Tensor) and not tensor.requires_grad
            self.loaded.append(name)
            loaded.add(vllm_parameter_name(name)[0])
        return loaded

    def named_parameters(self) -> Iterator[tuple[str, None]]:
        return ((name, None) for name in sorted(self.parameter_names))


@dataclass
class FakeLLM:
    """Records what the engine asks of ``vllm.LLM``."""

    kwargs: dict[str, Any]
    parameter_names: set[str]
    has_reload: bool = True
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    sampling: list[Any] = field(default_factory=list)
    reloaded: list[str] = field(default_factory=list)
    asleep: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.model = FakeModel(self.parameter_names)
        self.worker = types.SimpleNamespace(model_runner=types.SimpleNamespace(model=self.model))
        self.llm_engine = types.SimpleNamespace(
            model_executor=object(),
            reset_encoder_cache=lambda: self.calls.append(("reset_encoder_cache",)),
        )

    def generate(self, prompts: list[dict[str, Any]], sampling: list[Any], use_tqdm: bool) -> list:
        assert use_tqdm is False and len(prompts) == len(sampling)
        self.calls.append(("generate", len(prompts)))
        self.prompts.extend(prompts)
        self.sampling.extend(sampling)
        outputs = []
        for index, (prompt, params) in enumerate(zip(prompts, sampling, strict=True)):
            stop = params.kwargs["stop_token_ids"][0]
            ids = [prompt["prompt_token_ids"][0], stop]
            logprobs = [{t: Logprob(-0.5 * (i + 1))} for i, t in enumerate(ids)]
            outputs.append(
                RequestOutput(
                    f"req-{index}",
                    None,
                    prompt["prompt_token_ids"],
                    [CompletionOutput(0, "", ids, -1.5, logprobs, "stop", stop)],
                )
            )
        return outputs

    def collective_rpc(
        self, method: Any, timeout: float | None = None, args: tuple = (), kwargs: Any = None
    ) -> list[Any]:
        if method == "reload_weights":
            if not self.has_reload:
                raise AttributeError("'Worker' object has no attribute 'reload_weights'")
            assert kwargs["is_checkpoint_format"] is True
            self.calls.append(("reload_weights",))
            self.reloaded.extend(name for name, _ in kwargs["weights_iterator"])
            return [None]
        assert callable(method)
        self.calls.append((method.__name__,))
        return [method(self.worker, *args, **(kwargs or {}))]

    def sleep(self, level: int = 1) -> None:
        self.calls.append(("sleep", level))
        self.asleep |= {"scheduling"} if level == 0 else {"weights", "kv_cache"}

    def wake_up(self, tags: list[str] | None = None) -> bool:
        self.calls.append(("wake_up", tags))
        self.asleep -= set(self.asleep if tags is None else tags)
        return not self.asleep

    def reset_prefix_cache(self) -> bool:
        self.calls.append(("reset_prefix_cache",))
        return True

    def update_weight_version(self, version: str) -> None:
        self.calls.append(("update_weight_version", version))


@dataclass
class FakeVLLM:
    module: types.ModuleType
    created: list[FakeLLM]


@pytest.fixture()
def fake_vllm(
    monkeypatch: pytest.MonkeyPatch, trainer_state_dict: dict[str, torch.Tensor]
) -> FakeVLLM:
    created: list[FakeLLM] = []
    parameter_names = {vllm_parameter_name(n)[0] for n in trainer_state_dict}

    def make_llm(**kwargs: Any) -> FakeLLM:
        llm = FakeLLM(kwargs, parameter_names)
        created.append(llm)
        return llm

    class FakeSamplingParams:
        def __init__(self, **kwargs: Any):
            self.kwargs = kwargs

    module = types.ModuleType("vllm")
    module.LLM = make_llm  # type: ignore[attr-defined]
    module.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    # Let the engine set the variable; monkeypatch restores the original state afterwards.
    monkeypatch.setenv(MULTIPROCESSING_ENV, "0")
    monkeypatch.delenv(MULTIPROCESSING_ENV)
    return FakeVLLM(module, created)


def test_engine_builds_an_in_process_llm(fake_vllm: FakeVLLM, tiny_dir: Path) -> None:
    config = VLLMEngineConfig(max_images=4, image_size=(112, 56), enable_sleep_mode=True)
    engine = VLLMEngine(tiny_dir, config)
    assert isinstance(engine, RolloutEngine)
    (llm,) = fake_vllm.created
    assert llm.kwargs == llm_kwargs(tiny_dir, config)
    assert os.environ[MULTIPROCESSING_ENV] == "0"
    assert engine.llm is llm
    assert engine.parameter_names() == sorted(llm.parameter_names)


def test_engine_refuses_a_multiprocess_engine_core(
    fake_vllm: FakeVLLM, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MULTIPROCESSING_ENV, "1")
    with pytest.raises(ValueError, match=MULTIPROCESSING_ENV):
        VLLMEngine(tiny_dir)
    VLLMEngine(tiny_dir, VLLMEngineConfig(weight_sync="none"))  # no pushes: allowed
    assert os.environ[MULTIPROCESSING_ENV] == "1"


def test_engine_generate(fake_vllm: FakeVLLM, tiny_dir: Path, encoder: QwenChatEncoder) -> None:
    engine = VLLMEngine(tiny_dir, VLLMEngineConfig(max_images=4))
    conversations = [multi_turn(encoder), text_only()]
    generations = engine.generate(conversations, SamplingParams(max_new_tokens=9, seed=100))
    (llm,) = fake_vllm.created
    assert llm.prompts == [build_request(encoder, c).to_prompt() for c in conversations]
    assert [s.kwargs["seed"] for s in llm.sampling] == [100, 101]  # one seed per request
    assert llm.sampling[0].kwargs["max_tokens"] == 9
    assert llm.sampling[0].kwargs["logit_bias"] == {
        t: -100.0 for t in sorted(encoder.placeholder_ids)
    }
    assert llm.sampling[0].kwargs["stop_token_ids"] == list(encoder.stop_token_ids)
    for generation, conversation in zip(generations, conversations, strict=True):
        assert generation.token_ids[-1] == encoder.end_of_turn_id
        assert generation.logprobs == [-0.5, -1.0]
        assert generation.finish_reason == "stop"
        assert generation.prompt_tokens == len(encoder.encode_prompt(conversation))
        assert generation.extra["weight_version"] == 0

    greedy = engine.generate(conversations, SamplingParams(temperature=0.0))
    assert [s.kwargs["seed"] for s in llm.sampling[2:]] == [None, None]
    assert greedy[0].extra["logprob_temperature"] == 1.0
    assert engine.generate([], SamplingParams()) == []

    # Per-conversation seeds override the call's seed.
    engine.generate(conversations, SamplingParams(seed=100), seeds=[7, 3])
    assert [s.kwargs["seed"] for s in llm.sampling[4:]] == [7, 3]
    with pytest.raises(ValueError, match="1 seeds for 2 conversations"):
        engine.generate(conversations, SamplingParams(), seeds=[7])


def test_engine_rejects_prompts_vllm_cannot_take(
    fake_vllm: FakeVLLM, tiny_dir: Path, encoder: QwenChatEncoder
) -> None:
    engine = VLLMEngine(tiny_dir, VLLMEngineConfig(max_images=2, max_model_len=4096))
    with pytest.raises(ValueError, match="3 images"):
        engine.generate([multi_turn(encoder)], SamplingParams())
    engine = VLLMEngine(tiny_dir, VLLMEngineConfig(max_model_len=10))
    with pytest.raises(ValueError, match="max_model_len=10"):
        engine.generate([text_only()], SamplingParams())
    assert not any(call[0] == "generate" for llm in fake_vllm.created for call in llm.calls)


def test_update_weights_reloads_in_place_and_resets_caches(
    fake_vllm: FakeVLLM, tiny_dir: Path, trainer_state_dict: dict[str, torch.Tensor]
) -> None:
    engine = VLLMEngine(tiny_dir)
    (llm,) = fake_vllm.created
    wrapped = {f"module.{k}": v for k, v in trainer_state_dict.items()}
    engine.update_weights(wrapped, version=7)
    assert llm.reloaded == list(trainer_state_dict)
    assert engine.weight_version == 7
    assert llm.calls == [
        ("reload_weights",),
        ("update_weight_version", "7"),
        ("reset_prefix_cache",),
        ("reset_encoder_cache",),
    ]
    engine.update_weights(iter(trainer_state_dict.items()))  # a generator works too
    assert engine.weight_version == 8
    with pytest.raises(ValueError, match="no weights"):
        engine.update_weights({})


def test_update_weights_falls_back_to_load_weights(
    fake_vllm: FakeVLLM, tiny_dir: Path, trainer_state_dict: dict[str, torch.Tensor]
) -> None:
    engine = VLLMEngine(tiny_dir)
    (llm,) = fake_vllm.created
    llm.has_reload = False
    engine.update_weights(trainer_state_dict)
    assert llm.model.loaded == list(trainer_state_dict)
    assert ("_load_weights_on_worker",) in llm.calls


def test_level_two_sleep_needs_a_full_push_before_generating(
    fake_vllm: FakeVLLM,
    tiny_dir: Path,
    encoder: QwenChatEncoder,
    trainer_state_dict: dict[str, torch.Tensor],
) -> None:
    config = VLLMEngineConfig(enable_sleep_mode=True, weight_sync="load_weights")
    engine = VLLMEngine(tiny_dir, config)
    (llm,) = fake_vllm.created
    engine.sleep(level=2)
    assert engine.sleeping == {"weights", "kv_cache"}
    with pytest.raises(RuntimeError, match="update_weights"):
        engine.generate([text_only()], SamplingParams())

    partial = {k: v for k, v in trainer_state_dict.items() if "visual" not in k}
    with pytest.raises(RuntimeError, match="every parameter"):
        engine.update_weights(partial)
    llm.calls.clear()
    engine.update_weights(trainer_state_dict, version=2)
    # Weights woken first; the KV cache stays asleep (no cache reset) until generation.
    assert llm.calls == [("_load_weights_on_worker",), ("update_weight_version", "2")]
    assert engine.sleeping == {"kv_cache"}
    engine.generate([text_only()], SamplingParams())
    assert llm.calls[-2:] == [("wake_up", ["kv_cache"]), ("generate", 1)]
    assert engine.sleeping == frozenset()

    engine.sleep(level=1)  # weights kept (in CPU memory): generation just wakes everything
    engine.generate([text_only()], SamplingParams())
    assert llm.calls[-3:] == [("sleep", 1), ("wake_up", None), ("generate", 1)]

    engine.update_weights(partial)  # awake, not discarded: a partial push only warns
    engine.sleep(level=0)
    engine.wake_up(["scheduling"])
    assert engine.sleeping == frozenset()
    with pytest.raises(ValueError, match="unknown wake-up tags"):
        engine.wake_up(["gpu"])


def test_sleep_needs_sleep_mode_and_pushes_need_weight_sync(
    fake_vllm: FakeVLLM, tiny_dir: Path, trainer_state_dict: dict[str, torch.Tensor]
) -> None:
    engine = VLLMEngine(tiny_dir)
    with pytest.raises(RuntimeError, match="enable_sleep_mode"):
        engine.sleep()
    frozen = VLLMEngine(tiny_dir, VLLMEngineConfig(weight_sync="none"))
    with pytest.raises(RuntimeError, match="weight_sync='none'"):
        frozen.update_weights(trainer_state_dict)
    frozen.close()
    with pytest.raises(RuntimeError, match="closed"):
        frozen.generate([text_only()], SamplingParams())


def test_reseed_and_pushed_versions(
    fake_vllm: FakeVLLM, tiny_dir: Path, trainer_state_dict: dict[str, torch.Tensor]
) -> None:
    """A reseeded engine draws the seeds a fresh one would; generations carry the pushed version."""
    engine = VLLMEngine(tiny_dir, VLLMEngineConfig(seed=5))
    fresh = VLLMEngine(tiny_dir, VLLMEngineConfig(seed=9))
    llm, fresh_llm = fake_vllm.created
    unseeded = SamplingParams(max_new_tokens=3)
    fresh.generate([text_only(), text_only()], unseeded)
    engine.generate([text_only()], unseeded)  # moves the engine's generator on
    engine.reseed(9)
    engine.generate([text_only(), text_only()], unseeded)
    assert [s.kwargs["seed"] for s in llm.sampling[1:]] == [
        s.kwargs["seed"] for s in fresh_llm.sampling
    ]
    engine.update_weights(iter(trainer_state_dict.items()), version=4)
    (generation,) = engine.generate([text_only()], unseeded)
    assert generation.extra["weight_version"] == 4
