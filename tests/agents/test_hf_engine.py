"""TransformersEngine on the tiny Qwen2.5-VL: batched generation with images, and log-probs that
the trainer's forward pass reproduces."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from osworld_agents.engines.hf import TransformersEngine, sequence_logprobs  # noqa: E402
from test_trainer_support import make_image, tiny_model_dir  # noqa: E402

from osworld_gym.policies.conversation import Conversation, TextPart  # noqa: E402
from osworld_gym.policies.engine import Generation, RolloutEngine, SamplingParams  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

TOLERANCE = 1e-4  # fp32


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory)  # one build per session, shared


@pytest.fixture(scope="module")
def engine(tiny_dir: Path) -> TransformersEngine:
    return TransformersEngine.from_pretrained(str(tiny_dir), dtype="float32", max_batch_size=4)


def conversations() -> list[Conversation]:
    """Different lengths and image counts, one without images."""
    one, two, text_only = Conversation(), Conversation(), Conversation()
    one.add("system", TextPart("You are a GUI agent."))
    one.add("user", TextPart("Open the file."), make_image(56, 84, 0))
    two.add(
        "user", TextPart("Type hello, then save."), make_image(112, 56, 1), make_image(56, 56, 2)
    )
    text_only.add("user", TextPart("No screenshot this time, only a rather long instruction."))
    return [one, two, text_only]


def with_answer(conversation: Conversation, generation: Generation) -> Conversation:
    episode = Conversation(list(conversation.turns))
    episode.add("assistant", TextPart(generation.text), token_ids=tuple(generation.token_ids))
    return episode


def recomputed(
    engine: TransformersEngine, episodes: list[Conversation], temperature: float
) -> list[list[float]]:
    """Per-row log-probs of the sampled tokens, from one batched forward pass."""
    batch = engine.encoder.collate([engine.encoder.encode_episode(e) for e in episodes])
    with torch.no_grad():
        logprobs = sequence_logprobs(engine.model, batch, temperature)
    return [row[mask.bool()].tolist() for row, mask in zip(logprobs, batch.loss_mask, strict=True)]


def test_is_a_rollout_engine(engine: TransformersEngine) -> None:
    assert isinstance(engine, RolloutEngine)


def test_batched_generation_with_images(engine: TransformersEngine) -> None:
    params = SamplingParams(temperature=1.0, max_new_tokens=12, seed=3)
    generations = engine.generate(conversations(), params)
    assert len(generations) == 3
    stops = set(engine.encoder.stop_token_ids)
    for generation in generations:
        assert 1 <= len(generation.token_ids) <= 12
        assert len(generation.logprobs) == len(generation.token_ids)
        assert all(lp <= 0 for lp in generation.logprobs)
        assert not engine.encoder.placeholder_ids.intersection(generation.token_ids)
        ended = generation.token_ids[-1] in stops
        assert generation.finish_reason == ("stop" if ended else "length")
        assert not stops.intersection(generation.token_ids[:-1])
        assert generation.text == engine.encoder.decode(generation.token_ids)
        assert generation.extra["weight_version"] == engine.weight_version
    prompts = [len(engine.encoder.encode_prompt(c)) for c in conversations()]
    assert [g.prompt_tokens for g in generations] == prompts


def test_seeded_sampling_is_deterministic_and_private(engine: TransformersEngine) -> None:
    params = SamplingParams(temperature=1.0, max_new_tokens=8, seed=7)
    rng_state = torch.get_rng_state()
    first = engine.generate(conversations(), params)
    assert torch.equal(torch.get_rng_state(), rng_state)  # the global stream is untouched
    again = engine.generate(conversations(), params)
    other = engine.generate(conversations(), SamplingParams(max_new_tokens=8, seed=8))
    assert [g.token_ids for g in first] == [g.token_ids for g in again]
    assert [g.logprobs for g in first] == [g.logprobs for g in again]
    assert [g.token_ids for g in first] != [g.token_ids for g in other]


def test_a_seeded_conversation_samples_the_same_alone_or_batched(
    engine: TransformersEngine,
) -> None:
    params = SamplingParams(temperature=1.0, max_new_tokens=12)
    seeds = [101, 202, 303]
    batched = engine.generate(conversations(), params, seeds=seeds)
    alone = [
        engine.generate([c], params, seeds=[seed])[0]
        for c, seed in zip(conversations(), seeds, strict=True)
    ]
    assert [g.token_ids for g in batched] == [g.token_ids for g in alone]
    np.testing.assert_allclose(
        [lp for g in batched for lp in g.logprobs],
        [lp for g in alone for lp in g.logprobs],
        atol=TOLERANCE,
        rtol=0,
    )
    # In another order, with another row beside it, a row still samples from its own seed.
    swapped = engine.generate(conversations()[::-1], params, seeds=seeds[::-1])
    assert [g.token_ids for g in swapped[::-1]] == [g.token_ids for g in batched]
    # Without seeds, conversation i samples with params.seed + i.
    by_call_seed = engine.generate(conversations(), SamplingParams(max_new_tokens=12, seed=101))
    assert by_call_seed[0].token_ids == batched[0].token_ids
    assert (
        by_call_seed[1].token_ids
        == engine.generate([conversations()[1]], params, seeds=[102])[0].token_ids
    )
    with pytest.raises(ValueError, match="2 seeds for 3 conversations"):
        engine.generate(conversations(), params, seeds=[1, 2])


def test_greedy_is_argmax_and_batch_invariant(engine: TransformersEngine) -> None:
    params = SamplingParams(temperature=0.0, max_new_tokens=6)
    batched = engine.generate(conversations(), params)
    alone = [engine.generate([c], params)[0] for c in conversations()]
    assert [g.token_ids for g in batched] == [g.token_ids for g in alone]
    for conversation, generation in zip(conversations(), batched, strict=True):
        assert generation.extra["logprob_temperature"] == 1.0
        batch = engine.encoder.collate(
            [engine.encoder.encode_episode(with_answer(conversation, generation))]
        )
        with torch.no_grad():
            logits = engine.model(**batch.model_inputs()).logits[0]
        logits[:, sorted(engine.encoder.placeholder_ids)] = -torch.inf
        sampled_at = batch.loss_mask[0].bool().nonzero().squeeze(-1)
        assert logits[sampled_at - 1].argmax(-1).tolist() == generation.token_ids


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_generation_logprobs_equal_the_training_forward(
    engine: TransformersEngine, temperature: float
) -> None:
    params = SamplingParams(temperature=temperature, max_new_tokens=16, seed=11)
    generations = engine.generate(conversations(), params)
    episodes = [with_answer(c, g) for c, g in zip(conversations(), generations, strict=True)]
    for generation, scored in zip(
        generations, recomputed(engine, episodes, temperature), strict=True
    ):
        np.testing.assert_allclose(scored, generation.logprobs, atol=TOLERANCE, rtol=0)


def test_multi_turn_episode_logprobs(engine: TransformersEngine) -> None:
    """Two policy steps with a new screenshot in between, scored in one training sequence."""
    params = SamplingParams(temperature=1.0, max_new_tokens=10, seed=5)
    conversation = conversations()[0]
    first = engine.generate([conversation], params)[0]
    conversation = with_answer(conversation, first)
    conversation.add("user", TextPart("Next screenshot."), make_image(84, 56, 9))
    second = engine.generate([conversation], params)[0]
    (scored,) = recomputed(engine, [with_answer(conversation, second)], 1.0)
    np.testing.assert_allclose(scored, first.logprobs + second.logprobs, atol=TOLERANCE, rtol=0)


def test_sequence_logprobs_is_differentiable(engine: TransformersEngine) -> None:
    generation = engine.generate(conversations()[:1], SamplingParams(max_new_tokens=5, seed=1))[0]
    batch = engine.encoder.collate(
        [engine.encoder.encode_episode(with_answer(conversations()[0], generation))]
    )
    engine.model.zero_grad()
    logprobs = sequence_logprobs(engine.model, batch)
    assert logprobs.shape == batch.input_ids.shape
    assert torch.all(logprobs[batch.loss_mask == 0] == 0)
    logprobs.sum().backward()
    assert engine.model.lm_head.weight.grad.abs().sum() > 0
    assert engine.model.model.visual.patch_embed.proj.weight.grad.abs().sum() > 0
    engine.model.zero_grad(set_to_none=True)


def test_update_weights_changes_what_is_sampled(tiny_dir: Path) -> None:
    engine = TransformersEngine.from_pretrained(str(tiny_dir))
    params = SamplingParams(temperature=0.0, max_new_tokens=4)
    (before,) = engine.generate(conversations()[:1], params)
    assert before.finish_reason == "length"
    # Make <|im_end|> score ten times the greedy first token: the policy now stops at once.
    im_end = engine.encoder.end_of_turn_id
    weight = engine.model.lm_head.weight.detach().clone()
    weight[im_end] = 10 * weight[before.token_ids[0]]
    engine.update_weights({"lm_head.weight": weight}, version=7)
    (after,) = engine.generate(conversations()[:1], params)
    assert after.token_ids == [im_end]
    assert after.finish_reason == "stop" and after.text == ""
    assert after.extra["weight_version"] == 7
    # Sharing the trainer's tensors is a no-op copy that still bumps the version.
    engine.load_state_dict(engine.model.state_dict())
    assert engine.weight_version == 8
    with pytest.raises(KeyError, match="not a parameter"):
        engine.update_weights([("lm_head.bias", weight)])


def test_reseed_restarts_the_unseeded_draws(tiny_dir: Path, engine: TransformersEngine) -> None:
    params = SamplingParams(temperature=1.0, max_new_tokens=5)
    encoder = engine.encoder
    fresh = TransformersEngine(engine.model, encoder.tokenizer, encoder.image_processor, seed=3)
    expected = [g.token_ids for g in fresh.generate(conversations(), params)]
    engine.generate(conversations()[:1], params)  # moves the engine's generator on
    engine.reseed(3)
    assert [g.token_ids for g in engine.generate(conversations(), params)] == expected
    assert [g.token_ids for g in engine.generate(conversations(), params)] != expected
