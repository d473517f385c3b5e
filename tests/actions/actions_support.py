"""Shared strategies, corpora and hypothesis profiles for the action-layer tests.

A plain module (not conftest magic): tests import what they use.

Profiles: ``osworld-actions`` (the default: derandomized, so CI is reproducible, with the
issue's 10,000 examples per dialect) and ``osworld-actions-thorough`` (random, 10x more);
choose with ``OSWORLD_GYM_FUZZ_PROFILE``.
"""

from __future__ import annotations

import json
import os
import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from osworld_gym.actions import (
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Fail,
    Hotkey,
    KeyDown,
    KeyUp,
    MouseDown,
    MouseUp,
    Move,
    Press,
    RightClick,
    Scroll,
    StructuredActionSpace,
    TypeText,
    Wait,
    to_computer13,
    to_osworld_actions,
    to_pyautogui_code,
    to_uitars,
)
from osworld_gym.errors import ActionError
from osworld_gym.guest.protocol import KEY_NAMES

SCREEN = (1920, 1080)
FUZZ_EXAMPLES = 10_000

settings.register_profile(
    "osworld-actions",
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "osworld-actions-thorough",
    parent=settings.get_profile("osworld-actions"),
    max_examples=10 * FUZZ_EXAMPLES,
    derandomize=False,
)
FUZZ = settings.get_profile(os.environ.get("OSWORLD_GYM_FUZZ_PROFILE", "osworld-actions"))
#: For properties that need fewer examples (round trips): same profile, 1/20 of the count.
PROPERTY = settings(FUZZ, max_examples=max(200, FUZZ.max_examples // 20))
#: For cheap checks of pure functions.
QUICK = settings(FUZZ, max_examples=max(100, FUZZ.max_examples // 100))

# --- typed actions ---------------------------------------------------------------------------

xs = st.integers(0, SCREEN[0] - 1)
ys = st.integers(0, SCREEN[1] - 1)
buttons = st.sampled_from(["left", "middle", "right"])
keys = st.sampled_from(KEY_NAMES)
texts = st.text(min_size=1, max_size=30)


@st.composite
def optional_points(draw: st.DrawFn) -> tuple[int | None, int | None]:
    if draw(st.booleans()):
        return draw(xs), draw(ys)
    return None, None


@st.composite
def scrolls(draw: st.DrawFn) -> Scroll:
    x, y = draw(optional_points())
    dx, dy = draw(st.integers(-1000, 1000)), draw(st.integers(-1000, 1000))
    if dx == dy == 0:
        dy = 1
    return Scroll(x=x, y=y, dx=dx, dy=dy)


def _with_point(cls: type[Action], **extra: st.SearchStrategy) -> st.SearchStrategy[Action]:
    return optional_points().flatmap(
        lambda p: st.builds(cls, x=st.just(p[0]), y=st.just(p[1]), **extra)
    )


GUEST_ACTIONS: st.SearchStrategy[Action] = st.one_of(
    _with_point(Click, button=buttons, clicks=st.integers(1, 3)),
    _with_point(DoubleClick, button=buttons),
    _with_point(RightClick),
    st.builds(Move, x=xs, y=ys),
    _with_point(Drag, to_x=xs, to_y=ys, button=buttons),
    scrolls(),
    st.builds(TypeText, text=texts),
    st.builds(Hotkey, keys=st.lists(keys, min_size=1, max_size=4).map(tuple)),
    st.builds(Press, key=keys, presses=st.integers(1, 100)),
    st.builds(KeyDown, key=keys),
    st.builds(KeyUp, key=keys),
    _with_point(MouseDown, button=buttons),
    _with_point(MouseUp, button=buttons),
)
HOST_ACTIONS: st.SearchStrategy[Action] = st.one_of(
    st.builds(Wait, seconds=st.none() | st.floats(0, 600)),
    st.builds(Done, answer=st.none() | st.text(max_size=20)),
    st.builds(Fail, reason=st.none() | st.text(max_size=20)),
)
ACTIONS = st.one_of(GUEST_ACTIONS, HOST_ACTIONS)

# --- valid texts per dialect (the seeds that mutations start from) ---------------------------

UITARS_SEEDS = [
    "Thought: I will open the menu.\nAction: click(start_box='(1188,554)')",
    "Action: click(start_box='<|box_start|>(100,200)<|box_end|>')",
    "Action: left_double(start_box='(100,200,300,400)')",
    "Action: right_single(start_box='[12,34]')",
    "Action: click(point='<point>200 300</point>')",
    "Action: hover(start_box='<bbox>10 20 30 40</bbox>')",
    "Action: drag(start_point='<point>1 2</point>', end_point='<point>300 400</point>')",
    "Action: drag(start_box='(1,2)', end_box='(3,4)')",
    "Reflection: missed.\nAction_Summary: retry\nAction: press(key='enter')",
    "<think>hmm</think>\nAction: wait()",
    "Action: finished(content='I've done it, it's \"saved\"')",
    "Action: type(content='a \\'b\\' c\\n')",
    "Action: type(content='Action: nested')",
    "Action: hotkey(key='ctrl c')\n\ntype(content='x')\n\n"
    "scroll(start_box='(5,5)', direction='up')",
    "Action: scroll(direction='left')",
    "Action: scroll(start_box='(9,9)', direction='right')",
    "Action: call_user()",
    "Action: keydown(key='shift')\n\nkeyup(key='shift')",
    "Action: mouse_down(start_box='(5,5)', button='right')\n\nmouse_up()",
]
PYAUTOGUI_SEEDS = [
    "```python\npyautogui.click(100, 200)\n```",
    "import pyautogui\npyautogui.moveTo(10, 20)\npyautogui.dragTo(30, 40, duration=0.5)",
    "pyautogui.write('hello\\n'); time.sleep(1); pyautogui.press('enter', presses=2)",
    "```python\npyautogui.hotkey('ctrl', 'c')\nDONE\n```",
    "WAIT",
    "FAIL",
    "pyautogui.scroll(-3, x=5, y=6); pyautogui.hscroll(2)",
    "pyautogui.typewrite(['a', 'enter']); pyautogui.keyDown('shift'); pyautogui.keyUp('shift')",
    "Sure: pyautogui.click(5, 5) then pyautogui.rightClick()",
    "pyautogui.mouseDown(button='primary'); pyautogui.mouseUp(1, 2)",
]
COMPUTER13_SEEDS = [
    '{"action_type": "CLICK", "parameters": {"x": 5, "y": 6, "num_clicks": 2}}',
    '```json\n[{"action_type": "TYPING", "text": "hi"}, "DONE"]\n```',
    '{"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "s"]}}',
    '{"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -3}}',
    '{"action_type": "DRAG_TO", "x": 100, "y": 100}',
    "WAIT",
    'I will press enter: {"action_type": "PRESS", "key": "enter"}',
]
STRUCTURED_SEEDS = [
    '{"kind": "click", "x": 1, "y": 2}',
    '[{"kind": "type", "text": "hi"}, {"kind": "done"}]',
    '{"kind": "hotkey", "keys": ["ctrl", "s"]}',
    '{"kind": "scroll", "dy": -3}',
    "DONE",
]


def _safely(render, actions: list[Action]) -> str | None:
    try:
        return render(actions)
    except ActionError:
        return None


_RENDERERS = {
    "uitars": lambda a: to_uitars(a, thought="t"),
    "pyautogui": lambda a: "\n".join(to_osworld_actions(a)),
    "computer_13": to_computer13,
    "structured": lambda a: json.dumps([x.to_dict() for x in a]),
}


def rendered_corpus(dialect: str, size: int = 400) -> list[str]:
    """Valid texts of random actions, rendered in ``dialect`` (a fixed seed: reproducible)."""
    space = StructuredActionSpace(SCREEN, seed=1234)
    texts = []
    for i in range(size):
        actions = [space.sample() for _ in range(1 + i % 3)]
        text = _safely(_RENDERERS[dialect], actions)
        if text is not None:
            texts.append(text)
    return texts


# Pieces that matter to the parsers: quotes, brackets, escapes, separators, markers.
_SPECIAL = [*"'\"()[]{}<>,=\\\n\t ;:#`", "Action:", "```", "<|box_end|>", "\\n", "pyautogui.",
            "DONE", "click(", "')", "\n\n", "{\"action_type\": ", "\x00", "é", "😀"]  # fmt: skip
_ALPHABET = "abcxyz019 _-.,'\"()[]{}<>=\\\n\té中😀\x00\u200b"


def _mutate(text: str, seed: int) -> str:
    """1-4 random edits: insert, delete, duplicate, replace, truncate.

    The edits come from a seeded ``random.Random``: one hypothesis draw per example instead of
    one per edit keeps 10,000 examples per dialect fast.
    """
    rnd = random.Random(seed)
    for _ in range(rnd.randint(1, 4)):
        n = len(text)
        i = rnd.randint(0, n)
        j = rnd.randint(i, min(n, i + 12))
        op = rnd.randrange(5)
        if op == 0:
            piece = (
                rnd.choice(_SPECIAL)
                if rnd.random() < 0.6
                else "".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(1, 6)))
            )
            text = text[:i] + piece + text[i:]
        elif op == 1:
            text = text[:i] + text[j:]
        elif op == 2:
            text = text[:j] + text[i:j] + text[j:]
        elif op == 3:
            text = text[:i] + rnd.choice(_SPECIAL) + text[j:]
        else:
            text = text[:i]
    return text


def fuzz_inputs(dialect: str, seeds: list[str]) -> st.SearchStrategy[str]:
    """Arbitrary text, valid texts, and mutations of valid texts (cheap to draw)."""
    corpus = seeds + rendered_corpus(dialect)
    return st.one_of(
        st.text(max_size=80),
        st.sampled_from(corpus),
        st.builds(_mutate, st.sampled_from(corpus), st.integers(0, 2**32)),
        st.builds(_mutate, st.sampled_from(seeds), st.integers(0, 2**32)),
    )


def pyautogui_code_of(action: Action) -> str:
    """The code an official OSWorld guest would receive for one action."""
    return to_pyautogui_code([action], prefix=True)
