"""Guest routes for screen recording and the AT-SPI views (/accessibility, /terminal)."""

from __future__ import annotations

import logging

from osworld_gym.guest import a11y
from osworld_gym.guest.context import GuestContext
from osworld_gym.guest.http import HTTPError, Request, Response

logger = logging.getLogger(__name__)


def start_recording(ctx: GuestContext, request: Request) -> Response:
    """``/start_recording``."""
    ctx.recorder.start(ctx)
    return Response.json({"status": "success", "message": "Started recording successfully."})


def end_recording(ctx: GuestContext, request: Request) -> Response:
    """``/end_recording``: the MP4 as an attachment."""
    path = ctx.recorder.stop()
    return Response(
        b"",
        content_type="video/mp4",
        file_path=str(path),
        headers={"Content-Disposition": 'attachment; filename="recording.mp4"'},
    )


def accessibility(ctx: GuestContext, request: Request) -> Response:
    """``/accessibility``: OSWorld's XML a11y tree as ``{"AT": xml}``, or a clear 503."""
    try:
        xml = a11y.accessibility_tree(ctx.config.display, ctx.child_env(), lock=ctx.a11y_lock)
    except a11y.AccessibilityUnavailable as e:
        raise HTTPError(503, f"accessibility tree unavailable: {e}") from e
    return Response.json({"AT": xml})


def terminal(ctx: GuestContext, request: Request) -> Response:
    """``/terminal``: text of the focused terminal through AT-SPI, else ``null`` (as OSWorld)."""
    try:
        output = a11y.terminal_text(ctx.config.display, ctx.child_env(), lock=ctx.a11y_lock)
    except a11y.AccessibilityUnavailable as e:
        logger.debug("terminal text unavailable: %s", e)
        output = None
    return Response.json({"output": output, "status": "success"})


ROUTES = (
    ("POST", "/start_recording", start_recording),
    ("POST", "/end_recording", end_recording),
    ("GET", "/accessibility", accessibility),
    ("GET", "/terminal", terminal),
)
