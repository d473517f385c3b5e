"""Run SkyRL's own VLM generator on osworld desktops with a scripted "model" (no GPU).

A check before GPU time is spent: ``SkyRLVLMGymGenerator.agent_loop`` (the code that trains
VLMs in SkyRL) makes the ``osworld`` env from dataset rows, calls ``init``/``step``/
``get_metrics``/``close`` on its env threads and turns the rewards into per-token rewards. The
inference client here is a stand-in: it "renders" a conversation to made-up token ids (four per
image) and answers with the ``ui-basics`` oracle (reward 1), a distractor (reward 0) or
``wait()`` until the step limit (FAIL replacement, reward 0).

Needs Python 3.12 with ``skyrl==0.4.0`` importable (its ``skyrl.train`` modules import torch,
loguru, ...; the GPU training install has them) and osworld-gym with the ``skyrl`` extra. The
tokenizer is the offline tiny Qwen2.5-VL one (written by ``build_tiny_qwen``) unless
``--tokenizer`` names another. Usage::

    python examples/skyrl/generator_smoke.py
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from typing import Any

from skyrl.train.config import GeneratorConfig, SkyRLGymConfig
from skyrl.train.generators.base import TrajectoryID
from skyrl.train.generators.skyrl_vlm_generator import SkyRLVLMGymGenerator
from transformers import AutoTokenizer

from osworld_gym.integrations import skyrl as osworld_skyrl
from osworld_gym.integrations.lease import close_shared_leases
from osworld_gym.policies.oracles.ui_basics import (
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    oracle_responses,
)

WAIT = "Thought: Nothing to do yet.\nAction: wait()"


class ScriptedClient:
    """The parts of SkyRL's inference client the VLM generator calls, answering from scripts."""

    model_name = "scripted"

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts  # instance id -> the response of each turn (the last repeats)
        self.turns: dict[str, int] = {}

    def _message_ids(self, message: dict[str, Any]) -> list[int]:
        # Each message renders alone, so a longer conversation extends a shorter one's ids: the
        # prefix property the generator relies on to cut out observation tokens.
        ids = self.tokenizer.encode(f"{message['role']}:")
        content = message["content"]
        for part in [content] if isinstance(content, str) else content:
            if isinstance(part, str):
                ids += self.tokenizer.encode(part)
            elif part.get("type") == "text":
                ids += self.tokenizer.encode(part["text"])
            else:
                ids += [0] * 4  # an image
        return ids

    async def render_chat_completion(self, request: dict[str, Any]) -> dict[str, Any]:
        """Token ids of a whole conversation (no vision features)."""
        messages = request["json"]["messages"]
        return {"token_ids": [i for m in messages for i in self._message_ids(m)], "features": None}

    async def generate(self, engine_input: dict[str, Any], model: str | None = None) -> dict:
        """The next scripted response of the trajectory's session."""
        session = engine_input["session_ids"][0]
        turn = self.turns[session] = self.turns.get(session, 0) + 1
        script = self.scripts[session.rsplit("_", 1)[0]]
        text = script[min(turn, len(script)) - 1]
        return {
            "responses": [text],
            "response_ids": [self.tokenizer.encode(text)],
            "stop_reasons": ["stop"],
            "response_logprobs": None,
        }

    async def finish_session(self, session_id: str) -> None:
        """Nothing to free."""


def main() -> None:
    """Three trajectories through the generator: oracle, distractor, waiting out the limit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", help="a tokenizer folder (default: the tiny offline one)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.tokenizer is None:
        from osworld_agents.models import build_tiny_qwen

        args.tokenizer = str(build_tiny_qwen(tempfile.mkdtemp(prefix="tiny-qwen-")))
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)

    config = {"tasks": SUITE, "screen_size": list(SCREEN_SIZE), "desk_size": 3}
    config["env_kwargs"] = {"wait_seconds": 0.05}  # the scripted wait() need not wait long
    rows = {r["task_id"]: r for r in osworld_skyrl.skyrl_dataset_rows(config=config)}
    runs = {  # instance id -> (task, script, expected reward)
        "oracle": ("click-colour-01", oracle_responses("click-colour-01"), 1.0),
        "distractor": (
            "type-word-01",
            oracle_responses("type-word-01", answer=distractor_answer("type-word-01")),
            0.0,
        ),
        "wait": ("click-colour-02", [WAIT], 0.0),
    }
    client = ScriptedClient(tokenizer, {name: script for name, (_, script, _) in runs.items()})
    generator = SkyRLVLMGymGenerator(
        GeneratorConfig(vision_language_generator=True, batched=False, max_turns=15),
        SkyRLGymConfig(max_env_workers=8),
        client,
        tokenizer,
    )

    async def rollouts() -> list[Any]:
        loops = []
        for name, (task_id, _, _) in runs.items():
            row = rows[task_id]
            extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
            loops.append(
                generator.agent_loop(
                    row["prompt"],
                    row["env_class"],
                    extras,
                    max_tokens=512,
                    max_input_length=100_000,
                    trajectory_id=TrajectoryID(instance_id=name, repetition_id=0),
                )
            )
        return await asyncio.gather(*loops)

    started = time.monotonic()
    try:
        outputs = asyncio.run(rollouts())
    finally:
        close_shared_leases()
    failures = 0
    for (name, (task_id, _, expected)), out in zip(runs.items(), outputs, strict=True):
        reward = sum(out.reward)
        metrics = out.env_metrics
        ok = reward == expected and out.reward[-1] == expected
        failures += not ok
        print(
            f"{name:<10} {task_id:<16} reward={reward} steps={metrics['steps']:.0f} "
            f"fail_replaced={metrics['fail_replaced']:.0f} sampled_tokens={sum(out.loss_mask)} "
            f"of {len(out.response_ids)} {'ok' if ok else f'EXPECTED {expected}'}"
        )
    batch = osworld_skyrl.OSWorldTextEnv.aggregate_metrics([o.env_metrics for o in outputs])
    print({f"environment/{k}": round(v, 3) for k, v in batch.items()})
    print(f"{len(outputs)} trajectories in {time.monotonic() - started:.1f} s")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
