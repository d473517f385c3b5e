"""Weight names between a trainer's Qwen2.5-VL (Hugging Face names) and vLLM's model.

Used by ``VLLMEngine`` to push weights and by checks
that every pushed tensor lands in a vLLM parameter. Plain functions: no vLLM needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

HF_TO_VLLM_PREFIXES: tuple[tuple[str, str], ...] = (
    # transformers >= 4.52 names (what a trainer's state_dict() holds)
    ("model.language_model.", "language_model.model."),
    ("model.visual.", "visual."),
    # original checkpoint names (what model.safetensors holds)
    ("lm_head.", "language_model.lm_head."),
    ("model.", "language_model.model."),
)
"""``Qwen2_5_VLForConditionalGeneration.hf_to_vllm_mapper`` prefixes, in vLLM's order.

vLLM applies every matching rule in turn (no early exit); after the first rule a name starts
with ``language_model.``, so the last rule no longer matches it.
"""

# vLLM fuses these Hugging Face projections into one parameter each: the loaders take the pieces
# one by one and write them into their shard (vllm/model_executor/models/qwen2.py and the
# vision MLP of qwen2_5_vl.py). The vision attention's qkv is fused on both sides already.
_STACKED_PARAMS: tuple[tuple[str, str, str | int], ...] = (
    (".q_proj.", ".qkv_proj.", "q"),
    (".k_proj.", ".qkv_proj.", "k"),
    (".v_proj.", ".qkv_proj.", "v"),
    (".gate_proj.", ".gate_up_proj.", 0),
    (".up_proj.", ".gate_up_proj.", 1),
)

# Wrapper segments that training wrappers insert into parameter names (activation
# checkpointing, FSDP1, torch.compile); DDP adds a leading "module.".
_WRAPPER_SEGMENTS = ("_checkpoint_wrapped_module.", "_fsdp_wrapped_module.", "_orig_mod.")

# Derived buffers (rotary frequencies): recomputed by vLLM from the config, never pushed.
_DERIVED_BUFFER_SUFFIXES = (".inv_freq", ".original_inv_freq")


def normalize_trainer_name(name: str) -> str:
    """A trainer parameter name without the segments training wrappers add.

    Removes ``_checkpoint_wrapped_module.``, ``_fsdp_wrapped_module.`` and ``_orig_mod.``
    anywhere, and a leading ``module.`` (DDP).
    """
    for segment in _WRAPPER_SEGMENTS:
        name = name.replace(segment, "")
    return name.removeprefix("module.")


def hf_to_vllm_name(name: str) -> str:
    """The vLLM module path of a Qwen2.5-VL weight, as vLLM's ``hf_to_vllm_mapper`` renames it.

    ``model.language_model.X`` -> ``language_model.model.X``, ``model.visual.X`` -> ``visual.X``,
    ``lm_head.X`` -> ``language_model.lm_head.X``, and original checkpoint names ``model.X`` ->
    ``language_model.model.X`` (``visual.X`` stays). Idempotent on vLLM names.
    """
    for prefix, replacement in HF_TO_VLLM_PREFIXES:
        if name.startswith(prefix):
            name = replacement + name[len(prefix) :]
    return name


def vllm_parameter_name(name: str) -> tuple[str, str | int | None]:
    """The vLLM parameter a Hugging Face weight is loaded into, and its shard there.

    Args:
        name: A Hugging Face (or original checkpoint) weight name.

    Returns:
        ``(vllm_name, shard)``: e.g. ``model.language_model.layers.0.self_attn.k_proj.weight``
        -> ``("language_model.model.layers.0.self_attn.qkv_proj.weight", "k")``; ``shard`` is
        None for an unfused parameter.
    """
    mapped = hf_to_vllm_name(name)
    for piece, fused, shard in _STACKED_PARAMS:
        if piece in mapped:
            return mapped.replace(piece, fused, 1), shard
    return mapped, None


def iter_trainer_weights(
    weights: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
) -> Iterator[tuple[str, torch.Tensor]]:
    """Trainer weights as ``(Hugging Face name, tensor)`` pairs ready for vLLM's loader.

    Names lose wrapper segments (``normalize_trainer_name()``); derived rotary buffers are
    skipped; tensors are detached, and DTensors (FSDP2) gathered with ``full_tensor()``. Lazy: a
    generator of gathered tensors is consumed one tensor at a time.

    Raises:
        KeyError: A name is not a Qwen2.5-VL language-model or vision weight.
    """
    items = weights.items() if isinstance(weights, Mapping) else weights
    for raw_name, tensor in items:
        name = normalize_trainer_name(raw_name)
        if name.endswith(_DERIVED_BUFFER_SUFFIXES):
            continue
        if not hf_to_vllm_name(name).startswith(("language_model.", "visual.")):
            raise KeyError(f"{raw_name!r} is not a Qwen2.5-VL weight name")
        full_tensor = getattr(tensor, "full_tensor", None)
        if callable(full_tensor):
            tensor = full_tensor()
        yield name, tensor.detach()
        # Drop this gathered tensor before the next is gathered: one full tensor at a time.
        del tensor
