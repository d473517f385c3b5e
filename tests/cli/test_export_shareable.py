"""`osworld-gym export` writes datasets that can be shared: actions as struct columns, no local
path anywhere, the run's settings in the files and in a dataset card the Hub reads.

The run folders are written by `osworld-gym run` itself (its results layout and
``summary.json``), on a fake pool that hands back finished episodes: no desktop is started.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import osworld_gym.pool
from osworld_gym.actions import Click, Done, Hotkey, Scroll, TypeText, Wait
from osworld_gym.actions.types import ACTION_TYPES
from osworld_gym.cli import main
from osworld_gym.commands.export import BrokenTrajectoryError, load_episodes
from osworld_gym.commands.export_actions import ACTION_FIELDS, action_row
from osworld_gym.commands.export_metadata import scrub_paths
from osworld_gym.pool import StepRecord, Trajectory, TrajectoryGroup, encode_screenshot
from osworld_gym.version import __version__

datasets = pytest.importorskip("datasets", reason="pip install 'osworld-gym[export]'")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.heavy  # datasets and pyarrow: seconds to import

SUITE = Path(__file__).resolve().parents[2] / "envs" / "desktop-basics"
CHMOD, CALC = "os-chmod-script", "calc-rename-sheet"
ACTIONS: dict[str, list[Any]] = {
    CHMOD: [[Click(x=10, y=20)], [TypeText(text="chmod +x ü.sh\n"), Hotkey(keys=("ctrl", "s"))],
            [Wait(seconds=1)], Done()],
    CALC: [Scroll(x=5, y=6, dy=-3), Done(answer="ok")],
}  # fmt: skip


def _episode(task_id: str) -> Trajectory:
    rng = np.random.default_rng(len(task_id))
    shots = [
        encode_screenshot(rng.integers(0, 255, (24, 32, 3), dtype=np.uint8))
        for _ in range(len(ACTIONS[task_id]) + 1)
    ]
    steps = [
        StepRecord(shots[i], action, reward=float(i == len(ACTIONS[task_id]) - 1))
        for i, action in enumerate(ACTIONS[task_id])
    ]
    return Trajectory(
        task_id, 0, steps=steps, final_screenshot=shots[-1], score=1.0, terminated=True
    )


class _Pool:
    def __init__(self, spec: Any, num_envs: int, config: Any) -> None:
        pass

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Collector:
    def __init__(self, pool: Any, policy: Any, config: Any) -> None:
        self.requeued = 0

    def groups(self, task_ids: Sequence[str]) -> Iterator[TrajectoryGroup]:
        for task_id in task_ids:
            yield TrajectoryGroup(task_id, [_episode(task_id)])


@pytest.fixture()
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run folder as `osworld-gym run --tasks <absolute folder>` writes it."""
    monkeypatch.setattr(osworld_gym.pool, "EnvPool", _Pool)
    monkeypatch.setattr(osworld_gym.pool, "RolloutCollector", _Collector)
    result_dir = tmp_path / "results"
    argv = ["run", "--tasks", str(SUITE), "--task-id", CHMOD, "--task-id", CALC]
    assert main([*argv, "--progress", "lines", "--output-dir", str(result_dir)]) == 0
    folder = result_dir / "structured" / "screenshot" / "oracle"
    assert (folder / "summary.json").is_file()
    return folder


def export(*args: str) -> int:
    return main(["export", *args])


def _load(folder: Path, **kwargs: Any) -> datasets.Dataset:
    cache = str(folder.parent / "hf-cache")
    files = kwargs.pop("data_files", str(folder / "*.parquet"))
    path = kwargs.pop("path", "parquet")
    return datasets.load_dataset(path, data_files=files, split="train", cache_dir=cache, **kwargs)


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a row (struct fields, lists, image paths)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _assert_no_local_path(out: Path, *local: Path) -> None:
    """No file of the dataset names ``local``: raw bytes, decoded cells and schema metadata."""
    needles = [str(p) for p in local] + [str(p.resolve()) for p in local]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert not any(n.encode() in data for n in needles), path
    for path in out.glob("*.parquet"):
        table = pq.read_table(path)  # decompressed: a compressed page could hide a path
        cells = [s for row in table.to_pylist() for s in _strings(row)]
        meta = [v.decode() for v in (table.schema.metadata or {}).values()]
        for text in cells + meta:
            assert not any(n in text for n in needles), text[:200]
            assert not text.startswith("/"), text[:200]


def _card(out: Path) -> tuple[dict[str, Any], str]:
    text = (out / "README.md").read_text()
    assert text.startswith("---\n")
    front, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(front), body


def test_a_step_export_is_shareable(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    assert export(str(run_dir), "--output-dir", str(out), "--per", "step") == 0
    rows = _load(out)
    assert len(rows) == sum(len(a) for a in ACTIONS.values())

    # Actions are features: a list of structs of typed fields, not JSON text.
    feature = rows.features["parsed_actions"]
    assert isinstance(feature, datasets.List)
    assert set(feature.feature) == set(ACTION_FIELDS)
    assert feature.feature["x"] == datasets.Value("int64")
    assert feature.feature["seconds"] == datasets.Value("float64")
    assert feature.feature["keys"] == datasets.List(datasets.Value("string"))
    by_key = {(r["task_id"], r["step"]): r for r in rows}
    typing_step = by_key[(CHMOD, 2)]["parsed_actions"]
    assert [a["kind"] for a in typing_step] == ["type", "hotkey"]
    assert typing_step[0]["text"] == "chmod +x ü.sh\n" and typing_step[0]["x"] is None
    assert typing_step[1]["keys"] == ["ctrl", "s"] and typing_step[1]["text"] is None
    assert by_key[(CHMOD, 3)]["parsed_actions"][0]["seconds"] == 1.0
    scroll = by_key[(CALC, 1)]["parsed_actions"][0]
    assert (scroll["x"], scroll["y"], scroll["dy"], scroll["dx"]) == (5, 6, -3, 0)
    assert by_key[(CALC, 2)]["parsed_actions"][0] == {
        **dict.fromkeys(ACTION_FIELDS),
        "kind": "done",
        "answer": "ok",
    }
    # The recorded action is still there, as recorded.
    assert json.loads(by_key[(CALC, 2)]["action"]) == [{"kind": "done", "answer": "ok"}]

    # References are relative to the run folder, and name files that are there.
    raw = rows.cast_column("image", datasets.Image(decode=False))
    for row in raw:
        assert row["source"] == f"{row['domain']}/{row['task_id']}"
        assert row["image"]["path"].startswith(row["source"] + "/step_")
        assert (run_dir / row["image"]["path"]).read_bytes() == row["image"]["bytes"]
    _assert_no_local_path(out, run_dir, tmp_path, SUITE)

    # The run's settings travel in every file, absolute paths anonymised.
    (parquet,) = out.glob("*.parquet")
    metadata = json.loads(pq.read_schema(parquet).metadata[b"osworld_gym"])
    summary = json.loads((run_dir / "summary.json").read_text())
    settings = metadata["runs"]["."]["settings"]
    assert settings["tasks"] == "<local>/desktop-basics"
    assert {k: v for k, v in settings.items() if k != "tasks"} == {
        k: v for k, v in summary["settings"].items() if k != "tasks"
    }
    assert metadata["runs"]["."]["overall"] == summary["overall"]
    assert metadata["osworld_gym_version"] == __version__ and metadata["per"] == "step"

    # The card: front matter the Hub reads, pointing at the Parquet files only.
    front, body = _card(out)
    assert front["license"] == "other"
    assert front["task_categories"] == ["image-text-to-text"]
    assert front["size_categories"] == ["n<1K"]
    assert front["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "train-*.parquet"}]}
    ]
    assert front["osworld_gym"] == metadata
    for column in rows.column_names:
        assert f"| `{column}` |" in body
    assert "<local>/desktop-basics" in body and __version__ in body
    hub = pytest.importorskip("huggingface_hub")
    card = hub.DatasetCard.load(out / "README.md")
    assert card.data.configs == front["configs"]
    # Loading the folder itself (as from the Hub) goes through the card's configs.
    assert len(_load(out, path=str(out), data_files=None)) == len(rows)


def test_a_trajectory_export_has_lists_of_action_structs(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "episodes"
    assert export(str(run_dir), "--output-dir", str(out), "--per", "trajectory") == 0
    rows = {r["task_id"]: r for r in _load(out)}
    assert len(rows) == 2
    feature = _load(out).features["parsed_actions"]
    assert feature.feature.feature["kind"] == datasets.Value("string")
    chmod = rows[CHMOD]
    assert [[a["kind"] for a in step] for step in chmod["parsed_actions"]] == [
        ["click"], ["type", "hotkey"], ["wait"], ["done"]
    ]  # fmt: skip
    assert chmod["parsed_actions"][0][0]["button"] == "left"
    assert len(chmod["images"]) == chmod["num_steps"] + 1
    front, _ = _card(out)
    assert front["task_categories"] == ["reinforcement-learning"]
    _assert_no_local_path(out, run_dir, tmp_path, SUITE)


def test_a_broken_trajectory_file_is_named_or_skipped(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: Any
) -> None:
    broken = run_dir / "os" / CHMOD / "traj.jsonl"
    lines = broken.read_text().splitlines()
    broken.write_text("\n".join([lines[0], lines[1][:40], *lines[2:]]) + "\n")
    out = tmp_path / "dataset"
    capsys.readouterr()
    assert export(str(run_dir), "--output-dir", str(out)) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(broken.parent) in err
    assert "traj.jsonl line 2 is not valid JSON" in err and "--skip-broken" in err
    assert not out.exists()  # nothing half-written

    assert export(str(run_dir), "--output-dir", str(out), "--skip-broken") == 0
    assert {r["task_id"] for r in _load(out)} == {CALC}

    with caplog.at_level(logging.WARNING, logger="osworld_gym.commands.export"):
        kept = list(load_episodes(run_dir, skip_broken=True))
    assert [e.task_id for e in kept] == [CALC]
    assert any(str(broken.parent) in r.getMessage() for r in caplog.records)


def test_a_malformed_parsed_action_names_its_step(run_dir: Path) -> None:
    path = run_dir / "libreoffice_calc" / CALC / "traj.jsonl"
    steps = [json.loads(line) for line in path.read_text().splitlines()]
    steps[1]["parsed_actions"] = [{"kind": "done", "answer": "ok", "colour": "red"}]
    path.write_text("".join(json.dumps(s) + "\n" for s in steps))
    with pytest.raises(BrokenTrajectoryError, match=r"traj.jsonl step 2: .*'colour'"):
        list(load_episodes(run_dir))
    steps[1]["parsed_actions"] = [{"kind": "click", "x": "12", "y": 3}]
    path.write_text("".join(json.dumps(s) + "\n" for s in steps))
    with pytest.raises(BrokenTrajectoryError, match=r"click.x must be int64, got '12'"):
        list(load_episodes(run_dir))


def test_an_export_never_overwrites_a_readme_it_did_not_write(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "project"
    out.mkdir()
    (out / "README.md").write_text("# my project\n")
    assert export(str(run_dir), "--output-dir", str(out)) == 1
    assert "was not written by osworld-gym export" in capsys.readouterr().err
    assert (out / "README.md").read_text() == "# my project\n"
    assert not list(out.glob("*.parquet"))
    # Its own card is replaced by a re-export, with the dataset.
    fresh = tmp_path / "fresh"
    assert export(str(run_dir), "--output-dir", str(fresh)) == 0
    assert export(str(run_dir), "--output-dir", str(fresh), "--per", "trajectory") == 0
    assert _card(fresh)[0]["osworld_gym"]["per"] == "trajectory"
    assert len(_load(fresh)) == 2


def test_every_typed_action_fits_the_struct() -> None:
    samples = {
        "click": Click(x=1, y=2, clicks=2),
        "type": TypeText(text="a"),
        "hotkey": Hotkey(keys=("alt", "tab")),
        "scroll": Scroll(dx=2),
        "wait": Wait(seconds=0.5),
        "done": Done(answer="yes"),
    }
    for kind, cls in ACTION_TYPES.items():
        names = {"kind", *(f.name for f in dataclasses.fields(cls))}
        assert names <= set(ACTION_FIELDS), kind
    for action in samples.values():
        row = action_row(action.to_dict())
        assert {k: v for k, v in row.items() if k in action.to_dict()} == action.to_dict()
        assert all(v is None for k, v in row.items() if k not in action.to_dict())


def test_paths_are_scrubbed_and_urls_kept() -> None:
    root = Path("/data/run")
    value = {
        "tasks": "/home/me/evaluation_examples",
        "inside": "/data/run/os/t1/step_0.png",
        "url": "http://127.0.0.1:8000/v1",
        "command": "osworld-gym run --result-dir=/srv/results --tasks /x/y",
        "list": ["/", "relative/path", 1.5e-6],
    }
    assert scrub_paths(value, root) == {
        "tasks": "<local>/evaluation_examples",
        "inside": "os/t1/step_0.png",
        "url": "http://127.0.0.1:8000/v1",
        "command": "osworld-gym run --result-dir=<local>/results --tasks <local>/y",
        "list": ["<local>", "relative/path", 1.5e-6],
    }
