"""A rollout engine over vLLM 0.33 (``vllm.LLM`` in this process), weights pushed by a trainer.

``VLLMEngine`` is the GPU counterpart of
``TransformersEngine``, with the same behaviour:

* **Prompts are token ids.** Each conversation is rendered by
  ``QwenChatEncoder``, exactly as for the transformers
  engine and the trainer (sampled assistant turns spliced as their ids), and sent as
  ``collapsed_input_ids()`` (one
  ``<|image_pad|>`` per image, which vLLM expands itself) with the images as PIL images in the
  same order. vLLM's chat template is never used, so it cannot drift from the trainer's.
* **Outputs** are the sampled ids with the end-of-turn token, the log-probability of every sampled
  id under the sampling distribution (the engine is built with
  ``logprobs_mode="processed_logprobs"``, i.e. after temperature; greedy calls report temperature
  1), a finish reason, and the text decoded by the encoder. Under top-p / top-k truncation vLLM
  renormalises over the kept tokens and the transformers engine does not: keep ``top_p=1,
  top_k=0`` for RL rollouts (as ARPO does), where both are exactly the sampling distribution.
* **Vision placeholders** (``<|image_pad|>``, ``<|video_pad|>``) get a logit bias of -100 (vLLM's
  bound), the counterpart of the transformers engine's ``suppress_tokens``: one sampled
  placeholder would break the image-feature count of every later prompt.
* **Seeds.** Each request gets its own seed (the ``seeds`` given, or the call's seed + its
  index), so a call's samples depend neither on batch composition nor on the global RNG state.

**Weights.** ``VLLMEngine.update_weights()`` pushes ``(name, tensor)`` pairs or a state dict
with the trainer's Hugging Face names (``model.language_model.*``, ``model.visual.*``,
``lm_head.weight``; original checkpoint names work too). It uses the in-process mechanism the
rollout-engines spec recommends for vLLM 0.33: ``LLM.collective_rpc("reload_weights",
kwargs={"weights_iterator": ..., "is_checkpoint_format": True})``, which runs the model's own
``load_weights`` (Qwen2.5-VL's ``hf_to_vllm_mapper`` renames, the loaders fuse q/k/v and
gate/up) and the per-layer post-processing; or, with ``weight_sync="load_weights"`` (and as an
automatic fallback), the worker model's ``load_weights`` directly, as TRL does. Either needs the
engine core in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set here when unset, or
``distributed_executor_backend="external_launcher"`` under torchrun). After a push the prefix
and encoder caches are reset (their contents depend on the weights).
``hf_to_vllm_name()`` and ``vllm_parameter_name()`` state the name mapping for validation and
diagnostics.

**Sleep** (``enable_sleep_mode=True``, CUDA only) frees GPU memory between rollouts for a
colocated trainer. Level 1 moves the weights to CPU memory and drops the KV cache; level 2 drops
both, so the next ``update_weights()`` must push *every* parameter. The trainer's
loop is ``sleep(2)`` -> train -> ``update_weights`` (wakes the weights, pushes) -> ``generate``
(wakes the KV cache).

Everything that does not need vLLM is a plain function, testable without it: request building,
sampling arguments and output conversion in ``.vllm_requests``, weight names in
``.vllm_weights`` (re-exported here).
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Literal

from osworld_agents.engines.chat_encoding import QwenChatEncoder
from osworld_agents.engines.vllm_requests import (
    SEED_MODULUS,
    VLLMRequest,
    build_request,
    sampled_logprobs,
    sampling_kwargs,
    to_generation,
)
from osworld_agents.engines.vllm_weights import (
    HF_TO_VLLM_PREFIXES,
    hf_to_vllm_name,
    iter_trainer_weights,
    normalize_trainer_name,
    vllm_parameter_name,
)

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.policies.conversation import Conversation
from osworld_gym.policies.engine import Generation, SamplingParams

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = [
    "HF_TO_VLLM_PREFIXES",
    "VLLM_INSTALL_HINT",
    "VLLMEngine",
    "VLLMEngineConfig",
    "VLLMRequest",
    "build_request",
    "hf_to_vllm_name",
    "import_vllm",
    "iter_trainer_weights",
    "llm_kwargs",
    "normalize_trainer_name",
    "sampled_logprobs",
    "sampling_kwargs",
    "to_generation",
    "vllm_parameter_name",
]

VLLM_INSTALL_HINT = "pip install 'osworld-gym[vllm]'"

_SLEEP_TAGS = frozenset({"weights", "kv_cache", "scheduling"})
_MEMORY_TAGS = frozenset({"weights", "kv_cache"})

WeightSync = Literal["reload_weights", "load_weights", "none"]


def import_vllm() -> ModuleType:
    """Import vLLM, or say how to install it.

    Raises:
        DependencyNotInstalled: vLLM is not installed (it needs Linux and CUDA).
    """
    try:
        import vllm
    except ImportError as e:
        raise DependencyNotInstalled(
            f"the vLLM rollout engine needs vLLM 0.33 (Linux + CUDA): {VLLM_INSTALL_HINT}"
        ) from e
    return vllm


# --- engine ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class VLLMEngineConfig:
    """How to build the ``vllm.LLM``; the defaults are ARPO's rollout settings.

    Attributes:
        max_images: Images per prompt (ARPO: 15, one screenshot per step of a 15-step history).
        max_model_len: Prompt + completion tokens at most. A 1080p screenshot at ARPO's
            ``max_pixels`` is 2,691 tokens, so 15 of them are ~40k.
        gpu_memory_utilization: Fraction of the GPU's *total* memory vLLM may use (ARPO: 0.6;
            colocated with a trainer 0.3-0.5). At start-up that much must be free.
        enforce_eager: No CUDA graphs: faster start and less memory, slower decoding.
        dtype: Weight and compute dtype (pass it: ``"auto"`` turns an fp32 config into fp16).
        seed: vLLM's global seed; per-request seeds come from ``SamplingParams``.
        enable_sleep_mode: Allow ``VLLMEngine.sleep()`` (CUDA only).
        enable_prefix_caching: Reuse the KV cache of a shared prompt prefix (a screenshot
            history re-sends the same prefix each step).
        kv_cache_memory_bytes: Exact KV-cache size; overrides ``gpu_memory_utilization`` for it.
        max_num_seqs: Concurrent sequences at most (vLLM's default when None).
        max_num_batched_tokens: Tokens per scheduler step at most (vLLM's default when None).
        image_size: ``(width, height)`` of the largest image expected: vLLM profiles memory with
            dummy images of this size instead of the processor's maximum (which for Qwen2.5-VL
            checkpoints is ~16k tokens per image).
        mm_processor_kwargs: Passed to vLLM's image processor (``min_pixels``/``max_pixels``).
            They must agree with the encoder's image processor, or the two expand images to
            different token counts; resizing screenshots before they enter the conversation
            makes both see the same pixels without them.
        weight_sync: ``"reload_weights"`` (the worker's in-place reload with per-layer
            post-processing), ``"load_weights"`` (the model's ``load_weights`` directly) or
            ``"none"`` (no weight pushes; the engine core may then run in its own process).
        distributed_executor_backend: None (single process) or ``"external_launcher"`` (under
            torchrun: reuses the trainer's ``torch.distributed`` world, engine in-process).
        extra_llm_kwargs: Any other ``vllm.LLM`` / ``EngineArgs`` keyword.
    """

    max_images: int = 15
    max_model_len: int = 65536
    gpu_memory_utilization: float = 0.6
    enforce_eager: bool = False
    dtype: str = "bfloat16"
    seed: int = 0
    enable_sleep_mode: bool = False
    enable_prefix_caching: bool = True
    kv_cache_memory_bytes: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    image_size: tuple[int, int] | None = None
    mm_processor_kwargs: Mapping[str, Any] | None = None
    weight_sync: WeightSync = "reload_weights"
    distributed_executor_backend: str | None = None
    extra_llm_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_images < 0 or self.max_model_len < 1:
            raise ValueError("max_images must be >= 0 and max_model_len >= 1")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(
                f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}"
            )
        if self.weight_sync not in ("reload_weights", "load_weights", "none"):
            raise ValueError(f"unknown weight_sync {self.weight_sync!r}")
        if self.in_process and self.distributed_executor_backend not in (
            None,
            "uni",
            "external_launcher",
        ):
            # Other executors run the workers in other processes: tensors cannot be handed over.
            raise ValueError(
                f"weight pushes need the worker in this process; distributed_executor_backend="
                f"{self.distributed_executor_backend!r} runs it elsewhere (use weight_sync='none')"
            )

    @property
    def in_process(self) -> bool:
        """Whether the engine core must run in this process (weight pushes need it)."""
        return self.weight_sync != "none"


def llm_kwargs(model: str | os.PathLike[str], config: VLLMEngineConfig) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM`` for a Qwen2.5-VL-family model.

    Besides the config's settings: ``tensor_parallel_size=1``,
    ``logprobs_mode="processed_logprobs"`` (log-probs after temperature, as the trainer scores
    them) and ``generation_config="vllm"`` (the checkpoint's sampling defaults ignored).
    """
    if config.image_size is None:
        limit: dict[str, Any] = {"image": config.max_images}
    else:
        width, height = config.image_size
        limit = {"image": {"count": config.max_images, "width": width, "height": height}}
    kwargs: dict[str, Any] = {
        "model": str(model),
        "dtype": config.dtype,
        "seed": config.seed,
        "max_model_len": config.max_model_len,
        "limit_mm_per_prompt": limit,
        "gpu_memory_utilization": config.gpu_memory_utilization,
        "enforce_eager": config.enforce_eager,
        "enable_sleep_mode": config.enable_sleep_mode,
        "enable_prefix_caching": config.enable_prefix_caching,
        "tensor_parallel_size": 1,
        "logprobs_mode": "processed_logprobs",
        "generation_config": "vllm",
    }
    optional = {
        "kv_cache_memory_bytes": config.kv_cache_memory_bytes,
        "max_num_seqs": config.max_num_seqs,
        "max_num_batched_tokens": config.max_num_batched_tokens,
        "mm_processor_kwargs": dict(config.mm_processor_kwargs or {}) or None,
        "distributed_executor_backend": config.distributed_executor_backend,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    kwargs.update(config.extra_llm_kwargs)
    return kwargs


def _load_weights_on_worker(worker: Any, weights: Iterable[tuple[str, Any]]) -> list[str]:
    """Runs on the vLLM worker: load weights into its model, return the parameters not loaded."""
    model = worker.model_runner.model
    loaded = model.load_weights(weights)
    if loaded is None:  # a model whose loader does not report; nothing to compare
        return []
    return sorted({name for name, _ in model.named_parameters()} - set(loaded))


def _parameter_names_on_worker(worker: Any) -> list[str]:
    """Runs on the vLLM worker: the model's parameter names."""
    return sorted(name for name, _ in worker.model_runner.model.named_parameters())


class _Counted:
    """Counts the items an iterator has yielded (to know whether a failed push consumed any)."""

    def __init__(self, items: Iterator[tuple[str, Any]]):
        self._items = items
        self.count = 0

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for item in self._items:
            self.count += 1
            yield item
            del item  # a gathered tensor is released before the next one is made


class VLLMEngine:
    """``RolloutEngine`` over vLLM 0.33 (module docstring).

    Calls are serialised; vLLM batches a call's conversations itself.

    Args:
        model: A Qwen2.5-VL-family model folder (the tiny model, UI-TARS-1.5-7B) or hub id.
        config: How to build the engine (ARPO's settings by default).
        encoder: The chat encoder to render prompts with; by default one over the folder's
            tokenizer and image processor (the backend transformers picks: torchvision where
            installed, which vLLM uses too). Pass the trainer's to share it.

    Raises:
        DependencyNotInstalled: vLLM (or transformers, for the default encoder) is missing.
        ValueError: Weight pushes need the engine core in this process, but
            ``VLLM_ENABLE_V1_MULTIPROCESSING`` is set to run it in another.
        RuntimeError: vLLM started its engine core in another process anyway.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        config: VLLMEngineConfig | None = None,
        *,
        encoder: QwenChatEncoder | None = None,
    ):
        vllm = import_vllm()
        self.config = config or VLLMEngineConfig()
        self.encoder = encoder or _default_encoder(model)
        self.weight_version = 0
        self._vllm = vllm
        self._rng = random.Random(self.config.seed)
        self._lock = threading.Lock()
        self._asleep: set[str] = set()
        self._weights_discarded = False
        self._banned = sorted(self.encoder.placeholder_ids)
        if self.config.in_process and self.config.distributed_executor_backend != (
            "external_launcher"  # which runs the engine core in-process itself
        ):
            _require_in_process_engine_core()
        self._llm: Any = vllm.LLM(**llm_kwargs(model, self.config))
        if self.config.in_process and not hasattr(self._llm.llm_engine, "model_executor"):
            raise RuntimeError(
                "vLLM runs its engine core in another process, so weights cannot be pushed in "
                "place; set VLLM_ENABLE_V1_MULTIPROCESSING=0 before the first vLLM engine is "
                "built, or use weight_sync='none'"
            )
        logger.info("vLLM engine ready for %s (%s)", model, self.config)

    # --- RolloutEngine ------------------------------------------------------------------------

    def generate(
        self,
        conversations: Sequence[Conversation],
        params: SamplingParams,
        seeds: Sequence[int] | None = None,
    ) -> list[Generation]:
        """One completion per conversation, in order.

        Conversation ``i`` samples with ``seeds[i]`` when given, else with ``params.seed + i``.

        Wakes the engine first if it sleeps. Log-probs are at ``params.temperature``; for greedy
        decoding (temperature 0) at temperature 1 (``extra["logprob_temperature"]``).

        Raises:
            ValueError: A prompt does not fit ``max_model_len`` or has too many images, or
                ``seeds`` does not have one seed per conversation.
            RuntimeError: The weights were discarded by ``sleep(level=2)`` and not pushed since.
        """
        requests = [build_request(self.encoder, c) for c in conversations]
        for index, request in enumerate(requests):
            if request.prompt_tokens >= self.config.max_model_len:
                raise ValueError(
                    f"conversation {index}: prompt of {request.prompt_tokens} tokens leaves no "
                    f"room under max_model_len={self.config.max_model_len}"
                )
            if len(request.images) > self.config.max_images:
                raise ValueError(
                    f"conversation {index}: {len(request.images)} images, more than "
                    f"max_images={self.config.max_images}"
                )
        if seeds is not None and len(seeds) != len(requests):
            raise ValueError(f"{len(seeds)} seeds for {len(requests)} conversations")
        if not requests:
            return []
        temperature = params.temperature if params.temperature > 0 else 1.0
        with self._lock:
            self._ensure_awake()
            if seeds is None:
                seed = params.seed if params.seed is not None else self._rng.randrange(SEED_MODULUS)
                seeds = [seed + index for index in range(len(requests))]
            sampling = [
                self._vllm.SamplingParams(
                    **sampling_kwargs(
                        params,
                        stop_token_ids=self.encoder.stop_token_ids,
                        banned_token_ids=self._banned,
                        seed=row_seed % SEED_MODULUS,
                    )
                )
                for row_seed in seeds
            ]
            outputs = self.llm.generate([r.to_prompt() for r in requests], sampling, use_tqdm=False)
            version = self.weight_version
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM answered {len(outputs)} of {len(requests)} prompts")
        return [
            to_generation(
                output,
                self.encoder,
                prompt_tokens=request.prompt_tokens,
                weight_version=version,
                temperature=temperature,
            )
            for output, request in zip(outputs, requests, strict=True)
        ]

    # --- weights ------------------------------------------------------------------------------

    def update_weights(
        self,
        weights: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
        version: int | None = None,
    ) -> None:
        """Push trainer weights into the engine's model, in place.

        Wakes the weights first if they sleep (after emptying the CUDA cache, so the trainer's
        freed memory is available); the KV cache stays asleep until the next ``generate()``.
        Resets the prefix and encoder caches when the KV cache is awake (sleep cleared them
        otherwise).

        Args:
            weights: ``(name, tensor)`` pairs or a state dict with Hugging Face names (see
                ``iter_trainer_weights()``); a generator is consumed one tensor at a time, so
                an FSDP trainer can gather tensor by tensor. Any device and floating dtype; vLLM
                copies into its own.
            version: The new ``weight_version`` (default: the current one + 1).

        Raises:
            RuntimeError: The engine was built with ``weight_sync="none"``; or, after
                ``sleep(level=2)``, some parameters were not pushed (their memory holds garbage).
            KeyError: A name is not a Qwen2.5-VL weight.
            ValueError: No weights were given.
        """
        if self.config.weight_sync == "none":
            raise RuntimeError("this engine was built with weight_sync='none'")
        with self._lock:
            if "weights" in self._asleep:
                _empty_cuda_cache()
                self._wake(["weights"])
            items = iter_trainer_weights(weights)
            first = next(items, None)
            if first is None:
                raise ValueError("no weights to push")
            counted = _Counted(itertools.chain([first], items))
            missing = self._push(counted)
            if missing:
                if self._weights_discarded:
                    raise RuntimeError(
                        f"after sleep(level=2) every parameter must be pushed; not loaded: "
                        f"{missing[:10]}{' ...' if len(missing) > 10 else ''}"
                    )
                logger.warning("weights not in this push (kept as they were): %s", missing)
            self._weights_discarded = False
            self.weight_version = self.weight_version + 1 if version is None else version
            self._after_weight_change()
        _empty_cuda_cache()
        logger.info("pushed %d tensors (weight version %s)", counted.count, self.weight_version)

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """``update_weights()`` with a state dict."""
        self.update_weights(state_dict)

    def reseed(self, seed: int) -> None:
        """Restart the generator that draws the seeds of unseeded calls from ``seed``.

        vLLM's own global seed stays as built; every request carries an explicit seed, so a
        reseeded long-lived engine samples what a fresh one built with ``seed`` would.
        """
        with self._lock:
            self._rng = random.Random(seed)

    def parameter_names(self) -> list[str]:
        """The vLLM model's parameter names (fused q/k/v and gate/up), for diagnostics."""
        with self._lock:
            return list(self.llm.collective_rpc(_parameter_names_on_worker)[0])

    # --- sleep --------------------------------------------------------------------------------

    @property
    def sleeping(self) -> frozenset[str]:
        """What sleeps now: a subset of ``{"weights", "kv_cache", "scheduling"}``."""
        return frozenset(self._asleep)

    def sleep(self, level: int = 1) -> None:
        """Free GPU memory until the next ``update_weights()`` / ``generate()``.

        Level 0 only pauses scheduling; level 1 moves the weights to CPU memory and drops the KV
        cache; level 2 drops both (push every parameter before generating again). Levels 1 and
        2 also clear the prefix, encoder and multimodal caches.

        Raises:
            RuntimeError: The engine was built without ``enable_sleep_mode``.
            ValueError: ``level`` is not 0, 1 or 2.
        """
        if not self.config.enable_sleep_mode:
            raise RuntimeError("build the engine with enable_sleep_mode=True to use sleep()")
        if level not in (0, 1, 2):
            raise ValueError(f"sleep level must be 0, 1 or 2, got {level}")
        with self._lock:
            self.llm.sleep(level=level)
            if level == 0:
                self._asleep.add("scheduling")
            else:
                self._asleep.update(_MEMORY_TAGS)
            if level == 2:
                self._weights_discarded = True
        logger.debug("vLLM asleep at level %d", level)

    def wake_up(self, tags: Sequence[str] | None = None) -> None:
        """Wake ``tags`` (``"weights"``, ``"kv_cache"``, ``"scheduling"``), or everything.

        Waking the weights after ``sleep(level=2)`` maps uninitialised memory: push weights
        before generating (``generate()`` refuses until then).

        Raises:
            ValueError: An unknown tag.
        """
        if tags is not None and not tags:
            return
        unknown = set(tags or ()) - _SLEEP_TAGS
        if unknown:
            raise ValueError(f"unknown wake-up tags {sorted(unknown)}; use {sorted(_SLEEP_TAGS)}")
        with self._lock:
            self._wake(tags)

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def llm(self) -> Any:
        """The underlying ``vllm.LLM``."""
        if self._llm is None:
            raise RuntimeError("the engine is closed")
        return self._llm

    def close(self) -> None:
        """Shut the vLLM engine down and drop it (frees its GPU memory)."""
        with self._lock:
            llm, self._llm = self._llm, None
            if llm is None:
                return
            engine = getattr(llm, "llm_engine", None)
            for owner in (llm, engine, getattr(engine, "engine_core", None)):
                shutdown = getattr(owner, "shutdown", None)
                if callable(shutdown):
                    shutdown()
                    break
        del llm
        _empty_cuda_cache()

    def __enter__(self) -> VLLMEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------------

    def _push(self, counted: _Counted) -> list[str]:
        """Load the weights; return the vLLM parameters not loaded (when vLLM reports them)."""
        llm = self.llm
        if self.config.weight_sync == "reload_weights":
            try:
                llm.collective_rpc(
                    "reload_weights",
                    kwargs={"weights_iterator": iter(counted), "is_checkpoint_format": True},
                )
                return []  # vLLM logs the parameters a reload did not cover
            except (AttributeError, TypeError, NotImplementedError) as e:
                if counted.count:
                    raise
                # Nothing was consumed, so the same iterator can still go the other way.
                logger.warning("reload_weights unavailable (%s); using load_weights", e)
        return list(llm.collective_rpc(_load_weights_on_worker, args=(iter(counted),))[0])

    def _after_weight_change(self) -> None:
        llm = self.llm
        update_version = getattr(llm, "update_weight_version", None)
        if callable(update_version):  # tags outputs' weight_versions
            update_version(str(self.weight_version))
        if "kv_cache" in self._asleep:
            return  # sleep cleared the caches, and nothing ran since
        # Cached KV blocks and vision embeddings were computed with the old weights. The
        # engine-level encoder-cache reset also clears the scheduler's bookkeeping of it.
        llm.reset_prefix_cache()
        reset_encoder_cache = getattr(llm.llm_engine, "reset_encoder_cache", None)
        if callable(reset_encoder_cache):
            reset_encoder_cache()
        else:
            logger.warning("vLLM lacks reset_encoder_cache(); stale image embeddings may stay")

    def _ensure_awake(self) -> None:
        if not self._asleep:
            return
        if self._weights_discarded:
            raise RuntimeError(
                "sleep(level=2) discarded the weights; push them with update_weights() first"
            )
        remaining = self._asleep
        self._wake(None if "scheduling" in remaining or remaining == _MEMORY_TAGS else remaining)

    def _wake(self, tags: Iterable[str] | None) -> None:
        tag_list = None if tags is None else sorted(tags)
        resident = self.llm.wake_up(tags=tag_list)
        if tag_list is None:
            self._asleep.clear()
            return
        self._asleep.difference_update(tag_list)
        if not self._asleep & _MEMORY_TAGS and self._asleep:
            # Memory is back but scheduling is still paused: resume it.
            self.llm.wake_up(tags=sorted(self._asleep))
            self._asleep.clear()
        elif not self._asleep and resident is False:
            # vLLM resumes scheduling only once everything is resident; it says it is not.
            self.llm.wake_up(tags=None)


def _require_in_process_engine_core() -> None:
    """Make vLLM run its engine core in this process, which in-place weight pushes need.

    vLLM reads the variable when the engine is built; it is set only when unset.
    """
    name = "VLLM_ENABLE_V1_MULTIPROCESSING"
    value = os.environ.get(name)
    if value is None:
        os.environ[name] = "0"
        logger.info("set %s=0: weight pushes need the vLLM engine core in this process", name)
    elif value.strip().lower() not in ("0", "false"):
        raise ValueError(
            f"{name}={value} runs the vLLM engine core in another process, where weights "
            f"cannot be pushed in place; unset it or use weight_sync='none'"
        )


def _default_encoder(model: str | os.PathLike[str]) -> QwenChatEncoder:
    try:
        from transformers import AutoImageProcessor, AutoTokenizer
    except ImportError as e:
        raise DependencyNotInstalled(
            f"the vLLM engine's chat encoder needs transformers: {VLLM_INSTALL_HINT}"
        ) from e
    name = str(model)
    local = Path(name).expanduser().is_dir()
    tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=local)
    image_processor = AutoImageProcessor.from_pretrained(name, local_files_only=local)
    return QwenChatEncoder(tokenizer, image_processor)


def _empty_cuda_cache() -> None:
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
