"""The rollout-engine interface: batched generation with per-token log-probabilities."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from osworld_gym.policies.conversation import Conversation


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion per conversation.

    Attributes:
        temperature: Softmax temperature (ARPO: 1.0 for rollouts, 0.6 for evaluation);
            0 means greedy.
        top_p: Nucleus sampling mass (1.0: off).
        top_k: Keep the k most likely tokens (0: off).
        max_new_tokens: Tokens to generate at most per completion.
        seed: Seed for this call's sampling (None: the engine's own generator state).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 512
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError("top_k must be >= 0 and max_new_tokens >= 1")


@dataclass
class Generation:
    """One sampled completion.

    Attributes:
        text: The completion decoded for parsing (special tokens other than the model's own
            box/point markers dropped).
        token_ids: The sampled ids, end-of-turn token included when the model emitted it: what
            training sequences use. Empty for text-only engines that do not return ids.
        logprobs: Log-probability of each sampled id under the sampling distribution
            (temperature applied), or None when the engine cannot say.
        finish_reason: ``"stop"`` (end-of-turn token) or ``"length"`` (max_new_tokens hit).
        prompt_tokens: Tokens in the prompt, when known.
        extra: Engine-specific details (request id, timing...).
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    extra: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class RolloutEngine(Protocol):
    """Generates completions for a batch of conversations.

    Implementations: transformers (CPU and GPU), vLLM (GPU, weights pushed from the trainer),
    and an OpenAI-compatible HTTP client (evaluation of a served model; text only).
    """

    def generate(
        self,
        conversations: Sequence[Conversation],
        params: SamplingParams,
        seeds: Sequence[int] | None = None,
    ) -> list[Generation]:
        """One completion per conversation, in order.

        ``seeds`` (optional for implementations; ``UITARSAgent``
        checks for the keyword) gives each conversation its own sampling seed, overriding
        ``params.seed``: a completion then depends on its conversation, its seed and the
        weights, not on the rest of the batch, so seeded requests can share one call.
        """
        ...
