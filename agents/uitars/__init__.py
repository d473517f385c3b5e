"""The UI-TARS-1.5 agent, under the trainer's package name.

The agent lives with the env library's policies (``osworld_gym.policies.uitars``), where the
trainer adapters use it without this package; this module keeps the names importable from here.
"""

from __future__ import annotations

from osworld_gym.policies.uitars import (
    COMPUTER_USE_TEMPLATE,
    EVALUATION_SAMPLING,
    SYSTEM_TEXT,
    TRAINING_SAMPLING,
    ScreenshotEncoder,
    UITARSAgent,
    UITARSConfig,
    add_box_tokens,
    computer_use_prompt,
)

__all__ = [
    "COMPUTER_USE_TEMPLATE",
    "EVALUATION_SAMPLING",
    "SYSTEM_TEXT",
    "TRAINING_SAMPLING",
    "ScreenshotEncoder",
    "UITARSAgent",
    "UITARSConfig",
    "add_box_tokens",
    "computer_use_prompt",
]
