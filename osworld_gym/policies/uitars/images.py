"""Screenshots as the model sees them: smart-resized to the size the action parser assumes.

UI-TARS-1.5 answers in pixels of the image it was shown, and the ``uitars`` dialect maps those
back to the screen with ``osworld_gym.actions.coords.smart_resize()``. Resizing here with the
same function and the same bounds is what keeps the two in step; the image processor of the
engine then finds the image already at a valid size and leaves it alone.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Literal

import numpy as np

from osworld_gym.actions import coords
from osworld_gym.policies.conversation import ImagePart

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = ["ImageFormat", "ScreenshotEncoder"]

ImageFormat = Literal["png", "jpeg"]


class ScreenshotEncoder:
    """Resizes and encodes screenshots into ``ImagePart`` values, caching by content.

    The agent rebuilds every prompt from the trajectory, so each past screenshot comes back on
    every later step; the cache turns that into one decode-resize-encode per screenshot.

    Args:
        min_pixels: Smallest pixel count of a resized image.
        max_pixels: Largest pixel count of a resized image.
        factor: Both sides become multiples of this (Qwen2.5-VL: 28).
        image_format: ``"png"`` (lossless, what ARPO sends) or ``"jpeg"`` (smaller requests).
        jpeg_quality: JPEG quality, 1-95.
        png_compress_level: zlib level for PNG, 0-9 (1: fast; the pixels are the same).
        cache_size: Encoded screenshots to keep, least recently used dropped first; 0: none.
    """

    def __init__(
        self,
        *,
        min_pixels: int = coords.MIN_PIXELS,
        max_pixels: int = coords.MAX_PIXELS,
        factor: int = coords.IMAGE_FACTOR,
        image_format: ImageFormat = "png",
        jpeg_quality: int = 95,
        png_compress_level: int = 1,
        cache_size: int = 256,
    ) -> None:
        if image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {image_format!r}")
        if not 1 <= jpeg_quality <= 95 or not 0 <= png_compress_level <= 9 or cache_size < 0:
            raise ValueError(
                "need 1 <= jpeg_quality <= 95, 0 <= png_compress_level <= 9 and cache_size >= 0"
            )
        # Fails early on inconsistent bounds instead of on the first screenshot.
        coords.smart_resize(1080, 1920, factor, min_pixels, max_pixels)
        self.min_pixels, self.max_pixels, self.factor = min_pixels, max_pixels, factor
        self.image_format: ImageFormat = image_format
        self.jpeg_quality, self.png_compress_level = jpeg_quality, png_compress_level
        self.cache_size = cache_size
        self._cache: OrderedDict[bytes, ImagePart] = OrderedDict()
        self._lock = threading.Lock()  # the pool may call the policy from several threads

    def model_size(self, width: int, height: int) -> tuple[int, int]:
        """Return the ``(width, height)`` the model sees for a ``width`` x ``height`` screen.

        Example:
            >>> ScreenshotEncoder().model_size(1920, 1080)
            (1932, 1092)
        """
        new_h, new_w = coords.smart_resize(
            height, width, self.factor, self.min_pixels, self.max_pixels
        )
        return new_w, new_h

    def from_array(self, frame: np.ndarray) -> ImagePart:
        """Resize and encode an ``H x W x 3`` uint8 screenshot (not cached: arrays are fresh)."""
        from PIL import Image

        array = np.asarray(frame)
        if array.ndim != 3 or array.shape[2] != 3:
            raise ValueError(f"expected an H x W x 3 screenshot, got shape {array.shape}")
        return self._encode(Image.fromarray(np.ascontiguousarray(array, dtype=np.uint8)))

    def from_bytes(self, data: bytes) -> ImagePart:
        """Resize and encode a PNG or JPEG screenshot, from the cache when seen before."""
        from PIL import Image

        key = hashlib.blake2b(data, digest_size=16).digest()
        with self._lock:
            part = self._cache.get(key)
            if part is not None:
                self._cache.move_to_end(key)
                return part
        with Image.open(io.BytesIO(data)) as image:
            part = self._encode(image.convert("RGB"))
        if self.cache_size:
            with self._lock:
                self._cache[key] = part
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return part

    def _encode(self, image: PILImage) -> ImagePart:
        from PIL import Image

        width, height = self.model_size(*image.size)
        if image.size != (width, height):
            # Bicubic, as the Qwen image processors and qwen_vl_utils resize.
            image = image.resize((width, height), Image.Resampling.BICUBIC)
        buffer = io.BytesIO()
        if self.image_format == "png":
            image.save(buffer, format="PNG", compress_level=self.png_compress_level)
        else:
            image.save(buffer, format="JPEG", quality=self.jpeg_quality)
        return ImagePart(buffer.getvalue(), width, height)
