"""The tiny Qwen2.5-VL: built offline, deterministic, loadable like any checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from osworld_agents.models import (  # noqa: E402
    UI_TARS_1_5_7B,
    ModelUnavailableError,
    build_tiny_qwen,
    load_policy_model,
)
from osworld_agents.models.qwen_vocab import SPECIAL_TOKENS  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_folder_reloads_with_stock_from_pretrained(tiny_dir: Path) -> None:
    from transformers import AutoImageProcessor, AutoTokenizer, Qwen2_5_VLForConditionalGeneration

    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"):
        assert (tiny_dir / name).is_file(), name
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    image_processor = AutoImageProcessor.from_pretrained(tiny_dir, backend="pil")
    assert 150_000 < model.num_parameters() < 300_000
    config = model.config
    assert config.image_token_id == tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert config.video_token_id == tokenizer.convert_tokens_to_ids("<|video_pad|>")
    assert config.vision_start_token_id == tokenizer.convert_tokens_to_ids("<|vision_start|>")
    assert config.vision_end_token_id == tokenizer.convert_tokens_to_ids("<|vision_end|>")
    assert config.text_config.vocab_size == len(tokenizer)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert image_processor.merge_size == 2 and image_processor.patch_size == 14
    assert model.generation_config.eos_token_id == [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]
    # Stock class names, so AutoProcessor (and vLLM) treat it like any Qwen2.5-VL checkpoint.
    processor_config = json.loads((tiny_dir / "processor_config.json").read_text())
    assert processor_config["processor_class"] == "Qwen2_5_VLProcessor"


def test_special_tokens_are_single_ids_in_qwen_order(tiny_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    ids = [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert ids == list(range(len(tokenizer) - len(SPECIAL_TOKENS), len(tokenizer)))
    for token, token_id in zip(SPECIAL_TOKENS, ids, strict=True):
        assert tokenizer.encode(f"a{token}b")[1:-1] == [token_id]


def test_tokenizer_fits_uitars_output(tiny_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    text = "Thought: I click the button.\nAction: click(start_box='(1234,56)')"
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    tokens = tokenizer.convert_ids_to_tokens(ids)
    assert "Thought" in tokens and "Action" in tokens and "Ġclick" in tokens
    assert [t for t in tokens if t.isdigit()] == list("123456")  # one digit per token
    assert len(ids) < len(text) // 2  # trained merges, not raw bytes
    unseen = "Ünïcödé ✓ 漢字"
    assert tokenizer.decode(tokenizer.encode(unseen)) == unseen  # byte fallback


def test_same_seed_same_bytes_other_seed_other_weights(tiny_dir: Path, tmp_path: Path) -> None:
    again = build_tiny_qwen(tmp_path / "again", seed=0)
    other = build_tiny_qwen(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes(), name
    assert (other / "model.safetensors").read_bytes() != (
        tiny_dir / "model.safetensors"
    ).read_bytes()


def test_size_overrides(tmp_path: Path) -> None:
    from transformers import AutoConfig

    folder = build_tiny_qwen(tmp_path / "wide", hidden_size=128, num_hidden_layers=1)
    config = AutoConfig.from_pretrained(folder)
    assert config.text_config.hidden_size == 128
    assert config.vision_config.out_hidden_size == 128
    assert config.text_config.num_hidden_layers == 1
    assert sum(config.text_config.rope_parameters["mrope_section"]) == 128 // 4 // 2
    with pytest.raises(TypeError):
        build_tiny_qwen(tmp_path / "bad", hiden_size=8)
    with pytest.raises(ValueError, match="multiple of 8"):
        build_tiny_qwen(tmp_path / "bad", hidden_size=48, num_attention_heads=4)


def test_load_policy_model_local_folder(tiny_dir: Path) -> None:
    import torch

    policy = load_policy_model(tiny_dir, dtype="bfloat16", device="cpu")
    assert not policy.model.training
    assert policy.model.dtype == torch.bfloat16
    assert type(policy.image_processor).__name__ == "Qwen2VLImageProcessorPil"
    assert policy.source == str(tiny_dir)


def test_load_policy_model_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub
    import huggingface_hub.constants

    with pytest.raises(FileNotFoundError):
        load_policy_model(tmp_path / "missing")
    # No network in tests: offline mode makes the hub lookup fail at once, from the cache.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    if huggingface_hub.try_to_load_from_cache(UI_TARS_1_5_7B, "config.json"):
        pytest.skip("UI-TARS-1.5-7B is in this machine's hub cache; loading it is not a unit test")
    with pytest.raises(ModelUnavailableError, match="hf download ByteDance-Seed/UI-TARS-1.5-7B"):
        load_policy_model(UI_TARS_1_5_7B)
