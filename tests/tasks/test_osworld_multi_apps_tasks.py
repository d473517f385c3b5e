"""OSWorld's own `multi_apps` tasks on a sandboxed local desktop: set up, solved, scored.

Each task file is read from shared/osworld_tasks. The image task names a file on the web: its
URL is rewritten to an HTTP server this module starts on 127.0.0.1, serving a photo-like JPEG
made here, larger than the task's limit. The solutions are written here as an agent would act:
a terminal (the task's setup opens one with Ctrl+Alt+T), wget, and GIMP in batch mode.
"""

from __future__ import annotations

import collections.abc
import http.server
import io
from typing import Any

import numpy as np
import pytest
from desktop_helpers import run_episode
from fixture_marks import needs
from http_helpers import loopback_server, port_of
from PIL import Image
from real_tasks import kind_marks, real_env, real_provider, real_task, shell, with_urls

from osworld_gym.actions import Done, Fail, Hotkey, TypeText, Wait
from osworld_gym.env import OSWorldEnv

pytestmark = [pytest.mark.desktop, pytest.mark.apps, pytest.mark.osworld_tasks, *kind_marks()]

COMPRESS_IMAGE = "3c8f201a"  # download an image, compress it under 600 KB with GIMP
IMPRESS_TO_VIDEO = "6d72aad6"  # infeasible: Impress has no video export
VLC_AS_DEFAULT = "937087b6"  # make VLC the default video player (Ubuntu's is Totem)
FILE_CACHE = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main"
LIMIT = 600_000  # the task's max_size


def _photo() -> bytes:
    """A 2000x1500 JPEG (gradients and grain) of about 2 MB: over the task's limit."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:1500, 0:2000]
    base = np.stack([x * 255 / 2000, y * 255 / 1500, (x + y) * 255 / 3500], axis=-1)
    pixels = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype("uint8")
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=95)
    return out.getvalue()


@pytest.fixture(scope="module")
def site() -> collections.abc.Iterator[str]:
    photo = _photo()
    assert len(photo) > LIMIT

    class Files(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            found = self.path.endswith("/kingbird.jpeg")
            body = photo if found else b"not found"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "image/jpeg" if found else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with loopback_server(Files) as url:
        yield url


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(
    site: str, tmp_path_factory: pytest.TempPathFactory
) -> collections.abc.Iterator[OSWorldEnv]:
    tasks = [
        with_urls(real_task("multi_apps", COMPRESS_IMAGE), {FILE_CACHE: site}),
        real_task("multi_apps", IMPRESS_TO_VIDEO),
        real_task("multi_apps", VLC_AS_DEFAULT),
    ]
    cache = tmp_path_factory.mktemp("cache")
    # The desktop's own network reaches the file server's port and nothing else of the host.
    provider = real_provider(host_ports=(port_of(site),))
    with real_env(tasks, cache_dir=str(cache), provider=provider) as environment:
        yield environment


def _task(env: OSWorldEnv, prefix: str) -> Any:
    return next(task for task in env.unwrapped.tasks if task.id.startswith(prefix))


def terminal_open(env: OSWorldEnv) -> bool:
    return "gnome-terminal" in shell(env, "wmctrl -lx").lower()


def _finished(env: OSWorldEnv, program: str) -> bool:
    """compressed.jpeg is there and ``program`` has quit (the terminal's prompt is back).

    Asked in the desktop: its HOME is on this host only for local desktops.
    """
    running = shell(env, f"ps -eo stat=,comm= | grep -v '^Z' | grep -w {program} || true")
    there = shell(env, "test -e ~/Desktop/compressed.jpeg && echo there || true")
    return there.strip() == "there" and not running.strip()


def gimp_done(env: OSWorldEnv) -> bool:
    return _finished(env, "gimp")


def wget_done(env: OSWorldEnv) -> bool:
    return _finished(env, "wget")


def test_compress_a_downloaded_image_with_gimp(env: OSWorldEnv) -> None:
    task = _task(env, COMPRESS_IMAGE)
    url = task.instruction.split('"')[1]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/kingbird.jpeg")
    script = (
        '(let* ((image (car (gimp-file-load RUN-NONINTERACTIVE "kingbird.jpeg" "kingbird.jpeg")))'
        " (layer (car (gimp-image-get-active-drawable image))))"
        " (gimp-image-scale image 1000 750)"
        ' (file-jpeg-save RUN-NONINTERACTIVE image layer "compressed.jpeg" "compressed.jpeg"'
        ' 0.8 0 1 0 "" 2 1 0 0))'
    )
    command = f"cd ~/Desktop && wget -q {url} && gimp -i -b '{script}' -b '(gimp-quit 0)'\n"
    steps = [terminal_open, TypeText(text=command), gimp_done, Done()]
    assert run_episode(env, task.id, steps) == 1.0
    assert 0 < int(shell(env, "stat -c %s ~/Desktop/compressed.jpeg")) < LIMIT
    assert run_episode(env, task.id, [Done()]) == 0.0  # no compressed.jpeg
    # Downloaded under the name the task wants but not compressed: over the limit.
    copy = f"wget -q -O ~/Desktop/compressed.jpeg {url}\n"
    steps = [terminal_open, TypeText(text=copy), wget_done, Done()]
    assert run_episode(env, task.id, steps) == 0.0


def test_infeasible_impress_to_video(env: OSWorldEnv) -> None:
    task = _task(env, IMPRESS_TO_VIDEO)
    assert run_episode(env, task.id, [Fail()]) == 1.0  # OSWorld's infeasible rule
    assert run_episode(env, task.id, [Done()]) == 0.0


def test_make_vlc_the_default_video_player(env: OSWorldEnv) -> None:
    task = _task(env, VLC_AS_DEFAULT).id
    # Totem is the default, as on Ubuntu: doing nothing scores 0.
    assert run_episode(env, task, [Done()]) == 0.0
    every_type = (
        "grep ^MimeType= /usr/share/applications/vlc.desktop | cut -d= -f2 | tr ';' ' '"
        " | xargs xdg-mime default vlc.desktop"
    )
    steps = [Hotkey(keys=("ctrl", "alt", "t")), Wait(seconds=1.0)]
    steps += [TypeText(text=f"{every_type}\n"), Wait(seconds=1.0), Done()]
    assert run_episode(env, task, steps) == 1.0
