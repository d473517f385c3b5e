"""OSWorld setup steps and getters against a real local desktop."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from desktop_helpers import SMALL_SCREEN, wait_until

from osworld_gym.errors import EvaluatorError, TaskSetupError
from osworld_gym.evaluation.getters import EvalContext, get_getter
from osworld_gym.providers.local.provider import LocalDesktop
from osworld_gym.task_setup.downloads import AssetCache, AssetUnavailableError
from osworld_gym.task_setup.interpreter import SetupContext, SetupInterpreter
from osworld_gym.tasks.placeholders import download_cache_name

pytestmark = pytest.mark.desktop


@pytest.fixture()
def cache(tmp_path: Path) -> AssetCache:
    return AssetCache(tmp_path / "cache", offline=True)


def _interpreter(desktop: LocalDesktop, cache: AssetCache, task_dir: Path | None = None):
    context = SetupContext(
        client=desktop.client,
        task_id="task-1",
        cache=cache,
        task_dir=task_dir,
        screen_size=SMALL_SCREEN,
        open_timeout=30,
    )
    return SetupInterpreter(context)


def test_download_from_cache_upload_execute_and_until(
    clean_desktop: LocalDesktop, cache: AssetCache, tmp_path: Path
) -> None:
    url = "https://huggingface.co/datasets/example/resolve/main/data.csv"
    cached = cache.root / "task-1" / download_cache_name(url, "/x/data.csv")
    cached.parent.mkdir(parents=True)
    cached.write_text("a,b\n1,2\n")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "local.txt").write_text("local asset")
    steps = [
        {"type": "download", "parameters": {"files": [{"url": url, "path": "~/Desktop/data.csv"}]}},
        {
            "type": "upload_file",
            "parameters": {
                "files": [{"local_path": "assets/local.txt", "path": "~/Documents/local.txt"}]
            },
        },
        {
            "type": "execute",
            "parameters": {
                "command": ["bash", "-c", "echo {SCREEN_WIDTH}x{SCREEN_HEIGHT}"],
                "stdout": "size.txt",
            },
        },
        {"type": "command", "parameters": {"command": "touch ~/flag; false", "shell": True}},
        {
            "type": "execute",
            "parameters": {
                "command": "test -f ~/flag && echo ready",
                "shell": True,
                "until": {"stdout": "ready"},
            },
        },
        {"type": "sleep", "parameters": {"seconds": 0.01}},
    ]
    report = _interpreter(clean_desktop, cache, tmp_path).run(steps)
    client = clean_desktop.client
    assert client.download("~/Desktop/data.csv") == b"a,b\n1,2\n"
    assert client.download("~/Documents/local.txt") == b"local asset"
    assert (cache.root / "task-1" / "size.txt").read_text() == "1280x720\n"
    assert [s.type for s in report.steps] == [
        "download",
        "upload_file",
        "execute",
        "command",
        "execute",
        "sleep",
    ]
    assert len(report.warnings) == 1 and "exit status 1" in report.warnings[0]


def test_launch_open_activate_close(clean_desktop: LocalDesktop, cache: AssetCache) -> None:
    client = clean_desktop.client
    client.upload("~/Desktop/notes.txt", b"hello")
    steps = [
        {"type": "launch", "parameters": {"command": ["xterm", "-title", "setup-term"]}},
        {"type": "open", "parameters": {"path": "~/Desktop/notes.txt"}},
        {"type": "activate_window", "parameters": {"window_name": "setup-term"}},
        {"type": "activate_window", "parameters": {"window_name": "no such window"}},
        {"type": "close_window", "parameters": {"window_name": "setup-term", "strict": True}},
    ]
    report = _interpreter(clean_desktop, cache).run(steps, phase="config")
    assert report.warnings == ["3 (activate_window): no window 'no such window'"]
    wait_until(lambda: "setup-term" not in client.execute(["wmctrl", "-l"]).output)
    assert "notes" in client.execute(["wmctrl", "-l"]).output


@pytest.mark.parametrize(
    ("step", "fragment"),
    [
        (
            {"type": "login", "parameters": {"settings_file": "x", "platform": "googledrive"}},
            "needs a Google account",
        ),
        ({"type": "googledrive", "parameters": {}}, "needs a Google Drive account"),
        ({"type": "teleport", "parameters": {}}, "unknown step type"),
        (
            {
                "type": "download",
                "parameters": {
                    "files": [{"url": "https://nowhere.invalid/f.xlsx", "path": "~/f.xlsx"}]
                },
            },
            "https://nowhere.invalid/f.xlsx is not cached",
        ),
        ({"type": "open", "parameters": {"path": "~/missing.txt"}}, "HTTP 404"),
        ({"type": "launch", "parameters": {}}, "bad parameters"),
        (
            {
                "type": "upload_file",
                "parameters": {"files": [{"local_path": "/no/file", "path": "~/x"}]},
            },
            "does not exist",
        ),
        ({"parameters": {}}, "malformed setup step"),
    ],
)
def test_failing_steps_are_reported_with_the_step(
    desktop: LocalDesktop, cache: AssetCache, step: dict, fragment: str
) -> None:
    with pytest.raises(TaskSetupError, match=fragment):
        _interpreter(desktop, cache).run([step], phase="postconfig")


def test_offline_cache_names_the_url(tmp_path: Path) -> None:
    with pytest.raises(AssetUnavailableError, match="example.org/a.xlsx"):
        AssetCache(tmp_path, offline=True).fetch("https://example.org/a.xlsx", "t", "a.xlsx")


def test_cache_downloads_over_http_once(tmp_path: Path) -> None:
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            body = b"remote bytes"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/asset.bin"
        cache = AssetCache(tmp_path)
        first = cache.fetch(url, "t", "asset.bin")
        second = cache.fetch(url, "t", "asset.bin")
        assert first == second and first.read_bytes() == b"remote bytes" and len(hits) == 1
    finally:
        server.shutdown()
        server.server_close()


def test_getters(clean_desktop: LocalDesktop, cache: AssetCache) -> None:
    client = clean_desktop.client
    client.upload("~/a.txt", b"A")
    client.upload("~/b.txt", b"B")
    ctx = EvalContext(client=client, task_id="task-1", cache=cache)
    assert (
        Path(get_getter("vm_file")(ctx, {"path": "~/a.txt", "dest": "a.txt"})).read_bytes() == b"A"
    )
    assert get_getter("vm_file")(ctx, {"path": "~/missing.txt", "dest": "m.txt"}) is None
    multi = {
        "multi": True,
        "path": ["~/a.txt", "~/b.txt"],
        "dest": ["a1.txt", "b1.txt"],
        "gives": [0, 1],
    }
    assert [Path(p).read_bytes() for p in get_getter("vm_file")(ctx, multi)] == [b"A", b"B"]
    assert get_getter("rule")(ctx, {"rules": {"expected": [1]}}) == {"expected": [1]}
    assert get_getter("vm_command_line")(ctx, {"command": "echo hi", "shell": True}) == "hi\n"
    assert (
        get_getter("vm_command_error")(ctx, {"command": "echo oops >&2", "shell": True}) == "oops\n"
    )
    assert get_getter("vm_screen_size")(ctx, {}) == {"width": 1280, "height": 720}
    assert get_getter("vm_window_size")(ctx, {"app_class_name": "nothing"}) is None
    assert get_getter("list_directory")(ctx, {"path": "~/Music"}) == {
        "type": "directory",
        "name": "Music",
        "children": [],
    }
    assert get_getter("list_directory")(ctx, {"path": "~/no-such-folder"}) is None
    assert get_getter("content_from_vm_file")(ctx, {"path": "~/a.txt"}) == "A"
    assert get_getter("content_from_vm_file")(ctx, {"path": "~/none.txt"}) is None
    # The desktop's wallpaper is what GNOME's setting names (a file of the host's system
    # folders, shown at its place); none set or none there: OSWorld's getter writes an empty file.
    named = get_getter("vm_command_line")(
        ctx, {"command": "gsettings get org.gnome.desktop.background picture-uri", "shell": True}
    )
    wallpaper = Path((named or "").strip().strip("'").removeprefix("file://"))
    expected = wallpaper.read_bytes() if str(wallpaper) != "." and wallpaper.is_file() else b""
    assert Path(get_getter("vm_wallpaper")(ctx, {"dest": "w.png"})).read_bytes() == expected
    with pytest.raises(FileNotFoundError):
        get_getter("cache_file")(ctx, {"path": "never-written.txt"})
    with pytest.raises(EvaluatorError, match="did you mean"):
        get_getter("vm_fiel")


def test_vm_files_of_concurrent_evaluations_of_one_task_stay_apart(
    clean_desktop: LocalDesktop, cache: AssetCache, tmp_path: Path
) -> None:
    # Two envs scoring the same task at once: each fetch lands in its own scratch folder, so
    # neither reads the other's copy (in the shared task cache the second would overwrite it).
    client = clean_desktop.client
    contexts = []
    for name in ("first", "second"):
        client.upload("~/answer.txt", name.encode())
        ctx = EvalContext(client=client, task_id="same", cache=cache, scratch=tmp_path / name)
        contexts.append(get_getter("vm_file")(ctx, {"path": "~/answer.txt", "dest": "a.txt"}))
    assert [Path(p).read_bytes() for p in contexts] == [b"first", b"second"]
    assert not (cache.root / "same" / "a.txt").exists()
