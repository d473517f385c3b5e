"""The agents ``osworld-gym run`` drives, each a batched pool policy plus what the env must match.

* ``oracle`` -- the bundled suites' scripted solutions (``osworld_gym.policies.oracles``).
* ``random`` -- a random valid UI-TARS action each step (seeded per task, rollout and step).
* ``noop`` -- ``wait()`` every step: the floor a real agent must beat.
* ``openai`` -- a model behind an OpenAI-compatible endpoint with the UI-TARS-1.5 prompt and
  dialect (``osworld_gym.policies``; imported only for this agent, and free of torch).
* ``module:callable`` -- any pool policy: a callable taking a list of
  ``PolicyRequest`` and returning one action (or
  ``PolicyOutput``) per request. A class is instantiated, and a callable
  given ``--agent-arg`` values is called with them, to make the policy. The policy may declare
  ``action_format`` (default ``"uitars"``), ``env_kwargs()``, ``screen_size`` and ``close()``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from osworld_gym.pool.policy import Policy, PolicyOutput, PolicyRequest, call_policy
from osworld_gym.tasks import Task

BUILTIN_AGENTS = ("oracle", "random", "noop", "openai")
ENDPOINT_TIMEOUT_S = 5.0
"""How long the check of an OpenAI-compatible server waits for its answer."""
NOOP_RESPONSE = "Thought: Wait and watch.\nAction: wait()"


@dataclass
class AgentOptions:
    """What the command line says about the agent.

    Attributes:
        agent: ``oracle``, ``random``, ``noop``, ``openai`` or ``module:callable``.
        model: The served model (``openai``) or a name for the results folder.
        base_url: The OpenAI-compatible API root.
        api_key_env: Environment variable holding the API key.
        temperature: Sampling temperature (``openai``).
        top_p: Nucleus mass (``openai``).
        max_new_tokens: Tokens per response at most (``openai``).
        history_images: Screenshots in each prompt, the current one included (``openai``).
        seed: Seed of the random agent and of seeded sampling.
        screen_size: The env's screen.
        num_envs: Envs of the pool (requests in flight at once).
        agent_args: ``key=value`` arguments of a ``module:callable`` factory.
    """

    agent: str = "oracle"
    model: str | None = None
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.6
    top_p: float = 0.9
    max_new_tokens: int = 1500
    history_images: int | None = 5
    seed: int | None = 0
    screen_size: tuple[int, int] = (1920, 1080)
    num_envs: int = 1
    agent_args: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Agent:
    """A policy and everything a run records or configures about it.

    Attributes:
        kind: The ``--agent`` value.
        model: Name of the results folder (OSWorld's ``<model>``).
        policy: The batched pool policy.
        action_format: The env's ``action_format`` this policy speaks.
        env_kwargs: More env keyword arguments (e.g. the UI-TARS parser's coordinate options).
        settings: Score-relevant settings (temperature, history length, ...).
        screen_size: A screen the agent needs (the oracles' scripts), None for any.
        close: Releases the agent's resources (HTTP sessions).
    """

    kind: str
    model: str
    policy: Policy
    action_format: str = "uitars"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    screen_size: tuple[int, int] | None = None
    close: Callable[[], None] | None = None


_NO_SAMPLING = {"temperature": None, "top_p": None, "max_new_tokens": None, "history_images": None}


def make_agent(options: AgentOptions, tasks: Sequence[Task]) -> Agent:
    """Build the agent the options name.

    Raises:
        ValueError: An unknown agent, a bad ``module:callable``, or tasks the oracle cannot do.
    """
    kind = options.agent
    if kind == "oracle":
        from osworld_gym.policies.oracles.agent import OracleAgent

        oracle = OracleAgent(tasks)
        return Agent(
            kind,
            options.model or "oracle",
            oracle,
            action_format=OracleAgent.action_format,
            settings=dict(_NO_SAMPLING),
            screen_size=oracle.screen_size,
        )
    if kind == "random":
        policy = RandomAgent(options.screen_size, seed=options.seed)
        settings = dict(_NO_SAMPLING, seed=options.seed)
        return Agent(kind, options.model or "random", policy, settings=settings)
    if kind == "noop":
        return Agent(
            kind,
            options.model or "noop",
            lambda requests: [NOOP_RESPONSE] * len(requests),
            settings=dict(_NO_SAMPLING),
        )
    if kind == "openai":
        return _openai_agent(options)
    if ":" in kind:
        return _module_agent(options)
    raise ValueError(
        f"unknown agent {kind!r}: use one of {', '.join(BUILTIN_AGENTS)} or module:callable"
    )


class RandomAgent:
    """Random valid UI-TARS actions; each (task, rollout, step) has its own seeded draw.

    Args:
        screen_size: The env's screen.
        seed: Base seed (None: unseeded).
    """

    action_format = "uitars"

    def __init__(self, screen_size: tuple[int, int], seed: int | None = 0) -> None:
        from osworld_gym.actions.spaces import TextActionSpace

        self.seed = seed
        self._space = TextActionSpace(dialect="uitars", screen_size=screen_size, seed=seed)
        self._lock = threading.Lock()  # the space's generator is shared state

    def __call__(self, requests: Sequence[PolicyRequest]) -> list[str]:
        """One random action per request."""
        out = []
        with self._lock:
            for request in requests:
                if self.seed is not None:
                    key = f"{self.seed}\0{request.task_id}\0{request.rollout}\0{request.step}"
                    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
                    self._space.seed(int.from_bytes(digest, "big") & 0x7FFF_FFFF)
                out.append(self._space.sample())
        return out


def _openai_agent(options: AgentOptions) -> Agent:
    if not options.model:
        raise ValueError("--agent openai needs --model (the served model's name)")
    from osworld_gym.policies.openai_http import OpenAIEngine
    from osworld_gym.policies.uitars.agent import EVALUATION_SAMPLING, UITARSAgent

    sampling = dataclasses.replace(
        EVALUATION_SAMPLING,
        temperature=options.temperature,
        top_p=options.top_p,
        max_new_tokens=options.max_new_tokens,
    )
    engine = OpenAIEngine(
        options.base_url,
        options.model,
        api_key_env=options.api_key_env,
        max_concurrency=max(1, options.num_envs),
    )
    policy = UITARSAgent.for_evaluation(
        engine, sampling=sampling, history_images=options.history_images, seed=options.seed
    )
    return Agent(
        "openai",
        options.model,
        policy,
        action_format="uitars",
        env_kwargs={"dialect_options": policy.dialect_options},
        settings={
            "temperature": options.temperature,
            "top_p": options.top_p,
            "max_new_tokens": options.max_new_tokens,
            "history_images": options.history_images,
            "seed": options.seed,
            "prompt": "UI-TARS-1.5 computer use (osworld_gym.policies.uitars)",
            "base_url": options.base_url,
        },
        close=engine.close,
    )


class EndpointError(Exception):
    """The OpenAI-compatible server does not answer ``GET /models`` as a server should."""


def check_openai_endpoint(
    base_url: str, api_key_env: str = "OPENAI_API_KEY", timeout: float = ENDPOINT_TIMEOUT_S
) -> list[str]:
    """Ask an OpenAI-compatible server for ``GET {base_url}/models`` before a run relies on it.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key_env: Environment variable holding the API key (sent as a bearer token if set).
        timeout: Seconds to wait for the connection and the answer.

    Returns:
        The ids of the models the server lists (empty when its answer lists none).

    Raises:
        EndpointError: The server cannot be reached, answers another status than 200, or
            answers something that is not a model list; the message names the URL.
    """
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    key = os.environ.get(api_key_env)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as e:
        raise EndpointError(
            f"the model server answered GET {url} with HTTP {e.code} {e.reason}"
            + (f": is ${api_key_env} the right key?" if e.code in (401, 403) else "")
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        why = getattr(e, "reason", None) or e
        raise EndpointError(
            f"cannot reach the model server at GET {url} ({why}); start it or pass --base-url"
        ) from None
    try:
        listed = json.loads(body).get("data") or []
        return [str(item["id"]) for item in listed if isinstance(item, dict) and "id" in item]
    except (ValueError, AttributeError, TypeError) as e:
        raise EndpointError(f"GET {url} did not answer an OpenAI model list: {e}") from None


def resolve_callable(spec: str) -> Any:
    """The object ``module:attr`` names (``attr`` may be dotted).

    Raises:
        ValueError: The module or attribute does not exist.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"expected module:callable, got {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import {module_name!r} for --agent {spec}: {e}") from e
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}") from None
    return target


def _module_agent(options: AgentOptions) -> Agent:
    target = resolve_callable(options.agent)
    if inspect.isclass(target) or options.agent_args:
        policy = target(**dict(options.agent_args))
    else:
        policy = target
    if not callable(policy):
        raise ValueError(f"--agent {options.agent} is not callable: {policy!r}")
    env_kwargs_fn = getattr(policy, "env_kwargs", None)
    env_kwargs = dict(env_kwargs_fn()) if callable(env_kwargs_fn) else {}
    action_format = str(
        env_kwargs.pop("action_format", None) or getattr(policy, "action_format", "uitars")
    )
    screen = getattr(policy, "screen_size", None)
    close = getattr(policy, "close", None)
    settings = dict(_NO_SAMPLING)
    settings.update({k: v for k, v in (getattr(policy, "settings", None) or {}).items()})
    settings["agent_args"] = dict(options.agent_args)
    return Agent(
        options.agent,
        options.model or options.agent.replace(":", "."),
        policy,
        action_format=action_format,
        env_kwargs=env_kwargs,
        settings=settings,
        screen_size=tuple(screen) if screen else None,
        close=close if callable(close) else None,
    )


class TimedPolicy:
    """Wraps a policy to stamp each output with the wall time its action was chosen.

    The stamp (``extra["action_time"]``, seconds since the epoch) names the step's screenshot
    file, as OSWorld's ``action_timestamp`` does.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    async def __call__(self, requests: list[PolicyRequest]) -> list[PolicyOutput]:
        """The wrapped policy's outputs, stamped."""
        outputs, _ = await call_policy(self.policy, requests)
        now = time.time()
        for output in outputs:
            output.extra["action_time"] = now
        return outputs
