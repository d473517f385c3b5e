"""`osworld-gym export`: a run and a replay buffer as Parquet that `datasets` loads, images and
actions intact."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import OracleRun, osworld_gym
from PIL import Image

from osworld_gym.commands.export_actions import action_row
from osworld_gym.pool import StepRecord, Trajectory

datasets = pytest.importorskip("datasets", reason="pip install 'osworld-gym[export]'")

pytestmark = pytest.mark.heavy  # datasets and the console script


def _load(folder: Path) -> datasets.Dataset:
    files = str(folder / "*.parquet")
    cache = str(folder.parent / "hf-cache")
    return datasets.load_dataset("parquet", data_files=files, split="train", cache_dir=cache)


def _pixels(data: bytes | Image.Image) -> np.ndarray:
    image = data if isinstance(data, Image.Image) else Image.open(io.BytesIO(data))
    return np.asarray(image.convert("RGB"))


@pytest.mark.battery
@pytest.mark.desktop
@pytest.mark.apps
def test_export_of_a_run_round_trips_images_and_actions(
    oracle_run: OracleRun, tmp_path: Path
) -> None:
    assert oracle_run.done.returncode == 0, oracle_run.done.stderr[-2000:]
    run_dir = oracle_run.run_dir
    steps_out = tmp_path / "steps"
    done = osworld_gym("export", str(run_dir), "--output-dir", str(steps_out), "--per", "step")
    assert done.returncode == 0, done.stderr
    rows = _load(steps_out)
    trajectories = {p.parent.name: p for p in run_dir.rglob("traj.jsonl")}
    total = sum(len(p.read_text().splitlines()) for p in trajectories.values())
    assert len(rows) == total
    assert isinstance(rows.features["image"], datasets.Image)
    by_key = {(r["task_id"], r["step"]): r for r in rows}
    for task_id in ("impress-duplicate-slide", "os-chmod-script", "editor-replace-word"):
        task_dir = trajectories[task_id].parent
        for line in trajectories[task_id].read_text().splitlines():
            step = json.loads(line)
            row = by_key[(task_id, step["step_num"])]
            # The image is the screen the action was chosen on, pixel for pixel.
            original = (task_dir / step["observation_file"]).read_bytes()
            assert np.array_equal(_pixels(row["image"]), _pixels(original))
            assert json.loads(row["action"]) == step["action"]
            assert row["parsed_actions"] == [action_row(a) for a in step["parsed_actions"]]
            assert row["action_kinds"] == [a["kind"] for a in step["parsed_actions"]]
            assert row["score"] == 1.0 and row["done"] == step["done"]
            assert row["source"] == f"{task_dir.parent.name}/{task_id}"
    # Shareable: no file of the dataset names the local run folder.
    for path in steps_out.iterdir():
        assert str(run_dir).encode() not in path.read_bytes(), path
    assert all(str(run_dir) not in v for r in rows for v in (r["source"], r["instruction"]))

    per_episode = tmp_path / "episodes"
    done = osworld_gym(
        "export",
        str(run_dir),
        "--output-dir",
        str(per_episode),
        "--per",
        "trajectory",
        "--min-score",
        "1",
    )
    assert done.returncode == 0, done.stderr
    episodes = _load(per_episode)
    assert len(episodes) == len(trajectories)
    episode = next(e for e in episodes if e["task_id"] == "os-chmod-script")
    assert len(episode["images"]) == episode["num_steps"] + 1  # + the final screen
    final = sorted(trajectories["os-chmod-script"].parent.glob("step_2_*.png"))[0]
    assert np.array_equal(_pixels(episode["images"][-1]), _pixels(final.read_bytes()))


def test_export_of_a_replay_buffer(tmp_path: Path) -> None:
    from osworld_agents.arpo.replay import ReplayBuffer

    from osworld_gym.pool import encode_screenshot

    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (48, 64, 3), dtype=np.uint8) for _ in range(3)]
    shots = [encode_screenshot(f) for f in frames]
    texts = ["Thought: a\nAction: click(start_box='(10,20)')", "Action: finished(content='')"]
    trajectory = Trajectory(
        task_id="t1",
        rollout=3,
        instruction="do it",
        steps=[
            StepRecord(
                screenshot=shots[i],
                action=texts[i],
                text=texts[i],
                reward=float(i),
                extra={"token_ids": [1, 2, 3]},
            )  # fmt: skip
            for i in range(2)
        ],
        final_screenshot=shots[2],
        score=1.0,
        terminated=True,
    )
    buffer = ReplayBuffer(seed=0)
    assert buffer.add(trajectory)
    checkpoint = tmp_path / "output" / "checkpoints" / "ckpt-2"
    checkpoint.mkdir(parents=True)
    buffer.save(checkpoint / "replay.pkl")
    (tmp_path / "output" / "checkpoints" / "latest").write_text("ckpt-2\n")
    config = {"output_dir": str(tmp_path / "output"), "model": str(tmp_path / "m7"), "lr": 1e-6}
    (checkpoint / "config.json").write_text(json.dumps(config))

    out = tmp_path / "dataset"
    done = osworld_gym(
        "export", str(tmp_path / "output"), "--output-dir", str(out), "--per", "trajectory"
    )
    assert done.returncode == 0, done.stderr
    (row,) = _load(out)
    assert row["task_id"] == "t1" and row["rollout"] == 3 and row["score"] == 1.0
    assert row["responses"] == texts and [json.loads(a) for a in row["actions"]] == texts
    assert row["source"] == "checkpoints/ckpt-2/replay.pkl#0"
    assert row["parsed_actions"] == [[], []]  # model text: its dialect is not in the buffer
    card = (out / "README.md").read_text()
    assert str(tmp_path) not in card
    front = yaml.safe_load(card.split("---\n")[1])
    trainer = front["osworld_gym"]["runs"]["checkpoints/ckpt-2"]["trainer_config"]
    assert trainer == {"output_dir": ".", "model": "<local>/m7", "lr": 1e-6}
    assert [np.asarray(i.convert("RGB")).tolist() for i in row["images"]] == [
        f.tolist() for f in frames
    ]
    steps = tmp_path / "steps"
    assert (
        osworld_gym("export", str(checkpoint / "replay.pkl"), "--output-dir", str(steps)).returncode
        == 0
    )
    assert [r["step"] for r in _load(steps)] == [1, 2]


def test_export_refuses_what_is_not_a_source(tmp_path: Path) -> None:
    done = osworld_gym("export", str(tmp_path), "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 1 and "no task folders" in done.stderr
