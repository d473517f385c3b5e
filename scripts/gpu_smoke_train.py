"""GPU smoke run of the trainer's ``paper`` code path: vLLM rollouts, FSDP2 update, weight push.

Run it through ``scripts/gpu_check.sh train`` (which sets up vLLM 0.33), on one NVIDIA GPU::

    bash scripts/gpu_check.sh train                      # ~5 min on an H200 (an estimate)
    bash scripts/gpu_check.sh train --iterations 3 --eager

What it runs: ``osworld_agents.trainer.train.main()`` itself with the ``paper`` preset's
settings -- bf16, a 1920x1080 screen at ARPO's ``min/max_pixels``, ``max_new_tokens`` 8192,
gradient checkpointing, PPO with ARPO's clip range -- and ``rollout_engine="vllm"`` plus
``fsdp=True`` (FSDP2 in a world of one); only the counts shrink (``--tasks`` x ``--rollouts``
episodes of at most ``--max-steps`` steps, ``--iterations`` iterations). The policy is the tiny
Qwen2.5-VL built offline (head dimension 64, as ``gpu_check.py`` builds it; no real VLM can be
fetched on the bare GPU machine), sampled at full length: an untrained policy rarely emits an
end-of-turn, so most responses run the whole 8,192 tokens. The desktops are
``RenderedDesktopEnv``, in process (the GPU machine has no Xvfb): PIL-drawn 1920x1080
screenshots of a desktop with a dialog, an instruction to click its button, a score of 1 for a
click inside it -- and, so that an untrained policy's GRPO groups carry signal, for a response
whose length is a multiple of 3 (a stand-in reward, as the trainer tests' fake env has).

What it checks (one PASS/FAIL line each; exit status 0 only when all pass): the run completes;
the trainer's parameters are FSDP2 shards; one push per iteration with versions 1..N, every
trainer tensor in it; every generation of
iteration k carries ``weight_version`` k (so the second iteration samples the pushed weights);
every rollout prompt carried its screenshot(s). It prints tokens/s for rollout (sampled tokens
over time in ``generate``) and for the update (training-sequence tokens over update time), and
the push's size and time.

Verified / not verified: written on a machine with neither a GPU nor vLLM, and **never run on
a GPU**. What did run (``--fake-vllm --device cpu``, see ``--help``) is this script's own flow
and the trainer's wiring on CPU: FSDP2 in a world of one over gloo, the full weight push from
the sharded model, versions and sleep/wake calls -- against a fake ``vllm`` module that answers
every request with one of three canned UI-TARS texts, so no figure printed in that mode says
anything about vLLM (``--fake-vllm --device cpu --tasks 1 --rollouts 2 --max-new-tokens 64``:
all checks pass in ~90 s on 2 busy CPU cores). Not run anywhere: real vLLM (its start-up with
this config, sampling with images, ``reload_weights`` from a generator, sleep level 1 next to
FSDP on one GPU), NCCL, bf16 on CUDA, and the memory fit of both on one GPU; the throughput
figures exist only from a GPU run.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gpu_check import Report, build_tiny  # this script's folder: run as a script

SCREEN = (1920, 1080)
_CLICK = re.compile(r"click\(\s*start_box\s*=\s*['\"]?[(<\[]?[^0-9]*(\d+)\s*,\s*(\d+)")

logger = logging.getLogger("gpu_smoke_train")


# --- the in-process desktop ----------------------------------------------------------------------


def render_desktop(task_id: str, step: int, size: tuple[int, int]) -> tuple[np.ndarray, tuple]:
    """A desktop screenshot (HxWx3 uint8) with a dialog, and the dialog button's box.

    Deterministic in (task, step): the dialog moves per task, the clock per step.
    """
    from PIL import Image, ImageDraw, ImageFont

    width, height = size
    digest = hashlib.blake2b(task_id.encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "big"))
    image = Image.new("RGB", size, (38, 70, 112))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    for i in range(0, height, 8):  # a vertical gradient wallpaper
        shade = 60 + 80 * i // height
        draw.rectangle((0, i, width, i + 8), fill=(30, shade // 2 + 30, shade + 40))
    bar = max(height // 27, 12)
    draw.rectangle((0, height - bar, width, height), fill=(32, 32, 36))
    for i, label in enumerate(("Files", "Terminal", "Editor", "Browser")):
        draw.rectangle(
            (8 + 110 * i, height - bar + 4, 110 * (i + 1), height - 4), fill=(60, 60, 70)
        )
        draw.text((16 + 110 * i, height - bar + 8), label, fill="white", font=font)
    draw.text((width - 90, height - bar + 8), f"12:{step:02d}", fill="white", font=font)
    for i in range(6):  # desktop icons
        draw.rectangle((24, 24 + 90 * i, 72, 72 + 90 * i), fill=(200, 200, 210))
        draw.text((20, 76 + 90 * i), f"file{i}.txt", fill="white", font=font)
    w, h = width // 3, height // 4
    x = int(rng.integers(width // 8, width - w - width // 8))
    y = int(rng.integers(height // 8, height - h - height // 8))
    draw.rectangle((x, y, x + w, y + h), fill=(236, 236, 236), outline=(90, 90, 90), width=2)
    draw.rectangle((x, y, x + w, y + 28), fill=(70, 110, 180))
    draw.text((x + 10, y + 8), f"Settings - {task_id}", fill="white", font=font)
    for i in range(3):
        draw.text((x + 20, y + 50 + 22 * i), f"Option {i + 1}: enabled", fill="black", font=font)
    button = (x + w - 120, y + h - 50, x + w - 20, y + h - 16)
    draw.rectangle(button, fill=(220, 220, 220), outline=(40, 40, 40), width=2)
    draw.text((button[0] + 40, button[1] + 10), "OK", fill="black", font=font)
    return np.asarray(image, dtype=np.uint8), button


class RenderedDesktopEnv(gym.Env):
    """An in-process env of rendered screenshots that takes UI-TARS text actions.

    Built by the trainer's pool from ``env_entry_point`` with the trainer's env keywords.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        *,
        screen_size: tuple[int, int] = SCREEN,
        max_steps: int = 15,
        dialect_options: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        from gymnasium import spaces

        from osworld_gym.actions.spaces import TextActionSpace

        self.size = tuple(screen_size)
        self.max_steps = max_steps
        self.options = dict(dialect_options or {})
        width, height = self.size
        self.observation_space = spaces.Dict(
            {
                "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
                "instruction": TextActionSpace(256),
            }
        )
        self.action_space = TextActionSpace(65536)
        self.task_id, self.t, self.texts, self.button = "", 0, [], (0, 0, 0, 0)

    def _obs(self) -> dict[str, Any]:
        frame, self.button = render_desktop(self.task_id, self.t, self.size)
        return {"screenshot": frame, "instruction": "Click the OK button of the Settings dialog."}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start ``options["task_id"]``: its dialog, step 0."""
        super().reset(seed=seed)
        self.task_id, self.t, self.texts = str((options or {})["task_id"]), 0, []
        return self._obs(), {"task_id": self.task_id, "step": 0}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Score a click on the button (or the stand-in length rule) when the episode ends."""
        from osworld_gym.actions.coords import to_screen

        self.t += 1
        self.texts.append(action)
        info: dict[str, Any] = {"task_id": self.task_id, "step": self.t, "infra_error": None}
        info["parse_error"] = None if "Action:" in action else "no 'Action:'"
        hit = False
        match = _CLICK.search(action)
        if match:
            x, y = to_screen(
                float(match.group(1)),
                float(match.group(2)),
                self.size,
                self.options.get("coordinates", "resized"),
                factor=self.options.get("factor", 28),
                min_pixels=self.options.get("min_pixels", 3136),
                max_pixels=self.options.get("max_pixels", 2116800),
            )
            left, top, right, bottom = self.button
            hit = left <= x <= right and top <= y <= bottom
        terminated = hit or "finished" in action or info["parse_error"] is not None
        truncated = not terminated and self.t >= self.max_steps
        reward = 0.0
        if terminated or truncated:
            reward = float(hit or sum(len(t) for t in self.texts) % 3 == 0)
            info["score"] = reward
        return self._obs(), reward, terminated, truncated, info


# --- instrumentation -----------------------------------------------------------------------------


@dataclass
class Timeline:
    """What the run did, in order: generate calls and pushes."""

    events: list[dict[str, Any]] = field(default_factory=list)
    update_tokens: int = 0
    update_seconds: float = 0.0

    def generate_events(self) -> list[dict[str, Any]]:
        """The generate calls, in order."""
        return [e for e in self.events if e["kind"] == "generate"]

    def push_events(self) -> list[dict[str, Any]]:
        """The weight pushes, in order."""
        return [e for e in self.events if e["kind"] == "push"]


def instrument(timeline: Timeline) -> None:
    """Record every vLLM generate, every weight push and every training epoch of the run."""
    from osworld_agents.engines.vllm_engine import VLLMEngine
    from osworld_agents.trainer import train

    generate = VLLMEngine.generate

    @functools.wraps(generate)
    def recorded_generate(self: Any, conversations: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        out = generate(self, conversations, *args, **kwargs)
        timeline.events.append(
            {
                "kind": "generate",
                "seconds": time.perf_counter() - started,
                "prompts": len(out),
                "tokens": sum(len(g.token_ids) for g in out),
                "prompt_tokens": sum(g.prompt_tokens or 0 for g in out),
                "images": [sum(1 for _ in c.images()) for c in conversations],
                "versions": sorted({int(g.extra["weight_version"]) for g in out}),
            }
        )
        return out

    VLLMEngine.generate = recorded_generate  # type: ignore[method-assign]

    push = train.push_weights

    @functools.wraps(push)
    def recorded_push(engine: Any, model: Any, version: int) -> Any:
        stats = push(engine, model, version=version)
        sharded = all(callable(getattr(p, "full_tensor", None)) for p in model.parameters())
        timeline.events.append(
            {"kind": "push", "version": version, "sharded": sharded, **dataclasses.asdict(stats)}
        )
        return stats

    train.push_weights = recorded_push  # type: ignore[assignment]

    epoch = train.train_epoch

    @functools.wraps(epoch)
    def recorded_epoch(model: Any, optimizer: Any, encoder: Any, samples: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        out = epoch(model, optimizer, encoder, samples, **kw)
        timeline.update_seconds += time.perf_counter() - started
        timeline.update_tokens += sum(s.length for s in samples)
        return out

    train.train_epoch = recorded_epoch  # type: ignore[assignment]


def install_fake_vllm() -> None:
    """A stand-in ``vllm`` module for CPU dry runs: canned answers, pushes consumed and dropped.

    It shows that this script and the trainer's wiring run; nothing about vLLM.
    """
    texts = ("Action: finished()", "Action: wait()", "Thought: look\nAction: wait()")

    class Output:
        def __init__(self, ids: list[int], prompt_ids: list[int]):
            logprob = types.SimpleNamespace(logprob=-1.0, rank=1, decoded_token=None)
            self.request_id, self.prompt_token_ids, self.num_cached_tokens = "r", prompt_ids, 0
            self.outputs = [
                types.SimpleNamespace(
                    token_ids=ids,
                    logprobs=[{t: logprob} for t in ids],
                    finish_reason="stop",
                    stop_reason=None,
                )
            ]

    class LLM:
        def __init__(self, **kwargs: Any):
            from transformers import AutoTokenizer

            self.kwargs = kwargs
            self.tokenizer = AutoTokenizer.from_pretrained(kwargs["model"], local_files_only=True)
            self.llm_engine = types.SimpleNamespace(
                model_executor=object(), reset_encoder_cache=lambda: None
            )

        def generate(self, prompts: list[dict[str, Any]], sampling: list[Any], **_: Any) -> list:
            outputs = []
            for prompt, params in zip(prompts, sampling, strict=True):
                seed = params.kwargs["seed"] or 0
                ids = self.tokenizer.encode(texts[seed % len(texts)])
                outputs.append(
                    Output([*ids, params.kwargs["stop_token_ids"][0]], prompt["prompt_token_ids"])
                )
            return outputs

        def collective_rpc(self, method: Any, args: tuple = (), kwargs: Any = None) -> list:
            for _name, _tensor in kwargs["weights_iterator"]:
                pass
            return [None]

        def sleep(self, level: int = 1) -> None:
            """Nothing to free."""

        def wake_up(self, tags: Any = None) -> bool:
            return True

        def reset_prefix_cache(self) -> bool:
            return True

    class SamplingParams:
        def __init__(self, **kwargs: Any):
            self.kwargs = kwargs

    module = types.ModuleType("vllm")
    module.LLM = LLM  # type: ignore[attr-defined]
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    module.__version__ = "fake"  # type: ignore[attr-defined]
    sys.modules["vllm"] = module


# --- the run -------------------------------------------------------------------------------------


def build_model(folder: Path) -> Path:
    """The tiny Qwen2.5-VL as the engine check builds it (head dimension 64)."""
    if (folder / "config.json").is_file():
        return folder
    return build_tiny(folder)


def smoke_config(args: argparse.Namespace, model: Path, out: Path) -> Any:
    """The ``paper`` preset with vLLM rollouts, FSDP, the rendered env and small counts."""
    from osworld_agents.trainer import PRESETS
    from osworld_agents.trainer.tasks import resolve_task_ids

    paper = PRESETS["paper"]
    tasks = resolve_task_ids(paper.suite, (), None)[: args.tasks]
    changes: dict[str, Any] = {
        "model": str(model),
        "output_dir": str(out / "run"),
        "rollout_engine": "vllm",
        "fsdp": True,
        "env_entry_point": f"{__name__}:RenderedDesktopEnv",
        "task_ids": tuple(tasks),
        "tasks_per_iteration": args.tasks,
        "rollouts_per_task": args.rollouts,
        "num_envs": args.tasks * args.rollouts,
        "max_steps": args.max_steps,
        "max_new_tokens": args.max_new_tokens,
        "iterations": args.iterations,
        "eval_every": 0,
        "checkpoint_every": 0,
        "keep_checkpoints": 1,
        "tensorboard": False,
        "progress": False,
        "vllm_gpu_memory_utilization": args.gpu_memory_utilization,
        "vllm_enforce_eager": args.eager,
        # The tiny model's positions end at 32k; a prompt + response fits well within.
        "vllm_max_model_len": args.max_model_len,
        "device": args.device,
    }
    if args.device == "cpu":
        changes.update(dtype="float32", dist_backend="gloo")
    return dataclasses.replace(paper, **changes)


def run(args: argparse.Namespace, report: Report) -> None:
    """Train as configured, then check the timeline and report the figures."""
    from osworld_agents.trainer.train import main

    out = Path(args.out or tempfile.mkdtemp(prefix="gpu-smoke-train-"))
    model = Path(args.model) if args.model else build_model(out / "tiny-model")
    config = smoke_config(args, model, out)
    timeline = Timeline()
    instrument(timeline)
    started = time.perf_counter()
    result = main(config)
    wall = time.perf_counter() - started
    report.facts["wall_seconds"] = round(wall, 1)

    report.add(
        "run completes",
        result.iterations_done == args.iterations,
        f"{result.iterations_done}/{args.iterations} iterations in {wall:.0f} s ({out})",
    )
    pushes = timeline.push_events()
    versions = [p["version"] for p in pushes]
    report.add(
        "one full push per iteration",
        versions == list(range(1, args.iterations + 1)) and all(p["tensors"] for p in pushes),
        f"versions {versions}, tensors {[p['tensors'] for p in pushes]}, "
        f"{[round(p['seconds'], 2) for p in pushes]} s, largest tensor "
        f"{max((p['largest_bytes'] for p in pushes), default=0) / 2**20:.1f} MiB",
    )
    report.add(
        "the update ran sharded (FSDP2)",
        bool(pushes) and all(p["sharded"] for p in pushes),
        "every trainer parameter a DTensor shard at each push",
    )
    # Which iteration a generate belongs to: the number of pushes before it.
    wrong, by_iteration = [], [0] * (args.iterations + 1)
    pushed = 0
    for event in timeline.events:
        if event["kind"] == "push":
            pushed += 1
            continue
        by_iteration[pushed] += event["prompts"]
        if event["versions"] != [pushed]:
            wrong.append((pushed, event["versions"]))
    report.add(
        "generations carry the pushed weight version",
        not wrong and all(by_iteration[: args.iterations]),
        f"generations per iteration {by_iteration[: args.iterations]}; mismatches {wrong[:5]}",
    )
    calls = timeline.generate_events()
    images = [n for e in calls for n in e["images"]]
    report.add(
        "every prompt carries its screenshots",
        bool(images) and min(images) >= 1,
        f"{len(images)} prompts, {min(images, default=0)}-{max(images, default=0)} images each",
    )
    tokens = sum(e["tokens"] for e in calls)
    seconds = sum(e["seconds"] for e in calls)
    prompts = sum(e["prompt_tokens"] for e in calls)
    report.facts.update(
        rollout_tokens=tokens,
        rollout_seconds=round(seconds, 2),
        rollout_tokens_per_s=round(tokens / seconds, 1) if seconds else None,
        rollout_prompt_tokens=prompts,
        update_tokens=timeline.update_tokens,
        update_seconds=round(timeline.update_seconds, 2),
        update_tokens_per_s=round(timeline.update_tokens / timeline.update_seconds, 1)
        if timeline.update_seconds
        else None,
        push_seconds=[round(p["seconds"], 3) for p in pushes],
        push_bytes=pushes[0]["bytes"] if pushes else 0,
    )
    print(
        f"rollout: {tokens} sampled tokens in {seconds:.1f} s of generate = "
        f"{report.facts['rollout_tokens_per_s']} tokens/s ({prompts} prompt tokens)",
        flush=True,
    )
    print(
        f"update: {timeline.update_tokens} sequence tokens in {timeline.update_seconds:.1f} s = "
        f"{report.facts['update_tokens_per_s']} tokens/s",
        flush=True,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="a Qwen2.5-VL-family folder (default: build the tiny one)")
    parser.add_argument("--out", help="run folder (default: a new temporary folder)")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=4, help="tasks (GRPO groups) per iteration")
    parser.add_argument("--rollouts", type=int, default=8, help="episodes per task")
    parser.add_argument("--max-steps", type=int, default=2, help="steps per episode at most")
    parser.add_argument("--max-new-tokens", type=int, default=8192, help="the paper's 8192")
    parser.add_argument(
        "--max-model-len",
        type=int,
        help="vLLM prompt + response tokens (default: the model's positions)",
    )
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    parser.add_argument("--eager", action="store_true", help="vLLM without CUDA graphs")
    parser.add_argument("--device", default="auto", help="'auto' (the GPU) or 'cpu' (dry run)")
    parser.add_argument(
        "--fake-vllm",
        action="store_true",
        help="CPU dry run of this script against a canned fake `vllm` (says nothing of vLLM)",
    )
    parser.add_argument("--json", help="also write the report here")
    parser.add_argument("--verbose", action="store_true", help="the trainer's INFO logs")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the report; 0 when every check passed."""
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.fake_vllm:
        install_fake_vllm()
    report = Report()
    try:
        run(args, report)
    except Exception as e:  # noqa: BLE001 - the report says what failed, then the traceback
        logger.exception("smoke run failed")
        report.add("run completes", False, f"{type(e).__name__}: {e}")
    print(json.dumps(report.facts, indent=1), flush=True)
    print("SUMMARY:", "FAIL" if report.failed else "PASS", flush=True)
    if args.json:
        payload = {
            "checks": [dataclasses.asdict(c) for c in report.checks],
            "figures": report.facts,
        }
        Path(args.json).write_text(json.dumps(payload, indent=1))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
