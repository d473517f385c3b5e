"""Policy models: the offline tiny Qwen2.5-VL and the loader shared with UI-TARS-1.5-7B.

* ``.tiny_qwen`` -- ``build_tiny_qwen()`` writes a ~200k-parameter Qwen2.5-VL folder
  offline (locally trained tokenizer, seeded weights).
* ``.loading`` -- ``load_policy_model()`` loads that folder or UI-TARS-1.5-7B.
* ``.processor`` -- ``ImageOnlyQwenProcessor``, the stock processor minus video (no
  torchvision needed).
* ``.qwen_vocab`` -- the Qwen2.5-VL special-token names.

Importing this package does not import torch or transformers; the functions do, when called.
"""

from __future__ import annotations

from osworld_agents.models.loading import (
    UI_TARS_1_5_7B,
    ModelUnavailableError,
    PolicyModel,
    load_policy_model,
)
from osworld_agents.models.tiny_qwen import TinyQwenSize, build_tiny_qwen

__all__ = [
    "UI_TARS_1_5_7B",
    "ModelUnavailableError",
    "PolicyModel",
    "TinyQwenSize",
    "build_tiny_qwen",
    "load_policy_model",
]
