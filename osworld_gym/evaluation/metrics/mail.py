"""Thunderbird mail folder metric: the messages of an mbox folder (or ``.eml`` files).

OSWorld's ``thunderbird.check_thunderbird_folder``, in two versions:

* ``check_thunderbird_folder()`` scores as OSWorld's code does. Its reader splits the file
  on an upper-case ``FROM - `` (Thunderbird writes ``From - ``) and its filter is inverted:
  it keeps only the blank pieces. So it never compares a message: two folder files agree
  when both have, or both lack, a blank piece (an empty file, or one that starts with
  ``FROM - ``). Any two non-empty Thunderbird folders score 1.0.
* ``check_thunderbird_folder_fixed()`` (the ``"fixed"`` evaluation mode) compares the
  messages themselves, as OSWorld's documentation of the metric describes: a folder the
  agent left right scores 1.0 in both, a wrong one 0.0 only here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from osworld_gym.evaluation.metrics.files import read_text

logger = logging.getLogger(__name__)

# An mbox message starts with a "From " line (Thunderbird: "From - <date>"); its date is
# when the message was stored, not part of the message, so the line is dropped.
_FROM_LINE = re.compile(r"^From .*(?:\r?\n|$)", re.MULTILINE)
_STATUS = re.compile(r"^X-Mozilla-Status2?:.*(?:\r?\n|$)", re.MULTILINE)
_KEYS = re.compile(r"^X-Mozilla-Keys:.*(?:\r?\n|$)", re.MULTILINE)
_DELETED = re.compile(r"^X-Mozilla-Status: 000[89]", re.MULTILINE)


def folder_messages(text: str, **options: Any) -> list[str]:
    r"""The messages of an mbox folder's text, normalised and sorted.

    Args:
        text: The folder file's text (an ``.eml`` file is one message).
        **options: ``remove_deleted`` (True): drop messages whose ``X-Mozilla-Status`` is
            ``0008``/``0009`` (deleted, not yet compacted); ``remove_duplicate`` (True):
            keep one copy of equal messages; ``ignore_status`` (False): drop the
            ``X-Mozilla-Status`` lines; ``ignore_keys`` (False): drop ``X-Mozilla-Keys``.

    Example:
        >>> box = "From - Mon\nSubject: a\n\nhi\nFrom - Tue\nSubject: a\n\nhi\n"
        >>> folder_messages(box)
        ['Subject: a\n\nhi']
    """
    messages = []
    for message in _FROM_LINE.split(text):
        if not message.strip():
            continue
        if options.get("remove_deleted", True) and _DELETED.search(message):
            continue
        if options.get("ignore_status", False):
            message = _STATUS.sub("", message)
        if options.get("ignore_keys", False):
            message = _KEYS.sub("", message)
        messages.append(message.strip())
    if options.get("remove_duplicate", True):
        messages = list(set(messages))
    return sorted(messages)


def _osworld_folder_key(text: str, options: Mapping[str, Any]) -> str:
    r"""What OSWorld's folder reader makes of a folder file's text.

    It cuts the stripped text at each ``"FROM - "`` and keeps only the pieces that are blank
    (its filter is inverted); each kept piece becomes a bare ``"FROM - "`` (a blank piece has
    no headers to normalise or to mark it deleted), once when duplicates are removed.

    Example:
        >>> _osworld_folder_key("From - Mon\nSubject: a\n", {}), _osworld_folder_key("", {})
        ('', 'FROM - ')
    """
    blank_pieces = sum(1 for piece in text.strip().split("FROM - ") if not piece.strip())
    entries = ["FROM - "] * blank_pieces
    if options.get("remove_duplicate", True):
        entries = entries[:1]
    return "\n".join(entries)


def check_thunderbird_folder(result: Any, expected: Any, **options: Any) -> float:
    """OSWorld's score: 1 unless a pair of folder files differs in having a blank piece.

    See the module docstring: real Thunderbird folders are never compared message by
    message, so any two non-empty folders pass. Pairs are taken by position (``expected`` a
    list: ``result`` is a list too), stopping at the shorter list.

    Args:
        result: A folder file's path, or a list of them.
        expected: The reference path(s).
        **options: ``remove_duplicate`` (True); OSWorld's other switches (``remove_deleted``,
            ``ignore_status``, ``ignore_keys``) cannot change its result.

    Returns:
        1.0 or 0.0; 0.0 also when a result path is None or a file cannot be read as UTF-8.
    """
    if not isinstance(expected, list):
        result, expected = [result], [expected]
    for got, want in zip(result, expected, strict=False):
        if got is None or want is None:
            return 0.0
        try:
            # OSWorld opens both with the locale's encoding: UTF-8 on its hosts.
            keys = [
                _osworld_folder_key(Path(path).read_text(encoding="utf-8"), options)
                for path in (got, want)
            ]
        except (OSError, UnicodeDecodeError) as e:
            logger.info("check_thunderbird_folder: cannot read %s or %s: %s", got, want, e)
            return 0.0
        if keys[0] != keys[1]:
            return 0.0
    return 1.0


def check_thunderbird_folder_fixed(result: Any, expected: Any, **options: Any) -> float:
    """1 when each result folder holds the same messages as its reference folder.

    Args:
        result: A folder file's path, or a list of them.
        expected: The reference path(s), paired with ``result`` by position.
        **options: Normalisation switches of ``folder_messages()``.

    Returns:
        1.0 when every pair holds the same messages (in any order); 0.0 when one differs or
        a result path is missing.
    """
    results: Sequence[Any] = result if isinstance(result, list | tuple) else [result]
    references: Sequence[Any] = expected if isinstance(expected, list | tuple) else [expected]
    if not references or len(results) < len(references):
        return 0.0
    for got, want in zip(results, references, strict=False):
        if not got or not want:
            return 0.0
        try:
            same = folder_messages(read_text(got), **options) == folder_messages(
                read_text(want), **options
            )
        except OSError as e:
            logger.info("check_thunderbird_folder: cannot read %s or %s: %s", got, want, e)
            return 0.0
        if not same:
            return 0.0
    return 1.0
