"""Which tasks this package can run and score, and what each other one lacks.

A task is *fully supported* when every setup step type of its ``config`` and ``postconfig``
runs here, every getter and metric of its evaluator is implemented (with the options it
passes), and it needs nothing outside a desktop (no proxy, no Google account set-up). Assets
fetched by URL (``download`` steps, ``cloud_file`` getters) are not a lack: they run from the
asset cache, or are downloaded where the network allows; the report says how many each needs.
Nor is an application: the report is about this package; whether the desktop has the task's
apps (GIMP, Thunderbird, VS Code... are not on the `local` provider) depends on the provider.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from osworld_gym.evaluation.getters import GETTERS, getters_for
from osworld_gym.evaluation.metrics import (
    METRICS,
    metrics_for,
    unknown_to_reference,
    unsupported_options,
)
from osworld_gym.evaluation.references import DEFAULT_REFERENCE
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.interpreter import NEEDS, SUPPORTED_STEP_TYPES
from osworld_gym.tasks import Task

# Getters that only read files or command output from the desktop, or rules.
FILE_AND_COMMAND_GETTERS = frozenset(
    {
        "vm_file",
        "cloud_file",
        "rule",
        "vm_command_line",
        "vm_command_error",
        "cache_file",
        "list_directory",
        "content_from_vm_file",
        "vlc_config",
        "gimp_config_file",
    }
)


@dataclass(frozen=True)
class TaskSupport:
    """Whether one task is fully supported, and if not, what it lacks.

    Attributes:
        task_id: The task.
        domain: Its domain.
        lacks: What is missing, one readable item each (empty when fully supported).
        urls: How many assets the task fetches by URL (cacheable).
        file_and_command_checks: Its checks only read files, command output or rules.
        warnings: What of its evaluator the evaluator reference's code ignores (an option):
            it is scored, as that code scores it, which may not be what the file means.
    """

    task_id: str
    domain: str | None
    lacks: tuple[str, ...]
    urls: int
    file_and_command_checks: bool
    warnings: tuple[str, ...] = ()

    @property
    def supported(self) -> bool:
        """True when nothing is missing."""
        return not self.lacks


def task_support(task: Task, reference: str = DEFAULT_REFERENCE) -> TaskSupport:
    """Check one task against the implemented step types, getters and metrics.

    Args:
        task: The task.
        reference: The evaluator reference it would be scored under
            (``osworld_gym.evaluation.references``): a metric or getter that reference's
            code lacks is a lack, an option it ignores a warning.
    """
    needs = task.needs
    metrics, getters = metrics_for("osworld", reference), getters_for(reference)
    lacks: list[str] = []
    warnings: list[str] = []
    for step_type in sorted(needs.setup_steps - SUPPORTED_STEP_TYPES):
        lacks.append(
            f"setup step {step_type!r} (needs {NEEDS.get(step_type, 'an implementation')})"
        )
    lacks += [_lack("getter", g, GETTERS, reference) for g in sorted(needs.getters - set(getters))]
    lacks += [_lack("metric", m, METRICS, reference) for m in sorted(needs.metrics - set(metrics))]
    for check in task.evaluator.checks:
        if check.func in metrics:
            lacks += unsupported_options(check.func, dict(check.options))
            warnings += unknown_to_reference(check.func, dict(check.options), reference)
    if task.proxy:
        lacks.append("a proxy (the task's sites block bots)")
    if task.fixed_ip:
        lacks.append("OSWorld's fixed-IP Google Drive set-up")
    file_checks = needs.infeasible or needs.getters <= FILE_AND_COMMAND_GETTERS
    return TaskSupport(
        task.id,
        task.domain,
        tuple(dict.fromkeys(lacks)),
        len(needs.urls),
        file_checks,
        tuple(dict.fromkeys(warnings)),
    )


def _lack(kind: str, name: str, implemented: Iterable[str], reference: str) -> str:
    """A missing getter or metric; one we have but the reference's code lacks says so."""
    if name in implemented:
        return f"{kind} {name!r} (not in {reference}'s code)"
    return f"{kind} {name!r}"


def support_report(tasks: Iterable[Task], reference: str = DEFAULT_REFERENCE) -> list[TaskSupport]:
    """``task_support()`` for every task, in order."""
    return [task_support(task, reference) for task in tasks]


def format_report(
    report: list[TaskSupport], cache: AssetCache | None = None, verbose: bool = True
) -> str:
    """A human-readable report: per-task lacks, per-domain counts, the commonest lacks."""
    lines = []
    if verbose:
        for item in report:
            if not item.supported:
                lines.append(f"{item.domain}/{item.task_id}: lacks {'; '.join(item.lacks)}")
            if item.warnings:
                lines.append(f"{item.domain}/{item.task_id}: warning: {'; '.join(item.warnings)}")
    by_domain: dict[str, list[TaskSupport]] = {}
    for item in report:
        by_domain.setdefault(item.domain or "-", []).append(item)
    lines.append("")
    lines.append(f"{'domain':<22} {'tasks':>6} {'supported':>10} {'file/command checks':>20}")
    for domain, items in sorted(by_domain.items()):
        file_checks = [i for i in items if i.file_and_command_checks]
        lines.append(
            f"{domain:<22} {len(items):>6} {sum(i.supported for i in items):>10} "
            f"{sum(i.supported for i in file_checks):>9} of {len(file_checks):<9}"
        )
    file_checks = [i for i in report if i.file_and_command_checks]
    lines.append(
        f"{'all':<22} {len(report):>6} {sum(i.supported for i in report):>10} "
        f"{sum(i.supported for i in file_checks):>9} of {len(file_checks):<9}"
    )
    common = Counter(lack for item in report for lack in item.lacks).most_common(12)
    if common:
        lines.append("")
        lines.append("most common lacks:")
        lines += [f"  {count:>4}  {lack}" for lack, count in common]
    warned = Counter(warning for item in report for warning in item.warnings)
    if warned:
        lines.append("")
        lines.append("warnings (scored as the evaluator reference's code scores them):")
        lines += [f"  {count:>4}  {warning}" for warning, count in warned.most_common()]
    with_urls = [i for i in report if i.urls]
    lines.append("")
    lines.append(
        f"{len(with_urls)} tasks fetch assets by URL "
        f"({sum(i.urls for i in with_urls)} URLs; offline they must be in the asset cache)"
    )
    return "\n".join(lines)
