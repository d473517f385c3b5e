"""``load_tasks`` sources: folders, index files, task files, dicts, task sets and suites."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from tasks_support import make_list_task, make_task, write_examples, write_json

import osworld_gym
from osworld_gym.tasks import (
    Task,
    TaskFormatError,
    TaskSet,
    TaskSourceNotFoundError,
    UnknownDomainError,
    UnknownSuiteError,
    UnknownTaskError,
    available_suites,
    load_tasks,
)


@pytest.fixture()
def examples(tmp_path: Path) -> Path:
    """An evaluation_examples-style folder with two domains, an index, and folders to ignore."""
    root = write_examples(
        tmp_path / "evaluation_examples",
        {"os": [make_task("os-2"), make_task("os-1")], "chrome": [make_list_task("ch-1")]},
    )
    write_json(root / "test_all.json", {"os": ["os-1", "os-2"], "chrome": ["ch-1"]})
    write_json(root / "test_small.json", {"chrome": ["ch-1"]})
    write_json(root / "settings" / "googledrive" / "client.json", {"not": "a task"})
    write_json(root / "examples_windows" / "word" / "os-1.json", make_task("os-1"))
    return root


def test_evaluation_examples_folder(examples: Path) -> None:
    tasks = load_tasks(examples)
    assert tasks.ids == ("ch-1", "os-1", "os-2")  # domains and files sorted by name
    assert tasks.domains == ("chrome", "os")
    assert tasks["os-1"].path == examples / "examples" / "os" / "os-1.json"
    assert tasks["os-1"].task_dir == examples / "examples" / "os"
    assert load_tasks(str(examples)) == tasks  # a path given as a string
    assert load_tasks(examples / "examples") == tasks  # the examples/ folder itself


def test_plain_folder_with_domains_and_loose_task_files(tmp_path: Path) -> None:
    write_json(tmp_path / "calc" / "c1.json", make_task("c1"))
    write_json(tmp_path / "loose.json", make_task("loose"))
    write_json(tmp_path / "index.json", {"calc": ["c1"]})  # an index beside tasks is skipped
    tasks = load_tasks(tmp_path)
    assert tasks.ids == ("c1", "loose")
    assert (tasks["c1"].domain, tasks["loose"].domain) == ("calc", None)


def test_index_file_resolves_against_its_folder(examples: Path) -> None:
    tasks = load_tasks(examples / "test_all.json")
    assert tasks.ids == ("os-1", "os-2", "ch-1")  # index order
    assert load_tasks(examples / "test_small.json").ids == ("ch-1",)
    assert tasks["ch-1"].domain == "chrome"


def test_index_without_examples_folder(tmp_path: Path) -> None:
    write_json(tmp_path / "os" / "a.json", make_task("a"))
    write_json(tmp_path / "mine.json", {"os": ["a"]})
    assert load_tasks(tmp_path / "mine.json").ids == ("a",)


def test_single_task_file(examples: Path, tmp_path: Path) -> None:
    (task,) = load_tasks(examples / "examples" / "os" / "os-1.json")
    assert (task.id, task.domain) == ("os-1", "os")
    loose = write_json(tmp_path / "t.json", make_task("t"))
    assert load_tasks(loose)[0].domain is None  # not under an examples*/<domain>/ folder


def test_file_holding_a_list_of_tasks(tmp_path: Path) -> None:
    path = write_json(tmp_path / "many.json", [make_task("a"), make_task("b")])
    assert load_tasks(path).ids == ("a", "b")


def test_in_memory_sources() -> None:
    one = make_task("a")
    assert load_tasks(one).ids == ("a",)
    tasks = load_tasks([one, make_task("b")])
    assert tasks.ids == ("a", "b") and tasks[0].domain is None and tasks[0].path is None
    assert load_tasks(tasks) == tasks  # a TaskSet passes through
    assert load_tasks(tasks[1]).ids == ("b",)  # so does a Task
    assert load_tasks([tasks[0], make_task("c")]).ids == ("a", "c")  # mixed Tasks and dicts
    assert load_tasks([]) == TaskSet()


def test_task_from_dict_is_load_tasks_of_one() -> None:
    assert Task.from_dict(make_task("a")) == load_tasks(make_task("a"))[0]


def test_domain_filter(examples: Path) -> None:
    assert load_tasks(examples, domain="os").ids == ("os-1", "os-2")
    assert load_tasks(examples / "test_all.json", domain=["chrome"]).ids == ("ch-1",)
    with pytest.raises(UnknownDomainError) as info:
        load_tasks(examples, domain="o")
    assert "unknown domain 'o'" in str(info.value) and "available: chrome, os" in str(info.value)
    with pytest.raises(UnknownDomainError, match="did you mean 'chrome'"):
        load_tasks(examples / "test_all.json", domain="chrom")


def test_domain_filter_skips_other_domains_files(examples: Path) -> None:
    (examples / "examples" / "chrome" / "ch-1.json").write_text("not json")
    assert len(load_tasks(examples, domain="os")) == 2


def test_domain_filter_on_dicts_uses_the_task_domain(examples: Path) -> None:
    tasks = load_tasks(examples)
    assert load_tasks(tasks, domain="chrome").ids == ("ch-1",)
    with pytest.raises(UnknownDomainError):
        load_tasks([make_task("a")], domain="os")  # in-memory dicts have no domain


def test_ids_filter_keeps_the_requested_order(examples: Path) -> None:
    assert load_tasks(examples, ids=["os-2", "ch-1", "os-2"]).ids == ("os-2", "ch-1")
    with pytest.raises(UnknownTaskError, match="unknown task id 'os-3'; did you mean"):
        load_tasks(examples, ids=["os-3"])


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(TaskSourceNotFoundError, match="does not exist"):
        load_tasks(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError):  # it is one, too
        load_tasks(str(tmp_path / "nope"))


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="no task files found; expected examples/"):
        load_tasks(tmp_path)


def test_unsupported_source_type() -> None:
    with pytest.raises(TypeError, match="tasks source must be .*got int"):
        load_tasks(3)  # type: ignore[arg-type]


# --- bundled suites ------------------------------------------------------------------------


@pytest.fixture()
def suites(tmp_path: Path) -> Path:
    """A suites root like the osworld_gym_envs package, with two suites and non-suite folders."""
    root = tmp_path / "suites"
    write_examples(root / "offline", {"os": [make_task("s1")], "calc": [make_task("s2")]})
    write_json(root / "offline" / "examples" / "os" / "assets" / "data.json", {"x": 1})
    write_json(root / "tiny" / "files" / "t1.json", make_task("t1"))
    (root / "__pycache__").mkdir()
    (root / "_private").mkdir()
    return root


def test_suite_by_name(suites: Path) -> None:
    assert available_suites(suites) == ("offline", "tiny")
    tasks = load_tasks("offline", suites_root=suites)
    assert tasks.ids == ("s2", "s1") and tasks.domains == ("calc", "os")
    assert load_tasks("tiny", suites_root=suites).ids == ("t1",)


def test_unknown_suite_lists_the_available_ones(suites: Path) -> None:
    with pytest.raises(UnknownSuiteError) as info:
        load_tasks("ofline", suites_root=suites)
    message = str(info.value)
    assert message.startswith("unknown suite 'ofline'; did you mean 'offline'?")
    assert "available: offline, tiny" in message
    assert "a path to a folder, index JSON or task JSON works too" in message
    assert isinstance(info.value, KeyError)


def test_empty_suite_name(suites: Path) -> None:
    with pytest.raises(UnknownSuiteError, match="unknown suite ''.*available: offline, tiny"):
        load_tasks("", suites_root=suites)


def test_no_suites_at_all(tmp_path: Path) -> None:
    with pytest.raises(UnknownSuiteError, match="there are no suites to choose from"):
        load_tasks("offline", suites_root=tmp_path / "missing")


def test_suite_folder_without_tasks(suites: Path) -> None:
    (suites / "empty").mkdir()
    with pytest.raises(TaskFormatError, match="no task files found"):
        load_tasks("empty", suites_root=suites)


def test_installed_suites_package_is_the_default_root() -> None:
    # Today the package ships no suite; whatever it ships must load.
    for name in available_suites():
        assert len(load_tasks(name)) > 0
    with pytest.raises(UnknownSuiteError, match="unknown suite 'no-such-suite'"):
        load_tasks("no-such-suite")


def test_a_suite_name_wins_over_a_folder_of_that_name(
    suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(tmp_path / "cwd" / "tiny" / "os" / "other.json", make_task("other"))
    monkeypatch.chdir(tmp_path / "cwd")
    assert load_tasks("tiny", suites_root=suites).ids == ("t1",)
    assert load_tasks(os.path.join(".", "tiny"), suites_root=suites).ids == ("other",)


# --- logging and the public entry point ----------------------------------------------------


def test_loading_logs_counts(examples: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="osworld_gym.tasks"):
        load_tasks(examples)
    assert any("loaded 3 tasks" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(
    not hasattr(osworld_gym, "load_tasks"),
    reason="osworld_gym.load_tasks is not exported yet (one line in osworld_gym/__init__.py)",
)
def test_public_entry_point(examples: Path) -> None:
    assert osworld_gym.load_tasks(examples) == load_tasks(examples)
