r"""Turn a ``Conversation`` into Qwen2.5-VL-family model inputs, token by token.

One renderer serves generation and training, so a prompt the policy sampled from is, token for
token, the prefix of the training sequence that scores the sample:

* every message is ``<|im_start|>{role}\n{content}<|im_end|>\n``; no system message is added;
* an image is ``<|vision_start|>`` + N x ``<|image_pad|>`` + ``<|vision_end|>`` with
  N = t*h*w / merge_size**2 from the image processor's grid;
* an assistant turn that carries ``token_ids`` is spliced verbatim (the ids are never
  re-tokenized); what Qwen's template adds after a message follows them: ``<|im_end|>`` unless
  the sample already ended with it, then ``\n``;
* a generation prompt ends with ``<|im_start|>assistant\n``.

Text between two special tokens is tokenized as one piece, exactly as the tokenizer cuts the
rendered string, so ``tokenizer.encode(rendered_text)`` gives the same ids with one
``<|image_pad|>`` per image (see ``EncodedChat.collapsed_input_ids()``, the form vLLM expects).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from osworld_agents.models import qwen_vocab

from osworld_gym.policies.conversation import Conversation, ImagePart, TextPart, Turn

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["ChatBatch", "EncodedChat", "QwenChatEncoder"]


@dataclass(frozen=True)
class EncodedChat:
    """One conversation as model inputs.

    Attributes:
        input_ids: Token ids, image placeholders expanded.
        loss_mask: 1 on the sampled assistant tokens (those of turns carrying ``token_ids``),
            0 elsewhere; same length as ``input_ids``.
        pixel_values: The images' patches, concatenated in order, ``(patches, 1176)``; None
            without images.
        image_grid_thw: ``(images, 3)`` patch grids; None without images.
        image_token_id: The ``<|image_pad|>`` id.
    """

    input_ids: list[int]
    loss_mask: list[int]
    pixel_values: torch.Tensor | None
    image_grid_thw: torch.Tensor | None
    image_token_id: int

    def __len__(self) -> int:
        return len(self.input_ids)

    def collapsed_input_ids(self) -> list[int]:
        """The ids with each image's run of ``<|image_pad|>`` reduced to one.

        vLLM expands a single placeholder per image itself; sending it expanded ids would
        expand them again.
        """
        pad, ids = self.image_token_id, self.input_ids
        return [t for i, t in enumerate(ids) if t != pad or i == 0 or ids[i - 1] != pad]


@dataclass(frozen=True)
class ChatBatch:
    """Several ``EncodedChat`` padded to one length (left padding).

    Attributes:
        input_ids: ``(B, L)`` int64.
        attention_mask: ``(B, L)`` int64, 0 on padding.
        mm_token_type_ids: ``(B, L)`` int32, 1 on ``<|image_pad|>`` (Qwen2.5-VL needs it for its
            3-D rotary positions; without it transformers silently falls back to 1-D ones).
        loss_mask: ``(B, L)`` int64, 1 on sampled assistant tokens.
        pixel_values: All rows' image patches, row 0's first; None without images.
        image_grid_thw: ``(images, 3)``; None without images.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    mm_token_type_ids: torch.Tensor
    loss_mask: torch.Tensor
    pixel_values: torch.Tensor | None = None
    image_grid_thw: torch.Tensor | None = None

    def to(self, device: Any) -> ChatBatch:
        """The batch on ``device``."""
        return ChatBatch(
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            mm_token_type_ids=self.mm_token_type_ids.to(device),
            loss_mask=self.loss_mask.to(device),
            pixel_values=None if self.pixel_values is None else self.pixel_values.to(device),
            image_grid_thw=None if self.image_grid_thw is None else self.image_grid_thw.to(device),
        )

    def model_inputs(self) -> dict[str, torch.Tensor]:
        """Keyword arguments for the model's ``forward`` / ``generate``."""
        inputs = {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "mm_token_type_ids": self.mm_token_type_ids,
        }
        if self.pixel_values is not None:
            inputs["pixel_values"] = self.pixel_values
            inputs["image_grid_thw"] = self.image_grid_thw
        return inputs


@dataclass
class _Builder:
    """Accumulates ids; text is buffered until the next special token, then tokenized whole."""

    encoder: QwenChatEncoder
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    images: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)

    def add_text(self, text: str) -> None:
        self.text.append(text)

    def add_ids(self, ids: Sequence[int], *, sampled: bool = False) -> None:
        self.flush()
        self.ids.extend(ids)
        self.mask.extend([int(sampled)] * len(ids))

    def flush(self) -> None:
        if self.text:
            ids = self.encoder.tokenize("".join(self.text))
            self.text.clear()
            self.add_ids(ids)


class QwenChatEncoder:
    """Renders conversations for a Qwen2.5-VL-family tokenizer and image processor.

    Thread-safe; it keeps a small cache of processed images (a screenshot history re-sends the
    same images at every step).

    Args:
        tokenizer: The model's tokenizer (carrying Qwen's special tokens).
        image_processor: The model's image processor (``Qwen2VLImageProcessor[Pil]``).
        image_cache_size: Processed images kept, keyed by their encoded bytes (0: no cache).
    """

    def __init__(self, tokenizer: Any, image_processor: Any, *, image_cache_size: int = 64):
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.ids = {t: tokenizer.convert_tokens_to_ids(t) for t in qwen_vocab.SPECIAL_TOKENS}
        unknown = [t for t, i in self.ids.items() if i is None or i == tokenizer.unk_token_id]
        if unknown:
            raise ValueError(f"tokenizer lacks Qwen2.5-VL special tokens: {unknown}")
        self.image_token_id = self.ids[qwen_vocab.IMAGE_PAD]
        self.end_of_turn_id = self.ids[qwen_vocab.IM_END]
        self.stop_token_ids = (self.end_of_turn_id, self.ids[qwen_vocab.ENDOFTEXT])
        self.placeholder_ids = frozenset({self.image_token_id, self.ids[qwen_vocab.VIDEO_PAD]})
        self.pad_token_id = self.ids[qwen_vocab.ENDOFTEXT]
        self._merge = int(image_processor.merge_size) ** 2
        self._cache_size = image_cache_size
        self._cache: OrderedDict[bytes, tuple[torch.Tensor, torch.Tensor]] = OrderedDict()
        self._lock = threading.Lock()
        special = {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
        kept = {self.ids[m] for m in qwen_vocab.GROUNDING_MARKERS}
        self._dropped_on_decode = frozenset(special - kept)

    # --- public API -------------------------------------------------------------------------

    def encode_prompt(self, conversation: Conversation) -> EncodedChat:
        r"""The conversation followed by the generation prompt ``<|im_start|>assistant\n``."""
        builder = self._render(conversation)
        builder.add_ids([self.ids[qwen_vocab.IM_START]])
        builder.add_text("assistant\n")
        return self._finish(builder)

    def encode_episode(self, conversation: Conversation) -> EncodedChat:
        """The whole conversation, with ``loss_mask`` on the sampled assistant tokens.

        Assistant turns without ``token_ids`` (scripted or text-engine history) are rendered
        from their text and count as context (mask 0): nothing was sampled there to score.
        """
        return self._finish(self._render(conversation))

    def collate(self, chats: Sequence[EncodedChat]) -> ChatBatch:
        """Pad chats to one length on the left (completions end aligned at the right edge)."""
        import torch

        if not chats:
            raise ValueError("nothing to collate")
        length = max(len(c) for c in chats)
        ids = torch.full((len(chats), length), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(chats), length), dtype=torch.long)
        loss = torch.zeros((len(chats), length), dtype=torch.long)
        for row, chat in enumerate(chats):
            start = length - len(chat)
            ids[row, start:] = torch.tensor(chat.input_ids, dtype=torch.long)
            attention[row, start:] = 1
            loss[row, start:] = torch.tensor(chat.loss_mask, dtype=torch.long)
        pixels = [c.pixel_values for c in chats if c.pixel_values is not None]
        grids = [c.image_grid_thw for c in chats if c.image_grid_thw is not None]
        return ChatBatch(
            input_ids=ids,
            attention_mask=attention,
            mm_token_type_ids=(ids == self.image_token_id).to(torch.int32),
            loss_mask=loss,
            pixel_values=torch.cat(pixels) if pixels else None,
            image_grid_thw=torch.cat(grids) if grids else None,
        )

    def decode(self, token_ids: Sequence[int]) -> str:
        """Completion text for parsing: chat-format special tokens dropped, box markers kept."""
        kept = [t for t in token_ids if t not in self._dropped_on_decode]
        # No clean-up: it would drop the space in typed content such as "a ." or "don 't".
        return self.tokenizer.decode(
            kept, skip_special_tokens=False, clean_up_tokenization_spaces=False
        )

    def tokenize(self, text: str) -> list[int]:
        """Ids of plain text (special-token strings in it are recognised, as in the template).

        Raises:
            ValueError: The text contains an image or video placeholder token, which would break
                the match between placeholders and image features.
        """
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if self.placeholder_ids.intersection(ids):
            raise ValueError(f"text contains an image/video placeholder token: {text[:80]!r}")
        return ids

    # --- rendering ----------------------------------------------------------------------------

    def _render(self, conversation: Conversation) -> _Builder:
        builder = _Builder(self)
        for turn in conversation.turns:
            builder.add_ids([self.ids[qwen_vocab.IM_START]])
            builder.add_text(f"{turn.role}\n")
            if turn.role == "assistant" and turn.token_ids is not None:
                self._add_sampled(builder, turn)
            else:
                self._add_parts(builder, turn)
                builder.add_ids([self.end_of_turn_id])
            builder.add_text("\n")
        return builder

    def _add_sampled(self, builder: _Builder, turn: Turn) -> None:
        ids = list(turn.token_ids or ())
        if turn.images:
            raise ValueError("an assistant turn with token_ids cannot carry images")
        if self.placeholder_ids.intersection(ids):
            raise ValueError("sampled token_ids contain an image/video placeholder token")
        builder.add_ids(ids, sampled=True)
        if not ids or ids[-1] != self.end_of_turn_id:
            # Cut by max_new_tokens (or stopped on <|endoftext|>): close the turn as the
            # template would, without scoring the added token.
            builder.add_ids([self.end_of_turn_id])

    def _add_parts(self, builder: _Builder, turn: Turn) -> None:
        for part in turn.parts:
            if isinstance(part, TextPart):
                builder.add_text(part.text)
            elif isinstance(part, ImagePart):
                pixels, grid = self._process_image(part)
                builder.images.append((pixels, grid))
                count = int(grid.prod()) // self._merge
                builder.add_ids(
                    [self.ids[qwen_vocab.VISION_START]]
                    + [self.image_token_id] * count
                    + [self.ids[qwen_vocab.VISION_END]]
                )
            else:
                raise TypeError(f"unsupported part type {type(part).__name__}")

    def _finish(self, builder: _Builder) -> EncodedChat:
        import torch

        builder.flush()
        images = builder.images
        return EncodedChat(
            input_ids=builder.ids,
            loss_mask=builder.mask,
            pixel_values=torch.cat([p for p, _ in images]) if images else None,
            image_grid_thw=torch.stack([g for _, g in images]) if images else None,
            image_token_id=self.image_token_id,
        )

    def _process_image(self, image: ImagePart) -> tuple[torch.Tensor, torch.Tensor]:
        key = hashlib.blake2b(image.data, digest_size=16).digest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        out = self.image_processor(images=[image.to_pil()], return_tensors="pt")
        pixels, grid = out["pixel_values"], out["image_grid_thw"][0]
        patch = int(self.image_processor.patch_size)
        if (int(grid[1]) * patch, int(grid[2]) * patch) != (image.height, image.width):
            # The agent's resize bounds disagree with the processor's: the model sees another
            # size than the one its coordinates are mapped back from.
            logger.warning(
                "image processor resized a %dx%d image to %dx%d; resize images with the "
                "processor's min/max pixels so coordinates map back exactly",
                image.width,
                image.height,
                int(grid[2]) * patch,
                int(grid[1]) * patch,
            )
        if self._cache_size:
            with self._lock:
                self._cache[key] = (pixels, grid)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return pixels, grid
