"""UITARSAgent: conversations rebuilt from trajectories, resizing, seeding, coordinates end to end.

The engine here is a scripted fake: these tests are about the agent's own logic.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from osworld_agents.engines import Conversation, Generation, ImagePart, SamplingParams
from PIL import Image

from osworld_gym import parse_action
from osworld_gym.env_config import EnvConfig
from osworld_gym.policies.uitars import (
    EVALUATION_SAMPLING,
    SYSTEM_TEXT,
    TRAINING_SAMPLING,
    UITARSAgent,
    UITARSConfig,
    computer_use_prompt,
)
from osworld_gym.policies.uitars.images import ScreenshotEncoder
from osworld_gym.policies.uitars.prompt import BOX_END, BOX_START
from osworld_gym.pool import PolicyOutput, PolicyRequest, StepRecord, Trajectory
from osworld_gym.pool import encode_screenshot as encode
from osworld_gym.pool.policy import call_policy

INSTRUCTION = "Rename the file to report.txt"


class ScriptedEngine:
    """Answers each conversation with ``respond(conversation)``; records every call."""

    def __init__(self, respond: Callable[[Conversation], str] | None = None) -> None:
        self.respond = respond or (lambda conversation: "Thought: ok\nAction: wait()")
        self.calls: list[tuple[list[Conversation], SamplingParams]] = []

    def generate(
        self, conversations: Sequence[Conversation], params: SamplingParams
    ) -> list[Generation]:
        self.calls.append((list(conversations), params))
        return [
            Generation(
                text=self.respond(c),
                token_ids=[7, 8, 9],
                logprobs=[-0.1, -0.2, -0.3],
                finish_reason="stop",
                prompt_tokens=123,
            )
            for c in conversations
        ]


def frame(shade: int, size: tuple[int, int] = (320, 180)) -> np.ndarray:
    """A flat screenshot whose grey level identifies it after resizing (small: fast tests)."""
    width, height = size
    return np.full((height, width, 3), shade, np.uint8)


def shade_of(part: ImagePart) -> int:
    return int(round(float(np.asarray(part.to_pil()).mean())))


def make_request(
    steps: list[StepRecord], current: np.ndarray, *, step: int | None = None, env_id: int = 0
) -> PolicyRequest:
    trajectory = Trajectory(task_id="task-1", rollout=2, instruction=INSTRUCTION, steps=steps)
    return PolicyRequest(
        env_id=env_id,
        task_id="task-1",
        rollout=2,
        step=len(steps) if step is None else step,
        observation={"screenshot": current, "instruction": INSTRUCTION},
        info={},
        trajectory=trajectory,
    )


def past_steps(n: int, size: tuple[int, int] = (320, 180)) -> list[StepRecord]:
    """Steps 0..n-1: screenshot shade 10*(i+1), a click response, token ids on even steps."""
    steps = []
    for i in range(n):
        text = f"Thought: step {i}\nAction: click(start_box='({100 + i},{200 + i})')"
        extra = {"token_ids": [1000 + i, 1001 + i]} if i % 2 == 0 else {}
        steps.append(StepRecord(encode(frame(10 * (i + 1), size)), text, text=text, extra=extra))
    return steps


def roles(conversation: Conversation) -> list[str]:
    return [turn.role for turn in conversation.turns]


# --- conversation layout ---------------------------------------------------------------------


def test_first_step_is_system_prompt_and_screenshot():
    agent = UITARSAgent(ScriptedEngine())
    conversation = agent.conversation(make_request([], frame(40, (1920, 1080))))
    assert roles(conversation) == ["system", "user", "user"]
    system, prompt, shot = conversation.turns
    assert system.text == SYSTEM_TEXT
    assert prompt.text == computer_use_prompt(INSTRUCTION) and not prompt.images
    assert len(shot.images) == 1 and shot.text == ""
    assert (shot.images[0].width, shot.images[0].height) == (1932, 1092)


def test_history_interleaves_screenshots_and_responses():
    steps = past_steps(3)
    conversation = UITARSAgent(ScriptedEngine()).conversation(make_request(steps, frame(200)))
    assert roles(conversation) == [
        "system",
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    shots = [shade_of(image) for image in conversation.images()]
    assert shots == [10, 20, 30, 200]  # in episode order, the current screenshot last
    assistants = [turn for turn in conversation.turns if turn.role == "assistant"]
    for i, turn in enumerate(assistants):
        assert turn.text == (
            f"Thought: step {i}\nAction: click(start_box='{BOX_START}({100 + i},{200 + i})"
            f"{BOX_END}')"
        )
    # Recorded ids are spliced verbatim; a step without ids leaves the engine to the text.
    assert [turn.token_ids for turn in assistants] == [(1000, 1001), None, (1002, 1003)]


def test_box_tokens_already_present_are_not_doubled():
    text = f"Thought: t\nAction: click(start_box='{BOX_START}(5,6){BOX_END}')"
    steps = [StepRecord(encode(frame(10)), text, text=text)]
    conversation = UITARSAgent(ScriptedEngine()).conversation(make_request(steps, frame(20)))
    assert conversation.turns[3].text == text


@pytest.mark.parametrize(
    ("k", "expected_roles", "expected_shades"),
    [
        (None, ["S", "U", "U", "A", "U", "A", "U", "A", "U"], [10, 20, 30, 200]),
        (4, ["S", "U", "U", "A", "U", "A", "U", "A", "U"], [10, 20, 30, 200]),
        (2, ["S", "U", "A", "A", "U", "A", "U"], [30, 200]),
        (1, ["S", "U", "A", "A", "A", "U"], [200]),
    ],
)
def test_history_images_keeps_the_last_k_screenshots(k, expected_roles, expected_shades):
    agent = UITARSAgent(ScriptedEngine(), history_images=k)
    conversation = agent.conversation(make_request(past_steps(3), frame(200)))
    assert [turn.role[0].upper() for turn in conversation.turns] == expected_roles
    assert [shade_of(image) for image in conversation.images()] == expected_shades
    # Every response stays, whatever the window.
    assert sum(turn.role == "assistant" for turn in conversation.turns) == 3


def test_history_images_must_keep_the_current_screenshot():
    with pytest.raises(ValueError, match="history_images"):
        UITARSConfig(history_images=0)


def test_step_without_screenshot_drops_only_its_image():
    steps = past_steps(2)
    steps[0].screenshot = None
    conversation = UITARSAgent(ScriptedEngine()).conversation(make_request(steps, frame(200)))
    assert roles(conversation) == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [shade_of(image) for image in conversation.images()] == [20, 200]


def test_episode_conversation_is_every_step_and_response():
    trajectory = Trajectory(task_id="t", rollout=0, instruction=INSTRUCTION, steps=past_steps(3))
    trajectory.final_screenshot = encode(frame(250))
    conversation = UITARSAgent(ScriptedEngine()).episode_conversation(trajectory)
    assert roles(conversation) == ["system", "user"] + ["user", "assistant"] * 3
    assert [shade_of(image) for image in conversation.images()] == [10, 20, 30]


def test_missing_screenshot_in_observation_is_a_clear_error():
    request = make_request([], frame(1))
    request.observation = {"instruction": INSTRUCTION}
    with pytest.raises(ValueError, match="no 'screenshot'"):
        UITARSAgent(ScriptedEngine()).conversation(request)


# --- images -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("screen", "model"), [((1920, 1080), (1932, 1092)), ((1280, 720), (1288, 728))]
)
def test_screenshots_are_smart_resized(screen, model):
    steps = past_steps(1, size=screen)
    conversation = UITARSAgent(ScriptedEngine()).conversation(make_request(steps, frame(9, screen)))
    images = list(conversation.images())
    assert len(images) == 2
    for image in images:  # the past one (from PNG bytes) and the current one (an array)
        assert (image.width, image.height) == model
        assert image.to_pil().size == model
        assert image.mime_type == "image/png"


def test_jpeg_images_and_custom_bounds():
    agent = UITARSAgent(ScriptedEngine(), image_format="jpeg", max_pixels=1280 * 28 * 28)
    (image,) = agent.conversation(make_request([], frame(128, (1920, 1080)))).images()
    assert image.mime_type == "image/jpeg"
    assert (image.width, image.height) == (1316, 728)
    with Image.open(io.BytesIO(image.data)) as decoded:
        assert decoded.format == "JPEG" and decoded.size == (1316, 728)


def test_past_screenshots_are_encoded_once():
    encoder = ScreenshotEncoder(cache_size=2)
    shots = [encode(frame(shade, (64, 64))) for shade in (1, 2, 3)]
    first = encoder.from_bytes(shots[0])
    assert encoder.from_bytes(shots[0]) is first
    encoder.from_bytes(shots[1])
    encoder.from_bytes(shots[2])  # evicts the least recently used: shots[0]
    assert encoder.from_bytes(shots[0]) is not first


# --- the policy ----------------------------------------------------------------------------


def test_outputs_carry_text_and_generation_details():
    engine = ScriptedEngine(lambda c: "Thought: go\nAction: click(start_box='(1,2)')")
    agent = UITARSAgent(engine)
    outputs = agent([make_request([], frame(1)), make_request(past_steps(1), frame(2))])
    assert len(engine.calls) == 1  # one batched call when unseeded
    conversations, params = engine.calls[0]
    assert len(conversations) == 2 and params == TRAINING_SAMPLING and params.seed is None
    for output in outputs:
        assert isinstance(output, PolicyOutput)
        assert output.action == output.text == "Thought: go\nAction: click(start_box='(1,2)')"
        assert output.extra == {
            "token_ids": [7, 8, 9],
            "logprobs": [-0.1, -0.2, -0.3],
            "finish_reason": "stop",
            "prompt_tokens": 123,
        }
    assert agent([]) == [] and len(engine.calls) == 1


def test_sampling_presets():
    assert UITARSAgent.for_training(ScriptedEngine()).config.sampling.temperature == 1.0
    evaluation = UITARSAgent.for_evaluation(ScriptedEngine(), history_images=3)
    assert evaluation.config.sampling == EVALUATION_SAMPLING
    assert evaluation.config.sampling.temperature == 0.6
    assert evaluation.config.history_images == 3
    custom = SamplingParams(temperature=0.0, max_new_tokens=16)
    engine = ScriptedEngine()
    UITARSAgent(engine, sampling=custom)([make_request([], frame(1))])
    assert engine.calls[0][1] == custom


class SeededEngine(ScriptedEngine):
    """Takes a seed per conversation, as this package's engines do."""

    def __init__(self) -> None:
        super().__init__()
        self.seeds: list[list[int] | None] = []

    def generate(
        self,
        conversations: Sequence[Conversation],
        params: SamplingParams,
        seeds: Sequence[int] | None = None,
    ) -> list[Generation]:
        self.seeds.append(None if seeds is None else list(seeds))
        return super().generate(conversations, params)


def test_seeded_agent_batches_requests_with_a_seed_each_where_the_engine_takes_seeds():
    requests = [make_request([], frame(1), env_id=0), make_request(past_steps(1), frame(2))]
    one_by_one = ScriptedEngine()
    expected = [o.extra["seed"] for o in UITARSAgent(one_by_one, seed=1234)(requests)]
    engine = SeededEngine()
    outputs = UITARSAgent(engine, seed=1234)(requests)
    assert [len(conversations) for conversations, _ in engine.calls] == [2]  # one call
    assert engine.seeds == [expected] and [o.extra["seed"] for o in outputs] == expected
    # The conversations are those the one-request-per-call path sends.
    assert engine.calls[0][0] == [c for calls, _ in one_by_one.calls for c in calls]
    UITARSAgent(engine)(requests)  # unseeded: no seeds passed
    assert engine.seeds[-1] is None

    class Wrapper(ScriptedEngine):  # forwards **kwargs: not trusted to honour seeds
        def generate(self, conversations, params, **kwargs):
            return super().generate(conversations, params)

    wrapped = Wrapper()
    UITARSAgent(wrapped, seed=1234)(requests)
    assert [len(conversations) for conversations, _ in wrapped.calls] == [1, 1]


def test_seeded_agent_samples_each_request_with_its_own_seed():
    engine = ScriptedEngine()
    agent = UITARSAgent.for_evaluation(engine, seed=1234)
    requests = [make_request([], frame(1), env_id=0), make_request(past_steps(1), frame(2))]
    outputs = agent(requests)
    assert len(engine.calls) == 2  # an engine without `seeds`: one call per request
    seeds = [params.seed for _, params in engine.calls]
    assert [len(conversations) for conversations, _ in engine.calls] == [1, 1]
    assert seeds[0] != seeds[1] and all(isinstance(s, int) and s >= 0 for s in seeds)
    assert [output.extra["seed"] for output in outputs] == seeds
    assert all(params.temperature == 0.6 for _, params in engine.calls)
    # Same task, rollout and step: same seed, whichever env runs it and whichever agent.
    again = UITARSAgent.for_evaluation(ScriptedEngine(), seed=1234)
    assert again.request_seed(make_request([], frame(1), env_id=7)) == seeds[0]
    assert UITARSAgent(ScriptedEngine(), seed=1).request_seed(requests[0]) != seeds[0]
    assert UITARSAgent(ScriptedEngine()).request_seed(requests[0]) is None
    # A streaming collection's feed tag tells apart the same task fed in two iterations.
    tagged = [dataclasses.replace(requests[0], tag=(k, 0)) for k in (3, 4)]
    tag_seeds = [again.request_seed(r) for r in tagged]
    assert len({seeds[0], *tag_seeds}) == 3
    assert again.request_seed(dataclasses.replace(requests[0], tag=(3, 0))) == tag_seeds[0]


def test_wrong_number_of_generations_is_an_error():
    class Short(ScriptedEngine):
        def generate(self, conversations, params):
            return super().generate(conversations, params)[:-1]

    with pytest.raises(RuntimeError, match="returned 1 generations for 2"):
        UITARSAgent(Short())([make_request([], frame(1)), make_request([], frame(2))])


def test_agent_runs_as_a_pool_policy():
    agent = UITARSAgent(ScriptedEngine())
    outputs, seconds = asyncio.run(call_policy(agent, [make_request([], frame(1))]))
    assert outputs[0].text == "Thought: ok\nAction: wait()" and seconds >= 0


# --- coordinates: what the model sees maps back to the screen --------------------------------


def marker_frame(screen: tuple[int, int], x: int, y: int) -> np.ndarray:
    """A black screen with a 12x12 red square whose centre is (x + 5.5, y + 5.5)."""
    image = frame(0, screen)
    image[y : y + 12, x : x + 12] = (255, 0, 0)
    return image


def pointing_model(conversation: Conversation) -> str:
    """Click the centre of the red square in the last image, in that image's pixels."""
    image = list(conversation.images())[-1]
    pixels = np.asarray(image.to_pil()).astype(int)
    red = (pixels[..., 0] > 128) & (pixels[..., 1] < 100)
    ys, xs = np.nonzero(red)
    x, y = round(float(xs.mean())), round(float(ys.mean()))
    assert 0 <= x < image.width and 0 <= y < image.height
    return f"Thought: the red square\nAction: click(start_box='({x},{y})')"


@pytest.mark.parametrize(
    ("screen", "overrides", "corner"),
    [
        ((1920, 1080), {}, (1500, 900)),
        ((1280, 720), {}, (101, 650)),
        ((1920, 1080), {"max_pixels": 1280 * 28 * 28}, (1500, 900)),
        ((1366, 768), {"min_pixels": 256 * 28 * 28, "max_pixels": 512 * 28 * 28}, (40, 700)),
    ],
)
def test_model_coordinates_parse_to_the_right_screen_point(screen, overrides, corner):
    agent = UITARSAgent(ScriptedEngine(pointing_model), **overrides)
    (output,) = agent([make_request([], marker_frame(screen, *corner))])
    result = parse_action(output.text, "uitars", screen, **agent.dialect_options)
    assert result.error is None
    (click,) = result.actions
    centre = (corner[0] + 5.5, corner[1] + 5.5)
    assert abs(click.x - centre[0]) <= 2.5 and abs(click.y - centre[1]) <= 2.5
    # The same options through the env's config, as a user would pass them.
    config = EnvConfig().replace(screen_size=screen, **agent.env_kwargs())
    assert config.action_format == "uitars"
    assert dict(config.dialect_options) == agent.dialect_options


def test_mismatched_parser_bounds_would_miss():
    # Why the env must take the agent's dialect_options: with the parser's defaults, a model
    # shown smaller screenshots clicks far from where it meant.
    agent = UITARSAgent(ScriptedEngine(pointing_model), max_pixels=1280 * 28 * 28)
    (output,) = agent([make_request([], marker_frame((1920, 1080), 1500, 900))])
    (click,) = parse_action(output.text, "uitars", (1920, 1080)).actions
    assert abs(click.x - 1505.5) > 400
