"""GRPO on OSWorld desktops with TRL's ``GRPOTrainer(environment_factory=...)``.

The policy acts through tool calls (click, type_text, ..., done); every tool returns the new
screenshot; the env's score is the reward. See ``examples/trl/README.md`` for the commands.

GPU (one 80-141 GB GPU; UI-TARS-1.5-7B or another Qwen2.5-VL checkpoint, from the hub or a
folder)::

    pip install -e '.[train,trl]'
    python examples/trl/train_grpo.py --model ByteDance-Seed/UI-TARS-1.5-7B \\
        --tasks ui-basics --screen 336x224 --batch-size 8 --num-generations 4 \\
        --max-turns 15 --max-steps 100 --gradient-checkpointing

CPU smoke run (offline tiny random Qwen2.5-VL, one step, about 30 s)::

    HF_HUB_OFFLINE=1 python examples/trl/train_grpo.py --tiny
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger("train_grpo")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="ByteDance-Seed/UI-TARS-1.5-7B", help="hub id or folder")
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="CPU smoke run: build the offline tiny random Qwen2.5-VL and take one step",
    )
    parser.add_argument("--tasks", default="ui-basics", help="suite name, OSWorld folder or index")
    parser.add_argument("--task-ids", nargs="*", default=None, help="only these tasks")
    parser.add_argument("--screen", default="336x224", help="desktop size WIDTHxHEIGHT")
    parser.add_argument("--provider", default="local", help="desktop provider (local, docker)")
    parser.add_argument("--max-pixels", type=int, default=None, help="screenshot pixel budget")
    parser.add_argument("--batch-size", type=int, default=8, help="rollouts per device per step")
    parser.add_argument("--num-generations", type=int, default=4, help="rollouts per task (G)")
    parser.add_argument("--max-turns", type=int, default=15, help="max_tool_calling_iterations")
    parser.add_argument("--env-max-steps", type=int, default=15, help="the env's step limit")
    parser.add_argument("--max-completion-length", type=int, default=8192)
    parser.add_argument("--max-steps", type=int, default=100, help="optimizer steps")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--desk-size", type=int, default=None, help="default: --batch-size")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--output-dir", default=None, help="default: a temporary folder")
    return parser.parse_args()


def _tool_call_bias(tokenizer: object, screen: tuple[int, int]) -> list[list[object]]:
    """A sequence bias that makes a random model write one turn: click the centre, done().

    Only for ``--tiny``: its random weights never produce a tool call, and without one the run
    would not exercise the tool path (screenshots as tool results) at all.
    """
    x, y = screen[0] // 2, screen[1] // 2
    answer = (
        f'<tool_call>\n{{"name": "click", "arguments": {{"x": {x}, "y": {y}}}}}\n</tool_call>\n'
        '<tool_call>\n{"name": "done", "arguments": {}}\n</tool_call><|im_end|>'
    )
    ids = tokenizer(answer, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
    return [[ids[: k + 1], 100.0 * (k + 1)] for k in range(len(ids))]


def main() -> None:
    """Build the model, the env class and the dataset, then train."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args = _parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental

    import torch
    from osworld_agents.models.processor import ImageOnlyQwenProcessor
    from transformers import Qwen2_5_VLForConditionalGeneration
    from trl import GRPOConfig, GRPOTrainer

    from osworld_gym.integrations import close_shared_leases
    from osworld_gym.integrations.trl import (
        enable_qwen_tool_calling,
        make_trl_dataset,
        osworld_environment,
    )

    width, height = (int(v) for v in args.screen.lower().split("x"))
    output_dir = Path(args.output_dir or tempfile.mkdtemp(prefix="osworld-trl-"))
    model_source = args.model
    if args.tiny:
        from osworld_agents.models.tiny_qwen import build_tiny_qwen

        model_source = str(build_tiny_qwen(output_dir / "tiny-model"))
        args.batch_size, args.num_generations, args.max_steps, args.max_turns = 2, 2, 1, 1
        args.max_completion_length = 1024

    processor = enable_qwen_tool_calling(ImageOnlyQwenProcessor.from_pretrained(model_source))
    use_cuda = torch.cuda.is_available() and not args.tiny
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(
        model_source, dtype=torch.bfloat16 if use_cuda else torch.float32
    )
    env_cls = osworld_environment(
        args.tasks,
        screen_size=(width, height),
        provider=args.provider,
        max_steps=args.env_max_steps,
        max_pixels=args.max_pixels,
        # TRL resets all rollouts of a generation batch before generating: one desktop each.
        desk_size=args.desk_size or args.batch_size,
    )
    dataset = make_trl_dataset(args.tasks, screen_size=(width, height), task_ids=args.task_ids)
    config = GRPOConfig(
        output_dir=str(output_dir / "run"),
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_steps=args.max_steps,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_turns,
        learning_rate=args.learning_rate,
        gradient_checkpointing=args.gradient_checkpointing,
        bf16=use_cuda,
        use_cpu=not use_cuda,
        logging_steps=1,
        save_strategy="no" if args.tiny else "steps",
        report_to="none",
        generation_kwargs=(
            {"sequence_bias": _tool_call_bias(processor.tokenizer, (width, height))}
            if args.tiny
            else None
        ),
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=processor,
        args=config,
        train_dataset=dataset,
        environment_factory=env_cls,
    )
    try:
        trainer.train()
    finally:
        close_shared_leases()  # stop the desktops now rather than at interpreter exit
    for record in trainer.state.log_history:
        if "rewards/OSWorld/mean" in record:
            logger.info(
                "step %d: reward %.3f, tool calls per rollout %.1f",
                record["step"],
                record["rewards/OSWorld/mean"],
                record["tools/call_frequency"],
            )
    logger.info("outputs in %s", output_dir)


if __name__ == "__main__":
    main()
