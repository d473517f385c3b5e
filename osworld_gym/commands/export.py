"""``osworld-gym export SOURCE --output-dir OUT --per step|trajectory``: a Parquet dataset.

``SOURCE`` is a run folder in OSWorld's layout (what ``osworld-gym run`` writes), or the
trainer's replay buffer: a ``replay.pkl`` file, a checkpoint folder holding one, or a trainer
output folder (its ``checkpoints/latest`` is followed). The replay buffer is a pickle: export
only buffers you wrote yourself.

The Parquet files carry Hugging Face ``datasets`` feature metadata: screenshots are embedded
as ``Image`` features (a ``{"bytes", "path"}`` struct holding the PNG as recorded), so::

    datasets.load_dataset("parquet", data_files="OUT/*.parquet", split="train")

gives PIL images. One row per step (the screen the action was chosen on, the model text, the
action) suits SFT; one row per trajectory (every screen, every response) suits offline RL.
``parsed_actions`` holds typed actions as structs (``kind``, ``x``, ``y``, ``text``, ``keys``,
...: every typed action's fields, null where an action lacks one; see
``export_actions``), so ``datasets`` loads them as features; ``action``
keeps the action exactly as recorded, as JSON text (model text or typed actions).

Nothing local leaks into the data: image paths and ``source`` are relative to ``SOURCE``, and
the runs' ``summary.json`` settings (absolute paths in them anonymised) travel in every file's
schema metadata and in the dataset card, ``README.md``, whose front matter points the Hugging
Face Hub at the Parquet files (``dataset_card``). A trajectory file
that cannot be read stops the export with an error naming it; ``skip_broken`` leaves such
tasks out with a warning instead.

Needs ``pip install 'osworld-gym[export]'`` (pyarrow; datasets, whose PyYAML writes the card):
without it the command is refused before it reads anything, with exit status 2 and the command
that installs it.
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

from osworld_gym.commands.dataset_card import CARD_FILE, render_card
from osworld_gym.commands.export_actions import action_feature, action_rows
from osworld_gym.commands.export_metadata import METADATA_KEY, export_metadata
from osworld_gym.commands.results import (
    TASK_FILE,
    TRAJECTORY_FILE,
    TaskRecord,
    find_task_dirs,
    read_task,
    recorded_action,
)
from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.extras import check_modules, install_command

logger = logging.getLogger(__name__)

EXTRA = "export"
NEEDED_MODULES = ("pyarrow", "yaml")
"""What an export imports: pyarrow writes the Parquet files, PyYAML (with datasets, of the same
extra) the card's front matter."""
INSTALL_HINT = install_command(EXTRA)
_STRING = {"dtype": "string", "_type": "Value"}
_INT = {"dtype": "int64", "_type": "Value"}
_FLOAT = {"dtype": "float64", "_type": "Value"}
_BOOL = {"dtype": "bool", "_type": "Value"}
_IMAGE = {"_type": "Image"}


def _list(feature: Mapping[str, Any]) -> dict[str, Any]:
    return {"feature": dict(feature), "_type": "List"}


_ACTIONS = _list(action_feature())

STEP_FEATURES: dict[str, dict[str, Any]] = {
    "task_id": _STRING,
    "domain": _STRING,
    "instruction": _STRING,
    "rollout": _INT,
    "step": _INT,
    "image": _IMAGE,
    "response": _STRING,
    "action": _STRING,
    "parsed_actions": _ACTIONS,
    "action_kinds": _list(_STRING),
    "parse_error": _STRING,
    "reward": _FLOAT,
    "done": _BOOL,
    "score": _FLOAT,
    "num_steps": _INT,
    "source": _STRING,
}
"""Columns of ``--per step`` (``datasets`` feature dicts; a plain dict is a struct)."""

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
    "parsed_actions": _list(_ACTIONS),
    "parse_errors": _list(_STRING),
    "rewards": _list(_FLOAT),
    "source": _STRING,
}
"""Columns of ``--per trajectory``: ``images`` has one more entry than steps (the final screen)."""

_SOURCE_DOC = (
    "where the episode came from, relative to the exported folder: a task folder, or "
    "`replay.pkl#<entry>`"
)
STEP_COLUMNS: dict[str, str] = {
    "task_id": "the task's id",
    "domain": "its domain (empty when the source does not say)",
    "instruction": "the task's instruction, as the agent saw it",
    "rollout": "rollout index (0 for evaluation runs)",
    "step": "step number, from 1",
    "image": "the screen the action was chosen on (PNG as recorded; its path is relative)",
    "response": "the model's raw text (null for scripted agents)",
    "action": "the action exactly as recorded, as JSON text (model text or typed actions)",
    "parsed_actions": "the typed actions it parsed to, as structs (see Actions)",
    "action_kinds": "their kinds, in order",
    "parse_error": "why the action did not parse, null when it did",
    "reward": "the step's reward",
    "done": "whether this is the episode's last step",
    "score": "the episode's score (null: not scored)",
    "num_steps": "the episode's step count",
    "source": _SOURCE_DOC,
}
"""What each ``--per step`` column holds (the dataset card's table)."""
TRAJECTORY_COLUMNS: dict[str, str] = {
    "task_id": "the task's id",
    "domain": "its domain (empty when the source does not say)",
    "instruction": "the task's instruction, as the agent saw it",
    "rollout": "rollout index (0 for evaluation runs)",
    "score": "the episode's score (null: not scored)",
    "num_steps": "its step count",
    "images": "every screen: the one each step acted on, then the final screen",
    "responses": "the model's raw text per step",
    "actions": "each step's action exactly as recorded, as JSON text",
    "parsed_actions": "each step's typed actions, as lists of structs (see Actions)",
    "parse_errors": "each step's parse error, null when it parsed",
    "rewards": "each step's reward",
    "source": _SOURCE_DOC,
}
"""What each ``--per trajectory`` column holds."""
assert STEP_COLUMNS.keys() == STEP_FEATURES.keys(), "every step column is documented"
assert TRAJECTORY_COLUMNS.keys() == TRAJECTORY_FEATURES.keys(), "every column is documented"


class BrokenTrajectoryError(ValueError):
    """A task folder whose records cannot be read (bad JSON, a malformed action)."""


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
        steps: Per step: ``response``, ``action`` (JSON), ``parsed_actions`` (struct rows,
            see ``action_rows()``), ``kinds``,
            ``parse_error``, ``reward``.
        source: Where it came from, relative to what is exported (no local path).
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
    from osworld_gym.cli_options import add_output_dir, positive_int

    export = sub.add_parser("export", help="export trajectories as a Parquet dataset")
    export.add_argument("source", help="a run folder, replay.pkl, checkpoint or trainer output")
    add_output_dir(
        export,
        None,
        "the dataset folder to write (required)",
        old=("-o", "--output"),
        required=True,
    )
    export.add_argument(
        "--per", choices=["step", "trajectory"], default="step", help="what one row is"
    )
    export.add_argument("--min-score", type=float, help="keep episodes scoring at least this")
    export.add_argument(
        "--rows-per-file", type=positive_int, default=5000, help="rows per Parquet file at most"
    )
    export.add_argument(
        "--skip-broken",
        action="store_true",
        help="leave out, with a warning, task folders whose traj.jsonl or task.json cannot be "
        "read (default: stop with an error naming the file)",
    )
    export.set_defaults(func=export_command)


def export_command(args: argparse.Namespace) -> int:
    """Run the ``export`` subcommand.

    Raises:
        MissingExtraError: The export extra is not installed (before anything is read).
    """
    check_modules(EXTRA, NEEDED_MODULES, "osworld-gym export")
    source = Path(args.source)
    output = Path(args.output_dir)
    skip_broken = bool(args.skip_broken)
    try:
        check_output(output)
        episodes = list(_filter(load_episodes(source, skip_broken=skip_broken), args.min_score))
    except (OSError, ValueError, pickle.UnpicklingError) as e:
        hint = ""
        if isinstance(e, BrokenTrajectoryError):
            hint = ", or leave such tasks out with --skip-broken"
        sys.stderr.write(f"osworld-gym export: {e}{hint}\n")
        return 1
    if not episodes:
        sys.stderr.write(f"osworld-gym export: no trajectories to export from {source}\n")
        return 1
    try:
        metadata = export_metadata(source, _replay_file(source), args.per)
        files, rows = write_dataset(
            episodes, output, args.per, args.rows_per_file, metadata=metadata
        )
    except ImportError as e:  # installed, but broken: a missing part all the same (status 2)
        raise DependencyNotInstalled(
            f"missing extra {EXTRA!r} ({e}) for osworld-gym export: install with {INSTALL_HINT}"
        ) from e
    sys.stdout.write(
        f"{rows} {args.per} rows (of {len(episodes)} episodes) in {len(files)} file(s) and "
        f"{CARD_FILE} under {output}; load with datasets.load_dataset('parquet', "
        f"data_files='{output / '*.parquet'}')\n"
    )
    return 0


def _filter(episodes: Iterable[Episode], min_score: float | None) -> Iterator[Episode]:
    for episode in episodes:
        if min_score is None or (episode.score is not None and episode.score >= min_score):
            yield episode


def check_output(output: Path) -> None:
    """Refuse a dataset folder whose ``README.md`` is not a card an export wrote.

    A re-export replaces the dataset whole (its Parquet files and card); a folder holding
    someone's own README (``--output-dir .`` in a project) must not lose it.

    Raises:
        ValueError: ``output`` is a file, or holds a README.md of its own.
    """
    if output.exists() and not output.is_dir():
        raise ValueError(f"{output} is a file, not a dataset folder")
    card = output / CARD_FILE
    if card.is_file() and _card_metadata(card) is None:
        raise ValueError(
            f"{card} was not written by osworld-gym export; choose another output folder "
            "(an export replaces the dataset folder's README.md and train-*.parquet)"
        )


def _card_metadata(card: Path) -> dict[str, Any] | None:
    """The front matter of a card an export wrote, None for any other README."""
    text = card.read_text(errors="replace")
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        return None
    try:
        import yaml

        front = yaml.safe_load(text[4 : text.index("\n---\n", 3)])
    except ImportError:  # no PyYAML, no card to compare: recognise ours by its key alone
        return {} if f"\n{METADATA_KEY}:" in text else None
    except yaml.YAMLError:
        return None
    return front if isinstance(front, dict) and METADATA_KEY in front else None


# --- sources ------------------------------------------------------------------------------


def load_episodes(source: Path, *, skip_broken: bool = False) -> Iterator[Episode]:
    """The episodes of a run folder or of a replay buffer (see the module docstring).

    Args:
        source: The run folder (or a result dir, domain or task folder), or a replay buffer.
        skip_broken: Leave out, with a warning, the task folders whose records cannot be read;
            by default the first one raises.

    Raises:
        ValueError: ``source`` is neither.
        BrokenTrajectoryError: A task folder cannot be read (names the file and why).
    """
    replay = _replay_file(source)
    if replay is not None:
        yield from replay_episodes(replay, root=source)
        return
    if not source.is_dir():
        raise ValueError(f"{source} is neither a run folder nor a replay buffer")
    task_dirs = find_task_dirs(source)
    if not task_dirs:
        raise ValueError(f"no task folders (traj.jsonl, result.txt) under {source}")
    records = []
    for task_dir in task_dirs:
        record = _guarded(task_dir, skip_broken, read_task, task_dir)
        if record is not None:
            records.append(record)
    # The order of read_run: by domain, then task.
    for record in sorted(records, key=lambda r: (r.domain, r.task_id)):
        episode = _guarded(record.task_dir, skip_broken, run_episode, record, source)
        if episode is not None:
            yield episode


def _guarded(task_dir: Path, skip_broken: bool, read: Any, *args: Any) -> Any:
    """``read(*args)``; a record that cannot be read raises, or is skipped with a warning."""
    try:
        return read(*args)
    except ValueError as e:  # bad JSON or text (ValueErrors both), malformed actions
        reason = f"{task_dir}: {_bad_file(task_dir) or e}"
    if skip_broken:
        logger.warning("%s; left out of the export", reason)
        return None
    raise BrokenTrajectoryError(f"{reason}; fix or remove the file")


def _bad_file(task_dir: Path) -> str | None:
    """Which of the task's JSON files is broken, and where (None: they all parse)."""
    for name in (TASK_FILE, TRAJECTORY_FILE):
        path = task_dir / name
        if not path.is_file():
            continue
        try:
            lines = path.read_text().splitlines() if name == TRAJECTORY_FILE else [path.read_text()]
        except ValueError as e:
            return f"{name} is not UTF-8 text ({e})"
        for number, line in enumerate(lines, start=1):
            try:
                if line.strip():
                    json.loads(line)
            except ValueError as e:
                where = f" line {number}" if name == TRAJECTORY_FILE else ""
                return f"{name}{where} is not valid JSON ({e})"
    return None


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


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to the exported ``root`` (its own name when ``root`` is the file)."""
    base = root if root.is_dir() else root.parent
    try:
        relative = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:  # not under the source (a summary found above it): no local prefix
        relative = path.name
    return path.resolve().name if relative == "." else relative


def run_episode(record: TaskRecord, root: Path | None = None) -> Episode:
    """One task folder of a run as an episode.

    Args:
        record: The task folder, read.
        root: What is exported: paths are made relative to it (by default the run folder,
            two levels above the task folder).

    Raises:
        ValueError: A step's ``parsed_actions`` are malformed.
    """
    root = record.task_dir.parent.parent if root is None else root
    task = _relative(record.task_dir, root)
    screens: list[tuple[bytes | None, str | None]] = []
    steps = []
    for step in record.steps:
        screens.append(_read_screen(record.observation_path(step), task))
        try:
            parsed = action_rows(step.get("parsed_actions"))
        except ValueError as e:
            raise ValueError(f"{TRAJECTORY_FILE} step {step.get('step_num')}: {e}") from e
        info = step.get("info") or {}
        steps.append(
            {
                "response": step.get("response"),
                "action": json.dumps(step.get("action"), ensure_ascii=False),
                "parsed_actions": parsed,
                "kinds": [str(a["kind"]) for a in parsed],
                "parse_error": info.get("parse_error"),
                "reward": float(step.get("reward") or 0.0),
            }
        )
    final = record.steps[-1].get("screenshot_file") if record.steps else None
    screens.append(_read_screen(record.task_dir / str(final) if final else None, task))
    return Episode(
        task_id=record.task_id,
        domain=record.domain,
        instruction=record.instruction,
        rollout=int(record.meta.get("rollout") or 0),
        score=record.score,
        screens=screens,
        steps=steps,
        source=task,
    )


def _read_screen(path: Path | None, task: str) -> tuple[bytes | None, str | None]:
    """The PNG's bytes and its path relative to the exported folder (``<task>/<file>``)."""
    if path is None or not path.is_file():
        return None, None
    return path.read_bytes(), f"{task}/{path.name}"


def replay_episodes(path: Path, root: Path | None = None) -> Iterator[Episode]:
    """The stored trajectories of the trainer's replay buffer (``ReplayBuffer.save``).

    Read without the trainer (no torch): the file is a pickled ``state_dict`` whose entries hold
    ``Trajectory`` records.

    Args:
        path: The ``replay.pkl`` file.
        root: What is exported: ``source`` is relative to it (by default the file itself).

    Raises:
        ValueError: The file is not a replay buffer.
    """
    with open(path, "rb") as f:
        state = pickle.load(f)  # noqa: S301 - the user's own buffer (documented)
    if not isinstance(state, Mapping) or state.get("format") != "osworld-arpo-replay":
        raise ValueError(f"{path} is not an osworld-arpo replay buffer")
    where = _relative(path, path if root is None else root)
    for entry in sorted(state.get("entries") or [], key=lambda e: e.get("seq", 0)):
        trajectory = entry["trajectory"]
        screens: list[tuple[bytes | None, str | None]] = []
        steps = []
        for i, step in enumerate(trajectory.steps):
            name = f"{trajectory.task_id}/r{trajectory.rollout}/step_{i}.png"
            screens.append((step.screenshot, name if step.screenshot else None))
            # Model text has no parsed form in the buffer (its dialect is not recorded there).
            recorded = recorded_action(step.action)
            parsed = [] if isinstance(step.action, str) else action_rows(recorded)
            steps.append(
                {
                    "response": step.text,
                    "action": json.dumps(recorded, ensure_ascii=False),
                    "parsed_actions": parsed,
                    "kinds": [str(a["kind"]) for a in parsed],
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
            source=f"{where}#{entry.get('seq')}",
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


def arrow_schema(
    features: Mapping[str, Mapping[str, Any]], metadata: Mapping[str, Any] | None = None
) -> Any:
    """The Arrow schema of ``datasets`` features, with the metadata ``datasets`` reads.

    Args:
        features: Column name to ``datasets`` feature dict (a dict without ``_type`` is a
            struct of features).
        metadata: The export's description, stored under ``METADATA_KEY`` as JSON.
    """
    import pyarrow as pa

    def arrow_type(feature: Mapping[str, Any]) -> Any:
        kind = feature.get("_type")
        if kind is None:
            return pa.struct([(name, arrow_type(sub)) for name, sub in feature.items()])
        if kind == "Image":
            return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        if kind == "List":
            return pa.list_(arrow_type(feature["feature"]))
        return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
                "bool": pa.bool_()}[feature["dtype"]]  # fmt: skip

    schema_metadata = {"huggingface": json.dumps({"info": {"features": dict(features)}})}
    if metadata is not None:
        schema_metadata[METADATA_KEY] = json.dumps(metadata, ensure_ascii=False)
    fields = [pa.field(name, arrow_type(feature)) for name, feature in features.items()]
    return pa.schema(fields, metadata=schema_metadata)


def write_dataset(
    episodes: Iterable[Episode],
    output: Path,
    per: str,
    rows_per_file: int = 5000,
    *,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[list[Path], int]:
    """Write the rows as ``train-NNNNN.parquet`` files and, with ``metadata``, the card.

    Args:
        episodes: What to write.
        output: The dataset folder (created; its earlier Parquet files are removed).
        per: ``step`` or ``trajectory``.
        rows_per_file: Rows per Parquet file.
        metadata: ``export_metadata()``'s dict: stored
            in every file's schema metadata and in ``README.md``, the dataset card.

    Returns:
        The files written and the row count.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = STEP_FEATURES if per == "step" else TRAJECTORY_FEATURES
    schema = arrow_schema(features, metadata)
    output.mkdir(parents=True, exist_ok=True)
    for stale in output.glob("train-*.parquet"):  # a re-export replaces the dataset whole
        stale.unlink()

    counted = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal counted
        for episode in episodes:
            counted += 1
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
    if metadata is not None:
        columns = STEP_COLUMNS if per == "step" else TRAJECTORY_COLUMNS
        card = render_card(
            metadata, columns, rows=total, episodes=counted, files=[f.name for f in files]
        )
        (output / CARD_FILE).write_text(card)
    return files, total
