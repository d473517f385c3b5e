"""Gymnasium action spaces: free model text, and typed actions.

``TextActionSpace`` holds any Unicode string up to a length, unlike ``spaces.Text``
whose default charset rejects spaces and punctuation (so real model output). Its samples are
random text, or -- with ``dialect`` -- random valid actions rendered in that dialect, which
makes ``env.action_space.sample()`` drive a desktop meaningfully.
``StructuredActionSpace`` holds typed actions whose points lie on the screen.
"""

from __future__ import annotations

import inspect
import json
import logging
import multiprocessing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import utils as vector_utils

from osworld_gym.actions import compile as compile_
from osworld_gym.actions import render
from osworld_gym.actions.coords import ScreenSize
from osworld_gym.actions.keys import KEY_NAMES
from osworld_gym.actions.result import DEFAULT_MAX_CHARS
from osworld_gym.actions.types import ACTION_KINDS, ACTION_TYPES, BUTTONS, Action, action_from_dict
from osworld_gym.errors import ActionError

logger = logging.getLogger(__name__)

__all__ = ["StructuredActionSpace", "TextActionSpace"]

# Sampled text mixes ASCII, Latin-1, CJK and emoji so consumers meet non-ASCII early.
_SAMPLE_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    " \n\t.,;:!?'\"()[]{}<>=+-*/\\_#@&%$~`|^" "éüßñçØ" "中文字" "😀✓"
)  # fmt: skip
_TEXT_DIALECTS = (None, "uitars", "pyautogui", "computer_13", "structured")
_SAMPLE_MAX_LEN = 64
_NAMED_KEYS = tuple(k for k in KEY_NAMES if len(k) > 1)
# The UI-TARS parser's options that also shape how an action is written (the coordinate system
# and image grid); the others (e.g. how strictly to read) do not change the text to write.
_UITARS_RENDER_OPTIONS = frozenset(inspect.signature(render.to_uitars).parameters) - {
    "actions",
    "screen_size",
    "thought",
}


def _random_text(rng: np.random.Generator, low: int, high: int) -> str:
    length = int(rng.integers(low, high + 1))
    picks = rng.integers(0, len(_SAMPLE_ALPHABET), size=length)
    return "".join(_SAMPLE_ALPHABET[i] for i in picks)


class StructuredActionSpace(spaces.Space[Action]):
    """Typed actions (``osworld_gym.actions.types``) of some kinds, on a screen.

    Args:
        screen_size: ``(width, height)``; points must lie on the screen.
        kinds: The allowed kinds (default: all). Sampling picks one uniformly.
        seed: Seed of the sampling generator.

    Example:
        >>> space = StructuredActionSpace((1920, 1080), kinds=["click"], seed=0)
        >>> action = space.sample()
        >>> action.kind, action in space
        ('click', True)
    """

    def __init__(
        self,
        screen_size: ScreenSize = (1920, 1080),
        kinds: Sequence[str] | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        chosen = tuple(ACTION_KINDS if kinds is None else kinds)
        unknown = [k for k in chosen if k not in ACTION_TYPES]
        if unknown or not chosen:
            raise ValueError(f"kinds must be some of {list(ACTION_KINDS)}, got {list(chosen)}")
        self.screen_size = (int(screen_size[0]), int(screen_size[1]))
        self.kinds = chosen
        super().__init__(None, None, seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Typed actions do not flatten into a Box."""
        return False

    def contains(self, x: Any) -> bool:
        """True for a typed action of an allowed kind whose points lie on the screen."""
        if not isinstance(x, Action) or x.kind not in self.kinds:
            return False
        width, height = self.screen_size
        for x_name, y_name in (("x", "y"), ("to_x", "to_y")):
            px, py = getattr(x, x_name, None), getattr(x, y_name, None)
            # Points are whole pairs (the action types check it) or absent.
            if px is not None and py is not None and not (0 <= px < width and 0 <= py < height):
                return False
        return True

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> Action:
        """Return a random valid action of an allowed kind.

        Raises:
            NotImplementedError: a mask or probability was given.
        """
        if mask is not None or probability is not None:
            raise NotImplementedError("StructuredActionSpace.sample takes no mask")
        rng = self.np_random
        kind = self.kinds[int(rng.integers(len(self.kinds)))]
        return action_from_dict({"kind": kind, **self._random_fields(kind, rng)})

    def _random_fields(self, kind: str, rng: np.random.Generator) -> dict[str, Any]:
        width, height = self.screen_size
        point = {"x": int(rng.integers(width)), "y": int(rng.integers(height))}
        button = str(BUTTONS[int(rng.integers(len(BUTTONS)))])
        key = _NAMED_KEYS[int(rng.integers(len(_NAMED_KEYS)))]
        if kind in ("click", "double_click", "mouse_down", "mouse_up"):
            extra = {"clicks": int(rng.integers(1, 4))} if kind == "click" else {}
            return {**point, "button": button, **extra}
        if kind in ("right_click", "move"):
            return point
        if kind == "drag":
            return {**point, "to_x": int(rng.integers(width)), "to_y": int(rng.integers(height))}
        if kind == "scroll":
            amount = int(rng.integers(1, 11)) * (1 if rng.random() < 0.5 else -1)
            return {**point, "dx" if rng.random() < 0.3 else "dy": amount}
        if kind == "type":
            return {"text": _random_text(rng, 1, 16)}
        if kind == "hotkey":
            picks = rng.choice(len(_NAMED_KEYS), size=int(rng.integers(1, 4)), replace=False)
            return {"keys": [_NAMED_KEYS[i] for i in picks]}
        if kind in ("press", "key_down", "key_up"):
            return {"key": key}
        if kind == "wait":
            return {"seconds": None if rng.random() < 0.5 else float(rng.integers(1, 6))}
        return {}  # done, fail

    def to_jsonable(self, sample_n: Iterable[Action]) -> list[dict[str, Any]]:
        """Convert a batch of actions to JSON-compatible dicts."""
        return [action.to_dict() for action in sample_n]

    def from_jsonable(self, sample_n: list[dict[str, Any]]) -> list[Action]:
        """Convert dicts from ``to_jsonable()`` back to actions."""
        return [action_from_dict(item) for item in sample_n]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, StructuredActionSpace)
            and self.screen_size == other.screen_size
            and self.kinds == other.kinds
        )

    def __hash__(self) -> int:
        return hash((type(self), self.screen_size, self.kinds))

    def __repr__(self) -> str:
        return f"StructuredActionSpace(screen_size={self.screen_size}, kinds={list(self.kinds)})"


class TextActionSpace(spaces.Space[str]):
    """Any Unicode string of ``min_length`` to ``max_length`` characters: model output.

    Args:
        max_length: Longest string in the space.
        min_length: Shortest string in the space.
        dialect: When set (``"uitars"``, ``"pyautogui"``, ``"computer_13"``, ``"structured"``),
            samples are random valid actions rendered in that dialect; otherwise random text.
        screen_size: ``(width, height)`` for sampled actions.
        dialect_options: The dialect parser's options (e.g. UI-TARS ``coordinates``,
            ``min_pixels``/``max_pixels``): samples are written so that parsing them with the
            same options gives the sampled action back.
        seed: Seed of the sampling generator.

    Example:
        >>> space = TextActionSpace(dialect="uitars", seed=1)
        >>> text = space.sample()
        >>> isinstance(text, str), text in space, "Hello, world! ✓" in space
        (True, True, True)
    """

    def __init__(
        self,
        max_length: int = DEFAULT_MAX_CHARS,
        *,
        min_length: int = 0,
        dialect: str | None = None,
        screen_size: ScreenSize = (1920, 1080),
        dialect_options: Mapping[str, Any] | Sequence[tuple[str, Any]] = (),
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if not 0 <= min_length <= max_length:
            raise ValueError(f"need 0 <= min_length <= max_length, got {min_length}, {max_length}")
        if dialect not in _TEXT_DIALECTS:
            raise ValueError(f"dialect must be one of {_TEXT_DIALECTS}, got {dialect!r}")
        self.max_length, self.min_length, self.dialect = max_length, min_length, dialect
        self.screen_size = (int(screen_size[0]), int(screen_size[1]))
        self.dialect_options = dict(dialect_options)
        super().__init__(None, str, seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text does not flatten into a Box."""
        return False

    def contains(self, x: Any) -> bool:
        """True for any string within the length bounds."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> str:
        """Return random text, or a random valid action in ``dialect``.

        Raises:
            NotImplementedError: a mask or probability was given.
        """
        if mask is not None or probability is not None:
            raise NotImplementedError("TextActionSpace.sample takes no mask")
        rng = self.np_random
        if self.dialect is None:
            high = max(self.min_length, min(self.max_length, _SAMPLE_MAX_LEN))
            return _random_text(rng, self.min_length, high)
        for _ in range(100):
            text = self._render(StructuredActionSpace(self.screen_size, seed=rng).sample())
            if text is not None and self.contains(text):
                return text
        # Every dialect writes a plain WAIT, and it is short: a valid action whatever the bounds
        # allowed (100 draws in a row failing is for pathological length bounds only).
        return self._render(action_from_dict({"kind": "wait"})) or ""

    def _render(self, action: Action) -> str | None:
        try:
            if self.dialect == "uitars":
                options = {
                    k: v for k, v in self.dialect_options.items() if k in _UITARS_RENDER_OPTIONS
                }
                return render.to_uitars([action], screen_size=self.screen_size, **options)
            if self.dialect == "pyautogui":
                return "\n".join(compile_.to_osworld_actions([action]))
            if self.dialect == "computer_13":
                return render.to_computer13([action])
            return json.dumps(action.to_dict(), ensure_ascii=False)
        except ActionError:  # this action has no form in the dialect; draw another
            return None

    def to_jsonable(self, sample_n: Iterable[str]) -> list[str]:
        """Strings are JSON already."""
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        """Strings are JSON already."""
        return list(sample_n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextActionSpace) and (
            self.min_length,
            self.max_length,
            self.dialect,
            self.screen_size,
            self.dialect_options,
        ) == (
            other.min_length,
            other.max_length,
            other.dialect,
            other.screen_size,
            other.dialect_options,
        )

    def __hash__(self) -> int:
        return hash((type(self), self.min_length, self.max_length, self.dialect, self.screen_size))

    def __repr__(self) -> str:
        return (
            f"TextActionSpace(max_length={self.max_length}, min_length={self.min_length}, "
            f"dialect={self.dialect!r}, screen_size={self.screen_size})"
        )


# --- vector support: shared memory for AsyncVectorEnv ------------------------------------------
# Text goes through shared memory as Unicode code points (int32), 0 as padding, so any string
# fits (a NUL character would be dropped). Registering is how Gymnasium supports custom spaces.


@vector_utils.create_shared_memory.register(TextActionSpace)
def _create_text_memory(space: TextActionSpace, n: int = 1, ctx: Any = multiprocessing) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


@vector_utils.read_from_shared_memory.register(TextActionSpace)
def _read_text_memory(space: TextActionSpace, shared_memory: Any, n: int = 1) -> tuple[str, ...]:
    rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(n, space.max_length)
    return tuple("".join(map(chr, row[row != 0])) for row in rows)


@vector_utils.write_to_shared_memory.register(TextActionSpace)
def _write_text_memory(space: TextActionSpace, index: int, value: str, shared_memory: Any) -> None:
    size = space.max_length
    codes = np.zeros(size, dtype=np.int32)
    codes[: len(value)] = np.fromiter(map(ord, value), dtype=np.int32, count=len(value))
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    np.copyto(destination[index * size : (index + 1) * size], codes)
