"""Thunderbird mail folder metric: the messages of an mbox folder (or ``.eml`` files).

OSWorld's ``thunderbird.check_thunderbird_folder``. OSWorld's copy drops every non-empty
message before comparing (its filter is inverted) and splits on an upper-case ``FROM - ``
that Thunderbird never writes, so it passes whenever the result files exist. This module
compares the messages themselves, as its documentation describes; a task whose agent left
the folder right scores 1.0 in both, a wrong folder scores 0.0 only here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
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


def check_thunderbird_folder(result: Any, expected: Any, **options: Any) -> float:
    """1 when each result folder holds the same messages as its reference folder.

    Args:
        result: A folder file's path, or a list of them.
        expected: The reference path(s), paired with ``result`` by position.
        **options: Normalisation switches of :func:`folder_messages`.

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
