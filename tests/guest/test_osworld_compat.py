"""OSWorld-shaped requests against our guest: host code written for OSWorld's server works.

Each request below is built the way OSWorld's host controllers build it (JSON via
``data=json.dumps(...)`` with a JSON content type, forms via ``data={...}``, uploads as multipart
``file_path`` + ``file_data``), without a token (OSWorld sends none), and each answer is checked
against OSWorld's response shape (docs/design/osworld-protocol.md#endpoints).
"""

from __future__ import annotations

import collections.abc
import io
import json
import time

import pytest
import requests
from desktop_helpers import SMALL_SCREEN, launch_desktop, wait_until
from fixture_marks import needs
from PIL import Image

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
@needs("desktop")
def osworld_desktop() -> collections.abc.Iterator[LocalDesktop]:
    # The host's network: download_file fetches from a server this module starts on the host's
    # loopback (a private network reaches only the host ports named at launch).
    with launch_desktop(use_token=False, network="host") as desktop:
        yield desktop


@pytest.fixture()
def url(osworld_desktop: LocalDesktop) -> str:
    return osworld_desktop.endpoint


def post_json(url: str, path: str, payload: dict, timeout: float = 60) -> requests.Response:
    return requests.post(url + path, headers=JSON, data=json.dumps(payload), timeout=timeout)


def test_screenshot_is_png_of_screen_size(url: str) -> None:
    response = requests.get(url + "/screenshot", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")
    assert Image.open(io.BytesIO(response.content)).size == SMALL_SCREEN


@pytest.mark.parametrize("path", ["/execute", "/setup/execute"])
def test_execute_list_and_string_commands(url: str, path: str) -> None:
    listed = post_json(url, path, {"command": ["echo", "hi there"], "shell": False}).json()
    assert listed == {"status": "success", "output": "hi there\n", "error": "", "returncode": 0}
    split = post_json(url, path, {"command": "echo 'a b'  c", "shell": False}).json()
    assert split["output"] == "a b c\n"
    shell = post_json(url, path, {"command": "echo $((6*7)) >&2; exit 4", "shell": True}).json()
    assert (shell["status"], shell["error"], shell["returncode"]) == ("success", "42\n", 4)
    home = post_json(url, path, {"command": ["ls", "-d", "~/Desktop"]}).json()
    assert home["output"].strip() == "/home/user/Desktop"  # `~` expanded, as OSWorld's server does


def test_execute_with_verification(url: str) -> None:
    payload = {
        "command": ["true"],
        "verification": {"command_success": "test -d ~/Desktop"},
        "max_wait_time": 5,
        "check_interval": 0.2,
    }
    body = post_json(url, "/execute_with_verification", payload).json()
    assert body["verification"] == "passed" and body["returncode"] == 0 and "wait_time" in body
    payload["verification"] = {"command_success": "false"}
    payload["max_wait_time"] = 0.5
    failed = post_json(url, "/setup/execute_with_verification", payload)
    assert failed.status_code == 500 and failed.json()["verification"] == "failed"


def test_launch_answers_plain_text_and_starts_the_program(
    url: str, osworld_desktop: LocalDesktop
) -> None:
    response = post_json(
        url, "/setup/launch", {"command": ["xterm", "-title", "compat-term"], "shell": False}
    )
    assert response.status_code == 200
    assert response.text == "xterm -title compat-term launched successfully"
    wait_until(lambda: "compat-term" in osworld_desktop.client.execute(["wmctrl", "-l"]).output)


def test_window_routes(url: str, osworld_desktop: LocalDesktop) -> None:
    post_json(
        url,
        "/setup/launch",
        {"command": "xterm -title win-term -geometry 80x24+0+0", "shell": True},
    )
    wait_until(lambda: "win-term" in osworld_desktop.client.execute(["wmctrl", "-l"]).output)
    size = requests.post(url + "/window_size", data={"app_class_name": "XTerm"}, timeout=10)
    assert size.status_code == 200 and set(size.json()) == {"width", "height"}
    assert size.json()["width"] > 100
    activated = post_json(
        url,
        "/setup/activate_window",
        {"window_name": "win-term", "strict": False, "by_class": False},
    )
    assert (activated.status_code, activated.text) == (200, "Window activated successfully")
    by_class = post_json(
        url, "/setup/activate_window", {"window_name": "xterm", "strict": False, "by_class": True}
    )
    assert by_class.status_code == 200
    closed = post_json(
        url, "/setup/close_window", {"window_name": "win-term", "strict": True, "by_class": False}
    )
    assert closed.status_code == 200
    wait_until(lambda: "win-term" not in osworld_desktop.client.execute(["wmctrl", "-l"]).output)


def test_upload_file_and_list_directory(url: str) -> None:
    content = "λ data\n".encode() * 1000
    response = requests.post(
        url + "/setup/upload",
        data={"file_path": "~/Documents/sub/data.bin"},
        files={"file_data": ("data.bin", io.BytesIO(content), "application/octet-stream")},
        timeout=30,
    )
    assert (response.status_code, response.text) == (200, f"File Uploaded: {len(content)} bytes")
    fetched = requests.post(
        url + "/file", data={"file_path": "~/Documents/sub/data.bin"}, timeout=30
    )
    assert fetched.status_code == 200 and fetched.content == content
    assert (
        requests.post(
            url + "/file", data={"file_path": "$HOME/Documents/sub/data.bin"}, timeout=30
        ).content
        == content
    )
    missing = requests.post(url + "/file", data={"file_path": "~/nope.bin"}, timeout=10)
    assert missing.status_code == 404 and missing.json()["error"] == "File not found"
    tree = post_json(url, "/list_directory", {"path": "~/Documents"}).json()["directory_tree"]
    assert tree == {
        "type": "directory",
        "name": "Documents",
        "children": [
            {"type": "directory", "name": "sub", "children": [{"type": "file", "name": "data.bin"}]}
        ],
    }


def test_simple_queries(url: str) -> None:
    assert requests.post(url + "/screen_size", timeout=10).json() == {
        "width": SMALL_SCREEN[0],
        "height": SMALL_SCREEN[1],
    }
    assert requests.get(url + "/platform", timeout=10).text == "Linux"
    position = requests.get(url + "/cursor_position", timeout=10).json()
    assert isinstance(position, list) and len(position) == 2
    desktop_path = requests.post(url + "/desktop_path", timeout=10).json()["desktop_path"]
    assert desktop_path.endswith("/Desktop")
    terminal = requests.get(url + "/terminal", timeout=30).json()
    assert terminal["status"] == "success" and "output" in terminal


def test_wallpaper_round_trip(url: str, osworld_desktop: LocalDesktop) -> None:
    osworld_desktop.reset()  # no windows covering the root window
    buffer = io.BytesIO()
    Image.new("RGB", (64, 36), (200, 30, 40)).save(buffer, "PNG")
    requests.post(
        url + "/setup/upload",
        data={"file_path": "~/Pictures/wall.png"},
        files={"file_data": ("wall.png", buffer.getvalue())},
        timeout=10,
    )
    changed = post_json(url, "/setup/change_wallpaper", {"path": "~/Pictures/wall.png"})
    assert changed.status_code == 200
    assert requests.post(url + "/wallpaper", timeout=10).content == buffer.getvalue()
    shot = osworld_desktop.client.screenshot(format="raw", cursor=False).to_array()
    assert tuple(shot[SMALL_SCREEN[1] - 5, 5]) == (200, 30, 40)
    assert post_json(url, "/setup/change_wallpaper", {"path": "~/none.png"}).status_code == 404


def test_open_file_waits_for_its_window(url: str, osworld_desktop: LocalDesktop) -> None:
    requests.post(
        url + "/setup/upload",
        data={"file_path": "~/Desktop/opened.txt"},
        files={"file_data": ("opened.txt", b"hello")},
        timeout=10,
    )
    response = post_json(url, "/setup/open_file", {"path": "~/Desktop/opened.txt"}, timeout=120)
    assert response.status_code == 200, response.text
    titles = osworld_desktop.client.execute(["wmctrl", "-l"]).output
    assert "opened" in titles


def test_open_file_wait_is_bounded(url: str) -> None:
    requests.post(
        url + "/setup/upload",
        data={"file_path": "~/blob.unknownext"},
        files={"file_data": ("b", b"\x00" * 10)},
        timeout=10,
    )
    start = time.monotonic()
    response = post_json(url, "/setup/open_file", {"path": "~/blob.unknownext", "timeout": 1.5})
    assert response.status_code == 500 and "within" in response.json()["message"]
    assert time.monotonic() - start < 10


def test_run_python(url: str) -> None:
    body = post_json(
        url, "/run_python", {"code": "import sys; print('out'); print('err', file=sys.stderr)"}
    ).json()
    assert body["status"] == "success" and body["return_code"] == 0
    assert body["output"] == "out\n" and body["error"] == "err\n" and body["need_more"] is False
    failing = post_json(url, "/run_python", {"code": "raise SystemExit(3)"}).json()
    assert failing["status"] == "error" and failing["return_code"] == 3


def test_run_bash_script_runs_once_and_answers_200(url: str, osworld_desktop: LocalDesktop) -> None:
    script = "echo run >> ~/runs.log\necho to-stderr >&2\npwd"
    response = post_json(
        url, "/run_bash_script", {"script": script, "timeout": 30, "working_dir": "~/Documents"}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "success" and body["returncode"] == 0 and body["error"] == ""
    assert "to-stderr" in body["output"] and body["output"].strip().endswith("/Documents")
    assert osworld_desktop.client.download("~/runs.log") == b"run\n"
    failing = post_json(url, "/run_bash_script", {"script": "exit 7"}).json()
    assert (failing["status"], failing["returncode"]) == ("error", 7)


def test_recording_routes(url: str) -> None:
    started = requests.post(url + "/start_recording", timeout=30)
    assert started.status_code == 200 and started.json()["status"] == "success"
    again = requests.post(url + "/start_recording", timeout=30)
    assert again.status_code == 400
    time.sleep(0.5)  # a few frames of video
    ended = requests.post(url + "/end_recording", timeout=60)
    assert ended.status_code == 200 and ended.content[4:8] == b"ftyp"
    assert requests.post(url + "/end_recording", timeout=10).status_code == 400


def test_accessibility_tree_of_a_running_app(url: str, osworld_desktop: LocalDesktop) -> None:
    post_json(url, "/setup/launch", {"command": ["mousepad"], "shell": False})
    wait_until(lambda: "Mousepad" in osworld_desktop.client.execute(["wmctrl", "-l"]).output)

    def tree() -> str:
        response = requests.get(url + "/accessibility", timeout=120)
        assert response.status_code == 200, response.text
        return response.json()["AT"]

    xml = wait_until(lambda: (t := tree()) and 'name="mousepad"' in t and t, message="mousepad")
    assert xml.lstrip().startswith("<desktop-frame")
    assert "https://accessibility.ubuntu.example.org/ns/state" in xml


def test_terminal_text_of_a_focused_terminal(url: str, osworld_desktop: LocalDesktop) -> None:
    client = osworld_desktop.client
    post_json(url, "/setup/launch", {"command": ["lxterminal", "--title=vte-term"], "shell": False})
    wait_until(lambda: "vte-term" in client.execute(["wmctrl", "-l"]).output)
    client.activate_window("vte-term")
    client.actions([{"kind": "type", "text": "echo marker-$((40+2))\n"}])

    def output() -> str:
        body = requests.get(url + "/terminal", timeout=30).json()
        assert body["status"] == "success"
        return body["output"] or ""

    wait_until(lambda: "marker-42" in output(), message="the terminal text")


def test_download_file_from_inside_the_desktop(url: str, osworld_desktop: LocalDesktop) -> None:
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b"served over loopback"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        payload = {
            "url": f"http://127.0.0.1:{server.server_address[1]}/f",
            "path": "~/Downloads/f.txt",
        }
        response = post_json(url, "/setup/download_file", payload)
        assert response.status_code == 200 and response.text.startswith(
            "File downloaded successfully"
        )
        assert osworld_desktop.client.download("~/Downloads/f.txt") == b"served over loopback"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("path", "payload", "field"),
    [
        (
            "/execute",
            {"command": "head -c 40000000 /dev/zero | tr '\\0' x", "shell": True},
            "output",
        ),
        (
            "/run_python",
            {"code": "import sys\nfor _ in range(40): sys.stdout.write('x' * 10**6)"},
            "output",
        ),
        ("/run_bash_script", {"script": "head -c 40000000 /dev/zero | tr '\\0' x"}, "output"),
    ],  # fmt: skip
    ids=["execute", "run_python", "run_bash_script"],
)
def test_a_command_that_prints_too_much_is_cut_not_held(
    url: str, path: str, payload: dict, field: str
) -> None:
    """40 MB of output: the first 16 MiB and a note come back; the guest holds no more."""
    from osworld_gym.guest.bounded_output import MAX_OUTPUT_BYTES

    body = post_json(url, path, payload).json()
    text = body[field]
    assert text.startswith("x" * 1000)
    assert text.rstrip().endswith("of 40000000 bytes]")
    assert MAX_OUTPUT_BYTES <= len(text) < MAX_OUTPUT_BYTES + 200


def test_output_keeps_universal_newlines(url: str) -> None:
    body = post_json(url, "/execute", {"command": "printf 'a\\r\\nb\\rc\\n'", "shell": True})
    assert body.json()["output"] == "a\nb\nc\n"
