"""From collected groups to training samples: one sample per trajectory, the whole episode.

A sample keeps the episode as a ``Conversation`` (screenshots as encoded bytes) and is
re-encoded into model inputs whenever a pass needs it, so a 15-screenshot 1080p episode never
holds its ~750 MB of pixel patches longer than one micro-batch. The sampled token ids recorded
by the policy are spliced in verbatim (no re-tokenization); episodes whose responses carry no
ids (a scripted demonstration) can be *teacher-forced*: their text is tokenized here and becomes
the target.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from osworld_agents.arpo import Injection, grpo_advantages, trajectory_rewards
from osworld_agents.engines.chat_encoding import QwenChatEncoder

from osworld_gym.policies.conversation import Conversation, Turn
from osworld_gym.policies.uitars import UITARSAgent
from osworld_gym.pool.trajectory import Trajectory, TrajectoryGroup

logger = logging.getLogger(__name__)

__all__ = [
    "SampleStats",
    "TrainSample",
    "make_sample",
    "rl_samples",
    "set_importance_logprobs",
    "sft_samples",
    "teacher_forced",
]


@dataclass
class TrainSample:
    """One trajectory ready for training.

    Attributes:
        conversation: The whole episode (every screenshot acted on and every response).
        task_id: Its task.
        reward: Its scalar reward (score + format term).
        advantage: Its GRPO advantage (0 for SFT samples).
        replayed: It is a stored success injected by the replay buffer.
        length: Tokens of the encoded episode.
        loss_tokens: Tokens the loss scores (the sampled or teacher-forced responses).
        rollout_logprobs: ``[loss_tokens]`` log-probs the engine sampled with, or None.
        old_logprobs: ``[loss_tokens]`` PPO's old log-probs, once computed.
        ref_logprobs: ``[loss_tokens]`` reference-policy log-probs (KL), once computed.
        importance_logprobs: ``[loss_tokens]`` sampling log-probs the PPO loss corrects
            staleness against (async rollouts: ``set_importance_logprobs()``); None: none.
    """

    conversation: Conversation
    task_id: str
    reward: float
    advantage: float
    replayed: bool
    length: int
    loss_tokens: int
    rollout_logprobs: torch.Tensor | None = None
    old_logprobs: torch.Tensor | None = None
    ref_logprobs: torch.Tensor | None = None
    importance_logprobs: torch.Tensor | None = None

    def norm_count(self, mode: str) -> float:
        """This sample's share of the loss normaliser (see ``arpo.loss.loss_normalizer``)."""
        if mode == "token-mean":
            return float(self.loss_tokens)
        return 1.0 if self.loss_tokens else 0.0


@dataclass
class SampleStats:
    """What happened to an iteration's trajectories on the way to samples.

    Attributes:
        kept: Samples built.
        too_long: Dropped: longer than the token limit.
        no_loss_tokens: Dropped: no response to score (no sampled ids, not teacher-forced).
        unsuccessful: Not kept by an SFT filter (score at or below the threshold).
        rewards: Reward of every trajectory considered, for logging.
    """

    kept: int = 0
    too_long: int = 0
    no_loss_tokens: int = 0
    unsuccessful: int = 0
    rewards: list[float] = field(default_factory=list)


def teacher_forced(conversation: Conversation, encoder: QwenChatEncoder) -> Conversation:
    """The conversation with every unsampled assistant turn made a target.

    An assistant turn without ``token_ids`` gets its text's ids plus the end-of-turn token, so
    the model also learns to stop; turns that carry sampled ids keep them.
    """
    turns = []
    for turn in conversation.turns:
        if turn.role == "assistant" and turn.token_ids is None:
            ids = (*encoder.tokenize(turn.text), encoder.end_of_turn_id)
            turn = Turn(turn.role, turn.parts, ids)
        turns.append(turn)
    return Conversation(turns)


def _rollout_logprobs(trajectory: Trajectory) -> torch.Tensor | None:
    """The engine's log-probs of every sampled response token, in order, if all were recorded."""
    pieces = []
    for step in trajectory.steps:
        ids = step.extra.get("token_ids")
        if ids is None or len(ids) == 0:
            continue
        logprobs = step.extra.get("logprobs")
        if logprobs is None or len(logprobs) != len(ids):
            return None
        pieces.append(torch.as_tensor(logprobs, dtype=torch.float32).flatten())
    return torch.cat(pieces) if pieces else None


def make_sample(
    trajectory: Trajectory,
    agent: UITARSAgent,
    encoder: QwenChatEncoder,
    *,
    reward: float,
    advantage: float = 0.0,
    replayed: bool = False,
    teacher_force: bool = False,
) -> TrainSample:
    """Build one sample (encoding the episode once, to count its tokens).

    Args:
        trajectory: The episode.
        agent: Renders it as the conversation the policy saw.
        encoder: The model's chat encoder.
        reward: Its reward.
        advantage: Its advantage.
        replayed: It came from the replay buffer.
        teacher_force: Make unsampled responses targets (``teacher_forced()``).

    Returns:
        The sample.
    """
    conversation = agent.episode_conversation(trajectory)
    if teacher_force:
        conversation = teacher_forced(conversation, encoder)
    chat = encoder.encode_episode(conversation)
    return TrainSample(
        conversation=conversation,
        task_id=trajectory.task_id,
        reward=reward,
        advantage=advantage,
        replayed=replayed,
        length=len(chat),
        loss_tokens=int(sum(chat.loss_mask)),
        rollout_logprobs=_rollout_logprobs(trajectory),
    )


def set_importance_logprobs(samples: Iterable[TrainSample]) -> int:
    """Correct this iteration's rollouts for the staleness of the weights that sampled them.

    The PPO loss then weights each of their tokens by ``min(1, exp(old - rollout))`` (see
    ``osworld_agents.arpo.loss.truncated_importance_weights()``): the decoupled mode's lag of
    at most ``max_staleness`` versions. Replayed successes are left as ARPO trains them (their
    ratio starts at 1 against the recomputed old log-probs): they were sampled iterations ago on
    purpose, and weighting them by how far the policy has moved since would mute the very
    successes replay keeps for the hardest tasks.

    Returns:
        Rollouts left uncorrected (no or incomplete sampling log-probs: a text-only engine).
    """
    missing = 0
    for sample in samples:
        sample.importance_logprobs = None
        if sample.replayed:
            continue
        logprobs = sample.rollout_logprobs
        if logprobs is not None and len(logprobs) == sample.loss_tokens:
            sample.importance_logprobs = logprobs
        else:
            missing += 1
    return missing


def _keep(sample: TrainSample, max_tokens: int, stats: SampleStats) -> bool:
    if sample.loss_tokens == 0:
        stats.no_loss_tokens += 1
        return False
    if sample.length > max_tokens:
        # Truncating would cut image tokens away from their pixels
        # (docs/design/arpo.md#training-samples).
        stats.too_long += 1
        logger.warning(
            "dropping a %d-token episode of task %s (limit %d)",
            sample.length,
            sample.task_id,
            max_tokens,
        )
        return False
    stats.kept += 1
    return True


def rl_samples(
    injections: Sequence[Injection],
    agent: UITARSAgent,
    encoder: QwenChatEncoder,
    *,
    format_coef: float,
    norm_by_std: bool,
    max_tokens: int,
) -> tuple[list[TrainSample], SampleStats]:
    """GRPO samples: rewards and advantages within each (replay-injected) group.

    Advantages are computed over the whole group before any sample is dropped for length, so
    a dropped episode still served as its group's baseline.

    Args:
        injections: The iteration's groups after replay injection.
        agent: Renders episodes.
        encoder: The model's chat encoder.
        format_coef: Weight of the format term in the reward.
        norm_by_std: Divide advantages by the group std.
        max_tokens: Longer episodes are dropped.

    Returns:
        The samples and the accounting.
    """
    samples: list[TrainSample] = []
    stats = SampleStats()
    for injection in injections:
        group = injection.group
        rewards = trajectory_rewards(group.trajectories, format_coef=format_coef)
        stats.rewards.extend(rewards)
        advantages = grpo_advantages(
            torch.tensor(rewards, dtype=torch.float64),
            [0] * len(rewards),
            norm_by_std=norm_by_std,
        ).tolist()
        for trajectory, reward, advantage, replayed in zip(
            group.trajectories, rewards, advantages, injection.replayed, strict=True
        ):
            sample = make_sample(
                trajectory, agent, encoder, reward=reward, advantage=advantage, replayed=replayed
            )
            if _keep(sample, max_tokens, stats):
                samples.append(sample)
    return samples, stats


def sft_samples(
    groups: Iterable[TrajectoryGroup],
    agent: UITARSAgent,
    encoder: QwenChatEncoder,
    *,
    success_threshold: float,
    teacher_force: bool,
    max_tokens: int,
    format_coef: float = 0.5,
) -> tuple[list[TrainSample], SampleStats]:
    """SFT samples: the successful episodes (score above ``success_threshold``) only.

    Args:
        groups: The iteration's groups.
        agent: Renders episodes.
        encoder: The model's chat encoder.
        success_threshold: Keep episodes scoring strictly above this.
        teacher_force: Tokenize unsampled responses as targets (demonstrations).
        max_tokens: Longer episodes are dropped.
        format_coef: Weight of the format term in the logged reward.

    Returns:
        The samples and the accounting.
    """
    samples: list[TrainSample] = []
    stats = SampleStats()
    for group in groups:
        rewards = trajectory_rewards(group.trajectories, format_coef=format_coef)
        stats.rewards.extend(rewards)
        for trajectory, reward in zip(group.trajectories, rewards, strict=True):
            if trajectory.score is None or trajectory.score <= success_threshold:
                stats.unsuccessful += 1
                continue
            sample = make_sample(
                trajectory, agent, encoder, reward=reward, teacher_force=teacher_force
            )
            if _keep(sample, max_tokens, stats):
                samples.append(sample)
    return samples, stats
