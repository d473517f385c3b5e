"""The dataset card (``README.md``) of an exported dataset, as the Hugging Face Hub reads it.

YAML front matter first: ``configs`` points the Hub's viewer and ``datasets.load_dataset`` at
the Parquet files (and at nothing else in the folder), ``license`` is ``other`` until the user
sets it (the screenshots show whatever the tasks' apps showed), and the export's metadata (the
runs' settings) is kept under the ``osworld_gym`` key. Then, for people: what the data is, how
to load it, what each column means, the settings of the runs, and how it was made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from osworld_gym.commands.export_actions import ACTION_FIELDS
from osworld_gym.commands.export_metadata import METADATA_KEY
from osworld_gym.evaluation.references import REFERENCE_SOURCES

__all__ = ["CARD_FILE", "DATA_FILES", "render_card", "size_category"]

CARD_FILE = "README.md"
DATA_FILES = "train-*.parquet"
"""The pattern of the dataset's Parquet files (what ``configs`` names)."""
TASK_CATEGORY = {"step": "image-text-to-text", "trajectory": "reinforcement-learning"}
"""The Hub task category: one screen to one action suits SFT; whole episodes suit offline RL."""
TAGS = ("osworld", "osworld-gym", "gui-agent", "computer-use", "trajectories", "screenshots")
# The settings a reader looks for first, in this order; the rest are in the JSON block.
HEADLINE_SETTINGS = ("tasks", "agent", "model", "action_space", "mode", "max_steps",
                     "screen_size", "provider", "evaluation", "evaluator_reference", "seed",
                     "temperature", "package_version")  # fmt: skip


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` value of a row count.

    Example:
        >>> size_category(37)
        'n<1K'
    """
    bounds = ((10**3, "n<1K"), (10**4, "1K<n<10K"), (10**5, "10K<n<100K"),
              (10**6, "100K<n<1M"), (10**7, "1M<n<10M"), (10**8, "10M<n<100M"))  # fmt: skip
    for bound, name in bounds:
        if rows < bound:
            return name
    return "n>1T" if rows > 10**12 else "100M<n<1B" if rows < 10**9 else "1B<n<10B"


def render_card(
    metadata: Mapping[str, Any],
    columns: Mapping[str, str],
    *,
    rows: int,
    episodes: int,
    files: Sequence[str],
) -> str:
    """The card's text.

    Args:
        metadata: ``export_metadata()``'s dict.
        columns: Column name to what it holds, in the files' order.
        rows: Rows written.
        episodes: Episodes they come from.
        files: The Parquet files, relative to the dataset folder.

    Raises:
        ImportError: PyYAML is missing (``datasets``, of the same extra, depends on it).
    """
    import yaml

    per = str(metadata["per"])
    name = f"osworld-gym {metadata['source']} ({per}s)"
    front = {
        "license": "other",
        "pretty_name": name,
        "task_categories": [TASK_CATEGORY[per]],
        "tags": list(TAGS),
        "size_categories": [size_category(rows)],
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": DATA_FILES}]}
        ],
        METADATA_KEY: dict(metadata),
    }
    header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100)
    parts = [
        f"---\n{header}---\n",
        f"# {name}\n",
        _intro(metadata, rows, episodes, files),
        _loading(per),
        _columns(columns),
        _actions(),
        _settings(metadata),
        _provenance(metadata),
    ]
    return "\n".join(parts)


def _intro(metadata: Mapping[str, Any], rows: int, episodes: int, files: Sequence[str]) -> str:
    kind = "a trainer's replay buffer" if metadata["source_kind"] == "replay_buffer" else "a run"
    unit = "one row per step" if metadata["per"] == "step" else "one row per episode"
    return (
        f"Desktop-task trajectories recorded with [osworld-gym](https://pypi.org/project/"
        f"osworld-gym/) (OSWorld's tasks as a Gymnasium environment), exported from {kind} "
        f"(`{metadata['source']}`): {rows} rows, {unit}, from {episodes} episodes, in "
        f"{len(files)} Parquet file(s). Screenshots are embedded as PNG images; every path in "
        "the data is relative to the exported folder.\n"
    )


def _loading(per: str) -> str:
    return (
        "## Loading\n\n"
        "```python\n"
        "from datasets import load_dataset\n\n"
        f'ds = load_dataset("parquet", data_files="{DATA_FILES}", split="train")\n'
        '# or, once pushed to the Hub: load_dataset("<user>/<name>", split="train")\n'
        "```\n\n"
        + (
            "Each row is the screen an action was chosen on (`image`), the model's text and the "
            "actions it parsed to: a supervised fine-tuning pair.\n"
            if per == "step"
            else "Each row is one episode: every screen (one more than steps: the final screen "
            "closes it), every response and its actions, the rewards and the score.\n"
        )
    )


def _columns(columns: Mapping[str, str]) -> str:
    lines = ["## Columns\n", "| column | what it holds |", "|---|---|"]
    lines += [f"| `{name}` | {text} |" for name, text in columns.items()]
    return "\n".join(lines) + "\n"


def _actions() -> str:
    fields = ", ".join(f"`{name}`" for name in ACTION_FIELDS)
    return (
        "## Actions\n\n"
        "`parsed_actions` holds typed actions as structs with the fields "
        f"{fields}. `kind` names the action (`click`, `type`, `hotkey`, `scroll`, `done`, ...); "
        "a field the action does not have is null. Points are screen pixels of the run's "
        "screen size. `action` keeps the action exactly as recorded (JSON text: the model's "
        "action text, or the typed actions), so nothing is lost to the columns.\n"
    )


def _reference_line(settings: Mapping[str, Any]) -> list[str]:
    """Where the scores' evaluator reference comes from (or that the source did not say)."""
    reference = settings.get("evaluator_reference")
    if reference in REFERENCE_SOURCES:
        return [f"- scores follow {REFERENCE_SOURCES[reference]}"]
    if settings and "evaluator_reference" not in settings and "evaluation" in settings:
        # Run folders written before the reference was recorded scored as desktop-env 1.0.2.
        return ["- evaluator_reference: not recorded (such runs scored as `osworld-1.0.2`)"]
    return []


def _settings(metadata: Mapping[str, Any]) -> str:
    runs = metadata.get("runs") or {}
    out = ["## Settings of the source\n"]
    if not runs:
        out.append("The source had no `summary.json` (or trainer `config.json`): no settings.\n")
    for folder, run in runs.items():
        settings = run.get("settings") or run.get("trainer_config") or {}
        overall = run.get("overall") or {}
        out.append(f"### `{folder}`\n")
        lines = [f"- {key}: `{json.dumps(settings[key])}`" for key in HEADLINE_SETTINGS
                 if key in settings]  # fmt: skip
        lines += _reference_line(settings)
        if overall:
            lines.append(
                f"- scored {overall.get('scored')} of {overall.get('tasks')} tasks "
                f"({overall.get('errors')} errors), success rate "
                f"{overall.get('success_rate')}"
            )
        if lines:
            out.append("\n".join(lines) + "\n")
        out.append(
            "<details><summary>all of it</summary>\n\n```json\n"
            + json.dumps(run, indent=2, ensure_ascii=False)
            + "\n```\n\n</details>\n"
        )
    out.append(
        f"The same settings are in the YAML front matter (`{METADATA_KEY}`) and in every "
        f"Parquet file's schema metadata (key `{METADATA_KEY}`).\n"
    )
    return "\n".join(out)


def _provenance(metadata: Mapping[str, Any]) -> str:
    return (
        "## How it was made\n\n"
        f"`osworld-gym export --per {metadata['per']}` (osworld-gym "
        f"{metadata['osworld_gym_version']}) on {metadata['exported']}. Absolute paths in the "
        "settings were replaced by `<local>/<name>`.\n\n"
        "## License\n\n"
        "Not set (`license: other`): the screenshots show what the tasks' apps and files "
        "showed. Set `license` in the front matter before sharing.\n"
    )
