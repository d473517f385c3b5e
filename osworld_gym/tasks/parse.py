"""Validation of one OSWorld task JSON object into a ``Task``.

The rule of thumb: a task that loads here is one OSWorld could run. Each check below mirrors a
place where OSWorld's ``DesktopEnv``/``SetupController`` would crash or misbehave on the task
(``docs/design/task-format.md``), and reports it at load time, naming the field.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from osworld_gym.tasks.errors import TaskFormatError
from osworld_gym.tasks.frozen import MAX_DEPTH, FrozenDict, NotJSONError, freeze, too_deep
from osworld_gym.tasks.model import INFEASIBLE, EvaluatorSpec, GetterSpec, SetupStep, Task
from osworld_gym.tasks.schema import (
    STEP_TYPES,
    check_getter_parameters,
    check_step_parameters,
    show,
)

__all__ = ["KNOWN_FIELDS", "TOO_DEEP_REASON", "parse_task"]

logger = logging.getLogger(__name__)

KNOWN_FIELDS = frozenset(
    {
        "id",
        "instruction",
        "snapshot",
        "source",
        "config",
        "trajectory",
        "related_apps",
        "evaluator",
        "proxy",
        "fixed_ip",
        "possibility_of_env_change",
        "hint",
    }
)
"""Top-level fields OSWorld's task format defines; others are kept in ``Task.raw`` only."""

TOO_DEEP_REASON = (
    f"nested more than {MAX_DEPTH} levels deep (arrays and objects inside one another); "
    "no task needs that, and deeper data cannot be processed safely"
)
"""Why data nested past ``MAX_DEPTH`` is refused."""


class _Reporter:
    """Raises ``TaskFormatError`` for one document (its origin and file)."""

    def __init__(self, origin: str, path: Path | None) -> None:
        self.origin = origin
        self.path = path

    def __call__(self, field: str, reason: str) -> NoReturn:
        raise TaskFormatError(self.origin, field, reason, path=self.path)


def parse_task(
    data: Any, *, origin: str = "<dict>", domain: str | None = None, path: Path | None = None
) -> Task:
    """Validate an OSWorld task JSON object and build a ``Task``.

    Args:
        data: The parsed JSON object.
        origin: How error messages name the data (a file path or a label like ``tasks[3]``).
        domain: The domain to record on the task.
        path: The file the data came from, recorded on the task and the errors.

    Returns:
        The validated, immutable task. Unknown top-level fields are kept in ``raw``.

    Raises:
        TaskFormatError: The data is malformed; the message names ``origin`` and the field.
    """
    fail = _Reporter(origin, path)
    if not isinstance(data, Mapping):
        fail("", f"a task must be a JSON object, got {show(data)}")
    # Before anything walks the data recursively (freeze, show): see MAX_DEPTH.
    deep = too_deep(data)
    if deep is not None:
        fail(deep, TOO_DEEP_REASON)
    try:
        raw = freeze(data)
    except NotJSONError as e:
        fail("", str(e))
    for name in ("id", "instruction", "evaluator"):
        if name not in raw:
            fail(name, "required field is missing")
    unknown = sorted(set(raw) - KNOWN_FIELDS)
    if unknown:
        logger.debug("%s: keeping unknown fields %s in raw", origin, unknown)
    return Task(
        id=_string(raw["id"], "id", fail, nonempty=True),
        instruction=_string(raw["instruction"], "instruction", fail, nonempty=True),
        evaluator=_evaluator(raw["evaluator"], fail),
        config=_steps(raw.get("config", []), "config", fail),
        snapshot=_string(raw.get("snapshot", ""), "snapshot", fail),
        source=_source(raw.get("source", ""), fail),
        related_apps=tuple(_string_list(raw.get("related_apps", []), "related_apps", fail)),
        proxy=_bool(raw.get("proxy", False), "proxy", fail),
        fixed_ip=_bool(raw.get("fixed_ip", False), "fixed_ip", fail),
        possibility_of_env_change=_optional_string(raw, "possibility_of_env_change", fail),
        hint=_optional_string(raw, "hint", fail),
        domain=domain,
        path=path,
        raw=raw,
    )


# --- scalar fields -------------------------------------------------------------------------


def _string(value: Any, where: str, fail: _Reporter, *, nonempty: bool = False) -> str:
    if not isinstance(value, str) or (nonempty and not value.strip()):
        fail(where, f"expected a {'non-empty ' if nonempty else ''}string, got {show(value)}")
    return value


def _optional_string(raw: FrozenDict, name: str, fail: _Reporter) -> str | None:
    return None if name not in raw else _string(raw[name], name, fail)


def _bool(value: Any, where: str, fail: _Reporter) -> bool:
    if not isinstance(value, bool):
        fail(where, f"expected true or false, got {show(value)}")
    return value


def _string_list(value: Any, where: str, fail: _Reporter) -> list[str]:
    if not isinstance(value, list):
        fail(where, f"expected a list of strings, got {show(value)}")
    for index, item in enumerate(value):
        _string(item, f"{where}[{index}]", fail)
    return value


def _source(value: Any, fail: _Reporter) -> str | tuple[str, ...]:
    if isinstance(value, list):
        return tuple(_string_list(value, "source", fail))
    if not isinstance(value, str):
        fail("source", f"expected a string or a list of strings, got {show(value)}")
    return value


def _name(value: Any, where: str, fail: _Reporter, what: str) -> str:
    """A metric, getter or step-type name: OSWorld looks these up as Python attributes."""
    if not isinstance(value, str):
        fail(where, f"expected a {what} name (a string), got {show(value)}")
    if not value.isidentifier():
        fail(where, f"{show(value)} is not a valid {what} name (letters, digits and _ only)")
    return value


# --- setup steps ---------------------------------------------------------------------------


def _steps(value: Any, where: str, fail: _Reporter) -> tuple[SetupStep, ...]:
    if not isinstance(value, list):
        fail(where, f"expected a list of setup steps, got {show(value)}")
    return tuple(_step(item, f"{where}[{index}]", fail) for index, item in enumerate(value))


def _step(value: Any, where: str, fail: _Reporter) -> SetupStep:
    if not isinstance(value, Mapping):
        fail(
            where,
            f'expected a setup step object {{"type": ..., "parameters": ...}}, got {show(value)}',
        )
    if "type" not in value:
        fail(f"{where}.type", "required field is missing")
    step_type = _name(value["type"], f"{where}.type", fail, "setup step type")
    if step_type not in STEP_TYPES:
        close = difflib.get_close_matches(step_type, list(STEP_TYPES), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        fail(
            f"{where}.type",
            f"unknown setup step type {step_type!r}; {hint}known types: {', '.join(STEP_TYPES)}",
        )
    if "parameters" not in value:
        fail(f"{where}.parameters", "required field is missing (use {} for a step without any)")
    for name in value:
        if name not in ("type", "parameters"):
            fail(f"{where}.{name}", "unknown field; a step has only 'type' and 'parameters'")
    check_step_parameters(step_type, value["parameters"], f"{where}.parameters", fail)
    return SetupStep(step_type, value["parameters"])


# --- evaluator -----------------------------------------------------------------------------


def _evaluator(value: Any, fail: _Reporter) -> EvaluatorSpec:
    if not isinstance(value, Mapping):
        fail("evaluator", f"expected an object, got {show(value)}")
    if "func" not in value:
        fail("evaluator.func", "required field is missing")
    func = value["func"]
    conj = value.get("conj", "and")
    if conj not in ("and", "or"):
        fail("evaluator.conj", f'expected "and" or "or", got {show(conj)}')
    postconfig = _steps(value.get("postconfig", []), "evaluator.postconfig", fail)
    if isinstance(func, list):
        return _list_evaluator(value, func, conj, postconfig, fail)
    if not isinstance(func, str):
        fail("evaluator.func", f"expected a string or a list of strings, got {show(func)}")
    name = _name(func, "evaluator.func", fail, "metric")
    if name == INFEASIBLE:
        return EvaluatorSpec((name,), False, conj, (None,), (None,), (FrozenDict(),), postconfig)
    if "result" not in value:
        fail(
            "evaluator.result",
            'required unless func is "infeasible" (the getter of the state the metric judges)',
        )
    result = _getter(value["result"], "evaluator.result", fail)
    expected = None
    if "expected" in value and value["expected"] != {}:
        # OSWorld ignores an empty expected config; null would crash it at evaluation time.
        expected = _getter(value["expected"], "evaluator.expected", fail)
    options = value.get("options", FrozenDict())
    if not isinstance(options, Mapping):
        fail(
            "evaluator.options",
            "expected an object of metric keyword arguments (a list only "
            f"when func is a list), got {show(options)}",
        )
    return EvaluatorSpec((name,), False, conj, (result,), (expected,), (options,), postconfig)


def _list_evaluator(
    value: Mapping[str, Any],
    funcs: list[Any],
    conj: Any,
    postconfig: tuple[SetupStep, ...],
    fail: _Reporter,
) -> EvaluatorSpec:
    if not funcs:
        fail("evaluator.func", "expected at least one metric name, got []")
    names = tuple(_name(f, f"evaluator.func[{i}]", fail, "metric") for i, f in enumerate(funcs))
    if INFEASIBLE in names:
        fail(
            f"evaluator.func[{names.index(INFEASIBLE)}]",
            '"infeasible" must be the whole func (a string), not one metric of a list',
        )
    count = len(names)
    if "result" not in value:
        fail("evaluator.result", f"required: a list of {count} result getters, one per func")
    results = _parallel(value["result"], "result", count, fail)
    if any(r is None for r in results):
        fail(f"evaluator.result[{results.index(None)}]", "expected a getter object, got null")
    expected = _parallel(value.get("expected", []), "expected", count, fail, empty_ok=True)
    options = _parallel_options(value.get("options", []), count, fail)
    return EvaluatorSpec(names, True, conj, results, expected, options, postconfig)


def _parallel(
    value: Any, key: str, count: int, fail: _Reporter, *, empty_ok: bool = False
) -> tuple[GetterSpec | None, ...]:
    where = f"evaluator.{key}"
    if not isinstance(value, list):
        fail(where, f"expected a list of {count} getters (func is a list), got {show(value)}")
    if empty_ok and not value:  # OSWorld reads an empty list as "no expected values"
        return (None,) * count
    if len(value) != count:
        fail(where, f"expected {count} entries, one per func, got {len(value)}")
    return tuple(
        None if item is None else _getter(item, f"{where}[{i}]", fail)
        for i, item in enumerate(value)
    )


def _parallel_options(value: Any, count: int, fail: _Reporter) -> tuple[FrozenDict, ...]:
    if not isinstance(value, list):
        fail(
            "evaluator.options",
            f"expected a list of {count} option objects (func is a list), got {show(value)}",
        )
    if not value:
        return (FrozenDict(),) * count
    if len(value) != count:
        fail("evaluator.options", f"expected {count} entries, one per func, got {len(value)}")
    for index, item in enumerate(value):
        if item is not None and not isinstance(item, Mapping):
            fail(f"evaluator.options[{index}]", f"expected an object or null, got {show(item)}")
    return tuple(item or FrozenDict() for item in value)


def _getter(value: Any, where: str, fail: _Reporter) -> GetterSpec:
    if not isinstance(value, Mapping):
        fail(where, f'expected a getter object {{"type": ..., ...}}, got {show(value)}')
    if "type" not in value:
        fail(f"{where}.type", 'required field is missing (the getter name, e.g. "vm_file")')
    getter_type = _name(value["type"], f"{where}.type", fail, "getter")
    check_getter_parameters(getter_type, value, where, fail)
    return GetterSpec(getter_type, FrozenDict({k: v for k, v in value.items() if k != "type"}))
