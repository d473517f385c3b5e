"""Metrics for editor tasks: text files, VS Code settings and keybindings, extension lists.

OSWorld's module ``vscode``. ``None`` inputs (a file that did not exist) score 0. Where
OSWorld's code changed after desktop-env 1.0.2, the metric behaves as the default evaluator
reference (``osworld-2026.04``) and ``<name>_1_0_2`` keeps the older behaviour
(``osworld_gym.evaluation.references``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics.files import read_utf8

logger = logging.getLogger(__name__)


def _squash_blanks(text: str) -> str:
    r"""Tabs and newlines to spaces, then runs of whitespace to one space.

    Example:
        >>> _squash_blanks(" a\t b\n\nc ")
        'a b c'
    """
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


def compare_text_file(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when two text files are equal.

    Args:
        result: Path of the file the agent produced.
        expected: Path of the reference file.
        **options: ``ignore_blanks`` (False): collapse all whitespace runs to one space and
            strip the ends; ``ignore_case`` (False).

    Raises:
        UnicodeDecodeError: A file is not UTF-8 (OSWorld's read raises too).
    """
    if not result or not expected:
        return 0.0
    got, want = read_utf8(result), read_utf8(expected)
    if options.get("ignore_blanks", False):
        got, want = _squash_blanks(got), _squash_blanks(want)
    if options.get("ignore_case", False):
        got, want = got.lower(), want.lower()
    return float(got == want)


def _load_json_file(path: str, *, skip_first_line: bool = False) -> Any:
    """Parse a JSON file; a file that is not UTF-8 is a ``ValueError`` too, as for OSWorld."""
    text = read_utf8(path)
    if skip_first_line:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return json.loads(text)


def check_json_settings(result: str | None, expected: Mapping[str, Any], **options: Any) -> float:
    """1 when the JSON file has every key of ``expected["expected"]`` with an equal value.

    A settings file with comments (JSONC), or one that is not UTF-8, does not parse and scores
    0, as in OSWorld. A document that is not an object is looked into as OSWorld does: ``in``
    then indexing, so an empty ``expected`` passes and a list or string holding the key
    raises ``TypeError``.
    """
    if not result:
        return 0.0
    try:
        data = _load_json_file(result)
    except (OSError, ValueError) as e:
        logger.info("check_json_settings: %s does not parse: %s", result, e)
        return 0.0
    want: Mapping[str, Any] = expected["expected"]
    return float(all(key in data and data[key] == value for key, value in want.items()))


def check_json_keybindings(
    result: str | None, expected: Mapping[str, Any], **options: Any
) -> float:
    """1 when the keybindings file (a JSON list) contains the binding ``expected["expected"]``.

    VS Code writes a ``// Place your key bindings ...`` comment line first; the file is parsed
    as is, then without its first line.
    """
    if not result:
        return 0.0
    for skip in (False, True):
        try:
            data = _load_json_file(result, skip_first_line=skip)
        except (OSError, ValueError):
            continue
        if isinstance(data, list):
            return float(expected["expected"] in data)
    return 0.0


def is_extension_installed(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """Whether an extension id appears in ``code --list-extensions`` output.

    Args:
        result: The command output.
        rules: ``type`` (``"contain"`` or ``"not_contain"``) and ``expected`` (the id).
        **options: None are used.

    Raises:
        ValueError: Unknown ``type``.
    """
    if result is None:
        return 0.0
    kind = rules["type"]
    if kind == "contain":
        return float(rules["expected"] in result)
    if kind == "not_contain":
        return float(rules["expected"] not in result)
    raise ValueError(f"is_extension_installed: unknown rule type {kind!r}")


def _json_contains(want: Any, got: Any) -> bool:
    """Whether JSON value ``got`` holds ``want``: objects key by key, recursively; others equal.

    Example:
        >>> _json_contains({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3})
        True
        >>> _json_contains([1], [1, 2])
        False
    """
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            key in got and _json_contains(value, got[key]) for key, value in want.items()
        )
    return bool(want == got)


# What parsing or comparing the two texts as JSON can raise: not JSON (ValueError), nested
# past the interpreter's recursion limit, or an expectation that is not text. OSWorld's
# 2026.04 code catches every exception there, so each of these takes its fallback.
_NOT_COMPARABLE_AS_JSON = (ValueError, RecursionError, TypeError)


def _contains_config(text: str, expected: str) -> bool:
    """The containment rule: a JSON subset, or (either side not JSON) a substring.

    Both texts parsing as JSON settles it: no substring fallback when the subset test fails.
    """
    try:
        return _json_contains(json.loads(expected), json.loads(text))
    except _NOT_COMPARABLE_AS_JSON:
        return expected.strip() in text


def _same_config(text: str, expected: str) -> bool:
    """The strict rule: equal texts, or equal JSON values."""
    if text == expected:
        return True
    try:
        return bool(json.loads(text) == json.loads(expected))
    except _NOT_COMPARABLE_AS_JSON:
        return False


def _score_config(result: str | None, rules: Mapping[str, Any], containment_ok: bool) -> float:
    """OSWorld 2026.04's rule for a given ``containment_ok`` (whose default is the caller's).

    No file, or an empty or missing ``rules["expected"]``, scores 0 before the file is read.
    """
    if not result:
        return 0.0
    expected = rules.get("expected")
    if not expected:
        return 0.0
    text = read_utf8(result)
    if containment_ok:
        return float(_contains_config(text, expected))
    return float(_same_config(text, expected))


def compare_config(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the file holds the expected configuration, as OSWorld's code of 2026.04 scores it.

    Containment is the default: a task without options (``expected`` ``"project"``) accepts
    a file holding ``/home/user/project`` and a newline (the text is not JSON, and it
    contains the word); vs_code/982d12a5 sets ``containment_ok`` and accepts a settings
    file with more keys than the expected object.

    Args:
        result: Path of the file (written by VS Code's evaluation extension, or a settings
            file).
        rules: ``expected``: the configuration text; empty or missing scores 0.
        **options: ``containment_ok`` (default True, read for its truth value): when both
            texts are JSON, every key of the expected object must be in the file's object
            with an equal value (nested objects alike, lists and other values equal), and
            when either is not JSON the stripped expected text must occur in the file; set
            false: the texts, or their JSON values, must be equal.

    Returns:
        1.0 or 0.0; a file that is not UTF-8 raises ``UnicodeDecodeError`` (as in OSWorld;
        the evaluator scores it 0).
    """
    return _score_config(result, rules, bool(options.get("containment_ok", True)))


def compare_config_1_0_2(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the file's text is exactly ``rules["expected"]``, as desktop-env 1.0.2 scores it.

    That code reads the file as text and compares it with the expected text, ignoring every
    option: the ``containment_ok`` that vs_code/982d12a5 sets is never read.

    Args:
        result: Path of the file.
        rules: ``expected``: the configuration text (missing: ``KeyError``, as in 1.0.2).
        **options: Ignored, as by 1.0.2.

    Returns:
        1.0 or 0.0; a file that is not UTF-8 raises ``UnicodeDecodeError``.
    """
    if not result:
        return 0.0
    return float(read_utf8(result) == rules["expected"])


def compare_config_fixed(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """``compare_config_1_0_2()`` with the ``containment_ok`` option its tasks set honoured.

    The rule of ``compare_config()`` (2026.04, whose own code made this fix), except that
    without the option the texts, or their JSON values, must be equal: ``containment_ok``
    defaults to False here.

    Args:
        result: Path of the file (written by the editor, or a settings file).
        rules: ``expected``: the configuration text; empty or missing scores 0.
        **options: ``containment_ok`` (False), as for ``compare_config()``.

    Returns:
        1.0 or 0.0; a file that is not UTF-8 raises ``UnicodeDecodeError``.
    """
    return _score_config(result, rules, bool(options.get("containment_ok", False)))
