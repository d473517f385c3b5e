"""Parity of the audio and video metrics (OSWorld's ``vlc`` module: ``compare_audios``,
``compare_videos``, ``is_vlc_playing``, ``is_vlc_fullscreen``; ``others.check_mp3_meta``; and
``chrome.compare_archive`` of audio and video files) with ours.

Media are made at test time: WAV files with the standard library's ``wave`` module, MP3 and
MP4 files with ffmpeg (skipped where it is missing), ID3 tags with mutagen. VLC's status
page is XML text written here.
"""

from __future__ import annotations

import functools
import io
import shutil
import subprocess
import tempfile
import wave
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from parity_harness import (
    ABSENT,
    FileContent,
    OSWorld,
    assert_same_score,
    make_file,
    real_checks,
    real_rules,
)

pytestmark = pytest.mark.parity

np = pytest.importorskip("numpy")

RATE = 8000


def wav_bytes(
    freqs: list[float] | None,
    seconds: float = 0.6,
    *,
    rate: int = RATE,
    channels: int = 1,
    amplitude: float = 0.4,
    noise: float = 0.0,
) -> bytes:
    """16-bit PCM: a sum of sines (``None``: silence; ``[]``: no samples at all)."""
    count = 0 if freqs == [] else int(seconds * rate)
    t = np.arange(count) / rate
    signal = np.zeros(count)
    for f in freqs or []:
        signal += np.sin(2 * np.pi * f * t) * amplitude / max(1, len(freqs or []))
    if noise:
        signal += np.random.default_rng(1).normal(0, noise, count)
    samples = (np.clip(signal, -1, 1) * 32767).astype("<i2")
    if channels == 2:
        samples = np.stack([samples, samples], axis=1)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())
    return buffer.getvalue()


def _ffmpeg() -> str:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("ffmpeg is not installed: no MP3 or MP4 files")
    return ffmpeg


@functools.cache
def _ffmpeg_output(args: tuple[str, ...], data: bytes = b"") -> bytes:
    completed = subprocess.run(
        [_ffmpeg(), "-v", "error", *args],
        input=data,
        capture_output=True,
        timeout=120,
        check=False,
    )
    if completed.returncode != 0:
        pytest.fail(f"ffmpeg {' '.join(args)}: {completed.stderr.decode(errors='replace')}")
    return completed.stdout


def mp3_bytes(wav: bytes) -> bytes:
    return _ffmpeg_output(("-f", "wav", "-i", "-", "-f", "mp3", "-"), wav)


def video_bytes(source: str, frames: int = 12, *, size: str = "96x72", extra: str = "") -> bytes:
    """An MP4 of ``frames`` frames from an ffmpeg test source (``testsrc``, ``smptebars``...)."""
    options = f"size={size}:rate=10"
    graph = (f"{source}:{options}" if "=" in source else f"{source}={options}") + (
        f",{extra}" if extra else ""
    )
    args = ("-f", "lavfi", "-i", graph, "-frames:v", str(frames), "-pix_fmt", "yuv420p")
    args += ("-f", "mp4", "-movflags", "frag_keyframe+empty_moov", "-")
    return _ffmpeg_output(args)


# --- compare_audios -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def side_librosa(osworld: OSWorld, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fail when OSWorld's side cannot decode audio at all (the comparison would be void).

    A tone against an empty file scores 0 in OSWorld's code when librosa works; it scores 1
    ("both files empty or corrupt") when librosa cannot load in the side venv's worker (as
    happened while the worker's easyocr stand-in answered ``__file__`` lookups, which
    librosa's lazy loader makes through ``inspect.stack()``, with an error).
    """
    folder = tmp_path_factory.mktemp("librosa-check")
    tone = make_file(folder, "tone.wav", wav_bytes([440]))
    empty = make_file(folder, "empty.wav", wav_bytes([]))
    module = osworld.module_of("compare_audios")
    if osworld.score(module, "compare_audios", str(tone), str(empty)) != 0.0:
        pytest.fail("OSWorld's compare_audios cannot load audio in the side venv's worker")


AudioSpec = bytes | Callable[[], bytes] | None | Any

AUDIOS: list[tuple[str, AudioSpec, AudioSpec]] = [
    ("same-tone", wav_bytes([440]), wav_bytes([440])),
    ("octave", wav_bytes([880]), wav_bytes([440])),
    ("far-tones", wav_bytes([300]), wav_bytes([3000])),
    ("chord-vs-tone", wav_bytes([440, 660]), wav_bytes([440])),
    ("chords", wav_bytes([440, 550, 660]), wav_bytes([440, 550, 660])),
    ("louder", wav_bytes([440], amplitude=0.9), wav_bytes([440])),
    ("noisy", wav_bytes([440], noise=0.05), wav_bytes([440])),
    ("noise-only", wav_bytes(None, noise=0.2), wav_bytes([440])),
    ("longer", wav_bytes([440], seconds=1.2), wav_bytes([440])),
    ("much-shorter", wav_bytes([440], seconds=0.1), wav_bytes([440])),
    ("other-rate", wav_bytes([440], rate=16000), wav_bytes([440])),
    ("stereo", wav_bytes([440], channels=2), wav_bytes([440])),
    ("silence", wav_bytes(None), wav_bytes([440])),
    ("both-silent", wav_bytes(None), wav_bytes(None)),
    ("empty", wav_bytes([]), wav_bytes([440])),
    ("both-empty", wav_bytes([]), wav_bytes([])),
    ("not-audio", b"not audio at all", wav_bytes([440])),
    ("both-not-audio", b"not audio", b"nor this"),
    ("mp3-vs-wav", lambda: mp3_bytes(wav_bytes([440], rate=22050)), wav_bytes([440])),
    (
        "mp3-octave",
        lambda: mp3_bytes(wav_bytes([880], rate=22050)),
        lambda: mp3_bytes(wav_bytes([440], rate=22050)),
    ),
    ("none", None, wav_bytes([440])),
    ("expected-none", wav_bytes([440]), None),
    ("absent", ABSENT, wav_bytes([440])),
    ("both-absent", ABSENT, ABSENT),
]


def _audio_file(folder: Path, name: str, spec: AudioSpec) -> Path | None:
    data = spec() if callable(spec) else spec
    return make_file(folder, name, data)


@pytest.mark.usefixtures("side_librosa")
@pytest.mark.parametrize(
    ("result", "expected"), [pytest.param(r, e, id=name) for name, r, e in AUDIOS]
)
def test_compare_audios(
    osworld: OSWorld, tmp_path: Path, result: AudioSpec, expected: AudioSpec
) -> None:
    assert_same_score(
        osworld,
        "compare_audios",
        _audio_file(tmp_path, "result.wav", result),
        _audio_file(tmp_path, "expected.wav", expected),
    )


# --- compare_videos -----------------------------------------------------------------------

VIDEOS: list[tuple[str, AudioSpec, AudioSpec, dict[str, Any]]] = [
    ("same", lambda: video_bytes("testsrc"), lambda: video_bytes("testsrc"), {}),
    ("other-pattern", lambda: video_bytes("smptebars"), lambda: video_bytes("testsrc"), {}),
    ("longer", lambda: video_bytes("testsrc", 14), lambda: video_bytes("testsrc"), {}),
    ("shorter", lambda: video_bytes("testsrc", 5), lambda: video_bytes("testsrc"), {}),
    (
        "longer-past-limit",
        lambda: video_bytes("testsrc", 14),
        lambda: video_bytes("testsrc"),
        {"max_frames_to_check": 12},
    ),
    (
        "other-pattern-lenient",
        lambda: video_bytes("smptebars"),
        lambda: video_bytes("testsrc"),
        {"threshold": 64},
    ),
    (
        "other-pattern-few-frames",
        lambda: video_bytes("smptebars"),
        lambda: video_bytes("testsrc"),
        {"max_frames_to_check": 4},
    ),
    (
        "noise",
        lambda: video_bytes("testsrc", extra="noise=alls=20:allf=t"),
        lambda: video_bytes("testsrc"),
        {},
    ),
    (
        "heavy-noise",
        lambda: video_bytes("testsrc", extra="noise=alls=100:allf=t"),
        lambda: video_bytes("testsrc"),
        {},
    ),
    (
        "flipped",
        lambda: video_bytes("testsrc", extra="hflip"),
        lambda: video_bytes("testsrc"),
        {},
    ),
    (
        "other-size",
        lambda: video_bytes("testsrc", size="128x96"),
        lambda: video_bytes("testsrc"),
        {},
    ),
    ("solid-colours", lambda: video_bytes("color=c=red"), lambda: video_bytes("color=c=blue"), {}),
    ("not-video", b"not a video", lambda: video_bytes("testsrc"), {}),
    ("both-not-video", b"not a video", b"nor this", {}),
    ("none", None, lambda: video_bytes("testsrc"), {}),
    ("absent", ABSENT, lambda: video_bytes("testsrc"), {}),
    ("both-absent", ABSENT, ABSENT, {}),
]


@pytest.mark.parametrize(
    ("result", "expected", "options"),
    [pytest.param(r, e, o, id=name) for name, r, e, o in VIDEOS],
)
def test_compare_videos(
    osworld: OSWorld, tmp_path: Path, result: AudioSpec, expected: AudioSpec, options: dict
) -> None:
    assert_same_score(
        osworld,
        "compare_videos",
        _audio_file(tmp_path, "result.mp4", result),
        _audio_file(tmp_path, "expected.mp4", expected),
        **options,
    )


# --- compare_archive of audio and video files ----------------------------------------------


def _zip(members: dict[str, AudioSpec]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, spec in members.items():
            zf.writestr(name, spec() if callable(spec) else spec)
    return buffer.getvalue()


ARCHIVES = [
    pytest.param(
        {"a.wav": wav_bytes([440])}, {"a.wav": wav_bytes([440])}, "audio", id="audio-same"
    ),
    pytest.param(
        {"a.wav": wav_bytes([440]), "b.wav": wav_bytes([880])},
        {"a.wav": wav_bytes([440]), "b.wav": wav_bytes([300])},
        "audio",
        id="audio-one-differs",
    ),
    pytest.param(
        {"a.wav": wav_bytes([440])}, {"b.wav": wav_bytes([440])}, "audio", id="audio-names"
    ),
    pytest.param(
        {"v.mp4": lambda: video_bytes("testsrc")},
        {"v.mp4": lambda: video_bytes("testsrc")},
        "video",
        id="video-same",
    ),
    pytest.param(
        {"v.mp4": lambda: video_bytes("smptebars")},
        {"v.mp4": lambda: video_bytes("testsrc")},
        "video",
        id="video-differs",
    ),
]


@pytest.mark.parametrize(("result", "expected", "file_type"), ARCHIVES)
def test_compare_archive_media(
    request: pytest.FixtureRequest,
    osworld: OSWorld,
    tmp_path: Path,
    result: dict[str, AudioSpec],
    expected: dict[str, AudioSpec],
    file_type: str,
) -> None:
    if file_type == "audio":
        request.getfixturevalue("side_librosa")
    assert_same_score(
        osworld,
        "compare_archive",
        make_file(tmp_path, "result.zip", _zip(result)),
        make_file(tmp_path, "gold.zip", _zip(expected)),
        file_type=file_type,
    )


# --- check_mp3_meta -----------------------------------------------------------------------


def tagged_mp3(tags: dict[str, str | list[str]] | None, *, real_audio: bool = True) -> bytes:
    """An MP3 (or a bare ID3 tag in front of junk) with ``tags`` set through EasyID3."""
    easyid3 = pytest.importorskip("mutagen.easyid3")
    data = mp3_bytes(wav_bytes([440], rate=22050)) if real_audio else b"\x00" * 256
    if tags is None:
        return data
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "song.mp3"
        path.write_bytes(data)
        id3 = easyid3.EasyID3()
        for key, value in tags.items():
            id3[key] = value
        id3.save(path)
        return path.read_bytes()


def _mp3_real_cases() -> list[Any]:
    cases = []
    for index, (task, rules) in enumerate(real_rules("check_mp3_meta")):
        title, artist = rules["title"]["ref"], rules["artist"]["ref"]
        cases += [
            pytest.param(
                lambda t=title, a=artist: tagged_mp3({"title": t, "artist": a}),
                rules,
                id=f"{task}-{index}-tagged",
            ),
            pytest.param(
                lambda t=title: tagged_mp3({"title": t}), rules, id=f"{task}-{index}-no-artist"
            ),
            pytest.param(
                lambda a=artist: tagged_mp3({"title": "Track 1", "artist": a}),
                rules,
                id=f"{task}-{index}-untitled",
            ),
        ]
    return cases


_TA = {"title": {"method": "eq", "ref": "Red Daughter"}, "artist": {"method": "eq", "ref": "Chen"}}

MP3_META = [
    *_mp3_real_cases(),
    pytest.param(lambda: tagged_mp3({"title": "Red Daughter", "artist": "Chen"}), _TA, id="ok"),
    pytest.param(lambda: tagged_mp3({"title": "Red daughter", "artist": "Chen"}), _TA, id="case"),
    pytest.param(
        lambda: tagged_mp3({"title": "Red Daughter", "artist": ["Chen", "Li"]}), _TA, id="two-art"
    ),
    pytest.param(
        lambda: tagged_mp3({"artist": ["Chen", "Li"]}),
        {"artist": {"method": "eq", "ref": "Chen,Li"}},
        id="joined-artists",
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "Red Daughter"}),
        {"artist": {"method": "eq", "ref": ""}},
        id="missing-equals-empty",
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "Red Daughter (Live)"}),
        {"title": {"method": "re", "ref": r"^Red Daughter"}},
        id="regex",
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "red daughter"}),
        {"title": {"method": "re.IGNORECASE", "ref": r"^Red Daughter$"}},
        id="regex-flag",
    ),
    pytest.param(
        lambda: tagged_mp3({"date": "1999"}),
        {"date": {"method": "approx:1", "ref": 2000}},
        id="approx",
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "A"}), {"title": {"method": "ne", "ref": "B"}}, id="ne"
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "A"}), {"title": {"method": "lt", "ref": 3}}, id="bad-compare"
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "A"}),
        {"title": {"method": "eq", "ref": "B"}, "artist": {"method": "lt", "ref": 3}},
        id="short-circuit",
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "A"}), {"nonsense": {"method": "eq", "ref": ""}}, id="bad-key"
    ),
    pytest.param(
        lambda: tagged_mp3({"title": "A"}), {"title": {"method": "fuzzy", "ref": "A"}}, id="unknown"
    ),
    pytest.param(lambda: tagged_mp3({"title": "A"}), {}, id="no-rules"),
    pytest.param(
        lambda: tagged_mp3({"title": "Zürich 東京"}),
        {"title": {"method": "eq", "ref": "Zürich 東京"}},
        id="unicode",
    ),
    pytest.param(lambda: tagged_mp3({"title": "A"}, real_audio=False), {}, id="tag-only"),
    pytest.param(lambda: tagged_mp3(None), _TA, id="untagged-mp3"),
    pytest.param(b"not an mp3", _TA, id="not-mp3"),
    pytest.param(None, _TA, id="none"),
    pytest.param(ABSENT, _TA, id="absent"),
]


@pytest.mark.parametrize(("result", "rules"), MP3_META)
def test_check_mp3_meta(
    osworld: OSWorld, tmp_path: Path, result: AudioSpec, rules: dict[str, Any]
) -> None:
    assert_same_score(osworld, "check_mp3_meta", _audio_file(tmp_path, "song.mp3", result), rules)


# --- is_vlc_playing -----------------------------------------------------------------------


def vlc_status(
    state: str = "playing", meta: dict[str, str] | None = None, stream: dict | None = None
) -> str:
    """VLC's ``/requests/status.xml`` with the given state and meta information."""
    infos = "".join(f"<info name='{k}'>{v}</info>" for k, v in (meta or {}).items())
    stream_infos = "".join(f"<info name='{k}'>{v}</info>" for k, v in (stream or {}).items())
    return (
        "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<root>\n"
        "<fullscreen>false</fullscreen><volume>256</volume>"
        f"<state>{state}</state>\n<information>\n"
        f"<category name='meta'>{infos}</category>\n"
        f"<category name='Stream 0'>{stream_infos}</category>\n"
        "</information>\n</root>\n"
    )


def _playing_real_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_vlc_playing"):
        if rules.get("type") == "file_name":
            name = rules["file_name"]
            files = {
                "filename": vlc_status(meta={"filename": name}),
                "path": vlc_status(meta={"filename": f"/home/user/{name}"}),
                "title": vlc_status(meta={"title": name}),
                "other": vlc_status(meta={"filename": "other.mp4"}),
                "paused": vlc_status("paused", meta={"filename": name}),
                "stopped": vlc_status("stopped"),
            }
        else:
            url = rules["url"]
            files = {
                "url": vlc_status(meta={"url": url}),
                "filename-only": vlc_status(meta={"filename": url.rsplit("/", 1)[-1]}),
                "title-url": vlc_status(meta={"title": url + "?x=1"}),
                "same-host": vlc_status(meta={"URI": url.rsplit("/", 1)[0] + "/x/master.m3u8"}),
                "other": vlc_status(meta={"url": "https://example.org/v.m3u8"}),
                "codec-only": vlc_status(stream={"Codec": "H264 - MPEG-4 AVC (part 10) (avc1)"}),
                "paused": vlc_status("paused", meta={"url": url}),
            }
        for name, text in files.items():
            cases.append(pytest.param(text, rules, id=f"{task}-{name}"))
    return cases


_FILE = {"type": "file_name", "file_name": "song.mp3"}
_URL = {"type": "url", "url": "https://cdn.example.org/live/stream/master.m3u8"}

VLC_PLAYING = [
    *_playing_real_cases(),
    pytest.param(vlc_status(meta={"filename": "song.mp3"}), _FILE, id="file"),
    pytest.param(vlc_status(meta={"filename": "my song.mp3"}), _FILE, id="suffix-match"),
    pytest.param(vlc_status(meta={"filename": "song.mp3.part"}), _FILE, id="longer-name"),
    pytest.param(vlc_status(meta={"uri": "file:///music/song.mp3"}), _FILE, id="uri"),
    pytest.param(vlc_status(meta={"location": "C:\\music\\song.mp3"}), _FILE, id="windows-path"),
    pytest.param(vlc_status(meta={"name": "song.mp3"}), _FILE, id="name"),
    pytest.param(vlc_status(meta={"title": "", "filename": "song.mp3"}), _FILE, id="empty-first"),
    pytest.param(vlc_status(meta={"title": "Song", "filename": "song.mp3"}), _FILE, id="order"),
    pytest.param(vlc_status(meta={"artist": "x"}), _FILE, id="no-file-info"),
    pytest.param(vlc_status(meta={"url": _URL["url"]}), _URL, id="url"),
    pytest.param(vlc_status(meta={"url": "master.m3u8"}), _URL, id="url-basename"),
    pytest.param(
        vlc_status(meta={"url": "https://cdn.example.org/live/stream/master.m3u8?token=1"}),
        _URL,
        id="url-query",
    ),
    pytest.param(
        vlc_status(meta={"url": "https://cdn.example.org/live/stream/master.m3u8/x"}),
        _URL,
        id="url-same-host-longer-path",
    ),
    pytest.param(
        vlc_status(meta={"url": "https://other.example.org/live/stream/master.m3u8x"}),
        _URL,
        id="url-other-host",
    ),
    pytest.param(vlc_status(stream={"Type": "Video"}), _URL, id="url-stream-type"),
    pytest.param(
        vlc_status(meta={"url": "x"}), {"type": "url", "url": "http://[::1"}, id="bad-url"
    ),
    pytest.param(vlc_status(meta={"filename": "song.mp3"}), {"type": "title"}, id="unknown-type"),
    pytest.param(vlc_status(meta={"filename": "song.mp3"}), {}, id="no-type"),
    pytest.param(vlc_status("paused", meta={"filename": "song.mp3"}), {}, id="paused-no-type"),
    pytest.param("<root><information/></root>", _FILE, id="no-state"),
    pytest.param("<root><state/></root>", _FILE, id="empty-state"),
    pytest.param("not xml", _FILE, id="not-xml"),
    pytest.param(
        vlc_status(meta={"filename": "Zürich.mp3"}).encode("utf-8"),
        {"type": "file_name", "file_name": "Zürich.mp3"},
        id="unicode",
    ),
    pytest.param(None, _FILE, id="none"),
    pytest.param(ABSENT, _FILE, id="absent"),
]


@pytest.mark.parametrize(("status", "rule"), VLC_PLAYING)
def test_is_vlc_playing(
    osworld: OSWorld, tmp_path: Path, status: FileContent, rule: dict[str, Any]
) -> None:
    assert_same_score(osworld, "is_vlc_playing", make_file(tmp_path, "status.xml", status), rule)


# --- is_vlc_fullscreen --------------------------------------------------------------------

_SCREEN = {"width": 1920, "height": 1080}
FULLSCREEN = [
    *[
        pytest.param(_SCREEN, {"width": 1920, "height": 1080}, id=f"{task}-real")
        for task, *_ in real_checks("is_vlc_fullscreen")
    ],
    pytest.param(_SCREEN, {"width": 1920, "height": 1080}, id="full"),
    pytest.param(_SCREEN, {"width": 1920, "height": 1053}, id="maximised"),
    pytest.param(_SCREEN, {"width": 800, "height": 1080}, id="narrow"),
    pytest.param(_SCREEN, {"width": 1920.0, "height": 1080.0}, id="floats"),
    pytest.param(_SCREEN, {"width": "1920", "height": "1080"}, id="strings"),
    pytest.param(_SCREEN, {"width": 1920, "height": 1080, "x": 0}, id="extra-keys"),
    pytest.param(_SCREEN, {"width": 1920}, id="missing-height"),
    pytest.param(_SCREEN, None, id="no-window"),
    pytest.param(None, {"width": 1920, "height": 1080}, id="no-screen"),
    pytest.param({}, {}, id="empty-dicts"),
]


@pytest.mark.parametrize(("screen", "window"), FULLSCREEN)
def test_is_vlc_fullscreen(osworld: OSWorld, screen: Any, window: Any) -> None:
    assert_same_score(osworld, "is_vlc_fullscreen", screen, window)
