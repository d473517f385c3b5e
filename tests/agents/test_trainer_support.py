"""Shared helpers of the trainer tests (importable as ``test_trainer_support``; holds no tests).

* ``tiny_model_dir()`` -- one tiny Qwen2.5-VL per test session, shared by the trainer tests.
* ``synthetic_trajectory()`` -- an episode as the pool records it, with sampled ids.
* ``FakeTextEnv`` -- a fast text env for the whole loop without desktops.
* ``scripted_demo()`` -- a UI-TARS text policy that always finishes (a demonstrator).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from osworld_agents.trainer.config import PRESETS, TrainConfig
from osworld_agents.trainer.distributed import DistContext, init_distributed
from PIL import Image

from osworld_gym.actions.spaces import TextActionSpace
from osworld_gym.policies.conversation import ImagePart
from osworld_gym.pool import StepRecord, Trajectory, TrajectoryGroup
from osworld_gym.pool.policy import PolicyRequest

pytestmark = pytest.mark.heavy  # no tests: torch and the trainer, for the heavy modules

DEMO_TEXT = "Thought: The task is done.\nAction: finished(content='done')"


def tools(policy: Any) -> tuple[Any, Any]:
    """An agent that renders episodes (no engine) and the policy's chat encoder."""
    from osworld_agents.engines.chat_encoding import QwenChatEncoder

    from osworld_gym.policies.uitars import UITARSAgent

    # A one-line prompt: the full UI-TARS prompt is ~700 tiny-tokenizer tokens of context.
    agent = UITARSAgent(
        engine=None,  # type: ignore[arg-type]
        min_pixels=56 * 56,
        max_pixels=56 * 56,
        prompt_template="Task: {instruction}",
    )
    return agent, QwenChatEncoder(policy.tokenizer, policy.image_processor)


def groups_of(seed: int) -> list[TrajectoryGroup]:
    """Two groups of 3 with mixed scores and 1-3 steps: varied lengths, +/- advantages."""
    out = []
    for g, scores in enumerate(([1.0, 0.0, 0.0], [0.0, 1.0, 1.0])):
        task = f"task-{seed}-{g}"
        episodes = [
            synthetic_trajectory(task, r, steps=1 + (r + g) % 3, score=s, seed=seed + 7 * g + r)
            for r, s in enumerate(scores)
        ]
        out.append(TrajectoryGroup(task, episodes))
    return out


def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the tiny model once per session (the builder trains a tokenizer: seconds)."""
    from osworld_agents.models import build_tiny_qwen

    folder = tmp_path_factory.getbasetemp() / "trainer-tiny-model"
    if not (folder / "config.json").is_file():
        build_tiny_qwen(folder, seed=0)
    return folder


def png(width: int, height: int, seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def make_image(width: int, height: int, seed: int) -> ImagePart:
    """A random-pixel PNG image part of the given size."""
    return ImagePart(png(width, height, seed), width, height)


def synthetic_trajectory(
    task_id: str, rollout: int, *, steps: int, score: float, seed: int, size: int = 56
) -> Trajectory:
    """An episode with ``steps`` sampled responses (random ids of plain tokens) and scores."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(steps):
        n = int(rng.integers(3, 9))
        records.append(
            StepRecord(
                screenshot=png(size, size, seed * 100 + i),
                action="x",
                text="x",
                extra={
                    "token_ids": rng.integers(20, 300, n).tolist(),
                    "logprobs": (-rng.random(n) * 5).tolist(),
                },
            )
        )
    return Trajectory(
        task_id=task_id,
        rollout=rollout,
        instruction=f"do {task_id}",
        steps=records,
        final_screenshot=png(size, size, seed * 100 + steps),
        score=score,
        truncated=True,
    )


class FakeTextEnv(gym.Env[dict[str, Any], str]):
    """Episodes of at most ``max_steps`` text actions over any task id.

    The score is deterministic in the texts: 1 when a response says ``finished``, else 1 when
    the total length of the responses is a multiple of 3 -- so a random tiny model succeeds
    about a third of the time and GRPO groups carry signal.
    """

    metadata = {"render_modes": []}

    def __init__(
        self, *, screen_size: tuple[int, int] = (64, 64), max_steps: int = 2, **_: Any
    ) -> None:
        width, height = screen_size
        self.shape = (height, width, 3)
        self.max_steps = max_steps
        self.observation_space = spaces.Dict(
            {
                "screenshot": spaces.Box(0, 255, self.shape, np.uint8),
                "instruction": TextActionSpace(256),
            }
        )
        self.action_space = TextActionSpace(4096)
        self.task_id, self.t, self.texts = "", 0, []

    def _obs(self) -> dict[str, Any]:
        key = hashlib.blake2b(f"{self.task_id}/{self.t}".encode(), digest_size=4).digest()
        shade = np.random.default_rng(int.from_bytes(key, "big"))
        frame = shade.integers(0, 256, self.shape, dtype=np.uint8)
        return {"screenshot": frame, "instruction": f"do {self.task_id}"}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.task_id, self.t, self.texts = str((options or {})["task_id"]), 0, []
        return self._obs(), {"task_id": self.task_id, "step": 0}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        self.t += 1
        self.texts.append(action)
        info: dict[str, Any] = {"task_id": self.task_id, "step": self.t, "infra_error": None}
        info["parse_error"] = None if "Action:" in action else "no 'Action:'"
        terminated = "finished" in action
        truncated = not terminated and self.t >= self.max_steps
        reward = 0.0
        if terminated or truncated:
            total = sum(len(text) for text in self.texts)
            reward = 1.0 if terminated or total % 3 == 0 else 0.0
            info["score"] = reward
        return self._obs(), reward, terminated, truncated, info


def scripted_demo(requests: list[PolicyRequest]) -> list[str]:
    """A demonstrator: every episode ends at once with a finished() action."""
    return [DEMO_TEXT for _ in requests]


TASKS = ("os-write-file-content", "os-count-error-lines", "os-chmod-script")
"""The fake env's tasks the trainer loop tests train on."""


def fake_config(tiny_dir: Path, output: Path, **changes: object) -> TrainConfig:
    """The cpu preset shrunk to seconds: fake env, 2 tasks x 2 rollouts, 2 steps, 12 tokens."""
    base = dataclasses.replace(
        PRESETS["cpu"],
        output_dir=str(output),
        model=str(tiny_dir),
        suite="desktop-basics",
        task_ids=TASKS,
        env_entry_point="test_trainer_support:FakeTextEnv",
        num_envs=2,
        screen_size=(64, 64),
        max_steps=2,
        tasks_per_iteration=2,
        rollouts_per_task=2,
        max_new_tokens=12,
        max_pixels=64 * 64,
        lr=1e-3,
        micro_batch_size=2,
        eval_every=0,
        eval_before_train=False,
        checkpoint_every=1,
        keep_checkpoints=0,
        tensorboard=False,
        progress=False,
        iterations=1,
    )
    return dataclasses.replace(base, **changes)


def join_gloo_world(rank: int, world: int, port: int) -> DistContext:
    """A spawned test rank joins a gloo world on loopback, as torchrun would set it up."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        GLOO_SOCKET_IFNAME="lo",
        HF_HUB_OFFLINE="1",
    )
    torch.set_num_threads(1)  # several processes on a small host
    return init_distributed("gloo", "cpu")
