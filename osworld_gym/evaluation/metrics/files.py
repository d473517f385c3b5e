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
    """A file's text as UTF-8; undecodable bytes become U+FFFD instead of failing.

    Lenient: the metrics that score as OSWorld does read with ``read_utf8()`` instead.
    """
    return Path(path).read_text(encoding="utf-8", errors="replace")


def read_utf8(path: str | Path) -> str:
    r"""A file's text as OSWorld's ``open(path).read()`` gets it.

    OSWorld opens text files with the locale's encoding (UTF-8 on its hosts) and Python's
    strict error handling, in universal-newline mode (``\r\n`` and ``\r`` read as ``\n``).

    Raises:
        UnicodeDecodeError: The file is not UTF-8 (a ``ValueError``), as OSWorld's read does.
    """
    return Path(path).read_text(encoding="utf-8")


def file_lines(text: str) -> list[str]:
    r"""The lines that iterating an open text file yields, newlines kept.

    Only ``\n`` ends a line (text from ``read_utf8()`` has no other line ends left),
    unlike ``str.splitlines()``, which also splits at ``\v``, ``\f``, U+2028 and others.

    Example:
        >>> file_lines("a\u2028b\nc")
        ['a\u2028b\n', 'c']
    """
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


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

    Raises:
        UnicodeDecodeError: A file is not UTF-8 (OSWorld's read raises too).
    """
    if result is None:
        return 0.0
    result_lines = read_utf8(result).splitlines()
    expected_lines = read_utf8(expected).splitlines()
    return difflib.SequenceMatcher(a=result_lines, b=expected_lines).ratio()


def file_contains(path: str | None, config: Mapping[str, Any]) -> float:
    """1 when the file's text contains every string of ``config["expected"]``.

    A file that cannot be read, or is not UTF-8, scores 0 (OSWorld catches every error).
    """
    if not path:
        return 0.0
    try:
        text = read_utf8(path)
    except (OSError, UnicodeDecodeError) as e:
        logger.info("file_contains: cannot read %s: %s", path, e)
        return 0.0
    return float(all(s in text for s in config["expected"]))


def check_list(result: str | None, rules: Mapping[str, Any]) -> float:
    """Regexes over a file's lines.

    Passes when each ``expect`` pattern matches some line and no line matches an ``unexpect``
    pattern (``re.search()`` semantics). Lines are those of file iteration, newlines kept.

    Raises:
        UnicodeDecodeError: The file is not UTF-8 (OSWorld's read raises too).
    """
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    for line in file_lines(read_utf8(result)):
        found = [hit or bool(p.search(line)) for hit, p in zip(found, expect, strict=True)]
        if any(p.search(line) for p in unexpect):
            return 0.0
    return float(all(found))


def check_csv(result: str | None, rules: Mapping[str, Any]) -> float:
    r"""Record patterns over a CSV file (header row as keys).

    Passes when each ``expect`` dict matches some record and no record matches an
    ``unexpect`` dict (see ``match_record()``).

    The file is read as OSWorld reads it: strict UTF-8 and universal newlines, not the
    ``newline=""`` the csv module asks for, so a line break inside a quoted field reads as
    ``\n`` whether the file has ``\r\n`` or ``\n`` there.

    Raises:
        UnicodeDecodeError: The file is not UTF-8 (OSWorld's read raises too).
    """
    if result is None:
        return 0.0
    expect = rules.get("expect", [])
    unexpect = rules.get("unexpect", [])
    found = [False] * len(expect)
    for record in csv.DictReader(file_lines(read_utf8(result))):
        found = [hit or match_record(p, record) for hit, p in zip(found, expect, strict=True)]
        if any(match_record(p, record) for p in unexpect):
            return 0.0
    return float(all(found))


def _load_json_or_yaml(path: str, is_yaml: bool) -> Any:
    """Parse a JSON or YAML file; a syntax or decoding error of either kind is a ValueError."""
    text = read_utf8(path)
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


def _expect_holds(data: Any, rule: Mapping[str, Any]) -> bool:
    # OSWorld scores 0 on any error of an expect rule: a missing key, an index out of range,
    # a lookup into a non-container, a value the method cannot compare.
    try:
        return match_value_to_rule(_lookup(data, rule["key"]), rule)
    except (LookupError, TypeError, ValueError, AttributeError):
        return False


def _unexpect_holds(data: Any, rule: Mapping[str, Any]) -> bool:
    """Whether an ``unexpect`` rule matches; raises ``IndexError`` for an index out of range.

    OSWorld reads a missing key, or a lookup into a non-container, as the value ``None``,
    but only those: an index past the end of a list is an error, which scores the file 0.
    """
    keys = rule["key"]  # a rule without "key" is an error (score 0), not a missing value
    try:
        value = _lookup(data, keys)
    except (KeyError, TypeError):
        value = None
    return match_value_to_rule(value, rule)


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
        unparsable or non-UTF-8 file, an empty YAML file, or a rule that cannot be applied
        (an ``unexpect`` index out of range, a method that does not fit the value). A JSON
        file holding ``null`` is scored like any other document, as OSWorld does: no key
        can be found in it, so only rules without ``expect`` keys pass.
    """
    if result is None or not Path(result).exists():
        return 0.0
    try:
        data = _load_json_or_yaml(result, is_yaml)
    except ValueError as e:
        logger.info("check_json: %s does not parse: %s", result, e)
        return 0.0
    if data is None and is_yaml:
        return 0.0  # OSWorld's check for an empty document is on its YAML path only
    if not all(_expect_holds(data, rule) for rule in rules.get("expect", [])):
        return 0.0
    try:
        return float(not any(_unexpect_holds(data, rule) for rule in rules.get("unexpect", [])))
    except (LookupError, TypeError, ValueError, AttributeError) as e:
        logger.info("check_json: unexpect rule cannot be applied: %s", e)
        return 0.0


def check_line_number(path: str | None, line_number: Mapping[str, Any]) -> float:
    """1 when the number of lines holding a clock time (``HH:MM:SS``) equals ``expected``.

    Lines are those of file iteration (split at newlines only); a file that is not UTF-8
    scores 0, as OSWorld catches the read error.
    """
    if path is None or not Path(path).is_file():
        return 0.0
    try:
        lines = file_lines(read_utf8(path))
    except (OSError, UnicodeDecodeError) as e:
        logger.info("check_line_number: cannot read %s: %s", path, e)
        return 0.0
    count = sum(1 for line in lines if _CLOCK_TIME.search(line))
    return float(count == int(line_number["expected"]))


def compare_result_files(result: str | None, expected: str | None) -> float:
    """Compare two answer files, numerically when the expected one holds a number.

    A number passes within 1e-4, or when its text appears in the result (an answer with
    words around it); other answers must be equal once stripped.

    Raises:
        UnicodeDecodeError: A file is not UTF-8 (OSWorld's read raises too).
    """
    if not result or not expected:
        return 0.0
    got = read_utf8(result).strip()
    want = read_utf8(expected).strip()
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
    four spaces. A file that cannot be read, or is not UTF-8, scores 0 (OSWorld catches it).
    """
    if not result or not expected:
        return 0.0
    try:
        got, want = read_utf8(result), read_utf8(expected)
    except (OSError, UnicodeDecodeError) as e:
        logger.info("compare_python_pure_text: %s", e)
        return 0.0
    return float(_normalise_python(got) == _normalise_python(want))


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

    Lines are read as OSWorld reads them (``read_lines_any_encoding()``): a byte-order mark
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
