"""Guest routes that move files: /file, /setup/upload, /list_directory, /setup/download_file, ...

Shapes follow OSWorld's server (``specs/osworld.md`` §1.2, rows 9-13 and 17). Uploads are
written to a temporary file and renamed, so a failed upload never leaves a partial file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from osworld_gym.guest.context import GuestContext
from osworld_gym.guest.http import HTTPError, Request, Response

MAX_TREE_ENTRIES = 200_000
DOWNLOAD_TIMEOUT = 300.0
DOWNLOAD_TRIES = 3


def expand_path(value: object, what: str = "path") -> Path:
    """Expand ``~`` and ``$VAR`` in a client-supplied path, as OSWorld's server does.

    Raises:
        HTTPError: 400 when the value is missing or not a string.
    """
    if not isinstance(value, str) or not value:
        raise HTTPError(400, f"{what} is required")
    return Path(os.path.expandvars(os.path.expanduser(value)))


def get_file(ctx: GuestContext, request: Request) -> Response:
    """``/file``: the bytes of a file in the desktop (form field ``file_path``)."""
    path = expand_path(request.param("file_path"), "file_path")
    if not path.is_file():
        raise HTTPError(404, "File not found", path=str(path))
    return Response(
        b"",
        content_type="application/octet-stream",
        file_path=str(path),
        headers={"Content-Disposition": f'attachment; filename="{_ascii_name(path.name)}"'},
    )


def _ascii_name(name: str) -> str:
    return name.encode("ascii", errors="replace").decode("ascii").replace('"', "_")


def upload(ctx: GuestContext, request: Request) -> Response:
    """``/setup/upload``: multipart ``file_path`` + ``file_data`` written into the desktop."""
    target = request.form().get("file_path")
    data = request.files().get("file_data")
    if not target or data is None:
        raise HTTPError(400, "file_path and file_data are required")
    path = expand_path(target, "file_path")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.data)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise HTTPError(500, f"could not write {path}: {e}") from e
    return Response.text(f"File Uploaded: {len(data.data)} bytes")


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
    """``/setup/download_file``: fetch a URL from inside the desktop (3 tries)."""
    body = request.json()
    url, target = body.get("url"), body.get("path")
    if not isinstance(url, str) or not url or not target:
        raise HTTPError(400, "url and path are required")
    path = expand_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    last_error: Exception | None = None
    for attempt in range(DOWNLOAD_TRIES):
        try:
            size = _download(url, path)
            return Response.text(f"File downloaded successfully: {size} bytes")
        except (urllib.error.URLError, OSError, ValueError) as e:
            last_error = e
            time.sleep(min(2**attempt, 5))  # back-off between retries of a remote fetch
    raise HTTPError(500, f"download of {url} failed after {DOWNLOAD_TRIES} tries: {last_error}")


def _download(url: str, path: Path) -> int:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".download-")
    try:
        with (
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response,
            os.fdopen(fd, "wb") as f,
        ):
            shutil.copyfileobj(response, f)
            expected = response.headers.get("Content-Length")
        size = os.path.getsize(tmp)
        if expected is not None and int(expected) != size:
            raise OSError(f"incomplete download: {size} of {expected} bytes")
        os.replace(tmp, path)
        return size
    finally:
        Path(tmp).unlink(missing_ok=True)


ROUTES = (
    ("POST", "/file", get_file),
    ("POST", "/setup/upload", upload),
    ("POST", "/list_directory", list_directory),
    ("POST", "/desktop_path", desktop_path),
    ("POST", "/setup/download_file", download_file),
)
