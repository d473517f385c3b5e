"""The trainer-facing path without a trainer package or a desktop: ``osworld_episode`` (the
UI-TARS agent over an OpenAI-compatible endpoint on loopback) and tool calls, on a lease desk of
real ``OSWorldEnv``s over fake desktops (``fake_provider``). On real desktops, through the
trainers' own packages: ``test_episode.py`` and the ``trainers`` tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from chat_endpoint import ChatEndpoint, assistant_turn, chat_endpoint
from fake_provider import FAKE_SCREEN, FakeProvider
from fake_tasks import TASKS

from osworld_gym.integrations import DesktopLeases
from osworld_gym.integrations.episode import osworld_episode
from osworld_gym.integrations.tools import action_from_tool_call, tool_schemas
from osworld_gym.policies.uitars import UITARSAgent
from osworld_gym.pool import PoolConfig

# What the scripted model answers, by the word the instruction asks for, turn by turn.
ANSWERS = {
    "hello": [
        "Thought: Click the field first.\nAction: click(start_box='(500,500)')",
        "Thought: Now type.\nAction: type(content='hello')",
        "Thought: Typed.\nAction: finished(content='hello')",
    ],
    "world": [
        "Thought: I will say the wrong word.\nAction: type(content='hello')",
        "Action: finished()",
    ],
}


def _reply(body: dict[str, Any]) -> str:
    prompt = json.dumps(body["messages"])
    word = next(w for w in ANSWERS if f"Type {w}." in prompt)
    answers = ANSWERS[word]
    return answers[min(assistant_turn(body), len(answers) - 1)]


@pytest.fixture()
def endpoint() -> Iterator[ChatEndpoint]:
    with chat_endpoint(_reply) as server:
        yield server


@pytest.fixture()
def provider() -> FakeProvider:
    return FakeProvider()


@pytest.fixture()
def desk(provider: FakeProvider) -> Iterator[DesktopLeases]:
    kwargs = {
        "provider": provider,
        "tasks": TASKS,
        "screen_size": FAKE_SCREEN,
        "settle": False,
        **UITARSAgent(engine=None).env_kwargs(),  # type: ignore[arg-type]
    }
    with DesktopLeases(kwargs, 2, config=PoolConfig(screenshot_format="png")) as leases:
        yield leases


def test_episodes_score_what_the_model_did_concurrently(
    endpoint: ChatEndpoint, desk: DesktopLeases, provider: FakeProvider
) -> None:
    async def both() -> list[Any]:
        return await asyncio.gather(
            osworld_episode("type-hello", endpoint.url, "scripted", leases=desk),
            osworld_episode("type-world", endpoint.url, "scripted", leases=desk),
        )

    right, wrong = asyncio.run(both())
    assert (right.reward, right.attempts, len(right.trajectory.steps)) == (1.0, 1, 3)
    assert (wrong.reward, wrong.attempts, len(wrong.trajectory.steps)) == (0.0, 1, 2)
    assert right.trajectory.steps[0].parse_error is None
    assert right.final_info["evaluation"].score == 1.0
    messages = right.messages()
    assert messages[-1]["role"] == "assistant" and "finished" in messages[-1]["content"]
    # The click went to the screen in its own pixels: UI-TARS's 0-1000 box, scaled.
    clicks = [args for desktop in provider.desktops for name, args, _ in desktop.inputs()
              if name == "click"]  # fmt: skip
    assert clicks and all(0 <= x < FAKE_SCREEN[0] and 0 <= y < FAKE_SCREEN[1] for x, y in clicks)
    assert provider.launches == 2


def test_a_desktop_that_dies_mid_episode_is_retried_on_a_fresh_one(
    endpoint: ChatEndpoint, desk: DesktopLeases, provider: FakeProvider
) -> None:
    killed: list[str] = []

    def kill_once(body: dict[str, Any]) -> None:
        if not killed and sum(m["role"] == "assistant" for m in body["messages"]) == 1:
            (desktop,) = provider.live()
            desktop.kill()
            killed.append(repr(desktop))

    endpoint.before_answer = kill_once
    outcome = asyncio.run(osworld_episode("type-hello", endpoint.url, "scripted", leases=desk))
    assert killed and outcome.attempts == 2 and outcome.reward == 1.0
    assert outcome.trajectory.infra_error is None
    assert provider.launches == 2, "the second attempt ran on a relaunched desktop"


def test_tool_calls_drive_a_lease() -> None:
    names = [tool["function"]["name"] for tool in tool_schemas(FAKE_SCREEN)]
    assert "type_text" in names
    provider = FakeProvider()
    kwargs = {"provider": provider, "tasks": TASKS, "screen_size": FAKE_SCREEN, "settle": False}
    with DesktopLeases(kwargs, 1) as desk, desk.acquire() as lease:
        lease.reset("type-hello")
        result = lease.step(action_from_tool_call("type_text", '{"text": "hello"}'))
        assert not result.done and result.info["parse_error"] is None
        result = lease.step(action_from_tool_call("done", {}))
        assert result.terminated and result.reward == 1.0
        (desktop,) = provider.live()
        assert [name for name, _, _ in desktop.inputs()] == ["write"]
