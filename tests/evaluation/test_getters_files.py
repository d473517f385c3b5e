"""The file, command and desktop-info getters, on a stand-in guest client (no desktop).

What OSWorld's getters give (desktop_env 1.0.2, ``getters/{file,general,info,misc}.py``):
``gives`` is a set of indexes returned in index order, an error answer of the guest gives None
(an empty wallpaper file for ``vm_wallpaper``), ``content_from_vm_file`` reads an xlsx's last
row. ``tests/parity/test_parity_getters.py`` checks the same against OSWorld's code on a
desktop.
"""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.errors import EvaluatorError, GuestAuthError, GuestHTTPError
from osworld_gym.evaluation.getters import GETTERS, EvalContext
from osworld_gym.evaluation.getters import base as getters_module
from osworld_gym.guest.client import CommandResult
from osworld_gym.task_setup.downloads import AssetCache, AssetUnavailableError


class StandInClient:
    """Files by path, and an error answer (status) for every route named in ``failing``."""

    def __init__(self, files: dict[str, bytes], failing: dict[str, int] | None = None) -> None:
        self.files, self.failing = files, failing or {}

    def _fail(self, route: str) -> None:
        status = self.failing.get(route)
        if status is not None:
            error = GuestAuthError if status == 401 else GuestHTTPError
            raise error(route, status, {"message": "refused"})

    def download(self, path: str) -> bytes:
        self._fail("/file")
        if path not in self.files:
            raise GuestHTTPError("/file", 404, {"message": "File not found"})
        return self.files[path]

    def execute(self, command: Any, *, shell: bool = False) -> CommandResult:
        self._fail("/execute")
        return CommandResult("out\n", "err\n", 0)

    def list_directory(self, path: str) -> dict[str, Any]:
        self._fail("/list_directory")
        return {"type": "directory", "name": "x", "children": []}

    def window_size(self, app_class_name: str) -> tuple[int, int]:
        self._fail("/window_size")
        return 300, 200

    def wallpaper(self) -> bytes:
        self._fail("/wallpaper")
        return b"png"

    def terminal_output(self) -> str | None:
        self._fail("/terminal")
        return "$ "

    def accessibility_tree(self) -> str:
        self._fail("/accessibility")
        return "<desktop-frame/>"


def _ctx(tmp_path: Path, client: StandInClient) -> EvalContext:
    return EvalContext(
        client=client,  # type: ignore[arg-type]
        task_id="t",
        cache=AssetCache(tmp_path / "cache", offline=True),
        scratch=tmp_path / "fetched",
    )


def _read(value: Any) -> Any:
    if isinstance(value, list):
        return [_read(v) for v in value]
    return None if value is None else Path(value).read_bytes()


FILES = {"/a": b"A", "/b": b"B", "/c": b"C"}
MULTI = {"multi": True, "path": ["/a", "/b", "/c"], "dest": ["a", "b", "c"]}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (MULTI, b"A"),
        ({**MULTI, "gives": [2, 0]}, [b"A", b"C"]),  # index order, not the order of gives
        ({**MULTI, "gives": [1, 1]}, b"B"),  # a set: once, and one value is returned alone
        ({**MULTI, "gives": [1, 9]}, b"B"),  # indexes past the end are ignored
        ({**MULTI, "gives": [9]}, []),
        ({**MULTI, "dest": ["a", "b"], "gives": [0, 1, 2]}, [b"A", b"B"]),  # the shorter list
        ({**MULTI, "path": ["/a", "/x", "/c"], "gives": [0, 1, 2]}, [b"A", None, b"C"]),
        ({"path": "/a", "dest": "a", "gives": [1]}, []),  # a single file is index 0
    ],
)
def test_vm_file_gives_as_osworld(tmp_path: Path, config: dict[str, Any], expected: Any) -> None:
    value = GETTERS["vm_file"](_ctx(tmp_path, StandInClient(FILES)), config)
    assert _read(value) == expected


def test_vm_file_time_suffix_goes_before_the_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Fixed(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Fixed:  # type: ignore[override]
            return cls(2026, 3, 5, 15, 30, 7)

    monkeypatch.setattr(getters_module, "datetime", Fixed)
    ctx = _ctx(tmp_path, StandInClient(FILES))
    plain = GETTERS["vm_file"](ctx, {"path": "/a", "dest": "a.txt", "time_suffix": True})
    assert Path(plain).name == "a_20260305_153007.txt"
    custom = {"path": "/a", "dest": "a", "time_suffix": True, "time_format": "%H"}
    assert Path(GETTERS["vm_file"](ctx, custom)).name == "a_15"


def test_an_error_answer_for_a_file_is_no_file_but_a_refused_token_raises(
    tmp_path: Path,
) -> None:
    config = {"path": "/a", "dest": "a"}
    assert GETTERS["vm_file"](_ctx(tmp_path, StandInClient(FILES, {"/file": 500})), config) is None
    with pytest.raises(GuestAuthError):
        GETTERS["vm_file"](_ctx(tmp_path, StandInClient(FILES, {"/file": 401})), config)


@pytest.mark.parametrize(
    ("getter", "config", "route"),
    [
        ("vm_command_line", {"command": ["no-such-program"]}, "/execute"),
        ("vm_command_error", {"command": "sleep 999", "shell": True}, "/execute"),
        ("list_directory", {"path": "/huge"}, "/list_directory"),
        ("vm_window_size", {"app_class_name": "vlc"}, "/window_size"),
        ("vm_terminal_output", {}, "/terminal"),
        ("accessibility_tree", {}, "/accessibility"),
    ],
)
def test_an_error_answer_of_the_guest_gives_none(
    tmp_path: Path, getter: str, config: dict[str, Any], route: str
) -> None:
    ctx = _ctx(tmp_path, StandInClient(FILES, {route: 500}))
    assert GETTERS[getter](ctx, config) is None
    with pytest.raises(GuestAuthError):
        GETTERS[getter](_ctx(tmp_path, StandInClient(FILES, {route: 401})), config)


def test_commands_and_sizes_when_the_guest_answers(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, StandInClient(FILES))
    assert GETTERS["vm_command_line"](ctx, {"command": "x"}) == "out\n"
    assert GETTERS["vm_command_error"](ctx, {"command": "x"}) == "err\n"
    assert GETTERS["vm_window_size"](ctx, {"app_class_name": "x"}) == {"width": 300, "height": 200}


def test_no_wallpaper_is_an_empty_file(tmp_path: Path) -> None:
    unset = GETTERS["vm_wallpaper"](_ctx(tmp_path, StandInClient({}, {"/wallpaper": 404})), {})
    assert Path(unset).read_bytes() == b""
    dest = {"dest": "w.png"}
    assert Path(GETTERS["vm_wallpaper"](_ctx(tmp_path, StandInClient({})), dest)).name == "w.png"


def test_time_diff_range_is_the_config_value() -> None:
    getter = GETTERS["time_diff_range"]
    assert getter(None, {"diff_range_in_minutes": 5}) == 5  # type: ignore[arg-type]
    assert getter(None, {}) is None  # type: ignore[arg-type]


def test_cache_file_accepts_any_existing_path(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, StandInClient({}))
    (ctx.task_cache / "folder").mkdir()
    assert GETTERS["cache_file"](ctx, {"path": "folder"}) == str(ctx.task_cache / "folder")
    with pytest.raises(FileNotFoundError):
        GETTERS["cache_file"](ctx, {"path": "never-written"})


def _xlsx(rows: list[list[Any]]) -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_content_from_vm_file_reads_an_xlsx_last_row(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    files = {"/d/r.xlsx": _xlsx([["Name", "Year"], ["Ada", 1843], ["Linus", 1991]])}
    ctx = _ctx(tmp_path, StandInClient(files))
    last = {"path": "/d/r.xlsx", "file_type": "xlsx", "file_content": "last_row"}
    assert GETTERS["content_from_vm_file"](ctx, last) == ["Linus", "1991"]
    assert (tmp_path / "fetched" / "r.xlsx").is_file()  # fetched as its base name
    other = {**last, "file_content": "first_row"}
    assert GETTERS["content_from_vm_file"](ctx, other) is None
    with pytest.raises(FileNotFoundError):
        GETTERS["content_from_vm_file"](ctx, {**last, "path": "/d/none.xlsx"})
    assert GETTERS["content_from_vm_file"](ctx, {**other, "path": "/d/none.xlsx"}) is None
    with pytest.raises(KeyError):
        GETTERS["content_from_vm_file"](ctx, {"path": "/d/r.xlsx", "file_type": "xlsx"})
    with pytest.raises(EvaluatorError):
        GETTERS["content_from_vm_file"](ctx, {**last, "file_type": "pdf"})


def test_content_from_vm_file_text_beyond_osworld(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, StandInClient({"/t": b"caf\xe9"}))
    assert GETTERS["content_from_vm_file"](ctx, {"path": "/t"}) == "caf\ufffd"
    assert GETTERS["content_from_vm_file"](ctx, {"path": "/none", "file_type": "txt"}) is None


def _reference_ctx(tmp_path: Path, client: StandInClient) -> EvalContext:
    """A context whose task file lives in ``<tmp>/suite/examples`` beside ``<tmp>/suite/assets``."""
    assets = tmp_path / "suite" / "assets"
    assets.mkdir(parents=True)
    (assets / "gold.txt").write_bytes(b"GOLD")
    (assets / "other.txt").write_bytes(b"OTHER")
    (tmp_path / "suite" / "examples").mkdir()
    return EvalContext(
        client=client,  # type: ignore[arg-type]
        task_id="t",
        cache=AssetCache(tmp_path / "cache", offline=True),
        scratch=tmp_path / "fetched",
        task_dir=tmp_path / "suite" / "examples",
    )


def test_cloud_file_local_path_reads_the_host_file_beside_the_task(tmp_path: Path) -> None:
    # The desktop has a file at the same name: the reference never comes from the guest.
    client = StandInClient({"../assets/gold.txt": b"FROM THE DESKTOP"})
    ctx = _reference_ctx(tmp_path, client)
    config = {"local_path": "../assets/gold.txt", "dest": "gold.txt"}
    got = Path(GETTERS["cloud_file"](ctx, config))
    assert got.read_bytes() == b"GOLD"
    assert got == tmp_path / "fetched" / getters_module.REFERENCE_FOLDER / "gold.txt"
    absolute = {"local_path": str(tmp_path / "suite/assets/other.txt"), "dest": "o.txt"}
    assert Path(GETTERS["cloud_file"](ctx, absolute)).read_bytes() == b"OTHER"


def test_cloud_file_local_path_cannot_be_replaced_by_a_desktop_file(tmp_path: Path) -> None:
    # A result fetched under the reference's dest lands apart from it; the copy leaves the
    # suite's own file untouched by whatever a metric does to its input.
    ctx = _reference_ctx(tmp_path, StandInClient({"/home/user/doc.txt": b"AGENT"}))
    reference = GETTERS["cloud_file"](ctx, {"local_path": "../assets/gold.txt", "dest": "x.txt"})
    result = GETTERS["vm_file"](ctx, {"path": "/home/user/doc.txt", "dest": "x.txt"})
    assert _read([reference, result]) == [b"GOLD", b"AGENT"]
    Path(reference).write_bytes(b"changed by a metric")
    assert (tmp_path / "suite/assets/gold.txt").read_bytes() == b"GOLD"


def test_cloud_file_local_path_multi_and_a_missing_file(tmp_path: Path) -> None:
    ctx = _reference_ctx(tmp_path, StandInClient({}))
    multi = {
        "multi": True,
        "local_path": ["../assets/gold.txt", "../assets/other.txt"],
        "dest": ["g", "o"],
        "gives": [0, 1],
    }
    assert _read(GETTERS["cloud_file"](ctx, multi)) == [b"GOLD", b"OTHER"]
    with pytest.raises(AssetUnavailableError, match="does not exist on the host"):
        GETTERS["cloud_file"](ctx, {"local_path": "../assets/none.txt", "dest": "n"})
