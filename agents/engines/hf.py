"""A rollout engine over a transformers Qwen2.5-VL model, and the trainer-side log-probabilities.

``TransformersEngine`` samples with ``model.generate`` on CPU or GPU and returns, for every
sampled token, its log-probability under the sampling temperature. ``sequence_logprobs()``
recomputes the same numbers with one forward pass over a training sequence built by
``QwenChatEncoder``, differentiably: the PPO ratio is
their quotient, so the two must agree to float precision (fp32, tiny model: 5e-7).

Both score tokens with ``log_softmax(logits / temperature)`` after removing the vision
placeholders (``<|image_pad|>``, ``<|video_pad|>``), which generation never samples: one
sampled placeholder would break the image-feature count of every later sequence. Top-k / top-p
truncation is *not* renormalised into the reported numbers (that would make the trainer's
quotient depend on sampling knobs); keep ``top_p=1, top_k=0`` for RL rollouts so the numbers
are exactly the sampling distribution's.

Sampling is per row: every conversation of a call draws from its own seed
(``PerRowSeededSampler``), so seeded requests -- the
trainer's reproducible rollouts -- share one batched ``generate`` instead of one call each.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from osworld_agents.engines.chat_encoding import ChatBatch, EncodedChat, QwenChatEncoder

from osworld_gym.policies.conversation import Conversation
from osworld_gym.policies.engine import Generation, SamplingParams

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["TransformersEngine", "sequence_logprobs"]


def _placeholder_ids(model: Any) -> list[int]:
    config = model.config
    return [config.image_token_id, config.video_token_id]


def _scaled_logprobs(logits: torch.Tensor, temperature: float, banned: list[int]) -> torch.Tensor:
    """``log_softmax(logits / temperature)`` over the vocabulary, banned ids at -inf."""
    import torch

    logits = logits.float().index_fill(-1, torch.tensor(banned, device=logits.device), -torch.inf)
    return torch.log_softmax(logits / temperature, dim=-1)


def sequence_logprobs(model: Any, batch: ChatBatch, temperature: float = 1.0) -> torch.Tensor:
    """Per-token log-probabilities of a batch's own tokens, where its ``loss_mask`` is 1.

    Entry ``[b, t]`` is ``log p(input_ids[b, t] | input_ids[b, :t], images)`` at temperature
    ``temperature`` for every position with ``loss_mask[b, t] == 1``, and 0 elsewhere. Logits are
    computed only at the positions that predict some row's masked tokens (``B x K x vocab``
    floats for K such positions), not over the whole episode, whose screenshots dominate its
    length.

    Differentiable when gradients are enabled; call it under ``torch.no_grad()`` for the
    old-policy / reference log-probs.

    Args:
        model: A ``Qwen2_5_VLForConditionalGeneration`` (or a wrapper exposing ``.config``,
            ``.model.get_rope_index`` and the same ``forward``).
        batch: From ``QwenChatEncoder.collate()`` of ``QwenChatEncoder.encode_episode()``
            outputs; moved to the model's device here.
        temperature: The sampling temperature of the rollouts (> 0).

    Returns:
        ``(B, L)`` float32 tensor aligned with ``batch.input_ids``.
    """
    import torch

    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    batch = batch.to(model.device)
    loss_mask = batch.loss_mask != 0  # a new tensor: the caller's batch is not modified
    loss_mask[:, 0] = False  # nothing predicts the first token
    # Logits at position t-1 score token t; keep every position some row needs.
    keep = loss_mask[:, 1:].any(dim=0).nonzero().squeeze(-1)
    out = torch.zeros(loss_mask.shape, dtype=torch.float32, device=model.device)
    if keep.numel() == 0:
        return out
    # Explicit M-RoPE positions: transformers would fall back to 1-D positions for a batch
    # without images, and those ignore left padding.
    position_ids, _ = model.model.get_rope_index(
        batch.input_ids,
        batch.mm_token_type_ids,
        image_grid_thw=batch.image_grid_thw,
        attention_mask=batch.attention_mask,
    )
    logits = model(
        **batch.model_inputs(),
        position_ids=position_ids,
        logits_to_keep=keep,
        use_cache=False,
    ).logits
    targets = batch.input_ids[:, keep + 1]
    logprobs = _scaled_logprobs(logits, temperature, _placeholder_ids(model))
    picked = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    out = out.index_copy(1, keep + 1, picked)
    return out * loss_mask


class TransformersEngine:
    """``RolloutEngine`` over a transformers Qwen2.5-VL model.

    Conversations are encoded with ``QwenChatEncoder``, sorted by length, padded on the left
    and generated ``max_batch_size`` at a time: rows with different image counts (or none)
    batch together, since left padding plus ``mm_token_type_ids`` gives every row the same 3-D
    positions it has alone.

    Calls are serialised (transformers keeps per-call rotary state on the model), and the model
    is switched to eval mode for the call (the KV cache is off in training mode with gradient
    checkpointing) and back afterwards.

    **Weights.** The engine may hold the trainer's own model object: updates are then visible at
    once, and ``update_weights()`` only bumps ``weight_version``. With a separate copy,
    ``update_weights()`` copies the tensors in.

    Args:
        model: A ``Qwen2_5_VLForConditionalGeneration``.
        tokenizer: Its tokenizer.
        image_processor: Its image processor.
        max_batch_size: Conversations per ``generate`` call.
        seed: Seeds the engine's own generator, which draws a sampling seed for every call whose
            ``SamplingParams.seed`` is None; sampling never touches the global torch RNG state.
        image_cache_size: Processed images the encoder keeps.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        *,
        max_batch_size: int = 8,
        seed: int = 0,
        image_cache_size: int = 64,
    ):
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be >= 1")
        self.model = model
        self.encoder = QwenChatEncoder(
            tokenizer, image_processor, image_cache_size=image_cache_size
        )
        self.max_batch_size = max_batch_size
        self.weight_version = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(
        cls,
        path_or_hub_id: str | os.PathLike[str],
        *,
        dtype: Any = "auto",
        device: Any = "cpu",
        **kwargs: Any,
    ) -> TransformersEngine:
        """Load a model with ``load_policy_model()``.

        Args:
            path_or_hub_id: A folder or hub id.
            dtype: Model dtype.
            device: Model device.
            **kwargs: Passed to the constructor.
        """
        from osworld_agents.models.loading import load_policy_model

        policy = load_policy_model(path_or_hub_id, dtype, device)
        return cls(policy.model, policy.tokenizer, policy.image_processor, **kwargs)

    # --- RolloutEngine ------------------------------------------------------------------------

    def generate(
        self,
        conversations: Sequence[Conversation],
        params: SamplingParams,
        seeds: Sequence[int] | None = None,
    ) -> list[Generation]:
        """One completion per conversation, in order.

        Every row samples from its own generator: with ``seeds``, conversation ``i`` from
        ``seeds[i]``; otherwise from ``params.seed + i`` (or a seed drawn from the engine's
        generator + i). A completion thus depends on its conversation, its seed and the
        weights, not on which conversations share its batch (up to float rounding between
        batch shapes). Log-probs are at ``params.temperature``; for greedy decoding
        (temperature 0) they are at temperature 1 (``extra["logprob_temperature"]`` says which).

        Raises:
            ValueError: ``seeds`` does not have one seed per conversation.
        """
        if seeds is not None and len(seeds) != len(conversations):
            raise ValueError(f"{len(seeds)} seeds for {len(conversations)} conversations")
        chats = [self.encoder.encode_prompt(c) for c in conversations]
        order = sorted(range(len(chats)), key=lambda i: len(chats[i]))
        results: dict[int, Generation] = {}
        with self._lock, self._eval_mode():
            if seeds is None:
                base = params.seed if params.seed is not None else self._rng.randrange(2**63)
                seeds = [(base + i) % 2**64 for i in range(len(chats))]
            for start in range(0, len(order), self.max_batch_size):
                rows = order[start : start + self.max_batch_size]
                generated = self._generate_batch(
                    [chats[i] for i in rows], params, [seeds[i] for i in rows]
                )
                results.update(zip(rows, generated, strict=True))
        return [results[i] for i in range(len(chats))]

    # --- weights ------------------------------------------------------------------------------

    def update_weights(
        self,
        weights: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
        version: int | None = None,
    ) -> None:
        """Copy trainer weights into the engine's model.

        Args:
            weights: ``(name, tensor)`` pairs or a state dict, with the model's own names
                (``model.language_model...``, ``model.visual...``, ``lm_head.weight``). Tensors
                that already are the model's (a shared model) are skipped.
            version: The new ``weight_version`` (default: the current one + 1), reported in
                every ``Generation``'s ``extra``.

        The whole update holds the engine's lock, so a concurrent ``generate()`` (another
        thread) sees either the old weights or the new ones, never a mix.

        Raises:
            KeyError: A name is not a parameter or buffer of the model.
        """
        import torch

        items = weights.items() if isinstance(weights, Mapping) else weights
        targets = dict(self.model.named_parameters())
        targets.update(self.model.named_buffers())
        with self._lock, torch.no_grad():
            for name, tensor in items:
                if name not in targets:
                    raise KeyError(f"{name!r} is not a parameter or buffer of the model")
                target = targets[name]
                if target.data_ptr() != tensor.data_ptr():
                    target.copy_(tensor.to(device=target.device, dtype=target.dtype))
                # Drop the reference before the iterator produces the next tensor: a lazy
                # iterator (an FSDP gather) then holds one full tensor at a time, not two.
                del tensor
            self.weight_version = self.weight_version + 1 if version is None else version

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """``update_weights()`` with a state dict."""
        self.update_weights(state_dict)

    def reseed(self, seed: int) -> None:
        """Restart the engine's own generator from ``seed``, as if it had just been built.

        A long-lived engine (the trainer's, built once per run) starts each iteration's draws
        from that iteration's seed, so calls without seeds sample what a fresh engine would.
        """
        with self._lock:
            self._rng = random.Random(seed)

    # --- internals ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _eval_mode(self) -> Iterator[None]:
        was_training = self.model.training
        self.model.eval()
        try:
            yield
        finally:
            self.model.train(was_training)

    def _generate_batch(
        self, chats: list[EncodedChat], params: SamplingParams, seeds: list[int]
    ) -> list[Generation]:
        import torch
        from transformers import LogitsProcessorList

        started = time.perf_counter()
        batch = self.encoder.collate(chats).to(self.model.device)
        processors = LogitsProcessorList()
        if params.temperature > 0:
            from osworld_agents.engines.seeded_sampling import PerRowSeededSampler

            processors.append(
                PerRowSeededSampler(
                    seeds,
                    temperature=params.temperature,
                    top_k=params.top_k,
                    top_p=params.top_p,
                    device=self.model.device,
                )
            )
        with torch.inference_mode():
            out = self.model.generate(
                **batch.model_inputs(),
                generation_config=self._generation_config(params),
                logits_processor=processors,
            )
        new_tokens = out.sequences[:, batch.input_ids.shape[1] :]
        temperature = params.temperature if params.temperature > 0 else 1.0
        banned = _placeholder_ids(self.model)
        logprobs = torch.stack(
            [
                _scaled_logprobs(step, temperature, banned)
                .gather(-1, new_tokens[:, i : i + 1])
                .squeeze(-1)
                for i, step in enumerate(out.logits)
            ],
            dim=1,
        )
        logger.debug(
            "generated %d x %d tokens in %.3f s",
            *new_tokens.shape,
            time.perf_counter() - started,
        )
        return [
            self._to_generation(ids, lps, len(chat), temperature)
            for ids, lps, chat in zip(new_tokens.tolist(), logprobs.tolist(), chats, strict=True)
        ]

    def _to_generation(
        self, ids: list[int], logprobs: list[float], prompt_tokens: int, temperature: float
    ) -> Generation:
        stops = self.encoder.stop_token_ids
        end = next((i + 1 for i, t in enumerate(ids) if t in stops), None)
        ids = ids if end is None else ids[:end]
        return Generation(
            text=self.encoder.decode(ids),
            token_ids=ids,
            logprobs=logprobs[: len(ids)],
            finish_reason="length" if end is None else "stop",
            prompt_tokens=prompt_tokens,
            extra={"weight_version": self.weight_version, "logprob_temperature": temperature},
        )

    def _generation_config(self, params: SamplingParams) -> Any:
        from transformers import GenerationConfig

        # Decoding is greedy: sampling, when asked for, is PerRowSeededSampler's (the last
        # logits processor), so transformers' own warpers stay off. Every field that adds a
        # logits processor is set to its neutral value: generate() fills fields left None from
        # the checkpoint's generation_config.json (Qwen2.5-VL checkpoints ship a repetition
        # penalty there), which would move the sampled distribution away from the one the
        # log-probs describe. The sampling fields get their neutral values too, so a
        # checkpoint's sampling defaults do not trigger "only used in sample mode" warnings.
        return GenerationConfig(
            do_sample=False,
            temperature=1.0,
            top_p=1.0,
            top_k=50,
            min_p=None,
            typical_p=1.0,
            epsilon_cutoff=0.0,
            eta_cutoff=0.0,
            repetition_penalty=1.0,
            no_repeat_ngram_size=0,
            num_beams=1,
            max_new_tokens=params.max_new_tokens,
            min_new_tokens=0,
            eos_token_id=list(self.encoder.stop_token_ids),
            pad_token_id=self.encoder.pad_token_id,
            suppress_tokens=_placeholder_ids(self.model),
            use_cache=True,
            output_logits=True,
            return_dict_in_generate=True,
        )
