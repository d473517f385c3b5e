"""The UI-TARS-1.5 prompt and the box-token rewrite of past responses."""

from __future__ import annotations

import re

import pytest

from osworld_gym import parse_action
from osworld_gym.policies.uitars.prompt import (
    BOX_END,
    BOX_START,
    COMPUTER_USE_TEMPLATE,
    SYSTEM_TEXT,
    add_box_tokens,
    computer_use_prompt,
)


def test_sections_in_order_with_instruction_last():
    instruction = "Open the file {report}.txt and 100% zoom"
    prompt = computer_use_prompt(instruction)
    headings = re.findall(r"^## .+$", prompt, re.M)
    assert headings == ["## Output Format", "## Action Space", "## Note", "## User Instruction"]
    assert prompt.startswith("You are a GUI agent. You are given a task and your action history")
    # Braces and percent signs in the instruction are inserted verbatim, not formatted.
    assert prompt.rstrip("\n").endswith("## User Instruction\n" + instruction)


def test_output_format_block():
    prompt = computer_use_prompt("x")
    assert "## Output Format\n```\nThought: ...\nAction: ...\n```\n" in prompt


def test_action_space_lists_arpo_actions_in_start_box_form():
    prompt = computer_use_prompt("x")
    space = prompt.split("## Action Space")[1].split("## Note")[0]
    names = re.findall(r"^(\w+)\(", space, re.M)
    assert names == [
        "click",
        "left_double",
        "right_single",
        "drag",
        "hotkey",
        "type",
        "scroll",
        "wait",
        "finished",
    ]
    assert "call_user" not in prompt  # ARPO's prompt does not offer it
    assert f"click(start_box='{BOX_START}(x1,y1){BOX_END}')" in space
    assert f"end_box='{BOX_START}(x3,y3){BOX_END}'" in space
    assert "direction='down or up or right or left'" in space
    # The escaping hint is rendered with single backslashes, as the model was shown it.
    assert r"Use escape characters \', \", and \n in content part" in space
    assert r"use \n at the end of content." in space


def test_note_asks_for_english():
    note = computer_use_prompt("x").split("## Note")[1].split("## User Instruction")[0]
    assert "- Use English in `Thought` and `Action` part." in note
    assert "in one sentence in `Thought` part." in note


def test_system_text_is_arpos():
    assert SYSTEM_TEXT == "Your are a helpful assistant."


def test_template_has_a_single_placeholder():
    assert COMPUTER_USE_TEMPLATE.count("{") == COMPUTER_USE_TEMPLATE.count("{instruction}") == 1


def test_action_space_examples_parse_with_the_uitars_dialect():
    # The prompt's own example lines are valid UI-TARS syntax for the env's parser.
    space = computer_use_prompt("x").split("## Action Space")[1].split("## Note")[0]
    click = next(line for line in space.splitlines() if line.startswith("click("))
    result = parse_action("Action: " + click.replace("x1,y1", "10,20"), dialect="uitars")
    assert result.error is None and result.actions[0].kind == "click"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: open it\nAction: click(start_box='(120,45)')",
            f"Thought: open it\nAction: click(start_box='{BOX_START}(120,45){BOX_END}')",
        ),
        (
            "Thought: move\nAction: drag(start_box='(1,2)', end_box='(30, 40)')",
            f"Thought: move\nAction: drag(start_box='{BOX_START}(1,2){BOX_END}', "
            f"end_box='{BOX_START}(30, 40){BOX_END}')",
        ),
        (
            "Action: scroll(start_box=\"(5.5,6)\", direction='down')",
            f"Action: scroll(start_box=\"{BOX_START}(5.5,6){BOX_END}\", direction='down')",
        ),
        (
            "Thought: two\nAction: hotkey(key='ctrl c')\n\nclick(start_box='(7,8)')",
            "Thought: two\nAction: hotkey(key='ctrl c')\n\n"
            f"click(start_box='{BOX_START}(7,8){BOX_END}')",
        ),
    ],
)
def test_add_box_tokens_wraps_points(text, expected):
    assert add_box_tokens(text) == expected


def test_add_box_tokens_is_idempotent():
    text = "Thought: a\nAction: drag(start_box='(1,2)', end_box='(3,4)')"
    once = add_box_tokens(text)
    assert add_box_tokens(once) == once
    assert once.count(BOX_START) == once.count(BOX_END) == 2


@pytest.mark.parametrize(
    "text",
    [
        "Thought: I saw start_box='(1,2)' somewhere but have no action",  # no Action: marker
        "Thought: done\nAction: finished(content='start_box')",
        "Thought: type\nAction: type(content='hello (1,2)')",
        "",
    ],
)
def test_add_box_tokens_leaves_other_text_alone(text):
    assert add_box_tokens(text) == text


def test_add_box_tokens_keeps_the_thought_as_written():
    text = "Thought: the last time start_box='(1,2)' missed\nAction: click(start_box='(3,4)')"
    out = add_box_tokens(text)
    assert out.startswith("Thought: the last time start_box='(1,2)' missed\nAction:")
    assert out.endswith(f"click(start_box='{BOX_START}(3,4){BOX_END}')")
