"""The ``oracle`` agent without a desktop: its scripts wait on the screen, never on the clock.

Screens here are synthetic arrays: a condition holds when its region differs from the screen
the previous action was sent on (and, where asked, shows drawn content, not a blank window).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from osworld_gym import load_tasks
from osworld_gym.actions import Click, Done, Hotkey, Press, TypeText, Wait
from osworld_gym.policies.oracles import (
    DESKTOP_BASICS,
    DESKTOP_BASICS_GNOME,
    DESKTOP_BASICS_SCREEN,
    shows_gnome,
)
from osworld_gym.policies.oracles.agent import OracleAgent, screenshot_of
from osworld_gym.policies.oracles.conditions import (
    DRAWN_COLOURS,
    POLL_SECONDS,
    WaitFor,
    distinct_colours,
)
from osworld_gym.policies.oracles.desktop_basics_office import GNOME, OPENBOX, goto

WIDTH, HEIGHT = DESKTOP_BASICS_SCREEN
TASKS = load_tasks("desktop-basics")


def blank() -> np.ndarray:
    return np.full((HEIGHT, WIDTH, 3), 200, np.uint8)


def drawn(screen: np.ndarray, region: tuple[int, int, int, int]) -> np.ndarray:
    """A copy of ``screen`` with many colours painted into ``region``."""
    out = screen.copy()
    x, y, w, h = region
    ramp = (np.arange(w * h, dtype=np.uint32) * 7919).reshape(h, w)
    out[y : y + h, x : x + w] = np.stack([ramp % 251, ramp % 241, ramp % 239], axis=-1)
    return out


def flat(screen: np.ndarray, region: tuple[int, int, int, int], value: int) -> np.ndarray:
    """A copy of ``screen`` with ``region`` painted one colour (a window mapped, not drawn)."""
    out = screen.copy()
    x, y, w, h = region
    out[y : y + h, x : x + w] = value
    return out


# --- conditions -------------------------------------------------------------------------------


def test_a_condition_needs_its_region_to_change() -> None:
    region = (10, 20, 30, 40)
    before = blank()
    assert not WaitFor("x", region).met(before.copy(), before)
    assert not WaitFor("x", region).met(flat(before, (100, 100, 5, 5), 0), before)
    assert WaitFor("x", region).met(flat(before, region, 0), before)


def test_a_drawn_condition_rejects_a_blank_window() -> None:
    region = (10, 20, 30, 40)
    before = blank()
    condition = WaitFor("dialog", region, min_colours=DRAWN_COLOURS)
    assert not condition.met(flat(before, region, 240), before)  # mapped, not painted
    assert condition.met(drawn(before, region), before)
    assert distinct_colours(drawn(before, region)[20:60, 10:40]) >= DRAWN_COLOURS


def test_conditions_reject_bad_regions_and_screens() -> None:
    with pytest.raises(ValueError, match="bad region"):
        WaitFor("x", (0, 0, 0, 5))
    with pytest.raises(ValueError, match="timeout"):
        WaitFor("x", (0, 0, 5, 5), timeout=0)
    with pytest.raises(ValueError, match="off a 1280x720 screen"):
        WaitFor("x", (1270, 0, 20, 5)).met(blank(), blank())
    with pytest.raises(ValueError, match="different shapes"):
        WaitFor("x", (0, 0, 5, 5)).met(blank(), np.zeros((10, 10, 3), np.uint8))


# --- the scripts --------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", sorted(DESKTOP_BASICS))
def test_scripts_wait_on_the_screen_not_the_clock(task_id: str) -> None:
    for step in DESKTOP_BASICS[task_id]:
        if isinstance(step, WaitFor):
            x, y, w, h = step.region
            assert x + w <= WIDTH and y + h <= HEIGHT, f"{step.what} is off the screen"
            continue
        actions = step if isinstance(step, list) else [step]
        assert not any(isinstance(a, Wait) for a in actions), "a fixed wait in the script"


def test_every_save_waits_for_the_keep_format_question() -> None:
    for task_id, script in DESKTOP_BASICS.items():
        if task_id.split("-")[0] not in ("calc", "writer", "impress"):
            continue
        saves = [i for i, s in enumerate(script) if s == [Hotkey(keys=("ctrl", "s"))]]
        assert saves, task_id
        for i in saves:
            waits = script[i + 1]
            assert isinstance(waits, WaitFor) and waits.region == OPENBOX.keep_format_text, task_id
            assert waits.min_colours >= DRAWN_COLOURS, "a blank dialog must not count"


def test_on_gnome_a_save_waits_for_the_status_bar_not_a_question() -> None:
    # GNOME's LibreOffice saves Microsoft's formats by default: Ctrl+S asks nothing.
    for task_id, script in DESKTOP_BASICS_GNOME.items():
        if task_id.split("-")[0] not in ("calc", "writer", "impress"):
            continue
        (i,) = [i for i, s in enumerate(script) if s == [Hotkey(keys=("ctrl", "s"))]]
        assert script[i + 1] == WaitFor("the save", GNOME.save_button), task_id
        assert script[i + 2 :] == [Done()], task_id


def test_the_script_follows_the_session_the_first_screen_shows() -> None:
    openbox = blank()  # a maximized window's light title bar and menus at the top
    gnome = blank()
    gnome[:27] = 20  # GNOME's top bar
    task = "impress-delete-second-slide"
    assert shows_gnome(gnome) and not shows_gnome(openbox)
    assert DESKTOP_BASICS[task] != DESKTOP_BASICS_GNOME[task]  # the thumbnail lies elsewhere
    # The terminal tasks have one script for both.
    assert DESKTOP_BASICS_GNOME["os-chmod-script"] == DESKTOP_BASICS["os-chmod-script"]
    agent = OracleAgent([TASKS[task]])
    actions, _, _ = agent.next_actions(0, task, 0, gnome)
    assert actions == [Click(x=GNOME.slide_2_thumbnail[0], y=GNOME.slide_2_thumbnail[1])]
    actions, _, _ = agent.next_actions(1, task, 0, openbox)
    assert actions == [Click(x=OPENBOX.slide_2_thumbnail[0], y=OPENBOX.slide_2_thumbnail[1])]


def test_goto_stays_in_the_grid() -> None:
    (keys,) = goto("D2:D11")
    assert keys[:3] == [
        Hotkey(keys=("ctrl", "home")),
        Press(key="right", presses=3),
        Press(key="down", presses=1),
    ]
    assert keys[3:] == [Hotkey(keys=("shift", "down"))] * 9
    assert goto("A1") == [[Hotkey(keys=("ctrl", "home"))]]
    assert goto("A1:D1")[0][1:] == [Hotkey(keys=("shift", "right"))] * 3
    with pytest.raises(ValueError, match="not a cell"):
        goto("7A")


# --- the agent ----------------------------------------------------------------------------------


def test_the_agent_polls_until_the_dialog_is_drawn() -> None:
    agent = OracleAgent(TASKS.filter(ids=["calc-rename-sheet"]))
    task = "calc-rename-sheet"
    screen = blank()
    actions, text, extra = agent.next_actions(0, task, 0, screen)
    assert actions == [Hotkey(keys=("shift", "escape"))] and text is None and extra == {}
    # The command search has not shown: a short poll, then longer ones.
    polls = [agent.next_actions(0, task, n, screen)[0] for n in (1, 2)]
    assert polls == [[Wait(seconds=POLL_SECONDS[0])], [Wait(seconds=POLL_SECONDS[1])]]
    screen = drawn(screen, OPENBOX.search_field)
    actions, _, extra = agent.next_actions(0, task, 3, screen)
    assert actions == [TypeText(text="Rename Sheet")]
    assert extra["oracle_waits"] == [
        {"what": "the command search", "polls": 2, "seconds": 0.75, "met": True}
    ]
    screen = drawn(screen, OPENBOX.search_first_result)
    assert agent.next_actions(0, task, 4, screen)[0] == [Press(key="enter")]
    screen = flat(screen, OPENBOX.search_field, 90)  # the search closed
    # The Rename Sheet dialog maps blank first: not yet.
    screen = flat(screen, OPENBOX.rename_sheet_dialog, 240)
    assert agent.next_actions(0, task, 5, screen)[0] == [Wait(seconds=POLL_SECONDS[0])]
    screen = drawn(screen, OPENBOX.rename_sheet_dialog)
    assert agent.next_actions(0, task, 6, screen)[0] == [TypeText(text="March 2024\n")]


def test_the_agent_goes_on_after_a_condition_times_out(caplog: pytest.LogCaptureFixture) -> None:
    agent = OracleAgent(TASKS.filter(ids=["calc-rename-sheet"]))
    screen = blank()
    agent.next_actions(0, "calc-rename-sheet", 0, screen)
    waited, step = 0.0, 1
    with caplog.at_level(logging.WARNING):
        while True:
            actions, _, extra = agent.next_actions(0, "calc-rename-sheet", step, screen)
            step += 1
            if not isinstance(actions[0], Wait):
                break
            waited += actions[0].seconds
            assert step < 50, "the polls never end"
    assert actions == [TypeText(text="Rename Sheet")]
    assert 12.0 <= waited < 12.0 + POLL_SECONDS[-1]
    assert extra["oracle_waits"][0]["met"] is False
    assert "the command search did not show" in caplog.text


def test_each_env_keeps_its_own_place_and_restarts_at_step_0() -> None:
    agent = OracleAgent(TASKS.filter(ids=["calc-rename-sheet", "os-chmod-script"]))
    screen = blank()
    assert agent.next_actions(0, "calc-rename-sheet", 0, screen)[0][0].kind == "hotkey"
    assert agent.next_actions(1, "os-chmod-script", 0, screen)[0][0].kind == "type"
    assert agent.next_actions(0, "calc-rename-sheet", 1, screen)[0][0].kind == "wait"
    assert agent.next_actions(1, "os-chmod-script", 1, screen)[0] == [Done()]
    # A new episode on env 0 starts the script over.
    assert agent.next_actions(0, "calc-rename-sheet", 0, screen)[0][0].kind == "hotkey"


def test_the_agent_reads_the_observation_screenshot() -> None:
    screen = blank()
    assert screenshot_of({"screenshot": screen, "instruction": "x"}) is screen
    assert screenshot_of(screen) is screen
    with pytest.raises(TypeError, match="screenshot as an array"):
        screenshot_of({"instruction": "x"})


class _ScreenEnv:
    """A stand-in env: shows the command search one step after Shift+Esc, ends at DONE."""

    def __init__(self, max_steps: int = 15) -> None:
        self.tasks = TASKS
        self.config = type("Config", (), {"max_steps": max_steps})()
        self.unwrapped = self
        self.sent: list[list] = []
        self.screen = blank()

    def reset(self, *, options: dict) -> tuple[dict, dict]:
        self.sent, self.screen = [], blank()
        return {"screenshot": self.screen}, {}

    def step(self, actions: list) -> tuple[dict, float, bool, bool, dict]:
        if self.sent and self.sent[-1] == [Hotkey(keys=("shift", "escape"))]:
            self.screen = drawn(self.screen, OPENBOX.search_field)  # one poll late
        elif actions == [TypeText(text="Freeze First Row")]:
            self.screen = drawn(self.screen, OPENBOX.search_first_result)
        elif actions == [Press(key="enter")]:  # the search, or the Keep format question, closes
            self.screen = flat(
                flat(self.screen, OPENBOX.search_field, 90), OPENBOX.keep_format_text, 90
            )
        elif actions == [Hotkey(keys=("ctrl", "s"))]:
            self.screen = drawn(self.screen, OPENBOX.keep_format_text)
        self.sent.append(actions)
        done = actions[0].kind == "done"
        return {"screenshot": self.screen}, float(done), done, False, {}


def test_play_runs_an_episode_with_its_polls() -> None:
    from osworld_gym.policies.oracles.agent import play

    env = _ScreenEnv()
    reward, _ = play(env, "calc-freeze-header-row")
    assert reward == 1.0
    kinds = [a[0].kind for a in env.sent]
    assert kinds[:3] == ["hotkey", "wait", "type"]  # Shift+Esc, one poll, then the name
    assert kinds[-1] == "done"
    with pytest.raises(RuntimeError, match="did not end"):
        play(_ScreenEnv(max_steps=3), "calc-freeze-header-row")
