"""Token-level chat encoding for the Qwen2.5-VL family, checked against the tiny model."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from osworld_agents.engines.chat_encoding import QwenChatEncoder  # noqa: E402
from osworld_agents.models import load_policy_model  # noqa: E402
from test_trainer_support import make_image, tiny_model_dir  # noqa: E402

from osworld_gym.policies.conversation import Conversation, ImagePart, TextPart  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory)  # one build per session, shared


@pytest.fixture(scope="module")
def encoder(tiny_dir: Path) -> QwenChatEncoder:
    policy = load_policy_model(tiny_dir)
    return QwenChatEncoder(policy.tokenizer, policy.image_processor)


def tok(encoder: QwenChatEncoder, token: str) -> int:
    return encoder.ids[token]


def user_turn(conversation: Conversation, text: str, *images: ImagePart) -> None:
    conversation.add("user", TextPart(text), *images)


def test_image_pads_follow_the_grid(encoder: QwenChatEncoder) -> None:
    conversation = Conversation()
    user_turn(conversation, "Look:", make_image(56, 84, 0), make_image(112, 56, 1))
    encoded = encoder.encode_prompt(conversation)
    grids = encoded.image_grid_thw.tolist()
    assert grids == [[1, 6, 4], [1, 4, 8]]  # (t, H/14, W/14)
    assert encoded.pixel_values.shape == (24 + 32, 3 * 2 * 14 * 14)
    ids = encoded.input_ids
    starts = [i for i, t in enumerate(ids) if t == tok(encoder, "<|vision_start|>")]
    ends = [i for i, t in enumerate(ids) if t == tok(encoder, "<|vision_end|>")]
    pad = tok(encoder, "<|image_pad|>")
    runs = [ids[s + 1 : e] for s, e in zip(starts, ends, strict=True)]
    assert [len(r) for r in runs] == [6 * 4 // 4, 4 * 8 // 4]
    assert all(set(r) == {pad} for r in runs)
    assert ids.count(pad) == 6 + 8
    assert encoded.collapsed_input_ids().count(pad) == 2
    generation_prompt = [tok(encoder, "<|im_start|>"), *encoder.tokenize("assistant\n")]
    assert ids[-len(generation_prompt) :] == generation_prompt
    assert not any(encoded.loss_mask)


def test_matches_the_stock_processor_and_the_chat_template(
    encoder: QwenChatEncoder, tiny_dir: Path
) -> None:
    from osworld_agents.models.processor import ImageOnlyQwenProcessor

    images = [make_image(84, 56, 2), make_image(56, 56, 3)]
    conversation = Conversation()
    conversation.add("system", TextPart("You are a GUI agent."))
    user_turn(conversation, "Task: open the file.", images[0])
    conversation.add("assistant", TextPart("Thought: ok\nAction: click(start_box='(1,2)')"))
    user_turn(conversation, "Next screen:", images[1])
    encoded = encoder.encode_prompt(conversation)

    processor = ImageOnlyQwenProcessor.from_pretrained(tiny_dir)
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "You are a GUI agent."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Task: open the file."}, {"type": "image"}],
        },
        {"role": "assistant", "content": "Thought: ok\nAction: click(start_box='(1,2)')"},
        {"role": "user", "content": [{"type": "text", "text": "Next screen:"}, {"type": "image"}]},
    ]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    stock = processor(text=[text], images=[[i.to_pil() for i in images]], return_tensors="pt")
    assert stock["input_ids"][0].tolist() == encoded.input_ids
    assert torch.equal(stock["pixel_values"], encoded.pixel_values)
    assert torch.equal(stock["image_grid_thw"], encoded.image_grid_thw)
    # The unexpanded form (what vLLM takes) is the plain tokenization of the rendered text.
    assert encoder.tokenizer.encode(text) == encoded.collapsed_input_ids()


def episode(encoder: QwenChatEncoder) -> tuple[Conversation, list[tuple[int, ...]]]:
    """Two sampled turns (one ended by <|im_end|>, one cut by the length limit) and a text one."""
    im_end = tok(encoder, "<|im_end|>")
    first = (*encoder.tokenize("Thought: a\nAction: click(start_box='(3,4)')"), im_end)
    second = tuple(encoder.tokenize("Thought: b\nAction: type(content='x"))  # truncated
    conversation = Conversation()
    user_turn(conversation, "Task.", make_image(56, 56, 4))
    conversation.add("assistant", TextPart("ignored: ids win"), token_ids=first)
    user_turn(conversation, "Screen 2.", make_image(56, 56, 5))
    conversation.add("assistant", TextPart("Thought: scripted"))
    user_turn(conversation, "Screen 3.")
    conversation.add("assistant", TextPart("..."), token_ids=second)
    return conversation, [first, second]


def mask_runs(mask: list[int]) -> list[tuple[int, int]]:
    """(start, end) of each run of ones."""
    edges = np.diff(np.concatenate([[0], mask, [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def test_sampled_ids_are_spliced_and_exactly_masked(encoder: QwenChatEncoder) -> None:
    conversation, sampled = episode(encoder)
    encoded = encoder.encode_episode(conversation)
    ids, mask = encoded.input_ids, encoded.loss_mask
    assert len(ids) == len(mask)
    (start0, end0), (start1, end1) = mask_runs(mask)
    assert ids[start0:end0] == list(sampled[0])
    assert ids[start1:end1] == list(sampled[1])
    newline = encoder.tokenize("\n")
    # After a sample that ended with <|im_end|> the template adds only "\n" ...
    assert ids[end0 : end0 + len(newline) + 1] == [*newline, tok(encoder, "<|im_start|>")]
    # ... and a truncated one is closed with <|im_end|> "\n", neither of them scored.
    assert ids[end1:] == [tok(encoder, "<|im_end|>"), *newline]


def test_prompts_are_prefixes_of_the_episode(encoder: QwenChatEncoder) -> None:
    conversation, sampled = episode(encoder)
    full = encoder.encode_episode(conversation)
    sampled_turns = [i for i, t in enumerate(conversation.turns) if t.token_ids is not None]
    for turn_index, ids in zip(sampled_turns, sampled, strict=True):
        prompt = encoder.encode_prompt(Conversation(conversation.turns[:turn_index]))
        n = len(prompt)
        assert full.input_ids[:n] == prompt.input_ids
        assert full.input_ids[n : n + len(ids)] == list(ids)
        assert all(full.loss_mask[n : n + len(ids)])
    assert torch.equal(full.pixel_values, prompt.pixel_values)  # both images precede turn 3


def test_placeholders_cannot_be_smuggled_in(encoder: QwenChatEncoder) -> None:
    pad = tok(encoder, "<|image_pad|>")
    bad_sample = Conversation()
    user_turn(bad_sample, "hi")
    bad_sample.add("assistant", TextPart(""), token_ids=(pad,))
    with pytest.raises(ValueError, match="placeholder"):
        encoder.encode_episode(bad_sample)
    bad_text = Conversation()
    user_turn(bad_text, "see <|image_pad|> here")
    with pytest.raises(ValueError, match="placeholder"):
        encoder.encode_prompt(bad_text)


def test_collate_pads_left_and_marks_image_tokens(encoder: QwenChatEncoder) -> None:
    short, long_ = Conversation(), Conversation()
    user_turn(short, "hi")
    user_turn(long_, "a longer request with an image", make_image(56, 56, 6), make_image(56, 84, 7))
    chats = [encoder.encode_prompt(short), encoder.encode_prompt(long_)]
    batch = encoder.collate(chats)
    width = max(len(c) for c in chats)
    assert batch.input_ids.shape == batch.attention_mask.shape == (2, width)
    pad_count = width - len(chats[0])
    assert batch.attention_mask[0].tolist() == [0] * pad_count + [1] * len(chats[0])
    assert batch.input_ids[0, pad_count:].tolist() == chats[0].input_ids
    assert torch.equal(batch.mm_token_type_ids.bool(), batch.input_ids == encoder.image_token_id)
    assert torch.equal(batch.pixel_values, chats[1].pixel_values)
    assert batch.image_grid_thw.shape == (2, 3)
    assert "pixel_values" not in encoder.collate(chats[:1]).model_inputs()


def test_decode_keeps_box_markers_only(encoder: QwenChatEncoder) -> None:
    text = "Action: click(start_box='<|box_start|>(5,6)<|box_end|>')"
    ids = [*encoder.tokenize(text), tok(encoder, "<|im_end|>")]
    assert encoder.decode(ids) == text
    assert encoder.decode([tok(encoder, "<|endoftext|>")]) == ""


def test_resized_images_are_reported(
    encoder: QwenChatEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    conversation = Conversation()
    user_turn(conversation, "odd size", make_image(60, 60, 8))
    with caplog.at_level(logging.WARNING):
        encoded = encoder.encode_prompt(conversation)
    assert encoded.image_grid_thw.tolist() == [[1, 4, 4]]
    assert "resized a 60x60 image to 56x56" in caplog.text
