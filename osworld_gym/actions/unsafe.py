"""UNSAFE: OSWorld's own handling of pyautogui output, for evaluation parity only.

OSWorld's reference agents send the model's code to the guest as written, where it runs as arbitrary
Python (``docs/design/action-formats.md#pyautogui-code``). Some published scores were measured that
way, so reproducing them may need the same behaviour. This module only *extracts* the code the way
OSWorld's prompt agent does; running it is the caller's explicit choice (the guest client's
``/execute``). Nothing in osworld-gym calls this module unless asked to: the default path is the
allowlisted ``osworld_gym.actions.dialects.pyautogui`` parser.
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)

__all__ = ["unsafe_passthrough_code"]

_TOKENS = ("WAIT", "DONE", "FAIL")
_FENCE = re.compile(r"```(?:python|py|python3)?[ \t]*\r?\n?(.*?)```", re.S)


def unsafe_passthrough_code(text: str) -> list[str]:
    r"""Return OSWorld ``pyautogui`` action strings from model text, verbatim. UNSAFE.

    The result is code to run in the desktop exactly as the model wrote it (or ``"WAIT"``,
    ``"DONE"``, ``"FAIL"``). Only fenced code counts, as in OSWorld's prompt agent; a block
    whose last line is a token yields the code and then the token.

    Args:
        text: The model output.

    Returns:
        The action strings, in order; empty when the text holds no fenced code or token.

    Example:
        >>> unsafe_passthrough_code("```python\nimport os\nos.getcwd()\nDONE\n```")
        ['import os\nos.getcwd()', 'DONE']
    """
    stripped = text.strip()
    if stripped in _TOKENS:
        return [stripped]
    out: list[str] = []
    for match in _FENCE.finditer(text):
        block = match.group(1).strip()
        if not block:
            continue
        if block in _TOKENS:
            out.append(block)
            continue
        lines = block.splitlines()
        if len(lines) > 1 and lines[-1].strip() in _TOKENS:
            out.extend(["\n".join(lines[:-1]).strip(), lines[-1].strip()])
        else:
            out.append(block)
    if out:
        logger.warning("passing %d unvetted code action(s) through to the desktop", len(out))
    return out
