"""The pool's state machine: pool states, per-env states, worker commands, and misuse checks.

Each env moves through these states as the caller sees them::

    NEEDS_RESET --send_reset--> PENDING --recv(reset ok)--> READY --send--> PENDING
    PENDING --recv(step, episode goes on)--> READY
    PENDING --recv(step, episode over) / recv(reset failed)--> NEEDS_RESET
    PENDING --recv(launch kept failing)--> RETIRED   (final)

A result leaves ``PENDING`` only when the caller receives it, as in envpool: an env whose result
is finished but not yet received still counts as pending, so no call can overtake an unread
result. The pool itself is ``OPEN`` until ``close()``, then ``CLOSED`` for good.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from osworld_gym.errors import (
    AlreadyPendingCallError,
    ClosedPoolError,
    EnvRetiredError,
    ResetNeededError,
)


class PoolState(enum.Enum):
    """Whether the pool accepts calls."""

    OPEN = "open"
    CLOSED = "closed"


class EnvState(enum.Enum):
    """Where one env of the pool stands, as the caller sees it."""

    NEEDS_RESET = "needs_reset"
    READY = "ready"
    PENDING = "pending"
    RETIRED = "retired"


class Command(enum.Enum):
    """What a worker is asked to do."""

    RESET = "reset"
    STEP = "step"
    CALL = "call"
    CLOSE = "close"


def check_open(state: PoolState) -> None:
    """Raise ``ClosedPoolError`` unless the pool is open."""
    if state is not PoolState.OPEN:
        raise ClosedPoolError("the pool is closed; create a new EnvPool")


def check_env_ids(env_ids: Sequence[int], num_envs: int) -> None:
    """Reject env ids out of range or given twice in one call.

    Raises:
        IndexError: An id is not in ``range(num_envs)``.
        ValueError: An id appears twice.
    """
    for env_id in env_ids:
        if not 0 <= env_id < num_envs:
            raise IndexError(f"env id {env_id} is out of range for a pool of {num_envs} envs")
    if len(set(env_ids)) != len(env_ids):
        raise ValueError(f"env ids must be distinct within one call, got {list(env_ids)}")


def check_can_reset(env_id: int, state: EnvState) -> None:
    """A reset is allowed unless a call is pending or the env is retired.

    Raises:
        AlreadyPendingCallError: The env's last result has not been received.
        EnvRetiredError: The env was retired.
    """
    if state is EnvState.PENDING:
        raise AlreadyPendingCallError(
            f"env {env_id} has a call in flight; recv() its result before sending another"
        )
    if state is EnvState.RETIRED:
        raise EnvRetiredError(env_id, f"env {env_id} is retired (its desktop would not launch)")


def check_can_step(env_id: int, state: EnvState) -> None:
    """A step is allowed only on a ``READY`` env.

    Raises:
        AlreadyPendingCallError: The env's last result has not been received.
        EnvRetiredError: The env was retired.
        ResetNeededError: The env has no episode running.
    """
    check_can_reset(env_id, state)
    if state is EnvState.NEEDS_RESET:
        raise ResetNeededError(
            f"env {env_id} has no episode running (it ended or never started); "
            "send_reset() it first"
        )
