"""Parity of the file metrics (OSWorld's ``general`` file part and ``table.compare_csv``) with ours.

Each case is the text (or bytes) of the files a getter would fetch, written to pytest's tmp
folder at test time; ``None`` stands for a getter that found no file, ``ABSENT`` for a path with
no file behind it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from parity_harness import (
    ABSENT,
    FileContent,
    OSWorld,
    assert_same_score,
    make_file,
    real_rules,
)

pytestmark = pytest.mark.parity

# Not UTF-8: OSWorld's strict reads fail on it (each metric then raises or scores 0).
LATIN1 = "café ok\nsame\n".encode("latin-1")


# --- diff_text_file ---------------------------------------------------------------------------

DIFF_TEXT = [
    pytest.param("a\nb\nc\n", "a\nb\nc\n", id="equal"),
    pytest.param("a\nb\nc\n", "a\nb\nd\n", id="one-line-differs"),
    pytest.param("a\nb\n", "a\nb\nc\nd\n", id="shorter"),
    pytest.param("", "", id="both-empty"),
    pytest.param("", "a\n", id="result-empty"),
    pytest.param("a\r\nb\r\n", "a\nb\n", id="crlf-vs-lf"),
    pytest.param("a\rb\r", "a\nb\n", id="cr-vs-lf"),
    pytest.param("\ufeffa\nb\n", "a\nb\n", id="bom"),
    pytest.param("a \nb\n", "a\nb\n", id="trailing-space"),
    pytest.param("a\nb", "a\nb\n", id="no-final-newline"),
    pytest.param("Zürich\n東京\n", "Zürich\n東京\n", id="unicode"),
    pytest.param("b\na\n", "a\nb\n", id="swapped"),
    pytest.param(None, "a\n", id="none"),
    pytest.param("a\n", None, id="expected-none"),
    pytest.param(ABSENT, "a\n", id="absent"),
    pytest.param(LATIN1, "café ok\nsame\n", id="latin-1"),  # raises
    pytest.param("x\n" * 200 + "y\n", "x\n" * 201, id="long"),
]


@pytest.mark.parametrize(("result", "expected"), DIFF_TEXT)
def test_diff_text_file(
    osworld: OSWorld, tmp_path: Path, result: FileContent, expected: FileContent
) -> None:
    assert_same_score(
        osworld,
        "diff_text_file",
        make_file(tmp_path, "result.txt", result),
        make_file(tmp_path, "expected.txt", expected),
    )


# --- compare_csv --------------------------------------------------------------------------

CSV = "name,score\nAda,3\nBob,4\n"

COMPARE_CSV = [
    pytest.param(CSV, CSV, {}, id="equal"),
    pytest.param(CSV, "name,score\nAda,3\nBob,5\n", {}, id="value-differs"),
    pytest.param(CSV.replace("\n", "\r\n"), CSV, {}, id="crlf-vs-lf"),
    pytest.param(CSV.rstrip("\n"), CSV, {}, id="no-final-newline"),
    pytest.param(CSV + "\n", CSV, {}, id="extra-blank-line"),
    pytest.param(CSV.replace(",", ", "), CSV, {}, id="spaces-strict"),
    pytest.param(" name,score \nAda,3\nBob,4\n", CSV, {"strict": False}, id="not-strict"),
    pytest.param(CSV.upper(), CSV, {}, id="case"),
    pytest.param(CSV.upper(), CSV, {"ignore_case": True}, id="ignore-case"),
    pytest.param(CSV.upper(), CSV, {"ignore_case": True, "strict": False}, id="both-options"),
    pytest.param("", "", {}, id="both-empty"),
    pytest.param("name;score\nZoë;3\n", "name;score\nZoë;3\n", {}, id="unicode"),
    pytest.param(
        "\ufeff" + CSV,
        CSV,
        {},
        id="bom-result",
    ),
    pytest.param("\ufeff" + CSV, "\ufeff" + CSV, {}, id="bom-both"),
    pytest.param(
        "name,city\nAda,Zürich\n".encode("latin-1"),
        "name,city\nAda,Zürich\n",
        {},
        id="latin-1-result",
    ),
    pytest.param(None, CSV, {}, id="none"),
    pytest.param(ABSENT, CSV, {}, id="absent"),
    pytest.param(CSV, ABSENT, {}, id="expected-absent"),
]


@pytest.mark.parametrize(("result", "expected", "options"), COMPARE_CSV)
def test_compare_csv(
    osworld: OSWorld,
    tmp_path: Path,
    result: FileContent,
    expected: FileContent,
    options: dict[str, Any],
) -> None:
    assert_same_score(
        osworld,
        "compare_csv",
        make_file(tmp_path, "result.csv", result),
        make_file(tmp_path, "expected.csv", expected),
        **options,
    )


COMPARE_CSV_LISTS = [
    pytest.param([CSV, "x\n"], {}, id="first-matches"),
    pytest.param(["x\n", CSV], {}, id="second-matches"),
    pytest.param(["x\n", "y\n"], {}, id="none-matches"),
    pytest.param([ABSENT, CSV], {}, id="absent-then-match"),
    pytest.param([], {}, id="empty-list"),
    pytest.param(
        [None, CSV],
        {},
        id="none-then-match",
    ),
]


@pytest.mark.parametrize(("expected", "options"), COMPARE_CSV_LISTS)
def test_compare_csv_expected_list(
    osworld: OSWorld, tmp_path: Path, expected: list[FileContent], options: dict[str, Any]
) -> None:
    paths = [make_file(tmp_path, f"expected{i}.csv", e) for i, e in enumerate(expected)]
    assert_same_score(
        osworld, "compare_csv", make_file(tmp_path, "result.csv", CSV), paths, **options
    )


# --- file_contains ------------------------------------------------------------------------

FILE_CONTAINS = [
    pytest.param("The answer is 42.\n", {"expected": ["42"]}, id="contains"),
    pytest.param("The answer is 42.\n", {"expected": ["42", "answer"]}, id="contains-all"),
    pytest.param("The answer is 42.\n", {"expected": ["42", "43"]}, id="one-missing"),
    pytest.param("The answer is 42.\n", {"expected": []}, id="nothing-expected"),
    pytest.param("", {"expected": ["a"]}, id="empty-file"),
    pytest.param("", {"expected": [""]}, id="empty-in-empty"),
    pytest.param("Zürich\n", {"expected": ["Zürich"]}, id="unicode"),
    pytest.param("a\r\nb\r\n", {"expected": ["a\nb"]}, id="crlf-read-as-lf"),
    pytest.param("\ufeffabc", {"expected": ["\ufeff"]}, id="bom"),
    pytest.param("ABC", {"expected": ["abc"]}, id="case"),
    pytest.param(None, {"expected": ["a"]}, id="none"),
    pytest.param(ABSENT, {"expected": ["a"]}, id="absent"),
    pytest.param("abc", {}, id="config-without-expected"),
    pytest.param(LATIN1, {"expected": ["ok"]}, id="latin-1"),  # scores 0
]


@pytest.mark.parametrize(("content", "config"), FILE_CONTAINS)
def test_file_contains(
    osworld: OSWorld, tmp_path: Path, content: FileContent, config: dict[str, Any]
) -> None:
    assert_same_score(osworld, "file_contains", make_file(tmp_path, "out.txt", content), config)


# --- check_list ---------------------------------------------------------------------------

_LIST_TEXT = "alpha.py\nbeta.txt\ngamma.py\n"


def _check_list_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_list"):
        cases.append(pytest.param(_LIST_TEXT, rules, id=f"{task}-listing"))
        cases.append(pytest.param("", rules, id=f"{task}-empty"))
    return cases


CHECK_LIST = [
    *_check_list_real(),
    pytest.param(_LIST_TEXT, {"expect": [r"\.py$"]}, id="expect-dollar"),
    pytest.param(_LIST_TEXT, {"expect": [r"^beta"], "unexpect": [r"^delta"]}, id="expect-both"),
    pytest.param(_LIST_TEXT, {"expect": [r"^alpha"], "unexpect": [r"gamma"]}, id="unexpected"),
    pytest.param(_LIST_TEXT, {"expect": [r"^delta"]}, id="missing"),
    pytest.param(_LIST_TEXT, {}, id="no-rules"),
    pytest.param("", {}, id="empty-no-rules"),
    pytest.param("", {"unexpect": ["x"]}, id="empty-unexpect"),
    pytest.param(_LIST_TEXT.replace("\n", "\r\n"), {"expect": [r"\.txt$"]}, id="crlf"),
    pytest.param("a.txt\x0cb.md\n", {"expect": [r"^b\.md"]}, id="form-feed"),
    pytest.param("naïve.py\n", {"expect": [r"^na\wve"]}, id="unicode"),
    pytest.param(_LIST_TEXT, {"expect": ["alpha\nbeta"]}, id="pattern-across-lines"),
    pytest.param(_LIST_TEXT, {"expect": ["("]}, id="bad-regex"),
    pytest.param(None, {"expect": ["a"]}, id="none"),
    pytest.param(ABSENT, {"expect": ["a"]}, id="absent"),
    pytest.param(LATIN1, {"expect": ["ok"]}, id="latin-1"),  # raises
]


@pytest.mark.parametrize(("content", "rules"), CHECK_LIST)
def test_check_list(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    assert_same_score(osworld, "check_list", make_file(tmp_path, "list.txt", content), rules)


# --- check_csv ----------------------------------------------------------------------------

_RECORDS = "user,url,enabled\nada,imap://x,yes\nbob,imap://y,no\n"

CHECK_CSV = [
    pytest.param(_RECORDS, {"expect": [{"user": "ada"}]}, id="expect-one"),
    pytest.param(_RECORDS, {"expect": [{"user": "ada", "enabled": "yes"}]}, id="expect-record"),
    pytest.param(_RECORDS, {"expect": [{"user": "ada", "enabled": "no"}]}, id="expect-mismatch"),
    pytest.param(_RECORDS, {"expect": [{"user": "ada"}, {"user": "bob"}]}, id="expect-both"),
    pytest.param(_RECORDS, {"expect": [{"user": "eve"}]}, id="expect-missing"),
    pytest.param(_RECORDS, {"unexpect": [{"user": "bob"}]}, id="unexpected"),
    pytest.param(_RECORDS, {"unexpect": [{"user": "eve"}]}, id="unexpect-absent"),
    pytest.param(_RECORDS, {"expect": [{"missing_column": "x"}]}, id="unknown-column"),
    pytest.param(_RECORDS, {}, id="no-rules"),
    pytest.param("user,url\n", {"expect": [{"user": "ada"}]}, id="header-only"),
    pytest.param("", {}, id="empty-file"),
    pytest.param(_RECORDS.replace("\n", "\r\n"), {"expect": [{"enabled": "yes"}]}, id="crlf"),
    pytest.param("\ufeff" + _RECORDS, {"expect": [{"user": "ada"}]}, id="bom-header"),
    pytest.param('user,note\nada,"a\nb"\n', {"expect": [{"note": "a\nb"}]}, id="quoted-newline"),
    # OSWorld opens the CSV without newline='': the quoted CRLF reads as LF
    pytest.param('user,note\r\nada,"a\r\nb"\r\n', {"expect": [{"note": "a\nb"}]}, id="quoted-crlf"),
    pytest.param('user,note\nada,"a\rb"\n', {"expect": [{"note": "a\nb"}]}, id="quoted-cr"),
    pytest.param("user,city\nzoë,Zürich\n", {"expect": [{"city": "Zürich"}]}, id="unicode"),
    pytest.param(None, {"expect": [{"user": "ada"}]}, id="none"),
    pytest.param(b"user\nada\n" + b"caf\xe9\n", {"expect": [{"user": "ada"}]}, id="latin-1"),
]


@pytest.mark.parametrize(("content", "rules"), CHECK_CSV)
def test_check_csv(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    assert_same_score(osworld, "check_csv", make_file(tmp_path, "records.csv", content), rules)


# --- check_json ---------------------------------------------------------------------------

_SETTINGS = '{"editor": {"fontSize": 14, "theme": "Dark+"}, "files": ["a.py", "b.py"], "n": 5}'


def _rule(key: list[Any], method: str, ref: Any) -> dict[str, Any]:
    return {"key": key, "method": method, "ref": ref}


def _check_json_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_json"):
        cases.append(pytest.param(_SETTINGS, rules, False, id=f"{task}-other-file"))
        cases.append(pytest.param("{}", rules, False, id=f"{task}-empty-object"))
    return cases


CHECK_JSON = [
    *_check_json_real(),
    pytest.param(_SETTINGS, {"expect": [_rule(["editor", "fontSize"], "eq", 14)]}, False, id="eq"),
    pytest.param(_SETTINGS, {"expect": [_rule(["editor", "fontSize"], "gt", 20)]}, False, id="gt"),
    pytest.param(
        _SETTINGS, {"expect": [_rule(["editor", "theme"], "re.I", "^dark")]}, False, id="re-flag"
    ),
    pytest.param(_SETTINGS, {"expect": [_rule(["n"], "approx:0.5", 5.4)]}, False, id="approx"),
    pytest.param(_SETTINGS, {"expect": [_rule(["n"], "range.te", [4, 5])]}, False, id="range"),
    pytest.param(_SETTINGS, {"expect": [_rule(["files", 1], "eq", "b.py")]}, False, id="index"),
    pytest.param(_SETTINGS, {"expect": [_rule(["missing"], "eq", 1)]}, False, id="missing-key"),
    pytest.param(_SETTINGS, {"expect": [_rule(["files", 9], "eq", 1)]}, False, id="bad-index"),
    pytest.param(_SETTINGS, {"expect": [_rule(["n", "x"], "eq", 1)]}, False, id="into-number"),
    pytest.param(_SETTINGS, {"unexpect": [_rule(["n"], "eq", 5)]}, False, id="unexpected"),
    pytest.param(_SETTINGS, {"unexpect": [_rule(["gone"], "eq", None)]}, False, id="unexpect-none"),
    pytest.param(
        _SETTINGS,
        {"unexpect": [_rule(["gone"], "str_set_eq", ["a"])]},
        False,
        id="unexpect-str-set-on-missing",  # None has no strip(): 0
    ),
    pytest.param(
        _SETTINGS, {"unexpect": [{"method": "eq", "ref": 1}]}, False, id="unexpect-without-key"
    ),
    pytest.param("null", {"expect": [_rule([], "eq", None)]}, False, id="json-null-empty-key"),
    pytest.param(
        _SETTINGS,
        {"unexpect": [_rule(["files", 9], "eq", "x")]},
        False,
        id="unexpect-bad-index",  # an IndexError is no missing key there: 0
    ),
    pytest.param(_SETTINGS, {"expect": [_rule(["n"], "bogus", 1)]}, False, id="unknown-method"),
    pytest.param(_SETTINGS, {"expect": [_rule(["n"], "re", "5")]}, False, id="re-on-number"),
    pytest.param(
        '{"v": "a,b"}', {"expect": [_rule(["v"], "str_set_eq", ["b", "a"])]}, False, id="str-set"
    ),
    pytest.param(
        '{"v": 5}',
        {"expect": [_rule(["v"], "str_list_eq", ["5"])]},
        False,
        id="str-list-on-number",  # OSWorld strips the value: an int raises, 0
    ),
    pytest.param(_SETTINGS, {}, False, id="no-rules"),
    pytest.param("{not json", {"expect": [_rule(["n"], "eq", 5)]}, False, id="malformed"),
    pytest.param("", {"expect": [_rule(["n"], "eq", 5)]}, False, id="empty-file"),
    pytest.param(
        "null",
        {},
        False,
        id="json-null",  # OSWorld scores an empty document 0 on its YAML path only: 1
    ),
    pytest.param(
        "null",
        {"unexpect": [_rule(["n"], "eq", 5)]},
        False,
        id="json-null-unexpect",  # a lookup into None reads as a missing key: 1
    ),
    pytest.param("null", {"expect": [_rule(["n"], "eq", 5)]}, False, id="json-null-expect"),
    pytest.param("\ufeff" + _SETTINGS, {}, False, id="bom"),
    pytest.param(
        '{"city": "Zürich"}', {"expect": [_rule(["city"], "eq", "Zürich")]}, False, id="u"
    ),
    pytest.param(None, {}, False, id="none"),
    pytest.param(ABSENT, {}, False, id="absent"),
    pytest.param(
        b'{"n": 5, "note": "caf\xe9"}',
        {"expect": [_rule(["n"], "eq", 5)]},
        False,
        id="latin-1",  # scores 0
    ),
    pytest.param("n: 5\nname: x\n", {"expect": [_rule(["n"], "eq", 5)]}, True, id="yaml"),
    pytest.param("n: [1, 2\n", {"expect": [_rule(["n"], "eq", 5)]}, True, id="yaml-malformed"),
    pytest.param("", {}, True, id="yaml-empty"),
    pytest.param("- a\n- b\n", {"expect": [_rule([0], "eq", "a")]}, True, id="yaml-list"),
]


@pytest.mark.parametrize(("content", "rules", "is_yaml"), CHECK_JSON)
def test_check_json(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any], is_yaml: bool
) -> None:
    path = make_file(tmp_path, "data.yaml" if is_yaml else "data.json", content)
    if is_yaml:
        assert_same_score(osworld, "check_json", path, rules, is_yaml=True)
    else:
        assert_same_score(osworld, "check_json", path, rules)


# --- check_line_number --------------------------------------------------------------------

_SAR = "Linux 6.1\n\n12:00:01 AM all 1.0\n12:10:01 AM all 2.0\n12:20:01 AM all 3.0\nAverage\n"

LINE_NUMBER = [
    pytest.param(_SAR, {"expected": 3}, id="three"),
    pytest.param(_SAR, {"expected": "3"}, id="expected-text"),
    pytest.param(_SAR, {"expected": 4}, id="wrong-count"),
    pytest.param("", {"expected": 0}, id="empty"),
    pytest.param("24:00:00\n23:59:60\n", {"expected": 1}, id="bounds"),
    pytest.param("1:00:00\n", {"expected": 0}, id="one-digit-hour"),
    pytest.param("12:00:00 12:00:01\n", {"expected": 1}, id="two-on-a-line"),
    pytest.param(_SAR.replace("\n", "\r\n"), {"expected": 3}, id="crlf"),
    # file iteration splits at \n only, not at U+2028 as str.splitlines() would
    pytest.param("12:00:00\u202812:00:01\n", {"expected": 1}, id="unicode-line-separator"),
    pytest.param(_SAR, {"expected": "three"}, id="expected-not-a-number"),
    pytest.param(None, {"expected": 0}, id="none"),
    pytest.param(ABSENT, {"expected": 0}, id="absent"),
    pytest.param(b"12:00:00 caf\xe9\n", {"expected": 1}, id="latin-1"),  # scores 0
]


@pytest.mark.parametrize(("content", "line_number"), LINE_NUMBER)
def test_check_line_number(
    osworld: OSWorld, tmp_path: Path, content: FileContent, line_number: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "sar.txt", content)
    assert_same_score(osworld, "check_line_number", path, line_number)


# --- compare_result_files -----------------------------------------------------------------

RESULT_FILES = [
    pytest.param("42\n", "42", id="equal-number"),
    pytest.param("42.00001", "42", id="close-number"),
    pytest.param("42.001", "42", id="far-number"),
    pytest.param("The answer is 42.", "42", id="number-in-words"),
    pytest.param("4.2e1", "42", id="scientific"),
    pytest.param("forty-two", "42", id="words-only"),
    pytest.param("  hello  \n", "hello", id="text-stripped"),
    pytest.param("Hello", "hello", id="text-case"),
    pytest.param("", "", id="both-empty"),
    pytest.param("nan", "nan", id="nan"),
    pytest.param("Zürich", "Zürich", id="unicode"),
    pytest.param("1,000", "1000", id="thousands-separator"),
    pytest.param(None, "42", id="none"),
    pytest.param("42", None, id="expected-none"),
    pytest.param(b"caf\xe9 42", "42", id="latin-1"),  # raises
]


@pytest.mark.parametrize(("result", "expected"), RESULT_FILES)
def test_compare_result_files(
    osworld: OSWorld, tmp_path: Path, result: FileContent, expected: FileContent
) -> None:
    assert_same_score(
        osworld,
        "compare_result_files",
        make_file(tmp_path, "result.txt", result),
        make_file(tmp_path, "expected.txt", expected),
    )


# --- compare_python_pure_text -------------------------------------------------------------

_PY = "import os\n\n\ndef main():\n    return os.getcwd()\n"

PYTHON_TEXT = [
    pytest.param(_PY, _PY, id="equal"),
    pytest.param("#!/usr/bin/env python3\n" + _PY, _PY, id="shebang"),
    pytest.param("# -*- coding: utf-8 -*-\n" + _PY, _PY, id="coding-line"),
    pytest.param("\n" + "#!/usr/bin/env python3\n" + _PY, _PY, id="shebang-after-blank"),
    pytest.param(_PY.replace("    ", "\t"), _PY, id="tabs"),
    pytest.param(_PY.replace("\n", "  \n"), _PY, id="trailing-spaces"),
    pytest.param(_PY.replace("\n\n\n", "\n"), _PY, id="blank-lines"),
    pytest.param(_PY.replace("getcwd", "getcwdb"), _PY, id="code-differs"),
    pytest.param("```python\n" + _PY + "```\n", _PY, id="markdown-fence"),
    pytest.param(_PY.replace("\n", "\r\n"), _PY, id="crlf"),
    pytest.param("", "", id="both-empty"),
    pytest.param("\ufeff" + _PY, _PY, id="bom"),
    pytest.param(None, _PY, id="none"),
    pytest.param(ABSENT, _PY, id="absent"),
    pytest.param(
        b"x = 'caf\xe9'\n",
        b"x = 'caf\xe9'\n",
        id="latin-1-both",  # OSWorld catches the UnicodeDecodeError: 0
    ),
]


@pytest.mark.parametrize(("result", "expected"), PYTHON_TEXT)
def test_compare_python_pure_text(
    osworld: OSWorld, tmp_path: Path, result: FileContent, expected: FileContent
) -> None:
    assert_same_score(
        osworld,
        "compare_python_pure_text",
        make_file(tmp_path, "result.py", result),
        make_file(tmp_path, "gold.py", expected),
    )


# --- run_sqlite3 --------------------------------------------------------------------------

_DB_ROWS = [("a", 1), ("b", 0), ("c", 1)]

SQLITE = [
    pytest.param("SELECT COUNT(*) = 3 FROM t", id="true"),
    pytest.param("SELECT COUNT(*) = 4 FROM t", id="false"),
    pytest.param("SELECT AVG(v) FROM t", id="fraction"),
    pytest.param("SELECT SUM(v) FROM t", id="two"),
    pytest.param("SELECT v FROM t WHERE k = 'zz'", id="no-row"),
    pytest.param("SELECT NULL", id="null"),
    pytest.param("SELECT '1'", id="text-number"),
    pytest.param("SELECT 'yes'", id="text"),
    pytest.param("SELECT * FROM missing_table", id="bad-table"),
]


@pytest.mark.parametrize("sql", SQLITE)
def test_run_sqlite3(osworld: OSWorld, tmp_path: Path, sql: str) -> None:
    path = tmp_path.resolve() / "data.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (k TEXT, v INTEGER)")
        connection.executemany("INSERT INTO t VALUES (?, ?)", _DB_ROWS)
    connection.close()
    assert_same_score(osworld, "run_sqlite3", path, {"sql": sql})


@pytest.mark.parametrize("result", [None, ABSENT], ids=["none", "absent"])
def test_run_sqlite3_without_database(osworld: OSWorld, tmp_path: Path, result: Any) -> None:
    path = make_file(tmp_path, "data.sqlite", result)
    assert_same_score(osworld, "run_sqlite3", path, {"sql": "SELECT COUNT(*) FROM t"})
