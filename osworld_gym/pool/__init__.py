"""The env pool: many envs from one process, wait-any send/recv, rollout-wise collection.

* ``EnvPool`` -- N envs on per-env threads (or Ray actors), envpool-style ``send``/``recv``
  with per-env recovery; blocking and asyncio APIs.
* ``RolloutCollector`` -- runs (task, rollout) episodes rollout-wise, refilling each env as
  soon as it frees, and hands back whole GRPO groups of ``Trajectory`` records.
* ``LockstepCollector`` -- ARPO's lock-step collection, the baseline to compare with.
* ``PoolVectorEnv`` -- a Gymnasium ``VectorEnv`` over a pool.

Ray is imported only when the Ray backend is used.
"""

from __future__ import annotations

from osworld_gym.pool.collector import CollectionStats, CollectorConfig, RolloutCollector
from osworld_gym.pool.config import EnvFactory, EnvSpec, PoolConfig, RayBackendConfig
from osworld_gym.pool.lockstep import LockstepCollector
from osworld_gym.pool.policy import Policy, PolicyOutput, PolicyRequest
from osworld_gym.pool.pool import EnvPool
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import Command, EnvState, PoolState
from osworld_gym.pool.trajectory import (
    StepRecord,
    Trajectory,
    TrajectoryGroup,
    decode_screenshot,
    encode_screenshot,
)
from osworld_gym.pool.vector import PoolVectorEnv, make_vector_env

__all__ = [
    "CollectionStats",
    "CollectorConfig",
    "Command",
    "EnvFactory",
    "EnvPool",
    "EnvResult",
    "EnvSpec",
    "EnvState",
    "LockstepCollector",
    "Policy",
    "PolicyOutput",
    "PolicyRequest",
    "PoolConfig",
    "PoolState",
    "PoolVectorEnv",
    "RayBackendConfig",
    "RolloutCollector",
    "StepRecord",
    "Trajectory",
    "TrajectoryGroup",
    "decode_screenshot",
    "encode_screenshot",
    "make_vector_env",
]
