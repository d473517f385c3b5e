"""The trainer's settings: one frozen dataclass documented field by field, two presets, the CLI.

The dataclass defaults are ARPO's UI-TARS-1.5-7B run (``specs/arpo.md`` §4, the ``paper``
preset); ``cpu`` shrinks everything to the tiny Qwen2.5-VL on a small-screen suite. Any field can
be overridden on the command line::

    python -m osworld_agents.trainer.train --preset cpu --suite desktop-basics --lr 3e-4
    torchrun --nproc_per_node 2 -m osworld_agents.trainer.train --preset cpu --num-envs 2
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from osworld_agents.models.tiny_qwen import TinyQwenSize

from osworld_gym.errors import DependencyNotInstalled

__all__ = ["PRESETS", "AggMode", "Algo", "TrainConfig", "parse_config"]

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
    """Byte budget of the replay buffer over all tasks (None: unbounded, as ARPO)."""
    old_logprobs: Literal["recompute", "rollout"] = "recompute"
    """PPO's old log-probs: recomputed by the trainer before the update (ARPO), or the
    engine's sampling log-probs (an exact importance ratio when engine and trainer differ)."""
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
screenshots at 3136-2116800 pixels). ``cpu``: the tiny model on the small-screen suite, 4 envs."""


def parse_config(argv: Sequence[str] | None = None) -> TrainConfig:
    """The config of a command line: ``--preset NAME`` first, then any field as ``--field``.

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).

    Returns:
        The preset with the given fields replaced.

    Raises:
        DependencyNotInstalled: tyro is missing.
    """
    try:
        import tyro
    except ImportError as e:
        raise DependencyNotInstalled("the trainer CLI needs tyro: pip install tyro") from e
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", choices=sorted(PRESETS), default="paper")
    known, rest = pre.parse_known_args(argv)
    description = (
        f"{TrainConfig.__doc__}\n\nPreset (--preset {{{','.join(sorted(PRESETS))}}}, "
        f"given first): {known.preset}."
    )
    return tyro.cli(TrainConfig, default=PRESETS[known.preset], args=rest, description=description)
