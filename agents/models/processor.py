"""A Qwen2.5-VL processor for images only, usable without torchvision.

The stock ``Qwen2_5_VLProcessor`` also builds a video processor, and that one requires
torchvision, which cannot be installed beside the CPU torch of the test machines. Images need
only the tokenizer and an image processor (``Qwen2VLImageProcessorPil`` there), so this subclass
declares just those two: ``ProcessorMixin`` reads a processor's parts from its ``__init__``
signature. Everything else (``__call__`` expanding ``<|image_pad|>`` from the image grid,
``apply_chat_template``) is inherited unchanged.
"""

from __future__ import annotations

from osworld_agents.models.qwen_vocab import IMAGE_PAD, VIDEO_PAD
from transformers import ProcessorMixin, Qwen2_5_VLProcessor

__all__ = ["ImageOnlyQwenProcessor"]


class ImageOnlyQwenProcessor(Qwen2_5_VLProcessor):
    """``Qwen2_5_VLProcessor`` without a video processor.

    Load one with ``ImageOnlyQwenProcessor.from_pretrained(folder)`` (the tiny model's folder or
    a Qwen2.5-VL / UI-TARS checkpoint), or build it from its parts.
    """

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):  # noqa: ANN001
        """Build from an image processor, a tokenizer and an optional chat template."""
        self.image_token = IMAGE_PAD
        self.video_token = VIDEO_PAD
        self.image_token_id = tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        self.video_token_id = tokenizer.convert_tokens_to_ids(VIDEO_PAD)
        # Skip Qwen2_5_VLProcessor.__init__, which would demand the video processor.
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
