"""Metrics over text-like files on the host: plain text, line lists, CSV records, JSON/YAML.

OSWorld's module ``general`` (file part). The first argument is a host path from a getter
(``vm_file``, ``cache_file``, ...); ``None`` — the file did not exist — scores 0.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import json
import logging
import re
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics._rules import match_record, match_value_to_rule

logger = logging.getLogger(__name__)

# A line in ``sar``-style reports starts with a clock time; check_line_number counts them.
_CLOCK_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


def read_text(path: str | Path) -> str:
    """A file's text as UTF-8; undecodable bytes become U+FFFD instead of failing."""
    return Path(path).read_text(encoding="utf-8", errors="replace")


def read_lines_any_encoding(path: str | Path) -> list[str]:
    """A text file's lines: UTF-8, else Latin-1, which decodes any bytes (OSWorld's reader).

    A UTF-8 byte-order mark stays, as U+FEFF at the start of the first line: OSWorld tries
    plain UTF-8 first, so a file with a BOM differs from the same text without one.
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return data.decode("latin-1").splitlines()


def diff_text_file(result: str | None, expected: str) -> float:
    """Line-level similarity of two text files: difflib's ratio over their line lists.

    Returns:
        ``SequenceMatcher(a=result_lines, b=expected_lines).ratio()`` in [0, 1]; 0.0 for None.
    """
    if result is None:
        return 0.0
    result_lines = read_text(result).splitlines()
    expected_lines = read_text(expected).splitlines()
    return difflib.SequenceMatcher(a=result_lines, b=expected_lines).ratio()


def file_contains(path: str | None, config: Mapping[str, Any]) -> float:
    """1 when the file's text contains every string of ``config["expected"]``."""
    if not path:
        return 0.0
    try:
        text = read_text(path)
    except OSError as e:
        logger.info("file_contains: cannot read %s: %s", path, e)
        return 0.0
    return float(all(s in text for s in config["expected"]))


def check_list(result: str | None, rules: Mapping[str, Any]) -> float:
    """Regexes over a file's lines.

    Passes when each ``expect`` pattern matches some line and no line matches an ``unexpect``
    pattern (:func:`re.search` semantics).
    """
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    with open(result, encoding="utf-8", errors="replace") as f:
        for line in f:
            found = [hit or bool(p.search(line)) for hit, p in zip(found, expect, strict=True)]
            if any(p.search(line) for p in unexpect):
                return 0.0
    return float(all(found))


def check_csv(result: str | None, rules: Mapping[str, Any]) -> float:
    """Record patterns over a CSV file (header row as keys).

    Passes when each ``expect`` dict matches some record and no record matches an
    ``unexpect`` dict (see :func:`match_record`).
    """
    if result is None:
        return 0.0
    expect = rules.get("expect", [])
    unexpect = rules.get("unexpect", [])
    found = [False] * len(expect)
    with open(result, encoding="utf-8", errors="replace", newline="") as f:
        for record in csv.DictReader(f):
            found = [hit or match_record(p, record) for hit, p in zip(found, expect, strict=True)]
            if any(match_record(p, record) for p in unexpect):
                return 0.0
    return float(all(found))


def _load_json_or_yaml(path: str, is_yaml: bool) -> Any:
    """Parse a JSON or YAML file; a syntax error of either kind is a :class:`ValueError`."""
    text = read_text(path)
    if not is_yaml:
        return json.loads(text)
    yaml = require("yaml")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"invalid YAML: {e}") from e


def _lookup(data: Any, keys: list[Any]) -> Any:
    for key in keys:
        data = data[key]
    return data


def check_json(result: str | None, rules: Mapping[str, Any], is_yaml: bool = False) -> float:
    """Rules over fields of a JSON (or YAML) file.

    Args:
        result: Path to the file.
        rules: ``expect`` and ``unexpect``: lists of ``{"key": [path...], "method", "ref"}``.
            An ``expect`` rule fails when its key path is missing; an ``unexpect`` rule on a
            missing key compares ``None``.
        is_yaml: Parse as YAML (``safe_load``).

    Returns:
        1.0 when every ``expect`` rule holds and no ``unexpect`` rule does; 0.0 for a missing,
        empty or unparsable file.
    """
    if result is None or not Path(result).exists():
        return 0.0
    try:
        data = _load_json_or_yaml(result, is_yaml)
    except ValueError as e:
        logger.info("check_json: %s does not parse: %s", result, e)
        return 0.0
    if data is None:
        return 0.0
    try:
        for rule in rules.get("expect", []):
            try:
                value = _lookup(data, rule["key"])
            except (KeyError, IndexError, TypeError):
                return 0.0
            if not match_value_to_rule(value, rule):
                return 0.0
        for rule in rules.get("unexpect", []):
            try:
                value = _lookup(data, rule["key"])
            except (KeyError, IndexError, TypeError):
                value = None
            if match_value_to_rule(value, rule):
                return 0.0
    except (TypeError, ValueError) as e:
        logger.info("check_json: rule cannot be applied: %s", e)
        return 0.0
    return 1.0


def check_line_number(path: str | None, line_number: Mapping[str, Any]) -> float:
    """1 when the number of lines holding a clock time (``HH:MM:SS``) equals ``expected``."""
    if path is None or not Path(path).is_file():
        return 0.0
    count = sum(1 for line in read_text(path).splitlines() if _CLOCK_TIME.search(line))
    return float(count == int(line_number["expected"]))


def compare_result_files(result: str | None, expected: str | None) -> float:
    """Compare two answer files, numerically when the expected one holds a number.

    A number passes within 1e-4, or when its text appears in the result (an answer with
    words around it); other answers must be equal once stripped.
    """
    if not result or not expected:
        return 0.0
    got = read_text(result).strip()
    want = read_text(expected).strip()
    try:
        want_number = float(want)
        if want in got:
            return 1.0
        return float(abs(float(got) - want_number) < 1e-4)
    except ValueError:
        return float(got == want)


def _normalise_python(text: str) -> str:
    lines = text.splitlines()
    start = 0
    # A shebang or coding line among the first three lines is file metadata, not code.
    while start < min(len(lines), 3) and lines[start].strip().startswith(
        ("#!", "# -*- coding:", "# coding:", "# coding=")
    ):
        start += 1
    kept = [line.expandtabs(4).rstrip() for line in lines[start:] if line.strip()]
    return "\n".join(kept)


def compare_python_pure_text(result: str | None, expected: str | None) -> float:
    """1 when two Python files are equal up to layout.

    Blank lines, trailing spaces and a leading shebang/coding line are dropped; tabs count as
    four spaces.
    """
    if not result or not expected:
        return 0.0
    try:
        return float(_normalise_python(read_text(result)) == _normalise_python(read_text(expected)))
    except OSError as e:
        logger.info("compare_python_pure_text: %s", e)
        return 0.0


def run_sqlite3(result: str | None, rules: Mapping[str, Any]) -> float:
    """The first column of the first row of ``rules["sql"]`` run on a SQLite file (read-only).

    The query comes from the task file, never from the agent.
    """
    if result is None:
        return 0.0
    uri = Path(result).resolve().as_uri() + "?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
        row = connection.execute(rules["sql"]).fetchone()
    return float((row[0] if row else 0) or 0)


def compare_csv(result: str | None, expected: str | Sequence[str] | None, **options: Any) -> float:
    """1 when a CSV file's lines equal those of the expected file (or of any of a list).

    Lines are read as OSWorld reads them (:func:`read_lines_any_encoding`): a byte-order mark
    is part of the first line, so a result saved with one matches only a reference with one.

    Args:
        result: Path of the CSV the agent produced.
        expected: One reference path or several acceptable ones, tried in order (a reference
            file that cannot be read is skipped; a ``None`` entry ends the search with 0).
        **options: ``strict`` (True; False strips every line) and ``ignore_case`` (False).
    """
    if result is None or expected is None:
        return 0.0
    try:
        got = read_lines_any_encoding(result)
    except OSError as e:
        logger.info("compare_csv: cannot read %s: %s", result, e)
        return 0.0

    def normalise(lines: list[str]) -> list[str]:
        if not options.get("strict", True):
            lines = [s.strip() for s in lines]
        if options.get("ignore_case", False):
            lines = [s.lower() for s in lines]
        return lines

    candidates = [expected] if isinstance(expected, str | Path) else list(expected)
    for candidate in candidates:
        if candidate is None:
            return 0.0  # OSWorld fails on a missing reference before trying the next one
        try:
            want = read_lines_any_encoding(candidate)
        except OSError:
            continue
        if normalise(got) == normalise(want):
            return 1.0
    return 0.0
