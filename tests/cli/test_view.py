"""`osworld-gym view`: the HTML report of the oracle run, rendered in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import OracleRun, osworld_gym

pytestmark = [pytest.mark.desktop, pytest.mark.apps]
CHROMIUM = shutil.which("chromium")
# Chromium's console lines (--enable-logging=stderr): errors, uncaught exceptions, failed loads.
CONSOLE_ERROR = re.compile(r"CONSOLE.*(Uncaught|Error|error)|Failed to load resource")


def chromium(page: Path, profile: Path, *extra: str, query: str = "") -> subprocess.Popen[str]:
    """Headless Chromium on a file:// page, isolated from the network and the user's profile."""
    assert CHROMIUM
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
        f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra,
        page.resolve().as_uri() + query,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.mark.battery
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (install_system_deps.sh)")
def test_report_renders_in_headless_chromium(
    oracle_run: OracleRun, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    assert oracle_run.done.returncode == 0, oracle_run.done.stderr[-2000:]
    page = tmp_path / "report.html"
    done = osworld_gym("view", str(oracle_run.run_dir), "--output", str(page), "--max-width", "640")
    assert done.returncode == 0, done.stderr
    size = page.stat().st_size
    assert size < 40e6, f"the report is {size / 1e6:.0f} MB"

    steps = sum(len(p.read_text().splitlines()) for p in oracle_run.run_dir.rglob("traj.jsonl"))
    # One load checks the rendering and the filters: ?domain= hides the other domains' tasks
    # (their steps are rendered all the same).
    dom = chromium(page, tmp_path / "profile", "--dump-dom", query="?domain=os&open=1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    errors = [line for line in dom.stderr.splitlines() if CONSOLE_ERROR.search(line)]
    assert not errors, errors
    html = dom.stdout
    assert 'data-rendered="ok"' in html, re.findall(r'<pre id="js-errors"[^>]*>.*?</pre>', html)
    assert f'data-steps="{steps}"' in html
    assert html.count('class="step"') == steps  # every step drawn by the script
    assert html.count('class="click-point"') >= 5  # the oracles' clicks, drawn on the screens
    assert html.count('class="action-label"') >= steps
    assert "calc-rename-sheet" in html and "score 1" in html
    images = re.findall(r'<img[^>]* src="([^"]{0,30})', html)
    assert len(images) >= steps and all(src.startswith("data:image/jpeg;base64,") for src in images)
    cards = re.findall(r'<details class="task"[^>]*>', html)
    assert len(cards) == 37
    visible = [c for c in cards if " hidden" not in c]
    assert len(visible) == 10 and all('data-domain="os"' in c for c in visible)

    shot = tmp_path / "report.png"
    taken = chromium(
        page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2400",
        query="?q=impress-duplicate-slide&open=1",
    )  # fmt: skip
    assert taken.returncode == 0 and shot.read_bytes()[:4] == b"\x89PNG"
    record_property("screenshot", str(shot))
    print(f"screenshot of the rendered report: {shot}")
    _check_not_blank(shot)


def _check_not_blank(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as image:
        colours = image.convert("RGB").resize((64, 64)).getcolors(64 * 64)
    assert colours is None or len(colours) > 50, "the page screenshot is blank"


def test_view_of_an_empty_folder_fails_clearly(tmp_path: Path) -> None:
    done = osworld_gym("view", str(tmp_path))
    assert done.returncode == 1 and "no task folders" in done.stderr


def test_report_keeps_model_text_as_text(tmp_path: Path) -> None:
    # A hostile model output must stay text: it cannot end the data's script element, and the
    # renderer inserts it with textContent.
    task = tmp_path / "run" / "os" / "t1"
    task.mkdir(parents=True)
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    step = {"step_num": 1, "action": "x", "response": hostile,
            "reward": 0.0, "done": True, "info": {}, "parsed_actions": []}  # fmt: skip
    (task / "traj.jsonl").write_text(json.dumps(step) + "\n")
    (task / "result.txt").write_text("0.0\n")
    page = tmp_path / "r.html"
    assert osworld_gym("view", str(tmp_path / "run"), "--output", str(page)).returncode == 0
    text = page.read_text()
    assert text.count("</script>") == 2 and "</script><script>alert(1)" not in text
    if CHROMIUM is not None:
        dom = chromium(page, tmp_path / "profile", "--dump-dom", query="?open=1").stdout
        assert 'data-rendered="ok"' in dom and '<img src="x"' not in dom
        assert "&lt;/script&gt;&lt;script&gt;alert(1)" in dom  # shown as text in the step
