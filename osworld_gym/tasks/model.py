"""Typed, immutable task objects: what an OSWorld task JSON says, validated once at load time.

The field meanings follow OSWorld's task format (``docs/design/task-format.md``) and evaluation
semantics (``docs/design/evaluators.md#evaluation-order``). Build these objects with
``osworld_gym.tasks.load_tasks()`` or ``Task.from_dict()``, which validate; the constructors
trust their arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from osworld_gym.tasks.frozen import FrozenDict, thaw

__all__ = ["Check", "EvaluatorSpec", "GetterSpec", "SetupStep", "Task", "TaskNeeds"]

INFEASIBLE = "infeasible"
"""The ``func`` value of tasks that cannot be done: they score 1 only if the agent FAILs."""

Conj = Literal["and", "or"]


@dataclass(frozen=True)
class SetupStep:
    """One step of a task's ``config`` or ``evaluator.postconfig``.

    The step types: ``docs/design/task-format.md#setup-steps``.

    Attributes:
        type: The step type, e.g. ``"download"``, ``"launch"``, ``"execute"``.
        parameters: The step's keyword arguments, as in the JSON (read-only ``dict``).
    """

    type: str
    parameters: FrozenDict = field(default_factory=FrozenDict)

    def to_dict(self) -> dict[str, Any]:
        """The step as plain, mutable JSON data (``{"type": ..., "parameters": {...}}``)."""
        return {"type": self.type, "parameters": thaw(self.parameters)}


@dataclass(frozen=True)
class GetterSpec:
    """A result or expected getter config, e.g. ``{"type": "vm_file", "path": ..., "dest": ...}``.

    Attributes:
        type: The getter type; OSWorld calls ``get_<type>``.
        params: The other keys of the config (read-only ``dict``).
    """

    type: str
    params: FrozenDict = field(default_factory=FrozenDict)

    @property
    def config(self) -> FrozenDict:
        """The whole config as OSWorld getters receive it, ``type`` included."""
        return FrozenDict({"type": self.type, **self.params})

    def to_dict(self) -> dict[str, Any]:
        """The whole config as plain, mutable JSON data."""
        return thaw(self.config)


@dataclass(frozen=True)
class Check:
    """One metric of an evaluator with its getters and options (one slot of the parallel lists).

    Attributes:
        func: The metric name.
        result: The getter of the state to judge (``None`` only for ``infeasible``).
        expected: The getter of the reference, or ``None``: the metric is then called as
            ``metric(result, **options)``.
        options: Keyword arguments of the metric (empty when the JSON has none or ``null``).
    """

    func: str
    result: GetterSpec | None
    expected: GetterSpec | None
    options: FrozenDict


@dataclass(frozen=True)
class EvaluatorSpec:
    """A task's ``evaluator``, normalised to parallel tuples.

    The fields: ``docs/design/task-format.md#evaluator-fields``.

    OSWorld's JSON has two shapes: ``func`` a string with ``result``/``expected``/``options``
    single values, or ``func`` a list with parallel lists of those. Both become tuples here with
    one entry per metric, and ``is_list`` remembers which shape the JSON had (the scoring
    rule of a one-element list is the list rule).

    Attributes:
        funcs: Metric names, in evaluation order; ``("infeasible",)`` for infeasible tasks.
        is_list: Whether ``func`` was a list in the JSON.
        conj: How list scores combine: ``"and"`` (0 at the first 0, else the mean) or ``"or"``
            (1 at the first 1, else the max). OSWorld's default is ``"and"``.
        results: Result getter per metric; ``None`` only for ``infeasible``.
        expected: Expected getter per metric, ``None`` where a metric takes no reference.
        options: Metric keyword arguments per metric. OSWorld treats a missing or ``null``
            entry as ``{}`` (``opt if opt else {}``), and so does this: entries are never ``None``.
        postconfig: Steps run before the getters read the state (save files, close apps, ...).
    """

    funcs: tuple[str, ...]
    is_list: bool = False
    conj: Conj = "and"
    results: tuple[GetterSpec | None, ...] = ()
    expected: tuple[GetterSpec | None, ...] = ()
    options: tuple[FrozenDict, ...] = ()
    postconfig: tuple[SetupStep, ...] = ()

    @property
    def infeasible(self) -> bool:
        """Whether this is an infeasible task (scored by whether the last action is FAIL)."""
        return not self.is_list and self.funcs == (INFEASIBLE,)

    @property
    def checks(self) -> tuple[Check, ...]:
        """The metrics with their getters and options, one ``Check`` per metric."""
        if self.infeasible:
            return ()
        return tuple(
            Check(func, result, expected, options)
            for func, result, expected, options in zip(
                self.funcs, self.results, self.expected, self.options, strict=True
            )
        )

    def getters(self) -> Iterator[GetterSpec]:
        """All result and expected getters, in slot order (results first within each slot)."""
        for result, expected in zip(self.results, self.expected, strict=True):
            if result is not None:
                yield result
            if expected is not None:
                yield expected


@dataclass(frozen=True)
class TaskNeeds:
    """What a task requires, derived from its JSON: the input of a support report.

    Attributes:
        setup_steps: Step types used in ``config`` and ``evaluator.postconfig``.
        getters: Getter types used by the evaluator.
        metrics: Metric names used by the evaluator (``infeasible`` is not a metric).
        infeasible: Whether the task is infeasible (needs no getter or metric at all).
        proxy: Whether OSWorld runs the task behind a proxy (sites that block bots).
        fixed_ip: Whether the task needs OSWorld's fixed-IP set-up (the Google Drive tasks).
        urls: URLs fetched on the host: ``download`` steps and ``cloud_file`` getters (not
            those with a ``local_path``, a file beside the task). With these in the asset
            cache, such tasks run offline.
    """

    setup_steps: frozenset[str]
    getters: frozenset[str]
    metrics: frozenset[str]
    infeasible: bool
    proxy: bool
    fixed_ip: bool
    urls: frozenset[str]


@dataclass(frozen=True, repr=False)
class Task:
    """One OSWorld task: the instruction, how to set the desktop up, and how to score it.

    Attributes:
        id: Unique task id (a UUID in OSWorld; equal to the file name's stem).
        instruction: The natural-language task given to the agent.
        snapshot: OSWorld's informal label of the start state (unused by OSWorld's code).
        source: Provenance URL (or URLs).
        config: Setup steps run at reset, in order.
        evaluator: How the final state is scored.
        related_apps: Free-form app tags.
        proxy: Whether OSWorld runs it behind a proxy.
        fixed_ip: Whether it needs OSWorld's fixed-IP (Google Drive) set-up.
        possibility_of_env_change: ``"low"``/``"medium"``/``"high"``; ``None`` when absent.
        hint: Extra text some tasks carry (not shown to agents by OSWorld).
        domain: The domain folder or index key it was loaded under (``"os"``, ``"chrome"``),
            ``None`` for in-memory tasks.
        path: The file it was loaded from, ``None`` for in-memory tasks.
        raw: The original JSON object, verbatim (read-only; unknown fields are kept here).
    """

    id: str
    instruction: str
    evaluator: EvaluatorSpec
    config: tuple[SetupStep, ...] = ()
    snapshot: str = ""
    source: str | tuple[str, ...] = ""
    related_apps: tuple[str, ...] = ()
    proxy: bool = False
    fixed_ip: bool = False
    possibility_of_env_change: str | None = None
    hint: str | None = None
    domain: str | None = None
    path: Path | None = field(default=None, compare=False)
    raw: FrozenDict = field(default_factory=FrozenDict)

    @classmethod
    def from_dict(cls, data: Any, *, origin: str = "<dict>", domain: str | None = None) -> Task:
        """Validate an OSWorld task JSON object and build a ``Task`` from it.

        Args:
            data: The parsed JSON object.
            origin: How error messages name the data (a file path or a label).
            domain: The domain to record on the task.

        Returns:
            The task.

        Raises:
            TaskFormatError: The data is malformed; the message names ``origin`` and the field.
        """
        from osworld_gym.tasks.parse import parse_task  # parse imports this module

        return parse_task(data, origin=origin, domain=domain)

    @property
    def infeasible(self) -> bool:
        """Whether the task is infeasible (the agent should answer FAIL)."""
        return self.evaluator.infeasible

    @property
    def task_dir(self) -> Path | None:
        """The folder of the task file (relative asset paths resolve against it)."""
        return None if self.path is None else self.path.parent

    @property
    def needs(self) -> TaskNeeds:
        """A summary of what the task requires (step types, getters, metrics, host URLs)."""
        steps = self.config + self.evaluator.postconfig
        getters = tuple(self.evaluator.getters())
        urls = {
            str(item["url"])
            for step in steps
            if step.type == "download"
            for item in step.parameters.get("files", ())
        }
        for getter in getters:
            # A cloud_file with a local_path reads a host file beside the task: no URL.
            if getter.type == "cloud_file" and "local_path" not in getter.params:
                path = getter.params.get("path")
                urls.update([path] if isinstance(path, str) else [str(p) for p in path or ()])
        return TaskNeeds(
            setup_steps=frozenset(step.type for step in steps),
            getters=frozenset(getter.type for getter in getters),
            metrics=frozenset(check.func for check in self.evaluator.checks),
            infeasible=self.infeasible,
            proxy=self.proxy,
            fixed_ip=self.fixed_ip,
            urls=frozenset(urls),
        )

    def to_dict(self) -> dict[str, Any]:
        """The original JSON object as plain, mutable data (equal to what was loaded)."""
        return thaw(self.raw)

    def __repr__(self) -> str:
        text = self.instruction if len(self.instruction) <= 60 else self.instruction[:57] + "..."
        return f"Task(id={self.id!r}, domain={self.domain!r}, instruction={text!r})"
