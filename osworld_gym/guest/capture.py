"""Screen capture for the guest server: grab (mss, cursor drawn in), resize, encode, settle.

mss grabs 1920x1080 in about 1-3 ms through MIT-SHM and draws the pointer through XFixes, as
OSWorld's screenshots show it. Encoding dominates: PNG at zlib level 1 about 18 ms, JPEG about
5 ms, raw RGB about 2 ms (the BGRX to RGB reorder).

Full frames are copied as few times as possible, since at 1080p each copy into fresh memory
costs milliseconds (page faults included): mss's BGRX frame is used as it comes (no ``bytes``
copy), raw RGB is written once by numpy into a buffer that becomes the response body as it is
(or into a caller's buffer, such as a shared-memory segment), PNG scanlines are written once
straight from the BGRX frame, and JPEG is encoded from the BGRX frame through Pillow's decoder.
"""

from __future__ import annotations

import io
import logging
import math
import mmap
import os
import re
import stat
import struct
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import mss
import numpy as np
from mss.exception import ScreenShotError
from PIL import Image, ImageDraw

from osworld_gym.guest.settle import (
    EVENTS_INTERVAL,
    SETTLE_MODES,
    SIGNAL_SCREEN,
    EventSettler,
    SettleUnavailableError,
)

FORMATS = ("png", "jpeg", "raw")
logger = logging.getLogger(__name__)

# A plain arrow (tip at 0,0), drawn when the X server will not hand out the cursor image.
_ARROW = ((0, 0), (0, 17), (4, 13), (7, 20), (10, 19), (7, 12), (12, 12))


@dataclass(frozen=True)
class ScreenshotOptions:
    """How to render a screenshot.

    Attributes:
        format: ``"png"`` (OSWorld's), ``"jpeg"`` or ``"raw"`` (packed RGB rows, no header).
        quality: JPEG quality, 1-95.
        png_level: zlib level for PNG, 0-9 (1 is OSWorld-compatible and fast).
        max_pixels: Downscale (keeping the aspect ratio) so width*height <= this; 0 = off.
        cursor: Draw the mouse pointer into the image.
        settle: Wait until the screen stops changing before returning it.
        settle_timeout: Seconds to wait for the screen to settle at most.
        settle_quiet: Seconds the screen must stay unchanged to count as settled.
        settle_interval: Seconds between frames compared while settling (``"poll"``), or
            between samples of new processes while one exists (``"events"``).
        settle_mode: ``"poll"`` compares full frames every ``settle_interval`` until
            ``settle_quiet`` passes without change; ``"events"`` waits on X damage, window
            events and launch signals (``osworld_gym.guest.settle``), copying no frame,
            and samples processes every ``settle_interval`` or ``EVENTS_INTERVAL``, whichever
            is shorter.
        settle_launch_timeout: ``"events"`` only: seconds the wait may last while work is
            pending (an app starting, loading, a dialog answering); None: ``settle_timeout``.
    """

    format: str = "png"
    quality: int = 85
    png_level: int = 1
    max_pixels: int = 0
    cursor: bool = True
    settle: bool = False
    settle_timeout: float = 3.0
    settle_quiet: float = 0.2
    settle_interval: float = 0.04
    settle_mode: str = "poll"
    settle_launch_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {self.format!r}")
        if not 1 <= self.quality <= 95:
            raise ValueError(f"quality must be in [1, 95], got {self.quality}")
        if not 0 <= self.png_level <= 9:
            raise ValueError(f"png_level must be in [0, 9], got {self.png_level}")
        if self.max_pixels < 0:
            raise ValueError("max_pixels must be >= 0")
        if not (0 < self.settle_timeout <= 60 and 0 <= self.settle_quiet <= 10):
            raise ValueError("settle_timeout must be in (0, 60] and settle_quiet in [0, 10]")
        if not 0.005 <= self.settle_interval <= 1:
            raise ValueError("settle_interval must be in [0.005, 1]")
        if self.settle_mode not in SETTLE_MODES:
            raise ValueError(f"settle_mode must be one of {SETTLE_MODES}, got {self.settle_mode!r}")
        if self.settle_launch_timeout is not None and not 0 < self.settle_launch_timeout <= 120:
            raise ValueError("settle_launch_timeout must be in (0, 120]")


@dataclass(frozen=True)
class Screenshot:
    """An encoded screenshot and what it took to make it.

    ``data`` is a ``memoryview`` over the RGB pixels for ``"raw"`` (no copy into ``bytes``),
    empty when the pixels went into the caller's buffer (``out`` of
    ``ScreenCapture.screenshot()``), else the encoded bytes.
    """

    data: bytes | memoryview
    content_type: str
    width: int  # of the encoded image
    height: int
    screen_width: int
    screen_height: int
    settled: bool | None  # None when no settle wait was asked for
    settle_seconds: float
    frames: int
    settle_end: str | None = None  # "quiet" or "timeout"; None when no settle wait was asked
    settle_pending: tuple[str, ...] = ()  # signals still pending when the wait ended
    settle_seen: tuple[str, ...] = ()  # signals seen during the wait


class ScreenCapture:
    """Grabs one X display. Thread-safe: calls are serialised (mss handles are not shareable).

    Args:
        display_name: The X display, e.g. ``":3"``.
        pointer: Returns the pointer position; used to draw a stand-in arrow when the X
            server refuses the cursor image (XFixes answers BadAccess for a moment after the
            window manager that owned the root cursor restarts).
        screen_size: Returns the screen's size now. A desktop program can shrink the screen
            (``xrandr --fb 800x600``); frames keep the size the guest started with, the
            part the screen no longer covers black, instead of failing (which would end the
            episode as an infrastructure fault: the agent's way out of it).
    """

    def __init__(
        self,
        display_name: str,
        pointer: Callable[[], tuple[int, int]] | None = None,
        settler: EventSettler | None = None,
        screen_size: Callable[[], tuple[int, int]] | None = None,
    ) -> None:
        self._pointer = pointer
        self._screen_size = screen_size
        self._settler = settler
        self._lock = threading.Lock()
        self._grabbers = {
            cursor: mss.MSS(display=display_name, with_cursor=cursor) for cursor in (True, False)
        }
        self._monitor = self._grabbers[True].monitors[0]
        self.segments = FrameSegments()

    @property
    def size(self) -> tuple[int, int]:
        """The screen's (width, height)."""
        return self._monitor["width"], self._monitor["height"]

    def grab_raw(self, cursor: bool = True) -> bytes:
        """Grab the screen as BGRA bytes, with the pointer drawn in when ``cursor``."""
        return bytes(self.grab_frame(cursor))

    def grab_frame(self, cursor: bool = True) -> bytearray | bytes:
        """Grab the screen as BGRA pixels without copying them again (mss's own buffer).

        mss hands out a new buffer on every grab, so the result is the caller's to keep.
        """
        with self._lock:
            try:
                return self._grabbers[cursor].grab(self._monitor).raw
            except ScreenShotError:
                part = self._covered_part()
                if part is not None:  # the screen shrank: what it still shows, padded
                    return self._padded(self._grabbers[cursor].grab(part).raw, part)
                if not cursor or self._pointer is None:
                    raise
                raw = self._grabbers[False].grab(self._monitor).raw
        return self._draw_arrow(raw)

    def _covered_part(self) -> dict[str, int] | None:
        """The part of the captured area the screen covers now, if it shrank; else None."""
        if self._screen_size is None:
            return None
        width, height = self._screen_size()
        full_width, full_height = self.size
        if width >= full_width and height >= full_height:
            return None
        return {
            "left": 0,
            "top": 0,
            "width": min(width, full_width),
            "height": min(height, full_height),
        }

    def _padded(self, raw: bytearray | bytes, part: dict[str, int]) -> bytes:
        """``raw`` (BGRA pixels of ``part``) in the top left of a black frame of full size."""
        full_width, full_height = self.size
        frame = np.zeros((full_height, full_width, 4), np.uint8)
        pixels = np.frombuffer(raw, np.uint8).reshape(part["height"], part["width"], 4)
        frame[: part["height"], : part["width"]] = pixels
        return frame.tobytes()

    def _draw_arrow(self, raw: bytearray | bytes) -> bytes:
        assert self._pointer is not None
        x, y = self._pointer()
        image = Image.frombuffer("RGBA", self.size, raw, "raw", "RGBA", 0, 1).copy()
        # The buffer is BGRA; white and black look the same in either byte order.
        ImageDraw.Draw(image).polygon(
            [(x + dx, y + dy) for dx, dy in _ARROW],
            fill=(255, 255, 255, 255),
            outline=(0, 0, 0, 255),
        )
        return image.tobytes()

    def screenshot(self, options: ScreenshotOptions, out: memoryview | None = None) -> Screenshot:
        """Grab (after an optional settle wait), resize and encode the screen.

        Args:
            options: How to render it.
            out: For ``"raw"``: a writable buffer of at least width*height*3 bytes (of the
                image after any resize) that receives the RGB pixels; the result's ``data`` is
                then empty. Ignored for the encoded formats.

        Raises:
            ValueError: ``out`` is too small for the image.
        """
        start = time.perf_counter()
        settled: bool | None = None
        frames = 1
        end: str | None = None
        pending: tuple[str, ...] = ()
        seen: tuple[str, ...] = ()
        if options.settle and options.settle_mode == "events":
            if self._settler is None:
                raise SettleUnavailableError("this capture has no event settler")
            result = self._settler.wait(
                options.settle_timeout,
                options.settle_quiet,
                min(options.settle_interval, EVENTS_INTERVAL),
                options.settle_launch_timeout,
            )
            settled, end, pending, seen = result.settled, result.end, result.pending, result.seen
            raw = self.grab_frame(options.cursor)
        elif options.settle:
            raw, settled, frames, changed = self._settle(options)
            end = "quiet" if settled else "timeout"
            pending = () if settled else (SIGNAL_SCREEN,)
            seen = (SIGNAL_SCREEN,) if changed else ()
        else:
            raw = self.grab_frame(options.cursor)
        settle_seconds = time.perf_counter() - start if options.settle else 0.0
        width, height = self.size
        data, content_type, size = render(raw, (width, height), options, out)
        return Screenshot(
            data,
            content_type,
            size[0],
            size[1],
            width,
            height,
            settled,
            settle_seconds,
            frames,
            end,
            pending,
            seen,
        )

    def _settle(self, options: ScreenshotOptions) -> tuple[bytearray | bytes, bool, int, bool]:
        # The pointer is left out of the comparison so a blinking/animated cursor cannot keep
        # the screen "busy"; the returned frame is re-grabbed with the cursor when asked for.
        deadline = time.monotonic() + options.settle_timeout
        previous = self.grab_frame(cursor=False)
        unchanged_since = time.monotonic()
        frames = 1
        settled = changed = False
        while time.monotonic() < deadline:
            time.sleep(options.settle_interval)
            frame = self.grab_frame(cursor=False)
            frames += 1
            now = time.monotonic()
            if frame != previous:
                previous, unchanged_since, changed = frame, now, True
            elif now - unchanged_since >= options.settle_quiet:
                settled = True
                break
        raw = self.grab_frame(cursor=True) if options.cursor else previous
        return raw, settled, frames, changed

    def close(self) -> None:
        """Release the X connections and the mapped frame segments."""
        with self._lock:
            for grabber in self._grabbers.values():
                grabber.close()
        self.segments.close()


SEGMENT_PREFIX = "osworld-gym-frame-"
"""Start of the name of every shared-memory file a client hands the guest for raw frames."""
_SEGMENT_NAME = re.compile(re.escape(SEGMENT_PREFIX) + r"[0-9a-f]{16,64}")


class SegmentError(ValueError):
    """A frame segment named by a client cannot be used (missing, wrong kind or size)."""


@dataclass
class _Mapping:
    key: tuple[int, int]  # (st_dev, st_ino): a file replaced under the same name is remapped
    map: mmap.mmap
    users: int = 0
    retired: bool = False


class FrameSegments:
    """Shared-memory files that clients name to receive raw frames, kept mapped between calls.

    The client creates (and fully allocates) a file on a tmpfs both sides see, and names it
    in each raw screenshot request; the guest writes the RGB pixels into it instead of the
    response body. Each request in flight names its own file (the client's pool sees to it),
    so two screenshots never write into one frame. Mappings are kept because writing into a
    fresh mapping faults every page in again (~2 ms at 1080p, as much as the transfer saved);
    a file deleted or replaced under its name is unmapped on the next call (a deleted file's
    memory is freed then, or when the guest exits).

    Args:
        limit: Mappings kept at most; the least recently used idle one goes first.
    """

    def __init__(self, limit: int = 4) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._maps: OrderedDict[str, _Mapping] = OrderedDict()

    @contextmanager
    def mapped(self, path: str, size: int) -> Iterator[memoryview]:
        """The first ``size`` bytes of segment ``path``, writable, for the ``with`` block.

        Raises:
            SegmentError: ``path`` is not a segment (name, kind), missing, or smaller than
                ``size`` bytes, or not fully allocated (a write into a hole of a full tmpfs
                would kill the guest with SIGBUS).
        """
        if not os.path.isabs(path) or not _SEGMENT_NAME.fullmatch(os.path.basename(path)):
            raise SegmentError(f"not a frame segment path: {path!r}")
        entry = self._acquire(path, size)
        view = memoryview(entry.map)[:size]
        try:
            yield view
        finally:
            try:
                view.release()
            except BufferError:  # an array over it outlives the call (an error's traceback)
                logger.debug("frame segment %s still in use; unmapped when released", path)
            with self._lock:
                entry.users -= 1
                if entry.retired and not entry.users:
                    _unmap(entry.map)

    def _acquire(self, path: str, size: int) -> _Mapping:
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError as e:
            raise SegmentError(f"frame segment {path} is not there: {e.strerror}") from e
        with self._lock:
            self._forget_deleted()
            entry = self._maps.get(path)
            if entry is None or entry.key != (info.st_dev, info.st_ino):
                if entry is not None:
                    self._retire(path)
                entry = self._map(path)
                self._maps[path] = entry
            if len(entry.map) < size:
                raise SegmentError(f"frame segment {path} holds {len(entry.map)} bytes, not {size}")
            self._maps.move_to_end(path)
            entry.users += 1
            self._evict()  # after taking it: never the one being handed out
            return entry

    @staticmethod
    def _map(path: str) -> _Mapping:
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise SegmentError(f"cannot open frame segment {path}: {e.strerror}") from e
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                raise SegmentError(f"frame segment {path} is not a non-empty regular file")
            if info.st_blocks * 512 < info.st_size:
                raise SegmentError(f"frame segment {path} is not fully allocated")
            return _Mapping((info.st_dev, info.st_ino), mmap.mmap(fd, info.st_size))
        finally:
            os.close(fd)

    def _retire(self, path: str) -> None:
        entry = self._maps.pop(path)
        entry.retired = True
        if not entry.users:
            _unmap(entry.map)

    def _forget_deleted(self) -> None:
        # A client that went away deleted its files; their memory is freed once unmapped.
        for path in [p for p in self._maps if not os.path.lexists(p)]:
            self._retire(path)

    def _evict(self) -> None:
        idle = [p for p, e in self._maps.items() if not e.users]
        while len(self._maps) > self._limit and idle:
            self._retire(idle.pop(0))

    def close(self) -> None:
        """Unmap every segment not in use (the rest go when their call ends)."""
        with self._lock:
            for path in list(self._maps):
                self._retire(path)


def bgrx_to_rgb(
    raw: bytearray | bytes | memoryview, size: tuple[int, int], out: np.ndarray | None = None
) -> np.ndarray:
    """Reorder X11's BGRX pixels into an ``H x W x 3`` RGB array, written once.

    Args:
        raw: Packed BGRX rows (4 bytes a pixel, the 4th ignored).
        size: (width, height).
        out: An ``H x W x 3`` uint8 array (any strides) to write into; a new one if None.
    """
    width, height = size
    src = np.frombuffer(raw, np.uint8, count=width * height * 4).reshape(height, width, 4)
    rgb = np.empty((height, width, 3), np.uint8) if out is None else out
    # One assignment per channel: numpy copies a strided channel fast, while a single copy of
    # the reversed 3-byte slice (src[..., 2::-1]) runs an inner loop of 3 and is ~5x slower.
    rgb[..., 0] = src[..., 2]
    rgb[..., 1] = src[..., 1]
    rgb[..., 2] = src[..., 0]
    return rgb


def _unmap(mapping: mmap.mmap) -> None:
    try:
        mapping.close()
    except BufferError:  # still exported: the mapping goes with its last user
        logger.debug("frame segment mapping still exported; left to the garbage collector")


def image_size(size: tuple[int, int], max_pixels: int) -> tuple[int, int]:
    """The (width, height) of a screenshot of a ``size`` screen under a ``max_pixels`` budget."""
    return _scaled_size(size, max_pixels) or size


def _scaled_size(size: tuple[int, int], max_pixels: int) -> tuple[int, int] | None:
    """The size that fits ``max_pixels`` (keeping the aspect ratio); None when it fits as is."""
    width, height = size
    if not max_pixels or width * height <= max_pixels:
        return None
    scale = math.sqrt(max_pixels / (width * height))
    return max(1, int(width * scale)), max(1, int(height * scale))


def fit_pixels(rgb: bytes, size: tuple[int, int], max_pixels: int) -> tuple[bytes, tuple[int, int]]:
    """Downscale packed RGB (keeping the aspect ratio) to at most ``max_pixels``; 0 = as is."""
    new_size = _scaled_size(size, max_pixels)
    if new_size is None:
        return rgb, size
    image = Image.frombuffer("RGB", size, rgb, "raw", "RGB", 0, 1)
    return image.resize(new_size, Image.Resampling.BILINEAR).tobytes(), new_size


def render(
    raw: bytearray | bytes,
    size: tuple[int, int],
    options: ScreenshotOptions,
    out: memoryview | None = None,
) -> tuple[bytes | memoryview, str, tuple[int, int]]:
    """Resize and encode a BGRX frame; returns (data, content type, image size).

    Args:
        raw: The frame, packed BGRX rows of ``size``.
        size: The frame's (width, height).
        options: Format, quality, PNG level and pixel budget.
        out: For ``"raw"``, a writable buffer that receives the RGB pixels (``data`` is then
            empty); see ``ScreenCapture.screenshot()``.
    """
    new_size = _scaled_size(size, options.max_pixels)
    if new_size is not None:
        # Rare (a pixel budget): Pillow decodes BGRX and resizes; the result is small.
        image = Image.frombuffer("RGB", size, raw, "raw", "BGRX", 0, 1)
        image = image.resize(new_size, Image.Resampling.BILINEAR)
        if options.format == "jpeg":
            return _jpeg(image, options.quality), "image/jpeg", new_size
        rgb = np.asarray(image)
        if options.format == "png":
            return _png_from_rgb(rgb, options.png_level), "image/png", new_size
        return _raw_out(rgb, out), RAW_CONTENT_TYPE, new_size
    if options.format == "jpeg":
        image = Image.frombuffer("RGB", size, raw, "raw", "BGRX", 0, 1)
        return _jpeg(image, options.quality), "image/jpeg", size
    if options.format == "png":
        return _png_from_bgrx(raw, size, options.png_level), "image/png", size
    width, height = size
    if out is None:
        return memoryview(bgrx_to_rgb(raw, size)).cast("B"), RAW_CONTENT_TYPE, size
    bgrx_to_rgb(raw, size, _out_array(out, width, height))
    return b"", RAW_CONTENT_TYPE, size


RAW_CONTENT_TYPE = "application/octet-stream"


def _out_array(out: memoryview, width: int, height: int) -> np.ndarray:
    """``out``'s first width*height*3 bytes as an ``H x W x 3`` array (no copy)."""
    needed = width * height * 3
    if out.nbytes < needed:
        raise ValueError(f"the output buffer holds {out.nbytes} bytes, the image needs {needed}")
    flat = np.frombuffer(out, np.uint8, count=needed)
    return flat.reshape(height, width, 3)


def _raw_out(rgb: np.ndarray, out: memoryview | None) -> bytes | memoryview:
    if out is None:
        return memoryview(np.ascontiguousarray(rgb)).cast("B")
    height, width = rgb.shape[:2]
    _out_array(out, width, height)[...] = rgb
    return b""


def _jpeg(image: Image.Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    """One PNG chunk: length, type, payload, CRC-32 of type and payload."""
    crc = zlib.crc32(payload, zlib.crc32(kind))
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png(scanlines: np.ndarray, size: tuple[int, int], level: int) -> bytes:
    """A PNG (8-bit RGB, no interlace) from its filtered scanlines, one filter byte a row."""
    width, height = size
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"".join(
        (
            _PNG_SIGNATURE,
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(scanlines, level)),
            _png_chunk(b"IEND", b""),
        )
    )


def _scanlines(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of filter type 0 ("none", as OSWorld's PNGs), and an ``H x W x 3`` view of pixels."""
    scanlines = np.empty((height, 1 + 3 * width), np.uint8)
    scanlines[:, 0] = 0
    pixels = np.ndarray(
        (height, width, 3), np.uint8, buffer=scanlines, offset=1, strides=(1 + 3 * width, 3, 1)
    )
    return scanlines, pixels


def _png_from_bgrx(raw: bytearray | bytes, size: tuple[int, int], level: int) -> bytes:
    # The RGB reorder writes the scanlines in place: no packed-RGB copy in between.
    scanlines, pixels = _scanlines(*size)
    bgrx_to_rgb(raw, size, pixels)
    return _png(scanlines, size, level)


def _png_from_rgb(rgb: np.ndarray, level: int) -> bytes:
    height, width = rgb.shape[:2]
    scanlines, pixels = _scanlines(width, height)
    pixels[...] = rgb
    return _png(scanlines, (width, height), level)


def encode(
    rgb: bytes | memoryview, size: tuple[int, int], options: ScreenshotOptions
) -> tuple[bytes | memoryview, str]:
    """Encode packed RGB pixels; returns (bytes, content type)."""
    if options.format == "raw":
        return rgb, RAW_CONTENT_TYPE
    if options.format == "jpeg":
        return _jpeg(Image.frombuffer("RGB", size, rgb, "raw", "RGB", 0, 1), options.quality), (
            "image/jpeg"
        )
    width, height = size
    pixels = np.frombuffer(rgb, np.uint8, count=width * height * 3).reshape(height, width, 3)
    return _png_from_rgb(pixels, options.png_level), "image/png"
