"""Whether a task leaves its answer key where the agent can reach it.

An evaluator's ``expected`` side is the answer key: what the agent's result is compared with.
When a task's setup puts that file into the desktop (an ``upload_file`` or ``download`` step) and
the evaluator reads it back from there, an agent can open it and save it over its document, or
edit it, and score without doing the task. OSWorld's own tasks keep references on the host
(``cloud_file`` URLs, ``rule`` values); this package's suites do too, with ``cloud_file``'s
``local_path`` form for files beside the task. ``answer_key_leaks()`` finds the two ways a task
breaks that rule:

- an ``expected`` getter that asks the desktop (``vm_file``, ``vm_command_line``, any getter but
  the host-side ones of ``HOST_GETTERS``) about a file the task's setup put there;
- an ``expected`` reference on the host (a ``cloud_file`` URL or ``local_path``) that a setup
  step also uploads or downloads into the desktop.

Only ``config`` counts as the setup: ``postconfig`` runs after the agent's last action.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from osworld_gym.task_setup.downloads import resolve_local_path
from osworld_gym.tasks.frozen import strings_in
from osworld_gym.tasks.model import GetterSpec, Task

__all__ = ["GUEST_HOME", "HOST_GETTERS", "Placed", "answer_key_leaks", "placed_files"]

GUEST_HOME = "/home/user"
"""The desktop user's home, as on OSWorld's VM and the ``local`` provider: what ``~`` means."""

HOST_GETTERS = frozenset(
    {"rule", "rule_relativeTime", "cloud_file", "cache_file", "time_diff_range"}
)
"""Getters that read only the task's JSON or host files; every other getter asks the desktop."""


@dataclass(frozen=True)
class Placed:
    """A file a setup step puts into the desktop, and where it comes from on the host.

    Attributes:
        guest_path: Where it lands, normalised (``~`` spelt as ``GUEST_HOME``).
        source: The host file (``upload_file``, resolved against the task file) or the URL
            (``download``).
        step: The step's place in the task, e.g. ``config[0]``.
    """

    guest_path: str
    source: str
    step: str


def guest_path(path: str) -> str:
    """A desktop path in one spelling: ``~``/``$HOME`` as ``GUEST_HOME``, normalised.

    A relative path is taken under the home folder (where the guest server runs commands).
    """
    for home in ("~", "$HOME", "${HOME}"):
        if path == home or path.startswith(home + "/"):
            path = GUEST_HOME + path[len(home) :]
            break
    return posixpath.normpath(posixpath.join(GUEST_HOME, path))


def _spellings(path: str) -> tuple[str, ...]:
    """How a normalised desktop path may be written in a command line."""
    if path == GUEST_HOME or path.startswith(GUEST_HOME + "/"):
        rest = path[len(GUEST_HOME) :]
        return (path, f"~{rest}", f"$HOME{rest}", f"${{HOME}}{rest}")
    return (path,)


def _host_source(value: str, task_dir: Path | None) -> str:
    """A host reference in one spelling: a resolved file path, or the URL as written.

    ``file://`` URLs name host files too, and compare as the file they name.
    """
    if value.startswith("file://"):
        value = value.removeprefix("file://")
    elif "://" in value:
        return value
    return str(resolve_local_path(value, task_dir).resolve())


def placed_files(task: Task) -> list[Placed]:
    """Every file the task's ``config`` uploads or downloads into the desktop, in order."""
    placed: list[Placed] = []
    for index, step in enumerate(task.config):
        if step.type not in ("upload_file", "download"):
            continue
        key = "local_path" if step.type == "upload_file" else "url"
        for item in step.parameters.get("files", ()):
            source = _host_source(str(item[key]), task.task_dir)
            placed.append(Placed(guest_path(str(item["path"])), source, f"config[{index}]"))
    return placed


def _names_path(text: str, path: str) -> bool:
    """Whether ``text`` is the desktop path ``path`` (any spelling) or a command naming it."""
    # Only absolute or home-relative text is a path: a bare name is a ``dest`` on the host.
    if text.startswith(("/", "~", "$HOME", "${HOME}")) and guest_path(text) == path:
        return True
    return any(spelling in text for spelling in _spellings(path))


def _asks_desktop_for(getter: GetterSpec, placed: list[Placed]) -> list[Placed]:
    """The placed files a desktop-side getter names: as a path, or inside a command line."""
    texts = list(strings_in(getter.params))
    return [item for item in placed if any(_names_path(t, item.guest_path) for t in texts)]


def _host_references(getter: GetterSpec, task_dir: Path | None) -> list[str]:
    """The host files and URLs a ``cloud_file`` getter reads, each in one spelling."""
    if getter.type != "cloud_file":
        return []
    value = getter.params.get("local_path", getter.params.get("path"))
    values = [value] if isinstance(value, str) else list(value or ())
    return [_host_source(str(v), task_dir) for v in values]


def answer_key_leaks(task: Task) -> list[str]:
    """Why the task's answer key can be reached from the desktop; empty when it cannot.

    One readable line per problem, naming the evaluator field and the setup step.
    """
    placed = placed_files(task)
    if not placed:
        return []
    leaks: list[str] = []
    for index, check in enumerate(task.evaluator.checks):
        getter = check.expected
        if getter is None:
            continue
        where = f"evaluator.expected[{index}]" if task.evaluator.is_list else "evaluator.expected"
        if getter.type not in HOST_GETTERS:
            for item in _asks_desktop_for(getter, placed):
                leaks.append(
                    f"{where} ({getter.type}) reads {item.guest_path} from the desktop, "
                    f"which {item.step} put there"
                )
        for reference in _host_references(getter, task.task_dir):
            for item in placed:
                if item.source == reference:
                    leaks.append(
                        f"{where} compares against {reference}, which {item.step} puts into "
                        f"the desktop at {item.guest_path}"
                    )
    return leaks
