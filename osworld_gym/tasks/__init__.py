"""OSWorld tasks as validated, immutable data.

Load tasks with ``load_tasks()`` from a bundled suite name, an ``evaluation_examples``-style
folder, an index JSON, a task file or dicts; every malformed task is reported with its file and
field. The objects keep OSWorld's semantics (``docs/design/task-format.md``) and the original JSON
(``Task.raw``), and summarise what each task needs (``Task.needs``) for support reports.

Example:
    >>> tasks = load_tasks([{"id": "t1", "instruction": "Say hi",
    ...                      "evaluator": {"func": "infeasible"}}])
    >>> tasks["t1"].infeasible, tasks.ids
    (True, ('t1',))
"""

from __future__ import annotations

from osworld_gym.tasks.errors import (
    TaskFormatError,
    TaskSourceNotFoundError,
    UnknownDomainError,
    UnknownSuiteError,
    UnknownTaskError,
)
from osworld_gym.tasks.frozen import FrozenDict, FrozenList, freeze, thaw
from osworld_gym.tasks.loading import SUITES_PACKAGE, TaskSource, available_suites, load_tasks
from osworld_gym.tasks.model import (
    INFEASIBLE,
    Check,
    EvaluatorSpec,
    GetterSpec,
    SetupStep,
    Task,
    TaskNeeds,
)
from osworld_gym.tasks.parse import KNOWN_FIELDS, parse_task
from osworld_gym.tasks.placeholders import (
    PLACEHOLDERS,
    download_cache_name,
    placeholder_values,
    substitute_placeholders,
)
from osworld_gym.tasks.schema import GETTER_TYPES, STEP_TYPES, GetterSchema, StepSchema
from osworld_gym.tasks.taskset import TaskProblem, TaskSet

__all__ = [
    "GETTER_TYPES",
    "INFEASIBLE",
    "KNOWN_FIELDS",
    "PLACEHOLDERS",
    "STEP_TYPES",
    "SUITES_PACKAGE",
    "Check",
    "EvaluatorSpec",
    "FrozenDict",
    "FrozenList",
    "GetterSchema",
    "GetterSpec",
    "SetupStep",
    "StepSchema",
    "Task",
    "TaskFormatError",
    "TaskNeeds",
    "TaskProblem",
    "TaskSet",
    "TaskSource",
    "TaskSourceNotFoundError",
    "UnknownDomainError",
    "UnknownSuiteError",
    "UnknownTaskError",
    "available_suites",
    "download_cache_name",
    "freeze",
    "load_tasks",
    "parse_task",
    "placeholder_values",
    "substitute_placeholders",
    "thaw",
]
