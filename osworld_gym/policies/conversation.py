"""The conversation an agent sends to a rollout engine, independent of any model or API.

A conversation is a list of turns (system, user, assistant), each a list of text and image
parts. An assistant turn that the policy itself produced also carries the exact token ids it was
sampled as: token-level engines (transformers, vLLM) splice those ids into later prompts and into
training sequences verbatim, so what the model is trained on is exactly what it generated (no
re-tokenization mismatch). Text-level engines (an OpenAI-compatible server) use the text.

Images are stored encoded (PNG or JPEG bytes) at the size the model sees: the agent resizes
screenshots with the same smart-resize bounds the action dialect uses, so coordinates the model
emits map back to the screen exactly.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a turn."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image in a turn, encoded, already at the size the model sees.

    Attributes:
        data: PNG or JPEG bytes.
        width: Width in pixels (a multiple of the model's patch-merge factor, e.g. 28).
        height: Height in pixels.
    """

    data: bytes
    width: int
    height: int

    def to_pil(self):  # noqa: ANN201 - PIL is imported lazily
        """The image as an RGB ``PIL.Image``."""
        from PIL import Image

        with Image.open(io.BytesIO(self.data)) as image:
            return image.convert("RGB")

    @property
    def mime_type(self) -> str:
        """``image/png`` or ``image/jpeg``, from the bytes' signature."""
        return "image/png" if self.data[:4] == b"\x89PNG" else "image/jpeg"


Part = TextPart | ImagePart


@dataclass(frozen=True)
class Turn:
    """One message.

    Attributes:
        role: ``"system"``, ``"user"`` or ``"assistant"``.
        parts: Text and image parts, in order.
        token_ids: For an assistant turn the policy generated: the sampled completion ids,
            end-of-turn token included when the model emitted it. None for everything else.
    """

    role: Role
    parts: tuple[Part, ...]
    token_ids: tuple[int, ...] | None = None

    @property
    def text(self) -> str:
        """The turn's text parts joined."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def images(self) -> list[ImagePart]:
        """The turn's images, in order."""
        return [p for p in self.parts if isinstance(p, ImagePart)]


@dataclass
class Conversation:
    """A chat: the prompt of one policy call, or (with every assistant turn) a whole episode."""

    turns: list[Turn] = field(default_factory=list)

    def add(self, role: Role, *parts: Part, token_ids: tuple[int, ...] | None = None) -> None:
        """Append a turn."""
        self.turns.append(Turn(role, tuple(parts), token_ids))

    def images(self) -> Iterator[ImagePart]:
        """Every image, in order."""
        for turn in self.turns:
            yield from turn.images

    def __len__(self) -> int:
        return len(self.turns)
