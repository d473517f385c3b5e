"""vLLM requests from conversations, sampling arguments, and outputs back as generations.

Plain functions over ``QwenChatEncoder`` so the
prompts vLLM sees are token for token the ones the transformers engine and the trainer use.
No vLLM needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from osworld_agents.engines.chat_encoding import QwenChatEncoder

from osworld_gym.policies.conversation import Conversation
from osworld_gym.policies.engine import Generation, SamplingParams

_LOGIT_BAN = -100.0  # vLLM clamps logit_bias values to [-100, 100]
SEED_MODULUS = 2**63  # seeds vLLM accepts


@dataclass(frozen=True)
class VLLMRequest:
    """One conversation as a vLLM prompt.

    Attributes:
        prompt_token_ids: The encoder's ids with one ``<|image_pad|>`` per image.
        images: The images as RGB PIL images, in prompt order.
        prompt_tokens: Prompt length with image placeholders expanded (what the model sees and
            what the transformers engine reports).
    """

    prompt_token_ids: list[int]
    images: list[Any] = field(default_factory=list)
    prompt_tokens: int = 0

    def to_prompt(self) -> dict[str, Any]:
        """The vLLM token prompt: ``prompt_token_ids`` and, with images, ``multi_modal_data``."""
        prompt: dict[str, Any] = {"prompt_token_ids": list(self.prompt_token_ids)}
        if self.images:
            prompt["multi_modal_data"] = {"image": list(self.images)}
        return prompt


def build_request(encoder: QwenChatEncoder, conversation: Conversation) -> VLLMRequest:
    """Render a conversation as a vLLM prompt, token for token as the trainer renders it.

    Args:
        encoder: The model's chat encoder.
        conversation: The prompt; assistant turns with ``token_ids`` are spliced verbatim.

    Returns:
        The request. The ids are the collapsed form of ``encoder.encode_prompt(conversation)``;
        vLLM expands each placeholder to the image's token count from the same image processor
        settings, giving back the encoder's expanded ids.
    """
    encoded = encoder.encode_prompt(conversation)
    return VLLMRequest(
        prompt_token_ids=encoded.collapsed_input_ids(),
        images=[image.to_pil() for image in conversation.images()],
        prompt_tokens=len(encoded),
    )


def sampling_kwargs(
    params: SamplingParams,
    *,
    stop_token_ids: Sequence[int],
    banned_token_ids: Sequence[int] = (),
    seed: int | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for one request.

    Every field that changes the distribution is set explicitly to its neutral value, so neither
    the checkpoint's ``generation_config.json`` nor vLLM defaults move the sampled distribution
    away from the one the log-probs describe.

    Args:
        params: The call's sampling parameters (temperature 0: greedy).
        stop_token_ids: End-of-turn ids; the one sampled is kept in the output ids.
        banned_token_ids: Ids given a -100 logit bias (the vision placeholders).
        seed: This request's sampling seed (ignored for greedy decoding).

    Returns:
        ``n=1``, temperature/top-p/top-k (0 -> -1: off), ``max_tokens``, ``logprobs=0`` (the
        sampled token's log-prob only), stop ids, neutral penalties, ``detokenize=False`` (the
        encoder decodes, as in the transformers engine).
    """
    greedy = params.temperature == 0
    return {
        "n": 1,
        "temperature": 0.0 if greedy else float(params.temperature),
        "top_p": 1.0 if greedy else float(params.top_p),
        "top_k": -1 if greedy or params.top_k == 0 else int(params.top_k),
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tokens": int(params.max_new_tokens),
        "min_tokens": 0,
        "seed": None if greedy else seed,
        "logprobs": 0,
        "stop_token_ids": [int(t) for t in stop_token_ids],
        "ignore_eos": False,
        "logit_bias": {int(t): _LOGIT_BAN for t in banned_token_ids} or None,
        "detokenize": False,
        "skip_special_tokens": False,
    }


def sampled_logprobs(token_ids: Sequence[int], logprobs: Sequence[Any] | None) -> list[float]:
    """The log-probability of each sampled id from vLLM's per-token logprob dicts.

    Args:
        token_ids: The sampled ids.
        logprobs: ``CompletionOutput.logprobs``: one ``{token_id: Logprob}`` dict per sampled
            token (``Logprob.logprob`` is the value; plain floats are accepted too).

    Raises:
        ValueError: The log-probs are missing, of another length, or lack a sampled id.
    """
    if logprobs is None:
        raise ValueError("vLLM returned no log-probs; request them with logprobs=0")
    if len(logprobs) != len(token_ids):
        raise ValueError(f"{len(logprobs)} log-prob entries for {len(token_ids)} sampled tokens")
    values = []
    for position, (token, entry) in enumerate(zip(token_ids, logprobs, strict=True)):
        if entry is None or token not in entry:
            raise ValueError(f"no log-prob for sampled token {token} at position {position}")
        value = entry[token]
        values.append(float(getattr(value, "logprob", value)))
    return values


def to_generation(
    output: Any,
    encoder: QwenChatEncoder,
    *,
    prompt_tokens: int,
    weight_version: int,
    temperature: float,
) -> Generation:
    """Convert a vLLM ``RequestOutput`` (``n=1``) into a ``Generation``.

    The ids are cut after the first end-of-turn id (vLLM stops there already; the cut keeps the
    transformers engine's contract whatever stopped the request), and ``finish_reason`` is
    ``"stop"`` when one was sampled, else ``"length"``.

    Args:
        output: The request's output (``outputs[0]`` with ``token_ids``, ``logprobs``,
            ``finish_reason``; optionally ``prompt_token_ids``, ``request_id``,
            ``num_cached_tokens``).
        encoder: Decodes the text and gives the end-of-turn ids.
        prompt_tokens: The expanded prompt length.
        weight_version: The engine's weight version when the call was made.
        temperature: The temperature the log-probs are at.

    Raises:
        RuntimeError: The request was aborted (e.g. the engine was put to sleep under it).
        ValueError: The output lacks log-probs for its tokens.
    """
    completion = output.outputs[0]
    if completion.finish_reason == "abort":
        raise RuntimeError(f"vLLM aborted request {getattr(output, 'request_id', '?')}")
    ids = [int(t) for t in completion.token_ids]
    logprobs = sampled_logprobs(ids, completion.logprobs)
    stops = encoder.stop_token_ids
    end = next((i + 1 for i, t in enumerate(ids) if t in stops), None)
    if end is not None:
        ids, logprobs = ids[:end], logprobs[:end]
    extra: dict[str, object] = {
        "weight_version": weight_version,
        "logprob_temperature": temperature,
        "vllm_finish_reason": completion.finish_reason,
    }
    engine_prompt = getattr(output, "prompt_token_ids", None)
    if engine_prompt is not None:
        extra["engine_prompt_tokens"] = len(engine_prompt)
    for key in ("request_id", "num_cached_tokens"):
        value = getattr(output, key, None)
        if value is not None:
            extra[key] = value
    return Generation(
        text=encoder.decode(ids),
        token_ids=ids,
        logprobs=logprobs,
        finish_reason="length" if end is None else "stop",
        prompt_tokens=prompt_tokens,
        extra=extra,
    )
