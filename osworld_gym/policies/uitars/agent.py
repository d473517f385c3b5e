"""The UI-TARS-1.5 agent as ARPO runs it: a stateless pool policy over a rollout engine.

Each call rebuilds every prompt from the request alone (instruction, trajectory so far, current
screenshot), so the agent keeps no per-episode state and any env can be served by any call:

    system    "Your are a helpful assistant."
    user      the computer-use prompt with the instruction
    user      screenshot 0
    assistant response 0   (sampled token ids attached when the step recorded them)
    user      screenshot 1
    ...
    user      screenshot t  (the current observation)

With ``history_images=k`` only the last ``k`` screenshots stay; an older screenshot's user turn
is dropped while every assistant turn is kept (ARPO keeps all 15: ``None``).

Screenshots are smart-resized with the agent's ``min_pixels``/``max_pixels``. The env's
``uitars`` parser must map coordinates back with the same bounds: build the env with
``UITARSAgent.env_kwargs()`` (or pass ``UITARSAgent.dialect_options``) so the two cannot
drift apart.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from osworld_gym.actions import coords
from osworld_gym.policies.conversation import Conversation, ImagePart, TextPart
from osworld_gym.policies.engine import Generation, RolloutEngine, SamplingParams
from osworld_gym.policies.uitars.images import ImageFormat, ScreenshotEncoder
from osworld_gym.policies.uitars.prompt import (
    COMPUTER_USE_TEMPLATE,
    SYSTEM_TEXT,
    add_box_tokens,
    computer_use_prompt,
)
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.pool.trajectory import StepRecord, Trajectory

logger = logging.getLogger(__name__)

__all__ = [
    "EVALUATION_SAMPLING",
    "TRAINING_SAMPLING",
    "UITARSAgent",
    "UITARSConfig",
]

#: ARPO's rollout sampling: temperature 1.0, no nucleus or top-k cut, 8192 new tokens a turn.
TRAINING_SAMPLING = SamplingParams(temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=8192)
#: ARPO's standalone evaluation: temperature 0.6, top_p 0.9, 1500 new tokens a turn.
EVALUATION_SAMPLING = SamplingParams(temperature=0.6, top_p=0.9, top_k=0, max_new_tokens=1500)


@dataclass(frozen=True)
class UITARSConfig:
    """How the agent prompts and samples.

    Attributes:
        sampling: Sampling of every call (``TRAINING_SAMPLING`` or
            ``EVALUATION_SAMPLING``, or your own).
        history_images: Screenshots kept as images, the current one included (``None``: all,
            as ARPO; the engine must accept that many images per prompt, e.g. vLLM's
            ``limit_mm_per_prompt``).
        min_pixels: Smallest pixel count of a resized screenshot (ARPO: 3136 = 4*28*28).
        max_pixels: Largest pixel count of a resized screenshot (ARPO: 2116800 = 2700*28*28).
        factor: Screenshot sides become multiples of this many pixels (Qwen2.5-VL: 28).
        image_format: Encoding of the images sent to the engine, ``"png"`` or ``"jpeg"``.
        jpeg_quality: JPEG quality (1-95) when ``image_format="jpeg"``.
        png_compress_level: zlib level (0-9) when ``image_format="png"``; pixels are the same.
        image_cache_size: Resized past screenshots kept in memory (0: re-encode every call).
        seed: When set, each request samples with its own seed derived from this one and the
            request's task, rollout and step, for reproducible evaluation: one call per batch
            with a seed per conversation where the engine's ``generate`` takes ``seeds`` (all
            of this package's engines), otherwise one call per request. ``None``: one call per
            batch, unseeded.
        system_text: The system turn.
        prompt_template: The first user turn, with an ``{instruction}`` field.
    """

    sampling: SamplingParams = TRAINING_SAMPLING
    history_images: int | None = None
    min_pixels: int = coords.MIN_PIXELS
    max_pixels: int = coords.MAX_PIXELS
    factor: int = coords.IMAGE_FACTOR
    image_format: ImageFormat = "png"
    jpeg_quality: int = 95
    png_compress_level: int = 1
    image_cache_size: int = 256
    seed: int | None = None
    system_text: str = SYSTEM_TEXT
    prompt_template: str = COMPUTER_USE_TEMPLATE

    def __post_init__(self) -> None:
        if self.history_images is not None and self.history_images < 1:
            raise ValueError(
                f"history_images must be >= 1 (the current screenshot) or None, "
                f"got {self.history_images}"
            )
        if "{instruction}" not in self.prompt_template:
            raise ValueError("prompt_template needs an {instruction} field")


class UITARSAgent:
    """A batched pool policy that prompts a UI-TARS model the way ARPO does.

    Args:
        engine: Generates one completion per conversation.
        config: Prompting and sampling settings.
        **overrides: ``UITARSConfig`` fields to change, e.g. ``history_images=5``.

    Example:
        >>> agent = UITARSAgent.for_evaluation(engine, seed=0)  # doctest: +SKIP
        >>> env = gym.make("OSWorld-v0", **agent.env_kwargs())  # doctest: +SKIP
        >>> collector = RolloutCollector(pool, agent)  # doctest: +SKIP
    """

    def __init__(
        self, engine: RolloutEngine, config: UITARSConfig | None = None, **overrides: Any
    ) -> None:
        self.engine = engine
        self.config = dataclasses.replace(config or UITARSConfig(), **overrides)
        cfg = self.config
        self.encoder = ScreenshotEncoder(
            min_pixels=cfg.min_pixels,
            max_pixels=cfg.max_pixels,
            factor=cfg.factor,
            image_format=cfg.image_format,
            jpeg_quality=cfg.jpeg_quality,
            png_compress_level=cfg.png_compress_level,
            cache_size=cfg.image_cache_size,
        )

    @classmethod
    def for_training(cls, engine: RolloutEngine, **overrides: Any) -> UITARSAgent:
        """An agent sampling like ARPO's rollouts (``TRAINING_SAMPLING``)."""
        return cls(engine, UITARSConfig(sampling=TRAINING_SAMPLING), **overrides)

    @classmethod
    def for_evaluation(cls, engine: RolloutEngine, **overrides: Any) -> UITARSAgent:
        """An agent sampling like ARPO's evaluation (``EVALUATION_SAMPLING``)."""
        return cls(engine, UITARSConfig(sampling=EVALUATION_SAMPLING), **overrides)

    # --- what the env must agree on --------------------------------------------------------

    @property
    def dialect_options(self) -> dict[str, Any]:
        """Options of the env's ``uitars`` parser matching this agent's screenshot resizing.

        The model answers in pixels of the resized screenshot; the parser maps them back to
        the screen only if it resizes with the same factor and bounds. Pass these as the env's
        ``dialect_options`` (or use ``env_kwargs()``).
        """
        return {
            "coordinates": "resized",
            "factor": self.config.factor,
            "min_pixels": self.config.min_pixels,
            "max_pixels": self.config.max_pixels,
        }

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the env (``gym.make``/``OSWorldEnv``) this agent drives.

        Example:
            >>> UITARSAgent(engine=None).env_kwargs()["dialect_options"]["max_pixels"]
            2116800
        """
        return {"action_format": "uitars", "dialect_options": self.dialect_options}

    # --- prompts ---------------------------------------------------------------------------

    def conversation(self, request: PolicyRequest) -> Conversation:
        """The prompt for one request: the episode so far plus the current screenshot.

        Raises:
            ValueError: The observation has no screenshot.
        """
        observation = request.observation
        frame = observation.get("screenshot") if isinstance(observation, Mapping) else None
        if frame is None:
            raise ValueError(
                f"env {request.env_id} (task {request.task_id!r}, step {request.step}): the "
                "observation has no 'screenshot'"
            )
        instruction = request.trajectory.instruction
        if isinstance(observation, Mapping) and observation.get("instruction"):
            instruction = str(observation["instruction"])
        steps = request.trajectory.steps
        shots = [self._past_image(step) for step in steps] + [self.encoder.from_array(frame)]
        return self._build(instruction, shots, steps)

    def episode_conversation(self, trajectory: Trajectory) -> Conversation:
        """A whole episode as one conversation: every screenshot acted on and every response.

        This is the sequence ARPO trains on (the final screenshot, which no response follows,
        is left out). With ``history_images`` below the episode's length the result is not
        what each turn was prompted with: later turns saw fewer images.
        """
        shots = [self._past_image(step) for step in trajectory.steps]
        return self._build(trajectory.instruction, shots, trajectory.steps)

    def _past_image(self, step: StepRecord) -> ImagePart | None:
        return None if step.screenshot is None else self.encoder.from_bytes(step.screenshot)

    def _build(
        self, instruction: str, shots: Sequence[ImagePart | None], steps: Sequence[StepRecord]
    ) -> Conversation:
        """Interleave screenshots and responses: ``shots[i]`` is what ``steps[i]`` answered."""
        cfg = self.config
        present = [i for i, shot in enumerate(shots) if shot is not None]
        if len(present) < len(shots):
            logger.debug("%d screenshot(s) missing from the trajectory", len(shots) - len(present))
        kept = set(present if cfg.history_images is None else present[-cfg.history_images :])
        conversation = Conversation()
        conversation.add("system", TextPart(cfg.system_text))
        conversation.add("user", TextPart(computer_use_prompt(instruction, cfg.prompt_template)))
        for i, shot in enumerate(shots):
            if i in kept:
                assert shot is not None
                conversation.add("user", shot)
            if i < len(steps):
                text, token_ids = _response(steps[i])
                conversation.add("assistant", TextPart(add_box_tokens(text)), token_ids=token_ids)
        return conversation

    # --- the policy ------------------------------------------------------------------------

    def request_seed(self, request: PolicyRequest) -> int | None:
        """The sampling seed of a request, or None when the agent is unseeded.

        It depends on the task, the rollout index and the step, not on which env ran the
        episode: the pool hands episodes to whichever env frees first, so env ids differ from
        run to run while (task, rollout, step) does not. In a streaming collection the
        request's feed tag counts too, so the same task fed again (a later iteration of the
        decoupled trainer) samples afresh rather than replaying the same draws.
        """
        if self.config.seed is None:
            return None
        key = f"{self.config.seed}\0{request.task_id}\0{request.rollout}\0{request.step}"
        if request.tag is not None:
            key += f"\0{request.tag!r}"
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") & 0x7FFF_FFFF  # fits every engine's seed type

    def __call__(self, requests: list[PolicyRequest]) -> list[PolicyOutput]:
        """Choose the next action of every request: the model's text, parsed by the env.

        Returns:
            One ``PolicyOutput`` per request, in order, with ``extra`` holding
            ``token_ids``, ``logprobs``, ``finish_reason`` and ``prompt_tokens`` (and ``seed``
            when seeded).
        """
        if not requests:
            return []
        conversations = [self.conversation(request) for request in requests]
        seeds = [self.request_seed(request) for request in requests]
        if self.config.seed is None:
            generations = list(self.engine.generate(conversations, self.config.sampling))
        elif _takes_keyword(self.engine.generate, "seeds"):
            generations = list(
                self.engine.generate(conversations, self.config.sampling, seeds=seeds)
            )
        else:
            # An engine without per-conversation seeds may draw one random stream per call; a
            # call per request makes each sample depend on its own seed only.
            generations = []
            for conversation, seed in zip(conversations, seeds, strict=True):
                params = dataclasses.replace(self.config.sampling, seed=seed)
                generations.extend(self.engine.generate([conversation], params))
        if len(generations) != len(requests):
            raise RuntimeError(
                f"{type(self.engine).__name__} returned {len(generations)} generations for "
                f"{len(requests)} conversations"
            )
        logger.debug("UI-TARS: %d request(s) answered", len(requests))
        return [_output(g, seed) for g, seed in zip(generations, seeds, strict=True)]


def _takes_keyword(function: Any, name: str) -> bool:
    """Whether ``function`` names the keyword parameter ``name``.

    ``**kwargs`` does not count: a wrapper that swallowed ``seeds`` would silently make samples
    depend on their batch.
    """
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # some builtins and C callables have no signature
        return False
    parameter = parameters.get(name)
    return parameter is not None and parameter.kind in (
        parameter.POSITIONAL_OR_KEYWORD,
        parameter.KEYWORD_ONLY,
    )


def _response(step: StepRecord) -> tuple[str, tuple[int, ...] | None]:
    """A past step's response text and, when recorded, its sampled token ids."""
    if step.text is not None:
        text = step.text
    else:
        text = step.action if isinstance(step.action, str) else ""
    ids = step.extra.get("token_ids")
    # len(), not truthiness: the replay buffer stores ids as numpy arrays.
    return text, (tuple(int(i) for i in ids) if ids is not None and len(ids) else None)


def _output(generation: Generation, seed: int | None) -> PolicyOutput:
    extra: dict[str, Any] = {
        "token_ids": list(generation.token_ids),
        "logprobs": None if generation.logprobs is None else list(generation.logprobs),
        "finish_reason": generation.finish_reason,
        "prompt_tokens": generation.prompt_tokens,
    }
    if seed is not None:
        extra["seed"] = seed
    return PolicyOutput(action=generation.text, text=generation.text, extra=extra)
