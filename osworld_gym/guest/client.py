"""The host's client for a guest server: ours, or OSWorld's official one.

Every call has a timeout (OSWorld's controller has calls with none); only calls that are safe to
repeat are retried, a bounded number of times; failures raise typed errors naming the endpoint and
the cause. When ``/health`` is missing (an official OSWorld image) the client falls back to
OSWorld's plain endpoints: typed actions become pyautogui code run through ``/execute``, and
screenshot options are applied on the host. It also makes up for that server's quirks
(``docs/design/osworld-protocol.md#official-server-quirks``): the screen size comes from
``/screen_size``; ``~`` in the paths of routes that do not expand it is expanded here, to the guest
user's ``$HOME``; directory listings are sorted; bash scripts run through ``/execute``, since its
``/run_bash_script`` answers 500 without the script's result.
"""

from __future__ import annotations

import io
import logging
import mmap
import os
import secrets
import shlex
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np
import requests
import urllib3.exceptions
from PIL import Image

from osworld_gym.errors import (
    ActionError,
    GuestAuthError,
    GuestError,
    GuestHTTPError,
    GuestProtocolError,
    GuestTimeoutError,
    GuestUnreachableError,
    UnsupportedByGuestError,
)
from osworld_gym.guest import protocol
from osworld_gym.guest.capture import SEGMENT_PREFIX, ScreenshotOptions, encode, fit_pixels

logger = logging.getLogger(__name__)

EXECUTE_LIMIT = 120.0
"""Seconds OSWorld's ``/execute`` lets a command run before it answers 500."""
FIXED_BASH_SCRIPT = "run_bash_script.fixed"
"""Capability of guests whose ``/run_bash_script`` answers the script's result."""
SHARED_FRAMES = "screenshot.shm"
"""Capability of guests that write raw frames into a shared-memory file the client names."""
RAW_CONTENT_TYPE = "application/octet-stream"
_MAX_FRAME_FAILURES = 3  # shared-memory failures in a row before a client stops trying


class ActionBatchTooLargeError(ActionError):
    """A batch of actions asks for more than the guest takes in one request; none was sent.

    An ``ActionError``: the env reports it as an action not performed.

    Attributes:
        limit: The limit exceeded (``"max_actions"`` or ``"max_keys"``).
        maximum: Its value.
        requested: What the batch asked for.
    """

    def __init__(self, error: protocol.ActionLimitError) -> None:
        super().__init__(f"actions not sent: {error}")
        self.limit = error.limit
        self.maximum = error.maximum
        self.requested = error.requested


@dataclass(frozen=True)
class GuestInfo:
    """What ``/health`` says about a guest; ``extended=False`` for an official OSWorld guest.

    ``action_limits`` are the bounds of one ``/actions`` request the guest advertises; None
    where it advertises none (an official guest, or ours before it had limits).
    """

    extended: bool
    version: str | None = None
    capabilities: tuple[str, ...] = ()
    screen_size: tuple[int, int] | None = None
    action_limits: protocol.ActionLimits | None = None


@dataclass(frozen=True)
class Screenshot:
    """A screenshot as the guest encoded it.

    ``data`` is the encoded image, or for ``"raw"`` the packed RGB rows: the response body as
    read (``bytes``), or a ``memoryview`` of the client's own copy when the frame came through
    shared memory.
    """

    data: bytes | memoryview
    content_type: str
    width: int
    height: int
    settled: bool | None = None
    settle_seconds: float = 0.0
    faults: tuple[str, ...] = ()  # parts of the session the guest saw stop ("wm", "dbus")
    settle_end: str | None = None  # "quiet" or "timeout"; None without a settle wait
    settle_pending: tuple[str, ...] = ()  # signals pending when the wait ended
    settle_seen: tuple[str, ...] = ()  # signals seen during the wait

    def to_array(self) -> np.ndarray:
        """Decode into an ``H x W x 3`` uint8 array (raw pixels are not copied)."""
        if self.content_type == RAW_CONTENT_TYPE:
            return np.frombuffer(self.data, np.uint8).reshape(self.height, self.width, 3)
        with Image.open(io.BytesIO(self.data)) as image:
            # convert() copies the whole image even when it is RGB already.
            return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))


@dataclass
class _Segment:
    """One shared-memory file of a ``SharedFrames`` pool."""

    host_path: str
    guest_path: str
    map: mmap.mmap


class SharedFrames:
    """Shared-memory files through which a guest on this host hands over raw frames.

    A raw screenshot over HTTP costs the driver a 6 MB socket read at 1080p and the guest a
    6 MB send; through a file on a tmpfs both sides see, the guest writes the pixels where the
    client reads them and answers with headers only. Each request in flight takes its own file
    from the pool (two screenshots never share a frame), and the client copies the pixels out
    before the file goes back, so observations stay valid whatever comes next.

    Files are created fully allocated (a write into a hole of a full tmpfs would kill the guest
    with SIGBUS) and deleted by ``close()``; the guest drops its mapping of a deleted file.

    Args:
        host_dir: The folder as this process sees it (e.g. ``/proc/<guest>/root/dev/shm``).
        guest_dir: The same folder as the guest sees it.
        limit: Files made at most (requests in flight beyond it go over HTTP).
        owner: The guest's host uid and gid when they are not this process's (a desktop that
            runs as a uid of its own): the files are handed to it, private to it.
    """

    def __init__(
        self,
        host_dir: str,
        guest_dir: str,
        *,
        limit: int = 4,
        owner: tuple[int, int] | None = None,
    ) -> None:
        self.host_dir = host_dir
        self.guest_dir = guest_dir
        self.owner = owner
        self._limit = limit
        self._lock = threading.Lock()
        self._free: list[_Segment] = []
        self._all: list[_Segment] = []
        self._size = 0

    def take(self, size: int) -> _Segment | None:
        """A file of ``size`` bytes for one request; None when the pool is at its limit.

        Raises:
            OSError: the file cannot be made (no such folder, tmpfs full).
        """
        with self._lock:
            if size != self._size:  # the screen changed size: start over
                self._drop(self._all)
                self._size = size
            if self._free:
                return self._free.pop()
            if len(self._all) >= self._limit:
                return None
            segment = self._make(size)
            self._all.append(segment)
            return segment

    def give_back(self, segment: _Segment) -> None:
        """Return a file taken with ``take()`` once its pixels are copied out."""
        with self._lock:
            if segment in self._all:
                self._free.append(segment)

    def _make(self, size: int) -> _Segment:
        name = SEGMENT_PREFIX + secrets.token_hex(16)
        host_path = os.path.join(self.host_dir, name)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(host_path, flags, 0o600)
        try:
            if self.owner is not None:
                os.fchown(fd, *self.owner)
            os.posix_fallocate(fd, 0, size)
            mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except OSError:
            os.unlink(host_path)
            raise
        finally:
            os.close(fd)
        return _Segment(host_path, os.path.join(self.guest_dir, name), mapping)

    def _drop(self, segments: list[_Segment]) -> None:
        for segment in list(segments):
            try:
                os.unlink(segment.host_path)
            except OSError as e:  # the guest's folder went with it: nothing left to free
                logger.debug("frame segment %s already gone: %s", segment.host_path, e)
            try:
                segment.map.close()
            except BufferError:  # a copy is being made from it; freed when that ends
                logger.debug("frame segment %s still being read", segment.host_path)
        self._all = [s for s in self._all if s not in segments]
        self._free = [s for s in self._free if s not in segments]

    def close(self) -> None:
        """Delete every file (those in use are deleted too; their readers keep the memory)."""
        with self._lock:
            self._drop(self._all)

    def names(self) -> set[str]:
        """The file names of the segments made (a reset keeps these and nothing else)."""
        with self._lock:
            return {os.path.basename(segment.host_path) for segment in self._all}


@dataclass(frozen=True)
class CommandResult:
    """The result of ``/execute``: output, error output and exit status."""

    output: str
    error: str
    returncode: int
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientConfig:
    """Timeouts and retry policy of a ``GuestClient``.

    Attributes:
        connect_timeout: Seconds to wait for a TCP connection.
        timeout: Seconds to wait for an answer to an ordinary call.
        long_timeout: Seconds for calls that run programs (``/execute`` has a 120 s limit).
        retries: Extra attempts for calls that are safe to repeat (reads).
        retry_backoff: Seconds before the first retry; doubles each time.
        max_idle: Seconds a kept-alive connection may sit unused before the next call opens a
            new one. Below the guest's idle timeout (300 s), so a call never races the guest
            closing its connection (a request that is not safe to repeat would fail).
    """

    connect_timeout: float = 3.0
    timeout: float = 30.0
    long_timeout: float = 150.0
    retries: int = 2
    retry_backoff: float = 0.1
    max_idle: float = 120.0


class GuestClient:
    """Typed methods for every guest endpoint.

    Args:
        base_url: e.g. ``"http://127.0.0.1:5000"``.
        token: Shared secret, sent as ``Authorization: Bearer``.
        config: Timeouts and retries.
    """

    def __init__(
        self, base_url: str, *, token: str | None = None, config: ClientConfig | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.config = config or ClientConfig()
        self._session = requests.Session()
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"
        self._info: GuestInfo | None = None
        self._home: str | None = None
        self._frames: SharedFrames | None = None
        self._frame_failures = 0
        self._last_used = time.monotonic()

    # --- transport ---------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        attempts = 1 + (self.config.retries if idempotent else 0)
        delay = self.config.retry_backoff
        if time.monotonic() - self._last_used > self.config.max_idle:
            self._session.close()  # drop kept-alive connections; the next call opens one
        for attempt in range(attempts):
            try:
                response = self._session.request(
                    method,
                    self.base_url + path,
                    timeout=(self.config.connect_timeout, timeout or self.config.timeout),
                    **kwargs,
                )
                self._last_used = time.monotonic()
            except requests.Timeout as e:
                error: GuestError = GuestTimeoutError(path, f"no answer in time ({e})")
            except requests.ConnectionError as e:
                error = GuestUnreachableError(path, f"cannot reach {self.base_url} ({e})")
            except requests.RequestException as e:
                raise GuestProtocolError(path, str(e)) from e
            else:
                if response.status_code < 400:
                    return response
                raise self._http_error(path, response)
            if attempt + 1 == attempts:
                raise error
            logger.debug("retrying %s after: %s", path, error)
            time.sleep(delay)  # back-off between retries of an idempotent call
            delay *= 2
        raise AssertionError("unreachable")

    @staticmethod
    def _http_error(path: str, response: requests.Response) -> GuestHTTPError:
        try:
            body: object = response.json()
        except ValueError:
            body = response.text[:500]
        cls = GuestAuthError if response.status_code == 401 else GuestHTTPError
        return cls(path, response.status_code, body)

    def _json(self, method: str, path: str, *, idempotent: bool, **kwargs: Any) -> Any:
        response = self._request(method, path, idempotent=idempotent, **kwargs)
        try:
            return response.json()
        except ValueError as e:
            raise GuestProtocolError(path, f"expected JSON, got {response.text[:200]!r}") from e

    # --- discovery ---------------------------------------------------------------------

    def info(self, *, refresh: bool = False) -> GuestInfo:
        """Probe ``/health`` once (cached): our server, or an official OSWorld one."""
        if self._info is not None and not refresh:
            return self._info
        try:
            data = self._json("GET", "/health", idempotent=True)
        except GuestHTTPError as e:
            if e.status != 404:
                raise
            self._info = GuestInfo(extended=False, screen_size=self._official_screen_size())
        else:
            screen = data.get("screen") or {}
            size = (screen["width"], screen["height"]) if "width" in screen else None
            self._info = GuestInfo(
                True,
                data.get("version"),
                tuple(data.get("capabilities", ())),
                size,
                self._advertised_limits(data),
            )
        return self._info

    def _advertised_limits(self, health: dict[str, Any]) -> protocol.ActionLimits | None:
        """The ``/actions`` limits a guest's ``/health`` names (None: none, or unreadable)."""
        if "action_limits" not in health:
            return None
        try:
            return protocol.ActionLimits.from_json(health["action_limits"])
        except (TypeError, ValueError) as e:
            raise GuestProtocolError("/health", f"bad action_limits: {e}") from e

    def _official_screen_size(self) -> tuple[int, int] | None:
        """``/screen_size`` of a guest without ``/health``; None if it cannot say (macOS)."""
        try:
            return self.screen_size()
        except (GuestHTTPError, GuestProtocolError, KeyError, TypeError, ValueError) as e:
            # Without a size, providers cannot check the screen: say so, do not fail.
            logger.warning("%s does not report its screen size: %s", self.base_url, e)
            return None

    def wait_until_ready(self, timeout: float, poll: float = 0.05) -> GuestInfo:
        """Poll ``/health`` (or ``/screen_size`` on official guests) until it answers.

        Raises:
            GuestUnreachableError: the guest did not answer within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.info(refresh=True)
            except (GuestUnreachableError, GuestTimeoutError) as e:
                if time.monotonic() >= deadline:
                    raise GuestUnreachableError(
                        "/health", f"not ready after {timeout:g} s: {e}"
                    ) from e
            time.sleep(poll)

    # --- observation -------------------------------------------------------------------

    def screenshot(
        self,
        *,
        format: str = "png",
        quality: int = 85,
        max_pixels: int = 0,  # noqa: A002
        cursor: bool = True,
        settle: bool = False,
        settle_timeout: float = 3.0,
        settle_quiet: float = 0.2,
        settle_mode: str = "poll",
        settle_launch_timeout: float | None = None,
    ) -> Screenshot:
        """Take a screenshot; ``settle`` waits (bounded) until the screen stops changing.

        Args:
            format: ``"png"``, ``"jpeg"`` or ``"raw"`` (packed RGB).
            quality: JPEG quality.
            max_pixels: Downscale to at most this many pixels; 0 = full size.
            cursor: Draw the pointer in.
            settle: Wait until the screen is done changing (bounded by ``settle_timeout``).
            settle_timeout: Seconds the settle waits at most.
            settle_quiet: Seconds without change that count as settled.
            settle_mode: ``"poll"`` (compare frames) or ``"events"`` (X damage and launch
                signals; needs the guest's ``screenshot.settle_mode`` capability). An official
                OSWorld guest settles host-side, by comparing frames, whatever the mode.
            settle_launch_timeout: ``"events"`` only: seconds the settle may wait while work
                is pending (an app starting or loading, a dialog answering); None: the
                guest's default (``settle_timeout``).
        """
        if not self.info().extended:
            return self._official_screenshot(format, quality, max_pixels, settle, settle_timeout)
        params = {
            "format": format,
            "quality": quality,
            "max_pixels": max_pixels,
            "cursor": int(cursor),
            "settle": int(settle),
            "settle_timeout": settle_timeout,
            "settle_quiet": settle_quiet,
        }
        if settle_mode != "poll":
            # Guests older than the option would ignore it and poll: refuse instead.
            self.require("screenshot.settle_mode")
            params["settle_mode"] = settle_mode
            if settle_launch_timeout is not None:
                params["settle_launch_timeout"] = settle_launch_timeout
        longest = max(settle_timeout, settle_launch_timeout or 0.0)
        timeout = self.config.timeout + (longest if settle else 0)
        headers, data = self._get_frame(params, timeout)
        settled = headers.get("X-Settled")
        return Screenshot(
            data,
            headers.get("Content-Type", "image/png"),
            int(headers.get("X-Image-Width", 0)),
            int(headers.get("X-Image-Height", 0)),
            None if settled is None else settled == "true",
            float(headers.get("X-Settle-Seconds", 0.0)),
            _header_list(headers, "X-Desktop-Faults"),
            headers.get("X-Settle-End"),
            _header_list(headers, "X-Settle-Pending"),
            _header_list(headers, "X-Settle-Seen"),
        )

    def share_frames(
        self,
        host_dir: str | None,
        guest_dir: str | None = None,
        owner: tuple[int, int] | None = None,
    ) -> None:
        """Take raw screenshots through shared memory in ``host_dir`` (None: over HTTP only).

        For a guest on this host that has the ``screenshot.shm`` capability: the client makes
        files in ``host_dir``, which the guest sees as ``guest_dir`` (default: the same path),
        and the guest writes each raw frame into one of them (``SharedFrames``). Any
        failure falls back to HTTP; after a few the client stops trying until the next call.
        Files of an earlier folder are deleted. ``owner``: see ``SharedFrames``.
        """
        if self._frames is not None:
            self._frames.close()
        self._frames = (
            None if host_dir is None else SharedFrames(host_dir, guest_dir or host_dir, owner=owner)
        )
        self._frame_failures = 0

    def shared_frame_names(self) -> set[str]:
        """Names of the shared-memory frame files in use (empty without shared frames)."""
        frames = self._frames
        return set() if frames is None else frames.names()

    def _get_frame(
        self, params: dict[str, Any], timeout: float
    ) -> tuple[Mapping[str, str], bytes | memoryview]:
        """``GET /screenshot``: headers and body, or the pixels through shared memory."""
        frames = self._frames
        if frames is None or params.get("format") != "raw" or not self._shm_usable():
            return self._get_frame_http(params, timeout)
        size = self.info().screen_size
        assert size is not None  # checked by _shm_usable
        try:
            segment = frames.take(size[0] * size[1] * 3)
        except OSError as e:
            self._shm_failed(f"cannot make a frame segment in {frames.host_dir}: {e}")
            return self._get_frame_http(params, timeout)
        if segment is None:  # as many requests in flight as segments
            return self._get_frame_http(params, timeout)
        try:
            headers, body = self._get_frame_http({**params, "shm": segment.guest_path}, timeout)
            if headers.get("X-Shm") != segment.guest_path:
                return headers, body  # a guest that ignored the option sent the body
            width = int(headers.get("X-Image-Width", 0))
            height = int(headers.get("X-Image-Height", 0))
            count = int(headers.get("X-Shm-Bytes", -1))
            if count != width * height * 3 or count > len(segment.map):
                raise GuestProtocolError("/screenshot", f"bad shared frame size {count}")
            # The one copy on this side: the segment goes back to the pool right after.
            pixels = np.frombuffer(segment.map, np.uint8, count=count).copy()
            self._frame_failures = 0
            return headers, memoryview(pixels)
        except GuestHTTPError as e:
            if e.status != 409:  # not about the segment: HTTP would fail alike
                raise
            self._shm_failed(f"the guest refused the frame segment: {e}")
        except ValueError as e:  # the segment was closed under us (close(), a resize)
            self._shm_failed(f"frame segment unusable: {e}")
        finally:
            frames.give_back(segment)
        return self._get_frame_http(params, timeout)

    def _shm_usable(self) -> bool:
        info = self.info()
        return (
            SHARED_FRAMES in info.capabilities
            and info.screen_size is not None
            and self._frame_failures < _MAX_FRAME_FAILURES
        )

    def _shm_failed(self, why: str) -> None:
        self._frame_failures += 1
        if self._frame_failures >= _MAX_FRAME_FAILURES:
            logger.warning("%s; raw frames go over HTTP from now on: %s", self.base_url, why)
        else:
            logger.info("%s; this frame goes over HTTP: %s", self.base_url, why)
        if self._frames is not None:
            self._frames.close()  # made again on the next call (the guest may have restarted)

    def _get_frame_http(
        self, params: dict[str, Any], timeout: float
    ) -> tuple[Mapping[str, str], bytes]:
        """``GET /screenshot``: the headers and the body, read into one buffer.

        requests' ``.content`` joins the body from 10 KB reads, ~600 Python-level reads and a
        second copy for a 6 MB raw frame (~6 ms of driver CPU); one read of Content-Length
        bytes fills a single buffer in C. Failures while the body arrives are retried as the
        request is (the screenshot is a read).
        """
        attempts = 1 + self.config.retries
        delay = self.config.retry_backoff
        for attempt in range(attempts):
            try:
                response = self._request(
                    "GET",
                    "/screenshot",
                    idempotent=False,  # retried here, body included
                    params=params,
                    timeout=timeout,
                    stream=True,
                )
            except (GuestTimeoutError, GuestUnreachableError) as e:
                error: GuestError = e
            else:
                try:
                    return response.headers, _read_body(response)
                except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as e:
                    response.close()  # drops the half-read connection
                    if isinstance(e, (TimeoutError, urllib3.exceptions.TimeoutError)):
                        error = GuestTimeoutError("/screenshot", f"body stalled ({e})")
                    else:
                        error = GuestUnreachableError("/screenshot", f"body not received ({e})")
            if attempt + 1 == attempts:
                raise error
            logger.debug("retrying /screenshot after: %s", error)
            time.sleep(delay)  # back-off between retries of an idempotent call
            delay *= 2
        raise AssertionError("unreachable")

    def _official_screenshot(
        self,
        format: str,
        quality: int,
        max_pixels: int,  # noqa: A002
        settle: bool,
        settle_timeout: float,
    ) -> Screenshot:
        start = time.monotonic()
        data = self._request("GET", "/screenshot", idempotent=True).content
        settled: bool | None = None
        if settle:  # host-side: wait for two identical frames in a row
            settled = False
            while time.monotonic() - start < settle_timeout:
                again = self._request("GET", "/screenshot", idempotent=True).content
                if again == data:
                    settled = True
                    break
                data = again
        with Image.open(io.BytesIO(data)) as image:
            rgb = image.convert("RGB")
        pixels, size = fit_pixels(rgb.tobytes(), rgb.size, max_pixels)
        if format == "png" and size == rgb.size:
            payload, ctype = data, "image/png"  # the guest's own PNG, untouched
        else:
            payload, ctype = encode(pixels, size, ScreenshotOptions(format=format, quality=quality))
        end = None if settled is None else "quiet" if settled else "timeout"
        return Screenshot(
            payload, ctype, size[0], size[1], settled, time.monotonic() - start, (), end
        )

    def screen_size(self) -> tuple[int, int]:
        """The screen's (width, height)."""
        data = self._json("POST", "/screen_size", idempotent=True)
        return int(data["width"]), int(data["height"])

    def cursor_position(self) -> tuple[int, int]:
        """The pointer position."""
        x, y = self._json("GET", "/cursor_position", idempotent=True)
        return int(x), int(y)

    def window_size(self, app_class_name: str) -> tuple[int, int]:
        """Size of the first window of an application class."""
        data = self._json(
            "POST", "/window_size", idempotent=True, data={"app_class_name": app_class_name}
        )
        return int(data["width"]), int(data["height"])

    def platform(self) -> str:
        """``Linux``, ``Windows`` or ``Darwin``."""
        return self._request("GET", "/platform", idempotent=True).text.strip()

    def desktop_path(self) -> str:
        """The desktop folder of the guest's user."""
        return str(self._json("POST", "/desktop_path", idempotent=True)["desktop_path"])

    def terminal_output(self) -> str | None:
        """Text of the focused terminal, or None."""
        return self._json("GET", "/terminal", idempotent=True).get("output")

    def accessibility_tree(self, timeout: float = 60.0) -> str:
        """OSWorld's XML accessibility tree."""
        return str(self._json("GET", "/accessibility", idempotent=True, timeout=timeout)["AT"])

    # --- input -------------------------------------------------------------------------

    def actions(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        """Run wire actions (see ``osworld_gym.guest.protocol``) on the desktop.

        Our guest runs them in-process; an official guest gets pyautogui code via ``/execute``.
        A batch over the guest's advertised limits is not sent (none is split: the limits
        bound one step's input, and a split batch would run past them).

        Raises:
            ActionBatchTooLargeError: the batch holds more actions or key presses than the
                guest takes in one request.
            GuestHTTPError: the guest refused or stopped the batch; a 422 with
                ``limit == "max_seconds"`` ran out of time after ``executed`` actions.
        """
        batch = protocol.validate_actions(actions)
        if not batch:
            return {"status": "success", "executed": 0}
        info = self.info()
        limits = self._action_limits(info)
        if limits is not None:
            try:
                protocol.check_limits(batch, limits)
            except protocol.ActionLimitError as e:
                raise ActionBatchTooLargeError(e) from e
        if info.extended:
            # The guest answers within its budget plus the last action it started.
            timeout = self.config.timeout + (limits.max_seconds if limits else 0.0)
            body = {"actions": batch}
            return self._json("POST", "/actions", idempotent=False, timeout=timeout, json=body)
        result = self.execute(["python", "-c", protocol.to_pyautogui_code(batch)])
        if result.returncode != 0:
            raise GuestProtocolError("/execute", f"pyautogui code failed: {result.error.strip()}")
        return {"status": "success", "executed": len(batch)}

    @staticmethod
    def _action_limits(info: GuestInfo) -> protocol.ActionLimits | None:
        """The limits a batch must keep to on this guest (None: it has none we know of).

        An official guest runs the batch as one ``python -c`` program under ``/execute``'s
        120 s limit, and advertises nothing: it gets our guest's default limits, which keep
        a batch to what an agent's step sends.
        """
        if info.action_limits is not None:
            return info.action_limits
        return None if info.extended else protocol.ActionLimits()

    # --- programs ----------------------------------------------------------------------

    def execute(
        self, command: list[str] | str, *, shell: bool = False, timeout: float | None = None
    ) -> CommandResult:
        """Run a command in the desktop (120 s limit in the guest); never retried.

        Args:
            command: An argv list, or a string (split by the guest unless ``shell``).
            shell: Run the string through ``/bin/sh -c``.
            timeout: Seconds to wait for the answer (default: the config's ``long_timeout``).
        """
        data = self._json(
            "POST",
            "/execute",
            idempotent=False,
            timeout=timeout or self.config.long_timeout,
            json={"command": command, "shell": shell},
        )
        return _command_result(data)

    def execute_with_verification(
        self,
        command: list[str] | str,
        *,
        window_exists: str | None = None,
        command_success: str | None = None,
        max_wait_time: float = 10.0,
        check_interval: float = 0.5,
        shell: bool = False,
    ) -> CommandResult:
        """Run a command, then wait (bounded) until a window exists or a check succeeds.

        Raises:
            GuestHTTPError: status 500 with ``verification == "failed"`` when the wait ran out.
        """
        verification = {
            k: v
            for k, v in (("window_exists", window_exists), ("command_success", command_success))
            if v
        }
        body = {
            "command": command,
            "shell": shell,
            "verification": verification,
            "max_wait_time": max_wait_time,
            "check_interval": check_interval,
        }
        data = self._json(
            "POST",
            "/execute_with_verification",
            idempotent=False,
            timeout=self.config.long_timeout + max_wait_time,
            json=body,
        )
        return _command_result(data)

    def execute_python(self, code: str) -> CommandResult:
        """Run Python the way OSWorld's controller does (``python -c`` with pyautogui imported)."""
        return self.execute(["python", "-c", protocol.PYAUTOGUI_PREFIX + code])

    def launch(self, command: list[str] | str, *, shell: bool = False) -> None:
        """Start a program and return at once."""
        self._request(
            "POST", "/setup/launch", idempotent=False, json={"command": command, "shell": shell}
        )

    def open_file(self, path: str, *, timeout: float = 60.0) -> None:
        """Open a file with its default app and wait (bounded) for its window."""
        self._request(
            "POST",
            "/setup/open_file",
            idempotent=False,
            timeout=timeout + 10,
            json={"path": self._guest_path(path), "timeout": timeout},
        )

    def activate_window(
        self, window_name: str, *, strict: bool = False, by_class: bool = False
    ) -> None:
        """Raise and focus a window."""
        body = {"window_name": window_name, "strict": strict, "by_class": by_class}
        self._request("POST", "/setup/activate_window", idempotent=True, json=body)

    def close_window(
        self, window_name: str, *, strict: bool = False, by_class: bool = False
    ) -> None:
        """Close matching windows."""
        body = {"window_name": window_name, "strict": strict, "by_class": by_class}
        self._request("POST", "/setup/close_window", idempotent=False, json=body)

    def run_python(self, code: str) -> dict[str, Any]:
        """``/run_python`` (30 s limit in the guest)."""
        return self._json(
            "POST",
            "/run_python",
            idempotent=False,
            timeout=self.config.long_timeout,
            json={"code": code},
        )

    def run_bash_script(
        self, script: str, *, timeout: float = 30.0, working_dir: str | None = None
    ) -> dict[str, Any]:
        """``/run_bash_script``; run once, never retried (OSWorld's host re-runs it 3 times).

        OSWorld's server answers its failures with an error status and a result-shaped body
        (``returncode: -1`` and the reason in ``output``); that body is returned, not raised.
        Its current version answers every call that way, after running the script (see
        ``run_script()``, which works on either server).
        """
        body = {"script": script, "timeout": timeout, "working_dir": working_dir}
        try:
            return self._json(
                "POST", "/run_bash_script", idempotent=False, timeout=timeout + 30, json=body
            )
        except GuestHTTPError as e:
            if isinstance(e, GuestAuthError) or not _is_result(e.body):
                raise
            result = dict(e.body)
            # Our server puts the reason of a refusal in "message" and leaves "output" empty.
            result["output"] = result["output"] or str(result.get("message") or "")
            logger.warning("/run_bash_script answered HTTP %d: %s", e.status, result["output"])
            return result

    def run_script(
        self, script: str, *, timeout: float = 30.0, working_dir: str | None = None
    ) -> CommandResult:
        """Run a bash script in the desktop once: its exit status and merged output.

        A guest that reports the fixed ``/run_bash_script`` (ours) runs it there. OSWorld's
        server runs the script but answers 500 without its result, so there the script goes
        through ``/execute`` as ``bash -c`` (in ``working_dir``, default the home folder),
        limited by ``timeout`` and by that route's own 120 s.
        """
        if FIXED_BASH_SCRIPT in self.info().capabilities:
            data = self.run_bash_script(script, timeout=timeout, working_dir=working_dir)
            return _command_result(data)
        if timeout > EXECUTE_LIMIT:
            logger.warning(
                "%s runs scripts through /execute, which stops them after %g s (asked: %g s)",
                self.base_url,
                EXECUTE_LIMIT,
                timeout,
            )
        # stderr joins stdout, as /run_bash_script merges them.
        text = f"cd {_shell_folder(working_dir)} || exit 1\nexec 2>&1\n{script}"
        command = ["timeout", "-k", "5", f"{timeout:g}", "/bin/bash", "-c", text]
        return self.execute(command, timeout=max(self.config.long_timeout, timeout + 30))

    # --- files -------------------------------------------------------------------------

    def upload(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the desktop (parent folders are created)."""
        files = {"file_data": ("upload", data, "application/octet-stream")}
        self._request(
            "POST",
            "/setup/upload",
            idempotent=True,
            timeout=self.config.long_timeout,
            data={"file_path": path},
            files=files,
        )

    def download(self, path: str) -> bytes:
        """Read a file from the desktop.

        Raises:
            GuestHTTPError: status 404 when the file does not exist.
        """
        return self._request(
            "POST",
            "/file",
            idempotent=True,
            timeout=self.config.long_timeout,
            data={"file_path": path},
        ).content

    def list_directory(self, path: str) -> dict[str, Any]:
        """A recursive tree of a folder, children sorted by name at every level.

        OSWorld's server neither expands ``~`` here nor sorts (it answers in ``os.listdir``
        order); tasks compare trees with ``==``, so the order must not depend on the disk.
        """
        body = {"path": self._guest_path(path)}
        tree = self._json("POST", "/list_directory", idempotent=True, json=body)
        return _sorted_tree(tree["directory_tree"])

    def wallpaper(self) -> bytes:
        """The current wallpaper image."""
        return self._request("POST", "/wallpaper", idempotent=True).content

    def change_wallpaper(self, path: str) -> None:
        """Set the wallpaper to an image file in the desktop."""
        body = {"path": self._guest_path(path)}
        self._request("POST", "/setup/change_wallpaper", idempotent=True, json=body)

    def download_file(self, url: str, path: str) -> None:
        """Have the guest download ``url`` into ``path`` itself."""
        self._request(
            "POST",
            "/setup/download_file",
            idempotent=True,
            timeout=self.config.long_timeout * 3,
            json={"url": url, "path": self._guest_path(path)},
        )

    # --- the guest user's home -----------------------------------------------------------

    def home(self) -> str:
        """The guest user's home folder (``$HOME`` of its server; asked once, then cached).

        OSWorld's tasks assume ``/home/user``; asking keeps other images right too.

        Raises:
            GuestProtocolError: the guest's answer is not an absolute path.
        """
        if self._home is None:
            result = self.execute('printf %s "$HOME"', shell=True)
            home = result.output.strip()
            if result.returncode != 0 or not home.startswith("/"):
                raise GuestProtocolError(
                    "/execute", f"cannot tell the guest's home folder: {result.raw}"
                )
            self._home = home.rstrip("/") or "/"
        return self._home

    def _guest_path(self, path: str) -> str:
        """``path`` with a leading ``~`` expanded, for routes OSWorld's server leaves as is.

        Our server expands ``~`` itself: it gets the path untouched, saving a round trip.
        """
        if not (path == "~" or path.startswith("~/")) or self.info().extended:
            return path
        return self.home() + path[1:]

    # --- recording ---------------------------------------------------------------------

    def start_recording(self) -> None:
        """Start recording the screen."""
        self._request("POST", "/start_recording", idempotent=False)

    def end_recording(self, dest: str | Path) -> Path:
        """Stop recording and save the MP4 to ``dest``."""
        response = self._request(
            "POST", "/end_recording", idempotent=False, timeout=self.config.long_timeout
        )
        dest = Path(dest)
        dest.write_bytes(response.content)
        return dest

    def require(self, capability: str) -> None:
        """Raise ``UnsupportedByGuestError`` unless the guest reports ``capability``."""
        if capability not in self.info().capabilities:
            raise UnsupportedByGuestError("/health", f"guest lacks {capability!r}")

    def close(self) -> None:
        """Close pooled connections and delete the shared frame files."""
        self._session.close()
        if self._frames is not None:
            self._frames.close()

    def __enter__(self) -> GuestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _command_result(data: dict[str, Any]) -> CommandResult:
    """A ``CommandResult`` from an ``/execute``-shaped answer."""
    return CommandResult(
        data.get("output", ""), data.get("error", ""), data.get("returncode", -1), data
    )


def _shell_folder(working_dir: str | None) -> str:
    """``working_dir`` as a shell word, ``~`` meaning the guest's ``$HOME`` (the default)."""
    if not working_dir or working_dir == "~":
        return '"$HOME"'
    if working_dir.startswith("~/"):
        return '"$HOME"/' + shlex.quote(working_dir[2:])
    return shlex.quote(working_dir)


def _is_result(body: object) -> TypeGuard[dict[str, Any]]:
    """Whether an error answer carries a script result (OSWorld's ``/run_bash_script``)."""
    return isinstance(body, dict) and "returncode" in body and "output" in body


def _sorted_tree(node: dict[str, Any]) -> dict[str, Any]:
    """A ``/list_directory`` node with its children sorted by name, recursively."""
    if "children" not in node:
        return node
    children = sorted((_sorted_tree(c) for c in node["children"]), key=lambda c: c["name"])
    return {**node, "children": children}


def _read_body(response: requests.Response) -> bytes:
    """The whole body of a streamed response, in one read when its length is known.

    Raises:
        urllib3.exceptions.ProtocolError: the connection closed before the whole body arrived.
    """
    length = response.headers.get("Content-Length")
    # An empty body too: reading 0 bytes would not end the response, and the kept-alive
    # connection would be dropped rather than reused (a new TCP connection per frame).
    if length in (None, "0") or response.headers.get("Content-Encoding"):
        return response.content
    expected = int(length)
    # Reading exactly Content-Length bytes ends the response: urllib3 returns the kept-alive
    # connection to the pool by itself.
    data = response.raw.read(expected, decode_content=False)
    if len(data) != expected:
        raise urllib3.exceptions.ProtocolError(
            f"connection closed after {len(data)} of {expected} bytes"
        )
    return data


def _header_list(headers: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated header as a tuple (empty when absent or empty)."""
    return tuple(part for part in headers.get(name, "").split(",") if part)
