"""A `local` desktop is a guest: what its programs can reach, read and leave behind (issue 35).

Each test acts as a desktop program would (commands run through the guest, in the sandbox, as
the desktop's user) and checks what an optimizing agent must not get: host root, the host's
secrets, the driver's environment, the guest's token, another desktop's X server, or state
that outlives a reset.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from desktop_helpers import launch_desktop

from osworld_gym.errors import DesktopDiedError
from osworld_gym.providers import processes
from osworld_gym.providers.local import sandbox
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a root launcher's rules need root")


def _sh(desktop: LocalDesktop, command: str) -> tuple[int, str, str]:
    result = desktop.client.execute(command, shell=True)
    return result.returncode, result.output, result.error


@root_only
def test_a_root_launchers_desktop_is_an_unprivileged_guest() -> None:
    secret = Path("/root") / f"osworld-gym-secret-{uuid.uuid4().hex}"
    secret.write_text("host secret\n")
    try:
        with launch_desktop() as desktop:
            code, out, _ = _sh(desktop, "id -u; cat /proc/self/uid_map")
            assert code == 0
            uid, mapping = out.split("\n", 1)
            assert uid == "1000"  # OSWorld's user, inside
            # The desktop's uid, and (in the guest's namespace, where these commands run) the
            # guest's own: neither is root's.
            rows = sorted(tuple(map(int, line.split())) for line in mapping.splitlines())
            assert desktop.identity.dedicated
            assert rows == [(1000, desktop.identity.uid, 1), (1001, desktop.identity.guest_uid, 1)]
            # Kernel settings, the host's password hashes and root's files stay out of reach.
            code, _, err = _sh(desktop, "echo 1 > /proc/sys/kernel/core_uses_pid")
            assert code != 0 and "Permission denied" in err
            assert _sh(desktop, "cat /etc/shadow")[0] != 0
            assert _sh(desktop, f"cat {secret}")[0] != 0
            assert secret.name not in _sh(desktop, "ls -A /root")[1]
            # The files it makes are its uid's, not root's.
            assert _sh(desktop, "touch /home/user/mine")[0] == 0
            assert (desktop.home / "mine").stat().st_uid == desktop.identity.uid
    finally:
        secret.unlink()


def test_the_drivers_environment_stays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = uuid.uuid4().hex
    monkeypatch.setenv("OSWORLD_GYM_TEST_API_KEY", secret)
    with launch_desktop() as desktop:
        code, out, _ = _sh(desktop, "env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'")
        assert code == 0 and "DISPLAY=" in out
        assert secret not in out and "OSWORLD_GYM_TEST_API_KEY" not in out


def test_the_guests_token_is_found_nowhere_in_the_desktop() -> None:
    with launch_desktop() as desktop:
        token = desktop.token
        assert token
        guest = desktop.component_pid("guest")
        # Files, environments and command lines of every process the desktop can see. (The
        # token goes to grep in two halves through a pipe, so no command line holds it whole.)
        half = len(token) // 2
        code, out, _ = _sh(
            desktop,
            f"a='{token[:half]}'; b='{token[half:]}'; printf '%s%s\\n' \"$a\" \"$b\" | "
            "grep -rlsF --binary-files=text -f /dev/stdin /run /tmp /var/tmp /home /dev/shm "
            "/proc/[0-9]*/environ /proc/[0-9]*/cmdline; echo searched",
        )
        assert out.strip() == "searched"
        # The guest's memory is closed to the desktop's programs (it is not dumpable).
        pid = _sh(desktop, "pgrep -f osworld_gym.guest | head -1")[1].strip()
        assert pid
        for target in (f"/proc/{pid}/mem", f"/proc/{pid}/environ"):
            code, _, err = _sh(desktop, f"head -c 1 {target} > /dev/null")
            assert code != 0 and "Permission denied" in err, target
        # Nor can they trace it (PTRACE_ATTACH is 16).
        attach = f"import ctypes; print(ctypes.CDLL(None).ptrace(16, {pid}, 0, 0))"
        code, out, err = _sh(desktop, f'python3 -c "{attach}"')
        assert code == 0 and out.strip() == "-1", err
        with open(f"/proc/{guest}/status") as f:
            assert "TracerPid:\t0" in f.read()


def test_no_program_can_be_planted_on_path() -> None:
    with launch_desktop() as desktop:
        code, out, _ = _sh(
            desktop,
            "for d in $(echo $PATH | tr ':' ' '); do [ -w \"$d\" ] && echo writable $d; done;"
            " printf '#!/bin/sh\\necho 1\\n' > /run/osworld-gym/bin/cat; echo planted=$?",
        )
        assert "writable" not in out, out
        assert "planted=0" not in out
        assert _sh(desktop, "command -v cat")[1].strip() in ("/usr/bin/cat", "/bin/cat")


def test_a_reset_empties_every_folder_the_desktop_writes() -> None:
    with launch_desktop() as desktop:
        planted = [
            "/run/user/1000/planted",
            "/run/osworld-gym/guest/planted",
            "/dev/shm/planted",
            "/tmp/planted",
            "/var/tmp/planted",
            "/home/user/.planted",
        ]
        code, _, err = _sh(desktop, " && ".join(f"echo x > {path}" for path in planted))
        assert code == 0, err
        desktop.reset()
        code, out, _ = _sh(desktop, f"ls -d {' '.join(planted)} 2>/dev/null; echo listed")
        assert out.strip() == "listed"


def _x_answers(display: str, env: dict[str, str]) -> bool:
    done = subprocess.run(
        ["xdpyinfo", "-display", display], env=env, capture_output=True, timeout=30, check=False
    )
    return done.returncode == 0


def test_an_x_server_answers_its_own_desktop_only() -> None:
    first, second = launch_desktop(), launch_desktop()
    try:
        assert _sh(first, "xdpyinfo > /dev/null")[0] == 0  # its own, with its cookie
        # Another desktop's server: its socket file is not shown, and through the host's
        # abstract socket this desktop's cookie does not open it.
        code, out, _ = _sh(first, f"xdpyinfo -display {second.display} 2>&1")
        assert code != 0, out
        # Any other local user of the host, without a cookie, is refused too.
        env = {"PATH": os.defpath}
        if os.geteuid() == 0:
            nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            done = subprocess.run(
                [*nobody, "xdpyinfo", "-display", first.display],
                env=env,
                capture_output=True,
                timeout=30,
                check=False,
            )
            assert done.returncode != 0
        # The launcher itself is let in (resets and checks connect from the host).
        assert _x_answers(first.display, env)
    finally:
        first.close()
        second.close()


def test_a_reset_restores_the_x_servers_state() -> None:
    """Keymap, buttons, xset, resources, root properties, access list: as on a new desktop."""
    with launch_desktop() as desktop:
        probe = (
            "xmodmap -pk | grep -E '^ +38 '; xmodmap -pp | sed -n 5p; xhost | head -1; "
            "xset q | grep -E 'auto repeat:|bell percent|timeout'; "
            "xdpyinfo | grep dimensions; xrandr | sed -n 2,3p; "
            "xprop -root | grep -E '^(RESOURCE_MANAGER|CUT_BUFFER0|PLANTED)' || true"
        )
        fresh = _sh(desktop, probe)[1]
        code, _, err = _sh(
            desktop,
            "xmodmap -e 'pointer = 3 2 1' && xset r off b 0 s 300 && xhost + && "
            "printf 'planted: 1\\n' | xrdb -merge && "
            "xprop -root -f CUT_BUFFER0 8s -set CUT_BUFFER0 planted && "
            "xprop -root -f PLANTED 8s -set PLANTED x && "
            "{ xrandr --output screen --off; xrandr --fb 800x600; } 2>/dev/null; "
            "xdpyinfo | grep -q ' 800x600 pixels'",
        )
        assert code == 0, err
        assert _sh(desktop, probe)[1] != fresh
        x_server = desktop.component_pid("xvfb")
        desktop.reset()
        assert _sh(desktop, probe)[1] == fresh
        assert desktop.component_pid("xvfb") == x_server  # all restored on the same X server
        # A keymap change is undone too (by a new X server: the core mapping cannot be put
        # back exactly through XKB), so `a` types `a` again.
        assert _sh(desktop, "xmodmap -e 'keycode 38 = b B'")[0] == 0
        assert _sh(desktop, probe)[1] != fresh
        desktop.reset()
        assert _sh(desktop, probe)[1] == fresh


def test_a_stopped_guest_is_found_at_once_and_reset_recovers() -> None:
    """Stopped from the host (a root launcher's desktops cannot: see test_local_voiding)."""
    with launch_desktop() as desktop:
        host_pid = desktop.component_pid("guest")
        os.kill(host_pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while processes.state(host_pid) not in ("T", "t"):
            assert time.monotonic() < deadline, "the guest was never stopped"
            time.sleep(0.02)
        with pytest.raises(DesktopDiedError, match="guest"):
            desktop.check()
        start = time.monotonic()
        desktop.reset()
        assert time.monotonic() - start < 10  # not the client's timeouts and retries
        assert _sh(desktop, "echo ok")[1] == "ok\n"


def test_the_hosts_loopback_services_are_out_of_reach() -> None:
    """A service on the host's loopback (a model server, Ray's dashboard) is not the desktop's."""
    with socket.create_server(("127.0.0.1", 0)) as service:
        port = service.getsockname()[1]
        with launch_desktop() as desktop:
            assert desktop.private_network
            probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"
            code, _, err = _sh(desktop, f'python3 -c "{probe}"')
            assert code != 0 and "Connection refused" in err
            # Its own loopback works, and the host reaches the guest through the relay.
            code, out, _ = _sh(desktop, "python3 -c 'import socket; print(socket.gethostname())'")
            assert code == 0 and out.strip()
        with launch_desktop(network="host") as shared:
            assert not shared.private_network
            assert _sh(shared, f'python3 -c "{probe}"')[0] == 0


def test_the_bundled_suites_answers_are_masked() -> None:
    """The suites' task files and references, and the oracles, sit beside the library, which
    the desktop's Python needs shown: their folders are empty inside."""
    folders = sandbox.answer_folders()
    assert folders, "osworld_gym_envs is not installed"
    with launch_desktop() as desktop:
        for folder in folders:
            # Empty where the desktop's Python is shown (site-packages), absent elsewhere (an
            # editable checkout's envs/ is not shown at all).
            _, out, _ = _sh(desktop, f"ls -A {folder} 2>/dev/null")
            assert out == "", folder
        # The library itself is still there for the guest.
        assert _sh(desktop, "python3 -c 'import sys' && echo ok")[1] == "ok\n"


def test_a_task_that_needs_the_live_web_is_flagged_on_a_private_network() -> None:
    """No internet inside a private network (here: switched off): the reset says so instead
    of a silent zero."""
    from desktop_helpers import SMALL_SCREEN

    from osworld_gym.env import OSWorldEnv
    from osworld_gym.providers.local.provider import LocalProviderConfig

    task = {
        "id": "needs-the-web",
        "instruction": "Read the page.",
        "config": [{"type": "launch", "parameters": {"command": ["true", "https://example.com/"]}}],
        "evaluator": {"func": "infeasible"},
    }
    for network, flagged in (("private", True), ("host", False)):
        provider = LocalProviderConfig(screen_size=SMALL_SCREEN, network=network, internet=False)
        env = OSWorldEnv(tasks=[task], provider=provider, screen_size=SMALL_SCREEN)
        try:
            _, info = env.reset(options={"task_id": "needs-the-web"})
        finally:
            env.close()
        warned = [w for w in info["setup_warnings"] if "private network" in w]
        assert bool(warned) == flagged, info["setup_warnings"]


def test_the_folders_hiding_the_hosts_are_read_only() -> None:
    """Nothing can be kept in the empty folders over /root, /run, /home, nor in the root."""
    with launch_desktop() as desktop:
        for folder in ("/root", "/run", "/home", ""):
            code, _, err = _sh(desktop, f"touch {folder}/planted")
            assert code != 0 and "Read-only file system" in err, (folder, err)


def test_keys_the_guest_mapped_are_undone_without_a_new_x_server() -> None:
    """Typing a character the keymap lacks maps a spare key; a reset empties it again and
    starts a new guest (which forgets it), keeping the X server: no 2 s full restart."""
    with launch_desktop() as desktop:
        keymap = "xmodmap -pke | md5sum"
        fresh = _sh(desktop, keymap)[1]
        display, guest = desktop.display, desktop.component_pid("guest")
        xvfb = desktop.component_pid("xvfb")
        desktop.client.actions([{"kind": "type", "text": "ʬꙮ"}])
        assert _sh(desktop, keymap)[1] != fresh
        desktop.reset()
        assert _sh(desktop, keymap)[1] == fresh
        assert desktop.component_pid("xvfb") == xvfb and desktop.display == display
        assert desktop.component_pid("guest") != guest
        desktop.client.actions([{"kind": "type", "text": "ʬ"}])  # maps it again
        assert _sh(desktop, keymap)[1] != fresh
