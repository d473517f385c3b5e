"""The `local` desktop's sandbox: /home/user, private /tmp, a read-only host, sudo, wrappers.

Everything here runs real desktops (Xvfb, openbox, the guest in bubblewrap) and real programs.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request
import uuid
from pathlib import Path

import pytest
from desktop_helpers import launch_desktop, wait_until

from osworld_gym.providers import processes
from osworld_gym.providers.local import sandbox
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop


def _sh(desktop: LocalDesktop, command: str) -> tuple[int, str, str]:
    result = desktop.client.execute(command, shell=True)
    return result.returncode, result.output, result.error


def _host_state(path: Path) -> list[str] | None:
    """What the host has at ``path``: its entries (recursively), or None when it is missing."""
    if not path.exists():
        return None
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_home_user_tmp_and_var_tmp_are_the_desktops_own() -> None:
    name = f"osworld-gym-test-{uuid.uuid4().hex}"
    host_home_before = _host_state(Path("/home/user"))
    with launch_desktop() as desktop:
        code, out, err = _sh(
            desktop,
            f"id -un; echo $HOME; mkdir -p /home/user/Desktop/{name}/dir2 && "
            f"echo t > /tmp/{name} && echo v > /var/tmp/{name} && pwd",
        )
        assert code == 0, err
        assert out.split() == ["user", "/home/user", "/home/user"]
        assert (desktop.home / "Desktop" / name / "dir2").is_dir()
        assert (desktop.root / "tmp" / name).read_text() == "t\n"
        assert (desktop.root / "var-tmp" / name).read_text() == "v\n"
        assert not Path("/tmp", name).exists() and not Path("/var/tmp", name).exists()
        root = desktop.root
    assert _host_state(Path("/home/user")) == host_home_before
    assert not root.exists()


def test_the_host_is_read_only_and_other_homes_are_hidden() -> None:
    with launch_desktop() as desktop:
        # (The host's /tmp is not among them: the desktop's /tmp is its own.)
        for target in ("/etc/osworld-gym-x", "/usr/local/osworld-gym-x", f"{sys.prefix}/x"):
            code, _, err = _sh(desktop, f"touch {target}")
            assert code != 0 and "Read-only file system" in err, (target, err)
        code, out, _ = _sh(desktop, "ls -A /home; ls -A /run")
        assert out.split() == ["user", "osworld-gym", "user"]


def test_the_hosts_devices_cannot_be_removed_or_added_to() -> None:
    name = f"osworld-gym-test-{uuid.uuid4().hex}"
    null_before = Path("/dev/null").stat()
    with launch_desktop() as desktop:
        code, out, err = _sh(
            desktop,
            f"echo x > /dev/null && head -c 4 /dev/urandom | wc -c; "
            f"rm -f /dev/null; mv /dev/zero /dev/{name}; touch /dev/{name}-new; "
            # The sandbox's init has a /dev too, which its programs reach through /proc/1/root.
            f"touch /proc/1/root/dev/{name}-init; rm -f /proc/1/root/dev/null; "
            # Other desktops' X sockets (and the host's) stay out of reach too.
            f"touch /tmp/.X11-unix/{name}; "
            "python3 -c 'import pty, os; pid, fd = pty.fork(); os._exit(0) if pid == 0 else 0'"
            " && echo pty-ok",
        )
        assert out.split()[0] == "4" and "pty-ok" in out, (out, err)
    null_after = Path("/dev/null").stat()
    assert (null_after.st_ino, null_after.st_rdev) == (null_before.st_ino, null_before.st_rdev)
    assert Path("/dev/zero").is_char_device()
    for leftover in (name, f"{name}-new", f"{name}-init"):
        assert not Path("/dev", leftover).exists()
    assert not Path("/tmp/.X11-unix", name).exists()


def test_reset_empties_tmp_and_restores_home() -> None:
    with launch_desktop() as desktop:
        assert _sh(desktop, "touch /tmp/a /var/tmp/b /home/user/c")[0] == 0
        desktop.reset()
        code, out, _ = _sh(desktop, "ls -A /tmp /var/tmp; ls /home/user")
        assert code == 0
        assert "a" not in out.split() and "b" not in out.split() and "c" not in out.split()
        assert "Desktop" in out.split()


def test_two_desktops_see_different_home_and_processes() -> None:
    first, second = launch_desktop(), launch_desktop()
    try:
        for index, desktop in enumerate((first, second)):
            assert _sh(desktop, f"echo {index} > /home/user/who.txt")[0] == 0
            desktop.client.launch(["xterm", "-title", f"mine-{index}"])
        for index, desktop in enumerate((first, second)):
            assert desktop.client.download("/home/user/who.txt") == f"{index}\n".encode()
            wait_until(lambda d=desktop, i=index: f"mine-{i}" in _sh(d, "wmctrl -l")[1])
        # As on separate VMs: pkill in one desktop stops only that desktop's program.
        _sh(first, "pkill -x xterm")
        wait_until(lambda: "mine-0" not in _sh(first, "wmctrl -l")[1], message="xterm to stop")
        assert "mine-1" in _sh(second, "wmctrl -l")[1]
        assert "xterm" in _sh(second, "ps -eo comm")[1].split()
    finally:
        first.close()
        second.close()


def test_sudo_takes_osworlds_password_and_grants_nothing_more() -> None:
    with launch_desktop() as desktop:
        code, out, err = _sh(desktop, "echo password | sudo -S id -un")
        assert (code, out) == (0, "user\n") and "[sudo] password for user" in err
        code, out, _ = _sh(desktop, "sudo -n true && echo cached")  # remembered, as sudo does
        assert (code, out) == (0, "cached\n")
        code, _, err = _sh(desktop, "sudo -k; echo wrong | sudo -S true")
        assert code == 1 and "incorrect password" in err
        code, _, err = _sh(desktop, "sudo -n true")
        assert code == 1 and "a password is required" in err
        code, _, err = _sh(desktop, "echo password | sudo -S touch /etc/osworld-gym-x")
        assert code != 0 and "Read-only file system" in err
        # OSWorld's setups install tools with apt: present ones succeed, missing ones fail.
        code, out, _ = _sh(desktop, "echo password | sudo -S apt-get install -y jq bc")
        assert code == 0 and "jq is already the newest version." in out
        code, _, err = _sh(desktop, "echo password | sudo -S apt install -y no-such-package-x")
        assert code == 100 and "no-such-package-x" in err
        assert _sh(desktop, "echo password | sudo -S apt-get update -y")[0] == 0


def test_ctrl_alt_t_opens_gnome_terminal_whose_text_is_readable() -> None:
    with launch_desktop() as desktop:
        desktop.client.actions([{"kind": "hotkey", "keys": ["ctrl", "alt", "t"]}])
        wait_until(lambda: "Terminal" in _sh(desktop, "wmctrl -l")[1], message="a terminal")
        assert "gnome-terminal-" in _sh(desktop, "ps -eo comm")[1]
        desktop.client.activate_window("Terminal")
        desktop.client.actions([{"kind": "type", "text": "echo sandbox-$((6*7))\n"}])
        wait_until(
            lambda: "sandbox-42" in (desktop.client.terminal_output() or ""),
            message="the terminal's text through /terminal",
        )
        assert "user@" in desktop.client.terminal_output()


def test_thunderbird_gets_the_window_class_osworlds_tasks_close() -> None:
    # OSWorld's Thunderbird tasks close "Mail.thunderbird" by class in postconfig; Debian's
    # build names its class "thunderbird-default" unless the remoting name says otherwise.
    with launch_desktop() as desktop:
        assert _sh(desktop, "echo $MOZ_APP_REMOTINGNAME")[1].strip() == "thunderbird"


def _read_line(port: int) -> bytes | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            return conn.recv(100)
    except OSError:
        return None


def test_socat_forwards_osworlds_ports_to_the_desktops_own() -> None:
    with launch_desktop() as desktop:
        ports = desktop.service_ports
        assert len(set(ports.values())) == 3 and 9222 not in ports.values()
        env = _sh(desktop, "echo $OSWORLD_GYM_PORT_9222 $OSWORLD_GYM_PORT_1337")[1].split()
        assert env == [str(ports["cdp"]), str(ports["chrome_debugging"])]
        # Stands for Chrome's debugging port, inside the desktop as Chrome would be; the task's
        # own socat line forwards 9222 to 1337; the host reads CDP's port through the relay.
        answer = (
            "import socket\n"
            f"server = socket.create_server(('127.0.0.1', {ports['chrome_debugging']}))\n"
            "while True:\n"
            "    conn, _ = server.accept()\n"
            "    conn.sendall(b'from-1337\\n'); conn.close()\n"
        )
        desktop.client.launch(["python3", "-c", answer])
        desktop.client.launch("socat tcp-listen:9222,fork tcp:localhost:1337", shell=True)
        wait_until(lambda: _read_line(ports["cdp"]) == b"from-1337\n", message="socat")


def test_google_chrome_runs_chromium_with_chromes_profile_and_the_desktops_port() -> None:
    with launch_desktop() as desktop:
        desktop.client.launch(["google-chrome", "--remote-debugging-port=1337"])
        desktop.client.launch(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
        url = desktop.service_urls["cdp"] + "/json/version"

        def version() -> dict | None:
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    return json.load(answer)
            except OSError:
                return None

        info = wait_until(version, timeout=60, message="Chromium's DevTools through socat")
        assert "Chrome" in info["Browser"]
        # The browser process is named `chrome`, as on OSWorld's VM (tasks run `pkill chrome`).
        assert _sh(desktop, "pgrep -x chrome")[0] == 0
        assert (desktop.home / ".config" / "google-chrome").is_dir()
        # Presented as Google Chrome: the window title OSWorld's tasks activate, Chrome's class.
        windows = wait_until(
            lambda: "Google Chrome" in (listed := _sh(desktop, "wmctrl -lx")[1]) and listed,
            timeout=30,
            message="a window titled Google Chrome",
        )
        assert "google-chrome.Google-chrome" in windows and "Chromium" not in windows, windows
        # Chromium writes its process titles over its environment, marker included: its
        # processes are the desktop's as descendants, and a reset stops every one of them (one
        # that outlived it held the debugging port the next task's browser needs).
        browser = [pid for pid in desktop.pids() if processes.command_name(pid) == b"chrome"]
        assert len(browser) >= 3  # the browser, its zygotes, renderers...
        assert any(
            processes.marker_entry(desktop.marker) not in Path(f"/proc/{pid}/environ").read_bytes()
            for pid in browser
        )
        desktop.reset()
        assert processes.wait_gone(browser, 0) == []
        assert _nothing_answers(desktop.service_ports["chrome_debugging"])


def _nothing_answers(port: int) -> bool:
    """Whether no program listens on ``port`` of the desktop (seen from the host).

    On a private network the relay takes the connection and closes it at once when nothing
    listens inside; on the host's network the connection is refused.
    """
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.settimeout(2)
            return conn.recv(1) == b""
    except OSError:
        return True


def test_sandbox_probe_reports_how_it_works() -> None:
    support = sandbox.probe()
    assert support.ok, support.detail
    assert support.mode in ("root", "user namespaces")


def test_a_python_under_a_hidden_folder_still_runs_the_desktop(tmp_path: Path) -> None:
    """A venv under /tmp (or /home/<you>) is hidden by the sandbox's own /tmp and /home; the
    desktop's processes still find it, read-only, and keep it over resets."""
    venv = Path(tempfile.mkdtemp(prefix="osworld-gym-venv-", dir="/tmp"))
    # Readable by all, as `python -m venv` makes one: under a root launcher the desktop runs
    # as a uid of its own (mkdtemp's folder is root's alone; that one is refused up front).
    venv.chmod(0o755)
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
            check=True,
            timeout=120,
        )
        python = str(venv / "bin" / "python")
        with launch_desktop(python=python) as desktop:
            for _ in range(2):
                code, out, err = _sh(desktop, "ps -eo args | grep -c '[o]sworld_gym.guest'")
                assert (code, out) == (0, "1\n"), err
                assert _sh(desktop, f"test -x {python} && ! touch {venv}/x")[0] == 0
                desktop.reset()
    finally:
        shutil.rmtree(venv, ignore_errors=True)
