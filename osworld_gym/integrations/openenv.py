"""OpenEnv adapter: desktops served as an OpenEnv environment, one desktop per session.

OpenEnv (``pip install 'osworld-gym[openenv]'``) serves an ``Environment`` over HTTP and
WebSocket; TRL, SkyRL and verifiers consume such servers through OpenEnv's ``EnvClient``. Here:

* ``OSWorldEnvironment`` is the server side. OpenEnv builds one instance per WebSocket
  session; each borrows a desktop from one shared ``DesktopLeases`` at its first
  ``reset`` and hands it back when the session ends (OpenEnv calls ``close()``), so desktops
  launch once per server and are reset per episode.
* ``create_osworld_app()`` builds the FastAPI app (OpenEnv's ``create_app``) with as many
  concurrent sessions as desktops; ``osworld-gym serve-env`` runs it with uvicorn.
* ``OSWorldEnvClient`` is the client (OpenEnv's async ``EnvClient``; ``.sync()`` for
  blocking code); ``decode_screenshot()``, ``observation_image()`` and
  ``observation_content()`` turn its observations into bytes, a PIL image or chat parts.

Wire format: an action is the model's text (parsed with the server's ``action_format``, UI-TARS
by default) or one tool call of ``TOOL_NAMES`` (``tool`` + ``arguments``, screen
pixels). An observation carries the screenshot as base64 PNG or JPEG bytes, the instruction,
``last_action_error``, ``reward``, ``done`` and ``metadata`` (``score``, ``parse_error``,
``infra_error``, ``fail_replaced``, ``step``, ...).

Errors, as osworld-gym's env separates them:

* the model's fault (text that does not parse, a tool call with bad arguments) is a no-op step:
  ``last_action_error`` and ``metadata["parse_error"]`` say why and the episode goes on;
* the client's fault (an unknown task id or reset option, a step with no episode running, an
  action that is neither text nor a tool call) is an error answer to that message (OpenEnv's
  client raises ``RuntimeError``); the session stays usable. A session beyond the server's
  capacity is refused by OpenEnv (``CAPACITY_REACHED``);
* an infrastructure fault (a desktop that died) ends the episode: ``done`` with
  ``metadata["infra_error"]`` and ``reward`` None (no reward signal; drop or retry the episode).
  The next ``reset`` relaunches the desktop. An episode that ran to its end but could not be
  scored (``metadata["evaluation_error"]``) also has ``reward`` None, never a made-up 0.

OpenEnv's stateless HTTP ``/reset`` and ``/step`` build a fresh environment per request (so
``/step`` always answers that no episode is running); use the WebSocket client for episodes.
"""

# Over the 400-line module budget on purpose: the server, the client and the models they share
# form one wire contract, and keeping them together keeps it in one place (half is docstrings).

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import functools
import io
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from osworld_gym.errors import ActionError, DependencyNotInstalled
from osworld_gym.integrations.lease import DesktopLeases, Lease, LeaseResetError
from osworld_gym.integrations.render import encode_image, render_observation, screenshot_image
from osworld_gym.integrations.tools import action_from_tool_call
from osworld_gym.pool.config import EnvSpec, PoolConfig
from osworld_gym.pool.results import EnvResult
from osworld_gym.version import __version__

try:
    from fastapi import FastAPI
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
    from pydantic import Field, model_validator
    from pydantic_core import PydanticCustomError
except ImportError as _missing:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled(
        "osworld_gym.integrations.openenv needs OpenEnv (the openenv package), which is not "
        "installed: pip install 'osworld-gym[openenv]'"
    ) from _missing

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_ACQUIRE_TIMEOUT_S",
    "DEFAULT_MESSAGE_TIMEOUT_S",
    "OSWorldAction",
    "OSWorldEnvClient",
    "OSWorldEnvironment",
    "OSWorldObservation",
    "OSWorldState",
    "create_osworld_app",
    "decode_screenshot",
    "observation_content",
    "observation_image",
]

DEFAULT_ACQUIRE_TIMEOUT_S = 600.0
"""Seconds a session's first reset waits for a desktop (one handed back may still be settling)."""
DEFAULT_MESSAGE_TIMEOUT_S = 1800.0
"""The client's wait for an answer: a first reset launches a desktop, a last step scores it."""
RESET_OPTIONS = ("task_id", "seed", "episode_id", "options")
ScreenshotFormat = Literal["png", "jpeg"]


class OSWorldAction(Action):
    """One action: the model's text, or one tool call (exactly one of the two).

    Example:
        >>> OSWorldAction(text="Action: click(start_box='(90,81)')").text
        "Action: click(start_box='(90,81)')"
        >>> OSWorldAction.tool_call("click", {"x": 90, "y": 81}).tool
        'click'
    """

    text: str | None = Field(
        default=None, description="The model's output, parsed with the server's action_format"
    )
    tool: str | None = Field(default=None, description="A GUI tool's name (click, type_text, ...)")
    arguments: dict[str, Any] | str | None = Field(
        default=None, description="The tool's arguments: an object or its JSON text"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> OSWorldAction:
        # PydanticCustomError, not ValueError: OpenEnv sends a validation error's details as
        # JSON, and a ValueError in them is not serializable (the session would be dropped).
        if (self.text is None) == (self.tool is None):
            raise PydanticCustomError(
                "osworld_action", "an action has either 'text' (the model's output) or 'tool'"
            )
        if self.text is not None and self.arguments is not None:
            raise PydanticCustomError(
                "osworld_action", "'arguments' belong to a tool call, not to a text action"
            )
        return self

    @classmethod
    def tool_call(
        cls, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> OSWorldAction:
        """A tool-call action (``arguments`` as a mapping or the model's JSON text)."""
        args = dict(arguments) if isinstance(arguments, Mapping) else arguments
        return cls(tool=name, arguments=args)


class OSWorldObservation(Observation):
    """What a session sees after a reset or a step (plus OpenEnv's reward, done, metadata)."""

    screenshot: str = Field(default="", description="base64 of the PNG or JPEG screenshot")
    screenshot_format: ScreenshotFormat = Field(default="png", description="png or jpeg")
    instruction: str = Field(default="", description="The task's instruction")
    last_action_error: str = Field(default="", description="Why the last action did nothing")
    task_id: str | None = Field(default=None, description="The episode's task")
    step: int = Field(default=0, description="Steps taken in the episode")


class OSWorldState(State):
    """A session's state: OpenEnv's episode id and step count, plus the task and desktop."""

    task_id: str | None = Field(default=None, description="The episode's task")
    done: bool = Field(default=True, description="No episode is running")
    env_id: int | None = Field(default=None, description="The desktop this session holds")


class OSWorldEnvironment(Environment[OSWorldAction, OSWorldObservation, OSWorldState]):
    """One OpenEnv session over one desktop borrowed from a shared desk.

    Construction is cheap and takes no desktop: OpenEnv also builds throwaway instances (for
    its stateless HTTP routes and checks). The desktop is borrowed at the first reset and kept
    for the session's later episodes until ``close()``.

    Args:
        desk: The desktops shared by all sessions.
        acquire_timeout: Seconds the first reset waits for a free desktop (None: no limit).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, desk: DesktopLeases, *, acquire_timeout: float | None = DEFAULT_ACQUIRE_TIMEOUT_S
    ) -> None:
        super().__init__()
        self._desk = desk
        self._acquire_timeout = acquire_timeout
        self._lease: Lease | None = None
        self._state = OSWorldState()
        fmt = desk.pool.config.screenshot_format
        self._format: ScreenshotFormat = "jpeg" if fmt == "jpeg" else "png"

    # --- OpenEnv's interface ---------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **unknown: Any,
    ) -> OSWorldObservation:
        """Start an episode on ``task_id`` (None: the env samples one with ``seed``).

        Raises:
            ValueError: An unknown task id or reset option.
            RuntimeError: No desktop could be had or prepared.
        """
        _check_reset(unknown, episode_id, options)
        if self._lease is None:
            self._lease = self._desk.acquire(self._acquire_timeout)
        try:
            result = self._lease.reset(task_id, seed, options)
        except LeaseResetError as e:
            raise self._reset_failed(e, task_id) from e
        return self._begin(result, episode_id)

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **unknown: Any,
    ) -> OSWorldObservation:
        """Async ``reset()``: waits on the server's event loop, not on a thread."""
        _check_reset(unknown, episode_id, options)
        if self._lease is None:
            self._lease = await self._desk.aacquire(self._acquire_timeout)
        try:
            result = await self._lease.areset(task_id, seed, options)
        except LeaseResetError as e:
            raise self._reset_failed(e, task_id) from e
        return self._begin(result, episode_id)

    def step(
        self, action: OSWorldAction, timeout_s: float | None = None, **kwargs: Any
    ) -> OSWorldObservation:
        """Apply one action (``timeout_s`` is unused: the pool's ``step_timeout`` rules).

        Raises:
            RuntimeError: No episode is running in this session (reset first).
        """
        payload, tool_error = _env_action(action)
        result = self._running().step(payload)
        return self._after_step(result, tool_error)

    async def step_async(
        self, action: OSWorldAction, timeout_s: float | None = None, **kwargs: Any
    ) -> OSWorldObservation:
        """Async ``step()``."""
        payload, tool_error = _env_action(action)
        result = await self._running().astep(payload)
        return self._after_step(result, tool_error)

    @property
    def state(self) -> OSWorldState:
        """The session's episode id, step count, task and desktop."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """OpenEnv's description of this environment (``/metadata``)."""
        return EnvironmentMetadata(
            name="osworld",
            description="OSWorld desktop tasks from osworld-gym: screenshots in, GUI actions "
            "out; one live desktop per session",
            version=__version__,
        )

    def close(self) -> None:
        """Hand the desktop back to the desk (OpenEnv calls this when the session ends)."""
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()
            logger.debug("session released desktop %d", lease.env_id)

    # --- helpers -----------------------------------------------------------------------------

    def _running(self) -> Lease:
        if self._lease is None or self._lease.done:
            raise RuntimeError(
                "no episode is running in this session (none started yet, or the last one "
                "ended): send reset first"
            )
        return self._lease

    def _reset_failed(self, error: LeaseResetError, task_id: str | None) -> Exception:
        """The error to answer a failed reset with; give back a desktop that was retired."""
        if error.retired and self._lease is not None:
            self.close()  # the next reset borrows another desktop
        self._state = OSWorldState(env_id=None if self._lease is None else self._lease.env_id)
        cause = error.result.error
        if isinstance(cause, KeyError):  # an unknown task id (UnknownTaskError)
            why = cause.args[0] if cause.args and type(cause) is KeyError else cause
            return ValueError(f"cannot reset to task {task_id!r}: {why}")
        return RuntimeError(f"reset failed: {type(cause).__name__}: {cause}")

    def _begin(self, result: EnvResult, episode_id: str | None) -> OSWorldObservation:
        assert self._lease is not None
        observation = self._observation(result, reset=True)
        self._state = OSWorldState(
            episode_id=episode_id or str(uuid.uuid4()),
            step_count=0,
            task_id=observation.task_id,
            done=False,
            env_id=self._lease.env_id,
        )
        return observation

    def _after_step(self, result: EnvResult, tool_error: str | None) -> OSWorldObservation:
        observation = self._observation(result, reset=False)
        if tool_error is not None:
            # The env saw an empty action (its "no action found"); the model should read why
            # its tool call did nothing.
            observation.last_action_error = tool_error
            observation.metadata = {**observation.metadata, "parse_error": tool_error}
        self._state.step_count = observation.step
        self._state.done = observation.done
        return observation

    def _observation(self, result: EnvResult, *, reset: bool) -> OSWorldObservation:
        obs = result.observation or {}
        info = result.info
        done = bool(result.terminated or result.truncated)
        metadata = _metadata(result)
        no_signal = metadata["infra_error"] is not None or (done and metadata["score"] is None)
        return OSWorldObservation(
            screenshot=base64.b64encode(self._screenshot_bytes(result)).decode("ascii"),
            screenshot_format=self._format,
            instruction=str(obs.get("instruction") or ""),
            last_action_error=str(obs.get("last_action_error") or ""),
            task_id=info.get("task_id"),
            step=int(info.get("step") or 0),
            done=done,
            reward=None if reset or no_signal else float(result.reward),
            metadata=metadata,
        )

    def _screenshot_bytes(self, result: EnvResult) -> bytes:
        if result.screenshot is not None:
            return result.screenshot
        frame = (result.observation or {}).get("screenshot")
        if frame is None:
            return b""
        # The desk's pool was built without screenshot_format: encode here instead.
        return encode_image(screenshot_image(frame), self._format)


def _check_reset(unknown: Mapping[str, Any], episode_id: Any, options: Any) -> None:
    """Refuse bad reset arguments before a desktop is touched."""
    if unknown:
        raise ValueError(
            f"unknown reset option(s) {sorted(unknown)}; reset takes {list(RESET_OPTIONS)}"
        )
    if episode_id is not None and not isinstance(episode_id, str):
        raise ValueError(f"episode_id must be a string, got {type(episode_id).__name__}")
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"options must be an object, got {type(options).__name__}")


def _env_action(action: OSWorldAction) -> tuple[Any, str | None]:
    """What the env steps with, and why a tool call could not become an action (if so)."""
    if action.text is not None:
        return action.text, None
    assert action.tool is not None
    try:
        return action_from_tool_call(action.tool, action.arguments), None
    except ActionError as e:
        # An empty action list is the env's no-op with a parse error: the step counts toward
        # the limit, exactly as unparseable text does.
        return [], str(e)


def _metadata(result: EnvResult) -> dict[str, Any]:
    """The JSON-safe part of the env's info that consumers need."""
    info = result.info
    score = info.get("score")
    metadata: dict[str, Any] = {
        "task_id": info.get("task_id"),
        "step": int(info.get("step") or 0),
        "score": None if score is None else float(score),
        "parse_error": _text(info.get("parse_error")),
        "infra_error": _text(info.get("infra_error")),
        "fail_replaced": bool(info.get("fail_replaced", False)),
        "terminated": bool(result.terminated),
        "truncated": bool(result.truncated),
    }
    if info.get("evaluation_error"):
        metadata["evaluation_error"] = str(info["evaluation_error"])
    return metadata


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def create_osworld_app(
    env: DesktopLeases | EnvSpec | Mapping[str, Any],
    num_envs: int | None = None,
    *,
    pool_config: PoolConfig | None = None,
    acquire_timeout: float | None = DEFAULT_ACQUIRE_TIMEOUT_S,
    env_name: str = "osworld",
) -> FastAPI:
    """The OpenEnv FastAPI app: as many concurrent WebSocket sessions as desktops.

    Args:
        env: A desk to serve (the caller closes it), or the env of every desktop (an
            ``EnvSpec`` or ``OSWorldEnv`` keyword arguments); then the
            app builds the desk and closes it at shutdown.
        num_envs: Desktops to build (required unless ``env`` is a desk).
        pool_config: The pool's settings when the app builds the desk; screenshots are PNG
            unless it sets ``screenshot_format="jpeg"``.
        acquire_timeout: Seconds a session's first reset waits for a desktop.
        env_name: The name OpenEnv's task routes use.

    Returns:
        The app; ``app.state.osworld_desk`` is its desk.

    Raises:
        ValueError: ``num_envs`` missing, below 1, or not the given desk's size.
    """
    if isinstance(env, DesktopLeases):
        if num_envs is not None and num_envs != env.size:
            raise ValueError(f"num_envs={num_envs} but the desk holds {env.size} desktops")
        desk, owned = env, False
    else:
        if num_envs is None or num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        config = pool_config or PoolConfig(screenshot_format="png")
        if config.screenshot_format is None:
            config = dataclasses.replace(config, screenshot_format="png")
        desk, owned = DesktopLeases(env, num_envs, config=config), True
    factory = functools.partial(OSWorldEnvironment, desk, acquire_timeout=acquire_timeout)
    app = create_app(
        factory,
        OSWorldAction,
        OSWorldObservation,
        env_name=env_name,
        max_concurrent_envs=desk.size,
        state_cls=OSWorldState,
    )
    app.state.osworld_desk = desk
    if owned:

        async def close_desk() -> None:
            await asyncio.to_thread(desk.close)  # stopping desktops blocks: off the loop

        app.router.on_shutdown.append(close_desk)
    return app


class OSWorldEnvClient(EnvClient[OSWorldAction, OSWorldObservation, OSWorldState]):
    """OpenEnv's WebSocket client for an ``osworld-gym serve-env`` server; one per session.

    Async by default (``await env.reset(task_id=...)``); ``.sync()`` gives the blocking
    wrapper. ``step`` takes an ``OSWorldAction`` or a plain string (the model's text).

    Args:
        base_url: The server, e.g. ``http://127.0.0.1:8000``.
        message_timeout_s: Seconds to wait for each answer (a first reset launches a desktop).
        **kwargs: OpenEnv ``EnvClient`` options (``connect_timeout_s``, ``headers``, ...).

    Example:
        >>> async def episode(url: str) -> float | None:  # doctest: +SKIP
        ...     async with OSWorldEnvClient(base_url=url) as env:
        ...         result = await env.reset(task_id="click-colour-01")
        ...         result = await env.step("Action: click(start_box='(90,81)')")
        ...         result = await env.step("Action: finished(content='')")
        ...         return result.reward
    """

    def __init__(
        self,
        base_url: str | None = None,
        message_timeout_s: float = DEFAULT_MESSAGE_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_url=base_url, message_timeout_s=message_timeout_s, **kwargs)

    def _step_payload(self, action: OSWorldAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            action = OSWorldAction(text=action)
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[OSWorldObservation]:
        fields = OSWorldObservation.model_fields
        data = {k: v for k, v in (payload.get("observation") or {}).items() if k in fields}
        data.update(done=bool(payload.get("done", False)), reward=payload.get("reward"))
        if payload.get("metadata"):
            data["metadata"] = payload["metadata"]
        observation = OSWorldObservation.model_validate(data)
        return StepResult(
            observation=observation,
            reward=observation.reward,
            done=observation.done,
            metadata=observation.metadata,
        )

    def _parse_state(self, payload: dict[str, Any]) -> OSWorldState:
        return OSWorldState.model_validate(payload)


def decode_screenshot(observation: OSWorldObservation | Mapping[str, Any]) -> bytes:
    """The observation's screenshot as PNG or JPEG bytes.

    Raises:
        ValueError: The observation holds no screenshot, or it is not valid base64.
    """
    if isinstance(observation, OSWorldObservation):
        text = observation.screenshot
    else:
        text = str(observation.get("screenshot") or "")
    if not text:
        raise ValueError("the observation holds no screenshot")
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:
        raise ValueError(f"the observation's screenshot is not base64: {e}") from e


def observation_image(
    observation: OSWorldObservation | Mapping[str, Any], max_pixels: int | None = None
) -> PILImage:
    """The screenshot as an RGB PIL image, scaled down to ``max_pixels`` if given."""
    return screenshot_image(decode_screenshot(observation), max_pixels)


def observation_content(
    observation: OSWorldObservation,
    *,
    first_turn: bool,
    style: Literal["openai", "hf"] = "openai",
    max_pixels: int | None = None,
) -> list[dict[str, Any]]:
    """Chat content parts for a model (see ``render_observation()``).

    ``"openai"`` gives an ``image_url`` data URI, ``"hf"`` a PIL image (TRL's tool results);
    then the instruction on the first turn and the last action's error after.
    """
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(decode_screenshot(observation))) as opened:
        frame = np.asarray(opened.convert("RGB"))  # an array: the screen's size is stated
    fields = {
        "screenshot": frame,
        "instruction": observation.instruction,
        "last_action_error": observation.last_action_error,
    }
    return render_observation(
        fields,
        first_turn=first_turn,
        style=style,
        image_format=observation.screenshot_format,
        max_pixels=max_pixels,
    )
