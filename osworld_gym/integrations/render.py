"""Observations as chat content parts, the form every trainer's conversation takes.

An observation becomes one image part (the screenshot) and, when there is anything to say, one
text part: the task instruction on the first turn, the last action's error after. Two styles:

* ``"openai"``: ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``
  and ``{"type": "text", "text": ...}`` (OpenAI-compatible servers, SkyRL, OpenEnv clients);
* ``"hf"``: ``{"type": "image", "image": <PIL.Image>}`` and ``{"type": "text", "text": ...}``
  (Hugging Face processors' chat templates, TRL's tool results).

``max_pixels`` downsizes the screenshot (aspect kept) so that a 15-step conversation fits a
model's context; coordinates the model answers stay in the screen's pixels, which the text of
the first turn states when the image is smaller than the screen.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "ImageFormat",
    "RenderStyle",
    "encode_image",
    "observation_text",
    "render_observation",
    "screenshot_image",
]

RenderStyle = Literal["openai", "hf"]
ImageFormat = Literal["png", "jpeg"]
_MIME = {"png": "image/png", "jpeg": "image/jpeg"}


def screenshot_image(screenshot: np.ndarray | bytes, max_pixels: int | None = None) -> PILImage:
    """The screenshot as an RGB PIL image, scaled down to at most ``max_pixels`` pixels.

    Args:
        screenshot: An ``H x W x 3`` uint8 array, or PNG/JPEG bytes.
        max_pixels: Pixel budget (None: full size). The aspect ratio is kept.

    Raises:
        ValueError: Not an ``H x W x 3`` array, or ``max_pixels`` < 1.
    """
    from PIL import Image

    if isinstance(screenshot, bytes | bytearray | memoryview):
        with Image.open(io.BytesIO(bytes(screenshot))) as opened:
            image = opened.convert("RGB")
    else:
        array = np.asarray(screenshot)
        if array.ndim != 3 or array.shape[2] != 3:
            raise ValueError(f"expected an H x W x 3 screenshot, got shape {array.shape}")
        image = Image.fromarray(np.ascontiguousarray(array, dtype=np.uint8))
    if max_pixels is not None:
        if max_pixels < 1:
            raise ValueError(f"max_pixels must be >= 1, got {max_pixels}")
        width, height = image.size
        if width * height > max_pixels:
            scale = math.sqrt(max_pixels / (width * height))
            size = (max(1, int(width * scale)), max(1, int(height * scale)))
            image = image.resize(size, Image.Resampling.BICUBIC)
    return image


def encode_image(
    image: PILImage, image_format: ImageFormat = "png", *, jpeg_quality: int = 85
) -> bytes:
    """PNG (zlib level 1: fast, lossless) or JPEG bytes of an image."""
    if image_format not in _MIME:
        raise ValueError(f"image_format must be 'png' or 'jpeg', got {image_format!r}")
    buffer = io.BytesIO()
    if image_format == "png":
        image.save(buffer, format="PNG", compress_level=1)
    else:
        image.save(buffer, format="JPEG", quality=jpeg_quality)
    return buffer.getvalue()


def observation_text(
    observation: Mapping[str, Any],
    *,
    first_turn: bool,
    screen_size: tuple[int, int] | None = None,
    image_size: tuple[int, int] | None = None,
) -> str:
    """What accompanies the screenshot: the instruction first, then the last action's error.

    Args:
        observation: The env's observation (``instruction``, ``last_action_error``).
        first_turn: Whether this is the episode's first observation.
        screen_size: The screen's ``(width, height)``; stated on the first turn when the image
            shown is another size, so the model answers in screen pixels.
        image_size: The size of the image shown.
    """
    lines = []
    if first_turn:
        lines.append(str(observation.get("instruction") or ""))
        if screen_size and image_size and tuple(screen_size) != tuple(image_size):
            lines.append(
                f"The screen is {screen_size[0]}x{screen_size[1]} pixels (the screenshot is "
                f"scaled to {image_size[0]}x{image_size[1]}); give coordinates in screen pixels."
            )
    error = observation.get("last_action_error")
    if error:
        lines.append(f"Last action error: {error}")
    return "\n".join(line for line in lines if line)


def render_observation(
    observation: Mapping[str, Any],
    *,
    first_turn: bool,
    style: RenderStyle = "openai",
    image_format: ImageFormat = "png",
    max_pixels: int | None = None,
    jpeg_quality: int = 85,
) -> list[dict[str, Any]]:
    """Chat content parts for one observation: the screenshot, then its text (if any).

    Args:
        observation: The env's observation dict (``screenshot`` as an ``H x W x 3`` array or
            encoded bytes, ``instruction``, ``last_action_error``).
        first_turn: Put the instruction in (the episode's first observation).
        style: ``"openai"`` (``image_url`` data URI) or ``"hf"`` (a PIL image).
        image_format: Encoding of the data URI, ``"png"`` or ``"jpeg"`` (``"openai"`` only).
        max_pixels: Pixel budget of the image (None: the screen's size).
        jpeg_quality: JPEG quality, 1-95.

    Returns:
        ``[image part, text part]``, or just the image part when there is no text.

    Example:
        >>> import numpy as np
        >>> obs = {"screenshot": np.zeros((4, 6, 3), np.uint8), "instruction": "Click OK.",
        ...        "last_action_error": ""}
        >>> [part["type"] for part in render_observation(obs, first_turn=True)]
        ['image_url', 'text']
    """
    if style not in ("openai", "hf"):
        raise ValueError(f"style must be 'openai' or 'hf', got {style!r}")
    screenshot = observation["screenshot"]
    screen_size = None
    if isinstance(screenshot, np.ndarray) and screenshot.ndim == 3:
        screen_size = (int(screenshot.shape[1]), int(screenshot.shape[0]))
    image = screenshot_image(screenshot, max_pixels)
    if style == "hf":
        parts: list[dict[str, Any]] = [{"type": "image", "image": image}]
    else:
        data = base64.b64encode(encode_image(image, image_format, jpeg_quality=jpeg_quality))
        url = f"data:{_MIME[image_format]};base64,{data.decode('ascii')}"
        parts = [{"type": "image_url", "image_url": {"url": url}}]
    text = observation_text(
        observation, first_turn=first_turn, screen_size=screen_size, image_size=image.size
    )
    if text:
        parts.append({"type": "text", "text": text})
    return parts
