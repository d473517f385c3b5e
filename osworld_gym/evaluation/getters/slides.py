"""Getters that pull media out of a presentation: a slide's audio and its background image.

``audio_in_slide`` and ``background_image_in_slide`` fetch the ``.pptx`` at
``ppt_file_path`` from the desktop and read slide ``slide_index`` (0-based) as OSWorld does
(desktop_env 1.0.2, ``getters/impress.py``):

- the slide is the part ``ppt/slides/slide<index + 1>.xml`` (its file name, not its place in
  the slide order) with its relationships in ``ppt/slides/_rels/slide<index + 1>.xml.rels``;
- the audio is the target of the first relationship whose type contains ``audio``; the
  background image is the target of the ``image`` relationship whose id the first
  ``<a:blip r:embed>`` under a ``<p:bgPr>`` names;
- a target inside the package (``../media/...``) is extracted next to the fetched
  presentation, under its name in the package (``dest`` is not used: the file keeps its own
  extension); a linked file (``file:///...``) is fetched from the desktop as ``dest``.

They return the host path of the media file, or ``None`` when the slide has none (the metric
then scores 0). Where OSWorld's getter raises (no presentation at that path, a file that is not
a zip, a relationship pointing outside the package and not to a ``file://`` URL, a target
missing from the package) this one returns ``None`` for a missing presentation and raises
``EvaluatorError`` otherwise; the evaluator scores either 0.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

from osworld_gym.errors import EvaluatorError

if TYPE_CHECKING:
    from osworld_gym.evaluation.getters.base import EvalContext


_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


def _relationships(package: zipfile.ZipFile, slide: int) -> list[ElementTree.Element] | None:
    name = f"ppt/slides/_rels/slide{slide + 1}.xml.rels"
    if name not in package.namelist():
        return None
    return ElementTree.fromstring(package.read(name)).findall(_PKG_REL)


def _take_target(package: zipfile.ZipFile, pptx: str, target: str) -> str:
    """Extract a ``../``-relative target next to the presentation; the host path."""
    member = posixpath.normpath(posixpath.join("ppt/slides", target.replace("\\", "/")))
    if member.startswith("../") or member not in package.namelist():
        raise EvaluatorError(f"{pptx}: relationship target {target!r} is not in the package")
    out = Path(pptx).parent.joinpath(*PurePosixPath(member).parts)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(package.read(member))
    return str(out)


def _media(
    ctx: EvalContext, config: Mapping[str, Any], find: Callable[[zipfile.ZipFile, int], Any]
) -> str | None:
    """Fetch the presentation, find the media's relationship target, and get that file."""
    path, slide, dest = config["ppt_file_path"], int(config["slide_index"]), config["dest"]
    pptx = ctx.fetch_file(path, PurePosixPath(path).name)
    if pptx is None:
        return None
    try:
        with zipfile.ZipFile(pptx) as package:
            target = find(package, slide)
            if target is None:
                return None
            if target.startswith(".."):
                return _take_target(package, pptx, target)
    except (zipfile.BadZipFile, ElementTree.ParseError) as e:
        raise EvaluatorError(f"{path} is not a readable presentation: {e}") from e
    if not target.startswith("file://"):
        raise EvaluatorError(f"{path}: media target {target!r} is neither ../ nor file://")
    return ctx.fetch_file(target[len("file://") :], dest)


def _audio_target(package: zipfile.ZipFile, slide: int) -> str | None:
    for rel in _relationships(package, slide) or []:
        if "audio" in rel.get("Type", ""):
            return rel.get("Target", "")
    return None


def _background_target(package: zipfile.ZipFile, slide: int) -> str | None:
    name = f"ppt/slides/slide{slide + 1}.xml"
    if name not in package.namelist():
        return None
    image_id = None
    for background in ElementTree.fromstring(package.read(name)).iter(f"{_P}bgPr"):
        blip = next(background.iter(f"{_A}blip"), None)
        image_id = None if blip is None else blip.get(f"{_R}embed")
        if image_id is not None:
            break
    if image_id is None:
        return None
    for rel in _relationships(package, slide) or []:
        if "image" in rel.get("Type", "") and rel.get("Id") == image_id:
            return rel.get("Target", "")
    return None


def get_audio_in_slide(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """Host path of the audio in a slide of a desktop ``.pptx``; None when it has none.

    Config: ``ppt_file_path``, ``slide_index`` (0-based), ``dest`` (name for a linked file).
    """
    return _media(ctx, config, _audio_target)


def get_background_image_in_slide(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """Host path of a slide's background picture in a desktop ``.pptx``; None when it has none.

    Config: ``ppt_file_path``, ``slide_index`` (0-based), ``dest`` (name for a linked file).
    """
    return _media(ctx, config, _background_target)


SLIDE_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "audio_in_slide": get_audio_in_slide,
    "background_image_in_slide": get_background_image_in_slide,
}
