"""``osworld_episode`` against a real HTTP endpoint on loopback, on real ``local`` desktops.

The endpoint is OpenAI-compatible and answers as UI-TARS would: the ``ui-basics`` oracle's
responses (model name ``oracle``), a wrong button or word (``wrong``), or ``wait()`` forever
(``waiter``). It recognises the task by the instruction in the prompt.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pool_desktops
import pytest
from chat_endpoint import ChatEndpoint, assistant_turn, chat_endpoint
from fixture_marks import needs

from osworld_gym import load_tasks
from osworld_gym.integrations import DesktopLeases
from osworld_gym.integrations.episode import osworld_episode
from osworld_gym.policies.oracles.ui_basics import (
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    oracle_responses,
)
from osworld_gym.policies.uitars import UITARSAgent
from osworld_gym.pool import PoolConfig
from osworld_gym.providers.local.provider import LocalProviderConfig

pytestmark = [pytest.mark.desktop, pytest.mark.trainers]
TASKS = load_tasks(SUITE)
WAIT = "Thought: Let me look again.\nAction: wait()"


def _task_of(body: dict[str, Any]) -> str:
    prompt = json.dumps(body["messages"])
    for task in TASKS:
        if json.dumps(task.instruction)[1:-1] in prompt:
            return task.id
    raise AssertionError("no ui-basics instruction in the prompt")


def _reply(body: dict[str, Any]) -> str:
    turn = assistant_turn(body)
    task_id = _task_of(body)
    if body["model"] == "oracle":
        answers = oracle_responses(task_id)
        return answers[min(turn, len(answers) - 1)]
    if body["model"] == "wrong":
        return distractor_answer(TASKS[task_id]) if turn == 0 else oracle_responses(task_id)[-1]
    return WAIT


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ChatEndpoint]:
    with chat_endpoint(_reply) as server:
        yield server


@pytest.fixture(scope="module")
@needs("desktop")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopLeases]:
    work_dir: Path = tmp_path_factory.mktemp("episode-desktops")
    kwargs = {
        "tasks": SUITE,
        "screen_size": SCREEN_SIZE,
        "provider": LocalProviderConfig(screen_size=SCREEN_SIZE, work_dir=str(work_dir)),
        **UITARSAgent(engine=None).env_kwargs(),  # type: ignore[arg-type]
    }
    with DesktopLeases(kwargs, 2, config=PoolConfig(screenshot_format="png")) as leases:
        yield leases
    assert not pool_desktops.processes_under(work_dir)


def test_right_and_wrong_answers_score_1_and_0_concurrently(
    endpoint: ChatEndpoint, desk: DesktopLeases
) -> None:
    ids = ["click-colour-01", "type-word-02", "find-ok-01"]

    async def main() -> list[Any]:
        runs = [osworld_episode(t, endpoint.url, "oracle", leases=desk) for t in ids]
        runs += [osworld_episode(t, endpoint.url, "wrong", leases=desk) for t in ids]
        return await asyncio.gather(*runs)

    outcomes = asyncio.run(main())
    assert [o.reward for o in outcomes] == [1.0] * 3 + [0.0] * 3
    for task_id, outcome in zip(ids * 2, outcomes, strict=True):
        trajectory = outcome.trajectory
        assert trajectory.task_id == task_id and outcome.attempts == 1
        assert trajectory.terminated and trajectory.infra_error is None
        assert all(step.screenshot for step in trajectory.steps)
        assert trajectory.steps[0].timings["policy"] > 0
    messages = outcomes[0].messages()
    assert [m["role"] for m in messages][:3] == ["system", "user", "user"]
    assert "data:image/png;base64," in json.dumps(messages)


def test_fifteen_waits_end_with_the_fail_replacement(
    endpoint: ChatEndpoint, desk: DesktopLeases
) -> None:
    outcome = asyncio.run(osworld_episode("click-colour-02", endpoint.url, "waiter", leases=desk))
    trajectory = outcome.trajectory
    assert len(trajectory.steps) == 15
    assert outcome.reward == 0.0 and trajectory.score == 0.0
    assert trajectory.truncated and outcome.final_info["fail_replaced"], "15th action -> FAIL"


def test_a_desktop_killed_mid_episode_is_retried_on_a_fresh_one(
    endpoint: ChatEndpoint, desk: DesktopLeases
) -> None:
    killed: list[int] = []

    def kill_once(body: dict[str, Any]) -> None:
        if killed or not any(m["role"] == "assistant" for m in body["messages"]):
            return  # kill before the second answer of the first attempt
        for env_id in range(desk.size):
            pids = desk.pool.call(pool_desktops.desktop_pids, env_ids=[env_id])[0]
            if pids and pool_desktops.kill(pids["xvfb"]):
                killed.append(env_id)

    endpoint.before_answer = kill_once
    try:
        outcome = asyncio.run(osworld_episode("type-word-01", endpoint.url, "oracle", leases=desk))
    finally:
        endpoint.before_answer = None
    assert killed
    assert outcome.attempts == 2 and outcome.reward == 1.0
    assert outcome.trajectory.attempt == 1 and outcome.trajectory.infra_error is None


def test_every_attempt_cut_gives_no_reward(endpoint: ChatEndpoint, desk: DesktopLeases) -> None:
    def kill_all(body: dict[str, Any]) -> None:
        for env_id in range(desk.size):
            pids = desk.pool.call(pool_desktops.desktop_pids, env_ids=[env_id])[0]
            if pids:
                pool_desktops.kill(pids["xvfb"])

    endpoint.before_answer = kill_all
    try:
        outcome = asyncio.run(
            osworld_episode("click-colour-03", endpoint.url, "oracle", leases=desk, max_attempts=2)
        )
    finally:
        endpoint.before_answer = None
    assert outcome.reward is None and outcome.attempts == 2
    assert outcome.trajectory.infra_error


def test_missing_endpoint_settings_are_a_clear_error() -> None:
    with pytest.raises(ValueError, match="base_url and model"):
        asyncio.run(osworld_episode("click-colour-01"))
