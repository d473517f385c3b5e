"""``osworld_episode``: one OSWorld episode against any OpenAI-compatible endpoint.

Several trainers take "an async function that talks to an OpenAI-compatible ``base_url`` and
returns a reward" (rLLM's AgentFlow, AReaL's proxy agents, Agent Lightning, ART's client side):
their proxy in front of the model records token ids and log-probs, the function only has to
run the agent. This is that function for OSWorld: the UI-TARS-1.5 agent (ARPO's prompt and
image history) over ``OpenAIEngine``, on a desktop
borrowed from a ``DesktopLeases``.

Needs the agents package (``osworld_agents``, no torch) and ``requests``; nothing trainer-specific.

Example:
    >>> outcome = await osworld_episode(  # doctest: +SKIP
    ...     "click-colour-01", "http://127.0.0.1:8000/v1", "ui-tars-1.5-7b",
    ...     env={"tasks": "ui-basics", "screen_size": (336, 224)},
    ... )
    >>> outcome.reward, len(outcome.trajectory.steps)  # doctest: +SKIP
    (1.0, 2)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from osworld_gym.integrations.lease import DesktopLeases, Lease
from osworld_gym.policies.engine import RolloutEngine
from osworld_gym.policies.openai_http import OpenAIEngine, to_openai_messages
from osworld_gym.policies.uitars.agent import EVALUATION_SAMPLING, UITARSAgent, UITARSConfig
from osworld_gym.pool.config import PoolConfig
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.trajectory import StepRecord, Trajectory, encode_screenshot

logger = logging.getLogger(__name__)

__all__ = ["EpisodeOutcome", "osworld_episode"]

#: The env of the shared desk when ``env`` does not say otherwise (OSWorld's defaults).
DEFAULT_ENV: Mapping[str, Any] = {"provider": "local"}


@dataclass
class EpisodeOutcome:
    """What one ``osworld_episode()`` call produced.

    Attributes:
        reward: The env's score; None when every attempt was cut by an infrastructure fault or
            the episode could not be scored (``trajectory.evaluation_error`` says why). Trainers
            should drop such samples rather than learn a 0 from them.
        trajectory: The last attempt: every step's screenshot, model text, parse error and
            timings (``trajectory.infra_error`` when it was cut).
        attempts: Episodes run (1 unless infrastructure faults forced re-runs).
        agent: The agent that acted, to rebuild the conversation (``messages()``).
        final_info: The env's info of the last step (``score``, ``fail_replaced``,
            ``parse_error``, ``infra_error``, ``timings``, ...).
    """

    reward: float | None
    trajectory: Trajectory
    attempts: int
    agent: UITARSAgent
    final_info: dict[str, Any]

    def messages(self) -> list[dict[str, Any]]:
        """The episode as OpenAI chat messages: what the model saw and answered, in order."""
        return to_openai_messages(self.agent.episode_conversation(self.trajectory))


def _screenshot_bytes(result: EnvResult) -> bytes:
    if result.screenshot is not None:
        return result.screenshot
    return encode_screenshot(result.observation["screenshot"])


async def _run_once(
    lease: Lease,
    agent: UITARSAgent,
    task_id: str,
    *,
    seed: int | None,
    rollout: int,
    attempt: int,
) -> tuple[Trajectory, dict[str, Any]]:
    started = time.perf_counter()
    result = await lease.areset(task_id, seed=seed)
    trajectory = Trajectory(
        task_id=task_id,
        rollout=rollout,
        attempt=attempt,
        env_id=lease.env_id,
        instruction=str(result.observation.get("instruction", "")),
        reset_timings=dict(result.info.get("timings") or {}),
    )
    while not result.done:
        request = PolicyRequest(
            env_id=lease.env_id,
            task_id=task_id,
            rollout=rollout,
            step=len(trajectory.steps),
            observation=result.observation,
            info=result.info,
            trajectory=trajectory,
        )
        policy_started = time.perf_counter()
        # The engine blocks on HTTP: keep the caller's event loop free for other episodes.
        (output,) = await asyncio.to_thread(agent, [request])
        policy_seconds = time.perf_counter() - policy_started
        shot = _screenshot_bytes(result)
        result = await lease.astep(output.action)
        timings = dict(result.info.get("timings") or {})
        timings.update(policy=policy_seconds, env=result.elapsed)
        trajectory.steps.append(
            StepRecord(
                screenshot=shot,
                action=output.action,
                text=output.text,
                parse_error=result.info.get("parse_error"),
                action_error=result.observation.get("last_action_error") or None,
                reward=float(result.reward),
                timings=timings,
                extra=dict(output.extra),
            )
        )
    trajectory.final_screenshot = _screenshot_bytes(result)
    trajectory.terminated, trajectory.truncated = result.terminated, result.truncated
    trajectory.infra_error = result.infra_error
    trajectory.evaluation_error = result.info.get("evaluation_error")
    score = result.info.get("score")
    trajectory.score = None if score is None else float(score)
    trajectory.wall_seconds = time.perf_counter() - started
    return trajectory, dict(result.info)


async def osworld_episode(
    task_id: str,
    base_url: str | None = None,
    model: str | None = None,
    *,
    leases: DesktopLeases | None = None,
    env: Mapping[str, Any] | None = None,
    desk_size: int = 8,
    engine: RolloutEngine | None = None,
    agent_config: UITARSConfig | None = None,
    api_key: str | None = None,
    seed: int | None = None,
    rollout: int = 0,
    max_attempts: int = 2,
    acquire_timeout: float | None = None,
) -> EpisodeOutcome:
    """Run one episode of ``task_id`` with UI-TARS over an OpenAI-compatible endpoint.

    Args:
        task_id: The task (of the desk's task set).
        base_url: The endpoint's API root, e.g. ``"http://127.0.0.1:8000/v1"`` (a trainer's
            recording proxy, or vLLM's server).
        model: The served model name.
        leases: The desk to borrow a desktop from. None: this process's shared desk for
            ``env`` (made on first use with ``desk_size`` desktops). A desk of your own must
            parse coordinates as the agent resizes (``env`` kwargs from
            ``UITARSAgent.env_kwargs()``).
        env: ``OSWorldEnv`` keyword arguments of the shared desk (``tasks``, ``provider``,
            ``screen_size``, ``max_steps``, ``hard``, ...); the agent's action format and
            coordinate options are added.
        desk_size: Desktops of the shared desk, if this call creates it.
        engine: Generate with this engine instead of ``OpenAIEngine(base_url, model)``.
        agent_config: Prompting and sampling (default: ARPO's evaluation sampling).
        api_key: Bearer token of the endpoint (default: ``$OPENAI_API_KEY`` if set).
        seed: Seed of the env's reset (and of sampling when ``agent_config.seed`` is set).
        rollout: Index of this episode in its group (recorded, and part of seeded sampling).
        max_attempts: Episodes to try when infrastructure faults cut them; each re-run starts
            the task afresh (on a relaunched desktop).
        acquire_timeout: Seconds to wait for a free desktop (None: no limit).

    Returns:
        The reward (None when faults cut every attempt or the episode is unscorable), the
        trajectory and the number of attempts.

    Raises:
        ValueError: Neither ``engine`` nor both ``base_url`` and ``model`` were given.
        LeaseResetError: The task could not start (unknown task id, desktop would not launch).
        OpenAIEngineError: The endpoint failed (after the engine's own retries).
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    own_engine = engine is None
    if engine is None:
        if not base_url or not model:
            raise ValueError("give base_url and model (or an engine)")
        engine = OpenAIEngine(base_url, model, api_key=api_key, max_concurrency=1)
    agent = UITARSAgent(engine, agent_config or UITARSConfig(sampling=EVALUATION_SAMPLING))
    if leases is None:
        kwargs = {**DEFAULT_ENV, **dict(env or {}), **agent.env_kwargs()}
        leases = DesktopLeases.shared(kwargs, desk_size, config=PoolConfig(screenshot_format="png"))
    try:
        for attempt in range(max_attempts):
            lease = await leases.aacquire(acquire_timeout)
            try:
                trajectory, info = await _run_once(
                    lease, agent, task_id, seed=seed, rollout=rollout, attempt=attempt
                )
            finally:
                # Not broken even on an error: a step left in flight is drained by the desk
                # and the next reset starts from a clean desktop anyway.
                lease.release()
            if trajectory.infra_error is None:
                return EpisodeOutcome(trajectory.score, trajectory, attempt + 1, agent, info)
            logger.warning(
                "task %s, attempt %d of %d cut by an infrastructure fault: %s",
                task_id, attempt + 1, max_attempts, trajectory.infra_error,
            )  # fmt: skip
        return EpisodeOutcome(None, trajectory, max_attempts, agent, info)
    finally:
        if own_engine:
            assert isinstance(engine, OpenAIEngine)
            engine.close()
