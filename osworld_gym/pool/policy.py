"""The policy interface collectors call: a batch of requests in, one output per request out."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from osworld_gym.pool.trajectory import Trajectory


@dataclass
class PolicyRequest:
    """One env waiting for its next action.

    Attributes:
        env_id: The env in the pool.
        task_id: The episode's task.
        rollout: The rollout index within the task's group.
        step: Steps taken so far in this episode.
        observation: The env's latest observation (raw: the screenshot as an array).
        info: The env's latest info dict.
        trajectory: The episode so far (encoded screenshots, actions, model text), e.g. for a
            prompt with image history.
        tag: The tag its group was fed with in a streaming collection
            (``TaskFeed``), None otherwise: it tells apart two
            episodes of the same task and rollout index fed at different times.
    """

    env_id: int
    task_id: str
    rollout: int
    step: int
    observation: Any
    info: dict[str, Any]
    trajectory: Trajectory
    tag: Any = None


@dataclass
class PolicyOutput:
    """What the policy chose for one request.

    Attributes:
        action: What the env's ``step`` receives (model text for text action formats).
        text: The model's raw output, recorded in the trajectory (defaults to ``action`` when
            that is a string).
        extra: Anything else to record with the step (token ids, log-probs, ...).
    """

    action: Any
    text: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Policy: TypeAlias = Callable[
    [list[PolicyRequest]], "Sequence[PolicyOutput | Any] | Awaitable[Sequence[PolicyOutput | Any]]"
]
"""A batched policy: sync (run on a worker thread) or async (awaited on the pool's loop).
Each output is a ``PolicyOutput`` or a bare action (a string is also the model text)."""


async def call_policy(
    policy: Policy, requests: list[PolicyRequest]
) -> tuple[list[PolicyOutput], float]:
    """Call the policy on a batch; return its outputs, normalised, and the seconds it took.

    Raises:
        ValueError: The policy returned a different number of outputs than requests.
    """
    start = time.perf_counter()
    if inspect.iscoroutinefunction(policy) or inspect.iscoroutinefunction(
        getattr(policy, "__call__", None)  # noqa: B004 - async callable objects
    ):
        result = policy(requests)
    else:
        # A blocking policy (model inference) must not stall the envs' event loop.
        result = await asyncio.to_thread(policy, requests)
    # An async policy returns a coroutine; a sync one may too (e.g. a lambda around one).
    raw = await result if inspect.isawaitable(result) else result
    outputs = [_normalise(item) for item in raw]
    if len(outputs) != len(requests):
        raise ValueError(f"the policy returned {len(outputs)} outputs for {len(requests)} requests")
    return outputs, time.perf_counter() - start


def _normalise(item: Any) -> PolicyOutput:
    if isinstance(item, PolicyOutput):
        if item.text is None and isinstance(item.action, str):
            return PolicyOutput(item.action, item.action, item.extra)
        return item
    return PolicyOutput(item, item if isinstance(item, str) else None)
