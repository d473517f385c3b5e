r"""ARPO's task selection, run: a baseline pass of the starting policy, then the selection rule.

    osworld-arpo-select --preset cpu --model runs/base/model --baseline-rollouts 8 \
        --output runs/selection.json [--min-rate 0.1 --max-rate 0.9] [--include-infeasible]
    osworld-arpo --preset cpu --model runs/base/model --task-selection runs/selection.json

Every feasible task of ``config.suite`` (or ``config.task_ids``) gets ``rollouts`` episodes with
the rollout agent (``config.temperature``, as training samples them). Infeasible tasks (evaluator
``func`` ``"infeasible"``) are excluded without a rollout, as ARPO's list leaves them out, and
recorded as such; ``--include-infeasible`` rolls them out and lets the rule decide. The scores
go through ``osworld_agents.arpo.select_tasks()`` and the file written by
``osworld_agents.arpo.save_selection()`` records the rule, every task's counts and what was
excluded and why. The trainer reads it back through ``task_selection`` (the selected tasks)
and, with ``dart_rollouts``, the baseline rates (each task's first rollout budget).

Under ``torchrun`` every rank rolls out its share of the tasks; rank 0 writes the file.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from osworld_agents.arpo import SelectionRule, TaskSelection, save_selection, select_tasks
from osworld_agents.arpo.selection import INFEASIBLE_TASK
from osworld_agents.trainer.components import load_policy, make_pool
from osworld_agents.trainer.config import TrainConfig, parse_args
from osworld_agents.trainer.distributed import (
    DistContext,
    all_gather_objects,
    barrier,
    init_distributed,
    shard,
    shutdown,
)
from osworld_agents.trainer.rollout import collect_groups, derive_seed, rollout_agent
from osworld_agents.trainer.tasks import resolve_tasks

from osworld_gym.cli_options import add_log_level, one_line, positive_int, report_run_error

logger = logging.getLogger(__name__)

__all__ = ["baseline_scores", "cli", "run_selection"]


def baseline_scores(
    config: TrainConfig, task_ids: Sequence[str], rollouts: int, ctx: DistContext
) -> dict[str, list[float | None]]:
    """Roll the starting policy out ``rollouts`` times on every task; scores per task.

    A collective under data parallelism: every rank runs its shard and gets every score.
    Episodes cut by faults (re-run by the collector until its attempts run out) count as
    unscored (None).
    """
    # Generation only: every rank keeps the whole model (a sharded one would have to run its
    # forward passes in lock-step with the other ranks', whose episodes differ).
    policy = load_policy(dataclasses.replace(config, fsdp=False, fsdp_cpu_offload=False), None, ctx)
    agent = rollout_agent(policy, config, iteration=0, rank=ctx.rank)
    local: dict[str, list[float | None]] = {}
    with make_pool(config, agent) as pool:
        groups = collect_groups(
            pool,
            agent,
            shard(list(task_ids), ctx),
            group_size=rollouts,
            seed=derive_seed(config.seed, "baseline", ctx.rank),
            max_policy_batch=config.policy_batch_size,
        ).groups
    for group in groups:
        local[group.task_id] = [
            None if t.infra_error or t.score is None else float(t.score) for t in group.trajectories
        ]
    merged: dict[str, list[float | None]] = {}
    for part in all_gather_objects(local, ctx):
        merged.update(part)
    return {task: merged.get(task, []) for task in task_ids}


def run_selection(
    config: TrainConfig,
    *,
    rollouts: int,
    rule: SelectionRule,
    output: str | os.PathLike[str],
    include_infeasible: bool = False,
) -> TaskSelection:
    """Baseline pass, selection, and the selection file (rank 0 writes it).

    Args:
        config: Model, suite (or ``task_ids``), envs and rollout sampling of the pass.
        rollouts: Episodes per task (ARPO's k).
        rule: Which success rates are kept.
        output: The selection file to write.
        include_infeasible: Roll out the infeasible tasks too and let ``rule`` decide them;
            by default they are excluded without a rollout (ARPO).

    Returns:
        The selection (the same on every rank).
    """
    if rollouts < 1:
        raise ValueError(f"baseline rollouts must be >= 1, got {rollouts}")
    ctx = init_distributed(config.dist_backend, config.device)
    with contextlib.ExitStack() as stack:
        stack.callback(shutdown, ctx)
        tasks = resolve_tasks(config.suite, config.task_ids)
        infeasible = [task.id for task in tasks if task.infeasible]
        task_ids = [t for t in tasks.ids if include_infeasible or t not in infeasible]
        logger.info(
            "baseline pass: %d task(s) x %d rollout(s); %d infeasible task(s) %s",
            len(task_ids),
            rollouts,
            len(infeasible),
            "rolled out (--include-infeasible)" if include_infeasible else "excluded",
        )
        # Every rank has the same list: all of them skip the collective pass together.
        scores = baseline_scores(config, task_ids, rollouts, ctx) if task_ids else {}
        selection = select_tasks(
            scores, rule, infeasible=infeasible, include_infeasible=include_infeasible
        )
        if ctx.is_main:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
            save_selection(selection, output)
            logger.info("selection written to %s", output)
        barrier(ctx)
    return selection


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    """``osworld-arpo-select``'s own options, beside the trainer's."""
    group = parser.add_argument_group("selection")
    group.add_argument(
        "--output", required=True, metavar="FILE", help="the selection file to write"
    )
    group.add_argument(
        "--baseline-rollouts", type=positive_int, default=8, help="episodes per task"
    )
    group.add_argument("--min-rate", type=float, default=0.0, help="lowest rate kept")
    group.add_argument("--max-rate", type=float, default=1.0, help="highest rate kept")
    group.add_argument(
        "--keep-unsolved",
        action="store_true",
        help="keep tasks never solved in the pass (ARPO drops them)",
    )
    group.add_argument(
        "--include-infeasible",
        action="store_true",
        help="roll out the infeasible tasks (evaluator func 'infeasible') and let the rule "
        "decide them; by default they are excluded without a rollout, as ARPO's list leaves "
        "them out, and the file records them as excluded",
    )
    add_log_level(parser, default="INFO")


def _split_args(argv: Sequence[str] | None, prog: str) -> tuple[argparse.Namespace, TrainConfig]:
    """The selection's options and the trainer's config, from one parser (one help)."""
    config, args = parse_args(
        argv,
        prog,
        add_arguments=_add_selection_options,
        description="Baseline pass and ARPO task selection: every task's episodes with the "
        "rollout agent, then the selection rule; the rollouts' settings are the trainer's.",
    )
    return args, config


def cli(argv: Sequence[str] | None = None, prog: str = "osworld-arpo-select") -> int:
    """``osworld-arpo-select``: prints how many tasks were selected and where the file is.

    Returns:
        The exit status: 0 done, 1 the pass failed (one line on stderr; ``--log-level DEBUG``
        adds the traceback). Usage errors exit 2 while parsing.
    """
    args, config = _split_args(argv, prog)
    rank = os.environ.get("RANK", "0")
    level = args.log_level if rank == "0" or args.log_level == "DEBUG" else "WARNING"
    logging.basicConfig(
        level=level, format=f"%(asctime)s %(levelname)s [rank {rank}] %(name)s: %(message)s"
    )
    try:
        rule = SelectionRule(
            success_threshold=config.success_threshold,
            require_success=not args.keep_unsolved,
            min_rate=args.min_rate,
            max_rate=args.max_rate,
        )
    except ValueError as e:  # rates out of order or range: a usage error
        sys.stderr.write(f"{prog}: error: {one_line(e)}\n")
        return 2
    try:
        selection = run_selection(
            config,
            rollouts=args.baseline_rollouts,
            rule=rule,
            output=args.output,
            include_infeasible=args.include_infeasible,
        )
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    except Exception as e:  # noqa: BLE001 - a failed pass is one line unless DEBUG asks for more
        return report_run_error(prog, e, args.log_level, logger)
    if rank == "0":
        infeasible = [t for t, why in selection.excluded.items() if why == INFEASIBLE_TASK]
        dropped = f" ({len(infeasible)} infeasible excluded)" if infeasible else ""
        sys.stdout.write(
            f"selected {len(selection.selected)} of {len(selection.stats)} task(s){dropped} -> "
            f"{args.output}\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(cli())
