"""Text-file metrics (general files, vscode, compare_csv) on files written into tmp_path."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.evaluation.metrics import get_metric, metrics_for, vscode

# Not UTF-8. OSWorld reads text files strictly, so such a file raises (the evaluator scores
# the metric 0) or scores 0 where OSWorld catches the error; it is never scored as text.
LATIN1 = "café ok\n".encode("latin-1")


@pytest.fixture()
def write(tmp_path: Path) -> Callable[[str, str | bytes], str]:
    def _write(name: str, content: str | bytes) -> str:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return str(path)

    return _write


@pytest.mark.parametrize(
    ("result", "expected", "options", "score"),
    [
        ("a b\nc\n", "a b\nc\n", {}, 1.0),
        ("a b\nc\n", "a b\nc", {}, 0.0),  # a trailing newline matters
        ("a  b\n\tc\n", "a b c", {}, 0.0),
        ("a  b\n\tc\n", "a b c", {"ignore_blanks": True}, 1.0),
        ("A B", "a b", {}, 0.0),
        ("A B", "a b", {"ignore_case": True}, 1.0),
    ],
)
def test_compare_text_file(write, result: str, expected: str, options: dict, score: float) -> None:
    metric = get_metric("compare_text_file")
    assert metric(write("r.txt", result), write("e.txt", expected), **options) == score


def test_compare_text_file_none(write) -> None:
    assert get_metric("compare_text_file")(None, write("e.txt", "x")) == 0.0


def test_compare_text_file_not_utf8_raises(write) -> None:
    with pytest.raises(UnicodeDecodeError):  # even with the same bytes on both sides
        get_metric("compare_text_file")(write("r.txt", LATIN1), write("e.txt", LATIN1))


def test_diff_text_file(write) -> None:
    metric = get_metric("diff_text_file")
    expected = write("e.js", "a\nb\nc\nd\n")
    assert metric(write("same.js", "a\nb\nc\nd"), expected) == 1.0
    assert metric(write("half.js", "a\nb\nx\ny\n"), expected) == 0.5
    assert metric(write("none.js", "x\n"), expected) == 0.0
    assert metric(None, expected) == 0.0
    with pytest.raises(UnicodeDecodeError):
        metric(write("latin.js", LATIN1), expected)


@pytest.mark.parametrize(
    ("text", "score"),
    [("CPU %user %idle", 1.0), ("CPU %user", 0.0), ("", 0.0)],
)
def test_file_contains(write, text: str, score: float) -> None:
    rules = {"expected": ["CPU", "%user", "%idle"]}
    assert get_metric("file_contains")(write("r.txt", text), rules) == score


def test_file_contains_missing(tmp_path: Path) -> None:
    metric = get_metric("file_contains")
    assert metric(None, {"expected": ["a"]}) == 0.0
    assert metric(str(tmp_path / "absent.txt"), {"expected": ["a"]}) == 0.0
    latin = tmp_path / "latin.txt"
    latin.write_bytes(LATIN1)
    assert metric(str(latin), {"expected": ["ok"]}) == 0.0  # OSWorld catches the read error


@pytest.mark.parametrize(
    ("text", "rules", "score"),
    [
        ("", {"unexpect": [".+"]}, 1.0),  # an empty diff
        ("< changed line\n", {"unexpect": [".+"]}, 0.0),
        ("nautilus OSWorld\nterm ~/OSWorld\n", {"expect": ["nautilus.*OSWorld", "term"]}, 1.0),
        ("nautilus OSWorld\n", {"expect": ["nautilus.*OSWorld", "term"]}, 0.0),
        ("a\nb\n", {"expect": ["a"], "unexpect": ["^b"]}, 0.0),
    ],
)
def test_check_list(write, text: str, rules: dict, score: float) -> None:
    assert get_metric("check_list")(write("out.txt", text), rules) == score
    assert get_metric("check_list")(None, rules) == 0.0


def test_check_list_reads_lines_as_file_iteration(write) -> None:
    metric = get_metric("check_list")
    # a form feed ends no line of an iterated file (str.splitlines would split there)
    assert metric(write("ff.txt", "a.txt\x0cb.md\n"), {"expect": [r"^b\.md"]}) == 0.0
    with pytest.raises(UnicodeDecodeError):
        metric(write("latin.txt", LATIN1), {"expect": ["ok"]})


CSV = "url,user\nimap://a,alice\nimap://b,bob\n"


@pytest.mark.parametrize(
    ("rules", "score"),
    [
        ({"expect": [{"user": "alice"}]}, 1.0),
        ({"expect": [{"user": "alice", "url": "imap://b"}]}, 0.0),
        ({"unexpect": [{"url": "imap://c"}]}, 1.0),
        ({"unexpect": [{"user": "bob"}]}, 0.0),
        ({"expect": [{"missing_column": "x"}]}, 0.0),
    ],
)
def test_check_csv(write, rules: dict, score: float) -> None:
    assert get_metric("check_csv")(write("accounts.csv", CSV), rules) == score
    assert get_metric("check_csv")(None, rules) == 0.0


def test_check_csv_reads_with_universal_newlines(write) -> None:
    metric = get_metric("check_csv")
    # OSWorld opens the CSV without newline="": a quoted CRLF (or CR) reads as LF.
    crlf = write("crlf.csv", b'user,note\r\nada,"a\r\nb"\r\n')
    assert metric(crlf, {"expect": [{"note": "a\nb"}]}) == 1.0
    assert metric(crlf, {"expect": [{"note": "a\r\nb"}]}) == 0.0
    with pytest.raises(UnicodeDecodeError):
        metric(write("latin.csv", b"user\nada\n" + LATIN1), {"expect": [{"user": "ada"}]})


MANIFEST = {"name": "happy", "version": "0.0.1", "background": {"scripts": ["bg.js"]}}


@pytest.mark.parametrize(
    ("rules", "score"),
    [
        ({"expect": [{"key": ["name"], "method": "eq", "ref": "happy"}]}, 1.0),
        ({"expect": [{"key": ["background", "scripts"], "method": "eq", "ref": ["bg.js"]}]}, 1.0),
        ({"expect": [{"key": ["name"], "method": "eq", "ref": "sad"}]}, 0.0),
        ({"expect": [{"key": ["absent"], "method": "eq", "ref": None}]}, 0.0),
        ({"expect": [{"key": ["name", "deeper"], "method": "eq", "ref": 1}]}, 0.0),
        ({"unexpect": [{"key": ["name"], "method": "eq", "ref": "sad"}]}, 1.0),
        ({"unexpect": [{"key": ["name"], "method": "eq", "ref": "happy"}]}, 0.0),
        ({"unexpect": [{"key": ["absent"], "method": "ne", "ref": None}]}, 1.0),  # None == None
        ({"expect": [{"key": ["version"], "method": "re", "ref": r"^0\.0\."}]}, 1.0),
    ],
)
def test_check_json(write, rules: dict, score: float) -> None:
    assert get_metric("check_json")(write("manifest.json", json.dumps(MANIFEST)), rules) == score


def test_check_json_yaml_and_bad_files(write, tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    metric = get_metric("check_json")
    rules = {"expect": [{"key": ["author", "name"], "method": "eq", "ref": "Test Account"}]}
    good = write("_config.yml", "author:\n  name: Test Account\n")
    assert metric(good, rules, is_yaml=True) == 1.0
    assert metric(write("bad.yml", "a: [unclosed\n"), rules, is_yaml=True) == 0.0
    assert metric(write("empty.yml", ""), rules, is_yaml=True) == 0.0
    assert metric(write("bad.json", "{not json"), rules) == 0.0
    assert metric(str(tmp_path / "absent.json"), rules) == 0.0
    assert metric(None, rules) == 0.0
    assert metric(write("latin.json", b'{"note": "caf\xe9"}'), {}) == 0.0  # not UTF-8
    assert metric(write("null.yml", "null\n"), {}, is_yaml=True) == 0.0  # empty YAML only


def _json_rule(key: list[Any], method: str, ref: Any) -> dict[str, Any]:
    return {"key": key, "method": method, "ref": ref}


@pytest.mark.parametrize(
    ("content", "rules", "score"),
    [
        # JSON null is a document like any other: no key is found in it.
        ("null", {}, 1.0),
        ("null", {"unexpect": [_json_rule(["n"], "eq", 5)]}, 1.0),
        ("null", {"expect": [_json_rule(["n"], "eq", 5)]}, 0.0),
        ("null", {"expect": [_json_rule([], "eq", None)]}, 1.0),
        # An unexpect index out of range is an error, not a missing key (which reads None).
        ('{"files": ["a"]}', {"unexpect": [_json_rule(["files", 9], "eq", "x")]}, 0.0),
        ('{"files": ["a"]}', {"unexpect": [_json_rule(["gone"], "eq", "x")]}, 1.0),
        ('{"files": ["a"]}', {"unexpect": [{"method": "eq", "ref": 1}]}, 0.0),  # no key
        # str_list_eq / str_set_eq want a string: a number or a missing value scores 0.
        ('{"v": 5}', {"expect": [_json_rule(["v"], "str_list_eq", ["5"])]}, 0.0),
        ('{"v": "5"}', {"expect": [_json_rule(["v"], "str_list_eq", ["5"])]}, 1.0),
        ('{"v": "a"}', {"unexpect": [_json_rule(["w"], "str_set_eq", ["a"])]}, 0.0),
    ],
)
def test_check_json_as_osworld(write, content: str, rules: dict, score: float) -> None:
    assert get_metric("check_json")(write("data.json", content), rules) == score


def test_check_line_number(write) -> None:
    report = "Linux header\n10:00:01 CPU all\n10:00:02 CPU all\nAverage:\n"
    metric = get_metric("check_line_number")
    assert metric(write("sar.txt", report), {"expected": "2"}) == 1.0
    assert metric(write("sar2.txt", report), {"expected": 3}) == 0.0
    assert metric(None, {"expected": "2"}) == 0.0
    # lines as file iteration yields them: U+2028 ends no line
    assert metric(write("u2028.txt", "12:00:00\u202812:00:01\n"), {"expected": 1}) == 1.0
    assert metric(write("latin.txt", b"12:00:00 caf\xe9\n"), {"expected": 1}) == 0.0


@pytest.mark.parametrize(
    ("result", "expected", "score"),
    [
        ("42.00001", "42", 1.0),
        ("The answer is 42", "42", 1.0),
        ("43", "42", 0.0),
        ("forty", "42", 0.0),
        (" text answer \n", "text answer", 1.0),
        ("other", "text answer", 0.0),
    ],
)
def test_compare_result_files(write, result: str, expected: str, score: float) -> None:
    metric = get_metric("compare_result_files")
    assert metric(write("r.txt", result), write("e.txt", expected)) == score
    assert metric(None, write("e2.txt", expected)) == 0.0


def test_compare_result_files_not_utf8_raises(write) -> None:
    with pytest.raises(UnicodeDecodeError):
        get_metric("compare_result_files")(write("r.txt", b"caf\xe9 42"), write("e.txt", "42"))


def test_compare_python_pure_text(write) -> None:
    metric = get_metric("compare_python_pure_text")
    gold = write("gold.py", "def f():\n    return 1\n")
    tabbed = write("a.py", "#!/usr/bin/env python\n\ndef f():\n\treturn 1   \n\n")
    assert metric(tabbed, gold) == 1.0
    assert metric(write("b.py", "```python\ndef f():\n    return 1\n```\n"), gold) == 0.0
    assert metric(None, gold) == 0.0
    latin = write("latin.py", b"x = 'caf\xe9'\n")
    assert metric(latin, latin) == 0.0  # OSWorld catches the UnicodeDecodeError


def test_run_sqlite3(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
        db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    metric = get_metric("run_sqlite3")
    assert metric(str(path), {"sql": "SELECT COUNT(*) = 2 FROM t"}) == 1.0
    assert metric(str(path), {"sql": "SELECT COUNT(*) = 3 FROM t"}) == 0.0
    assert metric(None, {"sql": "SELECT 1"}) == 0.0
    with pytest.raises(sqlite3.OperationalError):  # read-only: a task query cannot write
        metric(str(path), {"sql": "INSERT INTO t VALUES (3) RETURNING 1"})


SETTINGS: dict[str, Any] = {"editor.wordWrapColumn": 50, "files.autoSave": "afterDelay"}


@pytest.mark.parametrize(
    ("content", "expected", "score"),
    [
        (json.dumps(SETTINGS), {"editor.wordWrapColumn": 50}, 1.0),
        (json.dumps(SETTINGS), {"editor.wordWrapColumn": 80}, 0.0),
        (json.dumps(SETTINGS), {"absent.key": 1}, 0.0),
        ('{"a": 1, // a comment\n}', {"a": 1}, 0.0),  # JSONC does not parse, as in OSWorld
        ("[1, 2]", {"a": 1}, 0.0),
        (b'{"editor.wordWrapColumn": 50, "n": "caf\xe9"}', {"editor.wordWrapColumn": 50}, 0.0),
        # OSWorld looks into any document with `in`, then indexing
        ("null", {}, 1.0),
        ("[1, 2]", {}, 1.0),
    ],
)
def test_check_json_settings(write, content: str, expected: dict, score: float) -> None:
    metric = get_metric("check_json_settings")
    assert metric(write("settings.json", content), {"expected": expected}) == score
    assert metric(None, {"expected": expected}) == 0.0


def test_check_json_settings_document_holding_the_key_raises(write) -> None:
    metric = get_metric("check_json_settings")
    with pytest.raises(TypeError):  # the key is in the list, which cannot be indexed by it
        metric(write("list.json", '["a", "b"]'), {"expected": {"a": 1}})


BINDING = {"key": "ctrl+j", "command": "workbench.action.focus", "when": "terminalFocus"}


@pytest.mark.parametrize(
    ("content", "score"),
    [
        (json.dumps([BINDING]), 1.0),
        ("// Place your key bindings in this file\n" + json.dumps([BINDING]), 1.0),
        (json.dumps([{**BINDING, "key": "ctrl+k"}]), 0.0),
        (json.dumps(BINDING), 0.0),  # an object, not a list
        ("garbage", 0.0),
        (json.dumps([BINDING]).encode()[:-1] + b', "caf\xe9"]', 0.0),  # not UTF-8
    ],
)
def test_check_json_keybindings(write, content: str, score: float) -> None:
    metric = get_metric("check_json_keybindings")
    assert metric(write("keybindings.json", content), {"expected": BINDING}) == score
    assert metric(None, {"expected": BINDING}) == 0.0


CONTAIN = {"containment_ok": True}


@pytest.mark.parametrize(
    ("content", "expected", "options", "score"),
    [
        # OSWorld 2026.04 (the default reference): containment unless containment_ok is false.
        ("project", "project", {}, 1.0),
        ("project\n", "project", {}, 1.0),
        ("/home/user/project", "project", {}, 1.0),
        ("Project", "project", {}, 0.0),
        ('{"theme": "Dark", "x": 1}', '{"theme": "Dark"}\n', {}, 1.0),
        ('{"theme": "Dark", "x": 1}', '{"theme": "Dark"}\n', CONTAIN, 1.0),
        ('{"theme": "Dark", "x": 1}', '{"theme": "Dark"}\n', {"containment_ok": False}, 0.0),
        ('{ "theme" : "Dark" }', '{"theme": "Dark"}', {"containment_ok": False}, 1.0),
        ("project\n", "project", {"containment_ok": False}, 0.0),
        ("", "", {}, 0.0),  # an empty expectation never passes
    ],
)
def test_compare_config(write, content: str, expected: str, options: dict, score: float) -> None:
    metric = get_metric("compare_config")
    assert metric(write("cfg.txt", content), {"expected": expected}, **options) == score
    assert metric(None, {"expected": expected}, **options) == 0.0
    assert metric(write("cfg.txt", content), {}, **options) == 0.0


@pytest.mark.parametrize(
    ("content", "expected", "options", "score"),
    [
        # desktop-env 1.0.2: the exact text, whatever the options say.
        ("project", "project", {}, 1.0),
        ("project\n", "project", {}, 0.0),
        ("the project folder", "project", CONTAIN, 0.0),
        ('{"theme": "Dark"}\n', '{"theme": "Dark"}\n', CONTAIN, 1.0),
        ('{"theme": "Dark", "x": 1}', '{"theme": "Dark"}\n', CONTAIN, 0.0),
        ('{ "theme" : "Dark" }', '{"theme": "Dark"}', {}, 0.0),
        ("a\r\nb", "a\nb", {}, 1.0),  # read in universal-newline mode
        ("", "", {}, 1.0),
    ],
)
def test_compare_config_1_0_2(
    write, content: str, expected: str, options: dict, score: float
) -> None:
    metric = vscode.compare_config_1_0_2
    assert metric(write("cfg.txt", content), {"expected": expected}, **options) == score
    assert metric(None, {"expected": expected}, **options) == 0.0


@pytest.mark.parametrize(
    ("content", "expected", "options", "score"),
    [
        # containment_ok: a JSON subset, or the stripped expected text inside a non-JSON file.
        ('{"theme": "Dark", "x": 1}', '{"theme": "Dark"}\n', CONTAIN, 1.0),
        ('{"theme": "Light"}', '{"theme": "Dark"}\n', CONTAIN, 0.0),
        ('{"a": {"b": 1, "c": 2}}', '{"a": {"b": 1}}', CONTAIN, 1.0),  # nested objects too
        ('{"a": [1, 2]}', '{"a": [1]}', CONTAIN, 0.0),  # lists must be equal
        ('{"k": "{}", "x": 2}', "{}", CONTAIN, 1.0),
        ('["x", 1]', '"x"', CONTAIN, 0.0),  # both JSON, not a subset: no substring fallback
        ('// c\n{"theme": "Dark"}', '{"theme": "Dark"}\n', CONTAIN, 1.0),
        ('// c\n{"theme":"Dark"}', '{"theme": "Dark"}', CONTAIN, 0.0),
        ("the project folder", "project", CONTAIN, 1.0),
        ("anything", "", CONTAIN, 0.0),  # an empty expectation never passes
        # Without the option: equal texts, or equal JSON values.
        ("project", "project", {}, 1.0),
        ("project\n", "project", {}, 0.0),
        ('{"theme": "Dark", "x": 1}', '{"theme": "Dark"}\n', {}, 0.0),
        ('{ "theme" : "Dark" }', '{"theme": "Dark"}\n', {}, 1.0),
    ],
)
def test_compare_config_fixed(
    write, content: str, expected: str, options: dict, score: float
) -> None:
    # The fixed mode's metric under the 1.0.2 reference (2026.04's code made the fix itself).
    metric = metrics_for("fixed", "osworld-1.0.2")["compare_config"]
    assert metric is vscode.compare_config_fixed
    assert metric(write("cfg.txt", content), {"expected": expected}, **options) == score
    assert metric(None, {"expected": expected}, **options) == 0.0


@pytest.mark.parametrize(
    ("result", "expected", "options", "expected_score"),
    [
        ("a,b\n1,2\n", ["a,b\n1,2\n"], {}, 1.0),
        ("a,b\n1,2\n", ["a,b\n1,3\n"], {}, 0.0),
        ("a,b\n1,2\n", ["x\n", "a,b\n1,2"], {}, 1.0),  # any of several acceptable files
        ("a,b \n", ["a,b\n"], {}, 0.0),
        ("a,b \n", ["a,b\n"], {"strict": False}, 1.0),
        ("A,B\n", ["a,b\n"], {"ignore_case": True}, 1.0),
        # A UTF-8 byte-order mark is part of the first line, as OSWorld reads it.
        ("\ufeffa,b\n", ["a,b\n"], {}, 0.0),
        ("\ufeffa,b\n", ["a,b\n"], {"strict": False}, 0.0),
        ("\ufeffa,b\n", ["\ufeffa,b\n"], {}, 1.0),
        ("a,b\r\n1,2\r\n", ["a,b\n1,2"], {}, 1.0),  # line ends do not count
    ],
)
def test_compare_csv(
    tmp_path: Path, result: str, expected: list[str], options: dict, expected_score: float
) -> None:
    result_path = tmp_path / "out.csv"
    result_path.write_text(result, encoding="utf-8")
    gold = []
    for i, text in enumerate(expected):
        (tmp_path / f"gold{i}.csv").write_text(text, encoding="utf-8")
        gold.append(str(tmp_path / f"gold{i}.csv"))
    metric = get_metric("compare_csv")
    assert metric(str(result_path), gold if len(gold) > 1 else gold[0], **options) == expected_score


def test_compare_csv_missing_files(tmp_path: Path) -> None:
    metric = get_metric("compare_csv")
    gold = tmp_path / "gold.csv"
    gold.write_bytes("caf\xe9\n".encode("latin-1"))
    assert metric(None, str(gold)) == 0.0
    assert metric(str(tmp_path / "absent.csv"), str(gold)) == 0.0
    assert metric(str(gold), [str(tmp_path / "absent.csv"), str(gold)]) == 1.0  # Latin-1 reads
