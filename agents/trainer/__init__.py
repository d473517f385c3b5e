"""The ARPO trainer: one loop for ARPO, GRPO, RS-SFT and SFT, checkpoints, data parallelism.

* ``.config`` -- ``TrainConfig``, the ``paper`` and ``cpu`` presets, the CLI parser.
* ``.train`` -- ``main()``, the loop, top to bottom;
  ``python -m osworld_agents.trainer.train --preset cpu`` (or under ``torchrun``).
* ``.components`` -- the run's policy, optimizer, pool and replay buffer from the config.
* ``.rollout`` / ``.tasks`` / ``.evaluation`` -- collection, task schedule and
  rollout budgets (DART), evaluation.
* ``.baseline`` -- ARPO's task selection: a baseline pass and the selection file
  (``osworld-arpo-select``).
* ``.samples`` / ``.update`` -- episodes to training samples; the PPO / NLL update.
* ``.checkpoint`` -- atomic, exactly resumable checkpoints.
* ``.distributed`` -- data parallelism over ``torch.distributed``.
* ``.metrics`` -- reduced metrics and the TensorBoard / wandb / JSONL writer.

Importing this package loads only the config (no torch); the rest is imported on use.
"""

from __future__ import annotations

from osworld_agents.trainer.config import PRESETS, TrainConfig, parse_config

__all__ = ["PRESETS", "TrainConfig", "parse_config"]
