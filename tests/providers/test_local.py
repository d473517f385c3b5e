"""The `local` provider: launch, reset, fault detection, isolation, and leaving nothing behind."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from desktop_helpers import SMALL_SCREEN, launch_desktop, wait_until

from osworld_gym.errors import DesktopDiedError, GuestError, ProviderError
from osworld_gym.providers import make_provider, processes
from osworld_gym.providers.local.provider import LocalDesktop, LocalProvider, LocalProviderConfig

pytestmark = pytest.mark.desktop


def _screen(desktop: LocalDesktop) -> np.ndarray:
    return desktop.client.screenshot(format="raw").to_array()


def test_close_leaves_no_process_and_no_folder() -> None:
    desktop = launch_desktop()
    desktop.client.launch(["xterm"])
    wait_until(lambda: len(desktop.pids()) >= 5, message="xterm to start")
    pids, marker, root = desktop.pids(), desktop.marker, desktop.root
    desktop.close()
    desktop.close()  # idempotent
    assert processes.find_marked(marker) == []
    assert not any(processes.is_alive(pid) for pid in pids)
    assert not root.exists()
    with pytest.raises(ProviderError):
        desktop.reset()


@pytest.mark.parametrize("sandboxed", [True, False])
def test_deep_work_dir_keeps_socket_paths_short(tmp_path, sandboxed: bool) -> None:
    deep = tmp_path / ("x" * 60) / ("y" * 40)
    deep.mkdir(parents=True)
    config = LocalProviderConfig(screen_size=SMALL_SCREEN, work_dir=str(deep), sandbox=sandboxed)
    desktop = make_provider(config).launch()
    try:
        assert desktop.root.is_relative_to(deep)
        # The bus socket is made at its path as the desktop sees it (a Unix socket path's limit
        # is 107 bytes): /run/user/1000 in a sandbox, a short temp folder without one.
        socket_path = desktop.desktop_path(desktop.runtime_dir / "bus")
        assert len(socket_path) < 100
        assert (socket_path == "/run/user/1000/bus") == sandboxed
        desktop.reset()  # restarts the bus on the same socket
        assert _screen(desktop).shape[:2] == SMALL_SCREEN[::-1]
    finally:
        desktop.close()
    assert not desktop.runtime_dir.exists() and not desktop.root.exists()


def test_reset_closes_apps_restores_home_and_keeps_the_endpoint(tmp_path) -> None:
    template = tmp_path / "template"
    (template / "Documents").mkdir(parents=True)
    (template / "Documents" / "seed.txt").write_text("seed")
    with launch_desktop(home_template=str(template)) as desktop:
        client = desktop.client
        assert client.download("~/Documents/seed.txt") == b"seed"
        client.upload("~/Documents/seed.txt", b"changed")
        client.upload("~/scratch.txt", b"x")
        client.launch(["xterm", "-title", "before-reset"])
        wait_until(lambda: "before-reset" in client.execute(["wmctrl", "-l"]).output)
        endpoint, guest_pid = desktop.endpoint, desktop.component_pid("guest")
        desktop.reset()
        assert desktop.endpoint == endpoint and desktop.component_pid("guest") == guest_pid
        assert client.execute(["wmctrl", "-l"]).output == ""
        assert client.download("~/Documents/seed.txt") == b"seed"
        # Only the template and the XDG folders (the new session may add dot-folders).
        assert client.execute(["ls", "/home/user"]).output.split() == sorted(
            ["Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos"]
        )
        assert desktop.resets == 1


def test_reset_releases_held_keys(tmp_path) -> None:
    with launch_desktop() as desktop:
        desktop.client.actions([{"kind": "key_down", "key": "shift"}])
        desktop.reset()
        desktop.client.launch(["xterm", "-title", "after-keys"])
        wait_until(lambda: "after-keys" in desktop.client.execute(["wmctrl", "-l"]).output)
        desktop.client.activate_window("after-keys")
        desktop.client.actions([{"kind": "type", "text": "echo lower > ~/k.txt\n"}])
        wait_until(lambda: _read(desktop, "~/k.txt") == b"lower\n", message="unshifted typing")


def _read(desktop: LocalDesktop, path: str) -> bytes | None:
    try:
        return desktop.client.download(path)
    except GuestError:
        return None


# A dead window manager is restarted by the check instead (test_desktop_faults).
@pytest.mark.parametrize("component", ["xvfb", "guest"])
def test_dead_component_is_detected_and_reset_recovers(component: str) -> None:
    with launch_desktop() as desktop:
        os.kill(desktop.component_pid(component), signal.SIGKILL)
        with pytest.raises(DesktopDiedError) as info:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                desktop.check()
                time.sleep(0.05)
        assert info.value.component == component
        with pytest.raises(GuestError):
            desktop.client.screenshot()
        desktop.reset()
        desktop.check()
        assert _screen(desktop).shape == (SMALL_SCREEN[1], SMALL_SCREEN[0], 3)
        assert desktop.client.execute(["true"]).returncode == 0


def test_four_desktops_have_no_cross_talk() -> None:
    desktops = [launch_desktop() for _ in range(4)]
    try:
        assert len({d.display for d in desktops}) == 4
        assert len({d.endpoint for d in desktops}) == 4
        for desktop in desktops:
            desktop.client.actions([{"kind": "move", "x": 100, "y": 100}])
        before = [_screen(d) for d in desktops]
        target = desktops[2]
        target.client.launch(
            ["xterm", "-title", "only-here", "-bg", "white", "-geometry", "60x20+0+0"]
        )
        wait_until(lambda: "only-here" in target.client.execute(["wmctrl", "-l"]).output)
        target.client.actions([{"kind": "move", "x": 900, "y": 600}])
        target.client.upload("~/mine.txt", b"2")
        wait_until(
            lambda: (_screen(target) != before[2]).any(), message="the target screen to change"
        )
        for index, desktop in enumerate(desktops):
            if desktop is target:
                continue
            assert (_screen(desktop) == before[index]).all(), f"desktop {index} changed"
            assert desktop.client.cursor_position() == (100, 100)
            assert "only-here" not in desktop.client.execute(["wmctrl", "-l"]).output
            assert _read(desktop, "~/mine.txt") is None
    finally:
        for desktop in desktops:
            desktop.close()
    assert all(processes.find_marked(d.marker) == [] for d in desktops)


def test_garbage_collected_desktop_stops_its_processes() -> None:
    desktop = launch_desktop()
    marker, root = desktop.marker, desktop.root
    assert processes.find_marked(marker)
    del desktop
    gc.collect()
    assert processes.wait_gone(processes.find_marked(marker), 10) == []
    assert not root.exists()


def test_killed_parent_leaves_no_process_behind(tmp_path) -> None:
    script = textwrap.dedent("""
        import json, sys, time
        from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig
        desktop = LocalProvider(LocalProviderConfig(screen_size=(640, 480))).launch()
        desktop.client.launch(["xterm"])
        print(json.dumps({"marker": desktop.marker, "root": str(desktop.root)}), flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(parent.stdout.readline())
        marker, root = info["marker"], info["root"]
        wait_until(lambda: len(processes.find_marked(marker)) >= 5, message="the desktop and xterm")
    finally:
        parent.kill()
        parent.wait()
    wait_until(
        lambda: processes.find_marked(marker) == [],
        timeout=20,
        message="the reaper to stop the orphaned desktop",
    )
    wait_until(lambda: not os.path.exists(root), message="the reaper to delete its folder")


def test_interpreter_exit_without_close_leaves_no_process() -> None:
    script = textwrap.dedent("""
        import json
        from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig
        desktop = LocalProvider(LocalProviderConfig(screen_size=(640, 480))).launch()
        desktop.client.launch(["xterm"])
        print(json.dumps({"marker": desktop.marker, "root": str(desktop.root)}), flush=True)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert processes.wait_gone(processes.find_marked(info["marker"]), 10) == []
    assert not os.path.exists(info["root"])


def test_failed_launch_reports_why_and_cleans_up() -> None:
    provider = LocalProvider(
        LocalProviderConfig(screen_size=SMALL_SCREEN, boot_timeout=10, window_manager=("false",))
    )
    with pytest.raises(ProviderError) as info:
        provider.launch()
    assert "wm" in str(info.value)
    assert provider.failed_launches == 1
    missing = LocalProvider(LocalProviderConfig(window_manager=("no-such-wm-binary",)))
    with pytest.raises(ProviderError, match="not installed"):
        missing.launch()


def test_make_provider_names() -> None:
    assert isinstance(make_provider(), LocalProvider)
    assert isinstance(make_provider("local"), LocalProvider)
    config = LocalProviderConfig(screen_size=(800, 600), session="minimal")
    assert make_provider(config).config is config
    # A config that leaves the session open gets a copy with it settled (no tasks: minimal).
    open_session = LocalProviderConfig(screen_size=(800, 600))
    settled = make_provider(open_session).config
    assert settled == dataclasses.replace(open_session, session="minimal")
    assert open_session.session is None
    with pytest.raises(ValueError, match="did you mean 'local'"):
        make_provider("locall")
