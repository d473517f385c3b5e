"""Build a tiny random-weight Qwen2.5-VL offline: the CPU stand-in for UI-TARS-1.5-7B.

The tiny model has the architecture of UI-TARS-1.5-7B (``Qwen2_5_VLForConditionalGeneration``:
a windowed-attention vision tower, a 2x2 patch merger and an M-RoPE decoder), Qwen's special
tokens and chat format, and an ordinary Hugging Face folder layout, so every code path of the
engines and the trainer runs on it unchanged -- only the sizes differ (about 200k parameters,
milliseconds per forward pass on a CPU). Nothing is downloaded: the tokenizer is trained here
on a small built-in corpus and the weights are initialised from a seed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from osworld_agents.models import qwen_vocab
from osworld_agents.models.tiny_tokenizer import train_tiny_tokenizer

logger = logging.getLogger(__name__)

__all__ = ["CHAT_TEMPLATE", "TinyQwenSize", "build_tiny_qwen"]

# Qwen's chat format: "<|im_start|>{role}\n{content}<|im_end|>\n" per message, one
# "<|vision_start|><|image_pad|><|vision_end|>" per image part (the processor expands the pad to
# the image's token count), and "<|im_start|>assistant\n" as the generation prompt. Unlike
# Qwen2.5-VL's own template it adds no default system message: the agent decides the prompt.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}"
)


@dataclass(frozen=True)
class TinyQwenSize:
    """Sizes of the tiny model; the defaults give about 200k parameters.

    Attributes:
        vocab_size: Tokenizer vocabulary, the 14 special tokens included.
        hidden_size: Decoder width (= the vision merger's output width).
        intermediate_size: Decoder MLP width.
        num_hidden_layers: Decoder layers.
        num_attention_heads: Decoder query heads (``hidden_size`` must divide by it and the head
            dimension must be a multiple of 8, for M-RoPE's three sections).
        num_key_value_heads: Decoder key/value heads (grouped-query attention, as in the 7B).
        vision_depth: Vision transformer blocks; the last one uses full attention, the others
            windowed attention.
        vision_hidden_size: Vision transformer width.
        vision_intermediate_size: Vision MLP width.
        vision_num_heads: Vision attention heads.
        min_pixels: Image processor's lower bound on pixels per image.
        max_pixels: Image processor's upper bound on pixels per image. The default is the
            Qwen2.5-VL checkpoints' bound, so images an agent already resized within its own
            (smaller) bounds pass through unchanged.
        rope_theta: Decoder rotary base.
    """

    vocab_size: int = 512
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    vision_depth: int = 2
    vision_hidden_size: int = 32
    vision_intermediate_size: int = 64
    vision_num_heads: int = 2
    min_pixels: int = 56 * 56
    max_pixels: int = 28 * 28 * 16384
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} must divide by num_attention_heads "
                f"{self.num_attention_heads}"
            )
        if (self.hidden_size // self.num_attention_heads) % 8:
            raise ValueError("hidden_size / num_attention_heads must be a multiple of 8 (M-RoPE)")

    def mrope_section(self) -> list[int]:
        """M-RoPE's (temporal, height, width) split of half the head dimension.

        Qwen2.5-VL-7B uses [16, 24, 24] for head dimension 128; the same 2:3:3 ratio is kept.
        The three must sum to exactly half the head dimension.
        """
        half = self.hidden_size // self.num_attention_heads // 2
        temporal = half // 4
        height = (half - temporal) // 2
        return [temporal, height, half - temporal - height]


def _model_config(size: TinyQwenSize, tokenizer):  # noqa: ANN001, ANN202 - lazy imports
    from transformers import Qwen2_5_VLConfig

    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in qwen_vocab.SPECIAL_TOKENS}
    text_config = {
        "vocab_size": len(tokenizer),
        "hidden_size": size.hidden_size,
        "intermediate_size": size.intermediate_size,
        "num_hidden_layers": size.num_hidden_layers,
        "num_attention_heads": size.num_attention_heads,
        "num_key_value_heads": size.num_key_value_heads,
        "max_position_embeddings": 32768,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": size.rope_theta,
            "mrope_section": size.mrope_section(),
        },
        "bos_token_id": ids[qwen_vocab.ENDOFTEXT],
        "eos_token_id": ids[qwen_vocab.IM_END],
        "pad_token_id": ids[qwen_vocab.ENDOFTEXT],
    }
    vision_config = {
        "depth": size.vision_depth,
        "hidden_size": size.vision_hidden_size,
        "intermediate_size": size.vision_intermediate_size,
        "num_heads": size.vision_num_heads,
        "out_hidden_size": size.hidden_size,
        "fullatt_block_indexes": [size.vision_depth - 1],
        "window_size": 112,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    return Qwen2_5_VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_id=ids[qwen_vocab.IMAGE_PAD],
        video_token_id=ids[qwen_vocab.VIDEO_PAD],
        vision_start_token_id=ids[qwen_vocab.VISION_START],
        vision_end_token_id=ids[qwen_vocab.VISION_END],
        tie_word_embeddings=False,
    )


def _init_model(config, seed: int):  # noqa: ANN001, ANN202 - lazy imports
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLForConditionalGeneration

    # A private RNG stream: the weights depend only on the seed, and the caller's global torch
    # RNG state is left as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration._from_config(
            config, attn_implementation="sdpa", dtype=torch.float32
        )
    text = config.text_config
    # Stop on <|im_end|> and <|endoftext|>, as Qwen2.5-VL's generation_config.json does.
    model.generation_config = GenerationConfig(
        bos_token_id=text.bos_token_id,
        eos_token_id=[text.eos_token_id, text.pad_token_id],
        pad_token_id=text.pad_token_id,
    )
    return model


def build_tiny_qwen(path: str | Path, seed: int = 0, **size_overrides: int | float) -> Path:
    """Write a tiny Qwen2.5-VL as a Hugging Face folder, offline and deterministically.

    The folder holds ``config.json``, ``generation_config.json``, ``model.safetensors``, the
    tokenizer (``tokenizer.json``, ``tokenizer_config.json``), ``preprocessor_config.json``
    (``Qwen2VLImageProcessor``: the PIL backend without torchvision, torchvision's where
    installed), ``processor_config.json`` and ``chat_template.jinja``. It loads with
    ``load_policy_model()``, with the ``from_pretrained`` of
    ``Qwen2_5_VLForConditionalGeneration``, ``AutoTokenizer`` and ``AutoImageProcessor``, and
    with ``ImageOnlyQwenProcessor``.

    Args:
        path: Folder to write (created if missing; existing files of the same names are
            replaced).
        seed: Seed of the tokenizer corpus and of the weights; equal seeds and sizes give
            byte-identical files.
        **size_overrides: Fields of ``TinyQwenSize`` to change, e.g. ``hidden_size=128``.

    Returns:
        The folder, as a ``Path``.

    Raises:
        TypeError: An override names no field of ``TinyQwenSize``.
        ValueError: The sizes are inconsistent.
    """
    from osworld_agents.models.processor import ImageOnlyQwenProcessor
    from transformers import Qwen2VLImageProcessorPil

    size = dataclasses.replace(TinyQwenSize(), **size_overrides)
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tiny_tokenizer(size.vocab_size, seed)
    model = _init_model(_model_config(size, tokenizer), seed)
    model.save_pretrained(folder)
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=size.min_pixels, max_pixels=size.max_pixels
    )
    processor = ImageOnlyQwenProcessor(image_processor, tokenizer, chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(folder)
    # Checkpoints keep the image processor's settings in preprocessor_config.json; writing it
    # too keeps the folder loadable by readers that look only there.
    image_processor.save_pretrained(folder)
    _name_stock_classes(folder)
    logger.info(
        "built tiny Qwen2.5-VL in %s: %d parameters, vocabulary %d",
        folder,
        model.num_parameters(),
        len(tokenizer),
    )
    return folder


def _name_stock_classes(folder: Path) -> None:
    """Make the saved configs name the stock classes.

    ``save_pretrained`` records the classes that wrote the files (the image-only processor, the
    PIL image processor). Stock names let ``AutoProcessor`` / ``AutoImageProcessor`` (and vLLM,
    which uses them) load the folder like any Qwen2.5-VL checkpoint and pick the image backend
    available on that machine.
    """
    renames = {
        ("processor_class", "ImageOnlyQwenProcessor"): "Qwen2_5_VLProcessor",
        ("image_processor_type", "Qwen2VLImageProcessorPil"): "Qwen2VLImageProcessor",
    }
    for file in sorted(folder.glob("*.json")):
        data = json.loads(file.read_text())
        changed = False
        for section in (data, data.get("image_processor")):
            for (key, old), new in renames.items():
                if isinstance(section, dict) and section.get(key) == old:
                    section[key] = new
                    changed = True
        if changed:
            file.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
