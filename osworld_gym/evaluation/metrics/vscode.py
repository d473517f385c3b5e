"""Metrics for editor tasks: text files, VS Code settings and keybindings, extension lists.

OSWorld's module ``vscode``. ``None`` inputs (a file that did not exist) score 0.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics.files import read_text

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
    """
    if not result or not expected:
        return 0.0
    got, want = read_text(result), read_text(expected)
    if options.get("ignore_blanks", False):
        got, want = _squash_blanks(got), _squash_blanks(want)
    if options.get("ignore_case", False):
        got, want = got.lower(), want.lower()
    return float(got == want)


def _load_json_file(path: str, *, skip_first_line: bool = False) -> Any:
    text = read_text(path)
    if skip_first_line:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return json.loads(text)


def check_json_settings(result: str | None, expected: Mapping[str, Any], **options: Any) -> float:
    """1 when the JSON file has every key of ``expected["expected"]`` with an equal value.

    A settings file with comments (JSONC) does not parse and scores 0, as in OSWorld.
    """
    if not result:
        return 0.0
    try:
        data = _load_json_file(result)
    except ValueError as e:
        logger.info("check_json_settings: %s does not parse: %s", result, e)
        return 0.0
    if not isinstance(data, dict):
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
        except ValueError:
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


def _json_subset(result_text: str, expected_text: str) -> bool:
    try:
        got, want = json.loads(result_text), json.loads(expected_text)
    except ValueError:
        return expected_text.strip() in result_text
    if isinstance(want, dict) and isinstance(got, dict):
        return all(key in got and got[key] == value for key, value in want.items())
    return bool(got == want)


def compare_config(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the file's text equals ``rules["expected"]``.

    Args:
        result: Path of the file (written by the editor, or a settings file).
        rules: ``expected``: the exact text.
        **options: ``containment_ok`` (False): also accept a file whose JSON object contains
            every key/value of the expected JSON object (or, for text that is not JSON, one
            that contains the expected text). OSWorld's newer tasks use it for
            ``settings.json``; the exact rule is this project's reading of the option.
    """
    if not result:
        return 0.0
    text = read_text(result)
    if text == rules["expected"]:
        return 1.0
    if options.get("containment_ok", False):
        return float(_json_subset(text, rules["expected"]))
    return 0.0
