"""Reference ``osworld-2026.04`` for the VS Code functions OSWorld changed after desktop-env 1.0.2.

PyPI ships no OSWorld newer than 1.0.2, so there is no side venv to compare with: every
expected score below was worked out by reading OSWorld's evaluator code of April 2026 (GitHub
``ljxpython/OSWorldUse`` f6cee71, ``desktop_env/evaluators/``), never by running it. Each case
also states the score of desktop-env 1.0.2 (read from its code the same way), which the
``_1_0_2`` variant must keep; the existing side-venv suite (``test_parity_vscode.py``) checks
that variant against 1.0.2 itself. Inputs use OSWorld's task files' own rules and options
where they exist (``real_checks``), plus made-up ones for the edges.

What changed, per function:

- ``compare_config`` (metrics/vscode.py): reads ``containment_ok`` (default true): a JSON
  subset, or a substring when either text is not JSON; set false: equal texts or equal JSON
  values. An empty or missing ``expected`` scores 0. 1.0.2 compared the texts exactly.
- ``check_python_file_by_test_suite``: after a run, every module it imported is dropped from
  the evaluating process (1.0.2 dropped the test module only, so a later suite saw an earlier
  task's ``settings``); our runs are fresh interpreters, which gives 2026.04's scores in every
  order, and the metric is the same under both references.
- ``vscode_config`` (getters/vscode.py): VS Code's window is raised before the palette keys,
  and a missing file falls back to VS Code's workspace records (``""`` when there are none);
  1.0.2 gave None.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from parity_harness import ABSENT, FileContent, make_file, real_checks

from osworld_gym.errors import GuestAuthError, GuestHTTPError
from osworld_gym.evaluation.getters import EvalContext
from osworld_gym.evaluation.getters import vscode as getters_vscode
from osworld_gym.evaluation.metrics import vscode
from osworld_gym.evaluation.metrics.python_tests import check_python_file_by_test_suite
from osworld_gym.evaluation.metrics.registry import metrics_for
from osworld_gym.evaluation.references import OSWORLD_1_0_2, OSWORLD_2026_04
from osworld_gym.guest.client import CommandResult
from osworld_gym.task_setup.downloads import AssetCache

pytestmark = pytest.mark.parity

RAISES = "raises"  # the code raises there (our evaluator scores the check 0)


def _expect(score: float | str, call: Any) -> None:
    if score == RAISES:
        with pytest.raises(Exception):  # noqa: B017 - any error is what OSWorld's code gives
            call()
    else:
        assert call() == score


# --- compare_config ---------------------------------------------------------------------------

# A workspace record as VS Code writes it (what 2026.04's vscode_config falls back to).
_WORKSPACE = '{\n\t"folder": "file:///home/user/project"\n}'


def _json_task_cases(task: str, text: str, rules: dict, options: dict) -> list[Any]:
    """Cases for a task whose expected text is a JSON object (vs_code/982d12a5's theme)."""
    assert options.get("containment_ok"), "the task file no longer sets containment_ok"
    want = json.loads(text)
    pretty = json.dumps(want, indent=4)  # how VS Code itself lays settings.json out
    cases = [
        # (id, file content, 2026.04 score, 1.0.2 score)
        ("equal", text, 1.0, 1.0),
        ("pretty", pretty, 1.0, 0.0),  # a JSON subset (equal objects)
        ("superset", json.dumps({"editor.fontSize": 14, **want}, indent=4), 1.0, 0.0),
        ("stripped", text.strip(), 1.0, 0.0),
        ("other-value", json.dumps({k: "Red" for k in want}), 0.0, 0.0),
        ("nested-deeper", json.dumps({"settings": want}), 0.0, 0.0),
        ("in-a-list", json.dumps([want]), 0.0, 0.0),  # both JSON, not an object: no fallback
        # Not JSON (a comment): the stripped expected text must occur as it is.
        ("jsonc-one-line", "// theme\n" + text, 1.0, 0.0),
        ("jsonc-pretty", "// theme\n" + pretty, 0.0, 0.0),
        ("empty", "", 0.0, 0.0),
        ("none", None, 0.0, 0.0),
        ("not-utf8", text.encode() + b"\xe9", RAISES, RAISES),
    ]
    return [
        pytest.param(content, rules, options, new, old, id=f"{task}-{name}")
        for name, content, new, old in cases
    ]


def _text_task_cases(task: str, text: str, rules: dict, options: dict) -> list[Any]:
    """Cases for a task whose expected text is not JSON (the OpenProject tasks' ``project``)."""
    assert "containment_ok" not in options, "the task file now sets containment_ok"
    cases = [
        ("equal", text, 1.0, 1.0),
        ("newline", text + "\n", 1.0, 0.0),  # the default is containment: a substring
        ("path", f"/home/user/{text}", 1.0, 0.0),
        ("longer-name", text + "s", 1.0, 0.0),
        ("bom", "\ufeff" + text, 1.0, 0.0),
        ("case", text.upper(), 0.0, 0.0),
        ("other", "Documents", 0.0, 0.0),
        ("workspace-record", _WORKSPACE, 1.0, 0.0),  # JSON, the expectation is not: substring
        ("two-records", _WORKSPACE + '{"folder": "file:///tmp"}', 1.0, 0.0),
        ("other-record", '{"folder": "file:///home/user/Documents"}', 0.0, 0.0),
        ("empty", "", 0.0, 0.0),
        ("none", None, 0.0, 0.0),
        ("absent", ABSENT, RAISES, RAISES),  # a path without a file: the read fails
    ]
    return [
        pytest.param(content, rules, options, new, old, id=f"{task}-{name}")
        for name, content, new, old in cases
    ]


def _compare_config_real() -> list[Any]:
    cases: list[Any] = []
    for task, _, expected, options in real_checks("compare_config"):
        rules = expected["rules"]
        text = rules["expected"]
        try:
            is_object = isinstance(json.loads(text), dict)
        except ValueError:
            is_object = False
        build = _json_task_cases if is_object else _text_task_cases
        cases += build(task, text, rules, options)
    return cases


_OK = {"containment_ok": True}
_STRICT = {"containment_ok": False}

COMPARE_CONFIG = [
    *_compare_config_real(),
    # (file content, rules, options, 2026.04 score, 1.0.2 score)
    pytest.param("project", {}, {}, 0.0, RAISES, id="rules-without-expected"),
    pytest.param(ABSENT, {}, {}, 0.0, RAISES, id="no-expected-no-file-read"),
    pytest.param("", {"expected": ""}, {}, 0.0, 1.0, id="empty-expected"),
    pytest.param("x", {"expected": None}, {}, 0.0, 0.0, id="expected-null"),
    # containment_ok false: equal texts, or equal JSON values
    pytest.param('{ "a" : 1 }', {"expected": '{"a": 1}'}, _STRICT, 1.0, 0.0, id="strict-json"),
    pytest.param('{"a": 1, "b": 2}', {"expected": '{"a": 1}'}, _STRICT, 0.0, 0.0,
                 id="strict-superset"),
    pytest.param("project\n", {"expected": "project"}, _STRICT, 0.0, 0.0, id="strict-text"),
    pytest.param("project", {"expected": "project"}, _STRICT, 1.0, 1.0, id="strict-equal"),
    pytest.param('{"a": 1, "b": 2}', {"expected": '{"a": 1}'}, {"containment_ok": 0}, 0.0, 0.0,
                 id="falsy-zero"),
    # containment_ok is read for its truth value: any non-empty string turns it on
    pytest.param('{"a": 1, "b": 2}', {"expected": '{"a": 1}'}, {"containment_ok": "no"}, 1.0,
                 0.0, id="truthy-string"),
    # the subset rule
    pytest.param('{"a": {"b": 1, "c": 2}}', {"expected": '{"a": {"b": 1}}'}, _OK, 1.0, 0.0,
                 id="nested-subset"),
    pytest.param('{"a": [1, 2]}', {"expected": '{"a": [1]}'}, _OK, 0.0, 0.0, id="list-equal"),
    pytest.param('{"a": [1, 2], "b": 0}', {"expected": '{"a": [1, 2]}'}, _OK, 1.0, 0.0,
                 id="list-same"),
    pytest.param('{"a": true}', {"expected": '{"a": 1}'}, _OK, 1.0, 0.0, id="true-equals-1"),
    pytest.param('{"a": 1}', {"expected": "{}"}, _OK, 1.0, 0.0, id="empty-object"),
    pytest.param('{"k": "{}"}', {"expected": "{}"}, _OK, 1.0, 0.0, id="empty-object-in-string"),
    # both JSON and not a subset: no substring fallback
    pytest.param('["x", 1]', {"expected": '"x"'}, _OK, 0.0, 0.0, id="json-no-fallback"),
    pytest.param("10", {"expected": "1"}, _OK, 0.0, 0.0, id="json-numbers"),
    pytest.param("x1", {"expected": "1"}, _OK, 1.0, 0.0, id="number-in-text"),
    pytest.param("  {a}  ", {"expected": "\n{a}\n"}, _OK, 1.0, 0.0, id="expected-stripped"),
    # the file too deeply nested to parse: the substring fallback
    pytest.param("[" * 100_000 + "]" * 100_000, {"expected": "[]"}, _OK, 1.0, 0.0,
                 id="too-deep"),
    pytest.param("a\r\nb", {"expected": "a\nb"}, {}, 1.0, 1.0, id="crlf-read-as-lf"),
]  # fmt: skip


@pytest.mark.parametrize(("content", "rules", "options", "score", "score_1_0_2"), COMPARE_CONFIG)
def test_compare_config(
    tmp_path: Path,
    content: FileContent,
    rules: dict[str, Any],
    options: dict[str, Any],
    score: float | str,
    score_1_0_2: float | str,
) -> None:
    path = make_file(tmp_path, "config.txt", content)
    arg = None if path is None else str(path)
    _expect(score, lambda: vscode.compare_config(arg, dict(rules), **options))
    _expect(score_1_0_2, lambda: vscode.compare_config_1_0_2(arg, dict(rules), **options))


def test_vs_code_982d12a5_correct_answer_scores_1(tmp_path: Path) -> None:
    """The issue's case: the theme changed in VS Code, settings.json keeping its other keys."""
    checks = [c for c in real_checks("compare_config") if c[0] == "982d12a5"]
    if not checks:
        pytest.skip("OSWorld's task files are not beside the checkout")
    _, _, expected, options = checks[0]
    settings = {"editor.fontSize": 14, "workbench.colorTheme": "Visual Studio Dark"}
    path = str(make_file(tmp_path, "settings.json", json.dumps(settings, indent=4) + "\n"))
    assert vscode.compare_config(path, expected["rules"], **options) == 1.0
    assert metrics_for()["compare_config"](path, expected["rules"], **options) == 1.0
    assert vscode.compare_config_1_0_2(path, expected["rules"], **options) == 0.0


def test_the_references_pick_the_variants() -> None:
    assert metrics_for("osworld", OSWORLD_2026_04)["compare_config"] is vscode.compare_config
    old = metrics_for("osworld", OSWORLD_1_0_2)["compare_config"]
    assert old is vscode.compare_config_1_0_2
    # The "fixed" mode's correction is 2026.04's own code there, and still corrects 1.0.2.
    assert metrics_for("fixed", OSWORLD_2026_04)["compare_config"] is vscode.compare_config
    assert metrics_for("fixed", OSWORLD_1_0_2)["compare_config"] is vscode.compare_config_fixed
    name = "check_python_file_by_test_suite"
    assert metrics_for("osworld", OSWORLD_2026_04)[name] is check_python_file_by_test_suite
    assert metrics_for("osworld", OSWORLD_1_0_2)[name] is check_python_file_by_test_suite


# --- check_python_file_by_test_suite -----------------------------------------------------------


def _agent_files(folder: Path, names: list[str], mark: str) -> list[str]:
    """The agent's files of a task (its ``dest`` names), each module holding ``MARK``."""
    folder.mkdir(parents=True)
    paths = []
    for name in names:
        path = folder / name
        path.write_text(f"MARK = {mark!r}\n")
        paths.append(str(path))
    return paths


def _suite(folder: Path, modules: list[str], mark: str) -> str:
    """A test suite that imports every agent module and passes when each holds ``mark``."""
    imports = "".join(f"    import {m}\n" for m in modules)
    checks = " and ".join(f"{m}.MARK == {mark!r}" for m in modules)
    path = folder / "test_suite.py"
    path.write_text(f"def test():\n{imports}    return {checks}\n")
    return str(path)


def _python_tasks() -> list[tuple[str, list[str], dict[str, Any]]]:
    found = [
        (task, list(result["dest"]), options)
        for task, result, _, options in real_checks("check_python_file_by_test_suite")
    ]
    # Made up where the task files are absent: two games sharing module names, as OSWorld's do.
    return found or [
        ("snake", ["food.py", "main.py", "settings.py", "snake.py"], {}),
        ("tetris", ["block.py", "main.py", "settings.py", "tetris.py"], {}),
    ]


def test_suites_in_a_row_each_import_their_own_modules(tmp_path: Path) -> None:
    """2026.04 drops the modules a run imported: the next task's ``settings`` is its own.

    1.0.2 kept them in its process, so the second game's suite got the first one's
    ``settings`` and ``main`` (``MARK`` of the first task: 0); a suite run first in a process
    scores the same under both, which is what every run here is.
    """
    tasks = _python_tasks()
    shared = set.intersection(*(set(names) for _, names, _ in tasks))
    assert len(tasks) >= 2 and shared, "the games no longer share a module name"
    for round_ in range(2):
        for task, names, options in tasks:
            assert options == {}  # the tasks keep the default test function, ``test``
            folder = tmp_path / f"{round_}-{task}"
            paths = _agent_files(folder / "agent", names, task)
            modules = [Path(n).stem for n in names]
            suite = _suite(folder, modules, task)
            assert check_python_file_by_test_suite(paths, suite, **options) == 1.0


def test_the_same_task_scored_again_sees_the_new_files(tmp_path: Path) -> None:
    """A re-scored task (a retry) imports the agent's current files, not the cached ones.

    1.0.2 would have scored the second, broken answer with the first answer's modules: 1.
    """
    task, names, options = _python_tasks()[0]
    modules = [Path(n).stem for n in names]
    scores = []
    for attempt, mark in enumerate([task, "broken"]):
        folder = tmp_path / str(attempt)
        paths = _agent_files(folder / "agent", names, mark)
        scores.append(check_python_file_by_test_suite(paths, _suite(folder, modules, task)))
    assert scores == [1.0, 0.0]


@pytest.mark.parametrize(
    ("returned", "score"),
    [("True", 1.0), ("False", 0.0), ("0.5", 0.5), ("3", 1.0), ("-1", 0.0), ("'x'", 1.0),
     ("None", 0.0), ("raise ValueError('x')", 0.0)],
)  # fmt: skip
def test_what_a_suite_returns_is_scored_as_before(
    tmp_path: Path, returned: str, score: float
) -> None:
    """Unchanged since 1.0.2: a bool, a number clipped to [0, 1], else truthiness; errors 0."""
    body = returned if returned.startswith("raise") else f"return {returned}"
    suite = tmp_path / "test_suite.py"
    suite.write_text(textwrap.dedent(f"def test():\n    {body}\n"))
    assert check_python_file_by_test_suite([], str(suite)) == score


# --- the vscode_config getter ------------------------------------------------------------------


class StandInClient:
    """A guest that records every call; files by path, answers and failures as told."""

    def __init__(
        self,
        files: dict[str, bytes],
        scan_output: str | None = "",
        failing: dict[str, int] | None = None,
    ) -> None:
        self.files, self.scan_output, self.failing = files, scan_output, failing or {}
        self.calls: list[tuple[Any, ...]] = []

    def _fail(self, route: str) -> None:
        status = self.failing.get(route)
        if status is not None:
            error = GuestAuthError if status == 401 else GuestHTTPError
            raise error(route, status, {"message": "refused"})

    def activate_window(self, name: str, *, strict: bool = False, by_class: bool = False) -> None:
        self.calls.append(("activate_window", name, strict, by_class))
        self._fail("/setup/activate_window")

    def actions(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(("actions", actions))
        self._fail("/actions")
        return {"status": "success", "executed": len(actions)}

    def download(self, path: str) -> bytes:
        self.calls.append(("download", path))
        self._fail("/file")
        if path not in self.files:
            raise GuestHTTPError("/file", 404, {"message": "File not found"})
        return self.files[path]

    def execute(self, command: Any, *, shell: bool = False) -> CommandResult:
        self.calls.append(("execute", command, shell))
        self._fail("/execute")
        return CommandResult(self.scan_output or "", "", 0)


def _vscode_configs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(task, vscode_config getter config, its check's rules) of the task files, or made up."""
    found = [
        (task, result, expected["rules"])
        for task, result, expected, _ in real_checks("compare_config")
        if result.get("type") == "vscode_config"
    ]
    return found or [
        (
            "made-up",
            {"type": "vscode_config", "vscode_extension_command": "OpenProject",
             "path": "/home/user/OpenProject.txt", "dest": "OpenProject.txt"},
            {"expected": "project"},
        )
    ]  # fmt: skip


VSCODE_CONFIGS = [pytest.param(*c, id=c[0]) for c in _vscode_configs()]


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The getter's waits (for the screen to settle, for the file), recorded, not waited."""
    recorded: list[str] = []
    monkeypatch.setattr(getters_vscode, "_settle", lambda ctx: recorded.append("settle"))

    def file_written(ctx: EvalContext, path: str) -> bool:
        recorded.append(f"file {path}")
        return True

    monkeypatch.setattr(getters_vscode, "_file_written", file_written)
    return recorded


def _ctx(tmp_path: Path, client: StandInClient) -> EvalContext:
    return EvalContext(
        client=client,  # type: ignore[arg-type]
        task_id="t",
        cache=AssetCache(tmp_path / "cache", offline=True),
        scratch=tmp_path / "fetched",
    )


def _palette(command: str) -> list[tuple[Any, ...]]:
    return [
        ("actions", [{"kind": "hotkey", "keys": ["ctrl", "shift", "p"]}]),
        ("actions", [{"kind": "type", "text": command}]),
        ("actions", [{"kind": "press", "key": "enter"}]),
    ]


@pytest.mark.parametrize(("task", "config", "rules"), VSCODE_CONFIGS)
def test_vscode_config_written_file(
    tmp_path: Path, waits: list[str], task: str, config: dict, rules: dict
) -> None:
    """The file is there: both fetch it; 2026.04 raised VS Code's window first."""
    files = {config["path"]: rules["expected"].encode()}
    for getter, raised in [
        (getters_vscode.get_vscode_config, True),
        (getters_vscode.get_vscode_config_1_0_2, False),
    ]:
        client = StandInClient(files)
        waits.clear()
        path = getter(_ctx(tmp_path, client), config)
        assert path == str(tmp_path / "fetched" / config["dest"])
        assert Path(path).read_bytes() == files[config["path"]]
        keys = _palette(config["vscode_extension_command"])
        first = [("activate_window", "Visual Studio Code", False, False)] if raised else []
        assert client.calls == [*first, *keys, ("download", config["path"])]
        # Where OSWorld pauses (after raising the window, between the key steps, 1 s for the
        # file), the getter waits for the screen to settle, then for the file.
        steps = ["settle", "settle", f"file {config['path']}"]
        assert waits == (["settle", *steps] if raised else steps)
        assert vscode.compare_config(path, rules) == 1.0


@pytest.mark.parametrize(("task", "config", "rules"), VSCODE_CONFIGS)
@pytest.mark.parametrize(
    ("scan_output", "score"),
    [(_WORKSPACE, 1.0), ('{"folder": "file:///home/user/Documents"}', 0.0), ("", 0.0)],
)
def test_vscode_config_missing_file_falls_back_to_workspace_records(
    tmp_path: Path,
    waits: list[str],
    task: str,
    config: dict,
    rules: dict,
    scan_output: str,
    score: float,
) -> None:
    """No file: 2026.04 reads VS Code's workspace records (``""`` if none); 1.0.2 gives None."""
    client = StandInClient({}, scan_output=scan_output)
    got = getters_vscode.get_vscode_config(_ctx(tmp_path, client), config)
    assert client.calls[-1] == ("execute", getters_vscode.WORKSPACE_SCAN, True)
    if scan_output:
        assert got == str(tmp_path / "fetched" / config["dest"])
        assert Path(got).read_text(encoding="utf-8") == scan_output
    else:
        assert got == ""
    assert vscode.compare_config(got, rules) == score

    old_client = StandInClient({}, scan_output=scan_output)
    assert getters_vscode.get_vscode_config_1_0_2(_ctx(tmp_path, old_client), config) is None
    assert not any(call[0] == "execute" for call in old_client.calls)
    assert vscode.compare_config_1_0_2(None, rules) == 0.0


@pytest.mark.parametrize(("task", "config", "rules"), VSCODE_CONFIGS)
def test_vscode_config_guest_refusals(
    tmp_path: Path, waits: list[str], task: str, config: dict, rules: dict
) -> None:
    """Refused window raising and keys are only logged; a failed scan gives ``""``."""
    files = {config["path"]: rules["expected"].encode()}
    refusing = {"/setup/activate_window": 404, "/actions": 500}
    for getter in (getters_vscode.get_vscode_config, getters_vscode.get_vscode_config_1_0_2):
        path = getter(_ctx(tmp_path, StandInClient(files, failing=refusing)), config)
        assert path is not None and Path(path).read_bytes() == files[config["path"]]
    no_scan = StandInClient({}, failing={"/execute": 500})
    assert getters_vscode.get_vscode_config(_ctx(tmp_path, no_scan), config) == ""
    refused = StandInClient(files, failing={"/setup/activate_window": 401})
    with pytest.raises(GuestAuthError):  # a token refused is no state of the desktop
        getters_vscode.get_vscode_config(_ctx(tmp_path, refused), config)
