"""PoolVectorEnv conformance: same results as Gymnasium's SyncVectorEnv, in every autoreset mode."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from pool_fakes import FakeFactory

from osworld_gym.errors import UnknownTaskError
from osworld_gym.pool import EnvPool
from osworld_gym.pool.vector import PoolVectorEnv

N = 3
MODES = list(AutoresetMode)


def pair(mode: AutoresetMode, **kwargs: object) -> tuple[PoolVectorEnv, SyncVectorEnv]:
    ours = PoolVectorEnv([FakeFactory(**kwargs) for _ in range(N)], autoreset_mode=mode)  # type: ignore[arg-type]
    stock = SyncVectorEnv([FakeFactory(**kwargs) for _ in range(N)], autoreset_mode=mode)  # type: ignore[arg-type]
    return ours, stock


def check_batch(venv: PoolVectorEnv, obs: object, *arrays: np.ndarray) -> None:
    assert obs in venv.observation_space
    for array in arrays:
        assert array.shape == (N,)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_matches_sync_vector_env(mode: AutoresetMode) -> None:
    ours, stock = pair(mode)
    try:
        assert ours.single_observation_space == stock.single_observation_space
        assert ours.action_space == stock.action_space and ours.metadata == stock.metadata
        a, b = ours.reset(seed=3), stock.reset(seed=3)
        assert data_equivalence(a, b)
        check_batch(ours, a[0])
        for t in range(9):
            actions = ["done" if t % 4 == 3 else "a"] * N
            if mode is AutoresetMode.DISABLED and stock._autoreset_envs.any():
                mask = stock._autoreset_envs.copy()
                a = ours.reset(options={"reset_mask": mask.copy()})
                b = stock.reset(options={"reset_mask": mask.copy()})
                assert data_equivalence(a, b)
            a, b = ours.step(actions), stock.step(actions)
            assert data_equivalence(a, b), (t, a, b)
            obs, reward, terminated, truncated, _ = a
            check_batch(ours, obs, reward, terminated, truncated)
            assert reward.dtype == np.float64 and terminated.dtype == np.bool_
    finally:
        ours.close()
        stock.close()


def test_per_env_task_options() -> None:
    with PoolVectorEnv([FakeFactory() for _ in range(N)]) as venv:
        _, info = venv.reset(options={"task_id": ["short", "long", "short"]})
        assert list(info["task_id"]) == ["short", "long", "short"]
        _, info = venv.reset(options={"task_id": "long"})
        assert list(info["task_id"]) == ["long"] * N
        with pytest.raises(ValueError, match="ids for 3 envs"):
            venv.reset(options={"task_id": ["short"]})
        with pytest.raises(UnknownTaskError):
            venv.reset(options={"task_id": ["short", "nope", "short"]})


def test_infra_error_truncates_and_autoresets() -> None:
    with PoolVectorEnv([FakeFactory(crash_on_steps=frozenset({1})) for _ in range(N)]) as venv:
        venv.reset(options={"task_id": "long"})
        _, _, terminated, truncated, info = venv.step(["a"] * N)
        assert truncated.all() and not terminated.any()
        assert all("worker crash" in e for e in info["infra_error"])
        _, reward, terminated, truncated, info = venv.step(["a"] * N)  # the autoreset
        assert not (terminated.any() or truncated.any()) and info["step"].tolist() == [0] * N


def test_disabled_autoreset_refuses_finished_envs() -> None:
    with PoolVectorEnv([FakeFactory() for _ in range(N)], autoreset_mode="Disabled") as venv:
        venv.reset(options={"task_id": "short"})
        venv.step(["done"] * N)
        with pytest.raises(ValueError, match="reset_mask"):
            venv.step(["a"] * N)


def test_attributes_and_shared_pool() -> None:
    pool = EnvPool([FakeFactory() for _ in range(N)])
    with PoolVectorEnv(pool=pool) as venv:
        assert venv.get_attr("closed") == (False,) * N
        venv.set_attr("task_id", ["x", "y", "z"])
        assert venv.get_attr("task_id") == ("x", "y", "z")
        assert venv.call("_obs")[0]["instruction"] == "do x"
    assert pool.state.value == "open"  # not owned: left open
    pool.close()
    with pytest.raises(ValueError):
        PoolVectorEnv()
