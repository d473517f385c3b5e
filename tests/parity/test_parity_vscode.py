"""Parity of OSWorld's ``vscode`` metrics with ours: text files, settings, keybindings, extensions.

Files (a settings.json, a keybindings.json, a text file) are written to pytest's tmp folder;
rules and options come from OSWorld's vs_code and multi_apps task files where they exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from parity_harness import (
    ABSENT,
    FileContent,
    OSWorld,
    assert_same_score,
    make_file,
    real_checks,
    real_rules,
)

pytestmark = pytest.mark.parity

# --- compare_text_file --------------------------------------------------------------------

_TEXT = "def f(x):\n\treturn x + 1\n"
_REAL_TEXT_OPTIONS = sorted(
    {json.dumps(options, sort_keys=True) for *_, options in real_checks("compare_text_file")}
)

COMPARE_TEXT = [
    *[
        pytest.param(result, _TEXT, json.loads(options), id=f"real{i}-{name}")
        for i, options in enumerate(_REAL_TEXT_OPTIONS)
        for name, result in [
            ("equal", _TEXT),
            ("spaces", "def f(x):\n    return x + 1\n"),
            ("blank-lines", "\n\ndef f(x):\n\n\treturn x + 1\n\n"),
            ("case", _TEXT.upper()),
            ("differs", "def f(x):\n\treturn x + 2\n"),
        ]
    ],
    pytest.param(_TEXT, _TEXT, {}, id="equal"),
    pytest.param(_TEXT.rstrip("\n"), _TEXT, {}, id="no-final-newline"),
    pytest.param(_TEXT.replace("\n", "\r\n"), _TEXT, {}, id="crlf-vs-lf"),
    pytest.param(" a  b\n", "a b", {"ignore_blanks": True}, id="ignore-blanks"),
    pytest.param("a\u00a0b", "a b", {"ignore_blanks": True}, id="ignore-blanks-nbsp"),
    pytest.param("A B", "a b", {"ignore_case": True}, id="ignore-case"),
    pytest.param("A\tB\n", "a b", {"ignore_case": True, "ignore_blanks": True}, id="both"),
    pytest.param("\ufeff" + _TEXT, _TEXT, {}, id="bom"),
    pytest.param("Zürich\n", "Zürich\n", {}, id="unicode"),
    pytest.param("", "", {}, id="both-empty"),
    pytest.param("", "", {"ignore_blanks": True}, id="both-empty-ignore-blanks"),
    pytest.param(None, _TEXT, {}, id="none"),
    pytest.param(_TEXT, None, {}, id="expected-none"),
    pytest.param(_TEXT, ABSENT, {}, id="expected-absent"),
    # not UTF-8: OSWorld's strict read raises, even with the same bytes on both sides
    pytest.param(b"caf\xe9\n", b"caf\xe9\n", {}, id="latin-1-both"),
]


@pytest.mark.parametrize(("result", "expected", "options"), COMPARE_TEXT)
def test_compare_text_file(
    osworld: OSWorld,
    tmp_path: Path,
    result: FileContent,
    expected: FileContent,
    options: dict[str, Any],
) -> None:
    assert_same_score(
        osworld,
        "compare_text_file",
        make_file(tmp_path, "result.txt", result),
        make_file(tmp_path, "gold.txt", expected),
        **options,
    )


# --- check_json_settings ------------------------------------------------------------------

_SETTINGS = {"editor.fontSize": 14, "files.autoSave": "afterDelay", "python.analysis": {"a": 1}}


def _settings_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_json_settings"):
        want = rules["expected"]
        cases += [
            pytest.param(json.dumps(want, indent=4), rules, id=f"{task}-exact"),
            pytest.param(json.dumps({**_SETTINGS, **want}), rules, id=f"{task}-among-others"),
            pytest.param(json.dumps(_SETTINGS), rules, id=f"{task}-absent"),
            pytest.param("// settings\n" + json.dumps(want), rules, id=f"{task}-jsonc"),
            pytest.param("{}", rules, id=f"{task}-empty-object"),
        ]
    return cases


_FONT = {"expected": {"editor.fontSize": 14}}

JSON_SETTINGS = [
    *_settings_real(),
    pytest.param(json.dumps(_SETTINGS), _FONT, id="key-present"),
    pytest.param(json.dumps(_SETTINGS), {"expected": {"editor.fontSize": 14.0}}, id="int-float"),
    pytest.param(json.dumps(_SETTINGS), {"expected": {"editor.fontSize": "14"}}, id="int-text"),
    pytest.param(json.dumps(_SETTINGS), {"expected": {"python.analysis": {"a": 1}}}, id="nested"),
    pytest.param(json.dumps(_SETTINGS), {"expected": {}}, id="nothing-expected"),
    pytest.param('{"a": 1,}', {"expected": {"a": 1}}, id="trailing-comma"),
    pytest.param("", _FONT, id="empty-file"),
    pytest.param("\ufeff" + json.dumps(_SETTINGS), _FONT, id="bom"),
    pytest.param('{"a": 1, "a": 2}', {"expected": {"a": 2}}, id="duplicate-key"),
    pytest.param('{"t": "Zürich"}', {"expected": {"t": "Zürich"}}, id="unicode"),
    pytest.param('["editor.fontSize"]', _FONT, id="json-list"),
    pytest.param('"editor.fontSize"', _FONT, id="json-string"),
    pytest.param("null", _FONT, id="json-null"),
    pytest.param("null", {"expected": {}}, id="json-null-nothing-expected"),
    pytest.param('["a", "b"]', {"expected": {"a": 1}}, id="json-list-holding-key"),
    pytest.param('"abc"', {"expected": {"a": 1}}, id="json-string-holding-key"),
    pytest.param(json.dumps(_SETTINGS), {}, id="rules-without-expected"),
    pytest.param(None, _FONT, id="none"),
    pytest.param(ABSENT, _FONT, id="absent"),
    # not UTF-8, the bad byte outside the compared keys: the load fails, 0
    pytest.param(b'{"editor.fontSize": 14, "note": "caf\xe9"}', _FONT, id="latin-1"),
]


@pytest.mark.parametrize(("content", "expected"), JSON_SETTINGS)
def test_check_json_settings(
    osworld: OSWorld, tmp_path: Path, content: FileContent, expected: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "settings.json", content)
    assert_same_score(osworld, "check_json_settings", path, expected)


# --- check_json_keybindings ---------------------------------------------------------------

_HEADER = "// Place your key bindings in this file to override the defaults\n"


def _keybindings_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_json_keybindings"):
        binding = rules["expected"]
        other = {"key": "ctrl+k", "command": "workbench.action.x"}
        cases += [
            pytest.param(_HEADER + json.dumps([other, binding], indent=4), rules, id=f"{task}-hdr"),
            pytest.param(json.dumps([binding]), rules, id=f"{task}-no-header"),
            pytest.param(_HEADER + json.dumps([other]), rules, id=f"{task}-missing"),
            pytest.param(
                _HEADER + json.dumps([{**binding, "args": 1}]), rules, id=f"{task}-extra-field"
            ),
            pytest.param(_HEADER + "[]", rules, id=f"{task}-empty-list"),
            pytest.param(_HEADER + _HEADER + json.dumps([binding]), rules, id=f"{task}-2-headers"),
        ]
    return cases


_BINDING = {"expected": {"key": "ctrl+j", "command": "-workbench.action.togglePanel"}}

KEYBINDINGS = [
    *_keybindings_real(),
    pytest.param(json.dumps(_BINDING["expected"]), _BINDING, id="object-not-list"),
    pytest.param(_HEADER + '[{"key": "ctrl+j",}]', _BINDING, id="trailing-comma"),
    pytest.param("", _BINDING, id="empty-file"),
    pytest.param(_HEADER, _BINDING, id="header-only"),
    pytest.param("\ufeff" + json.dumps([_BINDING["expected"]]), _BINDING, id="bom"),
    pytest.param(
        _HEADER.replace("\n", "\r\n") + json.dumps([_BINDING["expected"]]), _BINDING, id="crlf"
    ),
    pytest.param(json.dumps([_BINDING["expected"]]), {}, id="rules-without-expected"),
    pytest.param(None, _BINDING, id="none"),
    pytest.param(ABSENT, _BINDING, id="absent"),
    pytest.param(
        _HEADER.encode() + b'[{"key": "ctrl+j", "command": "-workbench.action.togglePanel"},'
        b' {"key": "caf\xe9", "command": "x"}]',
        _BINDING,
        id="latin-1",  # not UTF-8: both loads fail, 0
    ),
]


@pytest.mark.parametrize(("content", "expected"), KEYBINDINGS)
def test_check_json_keybindings(
    osworld: OSWorld, tmp_path: Path, content: FileContent, expected: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "keybindings.json", content)
    assert_same_score(osworld, "check_json_keybindings", path, expected)


# --- compare_config -----------------------------------------------------------------------


def _compare_config_real() -> list[Any]:
    cases = []
    for task, _, expected, options in real_checks("compare_config"):
        text = expected["rules"]["expected"]
        rules = expected["rules"]
        cases += [
            pytest.param(text, rules, options, id=f"{task}-equal"),
            pytest.param(text.strip(), rules, options, id=f"{task}-stripped"),
            pytest.param(text + "\n", rules, options, id=f"{task}-extra-newline"),
            pytest.param("", rules, options, id=f"{task}-empty"),
        ]
        if options.get("containment_ok"):
            # OSWorld never reads the option: a superset of the JSON object scores 0.
            superset = json.dumps({**json.loads(text), "editor.fontSize": 14})
            cases.append(pytest.param(superset, rules, options, id=f"{task}-superset"))
    return cases


COMPARE_CONFIG = [
    *_compare_config_real(),
    pytest.param("project", {"expected": "project"}, {}, id="equal"),
    pytest.param("project\n", {"expected": "project"}, {}, id="newline"),
    pytest.param("Project", {"expected": "project"}, {}, id="case"),
    pytest.param("Zürich", {"expected": "Zürich"}, {}, id="unicode"),
    pytest.param("\ufeffproject", {"expected": "project"}, {}, id="bom"),
    pytest.param("a\r\nb", {"expected": "a\nb"}, {}, id="crlf-read-as-lf"),
    pytest.param("", {"expected": ""}, {}, id="both-empty"),
    pytest.param('{"a": 1}', {"expected": '{"a": 1}'}, {"containment_ok": True}, id="ok-equal"),
    pytest.param('{"a": 2}', {"expected": '{"a": 1}'}, {"containment_ok": True}, id="ok-differs"),
    pytest.param(None, {"expected": "project"}, {}, id="none"),
    pytest.param("project", {}, {}, id="rules-without-expected"),
]


@pytest.mark.parametrize(("content", "rules", "options"), COMPARE_CONFIG)
def test_compare_config(
    osworld: OSWorld,
    tmp_path: Path,
    content: FileContent,
    rules: dict[str, Any],
    options: dict[str, Any],
) -> None:
    path = make_file(tmp_path, "config.txt", content)
    assert_same_score(osworld, "compare_config", path, rules, **options)


# --- is_extension_installed ---------------------------------------------------------------


def _extensions_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_extension_installed"):
        ext = rules["expected"]
        cases += [
            pytest.param(f"{ext}\n", rules, id=f"{task}-listed"),
            pytest.param(f"ms-toolsai.jupyter\n{ext}\nvscodevim.vim\n", rules, id=f"{task}-among"),
            pytest.param("", rules, id=f"{task}-empty"),
            pytest.param(ext.upper() + "\n", rules, id=f"{task}-case"),
            pytest.param(None, rules, id=f"{task}-none"),
            pytest.param(ext, {**rules, "type": "not_contain"}, id=f"{task}-not-contain"),
            pytest.param("", {**rules, "type": "not_contain"}, id=f"{task}-not-contain-empty"),
        ]
    return cases


EXTENSIONS = [
    *_extensions_real(),
    pytest.param(
        "ms-python.python-2\n", {"type": "contain", "expected": "ms-python.python"}, id="p"
    ),
    pytest.param("x", {"type": "equal", "expected": "x"}, id="unknown-type"),
    pytest.param("x", {"expected": "x"}, id="no-type"),
    pytest.param("x", {"type": "contain"}, id="no-expected"),
]


@pytest.mark.parametrize(("result", "rules"), EXTENSIONS)
def test_is_extension_installed(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_extension_installed", result, rules)
