"""What an exported dataset says about where it came from: the runs' settings, no local paths.

A run folder's ``summary.json`` (or, for a replay buffer, the trainer checkpoint's
``config.json``) travels with the data: in every Parquet file's schema metadata (key
``METADATA_KEY``) and in the dataset card. Absolute paths in them (a ``--tasks`` folder, a
model path) would leak the exporting machine's layout, so each one becomes relative to the
exported source when it lies inside it and ``<local>/<its last component>`` otherwise.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from osworld_gym.commands.results import SUMMARY_FILE, iter_run_dirs
from osworld_gym.version import __version__

logger = logging.getLogger(__name__)

__all__ = ["FORMAT", "METADATA_KEY", "export_metadata", "scrub_paths", "source_settings"]

METADATA_KEY = "osworld_gym"
"""The Parquet schema metadata key (and the card's YAML key) of ``export_metadata()``."""
FORMAT = "osworld-gym-export"
SUMMARY_KEYS = ("format", "version", "created", "updated", "settings", "overall", "domains",
                "error_kinds", "versions")  # fmt: skip
"""What of ``summary.json`` is kept: the settings and scores, not the invocation's command line
(local paths) nor the per-task table (the rows carry it)."""
TRAINER_CONFIG = "config.json"
LOCAL = "<local>"
# An absolute POSIX path inside a string: a "/" that starts the string or follows a space, "=",
# a quote or a bracket; never the "//" of a URL nor the "/v1" of "host:8000/v1".
_ABSOLUTE = re.compile(r"(?:(?<=^)|(?<=[\s=\"'(\[,]))/[^\s\"'),\]]*")


def scrub_paths(value: Any, root: Path) -> Any:
    """``value`` (JSON-like) with every absolute path made relative to ``root`` or anonymous.

    Example:
        >>> scrub_paths({"tasks": "/home/me/evaluation_examples"}, Path("/data/run"))
        {'tasks': '<local>/evaluation_examples'}
    """
    if isinstance(value, str):
        return _ABSOLUTE.sub(lambda m: _relative(m.group(0), root), value)
    if isinstance(value, Mapping):
        return {str(k): scrub_paths(v, root) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_paths(v, root) for v in value]
    return value


def _relative(path: str, root: Path) -> str:
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return f"{LOCAL}/{Path(path).name}" if Path(path).name else LOCAL


def source_settings(source: Path, replay: Path | None) -> dict[str, dict[str, Any]]:
    """The settings files of what is exported, keyed by their folder relative to ``source``.

    Run folders: every ``summary.json`` at or under ``source``, else the nearest one above it
    (``source`` is a domain or task folder). A replay buffer: its checkpoint's ``config.json``
    (the trainer's settings), as ``{"trainer_config": ...}``. A file that cannot be read is left
    out with a warning: the trajectories matter more than their description.
    """
    found: dict[str, dict[str, Any]] = {}
    if replay is not None:
        config = _read_json(replay.parent / TRAINER_CONFIG)
        if config is not None:
            found[_key(replay.parent, source)] = {"trainer_config": config}
        return found
    folders = list(iter_run_dirs(source))
    if not folders:
        folders = [p for p in source.resolve().parents if (p / SUMMARY_FILE).is_file()][:1]
    for folder in folders:
        summary = _read_json(folder / SUMMARY_FILE)
        if summary is not None:
            found[_key(folder, source)] = {k: summary[k] for k in SUMMARY_KEYS if k in summary}
    return found


def _key(folder: Path, source: Path) -> str:
    base = source if source.is_dir() else source.parent
    try:
        return folder.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:  # above the source: name it by its own name, not its local path
        return folder.resolve().name


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        logger.warning("%s is not readable JSON (%s): the dataset is exported without it", path, e)
        return None
    return data if isinstance(data, dict) else None


def export_metadata(source: Path, replay: Path | None, per: str) -> dict[str, Any]:
    """The dataset's description: how it was made and the settings of what it holds.

    Args:
        source: What was exported (the ``SOURCE`` argument).
        replay: The replay buffer read, when ``source`` is the trainer's.
        per: ``step`` or ``trajectory``.
    """
    base = source if source.is_dir() else source.parent
    return {
        "format": FORMAT,
        "version": 1,
        "exported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "osworld_gym_version": __version__,
        "source_kind": "replay_buffer" if replay is not None else "run",
        "source": source.resolve().name,
        "per": per,
        "runs": scrub_paths(source_settings(source, replay), base),
    }
