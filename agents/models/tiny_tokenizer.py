"""Train the tiny model's byte-level BPE tokenizer offline with the ``tokenizers`` library."""

from __future__ import annotations

from osworld_agents.models.qwen_vocab import ENDOFTEXT, IM_END, SPECIAL_TOKENS
from osworld_agents.models.tiny_corpus import corpus_lines

__all__ = ["train_tiny_tokenizer"]

# Words, single digits (Qwen also splits numbers digit by digit, which keeps coordinates
# cheap to learn), punctuation runs and whitespace runs; each word or punctuation run may carry
# one leading space, as in GPT-style byte-level BPE.
_PRETOKENIZE_PATTERN = r" ?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+"


def train_tiny_tokenizer(vocab_size: int = 512, seed: int = 0):  # noqa: ANN201 - lazy import
    """A byte-level BPE tokenizer with Qwen2.5-VL's special tokens.

    The trained vocabulary comes first (the 256 byte symbols, then merges); the special tokens
    are appended after it in Qwen's order, so their ids are the last ``len(SPECIAL_TOKENS)``.

    Args:
        vocab_size: Total vocabulary size, special tokens included (at least 256 + 14); the
            trainer may stop earlier when the corpus has no more pairs to merge.
        seed: Seed of the training corpus (``corpus_lines()``).

    Returns:
        A ``transformers`` fast tokenizer (``eos_token`` ``<|im_end|>``, ``pad_token``
        ``<|endoftext|>``, no BOS), ready for ``save_pretrained``.
    """
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 256 + len(SPECIAL_TOKENS):
        least = 256 + len(SPECIAL_TOKENS)
        raise ValueError(f"vocab_size must be at least {least}, got {vocab_size}")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL_TOKENS),
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus_lines(seed), trainer)
    tokenizer.add_special_tokens(
        [AddedToken(token, special=True, normalized=False) for token in SPECIAL_TOKENS]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        model_max_length=32768,
        padding_side="left",
    )
