"""``osworld-gym export SOURCE -o OUT --per step|trajectory``: trajectories as a Parquet dataset.

``SOURCE`` is a run folder in OSWorld's layout (what ``osworld-gym run`` writes), or the
trainer's replay buffer: a ``replay.pkl`` file, a checkpoint folder holding one, or a trainer
output folder (its ``checkpoints/latest`` is followed). The replay buffer is a pickle: export
only buffers you wrote yourself.

The Parquet files carry Hugging Face ``datasets`` feature metadata: screenshots are embedded
as ``Image`` features (a ``{"bytes", "path"}`` struct holding the PNG as recorded), so::

    datasets.load_dataset("parquet", data_files="OUT/*.parquet", split="train")

gives PIL images. One row per step (the screen the action was chosen on, the model text, the
action) suits SFT; one row per trajectory (every screen, every response) suits offline RL.
Actions are JSON text: ``action`` as recorded (model text or typed actions), ``parsed_actions``
as typed actions with screen pixels (``{"kind": "click", "x": ..., "y": ...}``).
Needs ``pip install 'osworld-gym[export]'`` (pyarrow).
"""

from __future__ import annotations

import argparse
import json
import logging
import pickle
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_gym.commands.results import TaskRecord, read_run, recorded_action

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'osworld-gym[export]'"
_STRING = {"dtype": "string", "_type": "Value"}
_INT = {"dtype": "int64", "_type": "Value"}
_FLOAT = {"dtype": "float64", "_type": "Value"}
_BOOL = {"dtype": "bool", "_type": "Value"}
_IMAGE = {"_type": "Image"}


def _list(feature: Mapping[str, Any]) -> dict[str, Any]:
    return {"feature": dict(feature), "_type": "List"}


STEP_FEATURES: dict[str, dict[str, Any]] = {
    "task_id": _STRING,
    "domain": _STRING,
    "instruction": _STRING,
    "rollout": _INT,
    "step": _INT,
    "image": _IMAGE,
    "response": _STRING,
    "action": _STRING,
    "parsed_actions": _STRING,
    "action_kinds": _list(_STRING),
    "parse_error": _STRING,
    "reward": _FLOAT,
    "done": _BOOL,
    "score": _FLOAT,
    "num_steps": _INT,
    "source": _STRING,
}
"""Columns of ``--per step`` (``datasets`` feature dicts)."""

TRAJECTORY_FEATURES: dict[str, dict[str, Any]] = {
    "task_id": _STRING,
    "domain": _STRING,
    "instruction": _STRING,
    "rollout": _INT,
    "score": _FLOAT,
    "num_steps": _INT,
    "images": _list(_IMAGE),
    "responses": _list(_STRING),
    "actions": _list(_STRING),
    "parsed_actions": _list(_STRING),
    "parse_errors": _list(_STRING),
    "rewards": _list(_FLOAT),
    "source": _STRING,
}
"""Columns of ``--per trajectory``: ``images`` has one more entry than steps (the final screen)."""


@dataclass
class Episode:
    """One trajectory in a source-independent form.

    Attributes:
        task_id: The task.
        domain: Its domain ("" when unknown).
        instruction: The instruction.
        rollout: Rollout index (0 for evaluation runs).
        score: The episode's score, None when not scored.
        screens: ``(png bytes or None, name)`` per step's screen, then the final screen.
        steps: Per step: ``response``, ``action`` (JSON), ``parsed_actions`` (JSON),
            ``kinds``, ``parse_error``, ``reward``.
        source: Where it came from.
    """

    task_id: str
    domain: str
    instruction: str
    rollout: int
    score: float | None
    screens: list[tuple[bytes | None, str | None]]
    steps: list[dict[str, Any]]
    source: str


def add_parser(sub: Any) -> None:
    """Register ``export``."""
    export = sub.add_parser("export", help="export trajectories as a Parquet dataset")
    export.add_argument("source", help="a run folder, replay.pkl, checkpoint or trainer output")
    export.add_argument("-o", "--output", required=True, help="the dataset folder to write")
    export.add_argument("--per", choices=["step", "trajectory"], default="step")
    export.add_argument("--min-score", type=float, help="keep episodes scoring at least this")
    export.add_argument("--rows-per-file", type=int, default=5000)
    export.set_defaults(func=export_command)


def export_command(args: argparse.Namespace) -> int:
    """Run the ``export`` subcommand."""
    source = Path(args.source)
    try:
        episodes = list(_filter(load_episodes(source), args.min_score))
    except (OSError, ValueError, pickle.UnpicklingError) as e:
        sys.stderr.write(f"osworld-gym export: {e}\n")
        return 1
    if not episodes:
        sys.stderr.write(f"osworld-gym export: no trajectories to export from {source}\n")
        return 1
    try:
        files, rows = write_dataset(episodes, Path(args.output), args.per, args.rows_per_file)
    except ImportError as e:
        sys.stderr.write(f"osworld-gym export needs pyarrow ({e}): {INSTALL_HINT}\n")
        return 1
    sys.stdout.write(
        f"{rows} {args.per} rows (of {len(episodes)} episodes) in {len(files)} file(s) under "
        f"{args.output}; load with datasets.load_dataset('parquet', "
        f"data_files='{Path(args.output) / '*.parquet'}')\n"
    )
    return 0


def _filter(episodes: Iterable[Episode], min_score: float | None) -> Iterator[Episode]:
    for episode in episodes:
        if min_score is None or (episode.score is not None and episode.score >= min_score):
            yield episode


# --- sources ------------------------------------------------------------------------------


def load_episodes(source: Path) -> Iterator[Episode]:
    """The episodes of a run folder or of a replay buffer (see the module docstring).

    Raises:
        ValueError: ``source`` is neither.
    """
    replay = _replay_file(source)
    if replay is not None:
        yield from replay_episodes(replay)
        return
    if not source.is_dir():
        raise ValueError(f"{source} is neither a run folder nor a replay buffer")
    records = read_run(source)
    if not records:
        raise ValueError(f"no task folders (traj.jsonl, result.txt) under {source}")
    for record in records:
        yield run_episode(record)


def _replay_file(source: Path) -> Path | None:
    if source.is_file():
        return source if source.suffix == ".pkl" else None
    if (source / "replay.pkl").is_file():
        return source / "replay.pkl"
    latest = source / "checkpoints" / "latest"
    if latest.is_file():
        folder = source / "checkpoints" / latest.read_text().strip()
        if (folder / "replay.pkl").is_file():
            return folder / "replay.pkl"
    return None


def run_episode(record: TaskRecord) -> Episode:
    """One task folder of a run as an episode."""
    screens: list[tuple[bytes | None, str | None]] = []
    steps = []
    for step in record.steps:
        screens.append(_read_screen(record, record.observation_path(step)))
        parsed = step.get("parsed_actions") or []
        info = step.get("info") or {}
        steps.append(
            {
                "response": step.get("response"),
                "action": json.dumps(step.get("action"), ensure_ascii=False),
                "parsed_actions": json.dumps(parsed, ensure_ascii=False),
                "kinds": [str(a.get("kind")) for a in parsed],
                "parse_error": info.get("parse_error"),
                "reward": float(step.get("reward") or 0.0),
            }
        )
    final = record.steps[-1].get("screenshot_file") if record.steps else None
    screens.append(_read_screen(record, record.task_dir / str(final) if final else None))
    return Episode(
        task_id=record.task_id,
        domain=record.domain,
        instruction=record.instruction,
        rollout=int(record.meta.get("rollout") or 0),
        score=record.score,
        screens=screens,
        steps=steps,
        source=str(record.task_dir),
    )


def _read_screen(record: TaskRecord, path: Path | None) -> tuple[bytes | None, str | None]:
    if path is None or not path.is_file():
        return None, None
    return path.read_bytes(), str(path.relative_to(record.task_dir.parent.parent))


def replay_episodes(path: Path) -> Iterator[Episode]:
    """The stored trajectories of the trainer's replay buffer (``ReplayBuffer.save``).

    Read without the trainer (no torch): the file is a pickled ``state_dict`` whose entries hold
    :class:`~osworld_gym.pool.Trajectory` records.

    Raises:
        ValueError: The file is not a replay buffer.
    """
    with open(path, "rb") as f:
        state = pickle.load(f)  # noqa: S301 - the user's own buffer (documented)
    if not isinstance(state, Mapping) or state.get("format") != "osworld-arpo-replay":
        raise ValueError(f"{path} is not an osworld-arpo replay buffer")
    for entry in sorted(state.get("entries") or [], key=lambda e: e.get("seq", 0)):
        trajectory = entry["trajectory"]
        screens: list[tuple[bytes | None, str | None]] = []
        steps = []
        for i, step in enumerate(trajectory.steps):
            name = f"{trajectory.task_id}/r{trajectory.rollout}/step_{i}.png"
            screens.append((step.screenshot, name if step.screenshot else None))
            parsed = [] if isinstance(step.action, str) else recorded_action(step.action)
            steps.append(
                {
                    "response": step.text,
                    "action": json.dumps(recorded_action(step.action), ensure_ascii=False),
                    "parsed_actions": json.dumps(parsed, ensure_ascii=False),
                    "kinds": [str(a.get("kind")) for a in parsed if isinstance(a, Mapping)],
                    "parse_error": step.parse_error,
                    "reward": float(step.reward),
                }
            )
        final = trajectory.final_screenshot
        last = f"{trajectory.task_id}/r{trajectory.rollout}/final.png"
        screens.append((final, last if final else None))
        yield Episode(
            task_id=trajectory.task_id,
            domain="",
            instruction=trajectory.instruction,
            rollout=int(trajectory.rollout),
            score=trajectory.score,
            screens=screens,
            steps=steps,
            source=f"{path}#{entry.get('seq')}",
        )


# --- rows and files -----------------------------------------------------------------------


def step_rows(episode: Episode) -> Iterator[dict[str, Any]]:
    """One row per step: the screen the action was chosen on, and what was done."""
    for i, step in enumerate(episode.steps):
        data, name = episode.screens[i]
        yield {
            "task_id": episode.task_id,
            "domain": episode.domain,
            "instruction": episode.instruction,
            "rollout": episode.rollout,
            "step": i + 1,
            "image": None if data is None else {"bytes": data, "path": name},
            "response": step["response"],
            "action": step["action"],
            "parsed_actions": step["parsed_actions"],
            "action_kinds": step["kinds"],
            "parse_error": step["parse_error"],
            "reward": step["reward"],
            "done": i == len(episode.steps) - 1,
            "score": episode.score,
            "num_steps": len(episode.steps),
            "source": episode.source,
        }


def trajectory_row(episode: Episode) -> dict[str, Any]:
    """One row for the whole episode."""
    return {
        "task_id": episode.task_id,
        "domain": episode.domain,
        "instruction": episode.instruction,
        "rollout": episode.rollout,
        "score": episode.score,
        "num_steps": len(episode.steps),
        "images": [
            None if data is None else {"bytes": data, "path": name}
            for data, name in episode.screens
        ],
        "responses": [s["response"] for s in episode.steps],
        "actions": [s["action"] for s in episode.steps],
        "parsed_actions": [s["parsed_actions"] for s in episode.steps],
        "parse_errors": [s["parse_error"] for s in episode.steps],
        "rewards": [s["reward"] for s in episode.steps],
        "source": episode.source,
    }


def arrow_schema(features: Mapping[str, Mapping[str, Any]]) -> Any:
    """The Arrow schema of ``datasets`` features, with the metadata ``datasets`` reads."""
    import pyarrow as pa

    def arrow_type(feature: Mapping[str, Any]) -> Any:
        kind = feature["_type"]
        if kind == "Image":
            return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        if kind == "List":
            return pa.list_(arrow_type(feature["feature"]))
        return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
                "bool": pa.bool_()}[feature["dtype"]]  # fmt: skip

    metadata = {"huggingface": json.dumps({"info": {"features": dict(features)}})}
    fields = [pa.field(name, arrow_type(feature)) for name, feature in features.items()]
    return pa.schema(fields, metadata=metadata)


def write_dataset(
    episodes: Iterable[Episode], output: Path, per: str, rows_per_file: int = 5000
) -> tuple[list[Path], int]:
    """Write the rows as ``train-NNNNN.parquet`` files; return the files and the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = STEP_FEATURES if per == "step" else TRAJECTORY_FEATURES
    schema = arrow_schema(features)
    output.mkdir(parents=True, exist_ok=True)
    for stale in output.glob("train-*.parquet"):  # a re-export replaces the dataset whole
        stale.unlink()

    def rows() -> Iterator[dict[str, Any]]:
        for episode in episodes:
            if per == "step":
                yield from step_rows(episode)
            else:
                yield trajectory_row(episode)

    files: list[Path] = []
    total = 0
    batch: list[dict[str, Any]] = []
    writer = None
    in_file = 0

    def flush() -> None:
        nonlocal writer, in_file
        if not batch:
            return
        if writer is None:
            files.append(output / f"train-{len(files):05d}.parquet")
            writer = pq.ParquetWriter(files[-1], schema)
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        in_file += len(batch)
        batch.clear()
        if in_file >= rows_per_file:
            writer.close()
            writer, in_file = None, 0

    try:
        for row in rows():
            batch.append(row)
            total += 1
            # Small row groups keep memory bounded (rows hold full screenshots).
            if len(batch) >= min(64, rows_per_file - in_file):
                flush()
        flush()
    finally:
        if writer is not None:
            writer.close()
    return files, total
