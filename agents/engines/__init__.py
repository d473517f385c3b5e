"""Rollout engines: batched generation over chat conversations with images.

* ``.conversation`` -- the engine-neutral conversation an agent builds (text, images, and
  assistant turns carrying the token ids they were sampled as).
* ``.base`` -- ``RolloutEngine``, ``SamplingParams``, ``Generation``.
"""

from __future__ import annotations

from osworld_agents.engines.base import Generation, RolloutEngine, SamplingParams
from osworld_agents.engines.conversation import Conversation, ImagePart, TextPart, Turn

__all__ = [
    "Conversation",
    "Generation",
    "ImagePart",
    "RolloutEngine",
    "SamplingParams",
    "TextPart",
    "Turn",
]
