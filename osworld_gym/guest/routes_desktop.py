"""Guest routes that see and drive the screen: screenshots, typed actions, windows, wallpaper.

OSWorld-compatible routes keep OSWorld's shapes; ``/health``, ``/actions`` and the screenshot
query options are this server's extensions (discovered by clients through ``/health``).
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from osworld_gym.guest import protocol
from osworld_gym.guest.capture import Screenshot, ScreenshotOptions, SegmentError, image_size
from osworld_gym.guest.context import GuestContext
from osworld_gym.guest.http import HTTPError, Request, Response, finite_number
from osworld_gym.guest.identity import desktop_user
from osworld_gym.guest.routes_files import expand_path
from osworld_gym.guest.settle import SettleUnavailableError
from osworld_gym.guest.x11 import WindowInfo, keysym_for_key
from osworld_gym.version import __version__

CAPABILITIES = (
    "actions",
    "actions.limits",
    "screenshot.format",
    "screenshot.resize",
    "screenshot.settle",
    "screenshot.settle_mode",
    "screenshot.shm",
    "token",
    "run_bash_script.fixed",
    "open_file.timeout",
)
MAX_OPEN_FILE_TIMEOUT = 600.0
HOTKEY_HOLD_SECONDS = 0.05
DRAWN_TIMEOUT = 10.0  # seconds open_file waits for a window's content after it appears
DRAWN_MIN_COLOURS = 8


def health(ctx: GuestContext, request: Request) -> Response:
    """``/health`` (extension): who this server is, what it can do, the screen size."""
    width, height = ctx.capture.size
    return Response.json(
        {
            "status": "ok",
            "server": "osworld-gym-guest",
            "version": __version__,
            "protocol": protocol.PROTOCOL_VERSION,
            "capabilities": list(CAPABILITIES),
            "screen": {"width": width, "height": height},
            "display": ctx.config.display,
            "platform": platform.system(),
            "action_kinds": list(protocol.ACTION_KINDS),
            "action_limits": ctx.config.action_limits.to_json(),
        }
    )


def _screenshot_options(query: dict[str, str]) -> ScreenshotOptions:
    def flag(name: str, default: bool) -> bool:
        return query.get(name, "1" if default else "0").lower() in ("1", "true", "yes")

    try:
        return ScreenshotOptions(
            format=query.get("format", "png").lower(),
            quality=int(query.get("quality", 85)),
            png_level=int(query.get("png_level", 1)),
            max_pixels=int(query.get("max_pixels", 0)),
            cursor=flag("cursor", True),
            settle=flag("settle", False),
            settle_timeout=finite_number(query.get("settle_timeout", 3.0), "settle_timeout"),
            settle_quiet=finite_number(query.get("settle_quiet", 0.2), "settle_quiet"),
            settle_interval=finite_number(query.get("settle_interval", 0.04), "settle_interval"),
            settle_mode=query.get("settle_mode", "poll").lower(),
            settle_launch_timeout=(
                finite_number(query["settle_launch_timeout"], "settle_launch_timeout")
                if "settle_launch_timeout" in query
                else None
            ),
        )
    except ValueError as e:
        raise HTTPError(400, f"bad screenshot option: {e}") from e


def screenshot(ctx: GuestContext, request: Request) -> Response:
    """``/screenshot``: PNG with the pointer drawn in; query options pick format, size, settle.

    ``shm=<path>`` (extension, raw only): write the RGB pixels into that shared-memory file
    (see ``osworld_gym.guest.capture.FrameSegments``) and answer with headers only; the
    ``X-Shm`` header names the file written. 409 when the file cannot take the frame.
    """
    query = {} if ctx.config.official else request.query
    options = _screenshot_options(query)
    segment = query.get("shm")
    try:
        if segment is None:
            shot = ctx.capture.screenshot(options)
        else:
            shot = _screenshot_into(ctx, options, segment)
    except SettleUnavailableError as e:
        raise HTTPError(501, str(e)) from e
    headers = {
        "X-Image-Width": str(shot.width),
        "X-Image-Height": str(shot.height),
        "X-Screen-Width": str(shot.screen_width),
        "X-Screen-Height": str(shot.screen_height),
        "X-Settle-Seconds": f"{shot.settle_seconds:.4f}",
        "X-Frames": str(shot.frames),
    }
    if shot.settled is not None:
        headers["X-Settled"] = "true" if shot.settled else "false"
    if shot.settle_end is not None:
        headers["X-Settle-End"] = shot.settle_end
        headers["X-Settle-Pending"] = ",".join(shot.settle_pending)
        headers["X-Settle-Seen"] = ",".join(shot.settle_seen)
    if shot.content_type == "application/octet-stream":
        headers["X-Pixel-Format"] = "RGB"
    if segment is not None:
        headers["X-Shm"] = segment
        headers["X-Shm-Bytes"] = str(shot.width * shot.height * 3)
    if not ctx.config.official:
        faults = ctx.desktop_faults()
        if faults:
            headers["X-Desktop-Faults"] = ",".join(faults)
    return Response(shot.data, content_type=shot.content_type, headers=headers)


def _screenshot_into(ctx: GuestContext, options: ScreenshotOptions, segment: str) -> Screenshot:
    """A raw screenshot written into the client's shared-memory file ``segment``."""
    if options.format != "raw":
        raise HTTPError(400, "shm needs format=raw")
    width, height = image_size(ctx.capture.size, options.max_pixels)
    try:
        with ctx.capture.segments.mapped(segment, width * height * 3) as out:
            return ctx.capture.screenshot(options, out=out)
    except SegmentError as e:
        raise HTTPError(409, str(e)) from e


def actions(ctx: GuestContext, request: Request) -> Response:
    """``/actions`` (extension): run typed input actions in-process through XTEST.

    A batch over the guest's ``ActionLimits`` is refused
    before anything runs (413, naming the limit). Once the batch's time budget is spent, no
    further action starts: the answer (422, ``limit: "max_seconds"``) says how many ran.
    """
    limits = ctx.config.action_limits
    batch = _checked_batch(request.json().get("actions"), limits)
    with ctx.input_lock:
        # The budget counts this request's own work, not its wait for another's to end.
        start = time.monotonic()
        deadline = start + limits.max_seconds
        for index, action in enumerate(batch):
            if index and time.monotonic() >= deadline:
                ctx.x11.sync()  # what ran has reached the X server before we answer
                raise HTTPError(
                    422,
                    f"time budget of {limits.max_seconds:g} s spent after {index} of "
                    f"{len(batch)} actions; the rest did not run (max_seconds)",
                    limit="max_seconds",
                    maximum=limits.max_seconds,
                    executed=index,
                    requested=len(batch),
                    seconds=time.monotonic() - start,
                )
            try:
                _perform(ctx, action)
            except (ValueError, RuntimeError) as e:  # the action itself cannot be performed
                raise HTTPError(422, f"actions[{index}] failed: {e}", executed=index) from e
            except Exception as e:  # noqa: BLE001 - reported with how far the batch got
                raise HTTPError(500, f"actions[{index}] failed: {e}", executed=index) from e
        ctx.x11.sync()
    return Response.json(
        {
            "status": "success",
            "executed": len(batch),
            "seconds": time.monotonic() - start,
        }
    )


def _checked_batch(raw: object, limits: protocol.ActionLimits) -> list[dict[str, Any]]:
    """The validated batch, or a 400 (malformed) or 413 (over a limit) with nothing run."""
    try:
        # Counted before validation too, so a huge list costs no per-action work.
        if isinstance(raw, list) and len(raw) > limits.max_actions:
            raise protocol.ActionLimitError("max_actions", limits.max_actions, len(raw))
        batch = protocol.validate_actions(raw)
        protocol.check_limits(batch, limits)
    except protocol.ActionLimitError as e:
        raise HTTPError(
            413, str(e), limit=e.limit, maximum=e.maximum, requested=e.requested, executed=0
        ) from e
    except protocol.WireActionError as e:
        raise HTTPError(400, str(e)) from e
    return batch


def _perform(ctx: GuestContext, action: dict[str, Any]) -> None:
    x11, kind = ctx.x11, action["kind"]
    if action.get("x") is not None:
        x11.move(action["x"], action["y"])
    if kind == "click":
        x11.click(action["button"], action["clicks"])
    elif kind == "double_click":
        x11.click(action["button"], 2)
    elif kind == "right_click":
        x11.click("right")
    elif kind == "drag":
        x11.drag(x11.cursor_position(), (action["to_x"], action["to_y"]), action["button"])
    elif kind == "scroll":
        x11.scroll(action["dx"], action["dy"])
    elif kind == "type":
        x11.type_text(action["text"])
    elif kind == "hotkey":
        keysyms = [keysym_for_key(k) for k in action["keys"]]
        for keysym in keysyms:
            x11.key(keysym, True)
        # Window managers answer chords such as alt+tab by grabbing the keyboard; a release
        # sent before that grab lands is missed and the switcher stays open. Hold briefly.
        x11.sync()
        time.sleep(HOTKEY_HOLD_SECONDS)
        for keysym in reversed(keysyms):
            x11.key(keysym, False)
    elif kind == "press":
        keysym = keysym_for_key(action["key"])
        for _ in range(action["presses"]):
            x11.key(keysym, True)
            x11.key(keysym, False)
    elif kind in ("key_down", "key_up"):
        x11.key(keysym_for_key(action["key"]), kind == "key_down")
    elif kind in ("mouse_down", "mouse_up"):
        x11.button(action["button"], kind == "mouse_down")
    # "move" is done by the pointer move above.


def screen_size(ctx: GuestContext, request: Request) -> Response:
    """``/screen_size``: ``{width, height}``."""
    width, height = ctx.x11.screen_size()
    return Response.json({"width": width, "height": height})


def cursor_position(ctx: GuestContext, request: Request) -> Response:
    """``/cursor_position``: ``[x, y]``."""
    return Response.json(list(ctx.x11.cursor_position()))


def platform_name(ctx: GuestContext, request: Request) -> Response:
    """``/platform``: ``Linux`` as plain text."""
    return Response.text(platform.system())


def window_size(ctx: GuestContext, request: Request) -> Response:
    """``/window_size``: size of the first window whose WM_CLASS matches ``app_class_name``."""
    name = request.param("app_class_name")
    if not name:
        raise HTTPError(400, "app_class_name is required")
    wanted = str(name).lower()
    for info in ctx.x11.windows():
        if any(wanted == c.lower() for c in info.wm_class):
            return Response.json({"width": info.width, "height": info.height})
    raise HTTPError(404, f"no window of class {name!r}")


def _window_request(request: Request) -> tuple[str, bool, bool]:
    body = request.json()
    name = body.get("window_name")
    if not isinstance(name, str) or not name:
        raise HTTPError(400, "window_name is required")
    return name, bool(body.get("strict", False)), bool(body.get("by_class", False))


def activate_window(ctx: GuestContext, request: Request) -> Response:
    """``/setup/activate_window``: raise and focus a window by title or class."""
    name, strict, by_class = _window_request(request)
    found = ctx.x11.find_windows(name, strict=strict, by_class=by_class)
    if not found:
        raise HTTPError(404, f"Window {name!r} not found")
    ctx.x11.activate(found[0].window_id)
    return Response.text("Window activated successfully")


def close_window(ctx: GuestContext, request: Request) -> Response:
    """``/setup/close_window``: ask the matching windows to close."""
    name, strict, by_class = _window_request(request)
    found = ctx.x11.find_windows(name, strict=strict, by_class=by_class)
    if not found:
        raise HTTPError(404, f"Window {name!r} not found")
    for info in found:
        ctx.x11.close_window(info.window_id)
    return Response.text("Window closed successfully")


def open_file(ctx: GuestContext, request: Request) -> Response:
    """``/setup/open_file``: open a file (or start a program) and wait for its window.

    Unlike OSWorld's 30-minute wait, the wait is bounded: ``timeout`` in the body (seconds),
    else the server's default. It ends as soon as the file shows: in a new window, or in an
    existing one whose title changed to name it (an app that opens files as tabs, such as
    mousepad, retitles its window instead of opening one).
    """
    body = request.json()
    path = expand_path(body.get("path"))
    timeout = finite_number(body.get("timeout", ctx.config.open_file_timeout), "timeout")
    timeout = min(max(timeout, 0.0), MAX_OPEN_FILE_TIMEOUT)
    before = {info.window_id: info.title for info in ctx.x11.windows()}
    if path.exists():
        opener = shutil.which("xdg-open")
        if opener is None:
            raise HTTPError(500, "xdg-open is not installed in this desktop")
        ctx.spawn_detached([opener, str(path)], shell=False)
        names = {path.name.lower(), path.stem.lower()}
    elif shutil.which(str(path)):
        ctx.spawn_detached([str(path)], shell=False)
        names = {path.name.lower()}
    else:
        raise HTTPError(404, f"File not found: {path}")

    def has_title(info: WindowInfo) -> bool:
        return any(n in info.title.lower() for n in names)

    def shows_file(info: WindowInfo) -> bool:
        # A window whose title already named the file before counts only at the end: the
        # title proves nothing about this request (the app may just focus that window).
        return has_title(info) and before.get(info.window_id) != info.title

    found = ctx.x11.wait_for_window(shows_file, timeout)
    if found is None:
        found = next((i for i in ctx.x11.windows() if has_title(i)), None)
    if found is None:
        raise HTTPError(500, f"no window for {path.name!r} appeared within {timeout:g} seconds")
    ctx.x11.activate(found.window_id)
    _wait_until_drawn(ctx, found.window_id, time.monotonic() + DRAWN_TIMEOUT)
    return Response.text("File opened and window activated successfully")


def _wait_until_drawn(ctx: GuestContext, window_id: int, deadline: float) -> bool:
    """Wait (bounded) until a window shows content, not the blank area apps map first.

    LibreOffice maps its window and paints the document up to a second later; keys sent in
    between are lost. "Drawn" means the window's pixels, sampled on a grid, hold several
    colours.
    """
    while True:
        rect = ctx.x11.window_rect(window_id)
        if rect is None:
            return False
        if _distinct_colours(ctx, rect) >= DRAWN_MIN_COLOURS:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _distinct_colours(ctx: GuestContext, rect: tuple[int, int, int, int]) -> int:
    x, y, width, height = rect
    screen_w, screen_h = ctx.capture.size
    left, top = max(x, 0), max(y, 0)
    right, bottom = min(x + width, screen_w), min(y + height, screen_h)
    if right <= left or bottom <= top:
        return 0
    raw = ctx.capture.grab_raw(cursor=False)
    stride = screen_w * 4
    colours = {
        raw[row * stride + col * 4 : row * stride + col * 4 + 3]
        for row in range(top, bottom, 16)
        for col in range(left, right, 16)
    }
    return len(colours)


def _wallpaper_record(ctx: GuestContext) -> Path:
    return ctx.state_dir / "wallpaper"


def wallpaper(ctx: GuestContext, request: Request) -> Response:
    """``/wallpaper``: the bytes of the current wallpaper image."""
    record = _wallpaper_record(ctx)
    path = Path(record.read_text().strip()) if record.exists() else _gsettings_wallpaper()
    if path is None or not path.is_file():
        raise HTTPError(404, "no wallpaper is set")
    return Response(b"", content_type="image/png", file_path=str(path))


def _gsettings_wallpaper() -> Path | None:
    gsettings = shutil.which("gsettings")
    if gsettings is None:
        return None
    done = subprocess.run(
        [gsettings, "get", "org.gnome.desktop.background", "picture-uri"],
        capture_output=True,
        text=True,
        timeout=10,
        **desktop_user(),
    )
    uri = done.stdout.strip().strip("'")
    return Path(uri.removeprefix("file://")) if done.returncode == 0 and uri else None


def change_wallpaper(ctx: GuestContext, request: Request) -> Response:
    """``/setup/change_wallpaper``: draw an image on the root window and remember it."""
    path = expand_path(request.json().get("path"))
    if not path.is_file():
        raise HTTPError(404, f"File not found: {path}")
    feh = shutil.which("feh")
    if feh is None:
        raise HTTPError(500, "cannot set a wallpaper: feh is not installed in this desktop")
    done = subprocess.run(
        [feh, "--no-fehbg", "--bg-fill", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        env=ctx.child_env(),
        **desktop_user(),
    )
    if done.returncode != 0:
        # An image feh cannot load is the request's fault; anything else is the desktop's.
        status = 400 if "Unable to load image" in done.stderr else 500
        raise HTTPError(status, f"feh failed: {done.stderr.strip()}")
    _wallpaper_record(ctx).write_text(str(path.resolve()))
    return Response.text("Wallpaper changed successfully")


ROUTES = (
    ("GET", "/health", health),
    ("GET", "/screenshot", screenshot),
    ("POST", "/actions", actions),
    ("POST", "/screen_size", screen_size),
    ("GET", "/cursor_position", cursor_position),
    ("GET", "/platform", platform_name),
    ("POST", "/window_size", window_size),
    ("POST", "/setup/activate_window", activate_window),
    ("POST", "/setup/close_window", close_window),
    ("POST", "/setup/open_file", open_file),
    ("POST", "/wallpaper", wallpaper),
    ("POST", "/setup/change_wallpaper", change_wallpaper),
)
