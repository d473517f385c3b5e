"""compare_audios and compare_videos on recordings and clips the tests synthesise.

Needs the ``media`` extra (skipped without it). When OSWorld's metrics/vlc.py is installed (see
osworld_ref) each score is also checked against OSWorld's own function on the same files.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
import wave
from pathlib import Path
from typing import Any

import osworld_ref
import pytest

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.metrics import _deps as deps
from osworld_gym.evaluation.metrics import get_metric

np = pytest.importorskip("numpy")
pytest.importorskip("librosa")
pytest.importorskip("fastdtw")
cv2 = pytest.importorskip("cv2")
pytest.importorskip("imagehash")

pytestmark = pytest.mark.heavy  # librosa and numba: seconds to import

compare_audios = get_metric("compare_audios")
compare_videos = get_metric("compare_videos")
RATE = 22050


def write_wav(path: Path, samples: Any, rate: int = RATE) -> str:
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return str(path)


def melody(notes: list[float], seconds: float = 0.4, rate: int = RATE) -> Any:
    t = np.arange(int(seconds * rate)) / rate
    return np.concatenate([0.5 * np.sin(2 * np.pi * f * t) * np.hanning(t.size) for f in notes])


@pytest.fixture(scope="module")
def sounds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("audio")
    tune = melody([440, 660, 550, 880, 330])
    rng = np.random.default_rng(0)
    out = {
        "tune": write_wav(d / "tune.wav", tune),
        "tune_copy": write_wav(d / "tune_copy.wav", tune),
        "tune_quiet_noisy": write_wav(
            d / "noisy.wav", 0.6 * tune + 0.01 * rng.standard_normal(tune.size)
        ),
        "tune_44k": write_wav(
            d / "tune44.wav", melody([440, 660, 550, 880, 330], rate=44100), 44100
        ),
        "other": write_wav(d / "other.wav", melody([200, 1200, 300, 1500, 250])),
        "noise": write_wav(d / "noise.wav", 0.3 * rng.standard_normal(tune.size)),
        "empty": write_wav(d / "empty.wav", np.zeros(0)),
    }
    corrupt = d / "corrupt.mp3"
    corrupt.write_bytes(b"this is not audio at all")
    out["corrupt"] = str(corrupt)
    corrupt2 = d / "corrupt2.wav"
    corrupt2.write_bytes(b"RIFF\x00\x00")
    out["corrupt2"] = str(corrupt2)
    if shutil.which("ffmpeg"):
        mp3 = d / "tune.mp3"
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-y", "-i", out["tune"], "-b:a", "128k", str(mp3)],
            check=True,
        )
        out["tune_mp3"] = str(mp3)
    return out


def test_identical_recordings_score_one(sounds: dict[str, str]) -> None:
    assert compare_audios(sounds["tune"], sounds["tune"]) == pytest.approx(1.0)
    assert compare_audios(sounds["tune"], sounds["tune_copy"]) == pytest.approx(1.0)


def test_similarity_orders_recordings(sounds: dict[str, str]) -> None:
    same = compare_audios(sounds["tune"], sounds["tune_quiet_noisy"])
    resampled = compare_audios(sounds["tune_44k"], sounds["tune"])
    other = compare_audios(sounds["tune"], sounds["other"])
    noise = compare_audios(sounds["tune"], sounds["noise"])
    assert 0.0 < noise < other < same < 1.0
    assert 0.8 < resampled <= 1.0
    if "tune_mp3" in sounds:  # what an agent's MP3 export of the reference gives
        assert compare_audios(sounds["tune_mp3"], sounds["tune"]) > same - 0.05


def test_missing_empty_and_corrupt_files(sounds: dict[str, str]) -> None:
    assert compare_audios(None, sounds["tune"]) == 0.0
    assert compare_audios(sounds["tune"], None) == 0.0
    assert compare_audios(sounds["empty"], sounds["tune"]) == 0.0
    assert compare_audios(sounds["tune"], sounds["corrupt"]) == 0.0
    # OSWorld counts two files without audio as the same recording.
    assert compare_audios(sounds["corrupt"], sounds["corrupt2"]) == 1.0
    assert compare_audios(sounds["empty"], sounds["corrupt"]) == 1.0


def write_video(path: Path, frames: list[Any], fps: int = 10) -> str:
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (width, height))
    for frame in frames:
        writer.write(frame)
    writer.release()
    return str(path)


def scene(i: int, size: tuple[int, int] = (96, 128)) -> Any:
    """A frame with a bright box moving over a horizontal ramp (top-bottom asymmetric)."""
    h, w = size
    frame = np.zeros((h, w, 3), np.uint8)
    frame[:, :, 1] = np.linspace(0, 255, h, dtype=np.uint8)[:, None]
    x = 8 + (i * 3) % (w - 40)
    frame[10:40, x : x + 30] = (255, 255, 255)
    cv2.putText(frame, str(i % 10), (70, 85), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 0, 255), 2)
    return frame


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("video")
    frames = [scene(i) for i in range(30)]
    out = {
        "clip": write_video(d / "clip.avi", frames),
        "copy": write_video(d / "copy.avi", frames),
        "flipped": write_video(d / "flipped.avi", [cv2.flip(f, 0) for f in frames]),
        "short": write_video(d / "short.avi", frames[:20]),
        "long": write_video(d / "long.avi", [scene(i) for i in range(130)]),
        "long2": write_video(d / "long2.avi", [scene(i) for i in range(130)] + frames),
        # the same clip with 4 upside-down frames: within the allowed 5 mismatches
        "few_bad": write_video(
            d / "few_bad.avi", [cv2.flip(f, 0) if i < 4 else f for i, f in enumerate(frames)]
        ),
    }
    garbage = d / "garbage.mp4"
    garbage.write_bytes(b"not a video")
    out["garbage"] = str(garbage)
    return out


def test_compare_videos(clips: dict[str, str], tmp_path: Path) -> None:
    assert compare_videos(clips["clip"], clips["copy"]) == 1.0
    assert compare_videos(clips["clip"], clips["flipped"]) == 0.0  # OSWorld's vlc/aa4b5023
    assert compare_videos(clips["clip"], clips["short"]) == 0.0  # one ends first
    assert compare_videos(clips["few_bad"], clips["clip"]) == 1.0
    assert compare_videos(clips["few_bad"], clips["clip"], threshold=3) == 0.0
    # only the first max_frames_to_check frames count
    assert compare_videos(clips["long"], clips["long2"]) == 1.0
    assert compare_videos(clips["long"], clips["long2"], max_frames_to_check=200) == 0.0
    assert compare_videos(None, clips["clip"]) == 0.0
    assert compare_videos(clips["garbage"], clips["clip"]) == 0.0
    # OSWorld: two unreadable files "end" together
    assert compare_videos(clips["garbage"], str(tmp_path / "absent.mp4")) == 1.0


def test_missing_media_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "librosa", None)  # import librosa now raises ImportError
    with pytest.raises(DependencyNotInstalled, match=r"osworld-gym\[media\]"):
        compare_audios(str(tmp_path / "a.wav"), str(tmp_path / "b.wav"))
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(DependencyNotInstalled, match="opencv-python-headless"):
        compare_videos(str(tmp_path / "a.mp4"), str(tmp_path / "b.mp4"))
    with pytest.raises(DependencyNotInstalled, match=r"osworld-gym\[eval\]"):
        deps.require("no_such_module_xyz")


# --- against OSWorld's own metrics --------------------------------------------------------------


@pytest.fixture()
def osworld_vlc(monkeypatch: pytest.MonkeyPatch) -> Any:
    """OSWorld's metrics/vlc.py; acoustid and scikit-image (unused here) stubbed if absent."""
    for name in ("acoustid", "skimage", "skimage.metrics"):
        try:
            __import__(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.structural_similarity = None  # type: ignore[attr-defined]
            monkeypatch.setitem(sys.modules, name, stub)
    return osworld_ref.load("evaluators/metrics/vlc.py")


AUDIO_PAIRS = [
    ("tune", "tune_copy"),
    ("tune", "tune_quiet_noisy"),
    ("tune_44k", "tune"),
    ("tune", "other"),
    ("noise", "tune"),
    ("empty", "tune"),
    ("corrupt", "corrupt2"),
    ("tune_mp3", "tune"),
]


def test_same_audio_scores_as_osworld(osworld_vlc: Any, sounds: dict[str, str]) -> None:
    for a, b in AUDIO_PAIRS:
        if a not in sounds:
            continue
        ours = compare_audios(sounds[a], sounds[b])
        theirs = float(osworld_vlc.compare_audios(sounds[a], sounds[b]))
        assert ours == pytest.approx(theirs, abs=1e-9), (a, b)


def test_same_video_scores_as_osworld(osworld_vlc: Any, clips: dict[str, str]) -> None:
    pairs = [("clip", "copy"), ("clip", "flipped"), ("clip", "short"), ("few_bad", "clip")]
    pairs += [("long", "long2"), ("garbage", "clip")]
    for a, b in pairs:
        for kwargs in ({}, {"threshold": 3}, {"max_frames_to_check": 200}):
            ours = compare_videos(clips[a], clips[b], **kwargs)
            assert ours == osworld_vlc.compare_videos(clips[a], clips[b], **kwargs), (a, b, kwargs)
