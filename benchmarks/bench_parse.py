"""Parse throughput per dialect, on one core.

Usage: python benchmarks/bench_parse.py [--seconds 2] [--dialect uitars ...]

Each dialect parses a fixed corpus of realistic responses (hand-written forms plus random
valid actions rendered in the dialect, seeded) in a loop for the given time; the figure is
responses per second. Target (issue 3): over 20,000 UI-TARS responses per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from osworld_gym.actions import (  # noqa: E402
    StructuredActionSpace,
    parse_action,
    to_computer13,
    to_osworld_actions,
    to_uitars,
)
from osworld_gym.errors import ActionError  # noqa: E402

SCREEN = (1920, 1080)
UITARS_THOUGHT = (
    "I need to save the spreadsheet before closing it. The File menu is in the top-left "
    "corner of the LibreOffice Calc window, so I will open it first."
)
HANDWRITTEN = {
    "uitars": [
        f"Thought: {UITARS_THOUGHT}\nAction: click(start_box='(1188,554)')",
        "Thought: Type the file name and confirm.\nAction: type(content='report_2024.xlsx\\n')",
        "Reflection: The last click missed the button.\nAction_Summary: Click OK in the dialog."
        "\nAction: left_double(start_box='<|box_start|>(960,540)<|box_end|>')",
        "Thought: Select all and copy.\nAction: hotkey(key='ctrl a')\n\nhotkey(key='ctrl c')",
        "Thought: Scroll down to see more rows.\nAction: scroll(start_box='(960,540)', "
        "direction='down')",
        "Thought: Drag the column border.\nAction: drag(start_box='(100,200)', "
        "end_box='(300,200)')",
        "Thought: I've finished; it's saved.\nAction: finished(content='The file is saved, "
        "it's done')",
        "Thought: Click the cell.\nAction: click(point='<point>400 300</point>')",
    ],
    "pyautogui": [
        "```python\npyautogui.click(1180, 548)\n```",
        "```python\npyautogui.hotkey('ctrl', 's')\ntime.sleep(0.5)\npyautogui.write('report')\n"
        "pyautogui.press('enter')\n```",
        "import pyautogui\npyautogui.moveTo(100, 200)\npyautogui.dragTo(300, 200, duration=1.0)",
        "DONE",
    ],
    "computer_13": [
        '```json\n{"action_type": "CLICK", "parameters": {"x": 1180, "y": 548}}\n```',
        '{"action_type": "TYPING", "parameters": {"text": "report_2024"}}',
        '[{"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "s"]}}, "DONE"]',
    ],
    "structured": [
        '{"kind": "click", "x": 1180, "y": 548}',
        '[{"kind": "hotkey", "keys": ["ctrl", "s"]}, {"kind": "type", "text": "report"}]',
    ],
}
RENDER = {
    "uitars": lambda actions: to_uitars(actions, screen_size=SCREEN, thought=UITARS_THOUGHT),
    "pyautogui": lambda actions: "```python\n" + "\n".join(to_osworld_actions(actions)) + "\n```",
    "computer_13": to_computer13,
    "structured": lambda actions: json.dumps([a.to_dict() for a in actions]),
}


def corpus(dialect: str, generated: int = 200) -> list[str]:
    """Hand-written responses plus ``generated`` random valid ones."""
    space = StructuredActionSpace(SCREEN, seed=0)
    texts = list(HANDWRITTEN[dialect])
    while len(texts) < len(HANDWRITTEN[dialect]) + generated:
        try:
            texts.append(RENDER[dialect]([space.sample()]))
        except ActionError:
            continue  # no form in this dialect
    return texts


def throughput(dialect: str, texts: list[str], seconds: float) -> tuple[float, int]:
    """Return (responses per second, errors seen) over about ``seconds`` of parsing."""
    for text in texts:  # warm-up, and check the corpus parses
        parse_action(text, dialect, SCREEN)
    count = errors = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for text in texts:
            errors += parse_action(text, dialect, SCREEN).error is not None
        count += len(texts)
    return count / elapsed, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per dialect")
    parser.add_argument("--dialect", action="append", choices=sorted(HANDWRITTEN))
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, one core, {args.seconds:g} s per dialect")
    print(f"{'dialect':<12} {'responses/s':>12} {'corpus':>7} {'errors':>7}")
    for dialect in args.dialect or list(HANDWRITTEN):
        texts = corpus(dialect)
        rate, errors = throughput(dialect, texts, args.seconds)
        print(f"{dialect:<12} {rate:>12,.0f} {len(texts):>7} {errors:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
