"""ARPO training, top to bottom (cleanrl-style): seeding, setup, then one loop over iterations.

Each iteration: collect whole task groups rollout-wise on this rank's pool -> drop episodes
that cannot be trained on -> inject replayed successes into all-failed groups -> GRPO
advantages -> PPO update (or NLL for rs-sft / sft) -> store successes for replay -> log ->
evaluate now and then -> checkpoint now and then. With ``--async`` (DART-GUI's decoupled mode,
``.async_rollout``) the groups come from a rollout stream that keeps the desktops busy
through the updates. The pieces live in small modules beside this one; this file only
orchestrates them::

    python -m osworld_agents.trainer.train --preset cpu --tasks desktop-basics
    python -m osworld_agents.trainer.train --preset cpu --algo grpo --resume auto
    torchrun --nproc_per_node 2 -m osworld_agents.trainer.train --preset cpu
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from osworld_agents.arpo import ReplayBuffer, is_trainable
from osworld_agents.engines.chat_encoding import QwenChatEncoder
from osworld_agents.trainer.async_rollout import AsyncRollouts
from osworld_agents.trainer.checkpoint import (
    capture_rng,
    gather_full_state,
    load_checkpoint,
    resolve_resume,
    restore_rng,
    save_checkpoint,
)
from osworld_agents.trainer.components import (
    learning_rate,
    load_policy,
    loss_settings,
    make_optimizer,
    make_pool,
    make_replay,
    reference_model,
)
from osworld_agents.trainer.config import TrainConfig, parse_args
from osworld_agents.trainer.distributed import (
    DistContext,
    all_gather_objects,
    barrier,
    init_distributed,
    shard,
    shutdown,
)
from osworld_agents.trainer.evaluation import evaluate
from osworld_agents.trainer.metrics import MetricSums, MetricsWriter
from osworld_agents.trainer.rollout import (
    collect_groups,
    derive_seed,
    drop_untrainable,
    group_success_rates,
    load_demo_policy,
    rollout_agent,
    rollout_metrics,
)
from osworld_agents.trainer.rollout_engine import (
    make_rollout_engine,
    push_weights,
    release_for_update,
)
from osworld_agents.trainer.samples import (
    TrainSample,
    rl_samples,
    set_importance_logprobs,
    sft_samples,
)
from osworld_agents.trainer.tasks import (
    RolloutBudget,
    TaskSchedule,
    baseline_rates,
    resolve_task_ids,
)
from osworld_agents.trainer.update import compute_logprobs, train_epoch
from tqdm.auto import tqdm

from osworld_gym.cli_options import add_log_level, report_run_error
from osworld_gym.pool import TrajectoryGroup

logger = logging.getLogger(__name__)

__all__ = ["TrainResult", "cli", "main"]


@dataclass
class TrainResult:
    """What a run leaves behind.

    Attributes:
        output_dir: The run's folder.
        iterations_done: Iterations completed in total (resumed ones included).
        checkpoint: The last checkpoint written by this call, if any.
        history: Every metrics record this call logged, with its ``step``.
    """

    output_dir: Path
    iterations_done: int
    checkpoint: Path | None = None
    history: list[dict[str, float]] = field(default_factory=list)


# --- loop helpers -----------------------------------------------------------------------------


def set_old_logprobs(
    config: TrainConfig, model: Any, ref: Any, encoder: QwenChatEncoder, samples: list[TrainSample]
) -> None:
    """PPO's old log-probs (recomputed, or the engine's) and the reference log-probs."""
    if config.old_logprobs == "recompute":
        compute_logprobs(
            model,
            encoder,
            samples,
            micro_batch_size=config.micro_batch_size,
            temperature=config.temperature,
        )
    else:
        for sample in samples:
            logprobs = sample.rollout_logprobs
            if logprobs is None or len(logprobs) != sample.loss_tokens:
                raise ValueError(
                    f"old_logprobs='rollout' but an episode of task {sample.task_id} has no "
                    "complete sampling log-probs (a text-only engine or a scripted policy)"
                )
            sample.old_logprobs = sample.rollout_logprobs
    if ref is not None:
        compute_logprobs(
            ref,
            encoder,
            samples,
            micro_batch_size=config.micro_batch_size,
            temperature=config.temperature,
            field="ref_logprobs",
        )


def store_successes(
    replay: ReplayBuffer, groups: Sequence[TrajectoryGroup], ctx: DistContext
) -> int:
    """Add every rank's successes to every rank's buffer, in rank order.

    A task may land on any rank in a later iteration, so every buffer must hold every stored
    success; adding the same episodes in the same order keeps the buffers identical.
    """
    if not replay.config.enabled:
        return 0
    threshold = replay.config.success_threshold
    mine = [
        t
        for g in groups
        for t in g.trajectories
        if is_trainable(t) and t.score is not None and t.score > threshold
    ]
    return sum(replay.add(t) for batch in all_gather_objects(mine, ctx) for t in batch)


def checkpoint(
    config: TrainConfig,
    iteration: int,
    ctx: DistContext,
    state: dict[str, Any],
    owned: dict[str, Any],
) -> Path | None:
    """Every rank's RNG states to rank 0, which writes the checkpoint; everyone waits."""
    rng_states = all_gather_objects(capture_rng(owned), ctx)
    # A sharded model's state is gathered to rank 0 by every rank (a collective).
    full = gather_full_state(state["policy"].model, state["optimizer"], is_writer=ctx.is_main)
    path = None
    if ctx.is_main:
        path = save_checkpoint(
            Path(config.output_dir) / "checkpoints",
            iteration,
            policy=state["policy"],
            optimizer=state["optimizer"],
            replay=state["replay"],
            trainer_state={
                "iteration": iteration,
                "rng": rng_states,
                "schedule": state["schedule"].state_dict(),
                "rollout_budget": state["budget"].state_dict(),
                "world_size": ctx.world_size,
                "config": config.to_dict(),
            },
            config=config.to_dict(),
            keep=config.keep_checkpoints,
            full_state=full,
        )
        # Later checkpoints copy the model folder's extra files (chat template...) from the
        # source, which pruning may delete when it is an older checkpoint: use the newest.
        state["policy"] = dataclasses.replace(state["policy"], source=str(path / "model"))
    barrier(ctx)
    return path


def _due(every: int, iteration: int, last: int) -> bool:
    return iteration + 1 == last or (every > 0 and (iteration + 1) % every == 0)


# --- the run ----------------------------------------------------------------------------------


def main(config: TrainConfig) -> TrainResult:
    """Train as ``config`` says; importable (tests call it) and the CLI's body.

    One long function on purpose: the whole algorithm reads in order on one screen-scroll,
    and every step it takes is a call into a small module.

    Args:
        config: The run's settings.

    Returns:
        The run's folder, progress, last checkpoint and logged metrics.
    """
    ctx = init_distributed(config.dist_backend, config.device)
    out = Path(config.output_dir)
    result = TrainResult(out, 0)
    with contextlib.ExitStack() as stack:
        stack.callback(shutdown, ctx)

        # --- seeding: the only global seeding; everything else gets its own generator --------
        random.seed(config.seed + ctx.rank)
        np.random.seed(config.seed + ctx.rank)
        torch.manual_seed(config.seed + ctx.rank)
        schedule_rng = np.random.default_rng(derive_seed(config.seed, "tasks"))  # same on all ranks
        batch_rng = np.random.default_rng(derive_seed(config.seed, "minibatches", ctx.rank))
        replay_rng = random.Random(derive_seed(config.seed, "replay", ctx.rank))
        owned = {"tasks": schedule_rng, "minibatches": batch_rng, "replay": replay_rng}

        # --- setup ----------------------------------------------------------------------------
        resume_from = resolve_resume(config.resume, out / "checkpoints")
        policy = load_policy(config, resume_from, ctx)
        model = policy.model
        ref = reference_model(config, policy, resume_from is not None, ctx)
        encoder = QwenChatEncoder(policy.tokenizer, policy.image_processor)
        rollout_engine = make_rollout_engine(config, policy, ctx)
        if hasattr(rollout_engine, "close"):  # vLLM: stop it (and free its memory) at the end
            stack.callback(rollout_engine.close)
        agent = rollout_agent(rollout_engine, config, iteration=0, rank=ctx.rank)
        pool = stack.enter_context(make_pool(config, agent))
        demo = load_demo_policy(config.demo_policy) if config.algo == "sft" else None
        optimizer = make_optimizer(config, model)
        replay = make_replay(config, replay_rng)
        task_ids = resolve_task_ids(config.suite, config.task_ids, config.task_selection)
        schedule = TaskSchedule(task_ids, config.tasks_per_iteration, schedule_rng)
        budget = RolloutBudget(
            config.rollouts_per_task, config.dart_rollouts, baseline_rates(config.task_selection)
        )
        eval_tasks = list(config.eval_tasks) or task_ids
        settings = loss_settings(config)
        writer = stack.enter_context(
            MetricsWriter(
                out,
                config=config.to_dict(),
                tensorboard=config.tensorboard,
                wandb_project=config.wandb_project,
                run_name=out.name,
                enabled=ctx.is_main,
            )
        )
        state = {
            "policy": policy,
            "optimizer": optimizer,
            "replay": replay,
            "schedule": schedule,
            "budget": budget,
        }
        start = 0
        if resume_from is not None:
            saved = load_checkpoint(
                resume_from,
                optimizer=optimizer,
                replay=replay,
                map_location=ctx.device,
                model=model,
                is_main=ctx.is_main,
            )
            schedule.load_state_dict(saved["schedule"])
            if "rollout_budget" in saved:
                budget.load_state_dict(saved["rollout_budget"])
            restore_rng(saved["rng"][ctx.rank % len(saved["rng"])], owned)
            start = saved["iteration"] + 1
        result.iterations_done = start
        rollout_engine.weight_version = start  # the policy after `start` updates
        logger.info(
            "%s on %d task(s), iterations %d..%d, %d rank(s)",
            config.algo,
            len(task_ids),
            start,
            config.iterations - 1,
            ctx.world_size,
        )

        if config.eval_before_train and start == 0 and config.eval_every:
            metrics = evaluate(pool, rollout_engine, config, eval_tasks, ctx)
            writer.write(metrics, step=0)
            result.history.append({"step": 0, **metrics})

        # Decoupled mode (DART-GUI): one rollout stream for the run, fed ahead of the
        # iteration being trained; the desktops keep acting through the updates.
        stream = None
        if config.async_rollouts:
            stream = AsyncRollouts(pool, rollout_engine, config, schedule, budget, ctx, start)
            stack.callback(stream.close)  # before the pool closes (the stack unwinds LIFO)

        # --- training loop ----------------------------------------------------------------------
        bar = tqdm(
            range(start, config.iterations),
            initial=start,
            total=config.iterations,
            disable=not (ctx.is_main and config.progress),
            desc=config.algo,
        )
        for iteration in bar:
            sums, timer = MetricSums(), time.perf_counter()

            # 1. rollouts: this rank's share of the tasks, whole groups, in task order
            if stream is not None:  # decoupled: recent-enough groups from the stream
                agent = stream.agent
                (groups, requeued, collection), stream_metrics = stream.collect(iteration)
                sums.count("async/stale_groups", stream_metrics.pop("async/stale_groups"))
                for key, value in stream_metrics.items():
                    sums.add(key, value)
            else:
                tasks = shard(schedule.next(), ctx)
                agent = rollout_agent(rollout_engine, config, iteration=iteration, rank=ctx.rank)
                groups, requeued, collection = collect_groups(
                    pool,
                    demo or agent,
                    tasks,
                    group_size=budget.sizes(tasks),
                    seed=derive_seed(config.seed, "env", iteration, ctx.rank),
                    max_policy_batch=config.policy_batch_size,
                )
            sums.add("timing/rollout", time.perf_counter() - timer)
            sums.count("rollout/requeued", requeued)
            # Where the desktops' time went (acting or observed, vs waiting for the policy).
            for key in ("utilization", "occupancy", "episodes_per_minute", "mean_policy_batch"):
                sums.add(f"rollout/{key}", getattr(collection, key))

            # 2. rewards: only episodes that ran to a scored end can be trained on
            groups, dropped = drop_untrainable(groups)
            sums.count("rollout/dropped_untrainable", dropped)
            budget.observe(
                group_success_rates(groups, task_ids, threshold=config.success_threshold, ctx=ctx)
            )
            for key, (value, weight) in rollout_metrics(
                groups, format_coef=config.format_coef, success_threshold=config.success_threshold
            ).items():
                sums.add(key, value, weight)

            # 3. samples: replay injection then advantages (ARPO, GRPO), or the successes (SFT)
            tick = time.perf_counter()
            if config.is_sft:
                samples, stats = sft_samples(
                    groups,
                    agent,
                    encoder,
                    success_threshold=config.success_threshold,
                    teacher_force=config.algo == "sft",
                    max_tokens=config.max_sequence_tokens,
                    format_coef=config.format_coef,
                )
            else:
                injections = [replay.inject(g) for g in groups]
                sums.count("replay/injected_groups", sum(i.injected for i in injections))
                # All-failed groups whose task had nothing stored: the budget's cost shows here.
                sums.count("replay/empty_triggers", sum(i.empty_trigger for i in injections))
                samples, stats = rl_samples(
                    injections,
                    agent,
                    encoder,
                    format_coef=config.format_coef,
                    norm_by_std=config.norm_adv_by_std,
                    max_tokens=config.max_sequence_tokens,
                )
            sums.count("charts/samples", stats.kept)
            sums.count("rollout/dropped_too_long", stats.too_long)
            sums.count("rollout/dropped_no_loss_tokens", stats.no_loss_tokens)
            sums.add("timing/samples", time.perf_counter() - tick)

            # 4. update: old log-probs, then ppo_epochs passes of mini-batches (sft: sft_epochs)
            tick = time.perf_counter()
            desktops_before = stream.stats if stream is not None else None
            release_for_update(rollout_engine, config)  # vLLM sleeps: its memory to the trainer
            model.train()
            if not config.is_sft:
                set_old_logprobs(config, model, ref, encoder, samples)
                if stream is not None:  # stale samplers: truncated importance weights
                    sums.count("async/uncorrected_samples", set_importance_logprobs(samples))
            sums.add("timing/old_logprobs", time.perf_counter() - tick)
            tick = time.perf_counter()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(config, iteration)
            for _ in range(config.sft_epochs if config.is_sft else config.ppo_epochs):
                sums.update(
                    train_epoch(
                        model,
                        optimizer,
                        encoder,
                        samples,
                        settings=settings,
                        steps=config.optimizer_steps_per_iteration,
                        micro_batch_size=config.micro_batch_size,
                        max_grad_norm=config.max_grad_norm,
                        rng=batch_rng,
                        ctx=ctx,
                    )
                )
            model.eval()
            sums.add("timing/update", time.perf_counter() - tick)
            tick = time.perf_counter()
            push_weights(rollout_engine, model, version=iteration + 1)  # on every rank
            sums.add("timing/weight_push", time.perf_counter() - tick)
            if stream is not None and desktops_before is not None:
                for key, value in stream.update_metrics(desktops_before).items():
                    sums.add(key, value)  # the desktops kept busy through the update

            # 5. replay: store the original groups' successes, on every rank
            # A global count, the same on every rank: averaged, not summed.
            sums.add("replay/stored", store_successes(replay, groups, ctx))
            for key, value in replay.gauges().items():
                sums.add(key, value)  # identical on every rank (per-task bytes and budget share)

            # 6. log
            sums.add("charts/lr", learning_rate(config, iteration))
            sums.add("charts/epoch", schedule.epoch)
            sums.add("timing/iteration", time.perf_counter() - timer)
            metrics = sums.means(ctx)
            step = iteration + 1

            # 7. evaluate, with fixed seeds
            if config.eval_every and _due(config.eval_every, iteration, config.iterations):
                tick = time.perf_counter()
                if stream is not None:
                    stream.pause()  # the fed groups finish; the pool is the evaluation's
                metrics |= evaluate(pool, rollout_engine, config, eval_tasks, ctx)
                metrics["timing/eval"] = time.perf_counter() - tick

            # 8. checkpoint
            if _due(config.checkpoint_every, iteration, config.iterations):
                tick = time.perf_counter()
                # Async: the schedule as this iteration left it, not as drawn ahead.
                with stream.rewound(iteration) if stream else contextlib.nullcontext():
                    result.checkpoint = checkpoint(config, iteration, ctx, state, owned)
                metrics["timing/checkpoint"] = time.perf_counter() - tick
            writer.write(metrics, step=step)
            result.history.append({"step": step, **metrics})
            result.iterations_done = step
            bar.set_postfix(
                reward=f"{metrics.get('rollout/reward_mean', float('nan')):.3f}",
                success=f"{metrics.get('rollout/success_rate', float('nan')):.2f}",
            )
            logger.info(
                "iteration %d: reward %.3f, success %.2f, %d sample(s), %.1f s",
                iteration,
                metrics.get("rollout/reward_mean", float("nan")),
                metrics.get("rollout/success_rate", float("nan")),
                int(metrics.get("charts/samples", 0)),
                metrics["timing/iteration"],
            )
        bar.close()
    return result


def cli(argv: Sequence[str] | None = None, prog: str = "osworld-arpo") -> int:
    """``osworld-arpo --preset cpu --lr 3e-4 ...`` (also ``python -m``, and under torchrun).

    Args:
        argv: Arguments without the program name (None: ``sys.argv[1:]``).
        prog: The program named in help and errors.

    Returns:
        The exit status: 0 done, 1 the run failed (one line on stderr; ``--log-level DEBUG``
        adds the traceback). Usage errors exit 2 while parsing.
    """
    from tqdm.contrib.logging import logging_redirect_tqdm

    config, args = parse_args(argv, prog, add_arguments=_add_log_level)
    # Under torchrun only rank 0 tells the story; the others speak up for warnings.
    rank = os.environ.get("RANK", "0")
    level = args.log_level if rank == "0" or args.log_level == "DEBUG" else "WARNING"
    logging.basicConfig(
        level=level, format=f"%(asctime)s %(levelname)s [rank {rank}] %(name)s: %(message)s"
    )
    try:
        with logging_redirect_tqdm():
            result = main(config)
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    except Exception as e:  # noqa: BLE001 - a failed run is one line unless DEBUG asks for more
        return report_run_error(prog, e, args.log_level, logger)
    logger.info("done: %d iteration(s) in %s", result.iterations_done, result.output_dir)
    return 0


def _add_log_level(parser: argparse.ArgumentParser) -> None:
    add_log_level(parser, default="INFO")


if __name__ == "__main__":
    sys.exit(cli())
