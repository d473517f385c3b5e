r"""SkyRL adapter: OSWorld desktops as a ``skyrl-gym`` text environment registered as ``osworld``.

SkyRL's generators build one env object per trajectory with ``skyrl_gym.make(env_class,
env_config=..., extras=row)`` and run its ``init``/``step``/``close`` on a thread pool
(``environment.skyrl_gym.max_env_workers`` threads). ``OSWorldTextEnv`` borrows a live
desktop from the process-wide ``DesktopLeases`` for each
trajectory, so desktops launch once per process and are reset per episode:

* ``init(prompt)`` resets the row's task and returns the prompt plus one user message holding
  the screenshot as an ``image_url`` data URI (and the instruction, unless the prompt has it);
* ``step(text)`` applies the model's text (UI-TARS ``Thought: ... Action: ...`` by default),
  returns the next screenshot as a user message (none once the episode is over), the env's score
  as the reward of the last step (0 before), ``done``, and ``metadata`` (score, parse error,
  infra error, FAIL replacement, timings);
* ``close()`` hands the desktop back; ``get_metrics``/``aggregate_metrics`` report success,
  steps, parse errors and infrastructure faults per batch (logged as ``environment/*``).

Observations carry images, so SkyRL must run its VLM generator
(``generator.vision_language_generator=true``, ``batched=false``); the text generator would
feed the image parts to a text chat template.

Settings come from three places, later ones winning: ``OSWorldSkyRLConfig``'s defaults,
``env_config`` (what SkyRL passes: ``environment.skyrl_gym.osworld`` where a config defines it),
and the dataset row's ``osworld_config`` column (a JSON object, as ``make_skyrl_dataset()``
writes it). SkyRL's command line refuses keys its config classes do not declare, so the row is
the usual place; keep the env settings equal across rows, since each distinct setting gets its
own desk of ``desk_size`` desktops.

Faults, as SkyRL allows them (its generator has no way to drop a sample):

* a reset that fails for infrastructure reasons is retried inside ``init``: the pool relaunches
  the desktop ``pool.launch_attempts`` times, then retires it, and ``init`` resets on another
  desktop, up to ``reset_attempts`` resets in all;
* a desktop that dies mid-episode ends the episode: ``done=True``, reward 0,
  ``metadata["infra_error"]`` set. It is a 0-reward sample for the trainer (filter it out
  upstream if that matters); the desktop relaunches at its next reset.

Concurrency rule: ``init`` waits for a free desktop on one of SkyRL's env threads. Trajectories
in flight (``trainer.train_batch_size * generator.n_samples_per_prompt``, and the eval batch
times ``generator.eval_n_samples_per_prompt``) beyond ``desk_size`` wait there; when more wait
than ``max_env_workers`` threads exist, steps and closes of the trajectories that hold desktops
queue behind them and nothing moves. Keep ``desk_size`` at least the trajectories in flight (or
their excess below ``max_env_workers``); ``lease_timeout`` turns such a stall into an error
naming this rule.

Example:
    >>> import skyrl_gym
    >>> from osworld_gym.integrations import skyrl as osworld_skyrl  # registers "osworld"
    >>> env = skyrl_gym.make("osworld", env_config={"tasks": "ui-basics",
    ...     "screen_size": [336, 224], "desk_size": 2}, extras={"task_id": "click-colour-01"})
    >>> env.config.desk_size, env.max_turns
    (2, 15)
    >>> conversation, _ = env.init([])  # a desktop is borrowed here  # doctest: +SKIP
    >>> out = env.step("Thought: ...\nAction: click(start_box='(90,81)')")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_gym.errors import DependencyNotInstalled

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
    from skyrl_gym.envs.registration import deregister, register, registry
    from skyrl_gym.error import RegistrationError
except ImportError as _missing:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled(
        "osworld_gym.integrations.skyrl needs SkyRL's environment package skyrl-gym, which is "
        "not installed: pip install 'osworld-gym[skyrl]'"
    ) from _missing

from osworld_gym.actions import Fail, parse_action
from osworld_gym.env_config import DEFAULT_SUITE
from osworld_gym.integrations.lease import DesktopLeases, Lease, LeaseError, LeaseResetError
from osworld_gym.integrations.render import ImageFormat, render_observation
from osworld_gym.pool.config import PoolConfig, RayBackendConfig
from osworld_gym.pool.results import EnvResult
from osworld_gym.tasks import Task, TaskSet, load_tasks

logger = logging.getLogger(__name__)

__all__ = [
    "CONFIG_COLUMN",
    "ENTRY_POINT",
    "ENV_ID",
    "OSWorldSkyRLConfig",
    "OSWorldTextEnv",
    "make_skyrl_dataset",
    "register_osworld",
    "skyrl_dataset_rows",
]

ENV_ID = "osworld"
"""The id the adapter registers under: ``environment.env_class=osworld`` / ``env_class`` rows."""
ENTRY_POINT = "osworld_gym.integrations.skyrl:OSWorldTextEnv"
"""The registry entry point (a string, so SkyRL's env specs stay JSON-serialisable)."""
CONFIG_COLUMN = "osworld_config"
"""The dataset column holding the env settings (a JSON object; see ``OSWorldSkyRLConfig``)."""

_TURN_LIMIT_REASON = "turn limit reached"


@dataclass(frozen=True)
class OSWorldSkyRLConfig:
    """Settings of ``OSWorldTextEnv``, read from ``env_config`` and the row.

    Attributes:
        tasks: The task source of every desktop: a bundled suite name (``"ui-basics"``), a
            folder or an index file (``suite`` is accepted as another name for it).
        provider: The desktop provider: ``"local"``, ``"docker"``, ... or a provider config
            object (Python callers only).
        screen_size: ``(width, height)`` of the screens.
        action_format: How the env parses the model's text (``"uitars"``, ``"pyautogui"``, ...).
        max_steps: The env's step limit; its last step is replaced by FAIL and scored.
        hard: OSWorld-Hard: no FAIL replacement at the limit.
        env_kwargs: Further keyword arguments of ``OSWorldEnv`` (``offline``,
            ``wait_seconds``, ``dialect_options``, ...).
        desk_size: Desktops this process keeps for the adapter: at most this many trajectories
            run at once (see the module's concurrency rule).
        backend: ``"thread"`` (desktops driven from this process) or ``"ray"`` / a mapping of
            ``RayBackendConfig`` fields (desktops on Ray actors).
        pool: ``PoolConfig`` fields (``max_concurrent_resets``,
            ``launch_attempts``, ``step_timeout``, ``reset_timeout``).
        image_format: ``"png"`` or ``"jpeg"`` encoding of the screenshots sent to the model.
        max_pixels: Pixel budget of each screenshot (None: the screen's size); coordinates
            stay in screen pixels.
        jpeg_quality: JPEG quality, 1-95.
        reset_attempts: Resets ``init`` tries for one episode before it gives up on
            infrastructure faults. The pool already retries a desktop that fails to come up
            (``pool.launch_attempts`` times, then retires that env); ``init`` then borrows
            another desktop and resets again.
        lease_timeout: Seconds ``init`` waits for a free desktop before it raises (None: no
            limit).
    """

    tasks: str = DEFAULT_SUITE
    provider: Any = "local"
    screen_size: tuple[int, int] = (1920, 1080)
    action_format: str = "uitars"
    max_steps: int = 15
    hard: bool = False
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    desk_size: int = 8
    backend: Any = "thread"
    pool: Mapping[str, Any] = field(default_factory=dict)
    image_format: ImageFormat = "png"
    max_pixels: int | None = None
    jpeg_quality: int = 85
    reset_attempts: int = 3
    lease_timeout: float | None = 1800.0

    def __post_init__(self) -> None:
        size = tuple(int(side) for side in self.screen_size)
        if len(size) != 2 or min(size) < 1:
            raise ValueError(f"screen_size must be (width, height), got {self.screen_size!r}")
        object.__setattr__(self, "screen_size", size)
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.desk_size < 1:
            raise ValueError(f"desk_size must be >= 1, got {self.desk_size}")
        if self.reset_attempts < 1:
            raise ValueError(f"reset_attempts must be >= 1, got {self.reset_attempts}")
        if self.image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {self.image_format!r}")

    @classmethod
    def from_sources(cls, *sources: Any) -> OSWorldSkyRLConfig:
        """Merge settings, later sources winning.

        Args:
            *sources: Mappings, OmegaConf configs, dataclasses, JSON object strings or None.

        Raises:
            ValueError: An unknown setting (the message lists the known ones), or a bad value.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        merged: dict[str, Any] = {}
        for source in sources:
            settings = _plain_settings(source)
            if "suite" in settings:
                settings.setdefault("tasks", settings["suite"])
                del settings["suite"]
            unknown = sorted(set(settings) - known)
            if unknown:
                raise ValueError(
                    f"unknown osworld setting(s) {unknown}; known: {sorted(known | {'suite'})}"
                )
            merged.update(settings)
        return cls(**merged)

    def env_spec_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of each desktop's ``OSWorldEnv`` (also the shared desk's key)."""
        kwargs: dict[str, Any] = {
            "tasks": self.tasks,
            "provider": self.provider,
            "screen_size": self.screen_size,
            "action_format": self.action_format,
            "max_steps": self.max_steps,
            "hard": self.hard,
        }
        kwargs.update(self.env_kwargs)
        return kwargs

    def pool_config(self) -> PoolConfig:
        """The desk's pool settings."""
        return PoolConfig(**dict(self.pool))

    def backend_config(self) -> str | RayBackendConfig:
        """The desk's backend: a name or a ``RayBackendConfig``."""
        if isinstance(self.backend, Mapping):
            return RayBackendConfig(**dict(self.backend))
        return self.backend

    def to_json(self) -> str:
        """The settings as the JSON object of a dataset row's ``osworld_config`` column.

        Raises:
            TypeError: A setting is not JSON data (a provider config object: rows hold names).
        """
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    def desk(self) -> DesktopLeases:
        """This process's desk for these settings (created, not launched, on first use)."""
        return DesktopLeases.shared(
            self.env_spec_kwargs(),
            self.desk_size,
            config=self.pool_config(),
            backend=self.backend_config(),
        )


def _plain_settings(source: Any) -> dict[str, Any]:
    """One settings source as a plain dict (OmegaConf containers and dataclasses unwrapped)."""
    if source is None:
        return {}
    if isinstance(source, str | bytes):
        if not source.strip():
            return {}
        parsed = json.loads(source)
        if not isinstance(parsed, dict):
            raise ValueError(f"osworld settings must be a JSON object, got {parsed!r}")
        return parsed
    if dataclasses.is_dataclass(source) and not isinstance(source, type):
        return {f.name: getattr(source, f.name) for f in dataclasses.fields(source)}
    try:  # SkyRL hands Hydra/OmegaConf nodes around; only convert when omegaconf is there
        from omegaconf import DictConfig, OmegaConf

        if isinstance(source, DictConfig):
            container = OmegaConf.to_container(source, resolve=True)
            return dict(container) if isinstance(container, dict) else {}
    except ImportError:
        pass
    if isinstance(source, Mapping):
        return dict(source)
    raise TypeError(f"osworld settings must be a mapping or a JSON string, got {type(source)}")


def _extras_value(extras: Mapping[str, Any], key: str) -> Any:
    """A row field, also looked up under ``extra_info`` (where verl-style datasets keep it)."""
    if extras.get(key) is not None:
        return extras[key]
    nested = extras.get("extra_info")
    if isinstance(nested, Mapping):
        return nested.get(key)
    return None


def _message_texts(messages: Sequence[Mapping[str, Any]]) -> Iterable[str]:
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, Sequence):
            for part in content:
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    yield part["text"]


@dataclass
class _EpisodeStats:
    """What ``OSWorldTextEnv.get_metrics()`` reports for one trajectory."""

    steps: int = 0
    parse_errors: int = 0
    score: float | None = None
    infra_error: bool = False
    fail_replaced: bool = False
    turn_limit: bool = False
    reset_attempts: int = 0
    reset_seconds: float = 0.0
    step_seconds: float = 0.0


class OSWorldTextEnv(BaseTextEnv):
    """One SkyRL trajectory on one borrowed OSWorld desktop.

    Args:
        env_config: Run-wide settings (``environment.skyrl_gym.osworld``): see
            ``OSWorldSkyRLConfig``.
        extras: The dataset row: ``task_id`` (None lets the env sample one), optionally
            ``seed``, ``osworld_config`` (row settings, winning over ``env_config``) and
            ``max_turns`` (SkyRL's ``generator.max_turns``, set by its generator).

    A ``max_turns`` below the env's ``max_steps`` ends episodes early the env's way: the model's
    action on the last turn is replaced by FAIL and the episode is scored
    (``metadata["turn_limit"]``). SkyRL's VLM generator leaves turn limits to the env.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        self.config = OSWorldSkyRLConfig.from_sources(
            env_config, _extras_value(extras, CONFIG_COLUMN)
        )
        task_id = _extras_value(extras, "task_id")
        self.task_id: str | None = None if task_id is None else str(task_id)
        seed = _extras_value(extras, "seed")
        self.seed: int | None = None if seed is None else int(seed)
        turns = extras.get("max_turns")
        self.max_turns = self.config.max_steps
        if turns is not None and 0 < int(turns) < self.config.max_steps:
            self.max_turns = int(turns)
            _warn_once(
                f"max_turns={turns} is below the env's max_steps={self.config.max_steps}: "
                "episodes end at the turn limit with a FAIL in place of the last action "
                "(set generator.max_turns >= max_steps to run the env's full episodes)"
            )
        # No desk work here: SkyRL calls the constructor on its event loop, while init() runs
        # on its env threads, where creating the desk and waiting for a desktop may block.
        self._lease: Lease | None = None
        self._release_at_gc: weakref.finalize | None = None
        self._started = False
        self._episode_over = True
        self._stats = _EpisodeStats()

    # --- SkyRL's interface --------------------------------------------------------------------

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Reset the row's task on a borrowed desktop; return the conversation to prompt with.

        Args:
            prompt: The row's chat messages (system and user turns, text content).

        Returns:
            ``(prompt + [user message with the screenshot], metadata)``. The user message
            carries the instruction too unless the prompt already states it (as
            ``make_skyrl_dataset()``'s UI-TARS prompt does). ``metadata`` holds
            ``task_id``, ``env_id``, ``instruction``, ``reset_attempts`` and ``timings``.

        Raises:
            LeaseResetError: The task does not exist, or ``reset_attempts`` resets in a row hit
                infrastructure faults.
            LeaseError: No desktop became free within ``lease_timeout`` (see the module's
                concurrency rule), or every desktop was retired.
        """
        if self._started:
            raise RuntimeError("init() was called twice: SkyRL makes one env per trajectory")
        self._started = True
        try:
            result = self._reset_with_retries()
        except BaseException:
            self._finish()  # never keep a desktop for a trajectory that will not run
            raise
        self._episode_over = False
        observation = result.observation
        instruction = str(observation.get("instruction") or "")
        stated = bool(instruction) and any(instruction in text for text in _message_texts(prompt))
        if stated:  # keep only the screenshot (and a scaled-screen note, if any)
            observation = {**observation, "instruction": ""}
        content = self._render(observation, first_turn=True)
        conversation = [*prompt, {"role": "user", "content": content}]
        metadata = {
            "task_id": result.info.get("task_id"),
            "env_id": result.env_id,
            "instruction": instruction,
            "reset_attempts": self._stats.reset_attempts,
            "timings": _plain_timings(result.info.get("timings")),
        }
        return conversation, metadata

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Apply the model's text to the desktop.

        Args:
            action: The model's response for this turn.

        Returns:
            SkyRL's step output: ``observations`` (one user message with the new screenshot and
            the last action's error, or ``[]`` once done), ``reward`` (the env's score on the
            last step; 0 before it, after an infrastructure fault, and when the episode could
            not be scored), ``done`` and ``metadata`` (``task_id``, ``step``, ``score``,
            ``parse_error``, ``action_error``, ``infra_error``, ``fail_replaced``,
            ``turn_limit``, ``evaluation_error``, ``terminated``, ``truncated``, ``timings``).

        Raises:
            RuntimeError: No episode is running (``init`` not called, or the episode is over).
        """
        if self._lease is None or self._episode_over:
            raise RuntimeError("step() needs a running episode: call init() first")
        self.turns += 1
        to_send: Any = action
        turn_limit = self.turns >= self.max_turns and self.max_turns < self.config.max_steps
        if turn_limit:
            if self._is_final(action):
                turn_limit = False  # the model ended the episode itself on its last turn
            else:
                to_send = Fail(reason=_TURN_LIMIT_REASON)
        result = self._lease.step(to_send)
        info = result.info
        done = result.terminated or result.truncated
        infra_error = info.get("infra_error")
        score = info.get("score") if done and not infra_error else None
        fail_replaced = bool(info.get("fail_replaced")) or turn_limit
        stats = self._stats
        stats.steps += 1
        stats.parse_errors += info.get("parse_error") is not None
        stats.step_seconds += result.elapsed
        stats.infra_error = stats.infra_error or bool(infra_error)
        stats.fail_replaced = stats.fail_replaced or fail_replaced
        stats.turn_limit = stats.turn_limit or turn_limit
        if done:
            stats.score = None if score is None else float(score)
            self._finish()
        reward = float(score) if score is not None else 0.0
        observations = (
            [] if done else [{"role": "user", "content": self._render(result.observation)}]
        )
        metadata = {
            "task_id": info.get("task_id"),
            "step": info.get("step", self.turns),
            "score": score,
            "parse_error": info.get("parse_error"),
            "action_error": info.get("action_error"),
            "infra_error": infra_error,
            "fail_replaced": fail_replaced,
            "turn_limit": turn_limit,
            "evaluation_error": info.get("evaluation_error"),
            "terminated": result.terminated,
            "truncated": result.truncated,
            "timings": _plain_timings(info.get("timings")),
        }
        if infra_error:
            logger.warning(
                "task %s: infrastructure fault at step %d, episode ends with reward 0: %s",
                info.get("task_id"), self.turns, infra_error,
            )  # fmt: skip
        return BaseTextEnvStepOutput(
            observations=observations, reward=reward, done=done, metadata=metadata
        )

    def close(self) -> None:
        """Hand the desktop back (mid-episode too: the next borrower's reset cleans it up)."""
        self._finish()

    def get_metrics(self) -> dict[str, Any]:
        """This trajectory's numbers (numeric only, as SkyRL aggregates them).

        ``success`` (score 1), ``score`` (0 when unscored), ``scored``, ``steps``,
        ``parse_errors``, ``infra_error``, ``fail_replaced``, ``turn_limit``,
        ``reset_attempts``, ``reset_seconds``, ``step_seconds``.
        """
        stats = self._stats
        score = stats.score
        return {
            "success": float(score is not None and score >= 1.0),
            "score": 0.0 if score is None else score,
            "scored": float(score is not None),
            "steps": float(stats.steps),
            "parse_errors": float(stats.parse_errors),
            "infra_error": float(stats.infra_error),
            "fail_replaced": float(stats.fail_replaced),
            "turn_limit": float(stats.turn_limit),
            "reset_attempts": float(stats.reset_attempts),
            "reset_seconds": stats.reset_seconds,
            "step_seconds": stats.step_seconds,
        }

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """A batch's numbers from ``get_metrics()`` of its trajectories.

        Returns:
            ``episodes``; ``success_rate`` and ``mean_steps`` over all episodes; ``mean_score``
            over scored episodes (NaN if none); ``parse_errors_per_episode``; ``infra_faults``
            (count) and ``infra_fault_rate``; ``fail_replaced_rate``, ``turn_limit_rate``;
            ``unscored`` (episodes that ended without a score or a fault);
            ``mean_reset_seconds`` and ``mean_step_seconds`` (per step).
        """
        if not metrics:
            return {}
        n = len(metrics)

        def total(key: str) -> float:
            return float(sum(float(m.get(key, 0.0)) for m in metrics))

        scored = [float(m.get("score", 0.0)) for m in metrics if m.get("scored")]
        steps = total("steps")
        unscored = sum(1 for m in metrics if not m.get("scored") and not m.get("infra_error"))
        return {
            "episodes": float(n),
            "success_rate": total("success") / n,
            "mean_score": sum(scored) / len(scored) if scored else math.nan,
            "mean_steps": steps / n,
            "parse_errors_per_episode": total("parse_errors") / n,
            "infra_faults": total("infra_error"),
            "infra_fault_rate": total("infra_error") / n,
            "fail_replaced_rate": total("fail_replaced") / n,
            "turn_limit_rate": total("turn_limit") / n,
            "unscored": float(unscored),
            "mean_reset_seconds": total("reset_seconds") / n,
            "mean_step_seconds": total("step_seconds") / steps if steps else 0.0,
        }

    # --- internals --------------------------------------------------------------------------

    def _reset_with_retries(self) -> EnvResult:
        """Borrow a desktop and reset the task, retrying infrastructure faults."""
        stats = self._stats
        while True:
            if self._lease is None:
                self._borrow()
            assert self._lease is not None
            stats.reset_attempts += 1
            try:
                result = self._lease.reset(self.task_id, seed=self.seed)
            except LeaseResetError as e:
                stats.reset_seconds += e.result.elapsed
                if not e.result.infra or stats.reset_attempts >= self.config.reset_attempts:
                    raise
                logger.warning(
                    "task %s: reset %d of %d failed (%s), retrying%s",
                    self.task_id, stats.reset_attempts, self.config.reset_attempts, e,
                    " on another desktop" if e.retired else "",
                )  # fmt: skip
                if e.retired:  # the desk no longer lends that env: give it back, borrow anew
                    self._finish()
                continue
            stats.reset_seconds += result.elapsed
            return result

    def _borrow(self) -> None:
        timeout = self.config.lease_timeout
        desk = self.config.desk()
        if desk.available == 0:
            logger.info(
                "all %d desktops are lent; waiting (see the concurrency rule of %s)",
                desk.size, __name__,
            )  # fmt: skip
        try:
            lease = desk.acquire(timeout=timeout)
        except LeaseError as e:
            if "within" not in str(e):
                raise
            raise LeaseError(
                f"{e}. SkyRL runs env calls on environment.skyrl_gym.max_env_workers threads: "
                "when more trajectories wait for a desktop than there are threads, the ones "
                f"holding desktops cannot step. Raise desk_size (now {self.config.desk_size}) "
                "to the trajectories in flight (train_batch_size * n_samples_per_prompt) or "
                "lower the batch."
            ) from e
        self._lease = lease
        # A trajectory that dies between init and close (an exception in generation) never
        # calls close(): return its desktop when the env object is collected.
        self._release_at_gc = weakref.finalize(self, lease.release)
        self._release_at_gc.atexit = False

    def _finish(self) -> None:
        """End the episode on our side and give the desktop back. Idempotent."""
        self._episode_over = True
        if self._release_at_gc is not None:
            self._release_at_gc()  # releases the lease once, then detaches
            self._release_at_gc = None
        self._lease = None

    def _render(self, observation: Mapping[str, Any], first_turn: bool = False) -> list[Any]:
        return render_observation(
            observation,
            first_turn=first_turn,
            style="openai",
            image_format=self.config.image_format,
            max_pixels=self.config.max_pixels,
            jpeg_quality=self.config.jpeg_quality,
        )

    def _is_final(self, text: str) -> bool:
        """The text ends the episode itself (DONE or FAIL), so a turn limit does not replace it."""
        options = dict(self.config.env_kwargs.get("dialect_options") or {})
        fmt = self.config.action_format
        result = parse_action(
            text,
            dialect="structured" if fmt == "structured" else fmt,
            screen_size=self.config.screen_size,
            **({} if fmt == "structured" else options),
        )
        return any(a.kind in ("done", "fail") for a in result.actions)

    def __repr__(self) -> str:
        state = "no episode" if self._episode_over else f"turn {self.turns}"
        return f"OSWorldTextEnv(task_id={self.task_id!r}, {state})"


def _plain_timings(timings: Any) -> dict[str, float]:
    """The env's live ``Timings`` view as a plain dict (metadata travels to SkyRL's logs)."""
    if not isinstance(timings, Mapping):
        return {}
    return {str(k): float(v) for k, v in timings.items()}


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def _warn_once(message: str) -> None:
    with _WARNED_LOCK:
        if message in _WARNED:
            return
        _WARNED.add(message)
    logger.warning("%s", message)


# --- registration -------------------------------------------------------------------------------


def register_osworld(id: str = ENV_ID, *, replace: bool = False) -> None:  # noqa: A002
    """Register ``OSWorldTextEnv`` in skyrl-gym's registry under ``id``.

    Importing this module registers ``"osworld"`` already; call this for another id, or in a
    process that imported skyrl-gym's registry afresh (SkyRL's Ray workers run the entrypoint's
    code, so an entrypoint calls it before building the trainer).

    Args:
        id: The env class name rows and ``environment.env_class`` use.
        replace: Replace another env registered under ``id`` (default: raise).

    Raises:
        skyrl_gym.error.RegistrationError: ``id`` belongs to another env and not ``replace``.
    """
    spec = registry.get(id)
    if spec is not None:
        if spec.entry_point in (ENTRY_POINT, OSWorldTextEnv):
            return
        if not replace:
            raise RegistrationError(
                f"skyrl-gym already has an env {id!r} ({spec.entry_point}); pass replace=True "
                "or another id"
            )
        deregister(id)
    register(id=id, entry_point=ENTRY_POINT)


# Like skyrl-gym's bundled envs, which register when their package is imported: importing the
# adapter is enough for skyrl_gym.make("osworld", ...). Another env already holding the id keeps
# it (logged), so importing never fails for that reason.
try:
    register_osworld()
except RegistrationError as _taken:
    logger.warning("not registering %r in skyrl-gym: %s", ENV_ID, _taken)


# --- datasets ------------------------------------------------------------------------------------


def skyrl_dataset_rows(
    tasks: str | Sequence[str] | TaskSet | None = None,
    *,
    config: OSWorldSkyRLConfig | Mapping[str, Any] | None = None,
    env_class: str = ENV_ID,
    prompt: str = "uitars",
    repeat: int = 1,
) -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per task (times ``repeat``).

    Each row has the columns SkyRL's ``PromptDataset`` reads: ``prompt`` (chat messages with
    text content; SkyRL tokenizes them to filter long prompts) and ``env_class``; every other
    column reaches the env as ``extras``: ``task_id``, ``instruction``, ``domain``,
    ``data_source`` (``osworld/<suite>``, which SkyRL keys eval metrics by) and
    ``osworld_config`` (the settings as a JSON object).

    Args:
        tasks: Task ids of ``config.tasks``, a ``TaskSet``, or a
            suite/source to load all tasks from (None: all of ``config.tasks``).
        config: The env settings written into each row.
        env_class: The registered id rows point at.
        prompt: ``"uitars"``: UI-TARS-1.5's system text and computer-use prompt holding the
            instruction (the screenshot follows from ``init``); ``"instruction"``: one user
            turn with the bare instruction.
        repeat: Rows per task (SkyRL already samples ``n_samples_per_prompt`` per row).

    Raises:
        ValueError: An unknown ``prompt`` style or a ``repeat`` below 1.
        UnknownTaskError: A task id the source does not have.
    """
    if prompt not in ("uitars", "instruction"):
        raise ValueError(f"prompt must be 'uitars' or 'instruction', got {prompt!r}")
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    settings = (
        config
        if isinstance(config, OSWorldSkyRLConfig)
        else OSWorldSkyRLConfig.from_sources(config)
    )
    task_set = _task_set(tasks, settings)
    if prompt == "uitars":
        # Imported here: the agents package is only needed for this prompt, not by the env.
        from osworld_gym.policies.uitars.prompt import SYSTEM_TEXT, computer_use_prompt
    source = settings.tasks
    data_source = (
        f"osworld/{source}" if isinstance(source, str) and "/" not in source else "osworld"
    )
    config_json = settings.to_json()
    rows = []
    for task in task_set:
        if prompt == "uitars":
            messages = [
                {"role": "system", "content": SYSTEM_TEXT},
                {"role": "user", "content": computer_use_prompt(task.instruction)},
            ]
        else:
            messages = [{"role": "user", "content": task.instruction}]
        row = {
            "prompt": messages,
            "env_class": env_class,
            "task_id": task.id,
            "instruction": task.instruction,
            "domain": task.domain,
            "data_source": data_source,
            CONFIG_COLUMN: config_json,
        }
        rows.extend(dict(row) for _ in range(repeat))
    return rows


def make_skyrl_dataset(
    path: str | os.PathLike[str],
    tasks: str | Sequence[str] | TaskSet | None = None,
    **kwargs: Any,
) -> Path:
    """Write ``skyrl_dataset_rows()`` as a file SkyRL reads (``data.train_data=[path]``).

    Args:
        path: ``.jsonl``/``.json`` (one JSON row per line; no extra packages) or ``.parquet``
            (needs pandas with pyarrow).
        tasks: As for ``skyrl_dataset_rows()``.
        **kwargs: More arguments of ``skyrl_dataset_rows()``.

    Returns:
        The path written.

    Raises:
        ValueError: Another file type.
        DependencyNotInstalled: A parquet file without pyarrow.
    """
    target = Path(path)
    rows = skyrl_dataset_rows(tasks, **kwargs)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix.lower()
    if suffix in (".jsonl", ".json"):
        with open(target, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    elif suffix == ".parquet":
        try:
            import pandas as pd
            import pyarrow  # noqa: F401  (pandas' parquet engine)
        except ImportError as e:
            raise DependencyNotInstalled(
                "writing parquet needs pandas and pyarrow: pip install pyarrow "
                "(or write .jsonl, which SkyRL reads as well)"
            ) from e
        pd.DataFrame(rows).to_parquet(target, index=False)
    else:
        raise ValueError(f"write .jsonl, .json or .parquet, not {target.name!r}")
    logger.info("wrote %d SkyRL rows to %s", len(rows), target)
    return target


def _task_set(tasks: str | Sequence[str] | TaskSet | None, settings: OSWorldSkyRLConfig) -> TaskSet:
    if tasks is None:
        return load_tasks(settings.tasks)
    if isinstance(tasks, TaskSet):
        return tasks
    if isinstance(tasks, str):
        return load_tasks(tasks)
    ids = [t.id if isinstance(t, Task) else str(t) for t in tasks]
    return load_tasks(settings.tasks, ids=ids)
