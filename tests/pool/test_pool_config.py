"""Pool configuration pieces: env specs, config validation, backend choice, portable errors."""

from __future__ import annotations

import pickle

import pytest
from pool_fakes import FakeFactory

from osworld_gym.env import OSWorldEnv
from osworld_gym.errors import EnvRetiredError, OSWorldGymError, UnknownTaskError
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig
from osworld_gym.pool.backends import ThreadBackend, make_backend
from osworld_gym.pool.ray_backend import portable_error

STILL = {"id": "still", "instruction": "x", "config": [], "evaluator": {"func": "infeasible"}}


@pytest.mark.parametrize("entry_point", ["osworld_gym.env:OSWorldEnv", "OSWorld-Hard-v0"])
def test_env_spec_builds_envs_and_pickles(entry_point: str) -> None:
    spec = EnvSpec(entry_point, {"tasks": [STILL], "screen_size": (800, 600)})
    env = pickle.loads(pickle.dumps(spec))()  # no desktop until the first reset
    try:
        assert isinstance(env.unwrapped, OSWorldEnv)
        assert env.unwrapped.config.hard is (entry_point == "OSWorld-Hard-v0")
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_concurrent_resets": 0}, "max_concurrent_resets"),
        ({"launch_attempts": 0}, "launch_attempts"),
        ({"screenshot_format": "gif"}, "screenshot_format"),
    ],
)
def test_pool_config_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PoolConfig(**kwargs)


def test_factories_and_backends() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        EnvPool(FakeFactory())
    with pytest.raises(ValueError, match="2 env factories"):
        EnvPool([FakeFactory(), FakeFactory()], num_envs=3)
    with pytest.raises(ValueError, match="unknown pool backend 'threads'"):
        make_backend("threads", [FakeFactory()], PoolConfig())
    assert isinstance(make_backend("thread", [FakeFactory()], PoolConfig()), ThreadBackend)


def test_portable_errors_survive_pickling() -> None:
    plain = ValueError("bad option")
    assert portable_error(plain) is plain
    unknown = portable_error(UnknownTaskError("nope", ["short", "long"]))
    assert type(unknown) is OSWorldGymError and "UnknownTaskError" in str(unknown)
    assert pickle.loads(pickle.dumps(unknown)).args == unknown.args
    assert "EnvRetiredError" in str(portable_error(EnvRetiredError(3, "retired")))
