"""The TRL adapter, driven through TRL's own classes and rules on real ``local`` desktops.

* the tools' schemas as TRL builds them (``transformers.utils.get_json_schema`` of the bound
  methods it collects) match ``osworld_gym.integrations.tools.tool_schemas()``;
* the Qwen tool-calling chat template passes TRL's own checks, the stock one does not;
* scripted tool calls in TRL's call order on ``ui-basics``: a correct answer scores 1, a wrong
  one 0, 15 steps end with the env's FAIL replacement, a killed desktop gives a None reward;
* a one-step ``GRPOTrainer`` run with ``environment_factory`` on the offline tiny Qwen2.5-VL.

Run with ``pytest -m trainers tests/integrations/test_trl.py`` (TRL installed: the ``trl``
extra).
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pool_desktops
import pytest
from fixture_marks import needs

pytest.importorskip("trl")

from PIL import Image  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402

from osworld_gym import load_tasks  # noqa: E402
from osworld_gym.integrations import LeaseError, close_shared_leases  # noqa: E402
from osworld_gym.integrations.tools import SCROLL_DIRECTIONS, TOOL_NAMES, tool_schemas  # noqa: E402
from osworld_gym.integrations.trl import (  # noqa: E402
    EPISODE_OVER,
    OSWorldTRLEnv,
    enable_qwen_tool_calling,
    make_trl_dataset,
    osworld_environment,
)
from osworld_gym.policies.oracles.ui_basics import (  # noqa: E402
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    task_layout,
)
from osworld_gym.providers.local.provider import LocalProviderConfig  # noqa: E402

pytestmark = pytest.mark.trainers

CLICK_TASK = "click-colour-01"
TYPE_TASK = "type-word-01"
DESK_SIZE = 2  # two cores shared with other work: keep the desk small


def _trl_tools(env: Any) -> dict[str, Any]:
    """The tools TRL 1.16 takes from an environment instance (its rule, grpo_trainer.py L2370)."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


# --- no desktop ------------------------------------------------------------------------------


def test_the_tools_trl_sees_are_the_gui_actions_with_our_schemas() -> None:
    env_cls = osworld_environment(SUITE, screen_size=SCREEN_SIZE, desk_size=DESK_SIZE)
    env = env_cls()  # TRL's probe instance: must not launch anything
    assert env.lease is None and env.episode_over
    tools = _trl_tools(env)
    assert set(tools) == set(TOOL_NAMES)
    ours = {s["function"]["name"]: s["function"] for s in tool_schemas(SCREEN_SIZE)}
    for name, method in tools.items():
        schema = get_json_schema(method)["function"]
        assert schema["name"] == name
        params, expected = schema["parameters"], ours[name]["parameters"]
        assert set(params["properties"]) == set(expected["properties"]), name
        assert set(params.get("required", [])) == set(expected["required"]), name
        for arg, spec in params["properties"].items():
            assert spec["type"] == expected["properties"][arg]["type"], (name, arg)
            assert spec["description"], (name, arg)
    click = get_json_schema(tools["click"])["function"]["parameters"]["properties"]
    assert "335" in click["x"]["description"] and "223" in click["y"]["description"]
    scroll = get_json_schema(tools["scroll"])["function"]["parameters"]["properties"]
    assert scroll["direction"]["enum"] == list(SCROLL_DIRECTIONS)
    # The base class's docstrings are templates; only the built class states the range.
    assert "{x_max}" in (OSWorldTRLEnv.click.__doc__ or "")
    assert osworld_environment(SUITE, screen_size=SCREEN_SIZE, desk_size=DESK_SIZE) is env_cls


def test_the_base_class_and_bad_settings_are_refused() -> None:
    with pytest.raises(TypeError, match="osworld_environment"):
        OSWorldTRLEnv().reset(task_id=CLICK_TASK)
    with pytest.raises(ValueError, match="desk_size"):
        osworld_environment(SUITE, desk_size=0)
    with pytest.raises(ValueError, match="unfinished"):
        osworld_environment(SUITE, unfinished="guess")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="action_format"):
        osworld_environment(SUITE, env_kwargs={"action_format": "uitars"})


def test_without_trl_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['trl'] = None\n"
        "from osworld_gym.errors import DependencyNotInstalled\n"
        "try:\n    import osworld_gym.integrations.trl\n"
        "except DependencyNotInstalled as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'osworld-gym[trl]'" in done.stdout, done.stderr


def test_make_trl_dataset_rows() -> None:
    from datasets import Dataset

    data = make_trl_dataset(SUITE, screen_size=SCREEN_SIZE, task_ids=[CLICK_TASK, TYPE_TASK])
    assert isinstance(data, Dataset) and data["task_id"] == [CLICK_TASK, TYPE_TASK]
    system, user = data[0]["prompt"]
    assert system["role"] == "system" and "336x224" in system["content"]
    assert user["role"] == "user" and user["content"]
    assert len(make_trl_dataset(SUITE, repeat=3)) == 3 * 38


def test_reset_faults_retry_on_another_desktop_then_drop_the_rollout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pool_fakes import FakeFactory

    from osworld_gym.integrations import DesktopLeases
    from osworld_gym.pool import PoolConfig

    env_cls = osworld_environment(SUITE, screen_size=SCREEN_SIZE, desk_size=2, acquire_timeout=5)
    # env 0's desktop fails both launch attempts (retired); env 1 comes up.
    desk = DesktopLeases(FakeFactory(launch_failures=2), 2, config=PoolConfig(launch_attempts=2))
    monkeypatch.setattr(env_cls._settings, "desk", lambda: desk)
    with desk:
        env = env_cls()
        blocks = env.reset(task_id="short")
        assert [b["type"] for b in blocks] == ["image", "text"] and blocks[1]["text"] == "do short"
        assert env.lease is not None and env.lease.env_id == 1

    # Every desktop fails: the rollout is dropped (None reward), then the next reset raises.
    desk = DesktopLeases(FakeFactory(launch_failures=100), 2, config=PoolConfig(launch_attempts=1))
    monkeypatch.setattr(env_cls._settings, "desk", lambda: desk)
    with desk:
        env = env_cls()
        assert env.reset(task_id="short") == [
            {"type": "text", "text": "The desktop could not be started; this episode will not be "
             "scored."}
        ]  # fmt: skip
        assert env.get_reward() is None and env.episode_over
        with pytest.raises(ValueError, match=EPISODE_OVER):
            env.wait()
        with pytest.raises(LeaseError, match="retired"):
            env.reset(task_id="short")


@pytest.fixture(scope="module")
@needs("heavy")
def tiny_processor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from osworld_agents.models.tiny_qwen import build_tiny_qwen

    return build_tiny_qwen(tmp_path_factory.mktemp("tiny-trl") / "model", seed=0)


def test_qwen_tool_template_passes_trls_checks(tiny_processor: Path) -> None:
    from osworld_agents.models.processor import ImageOnlyQwenProcessor
    from trl.chat_template_utils import (
        is_chat_template_prefix_preserving,
        parse_response,
        qwen2_5_vl_chat_template,
        supports_tool_calling,
    )

    processor = ImageOnlyQwenProcessor.from_pretrained(tiny_processor)
    processor.chat_template = qwen2_5_vl_chat_template
    assert not supports_tool_calling(processor), "the stock Qwen2.5-VL template renders no tools"

    enable_qwen_tool_calling(processor)
    assert supports_tool_calling(processor)
    assert is_chat_template_prefix_preserving(processor)

    env = osworld_environment(SUITE, screen_size=SCREEN_SIZE, desk_size=DESK_SIZE)()
    tools = list(_trl_tools(env).values())
    shot = Image.new("RGB", SCREEN_SIZE)
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Act."}]},
        {"role": "user", "content": [{"type": "text", "text": "Click OK."}, {"type": "image"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": ""}],
            "tool_calls": [
                {"type": "function", "function": {"name": "click", "arguments": {"x": 1, "y": 2}}}
            ],
        },
        {"role": "tool", "name": "click", "content": [{"type": "image", "image": shot}]},
    ]
    text = processor.apply_chat_template(messages, tools=tools, tokenize=False)
    assert text.count("<|image_pad|>") == 2, "the tool result's screenshot is rendered"
    assert '"name": "double_click"' in text and "<tool_response>" in text

    call = '<tool_call>\n{"name": "click", "arguments": {"x": 168, "y": 112}}\n</tool_call>'
    ids = processor.tokenizer(call + "<|im_end|>", add_special_tokens=False)["input_ids"]
    parsed = parse_response(processor.tokenizer, ids, prefix=[], tools=tools)
    assert parsed["tool_calls"] == [
        {"type": "function", "function": {"name": "click", "arguments": {"x": 168, "y": 112}}}
    ]
    with pytest.raises(ValueError, match="Qwen"):
        enable_qwen_tool_calling(_NotQwen())


class _NotQwen:
    chat_template = None

    def get_vocab(self) -> dict[str, int]:
        return {"<s>": 0}


# --- real desktops ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
@needs("desktop")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("trl-desktops")
    yield folder
    close_shared_leases()
    assert not pool_desktops.processes_under(folder), "the desk left desktops behind"


def _env_class(work_dir: Path, **settings: Any) -> type[OSWorldTRLEnv]:
    provider = LocalProviderConfig(screen_size=SCREEN_SIZE, work_dir=str(work_dir))
    return osworld_environment(
        SUITE, screen_size=SCREEN_SIZE, provider=provider, desk_size=DESK_SIZE, **settings
    )


@pytest.fixture
def make_env(work_dir: Path) -> Iterator[Any]:
    """Instances as TRL makes them; any lease a failed test left is handed back afterwards."""
    made: list[OSWorldTRLEnv] = []

    def make(**settings: Any) -> OSWorldTRLEnv:
        env = _env_class(work_dir, **settings)()
        made.append(env)
        return env

    yield make
    for env in made:
        if env.lease is not None:
            env.get_reward()


def _row(task_id: str) -> dict[str, Any]:
    return make_trl_dataset(SUITE, screen_size=SCREEN_SIZE, task_ids=[task_id])[0]


def _solve(env: OSWorldTRLEnv, task_id: str, *, correct: bool) -> None:
    layout = task_layout(task_id)
    answer = layout.answer if correct else distractor_answer(task_id)
    if layout.action == "click":
        blocks = env.click(*layout.centre(answer))
    else:
        blocks = env.type_text(f"{answer}\n")
    assert blocks[0]["type"] == "image" and blocks[0]["image"].size == SCREEN_SIZE


@pytest.mark.desktop
@pytest.mark.parametrize("task_id", [CLICK_TASK, TYPE_TASK])
def test_a_scripted_correct_answer_scores_1_and_a_wrong_one_0(make_env: Any, task_id: str) -> None:
    env = make_env()
    for correct, expected in ((True, 1.0), (False, 0.0)):
        blocks = env.reset(**_row(task_id))
        # The dataset's prompt already holds the instruction: only the screenshot comes back.
        assert [b["type"] for b in blocks] == ["image"] and blocks[0]["image"].size == SCREEN_SIZE
        assert env.lease is not None and not env.episode_over
        _solve(env, task_id, correct=correct)
        assert env.done() == [{"type": "text", "text": EPISODE_OVER}]
        assert env.lease is None, "the lease goes back when the episode ends"
        assert env.get_reward() == expected
        assert env.get_reward() == expected, "asking again gives the same reward"
        with pytest.raises(ValueError, match=EPISODE_OVER):
            env.click(1, 1)
    assert env.desk.available == env.desk.size


@pytest.mark.desktop
def test_reset_without_a_prompt_states_the_instruction_and_reuse_releases(make_env: Any) -> None:
    env = make_env()
    blocks = env.reset(task_id=CLICK_TASK)
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert blocks[1]["text"] == load_tasks(SUITE)[CLICK_TASK].instruction
    first_lease = env.lease
    # TRL reuses instances across batches: a reset while an episode runs hands the lease back.
    env.reset(task_id=CLICK_TASK)
    assert first_lease is not None and first_lease.released
    with pytest.raises(ValueError, match="integer"):
        env.click("left", 3)  # malformed arguments: TRL shows the error; no step is spent
    assert env.steps == 0
    with pytest.raises(ValueError, match="task_id"):
        env.reset(prompt="no task")


@pytest.mark.desktop
def test_max_pixels_scales_the_screenshots_and_says_so(make_env: Any) -> None:
    env = make_env(max_pixels=SCREEN_SIZE[0] * SCREEN_SIZE[1] // 4)
    image, note = env.reset(**_row(CLICK_TASK))
    assert image["image"].size == (168, 112)
    assert "336x224" in note["text"] and "screen pixels" in note["text"]
    assert env.click(*task_layout(CLICK_TASK).centre())[0]["image"].size == (168, 112)
    env.done()
    assert env.get_reward() == 1.0, "coordinates stay in screen pixels"


@pytest.mark.desktop
def test_an_unfinished_episode_is_evaluated_or_scored_zero(make_env: Any) -> None:
    evaluated, zeroed = make_env(), make_env(unfinished="zero")
    for env in (evaluated, zeroed):
        env.reset(**_row(CLICK_TASK))
        _solve(env, CLICK_TASK, correct=True)  # then the model stops calling tools
    assert evaluated.get_reward() == 1.0 and evaluated.last_info["actions"] == ["done"]
    assert zeroed.get_reward() == 0.0 and zeroed.steps == 1
    assert evaluated.lease is None and zeroed.lease is None


@pytest.mark.desktop
def test_fifteen_steps_end_with_the_envs_fail_replacement(make_env: Any) -> None:
    env = make_env()
    env.reset(**_row(CLICK_TASK))
    for _ in range(14):
        assert env.press("shift")[0]["type"] == "image"
    blocks = env.press("shift")
    assert blocks == [{"type": "text", "text": f"{EPISODE_OVER} The step limit was reached."}]
    info = env.last_info
    assert info["fail_replaced"] and info["actions"] == ["fail"] and info["step"] == 15
    assert env.get_reward() == 0.0
    with pytest.raises(ValueError, match=EPISODE_OVER):
        env.press("shift")


@pytest.mark.desktop
def test_a_desktop_killed_mid_episode_gives_no_reward(make_env: Any) -> None:
    env = make_env()
    env.reset(**_row(CLICK_TASK))
    assert env.lease is not None
    env_id = env.lease.env_id
    pids = env.desk.pool.call(pool_desktops.desktop_pids, env_ids=[env_id])[0]
    assert pool_desktops.kill(pids["xvfb"])
    blocks = env.click(*task_layout(CLICK_TASK).centre())
    assert "desktop failed" in blocks[0]["text"] and env.last_info["infra_error"]
    assert env.get_reward() is None, "TRL drops a None reward from the group mean"
    # The desk relaunches that desktop at its next reset; the same instance scores again.
    env.reset(**_row(CLICK_TASK))
    _solve(env, CLICK_TASK, correct=True)
    env.done()
    assert env.get_reward() == 1.0


@pytest.mark.desktop
def test_an_exhausted_desk_names_desk_size(make_env: Any) -> None:
    envs = [make_env(acquire_timeout=0.5) for _ in range(DESK_SIZE + 1)]
    for env in envs[:DESK_SIZE]:
        env.reset(**_row(CLICK_TASK))
    with pytest.raises(LeaseError, match="desk_size"):
        envs[-1].reset(**_row(CLICK_TASK))
    for env in envs[:DESK_SIZE]:
        env.get_reward()
    assert envs[0].desk.available == DESK_SIZE


# --- TRL's trainer ---------------------------------------------------------------------------


@pytest.mark.desktop
def test_one_grpo_step_with_environment_factory_on_the_tiny_model(
    tiny_processor: Path,
    work_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GRPOTrainer resets, generates, runs the tools, scores and takes one optimizer step.

    The tiny model has random weights and never writes a tool call by itself, so a sequence
    bias (a generation setting TRL passes through) makes it write one turn: click the answer's
    button, then done(). Everything else is TRL's: the chat template checks, the response
    parser, the tool loop with screenshot results, the reward and the loss.
    """
    import huggingface_hub
    from osworld_agents.models.processor import ImageOnlyQwenProcessor
    from transformers import Qwen2_5_VLForConditionalGeneration
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")

    processor = enable_qwen_tool_calling(ImageOnlyQwenProcessor.from_pretrained(tiny_processor))
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_processor)
    x, y = task_layout(CLICK_TASK).centre()
    answer = (
        f'<tool_call>\n{{"name": "click", "arguments": {{"x": {x}, "y": {y}}}}}\n</tool_call>\n'
        '<tool_call>\n{"name": "done", "arguments": {}}\n</tool_call><|im_end|>'
    )
    ids = processor.tokenizer(answer, add_special_tokens=False)["input_ids"]
    # Each prefix of the answer biases its next token, more the longer the prefix matched.
    bias = [[ids[: k + 1], 100.0 * (k + 1)] for k in range(len(ids))]
    env_cls = _env_class(work_dir)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=DESK_SIZE,
        num_generations=DESK_SIZE,
        max_steps=1,
        max_completion_length=3 * len(ids) + 400,  # two turns plus one screenshot (96 tokens)
        max_tool_calling_iterations=1,
        generation_kwargs={"sequence_bias": bias},
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=processor,
        args=args,
        train_dataset=make_trl_dataset(SUITE, screen_size=SCREEN_SIZE, task_ids=[CLICK_TASK]),
        environment_factory=env_cls,
    )
    trainer.train()

    logs = trainer.state.log_history[0]
    assert logs["rewards/OSWorld/mean"] == 1.0
    assert logs["tools/call_frequency"] == 2.0 and logs["tools/failure_frequency"] == 0.0
    assert trainer.state.global_step == 1
    rollouts = trainer.environments
    assert len(rollouts) == DESK_SIZE and all(isinstance(e, env_cls) for e in rollouts)
    assert all(e.steps == 2 and e.last_info["score"] == 1.0 for e in rollouts)
    assert rollouts[0].desk.available == DESK_SIZE, "every lease went back"
