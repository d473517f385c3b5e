"""audio_in_slide and background_image_in_slide on .pptx files built here (python-pptx + zip).

When OSWorld's getters are installed (see osworld_ref) the same files go through them too and
must give the same media bytes (or both nothing).
"""

from __future__ import annotations

import io
import sys
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import osworld_ref
import pytest
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

from osworld_gym.errors import EvaluatorError, GuestHTTPError
from osworld_gym.evaluation.getters import GETTERS, EvalContext
from osworld_gym.task_setup.downloads import AssetCache

pptx = pytest.importorskip("pptx")

DECK = "/home/user/Desktop/deck.pptx"
AUDIO_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"
MEDIA_REL = "http://schemas.microsoft.com/office/2007/relationships/media"
IMAGE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"
NS_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
NS_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
NS_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
WAV = b"RIFF....WAVEfmt audio bytes"
PNG = b"\x89PNG\r\n\x1a\n background picture"
OTHER_PNG = b"\x89PNG\r\n\x1a\n a picture on the slide"


class FakeClient:
    """A guest client whose desktop holds the given files."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def download(self, path: str) -> bytes:
        if path not in self.files:
            raise GuestHTTPError("/file", 404, {"error": "File not found"})
        return self.files[path]


def _ctx(tmp_path: Path, files: dict[str, bytes]) -> EvalContext:
    return EvalContext(
        client=FakeClient(files),  # type: ignore[arg-type]
        task_id="t",
        cache=AssetCache(tmp_path / "cache"),
        scratch=tmp_path / "scratch",
    )


def base_deck(slides: int = 2) -> dict[str, bytes]:
    """The parts of a python-pptx presentation with ``slides`` blank slides."""
    deck = pptx.Presentation()
    for _ in range(slides):
        deck.slides.add_slide(deck.slide_layouts[6])
    buffer = io.BytesIO()
    deck.save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as z:
        return {name: z.read(name) for name in z.namelist()}


def add_relationship(parts: dict[str, bytes], slide: int, rel: str) -> None:
    name = f"ppt/slides/_rels/slide{slide}.xml.rels"
    parts[name] = parts[name].replace(b"</Relationships>", rel.encode() + b"</Relationships>")


def set_background(parts: dict[str, bytes], slide: int, blips: str) -> None:
    name = f"ppt/slides/slide{slide}.xml"
    background = f'<p:bg xmlns:p="{NS_P}" xmlns:a="{NS_A}" xmlns:r="{NS_R}"><p:bgPr>{blips}'
    background += "<a:effectLst/></p:bgPr></p:bg>"
    parts[name] = parts[name].replace(b"<p:cSld>", b"<p:cSld>" + background.encode(), 1)


def pack(parts: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return buffer.getvalue()


def audio_deck(target: str = "../media/media1.wav", slide: int = 1) -> bytes:
    parts = base_deck()
    parts["ppt/media/media1.wav"] = WAV
    mode = ' TargetMode="External"' if target.startswith("file:") else ""
    add_relationship(parts, slide, f'<Relationship Id="rId8" Type="{MEDIA_REL}" Target="x"/>')
    add_relationship(
        parts, slide, f'<Relationship Id="rId9" Type="{AUDIO_REL}" Target="{target}"{mode}/>'
    )
    return pack(parts)


def background_deck(blips: str, target: str = "../media/image9.png", slide: int = 2) -> bytes:
    parts = base_deck()
    parts["ppt/media/image9.png"] = PNG
    parts["ppt/media/image8.png"] = OTHER_PNG
    set_background(parts, slide, blips)
    mode = ' TargetMode="External"' if target.startswith("file:") else ""
    rels = f'<Relationship Id="rIdPic" Type="{IMAGE_REL}" Target="../media/image8.png"/>'
    rels += f'<Relationship Id="rIdBg" Type="{IMAGE_REL}" Target="{target}"{mode}/>'
    add_relationship(parts, slide, rels)
    return pack(parts)


BLIP = '<a:blipFill><a:blip r:embed="rIdBg"/><a:stretch><a:fillRect/></a:stretch></a:blipFill>'


def audio(index: int = 0, dest: str = "Baseball.mp3") -> dict[str, Any]:
    return {"type": "audio_in_slide", "ppt_file_path": DECK, "slide_index": index, "dest": dest}


def background(index: int = 1, dest: str = "bg.png") -> dict[str, Any]:
    return {
        "type": "background_image_in_slide",
        "ppt_file_path": DECK,
        "slide_index": index,
        "dest": dest,
    }


def read(path: str | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


# --- (desktop files, getter config, expected media bytes) -----------------------------------

CASES: list[tuple[str, dict[str, bytes], dict[str, Any], bytes | None]] = [
    ("embedded audio", {DECK: audio_deck()}, audio(), WAV),
    ("audio on another slide", {DECK: audio_deck(slide=2)}, audio(0), None),
    ("audio, second slide", {DECK: audio_deck(slide=2)}, audio(1), WAV),
    ("no such slide", {DECK: audio_deck()}, audio(5), None),
    (
        "linked audio",
        {
            DECK: audio_deck("file:///home/user/Desktop/Baseball.mp3"),
            "/home/user/Desktop/Baseball.mp3": b"ID3 mp3",
        },
        audio(),
        b"ID3 mp3",
    ),
    ("linked audio, gone", {DECK: audio_deck("file:///home/user/gone.mp3")}, audio(), None),
    ("embedded background", {DECK: background_deck(BLIP)}, background(), PNG),
    ("background, other slide", {DECK: background_deck(BLIP)}, background(0), None),
    ("no background picture", {DECK: background_deck("<a:solidFill/>")}, background(), None),
    (
        "first blip without embed",
        {DECK: background_deck('<a:blipFill><a:blip r:link="rIdBg"/></a:blipFill>' + BLIP)},
        background(),
        None,
    ),
    (
        "linked background",
        {DECK: background_deck(BLIP, "file:///home/user/bg.jpg"), "/home/user/bg.jpg": b"JPG"},
        background(),
        b"JPG",
    ),
]


@pytest.mark.parametrize(
    ("desktop", "config", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_media_in_slide(
    tmp_path: Path, desktop: dict[str, bytes], config: dict[str, Any], expected: bytes | None
) -> None:
    got = GETTERS[config["type"]](_ctx(tmp_path, desktop), config)
    assert read(got) == expected
    if got is not None:
        assert Path(got).is_relative_to(tmp_path / "scratch")
        if expected in (WAV, PNG):  # extracted from the package under its own name
            assert Path(got).name in ("media1.wav", "image9.png")
        else:  # a linked file is fetched as dest
            assert Path(got).name == config["dest"]


def test_missing_presentation_gives_none(tmp_path: Path) -> None:
    assert GETTERS["audio_in_slide"](_ctx(tmp_path, {}), audio()) is None
    assert GETTERS["background_image_in_slide"](_ctx(tmp_path, {}), background()) is None


@pytest.mark.parametrize(
    ("desktop", "config"),
    [
        ({DECK: b"not a zip"}, audio()),
        ({DECK: audio_deck("media/relative.wav")}, audio()),  # neither ../ nor file://
        ({DECK: audio_deck("../media/absent.wav")}, audio()),
        ({DECK: audio_deck("../../../../etc/passwd")}, audio()),
        ({DECK: background_deck(BLIP, "http://example.org/bg.png")}, background()),
    ],
)
def test_broken_presentations_raise(
    tmp_path: Path, desktop: dict[str, bytes], config: dict[str, Any]
) -> None:
    with pytest.raises(EvaluatorError):
        GETTERS[config["type"]](_ctx(tmp_path, desktop), config)
    assert not (tmp_path / "etc").exists()


def test_background_image_scores_with_compare_images(tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image")
    picture = io.BytesIO()
    image.linear_gradient("L").convert("RGB").save(picture, "PNG")
    parts = base_deck()
    set_background(parts, 2, BLIP)
    parts["ppt/media/image9.png"] = picture.getvalue()
    add_relationship(
        parts, 2, f'<Relationship Id="rIdBg" Type="{IMAGE_REL}" Target="../media/image9.png"/>'
    )
    gold = tmp_path / "gold.png"
    gold.write_bytes(picture.getvalue())
    got = GETTERS["background_image_in_slide"](_ctx(tmp_path, {DECK: pack(parts)}), background())
    from osworld_gym.evaluation.metrics import get_metric

    assert get_metric("compare_images")(got, str(gold)) == pytest.approx(1.0)


# --- against OSWorld's own getters -------------------------------------------------------------


def _osworld_impress(monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes], out: Path) -> Any:
    """OSWorld's getters/impress.py with its vm_file getter reading ``files``."""

    def get_vm_file(env: Any, config: dict[str, Any]) -> str | None:
        if config["path"] not in files:
            return None
        target = out / config["dest"]
        target.write_bytes(files[config["path"]])
        return str(target)

    file_module = types.ModuleType("desktop_env.evaluators.getters.file")
    file_module.get_vm_file = get_vm_file  # type: ignore[attr-defined]
    for name in ("desktop_env", "desktop_env.evaluators", "desktop_env.evaluators.getters"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "desktop_env.evaluators.getters.file", file_module)
    return osworld_ref.load("evaluators/getters/impress.py")


@pytest.mark.parametrize(("desktop", "config"), [c[1:3] for c in CASES], ids=[c[0] for c in CASES])
def test_same_media_as_osworld(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    desktop: dict[str, bytes],
    config: dict[str, Any],
) -> None:
    theirs_dir = tmp_path / "osworld"
    theirs_dir.mkdir()
    impress = _osworld_impress(monkeypatch, desktop, theirs_dir)
    theirs: Callable[[Any, dict[str, Any]], str | None] = getattr(impress, f"get_{config['type']}")
    ours = GETTERS[config["type"]](_ctx(tmp_path, desktop), config)
    assert read(ours) == read(theirs(None, dict(config)))


# --- a real OSWorld task's evaluator (read at test time from OSWorld's task folder) -----------

TASK = OSWORLD_TASKS / "examples/libreoffice_impress/c59742c0-4323-4b9d-8a02-723c251deaa0.json"


@needs_osworld_tasks
@pytest.mark.heavy  # decodes audio
def test_osworld_task_audio_in_slide_scores_like_osworld(tmp_path: Path) -> None:
    pytest.importorskip("librosa")
    import json
    import wave

    from osworld_gym.evaluation.evaluator import Evaluator
    from osworld_gym.tasks.model import Task

    task = Task.from_dict(json.loads(TASK.read_text()))
    with wave.open(str(tmp_path / "a.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(range(256)) * 40)
    sound = (tmp_path / "a.wav").read_bytes()
    parts = base_deck()
    parts["ppt/media/media1.wav"] = sound
    add_relationship(
        parts, 1, f'<Relationship Id="rId9" Type="{AUDIO_REL}" Target="../media/media1.wav"/>'
    )
    deck = "/home/user/Desktop/Mady_and_Mia_Baseball.pptx"
    files = {deck: pack(parts), "/home/user/Desktop/Baseball.mp3": sound}
    result = Evaluator().evaluate(task.evaluator, _ctx(tmp_path, files), last_action_fail=False)
    assert result.score == pytest.approx(1.0)  # the inserted audio is the Desktop's file
    files[deck] = pack(base_deck())
    result = Evaluator().evaluate(task.evaluator, _ctx(tmp_path, files), last_action_fail=False)
    assert result.score == 0.0  # no audio in the slide
