r"""The UI-TARS-1.5 computer-use prompt as ARPO sends it, and the box-token rewrite of history.

UI-TARS-1.5 was trained on a fixed prompt: an opening line, ``## Output Format``,
``## Action Space`` (points written ``start_box='<|box_start|>(x1,y1)<|box_end|>'``),
``## Note`` and ``## User Instruction``. ARPO sends it as the first *user* turn, after a one-line
system turn (see ``docs/design/arpo.md#prompt-and-history``). The wording is part of the model's
interface, so it is kept as the model saw it, typo in the system text included.

In the history, ARPO writes every ``start_box='(x,y)'`` / ``end_box='(x,y)'`` of an earlier
response as ``'<|box_start|>(x,y)<|box_end|>'``: the form of the prompt's action space, which
the model sees in its own past turns during training. ``add_box_tokens()`` does that rewrite.
"""

from __future__ import annotations

import re

__all__ = [
    "BOX_END",
    "BOX_START",
    "COMPUTER_USE_TEMPLATE",
    "SYSTEM_TEXT",
    "add_box_tokens",
    "computer_use_prompt",
]

BOX_START = "<|box_start|>"
BOX_END = "<|box_end|>"

#: The system turn ARPO sends. "Your" is ARPO's spelling; the policy was fine-tuned with it.
SYSTEM_TEXT = "Your are a helpful assistant."

# Built line by line so the exact characters (a trailing space included) stay visible.
_BOX = f"{BOX_START}(x1,y1){BOX_END}"
_ESCAPES = (
    r"Use escape characters \', \", and \n in content part to ensure we can parse the content"
    " in normal python string format."
)
_TEMPLATE_LINES = (
    "You are a GUI agent. You are given a task and your action history, with screenshots."
    " You need to perform the next action to complete the task.",
    "",
    "## Output Format",
    "```",
    "Thought: ...",
    "Action: ...",
    "```",
    "",
    "## Action Space",
    "",
    f"click(start_box='{_BOX}')",
    f"left_double(start_box='{_BOX}')",
    f"right_single(start_box='{_BOX}')",
    f"drag(start_box='{_BOX}', end_box='{BOX_START}(x3,y3){BOX_END}')",
    "hotkey(key='')",
    f"type(content='xxx') # {_ESCAPES} If you want to submit your input, use \\n at the end"
    " of content. ",
    f"scroll(start_box='{_BOX}', direction='down or up or right or left')",
    "wait() #Sleep for 5s and take a screenshot to check for any changes.",
    f"finished(content='xxx') # {_ESCAPES}",
    "",
    "## Note",
    "- Use English in `Thought` and `Action` part.",
    "- Write a small plan and finally summarize your next action (with its target element) in"
    " one sentence in `Thought` part.",
    "",
    "## User Instruction",
    "{instruction}",
    "",
)
#: The first user turn, with an ``{instruction}`` placeholder (``str.format`` style).
COMPUTER_USE_TEMPLATE = "\n".join(_TEMPLATE_LINES)


def computer_use_prompt(instruction: str, template: str = COMPUTER_USE_TEMPLATE) -> str:
    """Fill the task instruction into the computer-use prompt.

    Args:
        instruction: The task, in natural language.
        template: A prompt with one ``{instruction}`` field (other literal braces doubled).

    Returns:
        The text of the first user turn.

    Example:
        >>> computer_use_prompt("Open the terminal.").splitlines()[-1]
        'Open the terminal.'
    """
    return template.format(instruction=instruction)


# A start_box/end_box argument holding a bare "(x,y)" (or a 4-number box). An already wrapped
# value has "<" after its quote and does not match, which makes the rewrite idempotent.
_NUM = r"\s*-?\d+(?:\.\d+)?\s*"
_BARE_BOX = re.compile(
    rf"(?P<head>\b(?:start_box|end_box)\s*=\s*(?P<quote>['\"]))"
    rf"\((?P<inner>{_NUM},{_NUM}(?:,{_NUM},{_NUM})?)\)(?P=quote)"
)
_ACTION_MARK = re.compile(r"Action:")


def add_box_tokens(text: str) -> str:
    r"""Wrap the bare point arguments of a response's action section in box tokens.

    Only the part after the first ``Action:`` is rewritten, as ARPO does, so the thought keeps
    the model's own words; a response without ``Action:`` comes back unchanged. Text that is
    already wrapped stays as it is, so applying this twice changes nothing.

    Args:
        text: A model response.

    Returns:
        The response with each ``start_box='(x,y)'`` written
        ``start_box='<|box_start|>(x,y)<|box_end|>'`` (likewise ``end_box``).

    Example:
        >>> add_box_tokens("Thought: go\nAction: click(start_box='(10,20)')")
        "Thought: go\nAction: click(start_box='<|box_start|>(10,20)<|box_end|>')"
    """
    mark = _ACTION_MARK.search(text)
    if mark is None:
        return text
    head, actions = text[: mark.end()], text[mark.end() :]
    return head + _BARE_BOX.sub(
        lambda m: f"{m['head']}{BOX_START}({m['inner']}){BOX_END}{m['quote']}", actions
    )
