"""Guest routes that move files: /file, /setup/upload, /list_directory, /setup/download_file, ...

Shapes follow OSWorld's server (``docs/design/osworld-protocol.md#file-routes``). Uploads are
written to a temporary file and renamed, so a failed upload never leaves a partial file.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from osworld_gym.guest.context import GuestContext
from osworld_gym.guest.http import HTTPError, Request, Response, os_string, path_error

MAX_TREE_ENTRIES = 200_000
DOWNLOAD_TIMEOUT = 300.0  # seconds one read may stall
DOWNLOAD_TRIES = 3
# Bounds of one /setup/download_file request, tries included: a source that never ends
# (file:///dev/zero, a server that drips a byte per minute) cannot hold it forever or fill
# the disk. The deadline is below our client's wait for the answer (450 s); checked between
# chunks, so a read that stalls may end past it by DOWNLOAD_TIMEOUT at most.
DOWNLOAD_DEADLINE = 420.0
MAX_DOWNLOAD_BYTES = 8 << 30
_COPY_CHUNK = 1 << 20
DOWNLOAD_SCHEMES = ("http", "https", "ftp", "file")
# /file reads files that report at most this size itself, so the length it answers is what
# it read: /proc files report 0 bytes and /sys files 4,096 whatever they hold.
INLINE_FILE_BYTES = 1 << 20
# ... and reads no more than this of them: /proc/self/pagemap reports 0 bytes and holds
# hundreds of gigabytes.
MAX_INLINE_READ_BYTES = 64 << 20
MAX_NAME_BYTES = 255  # Linux's NAME_MAX and PATH_MAX (less its NUL)
MAX_PATH_BYTES = 4095


def expand_path(value: object, what: str = "path") -> Path:
    """Expand ``~`` and ``$VAR`` in a client-supplied path, as OSWorld's server does.

    Raises:
        HTTPError: 400 when the value is missing, not a string, or no path (a NUL character,
            a surrogate with no bytes, a name or a path too long).
    """
    if not isinstance(value, str) or not value:
        raise HTTPError(400, f"{what} is required")
    path = Path(os.path.expandvars(os.path.expanduser(os_string(value, what))))
    # Checked here, not left to the file system: pathlib's is_file() and exists() raise on
    # a name that is too long instead of answering False.
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise HTTPError(400, f"{what} is longer than {MAX_PATH_BYTES} bytes")
    if any(len(os.fsencode(part)) > MAX_NAME_BYTES for part in path.parts):
        raise HTTPError(400, f"{what} has a name longer than {MAX_NAME_BYTES} bytes")
    return path


def get_file(ctx: GuestContext, request: Request) -> Response:
    """``/file``: the bytes of a file in the desktop (form field ``file_path``).

    Small files (by the size they report) are read here, so the answer's length is what was
    read even where the reported size is wrong (``/proc``, ``/sys``), and a file that cannot
    be read is a clear error instead of a dropped connection; larger ones are streamed.
    """
    path = expand_path(request.param("file_path"), "file_path")
    if not path.is_file():
        raise HTTPError(404, "File not found", path=str(path))
    headers = {"Content-Disposition": f'attachment; filename="{_ascii_name(path.name)}"'}
    size = 0
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > INLINE_FILE_BYTES:
                return Response(
                    b"",
                    content_type="application/octet-stream",
                    file_path=str(path),
                    headers=headers,
                )
            data = f.read(MAX_INLINE_READ_BYTES + 1)
    except OSError as e:
        error = path_error(e, f"read {path}")
        if size == 0:  # a special file (/proc/self/mem): reading it is the request's fault
            error.status = 400
        raise error from e
    if len(data) > MAX_INLINE_READ_BYTES:
        raise HTTPError(
            413, f"{path} reports {size} bytes and holds more than {MAX_INLINE_READ_BYTES}"
        )
    return Response(data, content_type="application/octet-stream", headers=headers)


def _ascii_name(name: str) -> str:
    return name.encode("ascii", errors="replace").decode("ascii").replace('"', "_")


def upload(ctx: GuestContext, request: Request) -> Response:
    """``/setup/upload``: multipart ``file_path`` + ``file_data`` written into the desktop."""
    target = request.form().get("file_path")
    data = request.files().get("file_data")
    if not target or data is None:
        raise HTTPError(400, "file_path and file_data are required")
    path = _file_target(target, "file_path")
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        with os.fdopen(fd, "wb") as f:
            f.write(data.data)
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise path_error(e, f"write {path}") from e
    return Response.text(f"File Uploaded: {len(data.data)} bytes")


def _file_target(value: object, what: str) -> Path:
    """A client-named path to write a file at: new, or an existing regular file (or link).

    The file is written beside and renamed over the target, which replaces what is there:
    a device such as ``/dev/null``, a FIFO or a socket would be replaced by a plain file for
    every program that uses it, so those are refused.

    Raises:
        HTTPError: 400 for what ``expand_path()`` refuses, folders, and special files.
    """
    path = expand_path(value, what)
    if path.name in ("", ".", "..") or path.is_dir():
        raise HTTPError(400, f"{what} names a folder, not a file: {path}")
    try:
        mode = path.lstat().st_mode
    except OSError:
        return path  # nothing there yet (or unreachable: writing it will say why)
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise HTTPError(400, f"{what} names a special file (a device, FIFO or socket): {path}")
    return path


def list_directory(ctx: GuestContext, request: Request) -> Response:
    """``/list_directory``: a recursive tree of a folder (JSON ``path``)."""
    path = expand_path(request.json().get("path"))
    if not path.is_dir():
        raise HTTPError(400, f"not a directory: {path}")
    budget = [MAX_TREE_ENTRIES]
    return Response.json({"directory_tree": _tree(path, budget)})


def _tree(path: Path, budget: list[int]) -> dict[str, Any]:
    children: list[dict[str, Any]] = []
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            raise HTTPError(413, f"directory tree has more than {MAX_TREE_ENTRIES} entries")
        if entry.is_dir(follow_symlinks=False):
            children.append(_tree(Path(entry.path), budget))
        else:
            children.append({"type": "file", "name": entry.name})
    return {"type": "directory", "name": path.name, "children": children}


def desktop_path(ctx: GuestContext, request: Request) -> Response:
    """``/desktop_path``: where the desktop folder of the guest's user is."""
    path = ctx.home / "Desktop"
    if not path.is_dir():
        raise HTTPError(404, f"desktop folder does not exist: {path}")
    return Response.json({"desktop_path": str(path)})


def download_file(ctx: GuestContext, request: Request) -> Response:
    """``/setup/download_file``: fetch a URL from inside the desktop (3 tries).

    A URL that cannot be fetched at all and a path that cannot be written are refused at
    once (400); only the fetch itself is tried again. The whole request, tries included,
    ends by ``DOWNLOAD_DEADLINE`` (500) and writes at most ``MAX_DOWNLOAD_BYTES``
    (413); a partial file never stays.
    """
    body = request.json()
    url, target = body.get("url"), body.get("path")
    if not isinstance(url, str) or not url or not target:
        raise HTTPError(400, "url and path are required")
    _check_url(url)
    path = _file_target(target, "path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise path_error(e, f"create {path.parent}") from e
    deadline = time.monotonic() + DOWNLOAD_DEADLINE
    last_error: Exception | None = None
    tries = 0
    while tries < DOWNLOAD_TRIES:
        if tries:
            pause = min(2 ** (tries - 1), 5)
            if time.monotonic() + pause >= deadline:
                break  # no time left for another try
            time.sleep(pause)  # back-off between retries of a remote fetch
        tries += 1
        try:
            size = _download(url, path, deadline)
            return Response.text(f"File downloaded successfully: {size} bytes")
        except (urllib.error.URLError, OSError, ValueError) as e:
            last_error = e
    raise HTTPError(500, f"download of {url} failed after {tries} tries: {last_error}")


def _check_url(url: str) -> None:
    """Refuse what urllib could never fetch (before any try, and any wait between tries).

    Raises:
        HTTPError: 400 for a control character, an unparsable URL, another scheme than
            http, https, ftp or file, or a network URL without a host.
    """
    if any(ord(c) < 0x20 or c == "\x7f" for c in url):
        raise HTTPError(400, "url must not contain control characters")
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
    except ValueError as e:
        raise HTTPError(400, f"url is not a valid URL: {e}") from e
    scheme = parts.scheme.lower()
    if scheme not in DOWNLOAD_SCHEMES:
        raise HTTPError(400, f"url must be one of {', '.join(DOWNLOAD_SCHEMES)}; got {url!r}")
    if scheme != "file" and not host:
        raise HTTPError(400, f"url names no host: {url!r}")


def _download(url: str, path: Path, deadline: float) -> int:
    """Fetch ``url`` into ``path`` (written beside it and renamed); its size in bytes.

    Raises:
        HTTPError: 413 when the file is larger than ``MAX_DOWNLOAD_BYTES``, 500 when the
            request's deadline passed (neither worth another try), or 4xx/5xx for ``path``.
        urllib.error.URLError, OSError, ValueError: the fetch failed (worth another try).
    """
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".download-")
    except OSError as e:  # the folder is not writable: no try would do better
        raise path_error(e, f"write into {path.parent}") from e
    try:
        stall = max(min(DOWNLOAD_TIMEOUT, deadline - time.monotonic()), 0.001)
        with (
            urllib.request.urlopen(url, timeout=stall) as response,
            os.fdopen(fd, "wb") as f,
        ):
            _copy_bounded(response, f, url, deadline)
            expected = response.headers.get("Content-Length")
        size = os.path.getsize(tmp)
        if expected is not None and int(expected) != size:
            raise OSError(f"incomplete download: {size} of {expected} bytes")
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise path_error(e, f"write {path}") from e
        return size
    finally:
        Path(tmp).unlink(missing_ok=True)


def _copy_bounded(source: Any, target: Any, url: str, deadline: float) -> None:
    """Copy a download in chunks, stopping at the size cap or the request's deadline.

    Raises:
        HTTPError: 413 past ``MAX_DOWNLOAD_BYTES``, 500 past ``deadline``.
    """
    # read1 returns what has arrived; read would wait for a whole chunk from a slow source.
    read = getattr(source, "read1", source.read)
    copied = 0
    while chunk := read(_COPY_CHUNK):
        copied += len(chunk)
        if copied > MAX_DOWNLOAD_BYTES:
            raise HTTPError(413, f"{url} holds more than {MAX_DOWNLOAD_BYTES} bytes")
        if time.monotonic() >= deadline:
            raise HTTPError(500, f"download of {url} did not finish within {DOWNLOAD_DEADLINE:g} s")
        target.write(chunk)


ROUTES = (
    ("POST", "/file", get_file),
    ("POST", "/setup/upload", upload),
    ("POST", "/list_directory", list_directory),
    ("POST", "/desktop_path", desktop_path),
    ("POST", "/setup/download_file", download_file),
)
