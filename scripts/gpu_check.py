"""GPU check of the vLLM rollout engine against the transformers engine, with one ARPO update.

Run it through ``scripts/gpu_check.sh`` (which sets up an environment with vLLM 0.33), on a
machine with one NVIDIA GPU::

    bash scripts/gpu_check.sh                       # tiny Qwen2.5-VL built here (~2 min on an H200)
    bash scripts/gpu_check.sh --model /models/UI-TARS-1.5-7B   # the real policy (~5 min)

What it does, in one process, printing one PASS/FAIL/WARN line per check and a summary; exit
status 0 only when nothing failed:

 1. Builds the tiny Qwen2.5-VL (head dimension 64, lm_head scaled so greedy decisions are not
    near-ties) or takes ``--model``.
 2. Starts ``VLLMEngine`` (bf16, sleep mode on, eager) before the trainer model fills the
    GPU, then loads the same weights with transformers on the GPU (tiny: fp32 compute on the
    bf16-rounded weights vLLM holds; ``--model``: bf16).
 3. Checks both engines render identical prompt ids, vLLM's parameter names equal
    ``vllm_parameter_name()`` of the trainer's state dict, and vLLM expands each image to the
    encoder's token count.
 4. Generates for four conversations (1 image, 2 images, none, and a second turn holding two
    more screenshots after a spliced sampled assistant turn): greedy ids equal the transformers
    engine's (a divergence is accepted only at a near-tie of the transformers distribution), and
    sampled log-probs at temperature 1.0 and 0.7 equal the trainer's forward pass within the
    stated tolerance; the same seed gives the same samples.
 5. Runs one SGD step of the ARPO policy loss (``osworld_agents.arpo.loss.policy_loss``) on the
    vLLM samples with +/-1 advantages (step size backtracked until the loss goes down), pushes
    the new weights with ``update_weights`` and checks vLLM now agrees with the updated
    transformers model, and no longer with the old one.
 6. Sleep cycles: level 1 keeps outputs identical; level 2 refuses to generate until weights are
    pushed, then gives identical outputs; free GPU memory after 3 level-2 cycles does not shrink.

Verified / not verified: this script was written and linted on a machine with neither a GPU nor
vLLM, and has **never been run**. The engine's pure parts (request building, sampling arguments,
output conversion, weight names) and its orchestration against a fake ``vllm`` module are unit
tested on CPU (tests/agents/test_vllm_engine.py). Everything touching real vLLM -- the
constructor arguments, token prompts with images, ``processed_logprobs``, per-request seeds,
``collective_rpc("reload_weights")`` and its ``load_weights`` fallback, sleep levels, cache
resets -- follows the vLLM 0.33 facts (docs/design/rollout-engines.md) and is what this
script checks. The tolerances are estimates from bf16 rounding, not measurements; the script
prints the observed numbers so they can be tightened.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TINY_SIZES = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "vision_hidden_size": 128,
    "vision_intermediate_size": 256,
}
# (width, height), multiples of 28 within the processors' pixel bounds, so no engine resizes.
TINY_IMAGES = [(84, 56), (112, 56), (56, 56), (56, 84)]
LARGE_IMAGES = [(840, 476), (588, 336), (336, 336), (476, 840)]


@dataclass
class Check:
    """One line of the report."""

    name: str
    status: str  # PASS, FAIL or WARN
    detail: str


@dataclass
class Report:
    """Collects and prints the checks."""

    checks: list[Check] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, ok: bool | None, detail: str) -> bool:
        """Record and print a check (``ok`` None: a warning); False when it failed."""
        status = "WARN" if ok is None else ("PASS" if ok else "FAIL")
        self.checks.append(Check(name, status, detail))
        print(f"[{status}] {name}: {detail}", flush=True)
        return bool(ok) or ok is None

    @property
    def failed(self) -> list[Check]:
        """The failed checks."""
        return [c for c in self.checks if c.status == "FAIL"]


@dataclass(frozen=True)
class Tolerance:
    """Agreement required between vLLM's and the trainer's per-token log-probs (nats)."""

    mean: float
    max: float


# --- helpers ------------------------------------------------------------------------------------


def make_image(width: int, height: int, seed: int) -> Any:
    """A noise PNG as an ``ImagePart``."""
    import numpy as np
    from PIL import Image

    from osworld_gym.policies.conversation import ImagePart

    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return ImagePart(buffer.getvalue(), width, height)


def with_answer(conversation: Any, encoder: Any, token_ids: Sequence[int]) -> Any:
    """The conversation followed by a sampled assistant turn carrying its ids."""
    from osworld_gym.policies.conversation import Conversation, TextPart

    episode = Conversation(list(conversation.turns))
    episode.add("assistant", TextPart(encoder.decode(token_ids)), token_ids=tuple(token_ids))
    return episode


def score(
    model: Any,
    encoder: Any,
    conversations: Sequence[Any],
    completions: Sequence[Sequence[int]],
    temperature: float,
) -> list[list[float]]:
    """The trainer's log-probs of each completion (the last assistant turn) after its prompt."""
    import torch
    from osworld_agents.engines.hf import sequence_logprobs

    episodes = [
        with_answer(c, encoder, ids) for c, ids in zip(conversations, completions, strict=True)
    ]
    batch = encoder.collate([encoder.encode_episode(e) for e in episodes])
    with torch.no_grad():
        logprobs = sequence_logprobs(model, batch, temperature)
    rows = []
    for row, mask, ids in zip(logprobs, batch.loss_mask, completions, strict=True):
        values = row[mask.to(row.device).bool()].tolist()
        rows.append(values[len(values) - len(ids) :])  # earlier sampled turns are masked too
    return rows


def logprob_diffs(generations: Sequence[Any], scored: Sequence[Sequence[float]]) -> list[float]:
    """|engine log-prob - trainer log-prob| of every sampled token."""
    return [
        abs(a - b)
        for generation, row in zip(generations, scored, strict=True)
        for a, b in zip(generation.logprobs, row, strict=True)
    ]


def summary(diffs: Sequence[float]) -> str:
    """Count, mean, p99 and max of absolute differences."""
    if not diffs:
        return "no tokens"
    ordered = sorted(diffs)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return (
        f"{len(diffs)} tokens, |diff| mean {sum(diffs) / len(diffs):.4f} "
        f"p99 {p99:.4f} max {ordered[-1]:.4f}"
    )


def within(diffs: Sequence[float], tolerance: Tolerance) -> bool:
    """Whether the differences' mean and max are within the tolerance."""
    return bool(diffs) and sum(diffs) / len(diffs) <= tolerance.mean and max(diffs) <= tolerance.max


def mean(values: Sequence[float]) -> float:
    """The mean (NaN for none)."""
    return sum(values) / len(values) if values else math.nan


def compare_greedy(
    model: Any,
    encoder: Any,
    conversation: Any,
    vllm_generation: Any,
    hf_generation: Any,
    tie: float,
) -> tuple[bool, str, list[float]]:
    """Greedy ids must match, except after a near-tie of the trainer's distribution.

    Returns (ok, detail, |log-prob diffs| over the common prefix).
    """
    a, b = vllm_generation.token_ids, hf_generation.token_ids
    k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    diffs = [
        abs(x - y)
        for x, y in zip(vllm_generation.logprobs[:k], hf_generation.logprobs[:k], strict=True)
    ]
    if a == b:
        return True, f"{len(a)} ids identical", diffs
    if k == min(len(a), len(b)):
        return False, f"one is a prefix of the other ({len(a)} vs {len(b)} ids)", diffs
    (scored,) = score(model, encoder, [conversation], [a[: k + 1]], 1.0)
    gap = hf_generation.logprobs[k] - scored[-1]
    if gap <= tie:
        return True, f"near-tie at id {k} (trainer prefers its id by {gap:.4f} nats)", diffs
    return False, f"diverged at id {k}: vLLM {a[k]}, trainer {b[k]} (gap {gap:.4f} nats)", diffs


def round_to_bf16(model: Any) -> None:
    """Put fp32 weights on the bf16 grid, so the trainer holds exactly vLLM's weights."""
    import torch

    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dtype == torch.float32:
                parameter.copy_(parameter.to(torch.bfloat16).to(torch.float32))


def build_tiny(folder: Path) -> Path:
    """The tiny model with head dimension 64 and sharpened logits.

    Head dimension 64 is supported by every attention backend (the default tiny model's 16 may
    not be). A random model's logits are nearly flat, so greedy decisions would be near-ties that
    bf16 flips; the lm_head is scaled so logits have a standard deviation of about 4.
    """
    import torch
    from osworld_agents.models import build_tiny_qwen, load_policy_model

    path = build_tiny_qwen(folder, seed=0, **TINY_SIZES)
    policy = load_policy_model(path, "float32", "cpu")
    model = policy.model
    with torch.no_grad():
        weight = model.lm_head.weight
        weight.mul_(4.0 / (float(weight.std()) * math.sqrt(weight.shape[1])))
    model.save_pretrained(path)
    return path


def conversations_for(sizes: Sequence[tuple[int, int]]) -> list[Any]:
    """One image, two images, and no image."""
    from osworld_gym.policies.conversation import Conversation, TextPart

    one, two, none = Conversation(), Conversation(), Conversation()
    one.add("system", TextPart("You are a GUI agent. Output one action per turn."))
    one.add("user", TextPart("Open the file manager."), make_image(*sizes[0], seed=0))
    two.add(
        "user",
        TextPart("Type hello, then save."),
        make_image(*sizes[1], seed=1),
        make_image(*sizes[2], seed=2),
    )
    none.add("user", TextPart("No screenshot this time; describe what you would do first."))
    return [one, two, none]


# --- the check ----------------------------------------------------------------------------------


def run(args: argparse.Namespace, report: Report) -> None:
    """The checks, in order (module docstring); stops at the first exception."""
    import torch

    started = time.perf_counter()
    import transformers
    from osworld_agents.arpo.loss import policy_loss
    from osworld_agents.engines.hf import TransformersEngine, sequence_logprobs
    from osworld_agents.engines.vllm_engine import (
        VLLMEngine,
        VLLMEngineConfig,
        import_vllm,
        vllm_parameter_name,
    )
    from osworld_agents.models import load_policy_model

    from osworld_gym.policies.conversation import TextPart
    from osworld_gym.policies.engine import SamplingParams

    vllm = import_vllm()
    report.facts.update(
        torch=torch.__version__,
        transformers=transformers.__version__,
        vllm=vllm.__version__,
        gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    )
    print(f"versions: {json.dumps(report.facts)}", flush=True)
    if not report.add("CUDA GPU", torch.cuda.is_available(), str(report.facts["gpu"])):
        return
    report.add("vLLM version", vllm.__version__ == "0.33.0" or None, vllm.__version__)

    large = args.model is not None
    tolerance = Tolerance(args.tol_mean, args.tol_max or (1.0 if large else 0.25))
    sizes = LARGE_IMAGES if large else TINY_IMAGES
    max_new = args.max_new_tokens
    if large:
        path = Path(args.model).expanduser()
        if not report.add("model folder", path.is_dir(), str(path)):
            return
    else:
        path = build_tiny(Path(args.workdir) / "tiny")
        report.add("tiny model built", True, f"{path} ({TINY_SIZES})")

    # vLLM first: it must find its share of the GPU free.
    config = VLLMEngineConfig(
        max_images=4,
        max_model_len=16384 if large else 8192,
        gpu_memory_utilization=args.gpu_memory_utilization,
        enforce_eager=not args.cuda_graphs,
        enable_sleep_mode=not args.no_sleep,
        seed=0,
        image_size=(max(w for w, _ in sizes), max(h for _, h in sizes)),
        kv_cache_memory_bytes=None if large else 2 << 30,
        weight_sync=args.weight_sync,
    )
    t0 = time.perf_counter()
    engine = VLLMEngine(path, config)
    report.add("vLLM engine started", True, f"{time.perf_counter() - t0:.1f} s, {config}")

    t0 = time.perf_counter()
    policy = load_policy_model(path, "bfloat16" if large else "float32", "cuda")
    model = policy.model
    if not large:
        round_to_bf16(model)
    hf = TransformersEngine(model, policy.tokenizer, policy.image_processor, max_batch_size=8)
    encoder = hf.encoder
    report.add(
        "transformers model loaded", True, f"{time.perf_counter() - t0:.1f} s, {model.dtype}"
    )

    names = {vllm_parameter_name(n)[0] for n in model.state_dict()}
    try:
        engine_names = set(engine.parameter_names())
    except Exception as e:  # diagnostics only: the pushes below do not depend on it
        report.add("weight-name mapping covers vLLM's parameters", False, repr(e))
    else:
        report.add(
            "weight-name mapping covers vLLM's parameters",
            names == engine_names,
            f"{len(engine_names)} vLLM parameters; only in mapping: "
            f"{sorted(names - engine_names)[:5]}; only in vLLM: {sorted(engine_names - names)[:5]}",
        )

    # Conversations: the fourth is a second turn after a spliced sampled answer.
    convs = conversations_for(sizes)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=max_new)
    first = engine.generate(convs[:1], greedy)[0]
    second = with_answer(convs[0], encoder, first.token_ids)
    second.add(
        "user",
        TextPart("The next screenshot:"),
        make_image(*sizes[3], seed=3),
        make_image(*sizes[2], seed=4),
    )
    convs.append(second)
    same = all(
        engine.encoder.encode_prompt(c).input_ids == encoder.encode_prompt(c).input_ids
        for c in convs
    )
    report.add("both engines render the same prompt ids", same, f"{len(convs)} conversations")

    # Greedy: same ids as the transformers engine.
    v_greedy = engine.generate(convs, greedy)
    h_greedy = hf.generate(convs, greedy)
    expanded = [g.extra.get("engine_prompt_tokens") for g in v_greedy]
    prompt_tokens = [g.prompt_tokens for g in v_greedy]
    collapsed = [len(engine.encoder.encode_prompt(c).collapsed_input_ids()) for c in convs]
    if expanded == prompt_tokens:
        report.add("vLLM expands images to the encoder's token counts", True, str(expanded))
    else:
        # vLLM's RequestOutput.prompt_token_ids may be the unexpanded prompt (the fact sheet
        # infers expanded); that alone is no error, any other count is.
        report.add(
            "vLLM expands images to the encoder's token counts",
            None if expanded == collapsed else False,
            f"vLLM reports {expanded}, encoder expanded {prompt_tokens}, collapsed {collapsed}",
        )
    prefix_diffs: list[float] = []
    for index, (conv, v, h) in enumerate(zip(convs, v_greedy, h_greedy, strict=True)):
        ok, detail, diffs = compare_greedy(model, encoder, conv, v, h, tolerance.max)
        prefix_diffs += diffs
        report.add(f"greedy ids, conversation {index}", ok, detail)
    report.add(
        "greedy log-probs (temperature 1) on common prefixes",
        within(prefix_diffs, tolerance),
        summary(prefix_diffs),
    )

    # Sampling: log-probs under the sampling distribution, deterministic per seed.
    samples: dict[float, list[Any]] = {}
    pre_update_diffs: list[float] = []
    for temperature in (1.0, 0.7):
        params = SamplingParams(temperature=temperature, max_new_tokens=max_new, seed=1234)
        generations = engine.generate(convs, params)
        samples[temperature] = generations
        scored = score(model, encoder, convs, [g.token_ids for g in generations], temperature)
        diffs = logprob_diffs(generations, scored)
        pre_update_diffs += diffs
        report.add(
            f"sampled log-probs at temperature {temperature} vs trainer forward",
            within(diffs, tolerance),
            summary(diffs),
        )
        banned = set(encoder.placeholder_ids)
        report.add(
            f"no vision placeholder sampled at temperature {temperature}",
            not any(banned.intersection(g.token_ids) for g in generations),
            f"lengths {[len(g.token_ids) for g in generations]}, "
            f"finish {[g.finish_reason for g in generations]}",
        )
    # Seeded requests are reproducible unless batch variance (prefix-cache hits change the
    # prefill shapes) flips a near-tie: a mismatch is a warning, not a failure.
    reference_ids = [g.token_ids for g in samples[1.0]]
    again = engine.generate(convs, SamplingParams(max_new_tokens=max_new, seed=1234))
    report.add(
        "same seed, same samples",
        [g.token_ids for g in again] == reference_ids or None,
        f"{sum(len(g.token_ids) for g in again)} ids",
    )
    other = engine.generate(convs, SamplingParams(max_new_tokens=max_new, seed=4321))
    differ = [g.token_ids for g in other] != reference_ids
    report.add("another seed, other samples", differ or None, "differ" if differ else "identical")

    # One ARPO update on the temperature-1 samples.
    episodes = [
        with_answer(c, encoder, g.token_ids) for c, g in zip(convs, samples[1.0], strict=True)
    ]
    batch = encoder.collate([encoder.encode_episode(e) for e in episodes])
    device = model.device
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0], device=device)
    mask = batch.loss_mask.to(device)
    with torch.no_grad():
        old = sequence_logprobs(model, batch, 1.0)
    logp = sequence_logprobs(model, batch, 1.0)
    before = policy_loss(logp, old, advantages, mask)
    before.loss.backward()
    parameters = [p for p in model.parameters() if p.grad is not None]
    grad_norm = math.sqrt(sum(float(p.grad.float().norm()) ** 2 for p in parameters))
    weight_norm = math.sqrt(sum(float(p.detach().float().norm()) ** 2 for p in parameters))
    # One SGD step, its size backtracked (undo, halve) until the loss goes down: the
    # update only has to move the policy measurably in the right direction.
    lr = args.step_rel * weight_norm / max(grad_norm, 1e-12)
    loss_before = float(before.loss.detach())
    attempt = 0
    while attempt < 12:
        attempt += 1
        with torch.no_grad():
            for parameter in parameters:
                parameter.add_(parameter.grad, alpha=-lr)
            after = policy_loss(sequence_logprobs(model, batch, 1.0), old, advantages, mask)
        if float(after.loss) < loss_before:
            break
        with torch.no_grad():
            for parameter in parameters:
                parameter.add_(parameter.grad, alpha=lr)
        lr /= 2
    model.zero_grad(set_to_none=True)
    if not large:
        round_to_bf16(model)
    report.add(
        "ARPO policy loss decreased after one SGD step",
        float(after.loss) < loss_before,
        f"{loss_before:.4f} -> {float(after.loss):.4f} (lr {lr:.3g} after {attempt} tries, "
        f"grad norm {grad_norm:.3g}, weight norm {weight_norm:.3g})",
    )
    # How far the update moved the trainer's log-probs of the earlier temperature-0.7 samples:
    # a vLLM that kept the old weights would reproduce those samples and disagree this much.
    old_samples = samples[0.7]
    moved = logprob_diffs(
        old_samples, score(model, encoder, convs, [g.token_ids for g in old_samples], 0.7)
    )

    t0 = time.perf_counter()
    engine.update_weights(model.state_dict(), version=1)
    report.add("weights pushed", True, f"{time.perf_counter() - t0:.2f} s, version 1")

    params_07 = SamplingParams(temperature=0.7, max_new_tokens=max_new, seed=1234)
    fresh = engine.generate(convs, params_07)
    post = logprob_diffs(fresh, score(model, encoder, convs, [g.token_ids for g in fresh], 0.7))
    report.add(
        "after the push, vLLM log-probs match the updated trainer",
        within(post, tolerance) and all(g.extra["weight_version"] == 1 for g in fresh),
        summary(post),
    )
    report.add(
        "the update is visible in vLLM (not the old weights)",
        mean(moved) > max(0.005, 3 * mean(pre_update_diffs)) and mean(post) < mean(moved) / 3,
        f"update moved old samples' log-probs by {mean(moved):.4f} mean; vLLM vs updated "
        f"trainer {mean(post):.4f}; vLLM vs trainer before the update {mean(pre_update_diffs):.4f}",
    )
    v_greedy_new = engine.generate(convs, greedy)
    h_greedy_new = hf.generate(convs, greedy)
    for index, (conv, v, h) in enumerate(zip(convs, v_greedy_new, h_greedy_new, strict=True)):
        ok, detail, _ = compare_greedy(model, encoder, conv, v, h, tolerance.max)
        report.add(f"greedy ids after the update, conversation {index}", ok, detail)
    changed = sum(a.token_ids != b.token_ids for a, b in zip(v_greedy, v_greedy_new, strict=True))
    report.add("greedy outputs changed by the update", changed > 0 or None, f"{changed} of 4")

    if not args.no_sleep:
        sleep_cycles(engine, model, convs, greedy, v_greedy_new, report)
    engine.close()
    report.facts["seconds"] = round(time.perf_counter() - started, 1)


def sleep_cycles(
    engine: Any,
    model: Any,
    convs: list[Any],
    greedy: Any,
    reference: list[Any],
    report: Report,
) -> None:
    """Level 1 and level 2 sleep keep outputs; level 2 needs a push; memory comes back."""
    import torch

    def same_as_reference(generations: list[Any]) -> tuple[bool, str]:
        ids = [g.token_ids for g in generations] == [g.token_ids for g in reference]
        diffs = [
            abs(a - b)
            for g, r in zip(generations, reference, strict=True)
            for a, b in zip(g.logprobs, r.logprobs, strict=False)
        ]
        return ids and max(diffs, default=0.0) <= 1e-2, f"ids equal: {ids}; {summary(diffs)}"

    gib = 2**30
    free_awake = torch.cuda.mem_get_info()[0]
    engine.sleep(level=1)
    freed = (torch.cuda.mem_get_info()[0] - free_awake) / gib
    ok, detail = same_as_reference(engine.generate(convs, greedy))
    report.add(
        "sleep(1) -> generate gives the same outputs", ok, f"{detail}; freed {freed:.2f} GiB"
    )

    free_after_wake = []
    for cycle in range(3):
        engine.sleep(level=2)
        try:
            engine.generate(convs, greedy)
            refused = False
        except RuntimeError:
            refused = True
        if cycle == 0:
            report.add("after sleep(2), generate refuses until weights are pushed", refused, "")
        engine.update_weights(model.state_dict(), version=2 + cycle)
        ok, detail = same_as_reference(engine.generate(convs, greedy))
        report.add(f"sleep(2) -> push -> generate, cycle {cycle}", ok, detail)
        free_after_wake.append(torch.cuda.mem_get_info()[0] / gib)
    shrink = free_after_wake[0] - free_after_wake[-1]
    report.add(
        "free GPU memory stable over sleep(2) cycles",
        shrink < 1.0,
        "free after each cycle (GiB): " + ", ".join(f"{f:.2f}" for f in free_after_wake),
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a local Qwen2.5-VL-family folder (e.g. UI-TARS-1.5-7B)")
    parser.add_argument("--workdir", help="where to build the tiny model (default: a temp dir)")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    parser.add_argument("--cuda-graphs", action="store_true", help="no enforce_eager")
    parser.add_argument("--no-sleep", action="store_true", help="skip sleep mode and its checks")
    parser.add_argument(
        "--weight-sync", choices=["reload_weights", "load_weights"], default="reload_weights"
    )
    parser.add_argument("--tol-mean", type=float, default=0.05, help="mean |diff|, nats")
    parser.add_argument(
        "--tol-max", type=float, help="max |diff|, nats (default 0.25 tiny, 1.0 --model)"
    )
    parser.add_argument(
        "--step-rel",
        type=float,
        default=0.01,
        help="first SGD step size / weight norm (backtracked until the loss decreases)",
    )
    parser.add_argument("--json", help="also write the report as JSON to this file")
    parser.add_argument("--verbose", action="store_true", help="INFO logs from the engines")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check; 0 when nothing failed."""
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    report = Report()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as scratch:
        args.workdir = args.workdir or scratch
        try:
            run(args, report)
        except Exception as e:  # report what broke, then the summary
            traceback.print_exc()
            report.add("check aborted", False, f"{type(e).__name__}: {e}")
    elapsed = time.perf_counter() - started
    failed = report.failed
    verdict = "FAIL" if failed or not report.checks else "PASS"
    what = f"--model {args.model}" if args.model else "tiny Qwen2.5-VL"
    print(f"\n==== gpu_check {verdict}: {what}, {elapsed:.0f} s ====")
    for check in report.checks:
        print(f"{check.status}  {check.name}")
    print(f"{len(report.checks)} checks, {len(failed)} failed")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "verdict": verdict,
                    "seconds": elapsed,
                    "facts": report.facts,
                    "checks": [asdict(c) for c in report.checks],
                },
                indent=2,
            )
        )
    return 1 if verdict == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
