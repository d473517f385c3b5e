"""Names of the Qwen2.5-VL special tokens, shared by the tiny-model builder and the chat encoder.

UI-TARS-1.5-7B inherits these from Qwen2.5-VL. The tiny model's tokenizer carries the same
tokens in the same relative order (appended after its trained vocabulary, as Qwen does), so code
written against one works unchanged on the other.
"""

from __future__ import annotations

__all__ = [
    "BOX_END",
    "BOX_START",
    "ENDOFTEXT",
    "GROUNDING_MARKERS",
    "IMAGE_PAD",
    "IM_END",
    "IM_START",
    "SPECIAL_TOKENS",
    "VIDEO_PAD",
    "VISION_END",
    "VISION_START",
]

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
BOX_START = "<|box_start|>"
BOX_END = "<|box_end|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = "<|video_pad|>"

# Qwen2.5-VL's special tokens in their vocabulary order.
SPECIAL_TOKENS: tuple[str, ...] = (
    ENDOFTEXT,
    IM_START,
    IM_END,
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    BOX_START,
    BOX_END,
    "<|quad_start|>",
    "<|quad_end|>",
    VISION_START,
    VISION_END,
    "<|vision_pad|>",
    IMAGE_PAD,
    VIDEO_PAD,
)

# Special tokens that are part of a grounded answer rather than of the chat format: decoded
# text keeps them so action parsers can read ``<|box_start|>(x,y)<|box_end|>``.
GROUNDING_MARKERS: frozenset[str] = frozenset(
    {
        BOX_START,
        BOX_END,
        "<|quad_start|>",
        "<|quad_end|>",
        "<|object_ref_start|>",
        "<|object_ref_end|>",
    }
)
