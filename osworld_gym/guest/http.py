"""Minimal HTTP request/response types for the guest server (stdlib only).

The guest must run inside any Linux desktop with few dependencies, so it uses ``http.server``
rather than a web framework. This module holds the request parsing (JSON, URL-encoded and
multipart forms) and the response shapes; ``server.py`` does routing and sockets.
"""

from __future__ import annotations

import errno
import json
import math
from dataclasses import dataclass, field
from email.message import Message
from typing import Any
from urllib.parse import parse_qs


class HTTPError(Exception):
    """Raised by a route to answer with an error status and a JSON body."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.payload: dict[str, Any] = {"status": "error", "message": message, "error": message}
        self.payload.update(extra)


def finite_number(value: Any, name: str) -> float:
    """A request field that must be a finite number (a JSON number, or a numeric string).

    Raises:
        HTTPError: 400 for anything else: ``null``, a list or object, a boolean, NaN or an
            infinity (a NaN deadline never passes, so a loop bounded by it never ends).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise HTTPError(400, f"{name} must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except ValueError as e:
        raise HTTPError(400, f"{name} must be a number, got {value!r}") from e
    if not math.isfinite(number):
        raise HTTPError(400, f"{name} must be a finite number, got {value!r}")
    return number


def os_string(value: str, name: str, *, allow_nul: bool = False) -> str:
    """A request string the guest hands to the operating system: a path, an argument, a script.

    Lone surrogates U+DC80 to U+DCFF stand for undecodable bytes, as in ``os.fsencode``;
    other lone surrogates have no bytes at all.

    Raises:
        HTTPError: 400 when it holds a NUL character (no C string can, unless ``allow_nul``:
            a script written to a file may) or a surrogate with no bytes.
    """
    if not allow_nul and "\x00" in value:
        raise HTTPError(400, f"{name} must not contain a NUL character")
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise HTTPError(400, f"{name} is not valid text: {e.reason} at position {e.start}") from e
    return value


# errnos of a file operation that say the path a client named is at fault, not the guest.
_PATH_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EEXIST,
        errno.ENOTEMPTY,
        errno.EBUSY,
        errno.EINVAL,
        errno.EXDEV,
    }
)


def path_error(error: OSError, doing: str) -> HTTPError:
    """The answer to a file operation on a client-named path that failed.

    400 when the path is at fault (not writable, read-only, not a folder, a folder, too
    long...); 500 for what is the guest's (a full disk, an I/O error).
    """
    status = 400 if error.errno in _PATH_ERRNOS else 500
    return HTTPError(status, f"could not {doing}: {error.strerror or error}")


@dataclass
class UploadedFile:
    """A file part of a multipart form."""

    filename: str
    data: bytes


@dataclass
class Request:
    """A parsed HTTP request as routes see it."""

    method: str
    path: str
    query: dict[str, str]
    headers: Message
    body: bytes
    _form: tuple[dict[str, str], dict[str, UploadedFile]] | None = field(default=None, repr=False)

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-case."""
        return (self.headers.get_content_type() or "").lower()

    def json(self) -> dict[str, Any]:
        """Decode the body as a JSON object ({} when empty).

        Raises:
            HTTPError: 400 when the body is not a JSON object.
        """
        if not self.body.strip():
            return {}
        try:
            value = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as e:
            raise HTTPError(400, f"request body is not valid JSON: {e}") from e
        except RecursionError as e:  # nested deeper than the parser's recursion limit
            raise HTTPError(400, "request body is JSON nested too deeply") from e
        if not isinstance(value, dict):
            raise HTTPError(400, "request body must be a JSON object")
        return value

    def form(self) -> dict[str, str]:
        """Form fields from a URL-encoded or multipart body (JSON objects are accepted too)."""
        return self._parse_form()[0]

    def files(self) -> dict[str, UploadedFile]:
        """File parts of a multipart body."""
        return self._parse_form()[1]

    def param(self, name: str) -> Any:
        """A parameter from the JSON body, the form, or the query string, in that order."""
        if self.content_type == "application/json":
            value = self.json().get(name)
            if value is not None:
                return value
        elif self.body and self.content_type in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            value = self.form().get(name)
            if value is not None:
                return value
        return self.query.get(name)

    def _parse_form(self) -> tuple[dict[str, str], dict[str, UploadedFile]]:
        if self._form is None:
            ctype = self.content_type
            if ctype == "multipart/form-data":
                self._form = parse_multipart(self.body, self.headers.get_param("boundary"))
            elif ctype == "application/json":
                self._form = ({k: v for k, v in self.json().items() if isinstance(v, str)}, {})
            else:
                self._form = (_parse_urlencoded(self.body), {})
        return self._form


def _parse_urlencoded(body: bytes) -> dict[str, str]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HTTPError(400, "form body is not UTF-8") from e
    return {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}


def parse_multipart(
    body: bytes, boundary: object
) -> tuple[dict[str, str], dict[str, UploadedFile]]:
    """Split a ``multipart/form-data`` body into fields and files.

    Raises:
        HTTPError: 400 when the boundary is missing or the body is not well formed.
    """
    if not isinstance(boundary, str) or not boundary:
        raise HTTPError(400, "multipart body without a boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    fields: dict[str, str] = {}
    files: dict[str, UploadedFile] = {}
    start = body.find(delimiter)
    if start < 0:
        raise HTTPError(400, "multipart body does not contain its boundary")
    position = start + len(delimiter)
    while not body.startswith(b"--", position):
        if not body.startswith(b"\r\n", position):
            raise HTTPError(400, "malformed multipart body (no CRLF after boundary)")
        end = body.find(b"\r\n" + delimiter, position)
        if end < 0:
            raise HTTPError(400, "malformed multipart body (unterminated part)")
        _add_part(body[position + 2 : end], fields, files)
        position = end + 2 + len(delimiter)
    return fields, files


def _add_part(part: bytes, fields: dict[str, str], files: dict[str, UploadedFile]) -> None:
    head, sep, content = part.partition(b"\r\n\r\n")
    if not sep:
        raise HTTPError(400, "malformed multipart part (no header end)")
    headers = Message()
    for line in head.decode("utf-8", errors="replace").split("\r\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    if headers.get_content_disposition() != "form-data":
        raise HTTPError(400, "multipart part without Content-Disposition: form-data")
    name = headers.get_param("name", header="content-disposition")
    if not isinstance(name, str):
        raise HTTPError(400, "multipart part without a name")
    filename = headers.get_filename()
    if filename is not None:
        files[name] = UploadedFile(filename, content)
    else:
        fields[name] = content.decode("utf-8", errors="replace")


@dataclass
class Response:
    """What a route returns: a status, a body and headers.

    ``body`` may be a ``memoryview`` (a raw screenshot's pixels), written out without a copy.
    """

    body: bytes | memoryview
    status: int = 200
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    file_path: str | None = None  # stream this file instead of ``body``

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Response:
        """A JSON response."""
        return cls(json.dumps(value).encode("utf-8"), status, "application/json")

    @classmethod
    def text(cls, value: str, status: int = 200) -> Response:
        """A plain-text response (OSWorld answers several setup calls this way).

        Text that echoes a request may hold lone surrogates (undecodable bytes of a path or
        an argument); they are written as backslash escapes, so the answer stays UTF-8.
        """
        return cls(value.encode("utf-8", "backslashreplace"), status)
