"""Rollout engines: batched generation over chat conversations with images.

* ``.hf`` -- transformers generation (CPU or one GPU); ``.vllm_engine`` -- vLLM for GPU
  rollouts, with ``.vllm_weights`` (weight sync) and ``.vllm_requests``;
  ``.chat_encoding`` -- conversations as the model's token ids.

The interface every engine implements (``RolloutEngine``, ``SamplingParams``, ``Generation``),
the conversation an agent builds, and the HTTP engine for OpenAI-compatible servers live with
the env library's policies (``osworld_gym.policies``), which the adapters use without this
package; they are re-exported here under their old names.
"""

from __future__ import annotations

from osworld_gym.policies.conversation import Conversation, ImagePart, TextPart, Turn
from osworld_gym.policies.engine import Generation, RolloutEngine, SamplingParams

__all__ = [
    "Conversation",
    "Generation",
    "ImagePart",
    "RolloutEngine",
    "SamplingParams",
    "TextPart",
    "Turn",
]
