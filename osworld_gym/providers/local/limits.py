"""Per-desktop limits on memory, processes and disk, so a desktop's excess is its own fault.

A fork bomb, a 4 GB allocation or a disk filler run by a desktop's programs must end that
desktop's episode as an infrastructure fault, not take the host (or the other desktops) down:

- **memory and processes**: each desktop's processes join a control group of their own
  (cgroup v1's ``memory`` and ``pids`` controllers, or v2 where this process's cgroup delegates
  them), with ``DesktopLimits.memory_bytes`` and ``DesktopLimits.processes``. The kernel
  kills within the desktop on out-of-memory and refuses forks past the count;
  ``DesktopCgroups.hits()`` reports each as a fault. Where no cgroup can be made (an ordinary
  user without delegation) they are not limited, with a warning: ``ulimit -v`` would cap
  address space, which browsers reserve by the tens of GB, and the process count is a user's.
- **disk**: a root launcher gives the desktop's writable folders a size-capped tmpfs of their
  own (``mount_capped()``); a full one answers ``ENOSPC`` to the desktop alone. Without root,
  ``ulimit -f`` caps each file instead.

Every process is started through a short shell line (``DesktopCgroups.enter_words()``) that
joins the groups before it runs the command, so no child it forks is ever outside them.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_GROUP_PREFIX = "osworld-gym-"
STALE_GROUP_AGE_S = 120.0  # an empty group younger than this may be a desktop's, starting
GIB = 1 << 30


@dataclass(frozen=True)
class DesktopLimits:
    """Limits of one desktop (None: no limit).

    Attributes:
        memory_bytes: Memory of all its processes together (OSWorld's VM has 4 GiB).
        processes: Processes and threads of the desktop at once.
        disk_bytes: Size of everything it writes (home, temp folders, runtime folder, its
            logs). Below ``memory_bytes``: the capped disk is a tmpfs, whose pages count as
            the desktop's memory, so a disk filler meets a full disk before the memory limit.
    """

    memory_bytes: int | None = 4 * GIB
    processes: int | None = 2048
    disk_bytes: int | None = 2 * GIB


@dataclass
class _Group:
    """One control group of a desktop: its folder, and the count of hits already seen."""

    controller: str  # "memory" or "pids"
    path: Path
    events: Path
    key: str
    seen: int = 0


@dataclass
class DesktopCgroups:
    """The control groups of one desktop (empty when none could be made).

    Attributes:
        groups: One per controller.
        fallback: ``ulimit`` options used when no group could be made.
    """

    groups: list[_Group] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, name: str, limits: DesktopLimits) -> DesktopCgroups:
        """Make the desktop's groups with ``limits``; fall back to per-process limits."""
        made = cls()
        wanted = {"memory": limits.memory_bytes, "pids": limits.processes}
        for controller, value in wanted.items():
            if value is None:
                continue
            group = _make_group(controller, f"{_GROUP_PREFIX}{name}", value)
            if group is not None:
                made.groups.append(group)
        have = {group.controller for group in made.groups}
        missing = [c for c, value in wanted.items() if value is not None and c not in have]
        if missing:
            # No per-process stand-in for memory: `ulimit -v` caps address space, which
            # browsers reserve by the tens of GB, and the process count is the user's.
            logger.warning(
                "no %s cgroup can be made here (run as root, or delegate them): desktops "
                "run without those limits",
                " or ".join(missing),
            )
        if limits.disk_bytes is not None and not can_mount_capped():
            made.fallback.append(f"ulimit -f {limits.disk_bytes // 1024}")  # per file
        return made

    def enter_words(self) -> list[str]:
        """Words that run the rest of a command line inside the groups (and under ulimits)."""
        steps = [f"echo $$ > {group.path / 'cgroup.procs'}" for group in self.groups]
        steps += self.fallback
        if not steps:
            return []
        return ["sh", "-c", " && ".join([*steps, 'exec "$@"']), "osworld-gym-limits"]

    def hits(self) -> list[str]:
        """What the desktop ran into since the last call (e.g. ``"out of memory"``)."""
        found = []
        for group in self.groups:
            count = _event_count(group.events, group.key)
            if count > group.seen:
                group.seen = count
                found.append(
                    "out of memory: a process was killed"
                    if group.controller == "memory"
                    else "too many processes: a fork was refused"
                )
        return found

    def remove(self) -> None:
        """Delete the groups (their processes must be gone: the desktop is stopped)."""
        for group in self.groups:
            try:
                group.path.rmdir()
            except OSError as e:  # processes still dying; the next sweep retries
                logger.debug("cannot remove %s yet: %s", group.path, e)
        self.groups.clear()


def _own_cgroup(controller: str) -> tuple[Path, bool] | None:
    """This process's cgroup folder for ``controller`` and whether it is cgroup v2."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return _CGROUP_ROOT / controller / path.lstrip("/"), False
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if number == "0" and controllers == "":
            unified = _CGROUP_ROOT if (_CGROUP_ROOT / "cgroup.controllers").exists() else None
            if unified is None and (_CGROUP_ROOT / "unified" / "cgroup.controllers").exists():
                unified = _CGROUP_ROOT / "unified"
            if unified is not None:
                return unified / path.lstrip("/"), True
    return None


def _make_group(controller: str, name: str, value: int) -> _Group | None:
    """Make a child group of this process's with the limit set; None where not allowed."""
    own = _own_cgroup(controller)
    if own is None:
        return None
    parent, v2 = own
    if v2:
        try:  # only where our group already delegates the controller to children
            delegated = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            return None
        if controller not in delegated:
            return None
    if not os.access(parent, os.W_OK):
        return None
    path = parent / name
    try:
        path.mkdir(exist_ok=True)
        if controller == "memory":
            limit = "memory.max" if v2 else "memory.limit_in_bytes"
            (path / limit).write_text(str(value))
            events, key = (
                ("memory.events", "oom_kill") if v2 else ("memory.oom_control", "oom_kill")
            )
        else:
            (path / "pids.max").write_text(str(value))
            events, key = "pids.events", "max"
    except OSError as e:
        logger.info("no %s cgroup for desktops here (%s): using ulimit", controller, e)
        try:
            path.rmdir()
        except OSError:
            pass
        return None
    return _Group(controller, path, path / events, key)


def _event_count(path: Path, key: str) -> int:
    try:
        text = path.read_text()
    except OSError:
        return 0
    match = re.search(rf"^{re.escape(key)} (\d+)$", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def remove_stale_groups(live: set[str], min_age_s: float = STALE_GROUP_AGE_S) -> list[Path]:
    """Delete empty desktop groups that dead runs left (their processes are gone).

    A group is left when it is empty, no live desktop's marker names it (``live``: a desktop
    between making its group and starting its first process in it, or restarting its
    processes, holds an empty group too), and it is older than ``min_age_s`` (the markers
    come from the folders one driver sweeps; another driver's may be elsewhere).
    """
    removed = []
    now = time.time()
    for controller in ("memory", "pids"):
        own = _own_cgroup(controller)
        if own is None or not own[0].is_dir():
            continue
        for group in own[0].glob(f"{_GROUP_PREFIX}*"):
            if group.name.removeprefix(_GROUP_PREFIX) in live:
                continue
            try:
                if now - group.stat().st_mtime < min_age_s:
                    continue
                if (group / "cgroup.procs").read_text().strip():
                    continue
                group.rmdir()
                removed.append(group)
            except OSError:
                continue
    return removed


_DISK_FULL_BYTES = 1 << 20  # less free space than this counts as full


def disk_full(folder: Path) -> bool:
    """Whether the capped disk at ``folder`` is (nearly) full."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < _DISK_FULL_BYTES


def can_mount_capped() -> bool:
    """Whether desktops' folders can get a size-capped tmpfs here (root only)."""
    return os.geteuid() == 0


def mount_capped(folder: Path, size_bytes: int) -> None:
    """Mount a tmpfs of ``size_bytes`` at ``folder`` (root only): the desktop's disk.

    Raises:
        OSError: the mount failed.
    """
    done = subprocess.run(
        [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            f"size={size_bytes},mode=0700,nodev,nosuid",
            "osworld-gym-desktop",
            str(folder),
        ],  # fmt: skip
        capture_output=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0:
        raise OSError(f"mount of a tmpfs at {folder} failed: {done.stderr.decode().strip()}")
