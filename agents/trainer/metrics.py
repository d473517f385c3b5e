"""Metrics: weighted sums reduced over ranks, and one small writer (TensorBoard, wandb, JSONL).

Keys are namespaced as in cleanrl: ``rollout/`` (rewards, success, parse errors), ``losses/``
(policy loss, clip fractions, KL, grad norm), ``replay/``, ``eval/``, ``charts/`` (learning
rate, episodes) and ``timing/`` (seconds per phase).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from osworld_agents.trainer.distributed import DistContext, all_gather_objects, all_reduce_sum

logger = logging.getLogger(__name__)

__all__ = ["MetricSums", "MetricsWriter"]


class MetricSums:
    """Weighted means and plain totals, accumulated over micro-batches, steps and ranks.

    ``add(key, value, weight)`` adds ``value * weight`` to the key's sum and ``weight`` to its
    weight; the reported value is sum / weight. A token mean over a micro-batch is added with
    its token count as weight; a value every rank already holds identically (a global loss)
    with weight 1 on every rank. ``count(key, n)`` adds to a total reported as is (summed over
    ranks): dropped episodes, injections.

    Example:
        >>> sums = MetricSums()
        >>> sums.add("losses/clipfrac", 0.5, weight=2)
        >>> sums.add("losses/clipfrac", 0.0, weight=2)
        >>> sums.count("rollout/dropped", 3)
        >>> sums.means()
        {'losses/clipfrac': 0.25, 'rollout/dropped': 3.0}
    """

    def __init__(self) -> None:
        self._sums: dict[str, list[float]] = {}
        self._totals: dict[str, float] = {}

    def add(self, key: str, value: float, weight: float = 1.0) -> None:
        """Add one weighted observation (a zero weight only declares the key)."""
        entry = self._sums.setdefault(key, [0.0, 0.0])
        entry[0] += float(value) * weight
        entry[1] += weight

    def count(self, key: str, n: float = 1.0) -> None:
        """Add ``n`` to a total."""
        self._totals[key] = self._totals.get(key, 0.0) + float(n)

    def update(self, other: MetricSums) -> None:
        """Add every observation and total of ``other``."""
        for key, (total, weight) in other._sums.items():
            entry = self._sums.setdefault(key, [0.0, 0.0])
            entry[0] += total
            entry[1] += weight
        for key, n in other._totals.items():
            self.count(key, n)

    def means(self, ctx: DistContext | None = None) -> dict[str, float]:
        """The weighted means and the totals, reduced over ranks when ``ctx`` is given.

        With ``ctx`` this is a collective: every rank must call it. A mean that no rank
        observed with a positive weight is NaN.
        """
        mean_keys, total_keys = sorted(self._sums), sorted(self._totals)
        if ctx is not None and ctx.initialized:
            # Ranks may have seen different keys (one had no replayed sample...): agree first.
            gathered = all_gather_objects((mean_keys, total_keys), ctx)
            mean_keys = sorted(set().union(*(m for m, _ in gathered)))
            total_keys = sorted(set().union(*(t for _, t in gathered)))
        flat = [v for k in mean_keys for v in self._sums.get(k, (0.0, 0.0))]
        flat += [self._totals.get(k, 0.0) for k in total_keys]
        if ctx is not None and ctx.initialized:
            flat = all_reduce_sum(flat, ctx).tolist()
        out = {
            k: (flat[2 * i] / flat[2 * i + 1] if flat[2 * i + 1] else math.nan)
            for i, k in enumerate(mean_keys)
        }
        offset = 2 * len(mean_keys)
        out.update({k: flat[offset + i] for i, k in enumerate(total_keys)})
        return out


class MetricsWriter:
    """Writes scalars to TensorBoard (default), optionally wandb, and always ``metrics.jsonl``.

    Only the main rank should build one with ``enabled=True``; others get a no-op writer.

    Args:
        log_dir: The run's output folder (TensorBoard events go to ``log_dir/tb``).
        config: The run's settings, recorded once (TensorBoard text, wandb config).
        tensorboard: Write TensorBoard events.
        wandb_project: Also log to this wandb project (``pip install wandb``).
        run_name: The wandb run name.
        enabled: False makes every method a no-op.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        config: Mapping[str, Any] | None = None,
        tensorboard: bool = True,
        wandb_project: str | None = None,
        run_name: str | None = None,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self._tb: Any = None
        self._wandb: Any = None
        self._jsonl: Any = None
        if not enabled:
            return
        root = Path(log_dir)
        root.mkdir(parents=True, exist_ok=True)
        self._jsonl = open(root / "metrics.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(root / "tb"))
            if config:
                table = "\n".join(f"|{k}|{v}|" for k, v in sorted(config.items()))
                self._tb.add_text("config", f"|setting|value|\n|-|-|\n{table}")
        if wandb_project:
            import wandb

            self._wandb = wandb.init(
                project=wandb_project, name=run_name, config=dict(config or {})
            )

    def write(self, metrics: Mapping[str, float], step: int) -> None:
        """Record scalars at ``step`` (non-finite values are kept in the JSONL as null)."""
        if not self.enabled or not metrics:
            return
        clean = {k: float(v) for k, v in metrics.items()}
        if self._tb is not None:
            for key, value in clean.items():
                self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(clean, step=step)
        record = {k: (v if math.isfinite(v) else None) for k, v in clean.items()}
        self._jsonl.write(json.dumps({"step": step, **record}, sort_keys=True) + "\n")
        self._jsonl.flush()
        logger.debug("metrics at step %d: %s", step, clean)

    def close(self) -> None:
        """Flush and close every sink (idempotent)."""
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
        if self._jsonl is not None:
            self._jsonl.close()
            self._jsonl = None

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
