"""The CPU preset end to end: a warm start on oracle demonstrations, then ARPO, on real desktops.

    osworld-arpo-cpu                      # ARPO (replay on)
    osworld-arpo-cpu --algo grpo          # the ablation: replay off, everything else the same
    osworld-arpo-cpu --algo rs-sft        # the paper's baseline: SFT on the successful rollouts
    osworld-arpo-cpu --async              # DART-GUI's decoupled mode (OUTPUT_DIR/arpo-async)

1. **Base model.** A tiny Qwen2.5-VL built offline is fine-tuned on the ``ui-basics`` oracle's
   demonstrations (``--algo sft``) for a fixed, small number of steps: a policy that solves some
   tasks, not all (the "base model" RL starts from). The warm start is kept in
   ``<output>/warm-start`` and reused by later runs with the same settings, so ARPO, GRPO and
   RS-SFT start from the same weights.
2. **Task selection.** ARPO's baseline pass: ``--baseline-rollouts`` episodes of every task with
   the base model at the rollout temperature; the training tasks are those it solved at least
   once but not every time (``<output>/selection.json``, reused like the warm start).
3. **RL.** The chosen algorithm from the warm start's weights on the selected tasks, evaluated
   before the first update and every ``--eval-every`` iterations on those tasks (temperature
   0.6, fixed seeds). Every iteration samples ``--rollouts-per-task`` (4) episodes of every
   selected task: the tasks share one tiny model, and an update made from a subset of them
   (the ARPO paper's way, ``--tasks-per-iteration N``) also moves the answers of the tasks
   left out of it (docs/howto/train-arpo.md#cpu has the measured curves of both).
4. **Report.** The success rate before and after, the curve, each task's rate before and after,
   and the wall time, printed and written to ``<output>/<algo>/summary.json``
   (``<output>/<algo>-async/`` with ``--async``: the desktops keep rolling out with the previous
   weights while the trainer updates, so coupled and async runs of one seed sit side by side).

Every phase runs its episodes on ``--num-envs`` local desktops (16: an episode spends most of
its time waiting for the screen to settle, so more desktops than cores keep the policy busy).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from osworld_agents.arpo import SelectionRule, load_selection
from osworld_agents.trainer.checkpoint import resolve_resume
from osworld_agents.trainer.config import PRESETS, TrainConfig
from osworld_agents.trainer.evaluation import TASK_SUCCESS_PREFIX
from osworld_agents.trainer.tasks import resolve_task_ids

from osworld_gym.cli_options import (
    EXIT_CODES,
    Parser,
    add_log_level,
    add_output_dir,
    positive_int,
    report_run_error,
)

logger = logging.getLogger(__name__)

ORACLE = "osworld_gym.policies.oracles:UIBasicsOracle"


SELECTION_RULE = SelectionRule(require_success=True, max_rate=0.99)
"""ARPO's rule (solved at least once in the baseline pass) without the tasks solved every time,
which give GRPO no signal."""


def warm_start_config(
    out: Path,
    seed: int,
    iterations: int,
    num_envs: int,
    width: int = PRESETS["cpu"].tiny_hidden_size,
) -> TrainConfig:
    """SFT on the oracle's demonstrations: every task of the suite once per iteration, 20 epochs.

    On 2 cores 10 iterations over the suite's 38 tasks take about 4 minutes. The result solves
    some tasks, not all: the baseline pass (temperature 1.0) solved 55%, 64% and 53% of its
    episodes with seeds 1, 2 and 3 (docs/howto/train-arpo.md#cpu has the runs behind 10).
    """
    return dataclasses.replace(
        PRESETS["cpu"],
        algo="sft",
        demo_policy=ORACLE,
        output_dir=str(out / "warm-start"),
        tiny_hidden_size=width,
        num_envs=num_envs,
        seed=seed,
        iterations=iterations,
        rollouts_per_task=1,
        tasks_per_iteration=len(resolve_task_ids(PRESETS["cpu"].suite)),
        lr=3e-3,
        sft_epochs=20,
        eval_every=0,
        eval_before_train=False,
        checkpoint_every=iterations,
        keep_checkpoints=1,
        progress=False,
    )


WARM_START_SETTINGS = (
    "seed",
    "iterations",
    "tiny_hidden_size",
    "lr",
    "sft_epochs",
    "tasks_per_iteration",  # the suite's size (22 before it grew to 38): the tasks demonstrated
)
"""What makes two warm starts different models (checked before one is reused)."""


def check_reusable(checkpoint: Path, wanted: TrainConfig) -> None:
    """Refuse to reuse a warm start made with other settings than ``wanted``.

    Raises:
        ValueError: A setting differs; the message names it and the folder.
    """
    saved = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    # written before the width was a setting: made at the default width
    saved.setdefault("tiny_hidden_size", TrainConfig.tiny_hidden_size)
    for name in WARM_START_SETTINGS:
        if saved.get(name) != getattr(wanted, name):
            raise ValueError(
                f"the warm start in {checkpoint.parent.parent} was made with {name}="
                f"{saved.get(name)!r}, this run asks for {getattr(wanted, name)!r}: "
                "pass another --output-dir (or remove that folder)"
            )


def rl_config(
    args: argparse.Namespace, model: Path, selection: Path, selected: Sequence[str]
) -> TrainConfig:
    """The RL run from the warm start's weights on the ``selected`` tasks of ``selection``."""
    return dataclasses.replace(
        PRESETS["cpu"],
        algo=args.algo,
        model=str(model),
        output_dir=str(Path(args.output_dir) / run_name(args)),
        seed=args.seed,
        task_selection=str(selection),
        num_envs=args.num_envs,
        tasks_per_iteration=min(args.tasks_per_iteration or len(selected), len(selected)),
        rollouts_per_task=args.rollouts_per_task,
        dart_rollouts=tuple(args.dart_rollouts) if args.dart_rollouts else None,
        eval_rollouts=args.eval_rollouts,
        iterations=args.iterations,
        lr=args.lr,
        ppo_epochs=args.ppo_epochs,
        optimizer_steps_per_iteration=args.optimizer_steps,
        loss_agg_mode=args.loss_agg_mode,
        eval_every=args.eval_every,
        eval_before_train=True,
        checkpoint_every=args.eval_every,
        resume="auto",
        progress=not args.no_progress,
        async_rollouts=args.async_rollouts,
        max_staleness=args.max_staleness,
    )


def run_name(args: argparse.Namespace) -> str:
    """The RL run's subfolder: the algorithm, ``-async`` in the decoupled mode."""
    return f"{args.algo}-async" if args.async_rollouts else args.algo


def selection_config(out: Path, model: Path, seed: int, num_envs: int) -> TrainConfig:
    """The baseline pass: the base model on every task of the suite, as rollouts sample it."""
    return dataclasses.replace(
        PRESETS["cpu"],
        model=str(model),
        output_dir=str(out / "baseline"),
        seed=seed,
        num_envs=num_envs,
    )


def eval_curve(metrics_file: Path) -> list[dict[str, Any]]:
    """Success rate per evaluated step over the whole run, resumed parts included.

    ``metrics.jsonl`` is appended to by every (resumed) process; a step written twice (redone
    after a kill) counts with its latest value. Each point also has ``per_task``: every task's
    success rate at that step.
    """
    latest: dict[int, dict[str, Any]] = {}
    for line in metrics_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "eval/success_rate" in record:
            latest[int(record["step"])] = {
                "success_rate": float(record["eval/success_rate"]),
                "per_task": {
                    key[len(TASK_SUCCESS_PREFIX) :]: float(value)
                    for key, value in sorted(record.items())
                    if key.startswith(TASK_SUCCESS_PREFIX)
                },
            }
    return [{"step": step, **point} for step, point in sorted(latest.items())]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Warm start (or reuse it), then RL; returns the summary it also writes."""
    from osworld_agents.trainer.train import main as train

    started = time.monotonic()
    out = Path(args.output_dir)
    warm = warm_start_config(
        out, args.seed, args.warm_start_iterations, args.num_envs, args.model_width
    )
    base = resolve_resume("auto", Path(warm.output_dir) / "checkpoints")
    if base is None:
        logger.info("warm start: SFT on the oracle's demonstrations -> %s", warm.output_dir)
        train(warm)
        base = resolve_resume("auto", Path(warm.output_dir) / "checkpoints")
        assert base is not None
    else:
        check_reusable(base, warm)
        logger.info("reusing the warm start at %s", base)
    selection = out / "selection.json"
    if selection.is_file():
        logger.info("reusing the task selection %s", selection)
    else:
        from osworld_agents.trainer.baseline import run_selection

        run_selection(
            selection_config(out, base / "model", args.seed, args.num_envs),
            rollouts=args.baseline_rollouts,
            rule=SELECTION_RULE,
            output=selection,
        )
    selected = load_selection(selection).selected
    if not selected:
        raise RuntimeError(f"the baseline pass selected no task: see {selection}")
    config = rl_config(args, base / "model", selection, selected)
    train(config)
    curve = eval_curve(Path(config.output_dir) / "metrics.jsonl")
    summary = {
        "algo": args.algo,
        "async_rollouts": args.async_rollouts,
        "base_model": str(base / "model"),
        "training_tasks": selected,
        "before": curve[0]["success_rate"] if curve else None,
        "after": curve[-1]["success_rate"] if curve else None,
        "curve": curve,
        "seconds": time.monotonic() - started,
        "config": config.to_dict(),
    }
    Path(config.output_dir, "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (defaults: the measured runs' settings, docs/howto/train-arpo.md)."""
    parser = Parser(
        prog="osworld-arpo-cpu",
        description=__doc__.split("\n")[0],
        epilog=f"{EXIT_CODES}.",
    )
    parser.add_argument(
        "--algo",
        choices=["arpo", "grpo", "rs-sft"],
        default="arpo",
        help="arpo: GRPO + replay; grpo: replay off; rs-sft: SFT on the successful rollouts",
    )
    add_output_dir(
        parser,
        "runs/arpo-cpu",
        "the warm start, the task selection and each algorithm's run (OUTPUT_DIR/ALGO)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seeds every phase")
    parser.add_argument(
        "--model-width",
        type=int,
        default=PRESETS["cpu"].tiny_hidden_size,
        help="decoder width of the tiny model (a multiple of 32; its MLP is twice as wide)",
    )
    parser.add_argument(
        "--warm-start-iterations",
        type=positive_int,
        default=10,
        help="SFT iterations on the oracle's demonstrations, every task once each (a base model "
        "that answers from the instruction alone is one RL cannot fix: "
        "docs/howto/train-arpo.md#cpu)",
    )
    parser.add_argument(
        "--baseline-rollouts",
        type=positive_int,
        default=8,
        help="episodes per task in the selection pass",
    )
    parser.add_argument(
        "--tasks-per-iteration",
        type=int,
        default=0,
        help="tasks per RL iteration; 0: every selected task in every iteration",
    )
    parser.add_argument("--rollouts-per-task", type=positive_int, default=4, help="GRPO group size")
    parser.add_argument(
        "--dart-rollouts",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        default=None,
        help="DART's dynamic rollout count: from MIN (solved every time) to MAX (never solved), "
        "by each task's latest success rate (the baseline pass's to begin with)",
    )
    parser.add_argument("--iterations", type=positive_int, default=30, help="RL iterations")
    parser.add_argument("--lr", type=float, default=4e-4, help="RL learning rate")
    parser.add_argument(
        "--ppo-epochs", type=positive_int, default=2, help="passes over each iteration's samples"
    )
    parser.add_argument(
        "--optimizer-steps",
        type=positive_int,
        default=PRESETS["cpu"].optimizer_steps_per_iteration,
        help="optimizer steps per iteration",
    )
    parser.add_argument(
        "--loss-agg-mode",
        choices=["seq-mean-token-mean", "token-mean"],
        default="token-mean",
        help="loss aggregation (see osworld-arpo --help)",
    )
    parser.add_argument(
        "--eval-every", type=positive_int, default=10, help="evaluate every N iterations"
    )
    parser.add_argument(
        "--eval-rollouts", type=positive_int, default=8, help="episodes per evaluated task"
    )
    parser.add_argument(
        "--num-envs",
        type=positive_int,
        default=16,
        help="local desktops (more than the 2 cores: an episode mostly waits for its screen)",
    )
    parser.add_argument(
        "--async",
        dest="async_rollouts",
        action="store_true",
        help="DART-GUI's decoupled mode: rollouts continue on the previous weights during each "
        "update (run folder OUTPUT_DIR/ALGO-async)",
    )
    parser.add_argument(
        "--max-staleness",
        type=int,
        default=PRESETS["cpu"].max_staleness,
        help="with --async: train on episodes at most this many policy versions old",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_log_level(parser, default="INFO")
    args = parser.parse_args(argv)
    if args.max_staleness < 0:
        parser.error(f"argument --max-staleness: must be >= 0, got {args.max_staleness}")
    if args.dart_rollouts and not 1 <= args.dart_rollouts[0] <= args.dart_rollouts[1]:
        parser.error(f"argument --dart-rollouts: needs 1 <= MIN <= MAX, got {args.dart_rollouts}")
    return args


def cli(argv: Sequence[str] | None = None) -> int:
    """``osworld-arpo-cpu``: prints the success rate before and after RL.

    Returns:
        The exit status: 0 done, 1 the run failed (one line on stderr; ``--log-level DEBUG``
        adds the traceback). Usage errors exit 2 while parsing.
    """
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    prog = "osworld-arpo-cpu"
    try:
        summary = run(args)
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted; rerun to continue from the last checkpoint\n")
        return 130
    except Exception as e:  # noqa: BLE001 - a failed run is one line unless DEBUG asks for more
        return report_run_error(prog, e, args.log_level, logger)
    curve = ", ".join(f"{p['step']}: {p['success_rate']:.3f}" for p in summary["curve"])
    lines = [
        f"{summary['algo']}: success rate on the training tasks (temperature 0.6, fixed seeds) "
        f"before {summary['before']:.3f}, after {summary['after']:.3f} "
        f"({summary['seconds'] / 60:.1f} min)",
        f"curve (iteration: success) {curve}",
    ]
    if summary["curve"]:
        first, last = summary["curve"][0]["per_task"], summary["curve"][-1]["per_task"]
        lines += [f"  {task}: {first[task]:.2f} -> {last.get(task, 0.0):.2f}" for task in first]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(cli())
