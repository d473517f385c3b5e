"""Request parsing of the guest server (pure): JSON, URL-encoded and multipart bodies."""

from __future__ import annotations

from email.message import Message

import pytest
import requests

from osworld_gym.guest.http import HTTPError, Request, parse_multipart


def _request(body: bytes, content_type: str, query: dict | None = None) -> Request:
    headers = Message()
    headers["Content-Type"] = content_type
    return Request("POST", "/x", query or {}, headers, body)


def test_multipart_as_requests_builds_it() -> None:
    prepared = requests.Request(
        "POST",
        "http://h/",
        data={"file_path": "~/a b.txt"},
        files={"file_data": ("a.txt", b"\r\n--not-a-boundary\r\n\x00")},
    ).prepare()
    request = _request(prepared.body, prepared.headers["Content-Type"])
    assert request.form() == {"file_path": "~/a b.txt"}
    upload = request.files()["file_data"]
    assert (upload.filename, upload.data) == ("a.txt", b"\r\n--not-a-boundary\r\n\x00")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"no boundary here",
        b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--",
        b"--b\r\nX: y\r\n\r\nx\r\n--b--",
        b"--b\r\nContent-Disposition: form-data; name=a\r\n\r\nunterminated",
        b"--bjunk",
    ],
)
def test_malformed_multipart_is_a_400(body: bytes) -> None:
    with pytest.raises(HTTPError) as info:
        parse_multipart(body, "b")
    assert info.value.status == 400


def test_missing_boundary_is_a_400() -> None:
    with pytest.raises(HTTPError):
        _request(b"x", "multipart/form-data").form()


def test_param_lookup_order() -> None:
    assert _request(b'{"a": 1}', "application/json", {"a": "q"}).param("a") == 1
    assert _request(b"a=form", "application/x-www-form-urlencoded", {"a": "q"}).param("a") == "form"
    assert _request(b"", "text/plain", {"a": "q"}).param("a") == "q"


@pytest.mark.parametrize("body", [b"[1]", b"{", b"\xff\xfe"])
def test_json_must_be_an_object(body: bytes) -> None:
    with pytest.raises(HTTPError) as info:
        _request(body, "application/json").json()
    assert info.value.status == 400
