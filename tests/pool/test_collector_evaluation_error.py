"""An episode that ran to its end but could not be scored reaches its trajectory as such: score
None and the env's ``info["evaluation_error"]``, not a 0 (issue 17)."""

from __future__ import annotations

from typing import Any

from pool_fakes import FakeEnv, FakeFactory

from osworld_gym.pool import EnvPool
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector
from osworld_gym.pool.policy import PolicyRequest

WHY = "DependencyNotInstalled: this metric needs 'openpyxl': pip install 'osworld-gym[eval]'"


class UnscorableEnv(FakeEnv):
    """Ends like ``FakeEnv``, but its ``short`` task's evaluation cannot run."""

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if (terminated or truncated) and self.task_id == "short":
            info.update(score=None, evaluation_error=WHY)
            reward = 0.0
        return obs, reward, terminated, truncated, info


class UnscorableFactory(FakeFactory):
    def __call__(self) -> UnscorableEnv:
        with self._lock:
            self.builds += 1
        return UnscorableEnv(self)


def done(requests: list[PolicyRequest]) -> list[str]:
    return ["done" for _ in requests]


def test_an_unscorable_episode_keeps_its_evaluation_error() -> None:
    with EnvPool(UnscorableFactory(), num_envs=2) as pool:
        collector = RolloutCollector(pool, done, CollectorConfig(group_size=1))
        groups = {g.task_id: g.trajectories[0] for g in collector.collect(["short", "long"])}
    unscorable, scored = groups["short"], groups["long"]
    assert unscorable.complete and unscorable.terminated
    assert unscorable.score is None and unscorable.evaluation_error == WHY
    assert unscorable.infra_error is None and collector.requeued == 0  # not re-run
    assert scored.score == 1.0 and scored.evaluation_error is None
