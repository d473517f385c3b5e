"""OSWorld's action dicts (computer_13's form) count in every action format, as OSWorld's
``DesktopEnv.step`` takes them since its evaluator code of 2026.04."""

from __future__ import annotations

import pytest

from osworld_gym.actions import Click, Done, Fail, Wait
from osworld_gym.env import OSWorldEnv


@pytest.mark.parametrize("action_format", ["uitars", "pyautogui", "computer_13", "structured"])
def test_fail_done_and_wait_dicts_are_those_actions(action_format: str) -> None:
    env = OSWorldEnv(action_format=action_format)  # nothing starts before reset
    try:
        for action, expected in [
            ({"action_type": "FAIL"}, Fail()),
            ({"action_type": "DONE"}, Done()),
            ({"action_type": "WAIT"}, Wait()),
        ]:
            actions, error, _ = env._parse(action)
            assert (actions, error) == ([expected], None)
        actions, error, _ = env._parse([{"action_type": "CLICK", "x": 5, "y": 6}])
        assert error is None and actions == [Click(x=5, y=6)]
        # The structured dialect's own dicts are still its.
        actions, error, _ = env._parse({"kind": "fail"})
        assert (actions, error) == ([Fail()], None)
        # Neither form: a parse error, as before.
        actions, error, _ = env._parse({"type": "FAIL"})
        assert actions == [] and error
    finally:
        env.close()
