"""``load_tasks``: OSWorld task sources (folders, index files, task files, dicts, suites) to tasks.

Layouts understood (``docs/design/task-format.md#files-and-index``):

* an ``evaluation_examples``-style folder: ``<folder>/examples/<domain>/<id>.json`` (index files
  and other folders beside ``examples/``, such as ``settings/`` or ``examples_windows/``, are not
  read; load ``<folder>/examples_windows`` itself for the Windows tasks);
* a plain folder: ``<folder>/<domain>/<id>.json``, plus task files directly in ``<folder>``
  (domain ``None``);
* an index file ``{"<domain>": ["<id>", ...]}``: each task is read from
  ``<index folder>/examples/<domain>/<id>.json`` as OSWorld's runners do (or from
  ``<index folder>/<domain>/<id>.json`` when there is no ``examples/``);
* a task file (one task object, or a list of them);
* a bundled suite name: a sub-folder of the installed ``osworld_gym_envs`` data package.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

from osworld_gym.tasks.errors import (
    TaskFormatError,
    TaskSourceNotFoundError,
    UnknownDomainError,
    UnknownSuiteError,
)
from osworld_gym.tasks.frozen import too_deep
from osworld_gym.tasks.model import Task
from osworld_gym.tasks.parse import KNOWN_FIELDS, TOO_DEEP_REASON, parse_task
from osworld_gym.tasks.schema import show
from osworld_gym.tasks.taskset import TaskProblem, TaskSet

__all__ = ["SUITES_PACKAGE", "TaskSource", "available_suites", "load_tasks"]

logger = logging.getLogger(__name__)

SUITES_PACKAGE = "osworld_gym_envs"
"""The installed data package whose sub-folders are the bundled task suites."""

TaskSource: TypeAlias = (
    "str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any] | Task] "
    "| Task | TaskSet"
)
"""Everything ``load_tasks()`` accepts as ``source``."""


def load_tasks(
    source: TaskSource,
    *,
    domain: str | Iterable[str] | None = None,
    ids: Iterable[str] | None = None,
    errors: Literal["raise", "collect"] = "raise",
    suites_root: str | os.PathLike[str] | None = None,
) -> TaskSet:
    """Load and validate OSWorld tasks.

    Args:
        source: A bundled suite name, a folder (``evaluation_examples``-style or plain), an
            index JSON file, a task JSON file, a task dict, a list of task dicts (or
            ``Task`` objects), or a ``Task``/``TaskSet``.
        domain: Only tasks of this domain (or these domains).
        ids: Only these task ids, in this order.
        errors: ``"raise"`` stops at the first malformed task; ``"collect"`` skips malformed
            tasks and lists them in the result's ``problems`` as ``(path, message)`` pairs.
        suites_root: Folder holding the suites, instead of the installed ``osworld_gym_envs``
            package (for tests and for suites kept outside the package).

    Returns:
        The tasks, in source order (folder loads: domains and files sorted by name).

    Raises:
        TaskFormatError: A task or index file is malformed (with ``errors="raise"``), two task
            files share an id, or a folder holds no task files.
        TaskSourceNotFoundError: ``source`` is a path that does not exist.
        UnknownSuiteError: ``source`` is a name that is neither a suite nor a path.
        UnknownDomainError: A requested domain has no tasks in the source.
        UnknownTaskError: A requested id is not in the source.
        TypeError: ``source`` is of an unsupported type.
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', got {errors!r}")
    wanted = None if domain is None else ({domain} if isinstance(domain, str) else set(domain))
    loader = _Loader(collect=errors == "collect", domains=wanted)
    tasks = loader.load(source, suites_root)
    result = TaskSet(tasks, problems=loader.problems)
    if wanted is not None and not loader.filtered_domains:
        result = result.filter(domain=wanted)  # in-memory sources: domains known only now
    if ids is not None:
        result = result.filter(ids=ids)
    if loader.problems:
        logger.warning("skipped %d malformed tasks of %s", len(loader.problems), _describe(source))
    logger.info("loaded %d tasks from %s", len(result), _describe(source))
    return result


def available_suites(suites_root: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """Names of the bundled task suites (sub-folders of the suites package), sorted."""
    root = _suites_root(suites_root)
    if root is None or not root.is_dir():
        return ()
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and _visible(p.name)))


def _suites_root(suites_root: str | os.PathLike[str] | None) -> Path | None:
    if suites_root is not None:
        return Path(suites_root)
    try:
        files = importlib.resources.files(SUITES_PACKAGE)
    except ModuleNotFoundError:
        logger.debug("package %s is not installed: no bundled suites", SUITES_PACKAGE)
        return None
    # The package is installed unzipped (zip_safe = False), so this is a real folder.
    return Path(os.fspath(files)) if isinstance(files, os.PathLike) else None


def _visible(name: str) -> bool:
    return not name.startswith((".", "_"))


def _describe(source: object) -> str:
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    return type(source).__name__


Loaded: TypeAlias = "list[tuple[str, Task]]"
"""Tasks with the label (relative path or ``tasks[i]``) their messages name them by."""


class _Loader:
    """One ``load_tasks`` call: the error policy, the domain filter and what went wrong."""

    def __init__(self, *, collect: bool, domains: set[str] | None) -> None:
        self.collect = collect
        self.domains = domains
        self.filtered_domains = False  # set once a folder or index applied the domain filter
        self.problems: list[TaskProblem] = []

    def load(self, source: Any, suites_root: str | os.PathLike[str] | None) -> list[Task]:
        if isinstance(source, TaskSet):
            self.problems.extend(source.problems)
            return self._unique([(_label_of(t), t) for t in source])
        if isinstance(source, Task):
            return [source]
        if isinstance(source, str):
            source = _resolve_name(source, suites_root)
        if isinstance(source, os.PathLike):
            return self._unique(self._path(_existing(Path(source).expanduser())))
        if isinstance(source, Mapping):
            return self._unique(self._dicts([source], single=True))
        if isinstance(source, Sequence):
            return self._unique(self._dicts(source, single=False))
        raise TypeError(
            "tasks source must be a suite name, a path to a folder, index JSON or task JSON, "
            f"a task dict, a list of task dicts, or a TaskSet; got {type(source).__name__}"
        )

    # --- error policy ------------------------------------------------------------------------

    def _guard(self, label: str, build: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``build``; in collect mode a TaskFormatError becomes a problem (and ``None``)."""
        try:
            return build(*args, **kwargs)
        except TaskFormatError as e:
            if not self.collect:
                raise
            logger.debug("skipping %s: %s", label, e)
            self.problems.append(TaskProblem(label, str(e)))
            return None

    def _add(self, loaded: Loaded, label: str, build: Any, *args: Any, **kwargs: Any) -> None:
        task = self._guard(label, build, *args, **kwargs)
        if task is not None:
            loaded.append((label, task))

    def _unique(self, loaded: Loaded) -> list[Task]:
        first_label: dict[str, str] = {}
        kept = []
        for label, task in loaded:
            if task.id in first_label:
                reason = f"duplicate task id {task.id!r}, already used by {first_label[task.id]}"
                self._guard(label, _raise, TaskFormatError(label, "id", reason, path=task.path))
                continue
            first_label[task.id] = label
            kept.append(task)
        return kept

    # --- in-memory data ----------------------------------------------------------------------

    def _dicts(self, items: Sequence[Any], *, single: bool) -> Loaded:
        loaded: Loaded = []
        for index, item in enumerate(items):
            label = "<dict>" if single else f"tasks[{index}]"
            if isinstance(item, Task):
                loaded.append((label, item))
            elif _looks_like_index(item):
                reason = (
                    "this looks like an index {domain: [ids]}, not a task; pass the index "
                    "file's path instead"
                )
                self._guard(label, _raise, TaskFormatError(label, "", reason))
            else:
                self._add(loaded, label, parse_task, item, origin=label)
        return loaded

    # --- files and folders -------------------------------------------------------------------

    def _path(self, path: Path) -> Loaded:
        if path.is_dir():
            return self._folder(path)
        label = str(path)
        data = self._guard(label, _read_json, path, label)
        if _looks_like_index(data):
            return self._index(path, data)
        domain = path.parent.name if path.parent.parent.name.startswith("examples") else None
        loaded: Loaded = []
        if isinstance(data, list):
            for i, item in enumerate(data):
                self._add(
                    loaded,
                    f"{label}[{i}]",
                    parse_task,
                    item,
                    origin=f"{label}[{i}]",
                    domain=domain,
                    path=path.resolve(),
                )
        elif data is not None:
            self._add(loaded, label, _task_from_file, path, label, data, domain)
        return loaded

    def _folder(self, folder: Path) -> Loaded:
        base = folder / "examples" if (folder / "examples").is_dir() else folder
        domain_dirs = {
            p.name: p
            for p in sorted(base.iterdir())
            if p.is_dir() and _visible(p.name) and any(p.glob("*.json"))
        }
        chosen = self._choose_domains(domain_dirs)
        files = [(name, f) for name in chosen for f in sorted(domain_dirs[name].glob("*.json"))]
        if base is folder and self.domains is None:
            files += [(None, f) for f in sorted(folder.glob("*.json"))]
        if not files:
            raise TaskFormatError(
                str(folder),
                "",
                "no task files found; expected "
                "examples/<domain>/<id>.json, <domain>/<id>.json or <id>.json",
            )
        loaded: Loaded = []
        for domain, file in files:
            label = file.relative_to(folder).as_posix()
            data = self._guard(label, _read_json, file, label)
            if data is None:
                continue
            if domain is None and _looks_like_index(data):
                logger.debug("%s: an index file, not a task; skipped in folder loads", label)
                continue
            self._add(loaded, label, _task_from_file, file, label, data, domain)
        return loaded

    def _index(self, index: Path, data: Mapping[str, Any]) -> Loaded:
        base = index.parent / "examples"
        base = base if base.is_dir() else index.parent
        loaded: Loaded = []
        listed: dict[str, str] = {}
        for domain in self._choose_domains(data):
            entries = data[domain]
            if not isinstance(entries, list):
                reason = f"expected a list of task ids, got {show(entries)}"
                self._guard(index.name, _raise, TaskFormatError(index.name, domain, reason))
                continue
            for position, task_id in enumerate(entries):
                where = f"{domain}[{position}]"
                if not isinstance(task_id, str) or not task_id:
                    reason = f"expected a task id (a non-empty string), got {show(task_id)}"
                elif task_id in listed:
                    reason = f"task id {task_id!r} is listed twice (also at {listed[task_id]})"
                elif not (base / domain / f"{task_id}.json").is_file():
                    file = base / domain / f"{task_id}.json"
                    reason = f"no task file {file.relative_to(index.parent).as_posix()}"
                else:
                    listed[task_id] = where
                    file = base / domain / f"{task_id}.json"
                    label = file.relative_to(index.parent).as_posix()
                    payload = self._guard(label, _read_json, file, label)
                    if payload is not None:
                        self._add(loaded, label, _task_from_file, file, label, payload, domain)
                    continue
                self._guard(index.name, _raise, TaskFormatError(index.name, where, reason))
        return loaded

    def _choose_domains(self, available: Mapping[str, Any]) -> list[str]:
        names = list(available)
        if self.domains is None:
            return names
        self.filtered_domains = True
        for name in sorted(self.domains - set(names)):
            raise UnknownDomainError(name, names)
        return [name for name in names if name in self.domains]


def _resolve_name(text: str, suites_root: str | os.PathLike[str] | None) -> Path:
    """A string source: a bundled suite name when it names one, else a path."""
    bare = "/" not in text and os.sep not in text and not text.endswith(".json")
    if bare and text not in (".", ".."):
        suites = available_suites(suites_root)
        if text in suites:
            root = _suites_root(suites_root)
            assert root is not None  # available_suites found it there
            return root / text
        if not text or not Path(text).exists():
            where = f"in {_suites_root(suites_root) or SUITES_PACKAGE + ' (not installed)'}"
            raise UnknownSuiteError(
                text,
                suites,
                hint=f"suites are looked up {where}; a path to a folder, "
                "index JSON or task JSON works too",
            )
    return Path(text)


def _existing(path: Path) -> Path:
    if not path.exists():
        raise TaskSourceNotFoundError(
            f"task source {os.fspath(path)!r} does not exist (expected a folder, an index JSON "
            "or a task JSON file)"
        )
    return path


def _read_json(path: Path, label: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TaskFormatError(label, "", f"cannot read the file: {e}", path=path) from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TaskFormatError(
            label, "", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", path=path
        ) from e
    except ValueError as e:  # a number past Python's limit on integer digits
        raise TaskFormatError(label, "", f"invalid JSON: {e}", path=path) from e
    except RecursionError as e:  # json's parser recurses once per level of nesting
        raise TaskFormatError(label, "", TOO_DEEP_REASON, path=path) from e
    # Index files and lists of tasks are walked before parse_task sees them: check here too.
    deep = too_deep(data)
    if deep is not None:
        raise TaskFormatError(label, deep, TOO_DEEP_REASON, path=path)
    return data


def _task_from_file(path: Path, label: str, data: Any, domain: str | None) -> Task:
    task = parse_task(data, origin=label, domain=domain, path=path.resolve())
    if task.id != path.stem:
        raise TaskFormatError(
            label,
            "id",
            f"{show(task.id)} differs from the file name {path.name!r}; index files "
            "find tasks by file name, so rename the file or fix the id",
            path=path,
        )
    return task


def _looks_like_index(data: Any) -> bool:
    """``{domain: [ids]}``: an object without task fields whose values include a list."""
    return (
        isinstance(data, Mapping)
        and not KNOWN_FIELDS.intersection(data)
        and any(isinstance(v, list) for v in data.values())
    )


def _label_of(task: Task) -> str:
    return str(task.path) if task.path is not None else f"<task {task.id}>"


def _raise(error: Exception) -> Any:
    raise error
