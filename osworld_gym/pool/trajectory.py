"""Trajectory records: what a rollout keeps of each episode, screenshots stored compressed.

A full-resolution RGB screenshot is 6 MB as an array and ~100-300 kB as PNG; ARPO's replay buffer of
fp32 pixel values holds ~760 MB per trajectory (``docs/design/known-traps.md#replay-memory``).
Records here keep encoded bytes and decode on demand.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def encode_screenshot(
    frame: np.ndarray, fmt: str = "png", *, jpeg_quality: int = 85, png_compress_level: int = 1
) -> bytes:
    r"""Encode an ``H x W x 3`` uint8 frame as PNG or JPEG bytes.

    Example:
        >>> data = encode_screenshot(np.zeros((4, 6, 3), np.uint8))
        >>> data[:4] == b"\x89PNG", decode_screenshot(data).shape
        (True, (4, 6, 3))
    """
    from PIL import Image

    buffer = io.BytesIO()
    image = Image.fromarray(np.ascontiguousarray(frame, dtype=np.uint8))
    if fmt == "png":
        image.save(buffer, format="PNG", compress_level=png_compress_level)
    elif fmt == "jpeg":
        image.save(buffer, format="JPEG", quality=jpeg_quality)
    else:
        raise ValueError(f"unknown screenshot format {fmt!r}; use 'png' or 'jpeg'")
    return buffer.getvalue()


def decode_screenshot(data: bytes) -> np.ndarray:
    """Decode PNG or JPEG bytes into an ``H x W x 3`` uint8 array."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


@dataclass
class StepRecord:
    """One step of a trajectory.

    Attributes:
        screenshot: The encoded screenshot the policy acted on.
        action: The action sent to the env.
        text: The model's raw output, when the policy gave one.
        parse_error: Why the text did not parse (the env's ``info["parse_error"]``), or None.
        action_error: Why the desktop refused the action, or None.
        reward: The step's reward (the score on the last step).
        timings: Seconds per phase: the env's (``action``, ``settle``, ``observe``,
            ``evaluate``...), plus ``policy`` (the policy call that chose this action) and
            ``env`` (the whole step in its worker).
        extra: What the policy attached to its output (token ids, log-probs, ...).
    """

    screenshot: bytes | None
    action: Any
    text: str | None = None
    parse_error: str | None = None
    action_error: str | None = None
    reward: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trajectory:
    """One episode of one task.

    Attributes:
        task_id: The task.
        rollout: Index of this rollout within its group (0 .. group_size - 1).
        attempt: 0 for the first try; re-runs after infrastructure faults count up.
        env_id: The pool env that ran it.
        instruction: The task's instruction.
        steps: The steps, in order.
        final_screenshot: The encoded screenshot after the last step.
        score: The evaluator's score (the last step's ``info["score"]``), None if not scored.
        terminated: Ended by the agent's DONE or FAIL.
        truncated: Ended by the step limit or an infrastructure fault.
        infra_error: The infrastructure fault that cut the episode, if any.
        evaluation_error: Why an episode that ran to its end has no score (the last step's
            ``info["evaluation_error"]``: a missing metric library, a failed postconfig step).
        error: Why the episode could not start (the reset's error), if it could not.
        reset_timings: Seconds per phase of the reset.
        wall_seconds: Wall time from the reset call to the last step's result.
    """

    task_id: str
    rollout: int
    attempt: int = 0
    env_id: int = -1
    instruction: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    final_screenshot: bytes | None = None
    score: float | None = None
    terminated: bool = False
    truncated: bool = False
    infra_error: str | None = None
    evaluation_error: str | None = None
    error: str | None = None
    reset_timings: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0

    @property
    def total_reward(self) -> float:
        """Sum of the step rewards."""
        return float(sum(step.reward for step in self.steps))

    @property
    def complete(self) -> bool:
        """The episode ran to its end (DONE/FAIL or the step limit) without a fault."""
        return (
            self.error is None and self.infra_error is None and (self.terminated or self.truncated)
        )

    def screenshots(self) -> Iterator[bytes]:
        """Every encoded screenshot in order: one per step, then the final one."""
        for step in self.steps:
            if step.screenshot is not None:
                yield step.screenshot
        if self.final_screenshot is not None:
            yield self.final_screenshot

    def nbytes(self) -> int:
        """Bytes the stored screenshots take."""
        return sum(len(shot) for shot in self.screenshots())


@dataclass
class TrajectoryGroup:
    """All rollouts of one task: the unit GRPO computes advantages over.

    Attributes:
        task_id: The task.
        trajectories: One per rollout, ordered by rollout index.
        discarded: Attempts cut by infrastructure faults and re-run (kept for accounting).
    """

    task_id: str
    trajectories: list[Trajectory]
    discarded: list[Trajectory] = field(default_factory=list)

    @property
    def scores(self) -> list[float | None]:
        """Each rollout's score, in rollout order."""
        return [t.score for t in self.trajectories]

    def __len__(self) -> int:
        return len(self.trajectories)
