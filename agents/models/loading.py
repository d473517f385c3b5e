"""Load a Qwen2.5-VL-family policy (tiny test model, UI-TARS-1.5-7B) and its input processors.

The engines need the model, the tokenizer and the image processor, not the stock multimodal
processor: that one also builds a video processor, which requires torchvision. Loading the two
parts directly works on machines with and without torchvision alike.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_gym.errors import DependencyNotInstalled

logger = logging.getLogger(__name__)

__all__ = ["UI_TARS_1_5_7B", "ModelUnavailableError", "PolicyModel", "load_policy_model"]

UI_TARS_1_5_7B = "ByteDance-Seed/UI-TARS-1.5-7B"


class ModelUnavailableError(OSError):
    """The model is neither a local folder nor loadable from the Hugging Face hub or its cache."""


@dataclass(frozen=True)
class PolicyModel:
    """A loaded policy and the pieces that turn conversations into its inputs.

    Attributes:
        model: The ``Qwen2_5_VLForConditionalGeneration`` in eval mode.
        tokenizer: Its tokenizer.
        image_processor: Its image processor (``pixel_values`` and ``image_grid_thw`` per image).
        source: The folder or hub id it came from.
    """

    model: Any
    tokenizer: Any
    image_processor: Any
    source: str


def load_policy_model(
    path_or_hub_id: str | os.PathLike[str],
    dtype: Any = "auto",
    device: Any = "cpu",
    *,
    image_backend: str | None = None,
    attn_implementation: str = "sdpa",
) -> PolicyModel:
    """Load a Qwen2.5-VL-family model, its tokenizer and its image processor.

    Args:
        path_or_hub_id: A local folder (e.g. one written by
            ``build_tiny_qwen()``) or a hub id such as
            ``UI_TARS_1_5_7B``. A folder is read offline; a hub id goes through the hub's
            local cache, and the network where the hub is reachable.
        dtype: ``torch.dtype`` or its name (``"bfloat16"``, ``"float32"``); ``"auto"`` keeps the
            checkpoint's (bf16 for UI-TARS, fp32 for the tiny model).
        device: Where the weights go (``"cpu"``, ``"cuda:0"``, a ``torch.device``).
        image_backend: ``"pil"`` or ``"torchvision"``; None lets transformers choose (torchvision
            where installed, as vLLM does, else PIL). The two resize slightly differently, so
            give every engine and the trainer of one run the same backend.
        attn_implementation: ``"sdpa"`` (default), ``"eager"`` or ``"flash_attention_2"``.

    Returns:
        The ``PolicyModel``, with the model in eval mode.

    Raises:
        DependencyNotInstalled: torch or transformers is missing.
        FileNotFoundError: A local-looking path does not exist.
        ModelUnavailableError: A hub id could not be loaded (no network, offline mode, not in
            the cache, gated); the message says how to get the folder instead.
    """
    try:
        import torch
        from transformers import (
            AutoImageProcessor,
            AutoTokenizer,
            Qwen2_5_VLForConditionalGeneration,
        )
    except ImportError as e:
        raise DependencyNotInstalled(
            "the policy models need torch and transformers: pip install 'osworld-gym[train]'"
        ) from e

    source = str(path_or_hub_id)
    local = Path(source).expanduser()
    is_local = local.is_dir()
    if not is_local and _looks_like_path(source):
        raise FileNotFoundError(f"no model folder at {local}")
    name = str(local) if is_local else source
    if isinstance(dtype, str) and dtype != "auto":
        dtype = getattr(torch, dtype)
    try:
        # The small files first, so an unreachable hub fails in seconds, not after a download.
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=is_local)
        image_processor = AutoImageProcessor.from_pretrained(
            name, local_files_only=is_local, backend=image_backend
        )
        model = Qwen2_5_VLForConditionalGeneration.from_pretrained(
            name,
            dtype=dtype,
            attn_implementation=attn_implementation,
            local_files_only=is_local,
        )
    except OSError as e:
        if is_local:
            raise
        raise ModelUnavailableError(_hub_hint(source, e)) from e
    model.to(device)
    model.eval()
    logger.info("loaded %s (%s, %s) on %s", source, type(model).__name__, model.dtype, device)
    return PolicyModel(model, tokenizer, image_processor, source)


def _looks_like_path(source: str) -> bool:
    """Hub ids are ``owner/name`` (or a bare name); anything else must be a mistaken path."""
    return source.startswith((".", "/", "~")) or source.count("/") > 1


def _hub_hint(source: str, error: BaseException) -> str:
    offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
    why = "offline mode is on (HF_HUB_OFFLINE)" if offline else "the hub may be unreachable"
    return (
        f"could not load {source!r} from the Hugging Face hub or its local cache: {why} "
        f"({type(error).__name__}: {error}). Download it on a machine that reaches the hub "
        f"(`hf download {source} --local-dir DIR`), copy DIR here and pass the folder instead."
    )
