"""TRL adapter: OSWorld desktops as a ``GRPOTrainer(environment_factory=...)`` environment.

TRL (``pip install 'osworld-gym[trl]'``, tested with trl 1.16) trains a policy that acts
through **tool calls**: every public method of the environment class is a tool whose JSON schema
TRL derives from the type hints and docstring. ``osworld_environment()`` builds that class for
one env configuration:

* ``reset(**row)`` borrows a desktop from the process's shared ``DesktopLeases`` desk,
  resets it on ``row["task_id"]`` and returns the first screenshot (a PIL image block) and, when
  the row's prompt does not already hold it, the task instruction;
* the tools ``click``, ``double_click``, ``right_click``, ``drag``, ``scroll``, ``type_text``,
  ``hotkey``, ``press``, ``wait``, ``done`` and ``fail`` each run one ``structured`` action and
  return the new screenshot, plus the action's error text when it failed;
* ``get_reward()`` is the env's score of the episode: None when the desktop failed (TRL then
  leaves the rollout out of its group's mean and gives it no advantage).

``make_trl_dataset()`` writes the matching dataset (``prompt`` and ``task_id`` columns), and
``enable_qwen_tool_calling()`` gives a Qwen2.5-VL processor (UI-TARS-1.5's) the tool-calling
chat template TRL needs, which the stock one lacks.

Example:
    >>> from trl import GRPOConfig, GRPOTrainer  # doctest: +SKIP
    >>> env_cls = osworld_environment("ui-basics", screen_size=(336, 224), desk_size=8)
    >>> trainer = GRPOTrainer(  # doctest: +SKIP
    ...     model=model, processing_class=enable_qwen_tool_calling(processor),
    ...     args=GRPOConfig(max_tool_calling_iterations=15, ...),
    ...     train_dataset=make_trl_dataset("ui-basics", screen_size=(336, 224)),
    ...     environment_factory=env_cls)

What TRL does with an environment (trl 1.16.0, ``trl/trainer/grpo_trainer.py``):

* **Env calls are serial.** Generation is batched, but TRL calls ``reset`` for every rollout of a
  generation batch one after another (L2385-L2389), then, after each generation round, runs
  every sample's tool calls one after another (``_tool_call_loop``, L1965-L1993). Desktops never
  work at the same time: a batch of B rollouts of S steps spends about
  ``B * (t_reset + S * t_step)`` in env calls, where ``EnvPool``'s
  wait-any would spend about ``t_reset + S * t_step``. Measured for issue 19 with TRL's call
  order against EnvPool on identical ``ui-basics`` episodes: 16.9 s vs 4.7 s with 4 envs,
  32.3 s vs 5.6 s with 8 (3.6-5.7x). Keep screens small, use ``local`` or docker ``session``
  resets, and move to the verl or SkyRL adapters when desktop time dominates.
* **Instances are pooled** per environment factory and reused across batches (L2352-L2360): the
  pool grows to the number of rollouts generated at once on the process. Each instance holds a
  lease only from its ``reset`` until its episode ends (or, at the latest, its next ``reset``),
  but all rollouts of a batch run at the same time, so ``desk_size`` must be at least
  ``GRPOConfig.generation_batch_size`` divided by the number of processes; ``reset`` raises a
  ``LeaseError`` naming this when the desk runs out.
* A tool that raises is answered with ``{"error": message}`` (L1988-L1991); after the episode
  has ended, every tool raises ``ValueError("Episode over.")``.
* ``get_reward`` is called once per finished rollout (L716-L727); a None becomes NaN (L1630),
  and a rollout whose every reward function gave NaN is left out of the group's mean and std
  and gets advantage 0 (L2756-L2810). With extra ``reward_funcs`` that score the rollout, the
  NaN counts as 0 in the weighted sum instead.
* ``max_tool_calling_iterations`` caps the model's turns, and ``max_completion_length`` counts
  the whole conversation after the prompt, every screenshot's image tokens included.

Episodes the model leaves unfinished: when it stops calling tools before ``done()`` or
``fail()`` (plain text, ``max_tool_calling_iterations`` or the completion length reached),
``get_reward`` by default (``unfinished="evaluate"``) steps ``done()`` on its behalf and returns
that score: the desktop's final state is checked as OSWorld's ``evaluate()`` checks an episode
whose last action was not FAIL (Hard mode's step limit), so an infeasible task scores 0 unless
the model called ``fail()``. ``unfinished="zero"`` scores such episodes 0 without evaluating.
The env's own step limit (``max_steps``, 15) still applies: in standard mode the last allowed
step is replaced by FAIL (``info["fail_replaced"]``) and scored.

The policy must emit tool calls, not UI-TARS's ``Action: click(start_box=...)`` text:
UI-TARS-1.5 was not trained on this tool format, so expect to warm it up (SFT) on it first.
"""

from __future__ import annotations

import logging
import threading
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from osworld_gym.errors import (
    ActionError,
    DependencyNotInstalled,
    EnvRetiredError,
    GuestError,
    ProviderError,
    TaskSetupError,
    WorkerLostError,
)

try:
    import trl  # noqa: F401  (the adapter is only meaningful with TRL installed)
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled(
        "osworld_gym.integrations.trl needs TRL: pip install 'osworld-gym[trl]'"
    ) from e

from osworld_gym.actions.types import Done
from osworld_gym.integrations.lease import DesktopLeases, Lease, LeaseError, LeaseResetError
from osworld_gym.integrations.render import observation_text, render_observation, screenshot_image
from osworld_gym.integrations.tools import TOOL_NAMES, action_from_tool_call
from osworld_gym.pool.config import PoolConfig, RayBackendConfig
from osworld_gym.pool.results import EnvResult

if TYPE_CHECKING:
    from datasets import Dataset

    from osworld_gym.tasks import TaskSet

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "EPISODE_OVER",
    "QWEN_TOOL_CHAT_TEMPLATE",
    "OSWorldTRLEnv",
    "enable_qwen_tool_calling",
    "make_trl_dataset",
    "osworld_environment",
]

EPISODE_OVER = "Episode over."
"""What a tool raises (and TRL shows the model as ``{"error": ...}``) once the episode ended."""

_NO_DESKTOP = "The desktop could not be started; this episode will not be scored."

Unfinished = Literal["evaluate", "zero"]
ContentBlocks = list[dict[str, Any]]

# Reset faults that are the infrastructure's, not the dataset's: the desk retries them on
# another desktop, then drops the rollout (reward None) instead of stopping the training run.
# A bad task id (UnknownTaskError) still raises: the dataset is wrong.
_INFRA_RESET_ERRORS = (ProviderError, GuestError, EnvRetiredError, WorkerLostError, TaskSetupError)


class _Settings:
    """What one ``osworld_environment()`` class was built with (shared by its instances)."""

    def __init__(
        self,
        *,
        env_kwargs: dict[str, Any],
        desk_size: int,
        pool_config: PoolConfig | None,
        backend: str | RayBackendConfig,
        max_pixels: int | None,
        unfinished: Unfinished,
        acquire_timeout: float,
        reset_attempts: int,
    ) -> None:
        self.env_kwargs = env_kwargs
        self.desk_size = desk_size
        self.pool_config = pool_config
        self.backend = backend
        self.max_pixels = max_pixels
        self.unfinished = unfinished
        self.acquire_timeout = acquire_timeout
        self.reset_attempts = reset_attempts

    @property
    def screen_size(self) -> tuple[int, int]:
        width, height = self.env_kwargs["screen_size"]
        return int(width), int(height)

    def desk(self) -> DesktopLeases:
        return DesktopLeases.shared(
            self.env_kwargs, self.desk_size, config=self.pool_config, backend=self.backend
        )


class OSWorldTRLEnv:
    """One rollout's view of an OSWorld desktop, for TRL's ``environment_factory``.

    Do not instantiate this class: ``osworld_environment()`` returns a subclass configured for
    one env (tasks, screen, provider) whose tool docstrings state the screen's coordinate range.
    TRL creates its instances (with no arguments) and reuses them across batches.

    Every public method except ``reset`` and ``get_reward`` is a tool that TRL offers the model,
    so the class has no other public methods; state is exposed through read-only properties.
    """

    _settings: ClassVar[_Settings | None] = None

    def __init__(self) -> None:
        # Nothing is launched here: TRL builds one instance at trainer start-up just to read
        # the tools, and desktops launch at the first reset.
        self._lease: Lease | None = None
        self._last: EnvResult | None = None
        self._infra_error: str | None = None
        self._reward: float | None = None
        self._scored = False
        self._task_id: str | None = None
        self._steps = 0

    # --- state (properties: TRL only turns functions into tools) ------------------------------

    @property
    def task_id(self) -> str | None:
        """The task of the current (or last) episode."""
        return self._task_id

    @property
    def steps(self) -> int:
        """Env steps taken in the current (or last) episode."""
        return self._steps

    @property
    def last_info(self) -> dict[str, Any]:
        """The env's ``info`` of the latest reset or step (``score``, ``fail_replaced``, ...)."""
        return dict(self._last.info) if self._last is not None else {}

    @property
    def episode_over(self) -> bool:
        """No episode is running: none started, it ended, or its desktop failed."""
        return self._lease is None or self._last is None or self._last.done

    @property
    def desk(self) -> DesktopLeases:
        """The process's shared desk this class's instances borrow desktops from."""
        return self._require_settings().desk()

    @property
    def lease(self) -> Lease | None:
        """The desktop lease held now (None outside an episode)."""
        return self._lease

    # --- TRL's interface ----------------------------------------------------------------------

    def reset(self, **row: Any) -> ContentBlocks:
        """Start an episode on ``row["task_id"]`` on a borrowed desktop.

        Args:
            **row: The dataset row: ``task_id`` (required), optionally ``seed``; ``prompt``
                decides whether the instruction is repeated here. Other columns are ignored.

        Returns:
            The first screenshot as an image block, then a text block with the instruction
            (when the row's prompt lacks it) and the screen size (when the image is scaled).
            When no desktop could be started, a text block saying so; the rollout is then
            dropped (``get_reward()`` is None).

        Raises:
            ValueError: The row has no ``task_id``.
            LeaseError: No desktop became free (``desk_size`` is below the rollouts per batch).
            LeaseResetError: The task cannot be reset for a reason of its own (unknown id).
        """
        settings = self._require_settings()
        self._finish_episode(abandoned=True)
        task_id = row.get("task_id")
        if task_id is None:
            raise ValueError(
                "each dataset row needs a 'task_id' column (see make_trl_dataset); got columns "
                f"{sorted(row)}"
            )
        self._task_id, self._steps = str(task_id), 0
        self._last, self._infra_error, self._reward, self._scored = None, None, None, False
        seed = row.get("seed")
        result = self._reset_with_retries(settings, self._task_id, seed)
        if result is None:
            return [{"type": "text", "text": _NO_DESKTOP}]
        return self._first_observation(settings, result, row.get("prompt"))

    def get_reward(self) -> float | None:
        """The episode's score, or None when it cannot be scored.

        None when the desktop failed (``info["infra_error"]``), when the task could not be
        scored (``info["score"]`` None), or when no episode ran. An episode the model left
        unfinished is scored as the class's ``unfinished`` setting says (see the module
        docstring). The lease goes back to the desk here at the latest.
        """
        if self._scored:
            return self._reward
        settings = self._require_settings()
        if self._lease is not None and self._last is not None and not self._last.done:
            if settings.unfinished == "evaluate":
                # Score the desktop as the model left it: OSWorld's evaluate() of an episode
                # whose last action was not FAIL.
                self._step(Done())
            else:
                self._set_reward(0.0)
        if not self._scored:
            self._set_reward(self._score_of(self._last))
        self._finish_episode(abandoned=False)
        return self._reward

    # --- tools (docstring templates: {x_max} and {y_max} become the screen's last pixel) ------

    def click(self, x: int, y: int) -> ContentBlocks:
        """Left-click at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from 0 (left edge) to {x_max}.
            y: Vertical position in screen pixels, from 0 (top edge) to {y_max}.

        Returns:
            The screenshot after the click, with the error if the click failed.
        """
        return self._act("click", {"x": x, "y": y})

    def double_click(self, x: int, y: int) -> ContentBlocks:
        """Double-click at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from 0 (left edge) to {x_max}.
            y: Vertical position in screen pixels, from 0 (top edge) to {y_max}.

        Returns:
            The screenshot after the double-click, with the error if it failed.
        """
        return self._act("double_click", {"x": x, "y": y})

    def right_click(self, x: int, y: int) -> ContentBlocks:
        """Right-click at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from 0 (left edge) to {x_max}.
            y: Vertical position in screen pixels, from 0 (top edge) to {y_max}.

        Returns:
            The screenshot after the right-click, with the error if it failed.
        """
        return self._act("right_click", {"x": x, "y": y})

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> ContentBlocks:
        """Press the left button at a start point, move to an end point and release it.

        Args:
            x1: Start position, horizontal, in screen pixels (0 to {x_max}).
            y1: Start position, vertical, in screen pixels (0 to {y_max}).
            x2: End position, horizontal, in screen pixels (0 to {x_max}).
            y2: End position, vertical, in screen pixels (0 to {y_max}).

        Returns:
            The screenshot after the drag, with the error if it failed.
        """
        return self._act("drag", {"x1": x1, "y1": y1, "x2": x2, "y2": y2})

    def scroll(
        self, x: int, y: int, direction: Literal["up", "down", "left", "right"], amount: int = 5
    ) -> ContentBlocks:
        """Turn the mouse wheel with the pointer at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from 0 (left edge) to {x_max}.
            y: Vertical position in screen pixels, from 0 (top edge) to {y_max}.
            direction: Which way to scroll.
            amount: Wheel clicks, 1 to 50.

        Returns:
            The screenshot after scrolling, with the error if it failed.
        """
        return self._act("scroll", {"x": x, "y": y, "direction": direction, "amount": amount})

    def type_text(self, text: str) -> ContentBlocks:
        """Type text with the keyboard where the focus is; a newline presses Enter.

        Args:
            text: The text to type.

        Returns:
            The screenshot after typing, with the error if it failed.
        """
        return self._act("type_text", {"text": text})

    def hotkey(self, keys: list[str]) -> ContentBlocks:
        """Press keys together, such as ["ctrl", "c"]; released in reverse order.

        Args:
            keys: Key names (pyautogui's), pressed in this order.

        Returns:
            The screenshot after the key combination, with the error if it failed.
        """
        return self._act("hotkey", {"keys": keys})

    def press(self, key: str) -> ContentBlocks:
        """Press and release one key, such as "enter", "tab" or "escape".

        Args:
            key: The key name (pyautogui's).

        Returns:
            The screenshot after the key press, with the error if it failed.
        """
        return self._act("press", {"key": key})

    def wait(self) -> ContentBlocks:
        """Wait a moment for the screen to change, then look at it again.

        Returns:
            The screenshot after waiting.
        """
        return self._act("wait", {})

    def done(self, answer: str | None = None) -> ContentBlocks:
        """Declare the task complete; this ends the episode.

        Args:
            answer: The answer, when the task asks a question.

        Returns:
            A note that the episode is over.
        """
        return self._act("done", {} if answer is None else {"answer": answer})

    def fail(self, reason: str | None = None) -> ContentBlocks:
        """Declare the task impossible to complete; this ends the episode.

        Args:
            reason: Why it cannot be done.

        Returns:
            A note that the episode is over.
        """
        return self._act("fail", {} if reason is None else {"reason": reason})

    # --- internals ----------------------------------------------------------------------------

    def _require_settings(self) -> _Settings:
        settings = type(self)._settings
        if settings is None:
            raise TypeError(
                "OSWorldTRLEnv is a base class: pass osworld_environment(...) to TRL instead"
            )
        return settings

    def _reset_with_retries(
        self, settings: _Settings, task_id: str, seed: int | None
    ) -> EnvResult | None:
        """Reset on a borrowed desktop; retry infrastructure faults on another, then give up."""
        desk = settings.desk()
        for attempt in range(1, settings.reset_attempts + 1):
            try:
                lease = desk.acquire(timeout=settings.acquire_timeout)
            except LeaseError as e:
                if desk.closed or desk.stats()["leases/retired"] >= desk.size:
                    raise
                raise LeaseError(
                    f"{e}. TRL resets every rollout of a generation batch before generating, so "
                    f"the desk needs one desktop per rollout generated at once on this process "
                    f"(GRPOConfig.generation_batch_size / processes): raise "
                    f"osworld_environment(desk_size=...) from {desk.size}"
                ) from e
            try:
                result = lease.reset(task_id, seed=seed)
            except LeaseResetError as e:
                lease.release()
                if not isinstance(e.result.error, _INFRA_RESET_ERRORS):
                    raise
                self._infra_error = str(e)
                logger.warning(
                    "reset of %s failed (attempt %d of %d): %s",
                    task_id, attempt, settings.reset_attempts, e,
                )  # fmt: skip
                continue
            self._lease, self._last, self._infra_error = lease, result, None
            return result
        logger.warning("dropping a rollout of %s: no desktop could be reset", task_id)
        return None

    def _first_observation(
        self, settings: _Settings, result: EnvResult, prompt: Any
    ) -> ContentBlocks:
        observation = dict(result.observation)
        instruction = str(observation.get("instruction") or "")
        if instruction and instruction in _prompt_text(prompt):
            observation["instruction"] = ""  # the dataset's prompt already says it
        screenshot = observation["screenshot"]
        image = screenshot_image(screenshot, settings.max_pixels)
        # The screen's size is the observed frame's (the env fits frames to its screen_size).
        height, width = screenshot.shape[:2]
        text = observation_text(
            observation, first_turn=True, screen_size=(width, height), image_size=image.size
        )
        blocks: ContentBlocks = [{"type": "image", "image": image}]
        if text:
            blocks.append({"type": "text", "text": text})
        return blocks

    def _act(self, tool: str, arguments: dict[str, Any]) -> ContentBlocks:
        if self.episode_over:
            raise ValueError(EPISODE_OVER)
        try:
            action = action_from_tool_call(tool, arguments)
        except ActionError as e:
            # Malformed arguments: TRL shows the model {"error": ...}; no env step is spent.
            raise ValueError(str(e)) from None
        result = self._step(action)
        if result.done:
            return [{"type": "text", "text": _ending(result)}]
        settings = self._require_settings()
        return render_observation(
            result.observation, first_turn=False, style="hf", max_pixels=settings.max_pixels
        )

    def _step(self, action: Any) -> EnvResult:
        assert self._lease is not None
        result = self._lease.step(action)
        self._last = result
        self._steps += 1
        if result.done:
            # Score now and hand the desktop back: the next rollout may need it before TRL
            # asks for this reward (it scores only after every sample's tool loop).
            self._set_reward(self._score_of(result))
            self._finish_episode(abandoned=False)
        return result

    def _score_of(self, result: EnvResult | None) -> float | None:
        if result is None or self._infra_error is not None:
            return None
        if result.info.get("infra_error"):
            self._infra_error = str(result.info["infra_error"])
            return None
        if not result.done:
            return None
        score = result.info.get("score")
        return None if score is None else float(score)

    def _set_reward(self, reward: float | None) -> None:
        self._reward, self._scored = reward, True

    def _finish_episode(self, *, abandoned: bool) -> None:
        """Give the lease back (at episode end, or at a reset that finds one still held)."""
        lease, self._lease = self._lease, None
        if lease is None:
            return
        if abandoned and self._last is not None and not self._last.done:
            # TRL reset this instance without asking for the last episode's reward (eval
            # loops, an exception): the desktop is still mid-task, which the next reset
            # undoes, so the lease goes back as is.
            logger.debug("env %d: episode of %s abandoned unscored", lease.env_id, self._task_id)
        lease.release()

    def __repr__(self) -> str:
        state = "idle" if self.episode_over else f"step {self._steps}"
        return f"{type(self).__name__}(task_id={self._task_id!r}, {state})"


def _ending(result: EnvResult) -> str:
    info = result.info
    if info.get("infra_error"):
        return f"{EPISODE_OVER} The desktop failed; this episode will not be scored."
    if info.get("fail_replaced"):
        return f"{EPISODE_OVER} The step limit was reached."
    return EPISODE_OVER


def _prompt_text(prompt: Any) -> str:
    """All text of a dataset prompt (a string or chat messages), for a containment test."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    texts: list[str] = []
    for message in prompt if isinstance(prompt, Sequence) else ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, Sequence):
            texts += [str(p.get("text", "")) for p in content if isinstance(p, Mapping)]
    return "\n".join(texts)


def _with_doc(function: types.FunctionType, doc: str) -> types.FunctionType:
    """A copy of a tool function with another docstring (the class's own screen range)."""
    copy = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__annotations__ = dict(function.__annotations__)
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    copy.__doc__ = doc
    return copy


# Classes built so far, so that equal configurations give the same class: TRL logs the reward
# under the class name, and a user building the factory twice should not get two columns.
_CLASSES: dict[str, type[OSWorldTRLEnv]] = {}
_CLASSES_LOCK = threading.Lock()


def osworld_environment(
    tasks: str | Path | Sequence[Mapping[str, Any]] | TaskSet = "ui-basics",
    *,
    screen_size: tuple[int, int] = (1920, 1080),
    provider: Any = "local",
    max_steps: int = 15,
    hard: bool = False,
    max_pixels: int | None = None,
    desk_size: int = 8,
    env_kwargs: Mapping[str, Any] | None = None,
    pool_config: PoolConfig | None = None,
    backend: str | RayBackendConfig = "thread",
    unfinished: Unfinished = "evaluate",
    acquire_timeout: float = 60.0,
    reset_attempts: int = 2,
) -> type[OSWorldTRLEnv]:
    """The environment class to pass as ``GRPOTrainer(environment_factory=...)``.

    Its instances share this process's desk of ``desk_size`` desktops
    (``DesktopLeases.shared()``), launched at their first reset and reset per episode.

    Args:
        tasks: The tasks: a bundled suite name, an OSWorld folder or index, task dicts or a
            ``TaskSet`` (the dataset's ``task_id`` values come from it).
        screen_size: The desktop's ``(width, height)``; the tools' coordinates are its pixels.
        provider: ``"local"``, a provider config, or a provider.
        max_steps: The env's step limit (the last allowed step is scored).
        hard: OSWorld-Hard mode: no FAIL replacement at the step limit.
        max_pixels: Pixel budget of each screenshot shown to the model (None: full size); the
            coordinates stay in screen pixels, which the first observation then says.
        desk_size: Desktops kept for this configuration: at least the rollouts TRL generates
            at once on this process (``generation_batch_size`` / processes).
        env_kwargs: More ``OSWorldEnv`` keyword arguments (``config``, ``cache_dir``, ...).
        pool_config: Settings of the desk's ``EnvPool``.
        backend: The pool's backend, ``"thread"`` or Ray.
        unfinished: How an episode the model left without ``done()``/``fail()`` is scored:
            ``"evaluate"`` (step ``done()`` for it and score the desktop) or ``"zero"``.
        acquire_timeout: Seconds ``reset`` waits for a free desktop before raising.
        reset_attempts: Desktops tried when a reset fails for infrastructure reasons before
            the rollout is dropped (reward None).

    Returns:
        A zero-argument class (a subclass of ``OSWorldTRLEnv``) named ``OSWorld``; TRL logs
        its reward as ``rewards/OSWorld/mean``. Equal arguments return the same class.

    Raises:
        ValueError: A setting out of range, or ``env_kwargs`` overriding ``action_format``.
    """
    if desk_size < 1:
        raise ValueError(f"desk_size must be >= 1, got {desk_size}")
    if reset_attempts < 1:
        raise ValueError(f"reset_attempts must be >= 1, got {reset_attempts}")
    if unfinished not in ("evaluate", "zero"):
        raise ValueError(f"unfinished must be 'evaluate' or 'zero', got {unfinished!r}")
    if max_pixels is not None and max_pixels < 1:
        raise ValueError(f"max_pixels must be >= 1, got {max_pixels}")
    extra = dict(env_kwargs or {})
    if extra.get("action_format", "structured") != "structured":
        raise ValueError("the TRL tools are structured actions: leave action_format alone")
    width, height = (int(v) for v in screen_size)
    kwargs: dict[str, Any] = {
        **extra,
        "tasks": str(tasks) if isinstance(tasks, Path) else tasks,
        "screen_size": (width, height),
        "provider": provider,
        "max_steps": max_steps,
        "hard": hard,
        "action_format": "structured",
    }
    settings = _Settings(
        env_kwargs=kwargs,
        desk_size=desk_size,
        pool_config=pool_config,
        backend=backend,
        max_pixels=max_pixels,
        unfinished=unfinished,
        acquire_timeout=acquire_timeout,
        reset_attempts=reset_attempts,
    )
    # A TaskSet or task list is keyed by identity (its repr is a summary, not its content);
    # the class keeps it alive, so the id is not reused.
    tasks_key = str(tasks) if isinstance(tasks, str | Path) else f"object {id(tasks)}"
    key = repr(
        sorted({**kwargs, "tasks": tasks_key}.items())
        + [desk_size, repr(pool_config), repr(backend), max_pixels, unfinished]
        + [acquire_timeout, reset_attempts]
    )
    with _CLASSES_LOCK:
        cls = _CLASSES.get(key)
        if cls is None:
            cls = _build_class(settings)
            _CLASSES[key] = cls
    return cls


def _build_class(settings: _Settings) -> type[OSWorldTRLEnv]:
    width, height = settings.screen_size
    namespace: dict[str, Any] = {
        "_settings": settings,
        "__module__": __name__,
        "__qualname__": "OSWorld",
        "__doc__": (
            f"OSWorld desktops ({width}x{height}) as a TRL environment: reset(**row) starts "
            "row['task_id'], each tool acts and returns the new screenshot, get_reward() scores."
        ),
    }
    for name in TOOL_NAMES:
        function = getattr(OSWorldTRLEnv, name)
        doc = (function.__doc__ or "").replace("{x_max}", str(width - 1))
        namespace[name] = _with_doc(function, doc.replace("{y_max}", str(height - 1)))
    return type("OSWorld", (OSWorldTRLEnv,), namespace)


# --- dataset ------------------------------------------------------------------------------------

DEFAULT_SYSTEM_PROMPT = (
    "You operate a computer through the given tools to complete the user's task. Each tool "
    "acts on the screen and returns a new screenshot. Coordinates are screen pixels{size}, "
    "with (0, 0) at the top-left corner. Call done() when the task is complete, or fail() if "
    "it cannot be completed."
)


def make_trl_dataset(
    tasks: str | Path | Sequence[Mapping[str, Any]] | TaskSet,
    *,
    screen_size: tuple[int, int] | None = None,
    system_prompt: str | None = None,
    task_ids: Sequence[str] | None = None,
    repeat: int = 1,
) -> Dataset:
    """A TRL dataset of the tasks: one row per task with ``prompt`` and ``task_id``.

    ``prompt`` is a conversation: a system message (how to act through the tools) and a user
    message with the task's instruction; ``OSWorldTRLEnv``'s ``reset`` appends the first
    screenshot to that user message.

    Args:
        tasks: A bundled suite name, an OSWorld folder or index, task dicts or a TaskSet.
        screen_size: The screen's ``(width, height)``, stated in the default system prompt.
        system_prompt: Replaces the default system prompt.
        task_ids: Only these tasks, in this order (default: all, in the set's order).
        repeat: Rows per task (each row becomes ``num_generations`` rollouts in TRL).

    Returns:
        A ``datasets.Dataset`` (``datasets`` comes with TRL).

    Raises:
        UnknownTaskError: A task id that the tasks do not have.
        ValueError: ``repeat`` below 1.
    """
    from datasets import Dataset

    from osworld_gym.tasks import TaskSet, load_tasks

    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    task_set = tasks if isinstance(tasks, TaskSet) else load_tasks(tasks)
    ids = list(task_ids) if task_ids is not None else list(task_set.ids)
    if system_prompt is None:
        size = f" of a {screen_size[0]}x{screen_size[1]} screen" if screen_size else ""
        system_prompt = DEFAULT_SYSTEM_PROMPT.format(size=size)
    rows = []
    for task_id in ids:
        task = task_set[task_id]
        prompt = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": task.instruction},
        ]
        rows += [{"prompt": prompt, "task_id": task.id}] * repeat
    return Dataset.from_list(rows)


# --- Qwen2.5-VL with tools ------------------------------------------------------------------------

# A chat template in Qwen's tool-calling format (tool schemas inside <tools></tools> in the
# system turn, calls as {"name": ..., "arguments": ...} inside <tool_call></tool_call>, results
# inside <tool_response></tool_response> in a user turn) that also renders images anywhere,
# tool results included. The stock Qwen2.5-VL template renders neither tools nor tool calls, so
# TRL 1.16 refuses it ("does not support tool calling"). It is prefix-preserving (each message
# renders the same whatever follows), which TRL's multi-turn loop relies on.
QWEN_TOOL_CHAT_TEMPLATE = """\
{%- macro render(content) -%}
{%- if content is string -%}{{- content -}}
{%- elif content is not none -%}
{%- for part in content -%}
{%- if part['type'] == 'image' or 'image' in part or 'image_url' in part -%}
{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}
{%- elif part['type'] == 'text' -%}{{- part['text'] -}}
{%- endif -%}
{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- set first = 0 -%}
{%- if messages and messages[0]['role'] == 'system' -%}
{%- set first = 1 -%}
{%- set system = render(messages[0]['content']) -%}
{%- else -%}
{%- set system = '' -%}
{%- endif -%}
{%- if tools -%}
{{- '<|im_start|>system\\n' -}}
{%- if system -%}{{- system + '\\n\\n' -}}{%- endif -%}
{{- '# Tools\\n\\nThese functions are available, described inside <tools></tools>:\\n<tools>' -}}
{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\\n</tools>\\n\\nTo call one, answer with a JSON object holding its name and arguments '
    'inside <tool_call></tool_call>:\\n<tool_call>\\n'
    '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' -}}
{%- elif first -%}
{{- '<|im_start|>system\\n' + system + '<|im_end|>\\n' -}}
{%- endif -%}
{%- for message in messages[first:] -%}
{%- if message['role'] == 'tool' -%}
{%- if loop.first or loop.previtem['role'] != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\\n<tool_response>\\n' + render(message['content']) + '\\n</tool_response>' -}}
{%- if loop.last or loop.nextitem['role'] != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}
{%- else -%}
{%- set text = render(message['content']) -%}
{{- '<|im_start|>' + message['role'] + '\\n' + text -}}
{%- if message['role'] == 'assistant' and message['tool_calls'] -%}
{%- for call in message['tool_calls'] -%}
{%- set function = call['function'] if call['function'] is defined else call -%}
{%- if text or not loop.first -%}{{- '\\n' -}}{%- endif -%}
{{- '<tool_call>\\n{"name": "' + function['name'] + '", "arguments": ' -}}
{%- if function['arguments'] is string -%}{{- function['arguments'] -}}
{%- else -%}{{- function['arguments'] | tojson -}}{%- endif -%}
{{- '}\\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""


def enable_qwen_tool_calling(processing_class: Any) -> Any:
    """Make a Qwen2.5-VL processor (UI-TARS-1.5's) usable by TRL's tool-calling trainer.

    TRL 1.16 needs a chat template that renders tools, tool calls and tool results, and a
    response parser that reads tool calls back; for Qwen2.5-VL it has neither (the stock
    template renders no tools, and TRL's ``add_response_schema`` does not know it). This sets
    ``QWEN_TOOL_CHAT_TEMPLATE`` on the processor and TRL's parser of Qwen's
    ``<tool_call>`` JSON format (the one it uses for Qwen2.5 and Qwen3) on its tokenizer.

    Args:
        processing_class: A Qwen2-VL / Qwen2.5-VL processor (or a Qwen tokenizer).

    Returns:
        The same object, changed in place.

    Raises:
        ValueError: The tokenizer lacks Qwen's chat tokens.
    """
    import transformers
    from packaging.version import Version
    from trl.chat_template_utils import qwen3_schema, qwen3_template

    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    vocab = tokenizer.get_vocab()
    missing = [t for t in ("<|im_start|>", "<|im_end|>") if t not in vocab]
    if missing:
        raise ValueError(f"not a Qwen chat tokenizer: it lacks {missing}")
    processing_class.chat_template = QWEN_TOOL_CHAT_TEMPLATE
    if tokenizer is not processing_class:
        tokenizer.chat_template = QWEN_TOOL_CHAT_TEMPLATE
    # transformers >= 5.13 parses with the new-style response_template (TRL sets the same one
    # for Qwen2.5/Qwen3 templates); older versions only understand the legacy schema.
    if Version(transformers.__version__) >= Version("5.13.0.dev0"):
        tokenizer.response_template = qwen3_template
    else:
        tokenizer.response_schema = qwen3_schema
    return processing_class
