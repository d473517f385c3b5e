"""The UI-TARS-1.5 agent: ARPO's prompt, image history and screenshot resizing.

* ``.prompt`` -- the computer-use prompt, the system text, ``add_box_tokens()``.
* ``.images`` -- screenshots smart-resized and encoded for the model.
* ``.agent`` -- ``UITARSAgent``, a stateless pool policy over a rollout engine.
"""

from __future__ import annotations

from osworld_gym.policies.uitars.agent import (
    EVALUATION_SAMPLING,
    TRAINING_SAMPLING,
    UITARSAgent,
    UITARSConfig,
)
from osworld_gym.policies.uitars.images import ScreenshotEncoder
from osworld_gym.policies.uitars.prompt import (
    COMPUTER_USE_TEMPLATE,
    SYSTEM_TEXT,
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
