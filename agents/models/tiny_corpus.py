"""The small built-in text corpus the tiny model's tokenizer is trained on.

The tiny model never learns language; its tokenizer only has to cut GUI-agent text into a
realistic number of tokens: the UI-TARS output format (``Thought:`` / ``Action:`` lines, action
calls with quoted coordinate strings, typed content), the words of an agent prompt, digits,
ASCII letters and punctuation. Byte-level BPE covers every other byte, so any text still encodes.

Lines are generated from a seeded ``random.Random``, so the corpus, and therefore the
trained tokenizer, depends only on the seed.
"""

from __future__ import annotations

import random
import string

__all__ = ["corpus_lines"]

# Words an agent prompt and a screenshot-driven task tend to use; written for this corpus.
_PROMPT_WORDS = (
    "You are an agent that operates a desktop computer to finish the task below. "
    "Look at the screenshot, think about the next step, then output one action. "
    "Use the format Thought: followed by your reasoning, then Action: followed by a call. "
    "Coordinates are pixels of the screenshot. When the task is done, call finished. "
    "If the task cannot be done, call call_user. Type text with type and press keys with hotkey. "
    "The user wants you to open the file, save the document, rename the folder, change the "
    "settings, search the web, send an email, edit the spreadsheet, fill in the cell, select "
    "the menu item, close the window, scroll down the page, copy and paste the text."
)
_THOUGHTS = (
    "The dialog is open, so I click the OK button.",
    "I need the File menu first.",
    "The text field is focused; I type the name.",
    "The page is long, so I scroll down to find the link.",
    "Everything is saved and the task is complete.",
    "The window is behind another one; I double click its title.",
    "I select the cell and enter the value.",
    "Copying needs the selection, then ctrl c.",
)
_KEYS = ("ctrl c", "ctrl v", "ctrl s", "ctrl a", "alt tab", "enter", "esc", "ctrl shift t")
_DIRECTIONS = ("up", "down", "left", "right")
_WORDS = ("report", "budget", "hello world", "notes.txt", "Sheet1", "=SUM(A1:A9)", "Q3 sales")


def _point(rng: random.Random) -> str:
    return f"({rng.randint(0, 1932)},{rng.randint(0, 1092)})"


def _action(rng: random.Random) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return f"click(start_box='{_point(rng)}')"
    if kind == 1:
        return f"left_double(start_box='{_point(rng)}')"
    if kind == 2:
        return f"right_single(start_box='{_point(rng)}')"
    if kind == 3:
        return f"drag(start_box='{_point(rng)}', end_box='{_point(rng)}')"
    if kind == 4:
        return f"hotkey(key='{rng.choice(_KEYS)}')"
    if kind == 5:
        return f"type(content='{rng.choice(_WORDS)}\\n')"
    if kind == 6:
        return f"scroll(start_box='{_point(rng)}', direction='{rng.choice(_DIRECTIONS)}')"
    if kind == 7:
        return rng.choice(("wait()", "call_user()", "press(key='enter')"))
    return f"finished(content='{rng.choice(('', *_WORDS))}')"


def corpus_lines(seed: int = 0, n_turns: int = 300) -> list[str]:
    """The tokenizer-training corpus.

    Args:
        seed: Seed of the generator that picks thoughts, actions and coordinates.
        n_turns: Number of generated ``Thought:/Action:`` turns.

    Returns:
        Text lines: the prompt words, the character classes, then the turns.

    Example:
        >>> corpus_lines(0, 3) == corpus_lines(0, 3)
        True
    """
    rng = random.Random(seed)
    lines = [
        _PROMPT_WORDS,
        string.ascii_letters,
        string.digits,
        string.punctuation,
    ]
    # Each turn under its chat role, as the rendered prompt has them.
    lines.extend(f"system\n{_PROMPT_WORDS}" for _ in range(3))
    lines.extend(f"user\n{text}" for text in _WORDS)
    for _ in range(n_turns):
        lines.append(f"assistant\nThought: {rng.choice(_THOUGHTS)}\nAction: {_action(rng)}")
    return lines
