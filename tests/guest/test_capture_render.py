"""Rendering a grabbed frame (no X needed): raw, PNG and JPEG from BGRX, into a caller's buffer,
under a pixel budget; and the guest's cache of shared-memory frame files."""

from __future__ import annotations

import io
import os
import secrets
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from osworld_gym.guest.capture import (
    SEGMENT_PREFIX,
    FrameSegments,
    ScreenshotOptions,
    SegmentError,
    bgrx_to_rgb,
    encode,
    image_size,
    render,
)

SIZE = (64, 48)


@pytest.fixture()
def frame() -> tuple[bytearray, np.ndarray]:
    """A random BGRX frame (as mss hands it over) and its RGB pixels."""
    bgrx = np.random.default_rng(0).integers(0, 256, (SIZE[1], SIZE[0], 4), dtype=np.uint8)
    return bytearray(bgrx.tobytes()), np.ascontiguousarray(bgrx[..., 2::-1])


def test_bgrx_to_rgb_reorders_channels_into_any_array(frame) -> None:
    raw, rgb = frame
    assert np.array_equal(bgrx_to_rgb(raw, SIZE), rgb)
    padded = np.zeros((SIZE[1], SIZE[0], 5), np.uint8)  # a strided destination
    bgrx_to_rgb(raw, SIZE, padded[..., 1:4])
    assert np.array_equal(padded[..., 1:4], rgb)
    assert not padded[..., 0].any() and not padded[..., 4].any()


def test_raw_is_a_view_of_the_pixels_not_a_copy_into_bytes(frame) -> None:
    raw, rgb = frame
    data, content_type, size = render(raw, SIZE, ScreenshotOptions(format="raw"))
    assert isinstance(data, memoryview) and content_type == "application/octet-stream"
    assert size == SIZE and len(data) == SIZE[0] * SIZE[1] * 3
    assert np.array_equal(np.frombuffer(data, np.uint8).reshape(SIZE[1], SIZE[0], 3), rgb)


def test_raw_into_a_callers_buffer(frame) -> None:
    raw, rgb = frame
    out = bytearray(SIZE[0] * SIZE[1] * 3 + 7)
    data, _, _ = render(raw, SIZE, ScreenshotOptions(format="raw"), memoryview(out))
    assert data == b""
    pixels = np.frombuffer(out, np.uint8, count=rgb.size).reshape(rgb.shape)
    assert np.array_equal(pixels, rgb)
    with pytest.raises(ValueError, match="output buffer"):
        render(raw, SIZE, ScreenshotOptions(format="raw"), memoryview(bytearray(10)))


def test_png_is_lossless_and_jpeg_decodes(frame) -> None:
    raw, rgb = frame
    png, content_type, _ = render(raw, SIZE, ScreenshotOptions(format="png"))
    assert content_type == "image/png"
    with Image.open(io.BytesIO(png)) as image:
        assert image.mode == "RGB" and np.array_equal(np.asarray(image), rgb)
    # JPEG is lossy: a smooth picture (red and green ramps) comes back close.
    x, y = np.meshgrid(np.arange(SIZE[0]) * 4, np.arange(SIZE[1]) * 5)
    smooth = np.stack([np.zeros_like(x), y, x, np.zeros_like(x)], axis=2).astype(np.uint8)
    jpeg, content_type, _ = render(
        bytearray(smooth.tobytes()), SIZE, ScreenshotOptions(format="jpeg", quality=95)
    )
    assert content_type == "image/jpeg"
    with Image.open(io.BytesIO(jpeg)) as image:
        decoded = np.asarray(image).astype(int)
    assert np.abs(decoded - smooth[..., 2::-1]).max() < 16


def test_encode_from_packed_rgb_matches_render(frame) -> None:
    raw, rgb = frame
    png, content_type = encode(rgb.tobytes(), SIZE, ScreenshotOptions(format="png"))
    assert content_type == "image/png"
    with Image.open(io.BytesIO(png)) as image:
        assert np.array_equal(np.asarray(image), rgb)
    assert encode(rgb.tobytes(), SIZE, ScreenshotOptions(format="raw"))[0] == rgb.tobytes()


@pytest.mark.parametrize("fmt", ["raw", "png", "jpeg"])
def test_pixel_budget_downscales_every_format(frame, fmt: str) -> None:
    raw, _ = frame
    options = ScreenshotOptions(format=fmt, max_pixels=300)
    data, _, size = render(raw, SIZE, options)
    assert size == image_size(SIZE, 300) == (20, 15)
    if fmt == "raw":
        assert len(data) == 20 * 15 * 3
    else:
        with Image.open(io.BytesIO(bytes(data))) as image:
            assert image.size == (20, 15)


# --- the guest's shared frame files ----------------------------------------------------------


def _segment(folder: Path, size: int, *, allocate: bool = True) -> str:
    path = folder / (SEGMENT_PREFIX + secrets.token_hex(16))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if allocate:
            os.posix_fallocate(fd, 0, size)
        else:
            os.ftruncate(fd, size)  # a hole: writing into it could SIGBUS on a full tmpfs
    finally:
        os.close(fd)
    return str(path)


@pytest.fixture()
def shm_folder(tmp_path: Path) -> Path:
    """A folder on tmpfs when the host has one (where segments live), else a temp folder."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = shm / f"osworld-gym-test-{secrets.token_hex(4)}"
        folder.mkdir()
        yield folder
        for entry in folder.iterdir():
            entry.unlink()
        folder.rmdir()
    else:
        yield tmp_path


def test_segments_are_written_and_kept_mapped(shm_folder: Path) -> None:
    segments = FrameSegments()
    path = _segment(shm_folder, 100)
    with segments.mapped(path, 100) as out:
        out[:3] = b"abc"
    assert Path(path).read_bytes()[:3] == b"abc"
    first = segments._maps[path]  # noqa: SLF001 - the mapping is kept between calls
    with segments.mapped(path, 50) as out:
        out[:1] = b"z"
    assert segments._maps[path] is first  # noqa: SLF001
    segments.close()
    assert first.map.closed


def test_a_replaced_or_deleted_segment_is_remapped_or_dropped(shm_folder: Path) -> None:
    segments = FrameSegments()
    path = _segment(shm_folder, 100)
    with segments.mapped(path, 100):
        pass
    old = segments._maps[path]  # noqa: SLF001
    os.unlink(path)
    os.rename(_segment(shm_folder, 100), path)  # a new file under the same name
    with segments.mapped(path, 100) as out:
        out[:2] = b"hi"
    assert old.map.closed and Path(path).read_bytes()[:2] == b"hi"
    other = _segment(shm_folder, 100)
    os.unlink(path)
    with segments.mapped(other, 100):
        pass
    assert path not in segments._maps  # noqa: SLF001 - a deleted file's memory is let go
    segments.close()


def test_segments_refuse_what_they_cannot_safely_write(shm_folder: Path) -> None:
    segments = FrameSegments()
    with pytest.raises(SegmentError, match="not a frame segment"):
        with segments.mapped("/etc/passwd", 10):
            pass
    with pytest.raises(SegmentError, match="not a frame segment"):
        with segments.mapped(SEGMENT_PREFIX + "0" * 32, 10):  # relative
            pass
    with pytest.raises(SegmentError, match="not there"):
        with segments.mapped(str(shm_folder / (SEGMENT_PREFIX + "0" * 32)), 10):
            pass
    with pytest.raises(SegmentError, match="holds 100 bytes"):
        with segments.mapped(_segment(shm_folder, 100), 101):
            pass
    if str(shm_folder).startswith("/dev/shm"):  # tmpfs reports holes exactly
        with pytest.raises(SegmentError, match="not fully allocated"):
            with segments.mapped(_segment(shm_folder, 1 << 20, allocate=False), 10):
                pass
    link = shm_folder / (SEGMENT_PREFIX + "1" * 32)
    link.symlink_to(_segment(shm_folder, 100))
    with pytest.raises(SegmentError, match="cannot open"):
        with segments.mapped(str(link), 10):
            pass
    segments.close()


def test_a_busy_segment_is_unmapped_when_its_call_ends(shm_folder: Path) -> None:
    segments = FrameSegments(limit=1)
    first, second = _segment(shm_folder, 10), _segment(shm_folder, 10)
    with segments.mapped(first, 10) as out:
        busy = segments._maps[first]  # noqa: SLF001
        with segments.mapped(second, 10):  # over the limit, but the first is in use
            assert len(segments._maps) == 2  # noqa: SLF001
        segments.close()
        assert not busy.map.closed  # still written to
        out[:1] = b"x"
    assert busy.map.closed
    assert Path(first).read_bytes()[:1] == b"x"
