"""``OSWorldEnv``: OSWorld desktop tasks as a Gymnasium environment.

The env only orchestrates: the provider launches and resets the desktop, the setup interpreter
prepares the task, the guest client acts and observes, the evaluator scores. Episode rules
(step limit, FAIL replacement, parse errors) are the pure functions of ``.episode``.

Failure channels are kept apart: a model output that does not parse is a no-op step reported in
``info["parse_error"]`` and the next observation's ``last_action_error``; a broken desktop ends
the episode with ``truncated=True`` and ``info["infra_error"]``, and the next ``reset``
relaunches it (bounded). ``step`` never raises for infrastructure faults. An episode that ran to
its end but cannot be scored (a metric library not installed, a failed postconfig step) has no
score rather than a zero: ``info["score"]`` is None and ``info["evaluation_error"]`` says why
(see ``OSWorldEnv._score()``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import shutil
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from osworld_gym import registration
from osworld_gym.actions import Action, parse_action, to_wire_actions
from osworld_gym.actions.spaces import StructuredActionSpace, TextActionSpace
from osworld_gym.env_config import (
    DEFAULT_MAX_STEPS,
    DEFAULT_SUITE,
    LAUNCHING_STEPS,
    EnvConfig,
    Timings,
    resolve_step_limit,
)
from osworld_gym.episode import episode_end, plan_step, terminal_kind
from osworld_gym.errors import (
    ActionError,
    DependencyNotInstalled,
    DesktopDiedError,
    EvaluatorError,
    GuestError,
    GuestHTTPError,
    OSWorldGymError,
    ProviderError,
    TaskSetupError,
    TooManyRestartsError,
)
from osworld_gym.evaluation.evaluator import EvaluationResult, Evaluator
from osworld_gym.evaluation.getters import EvalContext
from osworld_gym.extras import check_tasks, runs_this_python
from osworld_gym.providers import Desktop, Provider, ProviderConfig, make_provider, processes
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.interpreter import SetupContext, SetupInterpreter
from osworld_gym.tasks import Task, TaskSet, load_tasks
from osworld_gym.tasks.requirements import task_requirements

logger = logging.getLogger(__name__)

# The parameters and result of a callable timed by OSWorldEnv._timed.
_P = ParamSpec("_P")
_R = TypeVar("_R")

_INFRA_ERRORS = (GuestError, ProviderError)
# What makes a finished episode unscorable (no score, not a zero): see OSWorldEnv._score.
_UNSCORABLE = (TaskSetupError, EvaluatorError, DependencyNotInstalled)
MAX_INSTRUCTION_CHARS = 8192
MAX_A11Y_CHARS = 4_000_000  # a busy LibreOffice tree is about 1 MB
EVAL_FOLDER_PREFIX = f"{processes.FOLDER_PREFIX}eval-"  # each env's files fetched for scoring


def _is_computer_13_dicts(action: Any) -> bool:
    """Whether ``action`` is an OSWorld action dict (``action_type``), or a list of them."""
    items = action if isinstance(action, list) else [action]
    return bool(items) and all(isinstance(a, dict) and "action_type" in a for a in items)


class OSWorldEnv(gym.Env[dict[str, Any], Any]):
    """One desktop, one OSWorld task per episode.

    Args:
        provider: ``"local"`` (default), a provider config, or a provider.
        tasks: A bundled suite name, an OSWorld folder or index JSON, a task file, task dicts,
            or a loaded ``TaskSet``.
        action_format: ``"uitars"``, ``"pyautogui"``, ``"computer_13"`` or ``"structured"``.
        max_steps: Step limit; the last allowed step still evaluates. Built by ``gym.make(...,
            max_episode_steps=N)``, the env takes N (the ``TimeLimit`` Gymnasium adds then ends
            the episode at the step the env scores); a different explicit ``max_steps`` is
            refused (see ``osworld_gym.registration``).
        screen_size: (width, height) of the desktop and of observed screenshots.
        hard: OSWorld-Hard mode: no FAIL replacement at the step limit.
        config: Every other setting (see ``EnvConfig``);
            the keyword arguments above override its fields.
        render_mode: ``"rgb_array"`` or None.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}

    def __init__(
        self,
        provider: str | ProviderConfig | Provider | None = "local",
        tasks: str | Path | Sequence[Mapping[str, Any]] | TaskSet = DEFAULT_SUITE,
        action_format: str = "uitars",
        max_steps: int = DEFAULT_MAX_STEPS,
        screen_size: tuple[int, int] = (1920, 1080),
        hard: bool = False,
        config: EnvConfig | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        base = config or EnvConfig()
        max_steps = resolve_step_limit(max_steps, registration.time_limit_of_make())
        self.config = base.replace(
            action_format=action_format,
            max_steps=max_steps,
            screen_size=tuple(screen_size),
            hard=hard,
            **overrides,
        )
        self.render_mode = render_mode
        self.tasks = tasks if isinstance(tasks, TaskSet) else load_tasks(tasks)
        if not len(self.tasks):
            raise ValueError(f"no tasks in {tasks!r}")
        self.provider = make_provider(
            provider, screen_size=self.config.screen_size, tasks=self.tasks
        )
        self.evaluator = Evaluator(
            mode=self.config.evaluation, reference=self.config.evaluator_reference
        )
        self.cache = (
            AssetCache(Path(self.config.cache_dir), offline=self.config.offline)
            if (self.config.cache_dir)
            else AssetCache.default(offline=self.config.offline)
        )
        width, height = self.config.screen_size
        observation = {
            "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "instruction": TextActionSpace(MAX_INSTRUCTION_CHARS),
            "last_action_error": TextActionSpace(MAX_INSTRUCTION_CHARS),
        }
        if self.config.accessibility_tree:
            observation["accessibility_tree"] = TextActionSpace(MAX_A11Y_CHARS)
        self.observation_space = spaces.Dict(observation)
        self.action_space = (
            StructuredActionSpace(screen_size=self.config.screen_size)
            if self.config.action_format == "structured"
            # Samples are valid actions in the env's dialect (written for its parser options),
            # so ``env.action_space.sample()`` drives the desktop instead of failing to parse.
            else TextActionSpace(
                dialect=self.config.action_format,
                screen_size=self.config.screen_size,
                dialect_options=dict(self.config.dialect_options),
            )
        )
        self._desktop: Desktop | None = None
        self._healthy = False
        self._task: Task | None = None
        self._step = 0
        self._episode_over = True
        self._last_obs: dict[str, Any] | None = None
        # How the last observation's settle wait ended (merged into reset's and step's info).
        self._settle_report: dict[str, Any] = {"settle_end": None, "settle_pending": ()}
        self.restarts = 0
        # This env's folder for files the evaluator fetched (made at the first evaluation),
        # deleted on close, garbage collection or exit; after a SIGKILL by the next env or
        # provider start, or by a local desktop's watchdog (it records its owner).
        self._eval_dir: Path | None = None
        self._eval_dir_finalizer: weakref.finalize | None = None
        processes.remove_dead_folders(prefix=EVAL_FOLDER_PREFIX)

    @property
    def spec(self) -> EnvSpec | None:
        """The spec ``gym.make`` built the env from, with the env's own step limit.

        ``gym.make`` records ``max_episode_steps=None`` (it keeps the limit in its wrapper); the
        env reports the limit it scores at, so runners reading ``spec.max_episode_steps`` see
        the episode's real length, and ``gym.make(env.spec)`` builds the same env.
        """
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        if value is not None and value.max_episode_steps is None:
            value = dataclasses.replace(value, max_episode_steps=self.config.max_steps)
        self.__dict__["_spec"] = value

    @property
    def desktop(self) -> Desktop | None:
        """The desktop the env drives now (it changes when a fault makes the env relaunch it).

        None before the first reset, after close, or while a broken one awaits its relaunch.
        """
        return self._desktop

    # --- Gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on ``options["task_id"]`` or a task sampled with the env's RNG."""
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(
                f"reset options must be a mapping such as {{'task_id': ...}}, "
                f"got {type(options).__name__}"
            )
        super().reset(seed=seed)
        task = self._choose_task(options or {})
        lacking = self.evaluator.missing(task.evaluator)
        if lacking:
            raise EvaluatorError(
                f"task {task.id} cannot be scored here: missing {', '.join(lacking)}"
            )
        # Before the desktop starts: a library the task's setup, getters or metrics import
        # lazily (openpyxl for a Calc task), or pyautogui for its own commands on a desktop
        # running this Python, would otherwise end the episode unscored or wrongly scored.
        check_tasks([task], self.evaluator, guest_python=runs_this_python(self.provider))
        timings: dict[str, float] = {}
        warnings = self._prepare_desktop(task, timings)
        self._task, self._step, self._episode_over = task, 0, False
        # Apps just started by the setup may pause between drawing phases: a longer quiet
        # period for the first observation, so the agent's first keys are not lost.
        launched = any(step.type in LAUNCHING_STEPS for step in task.config)
        obs = self._observe("", timings, reset=True, launched=launched)
        info = self._info(timings=timings, setup_warnings=warnings, **self._settle_report)
        return obs, info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Run one step: parse, apply the step-limit rule, act, observe, and score at the end."""
        if self._task is None or self._episode_over:
            raise gym.error.ResetNeeded(
                "call reset() before step(): no episode is running (none started yet, the "
                "last one ended, or the env was closed)"
            )
        self._step += 1
        timings: dict[str, float] = {}
        actions, parse_error, model = self._parse(action)
        plan = plan_step(
            actions, step=self._step, max_steps=self.config.max_steps, hard=self.config.hard
        )
        terminal = terminal_kind(plan.actions)
        terminated, truncated = episode_end(
            terminal=terminal,
            last_step=plan.last_step,
            parse_error=parse_error is not None,
            parse_error_ends=self.config.parse_error_ends_episode,
            fail_replaced=plan.fail_replaced,
        )
        info = self._info(
            timings=timings,
            parse_error=parse_error,
            fail_replaced=plan.fail_replaced,
            actions=[a.kind for a in plan.actions],
            **model,
        )
        try:
            info["action_error"] = self._act(plan.actions, timings)
            error = parse_error or info["action_error"] or ""
            obs = self._observe(error, timings)
            info.update(self._settle_report)
            reward = 0.0
            if terminated or truncated:
                reward = self._score(terminal == "fail", info, timings)
        except _INFRA_ERRORS as e:
            return self._infra_fault(e, info)
        self._episode_over = terminated or truncated
        return obs, reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        """The last observed screenshot (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array" or self._last_obs is None:
            return None
        return np.array(self._last_obs["screenshot"], copy=True)

    def close(self) -> None:
        """Stop the desktop. Safe to call more than once."""
        if self._desktop is not None:
            self._desktop.close()
            self._desktop = None
        if self._eval_dir_finalizer is not None:
            self._eval_dir_finalizer()
            self._eval_dir, self._eval_dir_finalizer = None, None
        self._healthy = False
        self._task = None  # a step after close() asks for a reset instead of failing inside
        super().close()

    # --- reset helpers ---------------------------------------------------------------------

    def _choose_task(self, options: Mapping[str, Any]) -> Task:
        task_id = options.get("task_id")
        if task_id is not None:
            return self.tasks[str(task_id)]
        return self.tasks.sample(self.np_random)

    def _prepare_desktop(self, task: Task, timings: dict[str, float]) -> list[str]:
        """Launch or reset the desktop and run the task's setup; relaunch on faults (bounded)."""
        last_error: Exception | None = None
        for attempt in range(self.config.restart_attempts + 1):
            try:
                self._timed(timings, "desktop", self._fresh_desktop)
                report = self._timed(timings, "setup", self._interpreter(task).run, task.config)
                assert self._desktop is not None
                self._desktop.quick_check()  # a part that died during the setup: relaunch
                return [*report.warnings, *self._network_warnings(task)]
            except _INFRA_ERRORS as e:
                last_error = e
                logger.warning("reset attempt %d for %s failed: %s", attempt + 1, task.id, e)
                self._discard_desktop()
        raise TooManyRestartsError(
            f"could not prepare a desktop for task {task.id} after "
            f"{self.config.restart_attempts + 1} attempts: {last_error}"
        ) from last_error

    def _network_warnings(self, task: Task) -> list[str]:
        """Why ``task`` may not be scorable on this desktop's network (empty when it is).

        A local desktop's private network may have no internet (``internet=False``, or no
        slirp4netns here): a task that loads live pages would end in a zero that says nothing,
        so the reset's ``setup_warnings`` say it.
        """
        if not getattr(self._desktop, "private_network", False):
            return []
        if getattr(self._desktop, "internet", False):
            return []
        live = task_requirements(task).live_web
        if not live:
            return []
        message = (
            f"{task.id} needs the live web ({live[0]}), which this desktop's private network "
            "does not reach: install slirp4netns and iptables (internet=True, the default), "
            "or use the provider's network='host'"
        )
        logger.warning("%s", message)
        return [message]

    def _fresh_desktop(self) -> None:
        if self._desktop is not None and self._healthy:
            self._desktop.reset()
        else:
            self._discard_desktop()
            self._desktop = self.provider.launch()
            self.restarts += 1
        self._healthy = True

    def _discard_desktop(self) -> None:
        if self._desktop is not None:
            try:
                self._desktop.close()
            except OSWorldGymError as e:
                logger.warning("closing a broken desktop failed: %s", e)
        self._desktop, self._healthy = None, False

    def _interpreter(self, task: Task) -> SetupInterpreter:
        assert self._desktop is not None
        return SetupInterpreter(
            SetupContext(
                client=self._desktop.client,
                task_id=task.id,
                cache=self.cache,
                task_dir=task.task_dir,
                screen_size=self.config.screen_size,
                client_password=self.config.client_password,
                open_timeout=self.config.open_file_timeout,
                services=self._desktop.service_urls,
            )
        )

    # --- step helpers ----------------------------------------------------------------------

    def _parse(self, action: Any) -> tuple[list[Action], str | None, dict[str, Any]]:
        fmt = self.config.action_format
        if isinstance(action, Action):
            action = [action]
        if fmt == "structured" or not isinstance(action, str):
            # An OSWorld action dict ({"action_type": "FAIL"}, computer_13's form) counts in any
            # action format, as OSWorld's DesktopEnv.step takes it since 2026.04.
            dialect = "computer_13" if _is_computer_13_dicts(action) else "structured"
            result = parse_action(action, dialect=dialect, screen_size=self.config.screen_size)
        else:
            result = parse_action(
                action,
                dialect=fmt,
                screen_size=self.config.screen_size,
                **dict(self.config.dialect_options),
            )
        model = {"thought": result.thought} if getattr(result, "thought", None) else {}
        return list(result.actions), result.error, model

    def _act(self, actions: Sequence[Action], timings: dict[str, float]) -> str | None:
        """Run the actions; return why the guest refused them (an action error), if it did."""
        assert self._desktop is not None
        start = time.perf_counter()
        try:
            wire = to_wire_actions(actions)
            if wire:
                self._desktop.client.actions(wire)
        except GuestHTTPError as e:
            if not 400 <= e.status < 500 or e.status == 401:
                raise
            return f"action not performed: {e}"
        except ActionError as e:
            return f"action not performed: {e}"
        finally:
            timings["action"] = time.perf_counter() - start
        for action in actions:
            if action.kind == "wait":
                seconds = getattr(action, "seconds", None) or self.config.wait_seconds
                time.sleep(min(float(seconds), self.config.max_wait_seconds))  # agent asked
        return None

    def _observe(
        self,
        error: str,
        timings: dict[str, float],
        reset: bool = False,
        launched: bool = False,
    ) -> dict[str, Any]:
        """Screenshot (after the screen settles), instruction, last error, optional a11y tree."""
        assert self._desktop is not None
        start = time.perf_counter()
        # The window manager or session bus may die without failing the screenshot: the
        # episode would go on on a broken desktop. A poll of process handles, no round trip.
        self._desktop.quick_check()
        client = self._desktop.client
        mode = self.config.settle_mode
        if mode == "events" and "screenshot.settle_mode" not in client.info().capabilities:
            mode = "poll"  # OSWorld's own guest, or an image older than the events mode
        take = functools.partial(
            client.screenshot,
            format=self.config.frame_format,
            quality=self.config.frame_quality,
            settle=self.config.settle,
            settle_timeout=self.config.settle_timeout,
            settle_quiet=self.config.quiet(mode, reset=reset, launched=launched),
            settle_mode=mode,
            settle_launch_timeout=self.config.settle_launch_timeout if mode == "events" else None,
        )
        shot = take()
        if shot.faults:
            # What the guest sees of the session (any provider: a container's or VM's window
            # manager is out of reach of quick_check()). A provider that restarts session
            # parts the desktop's own programs stopped does it in its check: once more, then.
            self._desktop.quick_check()
            shot = take()
        if shot.faults:
            raise DesktopDiedError(shot.faults[0], None, "the guest saw it stop")
        timings["settle"] = shot.settle_seconds
        # Not in timings, which hold seconds only: what ended the wait, and what was pending.
        self._settle_report = {
            "settle_end": shot.settle_end,
            "settle_pending": shot.settle_pending,
        }
        tree = self._accessibility_tree() if self.config.accessibility_tree else None
        obs = self._make_obs(_fit(shot.to_array(), self.config.screen_size), error, tree)
        timings["observe"] = time.perf_counter() - start
        self._last_obs = obs
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in obs.items()}

    def _score(
        self, last_action_fail: bool, info: dict[str, Any], timings: dict[str, float]
    ) -> float:
        """Evaluate the episode; return the last step's reward.

        An episode that cannot be scored gets no score, never a silent 0: a ``postconfig`` step
        that failed (``TaskSetupError``), an evaluator that cannot run
        (``EvaluatorError``), or a library a metric or getter needs that is not installed
        (``DependencyNotInstalled``, whose message names the ``pip install`` command).
        Then ``info["score"]`` is None and ``info["evaluation_error"]`` says why, and the reward
        is 0.0 because Gymnasium's ``step`` returns a float: callers that learn from rewards
        should drop such episodes (the pool's trajectories carry ``score=None``).

        The agent's own faults still score 0 as in OSWorld (a missing or unreadable output file
        makes its check 0), and a desktop that stops answering while being scored raises
        ``GuestError`` to ``step``: an infrastructure fault, not an evaluation error.
        """
        try:
            result = self._timed(timings, "evaluate", self._evaluate, last_action_fail)
        except _UNSCORABLE as e:
            logger.warning("%s cannot be scored: %s: %s", info["task_id"], type(e).__name__, e)
            info["evaluation_error"] = f"{type(e).__name__}: {e}"
            info["score"] = None
            return 0.0
        info["evaluation"] = result
        info["score"] = result.score
        return result.score

    def _accessibility_tree(self) -> str:
        """OSWorld's XML tree, or "" when the desktop cannot provide one (logged)."""
        assert self._desktop is not None
        try:
            return self._desktop.client.accessibility_tree()[:MAX_A11Y_CHARS]
        except GuestHTTPError as e:
            if e.status != 503:
                raise
            logger.warning("no accessibility tree: %s", e)
            return ""

    def _evaluate(self, last_action_fail: bool) -> EvaluationResult:
        assert self._desktop is not None and self._task is not None
        task = self._task
        ctx = EvalContext(
            client=self._desktop.client,
            task_id=task.id,
            cache=self.cache,
            scratch=self._fresh_eval_dir(),
            services=self._desktop.service_urls,
            task_dir=task.task_dir,
        )
        return self.evaluator.evaluate(
            task.evaluator,
            ctx,
            last_action_fail=last_action_fail,
            run_postconfig=lambda steps: self._interpreter(task).run(steps, phase="postconfig"),
        )

    def _fresh_eval_dir(self) -> Path:
        """This env's own folder for files fetched from the desktop, emptied per evaluation.

        Envs scoring the same task at once must not share it (they would read each other's
        files); the last evaluation's files stay for inspection until the next one or close.
        The files go in a subfolder: the top holds the folder's ownership record.
        """
        if self._eval_dir is None:
            self._eval_dir = processes.make_owned_folder(EVAL_FOLDER_PREFIX)
            self._eval_dir_finalizer = weakref.finalize(self, processes.remove_tree, self._eval_dir)
        scratch = self._eval_dir / "files"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(mode=0o700)
        return scratch

    def _infra_fault(self, error: Exception, info: dict[str, Any]) -> tuple[Any, ...]:
        logger.warning(
            "infrastructure fault in %s: %s", self._task.id if self._task else "?", error
        )
        self._healthy = False
        self._episode_over = True
        info["infra_error"] = f"{type(error).__name__}: {error}"
        error_text = info["infra_error"][:MAX_INSTRUCTION_CHARS]
        last = self._last_obs
        if last is None:
            width, height = self.config.screen_size
            frame = np.zeros((height, width, 3), np.uint8)
            obs = self._make_obs(frame, error_text, "" if self.config.accessibility_tree else None)
        else:
            obs = self._make_obs(
                last["screenshot"].copy(), error_text, last.get("accessibility_tree")
            )
        return obs, 0.0, False, True, info

    def _make_obs(self, screenshot: np.ndarray, error: str, tree: str | None) -> dict[str, Any]:
        """The observation dict of the declared space (``tree`` only when it is observed)."""
        obs: dict[str, Any] = {
            "screenshot": screenshot,
            "instruction": self._task.instruction if self._task else "",
            "last_action_error": error,
        }
        if tree is not None:
            obs["accessibility_tree"] = tree
        return obs

    def _info(self, *, timings: dict[str, float], **extra: Any) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self._task.id if self._task else None,
            "step": self._step,
            "parse_error": None,
            "infra_error": None,
            "fail_replaced": False,
            "evaluation_mode": self.config.evaluation,  # "osworld" or "fixed" metrics
            # whose OSWorld evaluator code the scores follow ("osworld-2026.04", ...)
            "evaluator_reference": self.config.evaluator_reference,
        }
        info.update(extra)
        info["timings"] = Timings(timings)  # a live view: phases still being timed show up
        return info

    @staticmethod
    def _timed(
        timings: dict[str, float],
        phase: str,
        fn: Callable[_P, _R],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _R:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - start


def _fit(frame: np.ndarray, screen_size: tuple[int, int]) -> np.ndarray:
    """Resize a frame to the declared observation size when a desktop's screen differs."""
    width, height = screen_size
    if frame.shape[:2] == (height, width):
        return np.ascontiguousarray(frame, dtype=np.uint8)
    from PIL import Image

    return np.asarray(Image.fromarray(frame).resize((width, height)), dtype=np.uint8)
