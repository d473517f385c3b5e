"""The SkyRL adapter through skyrl-gym's own registry and ``make``, on real ``local`` desktops.

Every episode runs in the order SkyRL's VLM generator calls an env: ``skyrl_gym.make(
"osworld", env_config=..., extras=row)``, ``init(prompt)``, ``step(text)`` until ``done``,
``get_metrics()``, ``close()``; several trajectories at once run on a thread pool, as SkyRL's
``max_env_workers`` executor does. The model is scripted (``ui-basics`` oracle answers).

Logic that needs no desktop (settings, registration, rows, reset retries, lease timeouts) runs
on the pool tests' fake env. The last test repeats the adapter's tests and a slice of the core
suite in a Python 3.12 venv (SkyRL's trainer needs 3.12).
"""

from __future__ import annotations

import base64
import doctest
import gc
import io
import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pool_desktops
import pytest
import side_venv
from fixture_marks import needs
from PIL import Image
from pool_fakes import FakeFactory
from wheel_helpers import find_python

from osworld_gym.integrations import DesktopLeases, LeaseError, LeaseResetError
from osworld_gym.integrations.lease import close_shared_leases
from osworld_gym.policies.oracles.ui_basics import (
    DONE_RESPONSE,
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    oracle_responses,
)
from osworld_gym.pool import PoolConfig
from osworld_gym.providers.local.provider import LocalProviderConfig

skyrl_gym = pytest.importorskip("skyrl_gym", reason="pip install 'osworld-gym[skyrl]'")
from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402
from skyrl_gym.error import RegistrationError  # noqa: E402

from osworld_gym.integrations import skyrl as adapter  # noqa: E402

pytestmark = pytest.mark.trainers

WAIT = "Thought: Nothing to do yet.\nAction: wait()"
PLACEHOLDER = [{"role": "user", "content": "placeholder"}]


def _wrong(task_id: str) -> list[str]:
    return oracle_responses(task_id, answer=distractor_answer(task_id))


def _episode(
    env_config: dict[str, Any],
    task_id: str,
    answers: Sequence[str],
    prompt: list[dict[str, Any]] | None = None,
    **extras: Any,
) -> dict[str, Any]:
    """One trajectory in SkyRL's call order; answers past the script repeat the last one."""
    env = skyrl_gym.make(
        "osworld", env_config=env_config, extras={"task_id": task_id, "max_turns": 15, **extras}
    )
    conversation, init_meta = env.init(list(prompt or PLACEHOLDER))
    outputs = []
    for turn in range(1, 100):
        out = env.step(answers[min(turn, len(answers)) - 1])
        outputs.append(out)
        if out["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    return {
        "conversation": conversation,
        "init": init_meta,
        "outputs": outputs,
        "metrics": metrics,
        "env": env,
    }


def _decoded(part: dict[str, Any]) -> Image.Image:
    url = part["image_url"]["url"]
    head, data = url.split(",", 1)
    assert head == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


# --- no desktop: settings, registration, rows -----------------------------------------------


def test_registered_on_import_and_made_by_skyrl_gym() -> None:
    spec = skyrl_gym.registry["osworld"]
    assert spec.entry_point == adapter.ENTRY_POINT
    adapter.register_osworld()  # idempotent
    env = skyrl_gym.make("osworld", env_config={"tasks": SUITE}, extras={"task_id": "x"})
    assert isinstance(env, adapter.OSWorldTextEnv) and isinstance(env, BaseTextEnv)
    assert env.spec.id == "osworld"
    env.close()  # nothing borrowed yet: a no-op

    adapter.register_osworld("osworld-extra")
    try:
        assert isinstance(skyrl_gym.make("osworld-extra", extras={}), adapter.OSWorldTextEnv)
        with pytest.raises(RegistrationError):
            adapter.register_osworld("gsm8k")  # skyrl-gym's own env keeps its id
        assert skyrl_gym.registry["gsm8k"].entry_point != adapter.ENTRY_POINT
    finally:
        skyrl_gym.envs.registration.deregister("osworld-extra")


def test_doctests() -> None:
    failures, _ = doctest.testmod(adapter, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_settings_merge_config_then_row() -> None:
    from omegaconf import OmegaConf

    env_config = OmegaConf.create({"suite": SUITE, "screen_size": [336, 224], "desk_size": 3})
    row = json.dumps({"desk_size": 1, "max_pixels": 20000, "env_kwargs": {"offline": True}})
    env = skyrl_gym.make(
        "osworld", env_config=env_config, extras={"task_id": "t", adapter.CONFIG_COLUMN: row}
    )
    config = env.config
    assert (config.tasks, config.screen_size, config.desk_size) == (SUITE, (336, 224), 1)
    assert config.max_pixels == 20000 and config.env_kwargs == {"offline": True}
    assert config.env_spec_kwargs()["offline"] is True
    with pytest.raises(ValueError, match="unknown osworld setting"):
        adapter.OSWorldSkyRLConfig.from_sources({"screen": [1, 2]})
    with pytest.raises(ValueError, match="desk_size"):
        adapter.OSWorldSkyRLConfig.from_sources({"desk_size": 0})


def test_turn_limit_below_max_steps_is_noted() -> None:
    short = skyrl_gym.make("osworld", env_config={"tasks": SUITE}, extras={"max_turns": 4})
    assert short.max_turns == 4
    default = skyrl_gym.make("osworld", env_config={"tasks": SUITE}, extras={"max_turns": 40})
    assert default.max_turns == 15, "the env's own limit ends longer runs"


def test_dataset_rows_have_skyrl_columns(tmp_path: Path) -> None:
    config = {"tasks": SUITE, "screen_size": list(SCREEN_SIZE), "desk_size": 2}
    rows = adapter.skyrl_dataset_rows(["click-colour-01", "type-word-01"], config=config, repeat=2)
    assert [r["task_id"] for r in rows] == ["click-colour-01"] * 2 + ["type-word-01"] * 2
    row = rows[0]
    assert row["env_class"] == "osworld" and row["data_source"] == f"osworld/{SUITE}"
    system, user = row["prompt"]
    assert system["role"] == "system" and user["role"] == "user"
    assert user["content"].rstrip().endswith(row["instruction"]), "UI-TARS prompt ends with it"
    assert json.loads(row[adapter.CONFIG_COLUMN])["desk_size"] == 2
    plain = adapter.skyrl_dataset_rows(["find-ok-01"], config=config, prompt="instruction")
    assert plain[0]["prompt"] == [{"role": "user", "content": plain[0]["instruction"]}]
    assert len(adapter.skyrl_dataset_rows(config=config)) == 38

    path = adapter.make_skyrl_dataset(tmp_path / "train.jsonl", ["click-colour-01"], config=config)
    (loaded,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert loaded == adapter.skyrl_dataset_rows(["click-colour-01"], config=config)[0]
    pytest.importorskip("pyarrow")
    import pandas as pd

    parquet = adapter.make_skyrl_dataset(tmp_path / "train.parquet", config=config)
    frame = pd.read_parquet(parquet)
    assert len(frame) == 38 and {"prompt", "env_class", "task_id"} <= set(frame.columns)
    with pytest.raises(ValueError, match="jsonl"):
        adapter.make_skyrl_dataset(tmp_path / "train.csv", config=config)


def test_import_without_skyrl_gym_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['skyrl_gym'] = None\n"
        "from osworld_gym.errors import DependencyNotInstalled\n"
        "try:\n    import osworld_gym.integrations.skyrl\n"
        "except DependencyNotInstalled as e:\n    print('hint:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'osworld-gym[skyrl]'" in out.stdout, out.stderr


def test_aggregate_metrics_of_a_batch() -> None:
    ok = {"success": 1.0, "score": 1.0, "scored": 1.0, "steps": 2.0, "step_seconds": 1.0}
    bad = {"success": 0.0, "score": 0.0, "scored": 1.0, "steps": 15.0, "parse_errors": 2.0}
    fault = {"success": 0.0, "score": 0.0, "scored": 0.0, "steps": 3.0, "infra_error": 1.0}
    agg = adapter.OSWorldTextEnv.aggregate_metrics([ok, bad, fault])
    assert agg["episodes"] == 3 and agg["success_rate"] == pytest.approx(1 / 3)
    assert agg["mean_score"] == 0.5, "faults are not scored"
    assert agg["infra_faults"] == 1 and agg["unscored"] == 0
    assert agg["parse_errors_per_episode"] == pytest.approx(2 / 3)
    assert agg["mean_steps"] == pytest.approx(20 / 3)
    assert adapter.OSWorldTextEnv.aggregate_metrics([]) == {}


# --- no desktop: faults and leases on the fake env --------------------------------------------


@pytest.fixture()
def fake_desk(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Point the adapter at a desk of the pool tests' fake env (set ``holder["desk"]``)."""
    holder: dict[str, Any] = {}
    monkeypatch.setattr(adapter.OSWorldSkyRLConfig, "desk", lambda self: holder["desk"])
    yield holder
    if "desk" in holder:
        holder["desk"].close()


def test_init_resets_on_another_desktop_when_one_is_retired(fake_desk: dict[str, Any]) -> None:
    # The pool relaunches a failing desktop launch_attempts times, then retires the env.
    config = PoolConfig(launch_attempts=2)
    fake_desk["desk"] = DesktopLeases(FakeFactory(launch_failures=2), 2, config=config)  # type: ignore[arg-type]
    env = skyrl_gym.make("osworld", env_config={"tasks": SUITE}, extras={"task_id": "short"})
    _, meta = env.init(PLACEHOLDER)
    assert meta["reset_attempts"] == 2 and meta["env_id"] == 1
    assert fake_desk["desk"].stats()["leases/retired"] == 1
    env.close()
    assert fake_desk["desk"].available == 1


def test_init_gives_up_and_keeps_no_desktop(fake_desk: dict[str, Any]) -> None:
    factory = FakeFactory(launch_failures=100)
    desk = DesktopLeases(factory, 3, config=PoolConfig(launch_attempts=1))  # type: ignore[arg-type]
    fake_desk["desk"] = desk
    config = {"tasks": SUITE, "reset_attempts": 2}
    env = skyrl_gym.make("osworld", env_config=config, extras={"task_id": "short"})
    with pytest.raises(LeaseResetError) as caught:
        env.init(PLACEHOLDER)
    assert caught.value.retired and env.get_metrics()["reset_attempts"] == 2
    assert desk.available == 1, "two envs retired, the third one free"
    factory.launch_failures = 0
    bad = skyrl_gym.make("osworld", env_config=config, extras={"task_id": "no-such-task"})
    with pytest.raises(LeaseResetError) as caught:  # not an infra fault: no retry
        bad.init(PLACEHOLDER)
    assert not caught.value.retired and bad.get_metrics()["reset_attempts"] == 1
    assert desk.available == 1


def test_waiting_too_long_for_a_desktop_names_the_rule(fake_desk: dict[str, Any]) -> None:
    fake_desk["desk"] = DesktopLeases(FakeFactory(), 1)  # type: ignore[arg-type]
    config = {"tasks": SUITE, "lease_timeout": 0.2, "desk_size": 1}
    holder = skyrl_gym.make("osworld", env_config=config, extras={"task_id": "short"})
    holder.init(PLACEHOLDER)
    waiter = skyrl_gym.make("osworld", env_config=config, extras={"task_id": "short"})
    with pytest.raises(LeaseError, match="max_env_workers"):
        waiter.init(PLACEHOLDER)
    holder.close()
    again = skyrl_gym.make("osworld", env_config=config, extras={"task_id": "short"})
    again.init(PLACEHOLDER)
    again.close()
    with pytest.raises(RuntimeError, match="twice"):
        again.init(PLACEHOLDER)


def test_an_abandoned_trajectory_returns_its_desktop(fake_desk: dict[str, Any]) -> None:
    desk = fake_desk["desk"] = DesktopLeases(FakeFactory(), 1)  # type: ignore[arg-type]
    env = skyrl_gym.make("osworld", env_config={"tasks": SUITE}, extras={"task_id": "long"})
    env.init(PLACEHOLDER)
    env.step("noop")
    assert desk.available == 0
    del env  # the generator raised: no close()
    gc.collect()
    assert desk.available == 1


# --- real desktops --------------------------------------------------------------------------


@pytest.fixture(scope="module")
@needs("desktop")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("skyrl-desktops")
    yield folder
    close_shared_leases()
    assert not pool_desktops.processes_under(folder), "the adapter left desktops behind"


def _config(work_dir: Path, name: str, desk_size: int) -> dict[str, Any]:
    """Adapter settings whose desks live under ``work_dir/name`` (one desk per name)."""
    folder = work_dir / name
    folder.mkdir(exist_ok=True)
    provider = LocalProviderConfig(screen_size=SCREEN_SIZE, work_dir=str(folder))
    return {
        "tasks": SUITE,
        "provider": provider,
        "screen_size": SCREEN_SIZE,
        "desk_size": desk_size,
        # wait() is the scripted "do nothing"; a short wait keeps the 15-step run quick.
        "env_kwargs": {"wait_seconds": 0.05},
    }


@pytest.fixture(scope="module")
def shared_config(work_dir: Path) -> dict[str, Any]:
    return _config(work_dir, "shared", 2)


@pytest.mark.desktop
def test_correct_answers_score_one_and_wrong_ones_zero(shared_config: dict[str, Any]) -> None:
    """Four trajectories on two desktops at once, as SkyRL's env threads run them."""
    runs = [
        ("click-colour-01", oracle_responses("click-colour-01"), 1.0),
        ("type-word-01", oracle_responses("type-word-01"), 1.0),
        ("click-colour-01", _wrong("click-colour-01"), 0.0),
        ("type-word-01", _wrong("type-word-01"), 0.0),
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(_episode, shared_config, t, a) for t, a, _ in runs]
        episodes = [f.result(timeout=300) for f in futures]
    for (task_id, answers, expected), ep in zip(runs, episodes, strict=True):
        outputs = ep["outputs"]
        assert [o["reward"] for o in outputs] == [0.0] * (len(answers) - 1) + [expected], task_id
        assert outputs[-1]["done"] and outputs[-1]["observations"] == []
        final = outputs[-1]["metadata"]
        assert final["score"] == expected and final["task_id"] == task_id
        assert final["infra_error"] is None and final["parse_error"] is None
        assert not final["fail_replaced"] and final["terminated"]
        assert ep["metrics"]["success"] == expected and ep["metrics"]["steps"] == len(answers)
        for out in outputs[:-1]:
            (message,) = out["observations"]
            assert message["role"] == "user" and message["content"][0]["type"] == "image_url"
    agg = adapter.OSWorldTextEnv.aggregate_metrics([ep["metrics"] for ep in episodes])
    assert agg["success_rate"] == 0.5 and agg["infra_faults"] == 0
    desk = adapter.OSWorldSkyRLConfig.from_sources(shared_config).desk()
    assert desk.stats()["leases/lent"] >= 4
    # Desktops launch once per env and are reset per episode, never per trajectory.
    assert desk.pool.stats(include_envs=True)["env/restarts"] == desk.size
    print(f"4 trajectories on 2 desktops: {time.monotonic() - started:.1f} s")


@pytest.mark.desktop
def test_init_shows_the_screenshot_and_states_the_instruction_once(
    shared_config: dict[str, Any],
) -> None:
    task_id = "click-label-01"
    ep = _episode(shared_config, task_id, oracle_responses(task_id))
    *prompt, first = ep["conversation"]
    assert prompt == PLACEHOLDER and first["role"] == "user"
    image, text = first["content"]
    assert _decoded(image).size == SCREEN_SIZE
    assert text == {"type": "text", "text": ep["init"]["instruction"]}
    assert ep["init"]["task_id"] == task_id and ep["init"]["env_id"] in (0, 1)

    (row,) = adapter.skyrl_dataset_rows([task_id], config={"tasks": SUITE})
    ep = _episode(
        {**shared_config, "max_pixels": 168 * 112}, task_id, [DONE_RESPONSE], row["prompt"]
    )
    *prompt, first = ep["conversation"]
    assert prompt == row["prompt"], "the row's UI-TARS prompt already states the instruction"
    image, note = first["content"]
    assert _decoded(image).size == (168, 112)
    assert row["instruction"] not in note["text"] and "336x224" in note["text"]
    assert ep["outputs"][-1]["reward"] == 0.0, "finishing at once scores 0"


@pytest.mark.desktop
def test_fifteen_waits_end_at_the_step_limit_with_fail(shared_config: dict[str, Any]) -> None:
    ep = _episode(shared_config, "click-colour-02", [WAIT])
    outputs = ep["outputs"]
    assert len(outputs) == 15 and [o["done"] for o in outputs] == [False] * 14 + [True]
    assert all(len(o["observations"]) == 1 for o in outputs[:-1])
    last = outputs[-1]
    assert last["observations"] == [] and last["reward"] == 0.0
    meta = last["metadata"]
    assert meta["fail_replaced"] and meta["truncated"] and meta["step"] == 15
    assert meta["score"] == 0.0 and not meta["turn_limit"]
    assert ep["metrics"]["fail_replaced"] == 1.0 and ep["metrics"]["steps"] == 15


@pytest.mark.desktop
def test_generator_turn_limit_and_parse_errors(shared_config: dict[str, Any]) -> None:
    task_id = "find-ok-01"
    ep = _episode(shared_config, task_id, ["no action here", WAIT, WAIT], max_turns=3)
    first, second, last = ep["outputs"]
    assert first["metadata"]["parse_error"], "text without an action is a no-op step"
    error_text = first["observations"][0]["content"][1]["text"]
    assert error_text.startswith("Last action error:")
    assert not second["done"]
    assert last["done"] and last["metadata"]["turn_limit"] and last["metadata"]["fail_replaced"]
    assert last["metadata"]["score"] == 0.0 and ep["metrics"]["parse_errors"] == 1
    # A DONE on the last turn is the model's own end, not replaced.
    ep = _episode(shared_config, task_id, oracle_responses(task_id), max_turns=2)
    assert ep["outputs"][-1]["reward"] == 1.0 and not ep["metrics"]["turn_limit"]


@pytest.mark.desktop
def test_a_desktop_killed_mid_episode_ends_it_with_reward_zero(work_dir: Path) -> None:
    config = _config(work_dir, "kill", 1)  # one desktop: the next episode must reuse it
    task_id = "click-colour-03"
    env = skyrl_gym.make("osworld", env_config=config, extras={"task_id": task_id})
    _, meta = env.init(PLACEHOLDER)
    assert not env.step(WAIT)["done"]
    desk = adapter.OSWorldSkyRLConfig.from_sources(config).desk()
    pids = desk.pool.call(pool_desktops.desktop_pids, env_ids=[meta["env_id"]])[0]
    assert pool_desktops.kill(pids["xvfb"])
    out = env.step(WAIT)
    assert out["done"] and out["reward"] == 0.0 and out["observations"] == []
    assert out["metadata"]["infra_error"] and out["metadata"]["score"] is None
    metrics = env.get_metrics()
    env.close()
    assert metrics["infra_error"] == 1.0 and metrics["scored"] == 0.0
    agg = adapter.OSWorldTextEnv.aggregate_metrics([metrics])
    assert agg["infra_faults"] == 1 and math.isnan(agg["mean_score"])

    ep = _episode(config, task_id, oracle_responses(task_id))
    assert ep["outputs"][-1]["reward"] == 1.0, "the desk relaunched the desktop"
    assert ep["init"]["env_id"] == meta["env_id"]
    assert desk.pool.stats(include_envs=True)["env/restarts"] == 2, "one relaunch"


# --- Python 3.12 ------------------------------------------------------------------------------


@pytest.mark.desktop
@pytest.mark.timeout(3600)
def test_python_312_runs_the_adapter_and_core_tests() -> None:
    """Build (or reuse) a clean 3.12 venv with this checkout and run the check script in it."""
    python = find_python("3.12")
    if python is None:
        pytest.skip("no Python 3.12 on PATH or in pyenv (SkyRL's trainer needs 3.12)")
    started = time.monotonic()
    venv_python = side_venv.ensure_venv(
        "py312",
        PY312_STEPS,
        python=python,
        inherit=False,
        install_checkout=True,
    )
    built = time.monotonic() - started
    report = Path(side_venv.REPO) / "build" / "py312-report.json"
    report.parent.mkdir(exist_ok=True)
    done = side_venv.run_in_venv(
        venv_python,
        ["tests/integrations/py312_check.py", "--report", str(report)],
        timeout=1800,
    )
    print(f"venv ready in {built:.0f} s; check took {time.monotonic() - started - built:.0f} s")
    print(done.stdout[-3000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert summary["python"].startswith("3.12")
    assert summary["failed"] == 0 and summary["passed"] >= 100, summary


# The 3.12 venv: the core install's dependencies, the guest server's (the local provider runs
# the guest with the venv's interpreter), the test tools and skyrl-gym; pyautogui without its
# python3-xlib dependency, as scripts/install.sh does. No torch: the adapter does not need it.
PY312_STEPS = [
    [
        "gymnasium>=1.0",
        "numpy>=1.24",
        "requests>=2.28",
        "pillow>=10.0",
        "mss>=9.0",
        "python-xlib>=0.33",
        "pymsgbox",
        "pytweening",
        "pyscreeze",
        "pygetwindow",
        "pyperclip",
        "jsonschema>=4",
        "pytest>=8",
        "pytest-timeout>=2.3",
        "hypothesis>=6.100",
        "psutil>=5.9",
        "skyrl-gym>=0.4",
        "pyarrow>=15",
    ],
    ["--no-deps", "pyautogui==0.9.54", "mouseinfo==0.1.3"],
]
