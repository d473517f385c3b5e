"""Sampling with one seed per batch row, for ``model.generate``.

transformers samples a batch with one ``torch.multinomial`` call on the global generator, so what
a row samples depends on every other row of the batch. ``PerRowSeededSampler`` samples each
row from its own generator instead, by the Gumbel-max trick: with ``G`` i.i.d. Gumbel(0, 1)
noise, ``argmax(logits / T + G)`` is distributed as ``softmax(logits / T)``. Used as the last
logits processor of a *greedy* ``generate`` call, it makes greedy decoding sample exactly the
distribution transformers' own sampler would (the same temperature, top-k, top-p warpers, in
the same order), while row ``r``'s ``t``-th token depends only on its logits and on the ``t``-th
draw of its generator. The engine can then batch requests whose seeds must stay their own (the
trainer's seeded rollouts) instead of generating them one at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers.generation.logits_process import (
    LogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

__all__ = ["PerRowSeededSampler"]


class PerRowSeededSampler(LogitsProcessor):
    """Adds per-row Gumbel noise to warped logits, so a greedy step samples each row.

    Args:
        seeds: One seed per batch row, in the batch's row order (any non-negative int below
            2**64).
        temperature: Softmax temperature (> 0).
        top_k: Keep the k most likely tokens (0: off).
        top_p: Nucleus mass (1.0: off).
        device: Where the generators and the logits live.
    """

    def __init__(
        self,
        seeds: Sequence[int],
        *,
        temperature: float,
        top_k: int = 0,
        top_p: float = 1.0,
        device: torch.device | str = "cpu",
    ) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0 to sample, got {temperature}")
        # transformers' order for sampling: temperature, then top-k, then top-p.
        self._warpers: list[LogitsProcessor] = [TemperatureLogitsWarper(temperature)]
        if top_k > 0:
            self._warpers.append(TopKLogitsWarper(top_k))
        if top_p < 1.0:
            self._warpers.append(TopPLogitsWarper(top_p))
        self._generators = [torch.Generator(device=device).manual_seed(int(seed)) for seed in seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """The warped scores plus one fresh Gumbel draw per row from that row's generator.

        Raises:
            ValueError: The batch does not have one row per seed.
        """
        if scores.shape[0] != len(self._generators):
            raise ValueError(
                f"{scores.shape[0]} batch rows for {len(self._generators)} seeds "
                "(one seed per row; beam search and num_return_sequences > 1 are not supported)"
            )
        for warper in self._warpers:
            scores = warper(input_ids, scores)
        vocab = scores.shape[-1]
        uniform = torch.stack(
            [
                torch.rand(vocab, generator=g, device=scores.device, dtype=torch.float32)
                for g in self._generators
            ]
        )
        # u in [tiny, 1): a zero draw would give a -inf that could tie with masked tokens.
        uniform = uniform.clamp_min(torch.finfo(torch.float32).tiny)
        gumbel = -torch.log(-torch.log(uniform))
        return scores.float() + gumbel
