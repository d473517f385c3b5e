"""The verl adapter's cases, run inside the verl side venv by ``test_verl_on_cpu.py``.

Usage: ``python tests/integrations/verl_cases.py WORK_DIR REPORT_JSON``

Everything of verl is verl's own (installed from PyPI): the registry, ``hydra.utils.instantiate``
as ``AgentLoopWorker`` calls it, the continuous-token builder, ``RLHFDataset``, the worker's
post-processing (padding, the processor's re-expansion of image placeholders, ``rm_scores``),
and Hydra's composition of ``ppo_trainer`` with the example's arguments. Only the LLM server is
a fake: it answers scripted UI-TARS text (the ``ui-basics`` oracle, a distractor, ``wait()``)
as token ids of the offline tiny Qwen2.5-VL tokenizer. The desktops are real ``local`` ones.

Each case's outcome goes to REPORT_JSON (``{case: {"ok", "seconds", "error", "details"}}``); the
exit status is 1 when any case failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import hydra
import psutil
from hydra.errors import InstantiationException
from omegaconf import OmegaConf
from osworld_agents.models import build_tiny_qwen
from osworld_agents.models.processor import ImageOnlyQwenProcessor
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopWorker,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from osworld_gym.integrations import close_shared_leases
from osworld_gym.integrations.verl import (
    AGENT_NAME,
    OSWorldAgentLoop,
    make_verl_dataset,
)
from osworld_gym.policies.oracles.ui_basics import (
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    oracle_responses,
    task_layout,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "verl"
PROMPT_LENGTH = 1024
RESPONSE_LENGTH = 4096
DESK_SIZE = 2  # the test machine has 2 cores shared with other workers: keep desktops few
# Tiny screens; a wait() lasts 50 ms instead of a second; scripted answers need no settling.
ENV = {"tasks": SUITE, "screen_size": list(SCREEN_SIZE), "provider": "local", "wait_seconds": 0.05}
CLICK_TASK = "click-colour-01"
TYPE_TASK = "type-word-01"
WAIT = "Thought: Nothing to do yet.\nAction: wait()"


def wait_until(predicate: Callable[[], bool], timeout: float, message: str) -> None:
    """Poll ``predicate`` until true, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(0.05)


def dead(pid: int) -> bool:
    """The process is gone or a zombie (killed; its parent has not reaped it yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# --- the fake server --------------------------------------------------------------------------


class FakeServer:
    """Stands in for verl's ``LLMServerClient``: scripted answers as token ids.

    The answer of a call is ``script[turn]``, where ``turn`` is the number of images in the
    request less one: the episode's step. So a re-run episode starts its script over. Every
    call checks the request the way a vLLM server would see it: one placeholder span per image.
    """

    def __init__(
        self,
        tokenizer: Any,
        script: list[str],
        on_generate: Callable[[int, str], Awaitable[None]] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.script = script
        self.on_generate = on_generate
        self.calls: list[dict[str, Any]] = []
        self.vision_start = tokenizer.convert_tokens_to_ids("<|vision_start|>")
        self.im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        image_data: list[Any] | None = None,
        video_data: list[Any] | None = None,
        audio_data: list[Any] | None = None,
        mm_processor_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TokenOutput:
        images = list(image_data or [])
        assert images, "every request carries the screenshots so far"
        spans = list(prompt_ids).count(self.vision_start)
        assert spans == len(images), f"{spans} image spans in the prompt, {len(images)} images"
        assert sampling_params.get("max_tokens", 0) >= 1, sampling_params
        turn = len(images) - 1
        if self.on_generate is not None:
            await self.on_generate(turn, request_id)
        text = self.script[min(turn, len(self.script) - 1)]
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.im_end]
        ids = ids[: sampling_params["max_tokens"]]  # as vLLM stops at max_tokens
        logprobs = [-0.01 * (len(self.calls) + 1) - 0.001 * i for i in range(len(ids))]
        self.calls.append(
            {"request_id": request_id, "turn": turn, "ids": ids, "logprobs": logprobs}
        )
        return TokenOutput(token_ids=ids, log_probs=logprobs, extra_fields={"global_steps": 3})

    def final_attempt(self) -> list[dict[str, Any]]:
        """The calls of the last attempt (attempts use distinct request ids)."""
        last = self.calls[-1]["request_id"]
        return [call for call in self.calls if call["request_id"] == last]


# --- verl's pieces ------------------------------------------------------------------------------


class Harness:
    """The tiny model's tokenizer and processor, verl's configs, the dataset rows."""

    def __init__(self, work: Path) -> None:
        folder = build_tiny_qwen(work / "tiny-qwen", seed=0)
        self.processor = ImageOnlyQwenProcessor.from_pretrained(folder)
        self.tokenizer = self.processor.tokenizer
        self.image_pad = self.tokenizer.convert_tokens_to_ids("<|image_pad|>")
        self.vision_start = self.tokenizer.convert_tokens_to_ids("<|vision_start|>")
        self.config = OmegaConf.create(
            {
                "actor_rollout_ref": {
                    "rollout": {
                        "prompt_length": PROMPT_LENGTH,
                        "response_length": RESPONSE_LENGTH,
                        "max_model_len": None,
                        "limit_images": 15,
                    }
                },
                "data": {"return_raw_chat": True, "max_prompt_length": PROMPT_LENGTH},
            }
        )
        self.parquet = make_verl_dataset(SUITE, work / "ui_basics.parquet")
        data_config = OmegaConf.create(
            {
                "return_raw_chat": True,
                "max_prompt_length": PROMPT_LENGTH,
                "filter_overlong_prompts": True,
                "filter_overlong_prompts_workers": 1,
                "cache_dir": str(work / "verl-cache"),
            }
        )
        self.dataset = RLHFDataset(str(self.parquet), self.tokenizer, data_config, self.processor)
        self.rows = {self.dataset[i]["extra_info"]["task_id"]: i for i in range(len(self.dataset))}
        # The example's agent-loop YAML, loaded as AgentLoopWorker loads it.
        (self.entry,) = OmegaConf.load(EXAMPLE / "agent_loop.yaml")

    def row(self, task_id: str) -> dict[str, Any]:
        """A dataset row as ``AgentLoopWorker`` hands it to ``run`` (non-tensor fields)."""
        row = self.dataset[self.rows[task_id]]
        return {k: v for k, v in row.items() if k not in ("dummy_tensor", "agent_name")}

    def loop(self, server: FakeServer, *, example: bool = False, **settings: Any) -> Any:
        """Instantiate the loop the way ``AgentLoopWorker._run_agent_loop`` does.

        The example's YAML entry, with this test's env and desk (unless ``example``) and
        ``settings`` over it.
        """
        ours = {} if example else {"env": ENV, "desk_size": DESK_SIZE, "tokens_per_response": 64}
        entry = OmegaConf.merge(self.entry, ours, settings)
        return hydra.utils.instantiate(
            config=entry,
            trainer_config=DictConfigWrap(config=self.config),
            server_manager=server,
            tokenizer=self.tokenizer,
            processor=self.processor,
            hf_model_type="qwen2_5_vl",
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(self.config.data),
            tools=ToolListWrap([]),
        )

    async def postprocess(self, output: Any, row: dict[str, Any]) -> Any:
        """verl's own per-sample and batch post-processing of the loop's output."""
        worker = AgentLoopWorker.__new__(AgentLoopWorker)  # only the parts postprocessing uses
        worker.rollout_config = self.config.actor_rollout_ref.rollout
        worker.tokenizer = self.tokenizer
        worker.processor = self.processor
        worker.mm_processor_kwargs = {}
        worker.reward_loop_worker_handles = None
        worker.distillation_enabled = False
        internal = await worker._agent_loop_postprocess(output, False, **row)
        return worker._postprocess([internal], input_non_tensor_batch=None)


# --- checks -------------------------------------------------------------------------------------


def check_tokens(h: Harness, output: Any, server: FakeServer) -> dict[str, Any]:
    """The invariants of an episode's tokens, images, mask and log-probs."""
    ids = list(output.prompt_ids) + list(output.response_ids)
    images = output.multi_modal_data["images"]
    # One placeholder span per image, each as long as the processor makes that image.
    assert ids.count(h.vision_start) == len(images), (ids.count(h.vision_start), len(images))
    grid = h.processor.image_processor(images=images, return_tensors="pt")["image_grid_thw"]
    expected_pads = int(grid.prod(dim=-1).sum()) // h.processor.image_processor.merge_size**2
    assert ids.count(h.image_pad) == expected_pads, (ids.count(h.image_pad), expected_pads)
    assert all(image.size == SCREEN_SIZE for image in images), [im.size for im in images]
    # The mask is 1 exactly on the sampled tokens, in order, with their log-probs.
    mask = list(output.response_mask)
    assert len(mask) == len(output.response_ids) == len(output.response_logprobs)
    calls = server.final_attempt()
    sampled = [t for call in calls for t in call["ids"]]
    sampled_logprobs = [lp for call in calls for lp in call["logprobs"]]
    masked = [t for t, m in zip(output.response_ids, mask, strict=True) if m]
    assert sum(mask) == len(sampled) == output.extra_fields["sampled_tokens"], (sum(mask), sampled)
    assert masked == sampled[len(sampled) - len(masked) :] and len(masked) == len(sampled)
    kept = [lp for lp, m in zip(output.response_logprobs, mask, strict=True) if m]
    assert kept == sampled_logprobs[len(sampled_logprobs) - len(kept) :]
    assert all(lp == 0.0 for lp, m in zip(output.response_logprobs, mask, strict=True) if not m)
    # The prompt side never carries a sampled token: the first response starts the response.
    first = calls[0]["ids"]
    assert list(output.response_ids[: len(first)]) == first and all(mask[: len(first)])
    # verl's turn count: the first prompt, each response, each later screenshot.
    assert output.num_turns == 1 + len(calls) + (len(images) - 1), (output.num_turns, len(calls))
    return {"images": len(images), "image_pads": expected_pads, "sampled": len(sampled)}


async def check_verl_postprocess(
    h: Harness, output: Any, row: dict[str, Any], response_length: int = RESPONSE_LENGTH
) -> dict[str, Any]:
    """verl pads the sample, re-expands the images through the processor and places the score."""
    reward = output.reward_score
    images = len(output.multi_modal_data["images"])
    response_len = len(output.response_ids)
    mask_sum = sum(output.response_mask)
    batch = await h.postprocess(output, row)
    tensors = batch.batch
    assert tuple(tensors["responses"].shape) == (1, response_length)
    assert tuple(tensors["prompts"].shape) == (1, PROMPT_LENGTH)
    assert int(tensors["response_mask"].sum()) == mask_sum
    rm = tensors["rm_scores"][0]
    assert float(rm[response_len - 1]) == reward and float(rm.sum()) == reward
    inputs = batch.non_tensor_batch["multi_modal_inputs"][0]
    grid = inputs["image_grid_thw"]
    assert grid.shape[0] == images, (grid.shape, images)
    pads = int((tensors["input_ids"][0] == h.image_pad).sum())
    merge = h.processor.image_processor.merge_size
    features = int(grid.prod(dim=-1).sum()) // merge**2
    assert pads == features, f"image tokens {pads} != image features {features}"
    assert inputs["pixel_values"].shape[0] == int(grid.prod(dim=-1).sum())
    return {"pads": pads, "features": features}


def episode_details(output: Any) -> dict[str, Any]:
    """What a case reports of an episode."""
    fields = output.extra_fields
    keys = (
        "task_id",
        "steps",
        "parse_errors",
        "fail_replaced",
        "infra_error",
        "infra_errors",
        "attempts",
        "cut_by_length",
    )
    return {
        "reward_score": output.reward_score,
        "num_turns": output.num_turns,
        "images": len(output.multi_modal_data["images"]),
        "prompt_tokens": len(output.prompt_ids),
        "response_tokens": len(output.response_ids),
        **{key: fields[key] for key in keys},
        "timings": {k: round(v, 3) for k, v in fields["timings"].items() if "/" not in k},
    }


def answers(task_id: str, *, correct: bool) -> list[str]:
    """The oracle's responses, or the same with the distractor's answer."""
    if correct:
        return oracle_responses(task_id)
    return oracle_responses(task_id, answer=distractor_answer(task_id))


# --- the cases ----------------------------------------------------------------------------------


async def case_registry(h: Harness) -> dict[str, Any]:
    entry = _agent_loop_registry[AGENT_NAME]
    assert entry == {"_target_": "osworld_gym.integrations.verl.OSWorldAgentLoop"}, entry
    assert h.entry.name == AGENT_NAME and h.entry._target_ == entry["_target_"]
    return {"registry": dict(entry)}


async def case_dataset(h: Harness) -> dict[str, Any]:
    assert len(h.dataset) == 38, len(h.dataset)
    row = h.dataset[h.rows[TYPE_TASK]]
    assert row["agent_name"] == AGENT_NAME and row["data_source"] == "osworld"
    assert row["extra_info"]["task_id"] == TYPE_TASK and row["extra_info"]["suite"] == SUITE
    assert [m["role"] for m in row["raw_prompt"]] == ["system", "user"]
    assert "## User Instruction" in row["raw_prompt"][1]["content"]
    assert row["reward_model"] == {"style": "env", "ground_truth": TYPE_TASK}
    return {"rows": len(h.dataset), "columns": sorted(row)}


async def case_length_check(h: Harness) -> dict[str, Any]:
    budget = h.loop(FakeServer(h.tokenizer, [WAIT])).budget
    assert budget is not None and budget.image_tokens == 96, budget  # (336/28) * (224/28)
    messages = {}
    for key, value in (
        ("response_length", budget.response_tokens - 1),
        ("prompt_length", budget.prompt_tokens - 1),
        ("max_model_len", 2000),
        ("limit_images", 5),
    ):
        h.config.actor_rollout_ref.rollout[key] = value
        try:
            h.loop(FakeServer(h.tokenizer, [WAIT]))
        except InstantiationException as e:  # hydra's wrapper of the loop's ValueError
            assert isinstance(e.__cause__, ValueError), repr(e.__cause__)
            messages[key] = str(e.__cause__)
        else:
            raise AssertionError(f"{key}={value}: no error")
        finally:
            h.config.actor_rollout_ref.rollout.response_length = RESPONSE_LENGTH
            h.config.actor_rollout_ref.rollout.prompt_length = PROMPT_LENGTH
            h.config.actor_rollout_ref.rollout.max_model_len = None
            h.config.actor_rollout_ref.rollout.limit_images = 15
        assert f"actor_rollout_ref.rollout.{key}" in messages[key], messages[key]
    assert "data.max_response_length" in messages["response_length"]
    assert (
        "max_steps" in messages["response_length"] and "max_pixels" in messages["response_length"]
    )
    assert "data.max_prompt_length" in messages["prompt_length"]
    return {"budget": str(budget), "response_length_error": messages["response_length"]}


async def case_example_config(h: Harness) -> dict[str, Any]:
    """The example's verl arguments compose with verl's own ``ppo_trainer`` config."""
    import verl
    from hydra import compose, initialize_config_dir

    printed = subprocess.run(
        ["bash", str(EXAMPLE / "train_ui_basics_grpo.sh")],
        env={**os.environ, "DRY_RUN": "1"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    args = [line for line in printed if line]
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=args)
    rollout = cfg.actor_rollout_ref.rollout
    assert rollout.agent.default_agent_loop == AGENT_NAME
    assert Path(rollout.agent.agent_loop_config_path) == EXAMPLE / "agent_loop.yaml"
    # The example's lengths pass the loop's start-up check (with the tiny tokenizer, whose text
    # tokens outnumber Qwen's, so the real model has more room).
    ours = h.config.actor_rollout_ref.rollout
    keys = ("prompt_length", "response_length", "max_model_len", "limit_images")
    saved = {key: ours[key] for key in keys}
    try:
        for key in keys:
            ours[key] = rollout[key]
        budget = h.loop(FakeServer(h.tokenizer, [WAIT]), example=True).budget
    finally:
        for key, value in saved.items():
            ours[key] = value
    return {"prompt_length": rollout.prompt_length, "response_length": rollout.response_length,
            "budget": str(budget)}  # fmt: skip


async def run_episode(
    h: Harness, task_id: str, script: list[str], on_generate: Any = None, **settings: Any
) -> tuple[Any, FakeServer, dict[str, Any]]:
    server = FakeServer(h.tokenizer, script, on_generate)
    loop = h.loop(server, **settings)
    row = h.row(task_id)
    output = await loop.run({"temperature": 1.0, "top_p": 1.0, "logprobs": True}, **row)
    return output, server, row


async def case_correct_and_wrong(h: Harness) -> dict[str, Any]:
    """Oracle answers score 1, distractors 0: a click task and a typing task, concurrently."""
    runs = [
        (task, correct)
        for task in (CLICK_TASK, TYPE_TASK)
        for correct in (True, False)
    ]  # fmt: skip
    results = await asyncio.gather(
        *(run_episode(h, task, answers(task, correct=ok)) for task, ok in runs)
    )
    details = {}
    for (task, ok), (output, server, row) in zip(runs, results, strict=True):
        name = f"{task}/{'oracle' if ok else 'distractor'}"
        assert output.reward_score == (1.0 if ok else 0.0), (name, episode_details(output))
        fields = output.extra_fields
        assert fields["task_id"] == task and fields["steps"] == 2 and fields["attempts"] == 1
        assert fields["infra_error"] is None and fields["infra_errors"] == []
        assert not fields["fail_replaced"] and fields["parse_errors"] == 0
        assert len(output.multi_modal_data["images"]) == 2
        tokens = check_tokens(h, output, server)
        verl_side = await check_verl_postprocess(h, output, row)
        details[name] = {**episode_details(output), **tokens, **verl_side}
    layout = task_layout(CLICK_TASK)
    details["click answer"] = {"answer": layout.answer, "distractor": distractor_answer(CLICK_TASK)}
    return details


async def case_fifteen_waits(h: Harness) -> dict[str, Any]:
    """15 wait() answers: the env replaces the 15th with FAIL and scores 0."""
    output, server, row = await run_episode(h, CLICK_TASK, [WAIT])
    fields = output.extra_fields
    assert fields["steps"] == 15 and fields["fail_replaced"], episode_details(output)
    assert output.reward_score == 0.0 and fields["infra_error"] is None
    assert len(server.calls) == 15 and len(output.multi_modal_data["images"]) == 15
    assert output.num_turns == 30  # at most 2 x max_steps
    tokens = check_tokens(h, output, server)
    verl_side = await check_verl_postprocess(h, output, row)
    return {**episode_details(output), **tokens, **verl_side}


async def case_response_budget_never_cuts_an_image(h: Harness) -> dict[str, Any]:
    """A response_length too short for 15 screenshots: the episode stops before the image that
    would not fit (never half an image), scores 0, and verl pads it without overflow."""
    rollout = h.config.actor_rollout_ref.rollout
    rollout.response_length = 700
    try:
        output, server, row = await run_episode(h, CLICK_TASK, [WAIT], check_lengths=False)
        fields = output.extra_fields
        assert fields["cut_by_length"] and output.reward_score == 0.0, episode_details(output)
        assert len(output.response_ids) <= 700 and fields["steps"] < 15
        # The step after the last response happened; its screenshot did not fit.
        assert fields["steps"] == len(server.calls) == len(output.multi_modal_data["images"])
        tokens = check_tokens(h, output, server)
        verl_side = await check_verl_postprocess(h, output, row, response_length=700)
    finally:
        rollout.response_length = RESPONSE_LENGTH
    return {**episode_details(output), **tokens, **verl_side}


async def case_unknown_task_is_not_retried(h: Harness) -> dict[str, Any]:
    """A row naming no task of the suite is a configuration error, raised at once."""
    from osworld_gym.integrations import LeaseResetError

    server = FakeServer(h.tokenizer, [WAIT])
    loop = h.loop(server)
    row = dict(h.row(CLICK_TASK), extra_info={"task_id": "no-such-task"})
    try:
        await loop.run({"temperature": 1.0, "logprobs": True}, **row)
    except LeaseResetError as e:
        assert not e.result.infra and "no-such-task" in str(e), e
        assert server.calls == []
        return {"error": str(e)[:200]}
    raise AssertionError("an unknown task id did not raise")


def _kill_xvfb(env: Any) -> int:
    """SIGKILL the X server of an env's desktop (runs in the env's worker); its PID."""
    pid = env.unwrapped.desktop.component_pid("xvfb")
    os.kill(pid, signal.SIGKILL)
    return pid


class DesktopKiller:
    """A generate hook that kills the leased desktop before step 1's answer is stepped.

    Args:
        attempts: Which attempts (1-based) to hit; None: every one.
    """

    def __init__(self, attempts: set[int] | None) -> None:
        self.attempts = attempts
        self.loop: OSWorldAgentLoop | None = None
        self.killed: list[int] = []
        self._requests: list[str] = []

    async def __call__(self, turn: int, request_id: str) -> None:
        if request_id not in self._requests:
            self._requests.append(request_id)
        attempt = self._requests.index(request_id) + 1
        if turn != 1 or (self.attempts is not None and attempt not in self.attempts):
            return
        assert self.loop is not None and self.loop.current_lease is not None
        env_id = self.loop.current_lease.env_id
        (pid,) = await self.loop.desk().pool.acall(_kill_xvfb, env_ids=[env_id])
        await asyncio.to_thread(wait_until, lambda: dead(pid), 10, f"X server {pid} to die")
        self.killed.append(pid)


async def run_with_killer(
    h: Harness, attempts: set[int] | None, **settings: Any
) -> tuple[Any, FakeServer, dict[str, Any], list[int]]:
    killer = DesktopKiller(attempts)
    server = FakeServer(h.tokenizer, oracle_responses(CLICK_TASK), killer)
    killer.loop = h.loop(server, **settings)
    row = h.row(CLICK_TASK)
    output = await killer.loop.run({"temperature": 1.0, "logprobs": True}, **row)
    return output, server, row, killer.killed


async def case_killed_desktop_is_retried(h: Harness) -> dict[str, Any]:
    """A desktop killed mid-episode: the episode re-runs on a fresh lease and scores."""
    output, server, row, killed = await run_with_killer(h, {1}, max_attempts=3)
    fields = output.extra_fields
    assert len(killed) == 1, killed
    assert fields["attempts"] == 2 and len(fields["infra_errors"]) == 1, episode_details(output)
    assert fields["infra_error"] is None and output.reward_score == 1.0
    assert len({call["request_id"] for call in server.calls}) == 2  # regenerated from scratch
    tokens = check_tokens(h, output, server)
    verl_side = await check_verl_postprocess(h, output, row)
    return {**episode_details(output), **tokens, **verl_side, "killed": killed}


async def case_killed_every_attempt(h: Harness) -> dict[str, Any]:
    """Every attempt killed: reward 0, the fault reported, the mask zeroed (nothing to learn)."""
    output, server, row, killed = await run_with_killer(h, None, max_attempts=2)
    fields = output.extra_fields
    assert len(killed) == 2 and fields["attempts"] == 2, episode_details(output)
    assert fields["infra_error"] and len(fields["infra_errors"]) == 2
    assert output.reward_score == 0.0 and sum(output.response_mask) == 0
    assert fields["reward_extra_info"]["osworld_infra_failed"] == 1.0
    ids = list(output.prompt_ids) + list(output.response_ids)
    assert ids.count(h.vision_start) == len(output.multi_modal_data["images"])
    verl_side = await check_verl_postprocess(h, output, row)
    return {**episode_details(output), **verl_side, "killed": killed}


CASES = [
    case_registry,
    case_dataset,
    case_length_check,
    case_example_config,
    case_correct_and_wrong,
    case_fifteen_waits,
    case_response_budget_never_cuts_an_image,
    case_unknown_task_is_not_retried,
    case_killed_desktop_is_retried,
    case_killed_every_attempt,
]


def desktop_pids(env: Any) -> list[int]:
    """Every live process of an env's desktop (none before its first reset)."""
    desktop = env.unwrapped.desktop
    return [] if desktop is None else list(desktop.pids())


async def main(work: Path, report_path: Path) -> int:
    report: dict[str, Any] = {}
    started = time.perf_counter()
    h = Harness(work)
    report["setup"] = {"ok": True, "seconds": round(time.perf_counter() - started, 2)}
    desk = None
    for case in CASES:
        name = case.__name__.removeprefix("case_")
        started = time.perf_counter()
        try:
            details = await case(h)
            report[name] = {"ok": True, "details": details}
        except Exception:
            report[name] = {"ok": False, "error": traceback.format_exc()}
        report[name]["seconds"] = round(time.perf_counter() - started, 2)
        print(f"{name}: {'ok' if report[name]['ok'] else 'FAILED'} "
              f"({report[name]['seconds']} s)", flush=True)  # fmt: skip
        if not report[name]["ok"]:
            print(report[name]["error"], flush=True)
    # Nothing of the desktops outlives the desk.
    loop = h.loop(FakeServer(h.tokenizer, [WAIT]))
    desk = loop.desk()
    pids = [pid for env_pids in desk.pool.call(desktop_pids) for pid in env_pids]
    report["desk"] = {"ok": True, "details": {"stats": desk.stats(), "desktop_pids": len(pids)}}
    close_shared_leases()
    try:
        wait_until(lambda: all(dead(pid) for pid in pids), 30, "the desktops to stop")
    except AssertionError:
        report["desk"] = {"ok": False, "error": traceback.format_exc()}
    report_path.write_text(json.dumps(report, indent=1, default=str))
    return 0 if all(entry["ok"] for entry in report.values()) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]))))
