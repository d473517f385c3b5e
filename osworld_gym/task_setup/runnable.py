"""Which tasks can run on a given provider here, and the one-line reason for each that cannot.

A task is *runnable* on a provider when the package supports it
(``osworld_gym.task_setup.support``), it needs no Google account and no proxy, and the
provider's desktops have every command it needs (``osworld_gym.tasks.requirements``,
``osworld_gym.providers.command_probe``). It is runnable *offline* when, besides, all its
assets are in the asset cache (``osworld-gym tasks fetch`` fills it) and it loads no live web
page. Where a provider's apps cannot be asked, the
verdict is ``unknown`` rather than a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from osworld_gym.providers.command_probe import CommandProbe, ProbeResult
from osworld_gym.task_setup.downloads import AssetCache, resolve_local_path
from osworld_gym.task_setup.support import task_support
from osworld_gym.tasks import Task
from osworld_gym.tasks.requirements import (
    CLI_TOOLS,
    AssetRef,
    TaskRequirements,
    all_commands,
    app_label,
    task_requirements,
)

Verdict = Literal["runnable", "online", "not runnable", "unknown"]
"""``runnable``: here, offline. ``online``: once its assets are fetched or the web reachable."""

_NOT_IN_DEBIAN = {"code": "VS Code is not packaged by Debian"}
# Commands that are there on these providers' desktops but cannot work: they talk to a system
# service the desktop does not run (its sandbox or container has no systemd). A task that needs
# one would score 0 whatever the agent does: not runnable, with the reason. The GNOME
# session's own system bus answers for them (providers/desktop/timedate_service.py), on local
# desktops and in the guest image.
_NO_SERVICE = {
    "timedatectl": "timedatectl needs systemd's timedated, which {provider} desktops do not run "
    "(the GNOME session answers it: --session gnome)",
}
_WITHOUT_SYSTEMD = ("local", "docker")


def _has_system_services(provider: str, session: str | None) -> bool:
    return provider not in _WITHOUT_SYSTEMD or session == "gnome"


@dataclass(frozen=True)
class TaskRunnability:
    """Whether one task runs on one provider here.

    Attributes:
        task_id: The task.
        domain: Its domain.
        verdict: See ``Verdict``.
        reason: The one-line reason when not ``runnable`` (None when it is).
        supported: The package supports its steps, getters and metrics.
        lacks: What the package lacks for it (empty when supported).
        commands: Commands it needs.
        missing: Needed commands the provider's desktops lack.
        unknown: Needed commands whose presence is not known.
        assets: Files it fetches by URL.
        cached: How many of them are in the asset cache.
        live_web: Live web pages or in-desktop installs it needs.
        blockers: Needs no desktop here can meet (Google account, proxy, missing host files).
    """

    task_id: str
    domain: str | None
    verdict: Verdict
    reason: str | None
    supported: bool
    lacks: tuple[str, ...]
    commands: tuple[str, ...]
    missing: tuple[str, ...]
    unknown: tuple[str, ...]
    assets: int
    cached: int
    live_web: tuple[str, ...]
    blockers: tuple[str, ...]

    @property
    def apps_present(self) -> bool | None:
        """True when every needed command is there, False when one is not, else None."""
        if self.missing:
            return False
        return None if self.unknown else True

    @property
    def runnable_when_fetched(self) -> bool:
        """Whether it runs without any network once its assets are in the cache."""
        return self.verdict == "runnable" or (self.verdict == "online" and not self.live_web)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (``--json`` output)."""
        return {
            "task_id": self.task_id,
            "domain": self.domain,
            "verdict": self.verdict,
            "reason": self.reason,
            "supported": self.supported,
            "lacks": list(self.lacks),
            "commands": list(self.commands),
            "apps_present": self.apps_present,
            "missing": list(self.missing),
            "unknown": list(self.unknown),
            "assets": self.assets,
            "cached": self.cached,
            "live_web": list(self.live_web),
            "blockers": list(self.blockers),
        }


def is_cached(cache: AssetCache, asset: AssetRef) -> bool:
    """Whether the env would find ``asset`` in ``cache`` without downloading it."""
    return any(path.is_file() for path in cache.candidates(asset.task_id, asset.name))


def _missing_reason(command: str, provider: str) -> str:
    if command in _NOT_IN_DEBIAN:
        return _NOT_IN_DEBIAN[command]
    package = CLI_TOOLS.get(command)
    hint = f" (Debian package {package})" if package else ""
    return f"needs {app_label(command)}{hint}, which the {provider} desktop lacks"


def _local_files_missing(task: Task, requirements: TaskRequirements) -> list[str]:
    """The host files the task names by path (not URL) that are not there, one line each."""
    named = [(name, "upload_file step") for name in requirements.local_files]
    named += [(name, "cloud_file reference") for name in requirements.reference_files]
    missing = []
    for name, why in named:
        path = resolve_local_path(name, task.task_dir)
        if not path.is_file():
            missing.append(f"the host file {path} ({why})")
    return missing


def task_runnability(
    task: Task,
    present: Mapping[str, bool | None],
    cache: AssetCache,
    provider: str,
    requirements: TaskRequirements | None = None,
    session: str | None = None,
) -> TaskRunnability:
    """Judge one task, given which commands the provider's desktops have.

    Args:
        task: The task.
        present: Command -> presence (True, False, None = unknown), from a probe.
        cache: The asset cache the env would use.
        provider: The provider's name, for the reasons.
        requirements: ``task_requirements(task)`` when already computed.
        session: A local desktop's session (``"gnome"`` answers for systemd's services).
    """
    needs = requirements or task_requirements(task)
    support = task_support(task)
    blockers = []
    if needs.google_account:
        blockers.append(f"needs OSWorld's Google account ({needs.google_account})")
    if needs.proxy:
        blockers.append("needs a proxy (OSWorld runs it behind one: its sites block bots)")
    blockers += [f"needs {item}" for item in _local_files_missing(task, needs)]
    commands = tuple(needs.commands)
    if not _has_system_services(provider, session):
        blockers += [_NO_SERVICE[c].format(provider=provider) for c in commands if c in _NO_SERVICE]
    missing = tuple(c for c in commands if present.get(c) is False)
    unknown = tuple(c for c in commands if present.get(c) is None)
    cached = sum(is_cached(cache, a) for a in needs.assets)
    code_lacks = tuple(
        lack for lack in support.lacks if not lack.startswith(("a proxy", "OSWorld's fixed-IP"))
    )
    verdict: Verdict
    reason: str | None
    if blockers:
        verdict, reason = "not runnable", blockers[0]
    elif code_lacks:
        verdict, reason = "not runnable", f"the package lacks {code_lacks[0]}"
    elif missing:
        verdict, reason = "not runnable", _missing_reason(missing[0], provider)
    elif unknown:
        names = ", ".join(app_label(c) for c in unknown[:3])
        verdict, reason = "unknown", f"not known whether the {provider} desktop has {names}"
    elif cached < len(needs.assets):
        verdict = "online"
        reason = (
            f"{len(needs.assets) - cached} of {len(needs.assets)} assets not cached "
            "(`osworld-gym tasks fetch` them)"
        )
    elif needs.live_web:
        verdict, reason = "online", f"needs the live web: {needs.live_web[0]}"
    else:
        verdict, reason = "runnable", None
    return TaskRunnability(
        task_id=task.id,
        domain=task.domain,
        verdict=verdict,
        reason=reason,
        supported=support.supported,
        lacks=support.lacks,
        commands=commands,
        missing=missing,
        unknown=unknown,
        assets=len(needs.assets),
        cached=cached,
        live_web=needs.live_web,
        blockers=tuple(blockers),
    )


@dataclass(frozen=True)
class RunnableReport:
    """The runnability of a set of tasks on one provider.

    Attributes:
        provider: The provider's name.
        probe: What the command probe answered (where it looked; why it could not, if so).
        cache_root: The asset cache consulted.
        tasks: One entry per task, in order.
    """

    provider: str
    probe: ProbeResult
    cache_root: Path
    tasks: tuple[TaskRunnability, ...]

    def by_domain(self) -> dict[str, list[TaskRunnability]]:
        """The entries grouped by domain (``"-"`` for none), domains sorted."""
        groups: dict[str, list[TaskRunnability]] = {}
        for item in sorted(self.tasks, key=lambda t: t.domain or "-"):
            groups.setdefault(item.domain or "-", []).append(item)
        return groups

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: the provider, the probe, per-task entries and per-domain counts."""
        return {
            "provider": self.provider,
            "probed": self.probe.where,
            "probe_note": self.probe.note,
            "cache": str(self.cache_root),
            "commands": {c: p for c, p in sorted(self.probe.present.items())},
            "domains": {d: _counts(items) for d, items in self.by_domain().items()},
            "total": _counts(list(self.tasks)),
            "tasks": [t.to_dict() for t in self.tasks],
        }


def _counts(items: Sequence[TaskRunnability]) -> dict[str, int]:
    return {
        "tasks": len(items),
        "supported": sum(i.supported for i in items),
        "apps_present": sum(i.apps_present is True for i in items),
        "apps_unknown": sum(i.apps_present is None for i in items),
        "assets_cached": sum(i.cached == i.assets for i in items),
        "runnable": sum(i.verdict in ("runnable", "online") for i in items),
        "runnable_when_fetched": sum(i.runnable_when_fetched for i in items),
        "runnable_offline": sum(i.verdict == "runnable" for i in items),
    }


def runnable_report(
    tasks: Iterable[Task],
    probe: CommandProbe,
    cache: AssetCache,
    provider: str,
    session: str | None = None,
) -> RunnableReport:
    """Probe once for every command the tasks need, then judge each task.

    ``session``: a local desktop's session (see ``task_runnability()``).
    """
    tasks = list(tasks)
    requirements = [task_requirements(t) for t in tasks]
    result = probe.probe(all_commands(requirements))
    entries = tuple(
        task_runnability(t, result.present, cache, provider, r, session)
        for t, r in zip(tasks, requirements, strict=True)
    )
    return RunnableReport(provider, result, cache.root, entries)


def _reason_key(item: TaskRunnability) -> str | None:
    """The reason with task-specific details dropped, for counting the commonest ones."""
    if item.verdict == "online":
        if item.cached < item.assets:
            return "assets not cached (`osworld-gym tasks fetch` them)"
        return "needs the live web"
    return item.reason


def format_runnable_report(report: RunnableReport, verbose: bool = True) -> str:
    """A human-readable report: a line per task, the per-domain table, and the commonest reasons.

    Columns: ``supported`` by the package; ``apps`` all present on the provider (``?`` counts
    the unknown); ``cached`` all assets in the cache (or none needed); runnable ``online``
    (with the network for uncached assets and web pages), ``fetched`` (offline once the cache
    is filled) and ``offline`` (offline with the cache as it is).
    """
    lines = [f"provider {report.provider}: apps probed in {report.probe.where}"]
    if report.probe.note:
        lines.append(f"  note: {report.probe.note}")
    lines.append(f"asset cache: {report.cache_root}")
    if verbose:
        lines.append("")
        for item in report.tasks:
            tail = f": {item.reason}" if item.reason else ""
            assets = f" [assets {item.cached}/{item.assets} cached]" if item.assets else ""
            verdict = "runnable online only" if item.verdict == "online" else item.verdict
            lines.append(f"{item.domain}/{item.task_id}: {verdict}{tail}{assets}")
    lines.append("")
    header = ("domain", "tasks", "supported", "apps", "cached", "online", "fetched", "offline")
    lines.append("{:<22} {:>6} {:>10} {:>9} {:>7} {:>7} {:>8} {:>8}".format(*header))
    rows = list(report.by_domain().items()) + [("all", list(report.tasks))]
    for domain, items in rows:
        counts = _counts(items)
        apps = str(counts["apps_present"])
        if counts["apps_unknown"]:
            apps += f"+{counts['apps_unknown']}?"
        lines.append(
            f"{domain:<22} {counts['tasks']:>6} {counts['supported']:>10} {apps:>9} "
            f"{counts['assets_cached']:>7} {counts['runnable']:>7} "
            f"{counts['runnable_when_fetched']:>8} {counts['runnable_offline']:>8}"
        )
    lines.append(
        "apps: every command it needs is there; cached: all its assets in the cache (or none "
        "needed).\nRunnable - online: with the network for uncached assets and live pages; "
        "fetched: offline, once `osworld-gym tasks fetch` filled the cache; offline: offline, "
        "with the cache as it is."
    )
    reasons: dict[str, int] = {}
    for item in report.tasks:
        key = _reason_key(item)
        if key:
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        lines.append("")
        lines.append("most common reasons:")
        for text, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:12]:
            lines.append(f"  {count:>4}  {text}")
    return "\n".join(lines)
