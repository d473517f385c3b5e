"""The VMs' private folders, and removing those whose launching process is gone.

Each VM folder holds ``owner.json``: the launching process's PID and kernel start time (a
reused PID does not pass for the owner) and the desktop's process marker. A provider sweeps
its work folder when it starts: a folder whose owner is gone has its processes stopped by
marker and is deleted.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from osworld_gym.providers import processes

logger = logging.getLogger(__name__)


def state_root(work_dir: str | None) -> Path:
    """The parent folder of the VMs' folders (created, private to this user)."""
    root = Path(work_dir or Path(tempfile.gettempdir()) / f"osworld-gym-qemu-{os.getuid()}")
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (tells a live owner from a reused PID)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[19].decode()


def write_owner(folder: Path, marker: str) -> None:
    """Record this process as the owner of a VM folder (atomically)."""
    owner = {"pid": os.getpid(), "start": process_start_time(os.getpid()), "marker": marker}
    tmp = folder / "owner.json.tmp"
    tmp.write_text(json.dumps(owner))
    tmp.replace(folder / "owner.json")


def remove_leftovers(root: Path) -> list[Path]:
    """Stop the VMs and delete the folders of desktops whose launching process is gone.

    Returns:
        The folders removed.
    """
    removed = []
    if not root.is_dir():
        return removed
    for folder in root.iterdir():
        owner_file = folder / "owner.json"
        try:
            owner = json.loads(owner_file.read_text())
        except (OSError, ValueError):
            continue  # being created, or not ours
        if process_start_time(int(owner["pid"])) == owner["start"]:
            continue  # its owner still runs
        logger.warning("removing the leftover VM %s of process %s", folder, owner["pid"])
        processes.kill_marked(str(owner["marker"]), timeout=3.0)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
