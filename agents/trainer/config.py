"""The trainer's settings: one frozen dataclass documented field by field, two presets, the CLI.

The dataclass defaults are ARPO's UI-TARS-1.5-7B run (``docs/design/arpo.md#hyperparameters``,
the ``paper`` preset); ``cpu`` shrinks everything to the tiny Qwen2.5-VL on a small-screen suite.
Any field can be overridden on the command line::

    python -m osworld_agents.trainer.train --preset cpu --tasks desktop-basics --lr 3e-4
    torchrun --nproc_per_node 2 -m osworld_agents.trainer.train --preset cpu --num-envs 2
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import sys
import textwrap
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from osworld_agents.models.tiny_qwen import TinyQwenSize

from osworld_gym.cli_options import (
    EXIT_CODES,
    DeprecatedAlias,
    Parser,
    rewrite_legacy_screen_size,
    screen_size,
)

__all__ = [
    "PRESETS",
    "AggMode",
    "Algo",
    "TrainConfig",
    "build_parser",
    "parse_args",
    "parse_config",
]

AggMode = Literal["seq-mean-token-mean", "token-mean"]
"""``osworld_agents.arpo.loss.AggMode``, repeated so that the config imports no torch."""

Algo = Literal["arpo", "grpo", "rs-sft", "sft"]
"""``arpo``: GRPO + replay; ``grpo``: replay off; ``rs-sft``: SFT on the successful rollouts of
each collection (ARPO's comparison baseline); ``sft``: SFT on a demonstration policy's successful
episodes (the warm start that makes the base model)."""


@dataclass(frozen=True)
class TrainConfig:
    """ARPO / GRPO / RS-SFT / SFT training of a Qwen2.5-VL-family GUI agent on OSWorld tasks.

    Defaults are ARPO's UI-TARS-1.5-7B settings; ``--preset cpu`` is the tiny CPU run.
    """

    # --- experiment ---------------------------------------------------------------------------
    algo: Algo = "arpo"
    """Training algorithm: arpo (GRPO + replay), grpo (replay off), rs-sft (SFT on successful
    rollouts), sft (SFT on a demonstration policy's successes: the warm start)."""
    output_dir: str = "runs/arpo"
    """Folder for checkpoints (checkpoints/ckpt-<iter>), TensorBoard events and metrics.jsonl."""
    seed: int = 1
    """Seeds random/numpy/torch once (plus the rank) and every generator the loop owns."""
    iterations: int = 120
    """Training iterations in total (ARPO: 8 per epoch x 15 epochs); a resumed run continues
    up to this number."""
    resume: str | None = None
    """'auto' (the output dir's latest checkpoint, if any), a checkpoint folder, or None."""

    # --- model --------------------------------------------------------------------------------
    model: str = "ByteDance-Seed/UI-TARS-1.5-7B"
    """Model folder or hub id; 'tiny' builds the ~200k-parameter Qwen2.5-VL offline (into the
    output dir). A warm start passes the model folder of an sft run's checkpoint."""
    tiny_hidden_size: int = TinyQwenSize.hidden_size
    """Decoder width of the model 'tiny' builds, a multiple of 32 (its MLP is twice as wide;
    64 gives 223k parameters, 96 353k). Ignored for any other model."""
    dtype: str = "bfloat16"
    """Weights dtype (ARPO: bf16, AdamW states in bf16 as well)."""
    device: str = "auto"
    """'auto' (cuda:<local rank> when CUDA is available, else cpu), or a torch device."""
    gradient_checkpointing: bool = True
    """Recompute activations in the backward pass (vision tower included): memory for time."""
    fsdp: bool = True
    """Shard parameters, gradients and optimizer state over the ranks with FSDP2
    (``fully_shard`` per decoder layer and vision block; ARPO trains with FSDP through
    EasyR1): what a 7B model needs on 8 GPUs. Rollouts then sample from a full copy (or vLLM)
    that receives the weights after every update. Off: each rank holds the whole model and
    optimizer (data parallel)."""
    fsdp_cpu_offload: bool = False
    """With fsdp: keep the sharded parameters, gradients and optimizer state in CPU memory."""
    attn_implementation: str = "sdpa"
    """'sdpa', 'eager' or 'flash_attention_2' (GPU; what ARPO uses)."""
    image_backend: str | None = None
    """Image processor backend, 'pil' or 'torchvision' (None: transformers' choice)."""

    # --- environment --------------------------------------------------------------------------
    suite: str = "desktop-basics"
    """Task source: a bundled suite name, an evaluation_examples folder or an index JSON."""
    task_ids: tuple[str, ...] = ()
    """Training tasks (empty: every task of the suite, or of task_selection)."""
    task_selection: str | None = None
    """A selection file (osworld_agents.arpo.save_selection): train on its selected tasks."""
    env_entry_point: str = "osworld_gym.env:OSWorldEnv"
    """Env factory entry point ('module:Class'); tests swap in a fake."""
    provider: str = "local"
    """Desktop provider: 'local' (Xvfb desktops on this host), 'docker', 'qemu', 'remote'."""
    work_dir: str | None = None
    """Parent folder of the local desktops' private folders (None: the temp folder)."""
    num_envs: int = 128
    """Desktops per rank (ARPO: 128 = 16 tasks x 8 rollouts, one env per episode)."""
    screen_size: tuple[int, int] = (1920, 1080)
    """Desktop (width, height) in pixels."""
    max_steps: int = 15
    """Step limit of an episode."""
    parse_error_ends_episode: bool = True
    """End an episode at the first unparsable response, as ARPO does."""
    max_concurrent_resets: int | None = None
    """Resets (desktop launches included) running at once per rank (None: scaled with num_envs
    and this host's cores, see osworld_gym.pool.PoolConfig)."""

    # --- rollouts -----------------------------------------------------------------------------
    tasks_per_iteration: int = 16
    """Tasks (GRPO groups) per iteration over all ranks (ARPO: rollout_batch_size 16)."""
    rollouts_per_task: int = 8
    """Rollouts per task: the GRPO group size n (ARPO: 8)."""
    dart_rollouts: tuple[int, int] | None = None
    """DART's dynamic rollout count: (min, max) rollouts per task, more for tasks with a lower
    latest success rate (the selection file's baseline, then each task's newest group); None
    gives every task ``rollouts_per_task`` (ARPO)."""
    rollout_engine: Literal["transformers", "vllm"] = "transformers"
    """What samples the rollouts: transformers (CPU or GPU), or vLLM in each rank's process
    (GPU; weights pushed from the trainer after every update)."""
    vllm_gpu_memory_utilization: float = 0.4
    """With rollout_engine vllm: fraction of the GPU's total memory vLLM may take (weights and
    KV cache), leaving the rest to the trainer on the same GPU."""
    vllm_enforce_eager: bool = False
    """With rollout_engine vllm: no CUDA graphs (faster start, less memory, slower decoding)."""
    vllm_sleep_level: int | None = 1
    """With rollout_engine vllm, coupled loop: sleep vLLM during each update to free its GPU
    memory (1: weights to CPU memory, KV cache dropped; 2: both dropped, every push refills
    them); None: never sleep."""
    vllm_max_model_len: int | None = None
    """With rollout_engine vllm: prompt + completion tokens at most (None:
    max_sequence_tokens + max_new_tokens)."""
    async_rollouts: bool = False
    """DART's decoupled mode (``--async``): the desktops keep sampling with the latest pushed
    weights while the trainer updates; off is the coupled loop (collect, then update)."""
    max_staleness: int = 1
    """With async_rollouts: train only on episodes sampled by policy versions >= the current
    one minus this; older ones are dropped (and counted)."""
    temperature: float = 1.0
    """Rollout sampling temperature; log-probs are scored at the same temperature."""
    max_new_tokens: int = 8192
    """New tokens per response at most (ARPO: max_response_length 8192)."""
    history_images: int | None = None
    """Screenshots kept in the prompt, the current one included (None: all, as ARPO's 15)."""
    min_pixels: int = 3136
    """Smallest pixel count of a resized screenshot (ARPO: 4*28*28)."""
    max_pixels: int = 2116800
    """Largest pixel count of a resized screenshot (ARPO: 2700*28*28)."""
    seeded_rollouts: bool = False
    """Sample every request with its own seed (from seed, iteration, rank, task, rollout, step):
    rollouts, and a resumed run, reproduce whatever the env timing and batching (up to float
    rounding between batch shapes). False: one seed per call from a per-iteration engine seed."""
    policy_batch_size: int | None = None
    """Requests per policy call at most (None: every waiting env)."""
    max_sequence_tokens: int = 64000
    """Longer training sequences are dropped, not truncated (ARPO: max_prompt_length)."""
    format_coef: float = 0.5
    """Reward = score + format_coef * format reward (-1 for an unparsable final response)."""

    # --- algorithm ----------------------------------------------------------------------------
    replay: bool = True
    """Inject stored successes into all-failed groups (ARPO); off is plain GRPO."""
    replay_capacity: int = 8
    """Successes kept per task, first in first out (ARPO: 8)."""
    success_threshold: float = 0.1
    """A score above this is a success: stored for replay, kept by rs-sft/sft, counted by eval."""
    replay_max_bytes: int | None = 2 * 1024**3
    """Byte budget of the replay buffer over all tasks (None: unbounded, as ARPO); over it,
    stored successes are evicted as replay_eviction says."""
    replay_eviction: Literal["largest-task", "oldest"] = "largest-task"
    """Which stored success goes when the replay byte budget is exceeded. largest-task: the
    oldest entry of the task holding the most bytes, never a task's last success while another
    task holds several (once every task holds one, the oldest over all tasks goes). oldest: the
    oldest over all tasks, which empties the rarely solved tasks first."""
    old_logprobs: Literal["recompute", "rollout"] = "recompute"
    """PPO's old log-probs, the denominator of the importance ratio. recompute (ARPO): the
    trainer scores every sample, replayed successes included, with the current weights right
    before the update, so every ratio starts at 1. rollout: the sampling engine's log-probs,
    saving that forward pass; a replayed success keeps those of the older policy that sampled
    it, so its ratio can be far from 1 and clip-higher zeroes its gradient (6 percent of
    replayed tokens had a ratio above 1.3 on the tiny model; more the faster the policy
    moves). Choose rollout without replay (grpo) or when you want the ratio against the exact
    sampling distribution of an engine whose numerics differ from the trainer's; it needs
    every episode's sampling log-probs and history_images=None. See
    docs/howto/train-arpo.md#old-logprobs."""
    loss_agg_mode: AggMode = "seq-mean-token-mean"
    """Loss aggregation: per-trajectory token mean averaged over trajectories (ARPO), or
    token-mean over the batch (DAPO). Both are exact for any micro-batch size."""
    clip_low: float = 0.2
    """PPO ratio clip below: 1 - clip_low."""
    clip_high: float = 0.3
    """PPO ratio clip above: 1 + clip_high (clip-higher)."""
    dual_clip: float = 3.0
    """Dual-clip constant c for negative advantages."""
    kl_coef: float = 0.0
    """k3 KL penalty to the initial policy (ARPO: 0, no reference model). Above 0 a frozen
    copy of the initial model is kept."""
    norm_adv_by_std: bool = True
    """GRPO advantages divided by the group std (False: mean-centred only, Dr. GRPO)."""

    # --- optimisation -------------------------------------------------------------------------
    optimizer: Literal["adamw", "sgd"] = "adamw"
    """AdamW (ARPO), or plain SGD: its steps scale with the gradient, so parameters the reward
    says little about stay put (Adam moves every parameter by about ``lr`` per step, which
    noisy RL gradients turn into drift on a tiny model)."""
    lr: float = 1e-6
    """Learning rate (constant after warm-up)."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    weight_decay: float = 1e-2
    """AdamW decoupled weight decay."""
    warmup_iterations: int = 0
    """Linear learning-rate warm-up, in iterations."""
    max_grad_norm: float = 1.0
    """Gradient clipping; a step whose norm is not finite is skipped."""
    optimizer_steps_per_iteration: int = 2
    """Optimizer steps (PPO mini-batches) per iteration, one epoch (ARPO: 2)."""
    micro_batch_size: int = 1
    """Trajectories per forward/backward pass (ARPO: 1); changes memory, not the loss."""
    ppo_epochs: int = 1
    """Passes over an iteration's samples in RL (ARPO: 1). More passes get more out of each
    batch; the clipped objective keeps the policy near the one that sampled it."""
    sft_epochs: int = 1
    """Passes over an iteration's kept episodes (rs-sft, sft)."""

    # --- demonstrations (sft) -----------------------------------------------------------------
    demo_policy: str | None = None
    """'module:attr' of a pool policy answering in UI-TARS text (a class is instantiated with no
    arguments). It runs the episodes of --algo sft."""

    # --- evaluation ---------------------------------------------------------------------------
    eval_every: int = 8
    """Evaluate every N iterations (0: never); also after the last one."""
    eval_before_train: bool = False
    """Evaluate the starting policy first (ARPO: val_before_train)."""
    eval_tasks: tuple[str, ...] = ()
    """Evaluation tasks (empty: the training tasks, as ARPO)."""
    eval_rollouts: int = 1
    """Episodes per evaluation task."""
    eval_temperature: float = 0.6
    """Evaluation temperature (ARPO's standalone evaluation)."""
    eval_top_p: float = 0.9
    """Evaluation nucleus mass (ARPO's standalone evaluation)."""
    eval_seed: int = 1234
    """Fixed sampling seed of every evaluation, so evaluations compare like with like."""

    # --- checkpoints and logging --------------------------------------------------------------
    checkpoint_every: int = 8
    """Checkpoint every N iterations (0: only after the last one)."""
    keep_checkpoints: int = 3
    """Checkpoints kept, oldest deleted first (0: all)."""
    tensorboard: bool = True
    """Write TensorBoard events under output_dir/tb."""
    wandb_project: str | None = None
    """Also log to this Weights & Biases project."""
    progress: bool = True
    """Show a tqdm progress bar over iterations (rank 0)."""

    # --- distributed --------------------------------------------------------------------------
    dist_backend: Literal["auto", "gloo", "nccl"] = "auto"
    """torch.distributed backend under torchrun ('auto': nccl on GPUs, gloo on CPU)."""

    def __post_init__(self) -> None:
        if self.rollouts_per_task < 1 or self.tasks_per_iteration < 1 or self.num_envs < 1:
            raise ValueError("rollouts_per_task, tasks_per_iteration and num_envs must be >= 1")
        if self.model == "tiny":  # fail here, not after the desktops have started
            TinyQwenSize(hidden_size=self.tiny_hidden_size)
        if self.optimizer_steps_per_iteration < 1 or self.micro_batch_size < 1:
            raise ValueError("optimizer_steps_per_iteration and micro_batch_size must be >= 1")
        if self.ppo_epochs < 1 or self.sft_epochs < 1:
            raise ValueError("ppo_epochs and sft_epochs must be >= 1")
        if (
            self.dart_rollouts is not None
            and not 1 <= self.dart_rollouts[0] <= self.dart_rollouts[1]
        ):
            raise ValueError(f"dart_rollouts needs 1 <= min <= max, got {self.dart_rollouts}")
        if self.rollout_engine not in ("transformers", "vllm"):
            raise ValueError(
                f"rollout_engine must be transformers or vllm, got {self.rollout_engine!r}"
            )
        if not 0 < self.vllm_gpu_memory_utilization <= 1:
            raise ValueError("vllm_gpu_memory_utilization must be in (0, 1]")
        if self.vllm_sleep_level not in (None, 1, 2):
            raise ValueError(f"vllm_sleep_level must be 1, 2 or None, got {self.vllm_sleep_level}")
        if self.fsdp_cpu_offload and not self.fsdp:
            raise ValueError("fsdp_cpu_offload needs fsdp (it offloads the sharded state)")
        if self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0, got {self.max_staleness}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0 for RL rollouts, got {self.temperature}")
        if self.algo == "sft" and self.demo_policy is None:
            raise ValueError("--algo sft needs --demo-policy module:attr")
        if self.old_logprobs == "rollout" and self.history_images is not None:
            raise ValueError(
                "old_logprobs='rollout' needs history_images=None: with a shorter history the "
                "training sequence is not what the responses were sampled from"
            )

    @property
    def uses_replay(self) -> bool:
        """Replay is on: ARPO with ``replay`` set."""
        return self.algo == "arpo" and self.replay

    @property
    def is_sft(self) -> bool:
        """The loss is the negative log-likelihood (rs-sft, sft), not PPO's."""
        return self.algo in ("rs-sft", "sft")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (tuples become lists)."""
        return dataclasses.asdict(self)


PAPER = TrainConfig()

CPU = dataclasses.replace(
    PAPER,
    output_dir="runs/arpo-cpu",
    iterations=50,
    model="tiny",
    dtype="float32",
    gradient_checkpointing=False,
    fsdp=False,  # 223k parameters: one copy per rank is nothing, and rollouts share it
    suite="ui-basics",
    num_envs=4,
    screen_size=(336, 224),  # the ui-basics suite: sides multiples of 28, seen unresized
    max_steps=3,  # its tasks take one action and `finished`
    tasks_per_iteration=4,
    rollouts_per_task=4,
    max_new_tokens=48,  # its oracle responses are at most 30 tokens
    max_pixels=336 * 224,
    seeded_rollouts=True,
    max_sequence_tokens=8192,
    lr=1e-4,
    micro_batch_size=4,
    eval_every=5,
    eval_before_train=True,
    checkpoint_every=5,
)

PRESETS: dict[str, TrainConfig] = {"paper": PAPER, "cpu": CPU}
"""``paper``: ARPO's UI-TARS-1.5-7B run (16 tasks x 8 rollouts, 15 steps, lr 1e-6, bf16, all 15
screenshots at 3136-2116800 pixels, FSDP2-sharded). ``cpu``: the tiny model on the small-screen
suite, 4 envs."""


NO_PRESET = (
    "choose a preset: --preset cpu (the tiny CPU run) or --preset paper (ARPO's "
    "UI-TARS-1.5-7B run, a 16 GB download and GPUs), or name a --model"
)
RENAMED = {"suite": "tasks"}
"""Fields whose option has the name every osworld-gym command uses (``--suite`` still works)."""


def parse_config(argv: Sequence[str] | None = None, prog: str = "osworld-arpo") -> TrainConfig:
    """The config of a command line: ``--preset NAME`` or ``--model``, then any field as an option.

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).
        prog: The program named in help and errors.

    Returns:
        The preset (``paper`` when only ``--model`` is given) with the given fields replaced.

    Raises:
        SystemExit: Help, ``--version``, or a usage error (one line on stderr, status 2): a bad
            value, or neither ``--preset`` nor ``--model``.
    """
    return parse_args(argv, prog)[0]


def parse_args(
    argv: Sequence[str] | None = None,
    prog: str = "osworld-arpo",
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    description: str | None = None,
) -> tuple[TrainConfig, argparse.Namespace]:
    """``parse_config()``, with more options of a command built on the trainer's.

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).
        prog: The program named in help and errors.
        add_arguments: Adds the command's own options to the parser.
        description: The help's description (default: the config's).

    Returns:
        The config, and the parsed namespace (the command's own options included).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    argv = rewrite_legacy_screen_size(argv, prog)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset")
    pre.add_argument("--model")
    known, _ = pre.parse_known_args(argv)  # a bad --preset is reported by the full parser
    preset = PRESETS.get(known.preset or "paper", PAPER)
    parser = build_parser(prog, preset, description)
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    if args.preset is None and known.model is None:
        parser.error(NO_PRESET)
    hints = typing.get_type_hints(TrainConfig)
    values = {
        f.name: _from_list(f.name, hints[f.name], getattr(args, f.name), parser)
        for f in dataclasses.fields(TrainConfig)
    }
    try:
        config = dataclasses.replace(preset, **values)
    except ValueError as e:  # a combination of values the config refuses
        parser.error(str(e))
    return config, args


def build_parser(
    prog: str = "osworld-arpo", preset: TrainConfig = PAPER, description: str | None = None
) -> argparse.ArgumentParser:
    """The trainer's parser: ``--preset`` and one option per ``TrainConfig`` field.

    Args:
        prog: The program named in help and errors.
        preset: Whose values are the defaults (shown in the help).
        description: The help's description (default: the config's).

    Returns:
        The parser; ``preset`` and ``model`` are None in its namespace when not given.
    """
    doc = " ".join((TrainConfig.__doc__ or "").split("\n\n")[0].split())
    parser = Parser(
        prog=prog,
        usage="%(prog)s (--preset {cpu,paper} | --model MODEL) [OPTIONS]",
        description=description or doc,
        epilog=f"{EXIT_CODES}. Presets: {PRESETS_HELP}",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="the settings every option starts from (required unless --model is given: then "
        "paper); the defaults below are this preset's",
    )
    docs = _field_docs()
    hints = typing.get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        name = RENAMED.get(f.name, f.name).replace("_", "-")
        default = getattr(preset, f.name)
        kwargs = _argument(f.name, hints[f.name], default)
        kwargs["help"] = docs.get(f.name, "")
        if f.name == "output_dir":
            kwargs["metavar"] = "DIR"
        if f.name == "model":
            kwargs["help"] += " Given without --preset: the paper preset's other settings."
        parser.add_argument(f"--{name}", dest=f.name, **kwargs)
        if f.name == "async_rollouts":  # the short spelling DART-GUI's mode goes by
            parser.add_argument(
                "--async", dest=f.name, action="store_true", help="the same as --async-rollouts"
            )
        if f.name in RENAMED:
            parser.add_argument(
                f"--{f.name.replace('_', '-')}",
                dest=f.name,
                action=DeprecatedAlias,
                new=f"--{name}",
                help=argparse.SUPPRESS,
            )
    return parser


PRESETS_HELP = (
    "paper: ARPO's UI-TARS-1.5-7B run (16 tasks x 8 rollouts, 15 steps, lr 1e-6, bf16, FSDP2); "
    "cpu: the tiny model on the small-screen suite, 4 envs."
)


def _argument(name: str, hint: Any, default: Any) -> dict[str, Any]:
    """``add_argument`` keywords for a field of type ``hint`` (default: the preset's value)."""
    optional = type(None) in typing.get_args(hint)
    base = (
        next((a for a in typing.get_args(hint) if a is not type(None)), hint) if optional else hint
    )
    origin = typing.get_origin(base)
    kwargs: dict[str, Any] = {"default": default}
    if name == "screen_size":
        return {**kwargs, "type": screen_size, "metavar": "WxH"}
    if base is bool:
        return {**kwargs, "action": argparse.BooleanOptionalAction}
    if origin is Literal:
        return {**kwargs, "choices": typing.get_args(base), "type": str}
    if origin is tuple:
        items = typing.get_args(base)
        if len(items) == 2 and items[1] is Ellipsis:
            return {**kwargs, "nargs": "*", "type": items[0], "metavar": items[0].__name__.upper()}
        # a fixed-size tuple, or None given as the word None (when the field allows it)
        convert = _none_or(items[0]) if optional else items[0]
        metavar = tuple(f"{items[0].__name__.upper()}" for _ in items)
        return {
            **kwargs,
            "nargs": "+" if optional else len(items),
            "type": convert,
            "metavar": metavar,
        }
    convert = _none_or(base) if optional else base
    return {**kwargs, "type": convert, "metavar": base.__name__.upper()}


def _from_list(name: str, hint: Any, value: Any, parser: argparse.ArgumentParser) -> Any:
    """A tuple field's value from the list argparse gives (``[None]``: None)."""
    if not isinstance(value, list):
        return value
    if None in value:
        if value != [None]:
            parser.error(f"argument --{name.replace('_', '-')}: None stands alone")
        return None
    optional = type(None) in typing.get_args(hint)
    base = next(a for a in typing.get_args(hint) if a is not type(None)) if optional else hint
    items = typing.get_args(base)
    size = len(items)
    if Ellipsis not in items and len(value) != size:
        parser.error(f"argument --{name.replace('_', '-')}: expected {size} values or None")
    return tuple(value)


def _none_or(kind: type) -> Callable[[str], Any]:
    """A type converter that reads ``None`` as None (an optional field's way to be unset)."""

    def convert(text: str) -> Any:
        return None if text == "None" else kind(text)

    convert.__name__ = kind.__name__  # argparse names the type in its error messages
    return convert


def _field_docs() -> dict[str, str]:
    """Each field's docstring (the string under it in the class body), on one line."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(TrainConfig)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs
