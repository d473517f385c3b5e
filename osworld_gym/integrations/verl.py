"""verl adapter: OSWorld desktops as a verl agent loop (``pip install 'osworld-gym[verl]'``).

verl (0.9.1 and later) rolls out every dataset row through an *agent loop*: an
``AgentLoopBase`` subclass, instantiated per trajectory inside an ``AgentLoopWorker``, whose
``async run(sampling_params, **row)`` returns one ``AgentLoopOutput``. This module ships
``OSWorldAgentLoop``, registered as ``osworld_agent``, which plays one desktop episode
with the UI-TARS-1.5 prompt as ARPO sends it:

    system     "Your are a helpful assistant."
    user       the computer-use prompt with the task's instruction
    user       screenshot 0                                         } prompt_ids
    assistant  response 0            (sampled, response_mask 1)    }
    user       screenshot 1          (response_mask 0)             } response_ids
    assistant  response 1            (sampled, response_mask 1)    }
    ...                              until the env ends the episode

Tokens are built incrementally with verl's own continuous-token builder, so the sampled ids
stay exactly as the server produced them (earlier responses are *not* re-rendered with
``add_box_tokens()`` as ARPO's text history does: the trained
tokens must be the sampled ones). Each screenshot is smart-resized with the bounds the env's
``uitars`` parser maps coordinates back with, appended to ``multi_modal_data["images"]``, and
rendered through the processor, so every image has exactly one placeholder span of the right
length; a screenshot that would not fit in ``response_length`` ends the episode *before* it is
added, never cut in half (the "image features and image tokens do not match" class of bugs).

Desktops come from one ``DesktopLeases`` per worker
process (``DesktopLeases.shared()``): launched once, reset per episode, lent one trajectory at
a time. Give each worker about ``ceil(train_batch_size * rollout.n / agent.num_workers)``
desktops (``desk_size``) so no trajectory waits for one.

Settings come from the agent-loop YAML (``actor_rollout_ref.rollout.agent.agent_loop_config_path``)
or keyword arguments; see ``OSWorldLoopConfig``::

    - name: osworld_agent
      _target_: osworld_gym.integrations.verl.OSWorldAgentLoop
      env: {tasks: ui-basics, screen_size: [336, 224]}
      desk_size: 8

Use that YAML route (``agent_loop_config_path``): verl's workers import ``_target_``, which
registers the loop; ``@register("osworld_agent")`` alone only registers it in processes that
import this module. ``rollout.agent.default_agent_loop=osworld_agent`` (or each row's
``agent_name``) selects it.

Rewards and faults:

* ``reward_score`` is the env's score of the episode (``info["score"]``; an episode the env
  could not score counts 0 and says why in ``extra_fields["evaluation_error"]``). The env is the
  authority on the step limit and OSWorld's FAIL replacement.
* An infrastructure fault (a desktop that died mid-episode, a reset that produced no
  observation) is not the policy's doing: the episode is re-run from scratch on a freshly
  acquired lease, with new generations, up to ``max_attempts`` times. If every attempt fails,
  the last attempt's tokens are returned with ``reward_score=0.0``,
  ``extra_fields["infra_error"]`` set and, by default (``mask_infra_failures``), an all-zero
  ``response_mask``: verl has no per-sample discard, so the sample still enters its group's
  statistics with 0 but carries no loss of its own. ``extra_fields["infra_errors"]`` lists the
  faults of every failed attempt, also when a retry succeeded.
* An episode cut by ``response_length`` (the model wrote more than budgeted) scores 0 with
  ``extra_fields["cut_by_length"]``.

At construction the loop measures, with the model's own processor, how many tokens the prompt
and each screenshot take, and raises a ``ValueError`` naming the settings to change when
``rollout.prompt_length`` / ``rollout.response_length`` (``data.max_prompt_length`` /
``data.max_response_length``), ``rollout.max_model_len`` or ``rollout.limit_images`` cannot
hold ``max_steps`` screenshots (``measure_budget()``).

``make_verl_dataset()`` writes the parquet rows (``prompt``, ``agent_name``,
``data_source``, ``extra_info.task_id``) for a task list.

verl pins ``transformers<5.11``, which clashes with osworld-gym's ``train`` extra: install verl
into its own environment.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osworld_gym.actions import coords
from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.integrations.lease import DesktopLeases, Lease, LeaseResetError
from osworld_gym.integrations.render import screenshot_image
from osworld_gym.policies.uitars.images import ScreenshotEncoder
from osworld_gym.policies.uitars.prompt import (
    COMPUTER_USE_TEMPLATE,
    SYSTEM_TEXT,
    computer_use_prompt,
)
from osworld_gym.pool.config import PoolConfig
from osworld_gym.pool.results import EnvResult
from osworld_gym.tasks import TaskSet, TaskSource, load_tasks

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

try:
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        register,
    )
except ImportError as _error:  # verl missing, or one of the packages of its verl-core extra
    raise DependencyNotInstalled(
        f"osworld_gym.integrations.verl needs verl's agent loop ({_error}). Install it with "
        "pip install 'osworld-gym[verl]', in an environment of its own: verl pins "
        "transformers<5.11, which clashes with osworld-gym's 'train' extra."
    ) from _error

logger = logging.getLogger(__name__)

__all__ = [
    "AGENT_NAME",
    "OSWorldAgentLoop",
    "OSWorldLoopConfig",
    "SequenceBudget",
    "check_budget",
    "make_verl_dataset",
    "measure_budget",
]

AGENT_NAME = "osworld_agent"
"""The name the loop is registered under: a dataset row's ``agent_name``."""

_DEFAULT_SCREEN = (1920, 1080)  # OSWorldEnv's default screen_size
_DEFAULT_MAX_STEPS = 15  # OSWorldEnv's default max_steps


# --- settings ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OSWorldLoopConfig:
    """Settings of ``OSWorldAgentLoop`` (the keys of its agent-loop YAML entry).

    Attributes:
        env: Keyword arguments of the env (``OSWorldEnv``): ``tasks``, ``provider``,
            ``screen_size``, ``max_steps``, ``hard``, ... The action format is always
            ``"uitars"``; ``dialect_options`` get this config's image bounds so the parser maps
            the model's coordinates back as the screenshots were resized.
        desk_size: Desktops per worker process: trajectories of one worker that can run at once.
        backend: Where the desk's envs run: ``"thread"`` (this process) or ``"ray"``.
        pool: ``PoolConfig`` fields of the desk's pool (timeouts,
            launch concurrency, ...).
        max_attempts: Runs of an episode at most: an infrastructure fault re-runs it on a fresh
            lease until this many attempts have failed.
        acquire_timeout: Seconds a trajectory waits for a free desktop (None: no limit).
        min_pixels: Smallest pixel count of a screenshot as the model sees it.
        max_pixels: Largest pixel count of a screenshot as the model sees it (UI-TARS / ARPO:
            2116800); lower it to fit more steps into the context.
        factor: Screenshot sides become multiples of this (Qwen2.5-VL: 28).
        max_new_tokens: Cap on the tokens sampled per response (None: whatever is left of
            ``response_length``; a lower ``max_tokens`` in the sampling params also holds).
        tokens_per_response: Tokens budgeted per response by the start-up length check.
        check_lengths: Run the start-up length check.
        mask_infra_failures: Zero the ``response_mask`` of an episode whose every attempt hit
            an infrastructure fault (it is returned with reward 0).
        system_text: The system turn.
        prompt_template: The first user turn, with an ``{instruction}`` field.
    """

    env: Mapping[str, Any] = field(default_factory=dict)
    desk_size: int = 4
    backend: str = "thread"
    pool: Mapping[str, Any] = field(default_factory=dict)
    max_attempts: int = 3
    acquire_timeout: float | None = None
    min_pixels: int = coords.MIN_PIXELS
    max_pixels: int = coords.MAX_PIXELS
    factor: int = coords.IMAGE_FACTOR
    max_new_tokens: int | None = None
    tokens_per_response: int = 128
    check_lengths: bool = True
    mask_infra_failures: bool = True
    system_text: str = SYSTEM_TEXT
    prompt_template: str = COMPUTER_USE_TEMPLATE

    def __post_init__(self) -> None:
        if self.desk_size < 1 or self.max_attempts < 1 or self.tokens_per_response < 1:
            raise ValueError("desk_size, max_attempts and tokens_per_response must be >= 1")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1 or None, got {self.max_new_tokens}")
        if self.backend not in ("thread", "ray"):
            raise ValueError(f"backend must be 'thread' or 'ray', got {self.backend!r}")
        if "{instruction}" not in self.prompt_template:
            raise ValueError("prompt_template needs an {instruction} field")
        action_format = self.env.get("action_format", "uitars")
        if action_format != "uitars":
            raise ValueError(
                f"the osworld_agent loop prompts UI-TARS and needs env action_format 'uitars', "
                f"got {action_format!r}"
            )
        ScreenshotEncoder(  # fails early on inconsistent image bounds
            min_pixels=self.min_pixels, max_pixels=self.max_pixels, factor=self.factor
        )
        self.env_kwargs()  # fails early on dialect options that contradict the image bounds

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> OSWorldLoopConfig:
        """Build from a mapping (a YAML entry; OmegaConf containers are converted).

        Raises:
            TypeError: A key names no setting.
        """
        plain = {key: _plain(value) for key, value in values.items()}
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(plain) - names)
        if unknown:
            raise TypeError(f"unknown osworld_agent setting(s) {unknown}; known: {sorted(names)}")
        return cls(**plain)

    @property
    def screen_size(self) -> tuple[int, int]:
        """The env's ``(width, height)``."""
        width, height = self.env.get("screen_size", _DEFAULT_SCREEN)
        return int(width), int(height)

    @property
    def max_steps(self) -> int:
        """The env's step limit."""
        return int(self.env.get("max_steps", _DEFAULT_MAX_STEPS))

    def encoder(self) -> ScreenshotEncoder:
        """The screenshot resizer matching the env's ``uitars`` parser."""
        return ScreenshotEncoder(
            min_pixels=self.min_pixels, max_pixels=self.max_pixels, factor=self.factor
        )

    def env_kwargs(self) -> dict[str, Any]:
        """The env's keyword arguments, with the parser's options matching the screenshots.

        Raises:
            ValueError: ``env.dialect_options`` sets resize bounds other than this config's.
        """
        kwargs: dict[str, Any] = {"action_format": "uitars", **self.env}
        if "screen_size" in kwargs:
            kwargs["screen_size"] = tuple(int(n) for n in kwargs["screen_size"])
        dialect = dict(kwargs.get("dialect_options") or {})
        if dialect.get("coordinates", "resized") == "resized":
            # The model answers in pixels of the image it was shown; the parser maps them back
            # only with the bounds the image was resized with.
            ours = {"factor": self.factor, "min_pixels": self.min_pixels}
            ours["max_pixels"] = self.max_pixels
            for key, value in ours.items():
                if key in dialect and dialect[key] != value:
                    raise ValueError(
                        f"env.dialect_options.{key}={dialect[key]} contradicts the loop's "
                        f"{key}={value}: set {key} on the agent loop, which passes it on"
                    )
            dialect = {"coordinates": "resized", **dialect, **ours}
        kwargs["dialect_options"] = dialect
        return kwargs


def _plain(value: Any) -> Any:
    """An OmegaConf container as plain dicts and lists (hydra passes YAML sub-trees as such)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - verl depends on omegaconf
        return value
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


# --- the length check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SequenceBudget:
    """Token counts of one episode at the configured sizes, measured with the model's processor.

    Attributes:
        image_size: ``(width, height)`` of a screenshot as the model sees it.
        image_tokens: Placeholder tokens of one screenshot.
        prompt_tokens: The first prompt (system, computer-use prompt with an empty instruction,
            screenshot 0, generation prompt).
        screenshot_turn_tokens: One later screenshot's user turn, with the turn boundary and
            the next generation prompt.
        max_steps: The env's step limit.
        tokens_per_response: Tokens budgeted per response.
    """

    image_size: tuple[int, int]
    image_tokens: int
    prompt_tokens: int
    screenshot_turn_tokens: int
    max_steps: int
    tokens_per_response: int

    @property
    def response_tokens(self) -> int:
        """A full episode's response side: the later screenshots and every response."""
        return (
            self.max_steps - 1
        ) * self.screenshot_turn_tokens + self.max_steps * self.tokens_per_response


def _image_token_id(tokenizer: Any, processor: Any) -> int | None:
    token_id = getattr(processor, "image_token_id", None)
    if token_id is None:
        token = getattr(processor, "image_token", None)
        token_id = tokenizer.convert_tokens_to_ids(token) if token else None
    return None if token_id is None else int(token_id)


def _user_image(image: PILImage) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image", "image": image}]}


def _stop_token_ids(tokenizer: Any) -> set[int]:
    ids = {getattr(tokenizer, "eos_token_id", None), getattr(tokenizer, "pad_token_id", None)}
    return {int(i) for i in ids if i is not None}


def measure_budget(
    builder: Any,
    tokenizer: Any,
    processor: Any,
    config: OSWorldLoopConfig,
) -> SequenceBudget:
    """Measure the prompt and a screenshot turn with verl's continuous-token builder.

    Args:
        builder: The agent loop's continuous-token builder (a VL one: it renders images
            through the processor).
        tokenizer: The model's tokenizer.
        processor: The model's processor.
        config: The loop's settings (screen size, image bounds, step limit).

    Raises:
        ValueError: The processor would show the model a screenshot of another size than the
            one the env's parser maps coordinates from.
    """
    from PIL import Image

    width, height = config.encoder().model_size(*config.screen_size)
    blank = Image.new("RGB", (width, height))
    messages = [
        {"role": "system", "content": config.system_text},
        {"role": "user", "content": computer_use_prompt("", config.prompt_template)},
        _user_image(blank),
    ]
    prompt = list(builder.build_initial_tokens(messages, images=[blank]))
    answered = [*messages, {"role": "assistant", "content": "Action: wait()"}]
    stop = sorted(_stop_token_ids(tokenizer))
    runtime = prompt + stop[:1]  # a response that ended with its stop token
    merged = builder.merge_context_tokens(answered, [*answered, _user_image(blank)], runtime)
    turn = len(merged.token_ids) - len(runtime) + merged.removed_prefix_token_count
    image_token = _image_token_id(tokenizer, processor)
    image_tokens = prompt.count(image_token) if image_token is not None else 0
    image_processor = getattr(processor, "image_processor", None)
    patch = getattr(image_processor, "patch_size", None)
    merge = getattr(image_processor, "merge_size", None)
    if image_token is not None and patch and merge:
        side = int(patch) * int(merge)
        expected = (width // side) * (height // side)
        if width % side == 0 and height % side == 0 and image_tokens != expected:
            raise ValueError(
                f"the processor turns a {width}x{height} screenshot into {image_tokens} image "
                f"tokens, not {expected}: it resizes screenshots (its min/max pixels or "
                "data.mm_processor_kwargs), so the model would answer in pixels of another "
                "image than the one the env's parser maps back. Make the agent loop's "
                "min_pixels/max_pixels fall within the processor's bounds."
            )
    return SequenceBudget(
        image_size=(width, height),
        image_tokens=image_tokens,
        prompt_tokens=len(prompt),
        screenshot_turn_tokens=turn,
        max_steps=config.max_steps,
        tokens_per_response=config.tokens_per_response,
    )


def check_budget(
    budget: SequenceBudget,
    *,
    prompt_length: int,
    response_length: int,
    max_model_len: int | None = None,
    limit_images: int | None = None,
) -> None:
    """Raise when verl's configured lengths cannot hold an episode of ``max_steps`` screenshots.

    Raises:
        ValueError: Naming the setting to raise (or the env settings to lower).
    """
    shrink = (
        "or lower the env's max_steps / screen_size or the agent loop's max_pixels "
        f"(a screenshot is {budget.image_size[0]}x{budget.image_size[1]} for the model, "
        f"{budget.image_tokens} image tokens)"
    )
    problems = []
    if prompt_length < budget.prompt_tokens:
        problems.append(
            f"actor_rollout_ref.rollout.prompt_length (data.max_prompt_length) is "
            f"{prompt_length}, but the first prompt with its screenshot takes "
            f"{budget.prompt_tokens} tokens before the instruction: raise it, {shrink}"
        )
    if response_length < budget.response_tokens:
        problems.append(
            f"actor_rollout_ref.rollout.response_length (data.max_response_length) is "
            f"{response_length}, but a {budget.max_steps}-step episode takes "
            f"{budget.response_tokens} tokens ({budget.max_steps - 1} more screenshots of "
            f"{budget.screenshot_turn_tokens} tokens each, {budget.max_steps} responses of "
            f"{budget.tokens_per_response} (the loop's tokens_per_response)): raise it, {shrink}"
        )
    total = budget.prompt_tokens + budget.response_tokens
    if max_model_len is not None and max_model_len < total:
        problems.append(
            f"actor_rollout_ref.rollout.max_model_len is {max_model_len}, but a full episode "
            f"takes {total} tokens: raise it, {shrink}"
        )
    if limit_images is not None and limit_images < budget.max_steps:
        problems.append(
            f"actor_rollout_ref.rollout.limit_images is {limit_images}, but an episode shows "
            f"up to {budget.max_steps} screenshots in one prompt: set it to {budget.max_steps}"
        )
    if problems:
        raise ValueError("osworld_agent: " + "; ".join(problems))


# Measured once per worker process and setting: verl builds a new loop per trajectory.
_BUDGETS: dict[tuple[Any, ...], SequenceBudget] = {}
_BUDGETS_LOCK = threading.Lock()


# --- one episode ---------------------------------------------------------------------------------


class _AttemptFailed(Exception):
    """An infrastructure fault ended an attempt (the episode is re-run)."""

    def __init__(self, message: str, episode: _Episode | None) -> None:
        super().__init__(message)
        self.episode = episode


@dataclass
class _Episode:
    """The token stream and bookkeeping of one attempt at an episode."""

    task_id: str
    prompt_ids: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)  # prompt + response so far
    response_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    images: list[Any] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    assistant_turns: int = 0
    later_screenshots: int = 0
    sampled_tokens: int = 0
    steps: int = 0
    parse_errors: int = 0
    fail_replaced: bool = False
    score: float | None = None
    evaluation_error: str | None = None
    infra_error: str | None = None
    cut_by_length: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    server_fields: dict[str, Any] = field(default_factory=dict)

    def add_time(self, key: str, seconds: float) -> None:
        self.timings[key] = self.timings.get(key, 0.0) + seconds

    def add_env_timings(self, info: Mapping[str, Any]) -> None:
        for phase, seconds in dict(info.get("timings") or {}).items():
            self.add_time(f"env/{phase}", float(seconds))

    def record_step(self, result: EnvResult) -> None:
        info = result.info
        self.steps = int(info.get("step") or self.steps + 1)
        self.parse_errors += bool(info.get("parse_error"))
        self.fail_replaced = self.fail_replaced or bool(info.get("fail_replaced"))
        self.add_env_timings(info)
        if result.infra_error:
            self.infra_error = str(result.infra_error)
        elif result.done:
            score = info.get("score", result.reward)
            self.score = None if score is None else float(score)
            self.evaluation_error = info.get("evaluation_error")

    @property
    def response_ids(self) -> list[int]:
        return self.token_ids[len(self.prompt_ids) :]


@register(AGENT_NAME)
class OSWorldAgentLoop(AgentLoopBase):
    """One OSWorld episode per verl trajectory, prompted as UI-TARS-1.5 (see the module doc).

    verl builds it (``hydra.utils.instantiate``) with its trainer config, server manager,
    tokenizer and processor; the keys of the agent-loop YAML entry (or keyword arguments) are
    ``OSWorldLoopConfig`` fields. A dataset row needs ``extra_info.task_id`` (what
    ``make_verl_dataset()`` writes); ``extra_info.seed`` seeds the env's reset.

    ``extra_fields`` of the output (verl copies them into the batch's non-tensor fields):
    ``task_id``; ``steps`` (env steps of the returned attempt); ``parse_errors`` (responses
    the env could not parse); ``fail_replaced`` (the env replaced the last action with FAIL at
    the step limit); ``infra_error`` (None, or the fault of the last attempt when every attempt
    failed); ``infra_errors`` (the faults of all failed attempts); ``attempts``;
    ``cut_by_length``; ``evaluation_error``; ``sampled_tokens`` (= the response mask's sum,
    unless masked for an infrastructure failure); ``timings`` (seconds: ``reset``,
    ``generate``, ``step``, ``tokenize``, ``total`` and the env's own phases as ``env/...``);
    ``reward_extra_info`` (numbers verl logs per data source).

    Attributes:
        osworld: The loop's settings.
        budget: Token counts of an episode at these settings (None with ``check_lengths``
            off).
        current_lease: The lease of the attempt in progress (None between attempts).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = {f.name for f in dataclasses.fields(OSWorldLoopConfig)}
        settings = {key: kwargs.pop(key) for key in list(kwargs) if key in names}
        kwargs.pop("name", None)  # the YAML entry's name, which hydra passes on
        kwargs.pop("tools", None)  # verl's tool list: the desktop is this loop's only tool
        super().__init__(*args, **kwargs)
        self.osworld = OSWorldLoopConfig.from_mapping(settings)
        if self.processor is None or not self.continuous_token_builder.supports_multimodal():
            raise ValueError(
                "osworld_agent needs a vision-language model with its processor (UI-TARS-1.5 / "
                "Qwen2.5-VL): screenshots are images"
            )
        self._encoder = self.osworld.encoder()
        self._stop_ids = _stop_token_ids(self.tokenizer)
        self.response_length = int(self.rollout_config.response_length)
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.current_lease: Lease | None = None
        self.budget = self._checked_budget() if self.osworld.check_lengths else None

    # --- set-up ----------------------------------------------------------------------------

    def _checked_budget(self) -> SequenceBudget:
        rollout = self.rollout_config
        max_model_len = rollout.get("max_model_len", None)
        limit_images = rollout.get("limit_images", None)
        cfg = self.osworld
        key = (
            id(self.tokenizer),
            id(self.processor),
            repr(sorted(self._get_mm_processor_kwargs().items())),
            cfg.screen_size,
            cfg.max_steps,
            cfg.min_pixels,
            cfg.max_pixels,
            cfg.factor,
            cfg.tokens_per_response,
            cfg.system_text,
            cfg.prompt_template,
            self.prompt_length,
            self.response_length,
            max_model_len,
            limit_images,
        )
        with _BUDGETS_LOCK:
            budget = _BUDGETS.get(key)
            if budget is None:
                budget = measure_budget(
                    self.continuous_token_builder, self.tokenizer, self.processor, cfg
                )
                check_budget(
                    budget,
                    prompt_length=self.prompt_length,
                    response_length=self.response_length,
                    max_model_len=None if max_model_len is None else int(max_model_len),
                    limit_images=None if limit_images is None else int(limit_images),
                )
                logger.info("osworld_agent: lengths checked: %s", budget)
                _BUDGETS[key] = budget
        return budget

    def desk(self) -> DesktopLeases:
        """This worker process's desk for the configured env (created on first use)."""
        cfg = self.osworld
        return DesktopLeases.shared(
            cfg.env_kwargs(), cfg.desk_size, config=PoolConfig(**cfg.pool), backend=cfg.backend
        )

    # --- verl's entry point ----------------------------------------------------------------

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play one episode of the row's task and return its tokens, images and reward.

        Args:
            sampling_params: verl's sampling parameters of this trajectory.
            **kwargs: The dataset row (``extra_info`` with ``task_id``, ``raw_prompt``, ...).

        Raises:
            ValueError: The row names no task.
            LeaseResetError: The task could not be started for its own reasons (an unknown id,
                a failing setup step): a configuration error, not retried.
            LeaseError: No desktop could be had (desk closed, every env retired, timeout).
        """
        started = time.perf_counter()
        extra_info = dict(kwargs.get("extra_info") or {})
        task_id = extra_info.get("task_id", kwargs.get("task_id"))
        if task_id is None:
            raise ValueError(
                "osworld_agent: the dataset row has no extra_info.task_id (write the dataset "
                "with osworld_gym.integrations.verl.make_verl_dataset)"
            )
        seed = extra_info.get("seed")
        failures: list[str] = []
        episode: _Episode | None = None
        for attempt in range(1, self.osworld.max_attempts + 1):
            try:
                episode = await self._attempt(str(task_id), seed, sampling_params)
                break
            except _AttemptFailed as fault:
                failures.append(str(fault))
                # Keep the latest attempt that produced tokens, to return if none succeeds.
                episode = fault.episode or episode
                logger.warning(
                    "osworld_agent: task %s, attempt %d of %d: %s",
                    task_id,
                    attempt,
                    self.osworld.max_attempts,
                    fault,
                )
        failed = len(failures) == self.osworld.max_attempts
        if episode is None or not episode.token_ids:
            episode = await self._placeholder(str(task_id), kwargs.get("raw_prompt"))
        if failed:
            episode.infra_error = failures[-1]
        return self._output(episode, failures, failed=failed, elapsed=time.perf_counter() - started)

    # --- an attempt ------------------------------------------------------------------------

    async def _attempt(
        self, task_id: str, seed: int | None, sampling_params: dict[str, Any]
    ) -> _Episode:
        """One run of the episode on a freshly acquired lease.

        Raises:
            _AttemptFailed: An infrastructure fault (a desktop that would not come up or died).
            LeaseResetError: The reset failed for the task's own reasons (not retried).
        """
        lease = await self.desk().aacquire(self.osworld.acquire_timeout)
        self.current_lease = lease
        broken = False
        episode = _Episode(task_id=task_id)
        try:
            started = time.perf_counter()
            try:
                first = await lease.areset(task_id, seed=seed)
            except LeaseResetError as e:
                if not (e.result.infra or e.retired):
                    raise  # the task's own fault (an unknown id, a failing setup): no retry
                # The desk stops the desktop; the next borrower's reset launches a fresh one.
                broken = True
                raise _AttemptFailed(f"reset failed: {e}", None) from e
            episode.add_time("reset", time.perf_counter() - started)
            episode.add_env_timings(first.info)
            await self._play(lease, first, episode, sampling_params)
        finally:
            self.current_lease = None
            lease.release(broken=broken)
        if episode.infra_error is not None:
            raise _AttemptFailed(episode.infra_error, episode)
        return episode

    def _image(self, observation: Mapping[str, Any]) -> PILImage:
        """The screenshot as the model sees it: smart-resized as the ``uitars`` parser assumes."""
        from PIL import Image

        image = screenshot_image(observation["screenshot"])
        size = self._encoder.model_size(*image.size)
        if image.size != size:
            image = image.resize(size, Image.Resampling.BICUBIC)  # as Qwen's processors resize
        return image

    async def _play(
        self,
        lease: Lease,
        first: EnvResult,
        episode: _Episode,
        sampling_params: dict[str, Any],
    ) -> None:
        """Generate and step until the env ends the episode (or the response budget does)."""
        cfg = self.osworld
        observation = first.observation
        image = self._image(observation)
        instruction = str(observation.get("instruction") or "")
        episode.messages = [
            {"role": "system", "content": cfg.system_text},
            {"role": "user", "content": computer_use_prompt(instruction, cfg.prompt_template)},
            _user_image(image),
        ]
        episode.images = [image]
        started = time.perf_counter()
        episode.prompt_ids = list(
            await self.ct_build_initial_tokens(episode.messages, images=episode.images)
        )
        episode.token_ids = list(episode.prompt_ids)
        episode.add_time("tokenize", time.perf_counter() - started)
        request_id = uuid.uuid4().hex  # one sticky session per attempt
        mm_kwargs = self._get_mm_processor_kwargs()
        while True:
            budget = self.response_length - len(episode.response_mask)
            if budget < 1:
                episode.cut_by_length = True
                return
            params = dict(sampling_params)
            limit_key = "max_new_tokens" if "max_new_tokens" in params else "max_tokens"
            limits = [budget, params.get(limit_key), cfg.max_new_tokens]
            params[limit_key] = min(int(n) for n in limits if n is not None)
            started = time.perf_counter()
            output = await self.server_manager.generate(
                request_id,
                prompt_ids=episode.token_ids,
                sampling_params=params,
                image_data=list(episode.images),
                mm_processor_kwargs=mm_kwargs or None,
            )
            episode.add_time("generate", time.perf_counter() - started)
            if not await self._add_response(episode, output):
                return
            started = time.perf_counter()
            result = await lease.astep(episode.messages[-1]["content"])
            episode.add_time("step", time.perf_counter() - started)
            episode.record_step(result)
            if result.done:
                return
            if not await self._add_screenshot(episode, self._image(result.observation)):
                return

    async def _add_response(self, episode: _Episode, output: Any) -> bool:
        """Append sampled tokens (mask 1); False when they overran the response budget."""
        token_ids = [int(t) for t in output.token_ids]
        sampled_logprobs = getattr(output, "log_probs", None)
        if episode.assistant_turns == 0:
            episode.logprobs = [] if sampled_logprobs is not None else None
            episode.server_fields = dict(getattr(output, "extra_fields", None) or {})
        else:
            fields = dict(getattr(output, "extra_fields", None) or {})
            if "max_global_steps" in fields:
                episode.server_fields["max_global_steps"] = fields["max_global_steps"]
        if episode.logprobs is not None and sampled_logprobs is None:
            logger.warning("osworld_agent: the server stopped returning log-probs; using 0.0")
            sampled_logprobs = [0.0] * len(token_ids)
        if episode.logprobs is None:
            sampled_logprobs = None
        started = time.perf_counter()
        merged, mask, logprobs = await self.ct_merge_assistant_token(
            episode.token_ids,
            token_ids,
            episode.response_mask,
            episode.logprobs,
            assistant_logprobs=None if sampled_logprobs is None else list(sampled_logprobs),
        )
        episode.add_time("tokenize", time.perf_counter() - started)
        episode.assistant_turns += 1
        overrun = len(mask) - self.response_length
        if overrun > 0:
            # The server sampled past max_tokens: keep what fits of this last response (no
            # image follows it, so nothing can come apart) and end the episode unscored.
            cut = len(token_ids) - overrun
            episode.token_ids = merged.token_ids[:-overrun]
            episode.response_mask = mask[:-overrun]
            episode.logprobs = None if logprobs is None else logprobs[:-overrun]
            episode.sampled_tokens += max(0, cut)
            episode.cut_by_length = True
            return False
        episode.token_ids, episode.response_mask, episode.logprobs = (
            merged.token_ids,
            mask,
            logprobs,
        )
        episode.sampled_tokens += len(token_ids)
        # The env parses the text; the stop token is the server's, not the model's answer.
        text_ids = list(token_ids)
        while text_ids and text_ids[-1] in self._stop_ids:
            text_ids.pop()
        text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
        episode.messages.append({"role": "assistant", "content": text})
        return True

    async def _add_screenshot(self, episode: _Episode, image: PILImage) -> bool:
        """Append the next screenshot's user turn (mask 0); False when it would not fit."""
        updated = [*episode.messages, _user_image(image)]
        started = time.perf_counter()
        merged, mask, logprobs = await self.ct_merge_context_msg(
            episode.messages,
            updated,
            episode.token_ids,
            episode.response_mask,
            episode.logprobs,
        )
        episode.add_time("tokenize", time.perf_counter() - started)
        if len(mask) >= self.response_length:
            # Never cut through an image: its placeholders must match its features. The episode
            # ends here instead, with no room left to answer anyway.
            episode.cut_by_length = True
            return False
        episode.messages = updated
        episode.images.append(image)
        episode.later_screenshots += 1
        episode.token_ids, episode.response_mask, episode.logprobs = (
            merged.token_ids,
            mask,
            logprobs,
        )
        return True

    async def _placeholder(self, task_id: str, raw_prompt: Any) -> _Episode:
        """A stand-in sample when no attempt produced a screenshot (every reset failed).

        The row's text prompt with a black screenshot, so the sample is shaped like the
        others (one image at least), and a single stop token, masked, as the response.
        """
        from PIL import Image

        size = self._encoder.model_size(*self.osworld.screen_size)
        blank = Image.new("RGB", size)
        messages = [dict(m) for m in (raw_prompt if raw_prompt is not None else [])]
        if not messages:
            messages = [
                {"role": "system", "content": self.osworld.system_text},
                {"role": "user", "content": computer_use_prompt("", self.osworld.prompt_template)},
            ]
        messages.append(_user_image(blank))
        episode = _Episode(task_id=task_id, messages=messages, images=[blank])
        episode.prompt_ids = list(await self.ct_build_initial_tokens(messages, images=[blank]))
        stop = sorted(self._stop_ids)[:1] or [0]
        episode.token_ids = episode.prompt_ids + stop
        episode.response_mask = [0]
        episode.logprobs = [0.0]
        return episode

    # --- the output ------------------------------------------------------------------------

    def _output(
        self, episode: _Episode, failures: list[str], *, failed: bool, elapsed: float
    ) -> AgentLoopOutput:
        cfg = self.osworld
        reward = 0.0 if failed or episode.score is None else float(episode.score)
        mask = list(episode.response_mask)
        if failed and cfg.mask_infra_failures:
            mask = [0] * len(mask)
        timings = {key: round(value, 6) for key, value in episode.timings.items()}
        timings["total"] = round(elapsed, 6)
        extra_fields: dict[str, Any] = {
            **episode.server_fields,
            "task_id": episode.task_id,
            "steps": episode.steps,
            "parse_errors": episode.parse_errors,
            "fail_replaced": episode.fail_replaced,
            "infra_error": episode.infra_error if failed else None,
            "infra_errors": list(failures),
            "attempts": len(failures) + (0 if failed else 1),
            "cut_by_length": episode.cut_by_length,
            "evaluation_error": episode.evaluation_error,
            "sampled_tokens": episode.sampled_tokens,
            "timings": timings,
            # Numbers verl logs per data source (validation metrics); same keys every sample.
            "reward_extra_info": {
                "osworld_steps": float(episode.steps),
                "osworld_parse_errors": float(episode.parse_errors),
                "osworld_fail_replaced": float(episode.fail_replaced),
                "osworld_infra_failed": float(failed),
                "osworld_attempts": float(len(failures) + (0 if failed else 1)),
            },
        }
        env_seconds = sum(
            episode.timings.get(key, 0.0) for key in ("reset", "step")
        )  # fmt: skip
        return AgentLoopOutput(
            prompt_ids=list(episode.prompt_ids),
            response_ids=list(episode.response_ids),
            response_mask=mask,
            response_logprobs=None if episode.logprobs is None else list(episode.logprobs),
            multi_modal_data={"images": list(episode.images)},
            mm_processor_kwargs=self._get_mm_processor_kwargs(),
            reward_score=reward,
            # verl's convention (as its tool loop): the first prompt, every response and every
            # later observation turn; at most 2 x max_steps.
            num_turns=1 + episode.assistant_turns + episode.later_screenshots,
            metrics=AgentLoopMetrics(
                generate_sequences=episode.timings.get("generate", 0.0), tool_calls=env_seconds
            ),
            extra_fields=extra_fields,
        )


# --- the dataset ---------------------------------------------------------------------------------


def make_verl_dataset(
    tasks: TaskSource,
    path: str | os.PathLike[str],
    *,
    task_ids: Sequence[str] | None = None,
    data_source: str = "osworld",
    agent_name: str = AGENT_NAME,
    system_text: str = SYSTEM_TEXT,
    prompt_template: str = COMPUTER_USE_TEMPLATE,
) -> Path:
    """Write verl's parquet rows for a task list, one row per task.

    Each row has ``data_source``, ``agent_name`` (the loop to run), ``prompt`` (the system
    turn and the computer-use prompt with the instruction: what verl's ``RLHFDataset`` reads
    and length-filters; the loop itself builds the prompt from the env's observation),
    ``ability``, ``reward_model`` (``style="env"``: the env scores; ``ground_truth`` is the
    task id, which verl logs) and ``extra_info`` (``index``, ``task_id``, ``domain``,
    ``suite``). Repeats per task are verl's ``rollout.n``.

    Args:
        tasks: What ``osworld_gym.load_tasks()`` takes (a bundled suite name, a folder, an
            index JSON, task dicts) or a ``TaskSet``.
        path: The parquet file to write (folders are created).
        task_ids: Only these tasks, in this order.
        data_source: The rows' ``data_source`` (verl groups validation metrics by it).
        agent_name: The agent loop of every row.
        system_text: The system turn.
        prompt_template: The first user turn, with an ``{instruction}`` field.

    Returns:
        The written file.

    Example:
        >>> make_verl_dataset("ui-basics", "data/ui_basics.parquet")  # doctest: +SKIP
        PosixPath('data/ui_basics.parquet')
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    taskset = tasks if isinstance(tasks, TaskSet) else load_tasks(tasks)
    if task_ids is not None:
        taskset = load_tasks(taskset, ids=list(task_ids))
    suite = tasks if isinstance(tasks, str) else ""
    rows = [
        {
            "data_source": data_source,
            "agent_name": agent_name,
            "prompt": [
                {"role": "system", "content": system_text},
                {"role": "user", "content": computer_use_prompt(task.instruction, prompt_template)},
            ],
            "ability": "computer_use",
            "reward_model": {"style": "env", "ground_truth": task.id},
            "extra_info": {
                "index": index,
                "task_id": task.id,
                "domain": task.domain or "",
                "suite": suite,
            },
        }
        for index, task in enumerate(taskset)
    ]
    if not rows:
        raise ValueError(f"no tasks to write from {tasks!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), target)
    logger.info("wrote %d verl rows to %s", len(rows), target)
    return target
