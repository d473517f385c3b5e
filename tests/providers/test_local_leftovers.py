"""Nothing of a killed driver stays: its desktops' processes, their folders, its env's folder.

The driver is a real process with four real ``local`` desktops (one of them an env's, which has
scored an episode and so made its evaluation folder), killed with SIGKILL; then a provider
starts in the test process. Two ways to die: the driver alone (its desktops' watchdogs see it
go and clean up everything, the env's folder included) and the driver with its children (what
Ray does to a dead worker, or a tree kill: the watchdogs and X servers die too, the sandboxes
live on, and only the next provider start can clean up).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from desktop_helpers import launch_desktop, wait_until

from osworld_gym.providers import processes
from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

SCREEN = (640, 480)
DRIVER = textwrap.dedent("""
    import json, sys, time
    from osworld_gym.env import OSWorldEnv
    from osworld_gym.providers.local.provider import LocalProviderConfig

    screen = (int(sys.argv[1]), int(sys.argv[2]))
    still = {"id": "still", "instruction": "x", "config": [], "evaluator": {"func": "infeasible"}}
    env = OSWorldEnv(LocalProviderConfig(screen_size=screen), tasks=[still], screen_size=screen)
    env.reset(options={"task_id": "still"})
    env.step("Action: finished()")  # scored: the env has made its evaluation folder
    others = [env.provider.launch() for _ in range(3)]
    print(json.dumps([d.marker for d in others]), flush=True)
    time.sleep(600)
""")


def _start_driver(temp: Path, log: Path) -> subprocess.Popen[str]:
    """The driver, with ``temp`` as its temp folder (desktops and env folders go there)."""
    env = dict(os.environ, TMPDIR=str(temp))
    with open(log, "w") as err:
        return subprocess.Popen(
            [sys.executable, "-c", DRIVER, *map(str, SCREEN)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _leftovers(temp: Path) -> list[Path]:
    """What ``temp`` holds but the port reservations' folder, which every run shares."""
    return [path for path in temp.iterdir() if path.name != "osworld-gym-ports"]


def _owned(temp: Path) -> dict[Path, dict]:
    """The folders in ``temp`` that carry an ownership record, with the record."""
    found = {}
    for folder in temp.iterdir():
        record = processes.read_owner(folder)
        if record is not None:
            found[folder] = record
    return found


@pytest.mark.desktop
@pytest.mark.parametrize(
    # The default suite keeps the case only the next provider start can clean up.
    "kill",
    [pytest.param("driver", marks=pytest.mark.slow), "driver and its children"],
)
def test_killed_driver_leaves_no_process_and_no_folder(tmp_path: Path, kill: str) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    log = tmp_path / "driver.log"
    driver = _start_driver(temp, log)
    reapers: list[int] = []
    try:
        line = driver.stdout.readline()
        assert line, f"the driver failed:\n{log.read_text()}"
        owned = _owned(temp)
        markers = {r["marker"] for r in owned.values() if r["marker"]}
        assert set(json.loads(line)) < markers and len(markers) == 4
        assert any(folder.name.startswith("osworld-gym-eval-") for folder in owned)
        assert all(r["pid"] == driver.pid for r in owned.values())
        assert all(processes.find_marked(marker) for marker in markers)
        children = processes.children(driver.pid)
        reapers = [pid for pid in children if b"providers.reaper" in _command_line(pid)]
        assert len(reapers) == 4
        if kill != "driver":  # the watchdogs, X servers and sandboxes' outer bwraps
            for pid in children:
                os.kill(pid, signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
    # The X servers' sockets in the host's /tmp (those killed with SIGKILL leave them).
    x_files = [record["x_server"]["socket"] for record in owned.values() if "x_server" in record]
    assert len(x_files) == 4

    if kill == "driver":
        # The watchdogs saw it die: they remove its desktops and its env's folder on their own.
        wait_until(
            lambda: not any(folder.exists() for folder in owned),
            message="the watchdogs to remove the dead driver's folders",
        )

    provider = LocalProvider(LocalProviderConfig(screen_size=SCREEN, work_dir=str(temp)))

    assert all(processes.find_marked(marker) == [] for marker in markers)
    assert not any(folder.exists() for folder in owned)
    # A socket bound now is another desktop's: a new X server may take a free display at once.
    assert not [p for p in x_files if os.path.lexists(p) and p not in processes.bound_sockets()]
    with provider.launch() as desktop:  # the new run is unharmed, and only it is there
        desktop.check()
        assert _leftovers(temp) == [desktop.root]
    assert _leftovers(temp) == []
    # Watchdogs that outlived the driver finish their own sweep and exit.
    wait_until(lambda: processes.wait_gone(reapers, 0) == [], message="the watchdogs to exit")


# --- apps' temp files without a sandbox ----------------------------------------------------

_APP = """
import socket, sys, tempfile, time
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])  # a fixed /tmp path, as LibreOffice's single-instance pipe
server.listen()
tempfile.mkstemp()
time.sleep(600)
"""


@pytest.mark.desktop
def test_apps_temp_files_stay_in_the_desktops_folder_without_a_sandbox() -> None:
    host_socket = f"/tmp/owg-test-{uuid.uuid4().hex[:12]}"
    with launch_desktop(sandbox=False) as desktop:
        where = [sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"]
        assert desktop.client.execute(where).output.strip() == str(desktop.tmp_dir)
        desktop.client.launch([sys.executable, "-c", _APP, host_socket])
        wait_until(
            lambda: os.path.exists(host_socket) and any(desktop.tmp_dir.iterdir()),
            message="the app's socket and temp file",
        )
        desktop.reset()  # apps are killed with SIGKILL: they clean nothing themselves
        assert not os.path.lexists(host_socket)
        assert list(desktop.tmp_dir.iterdir()) == []
        root = desktop.root
    assert not root.exists()


@pytest.mark.desktop
@pytest.mark.apps
def test_libreoffice_leaves_nothing_in_the_hosts_temp_folder_without_a_sandbox() -> None:
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed (scripts/install_system_deps.sh)")
    with launch_desktop(sandbox=False) as desktop:
        desktop.client.launch(["soffice", "--calc"])
        pipes = wait_until(
            lambda: {p for p in processes.socket_paths(desktop.pids()) if "OSL_PIPE" in p},
            timeout=60,
            message="LibreOffice's pipe",
        )
        assert all(path.startswith("/tmp/") for path in pipes)  # not TMPDIR: fixed
        wait_until(
            lambda: any(p.name.startswith("lu") for p in desktop.tmp_dir.iterdir()),
            timeout=60,
            message="LibreOffice's temp folder, in the desktop's",
        )
        desktop.reset()
        assert not any(os.path.lexists(path) for path in pipes)
        assert list(desktop.tmp_dir.iterdir()) == []


# --- the sweep's safety rules, on folders made here ----------------------------------------


def _dead_owner_folder(parent: Path, marker: str | None = None) -> Path:
    """A folder recorded as made by a process that has exited since."""
    folder = processes.make_owned_folder(parent=parent, marker=marker)
    gone = subprocess.Popen(["sleep", "600"])
    start = processes.start_time(gone.pid)
    gone.kill()
    gone.wait()
    _edit_record(folder, pid=gone.pid, start=start)
    return folder


def _marked_sleep(marker: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, **{processes.MARKER_VARIABLE: marker})
    return subprocess.Popen(["sleep", "600"], env=env)


def test_dead_owners_folder_goes_with_its_processes(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    sleeper = _marked_sleep(marker)
    try:
        folder = _dead_owner_folder(tmp_path, marker)
        (folder / "locked").mkdir()
        (folder / "locked" / "file").write_text("x")
        (folder / "locked").chmod(0o500)  # what an app may leave: no write permission
        assert processes.remove_dead_folders(tmp_path) == [folder]
        assert not folder.exists()
        assert sleeper.wait(timeout=10) is not None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_live_or_foreign_folders_are_never_touched(tmp_path: Path) -> None:
    mine = processes.make_owned_folder(parent=tmp_path)  # this process is alive
    unrecorded = tmp_path / "osworld-gym-being-made"  # a record not written yet
    unrecorded.mkdir()
    other_prefix = _dead_owner_folder(tmp_path)
    other_prefix = other_prefix.rename(tmp_path / "someone-else")
    foreign = _dead_owner_folder(tmp_path)
    (foreign / processes.OWNER_FILE).write_text(json.dumps({"pid": 1, "kind": "another tool"}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = _dead_owner_folder(elsewhere)
    link = tmp_path / "osworld-gym-link"
    link.symlink_to(target)
    elsewhere_host = _dead_owner_folder(tmp_path)
    _edit_record(elsewhere_host, host=socket.gethostname() + "-other")
    other_namespace = _dead_owner_folder(tmp_path)
    _edit_record(other_namespace, pid_namespace=-1)
    kept = [mine, unrecorded, other_prefix, foreign, link, elsewhere_host, other_namespace]

    assert processes.remove_dead_folders(tmp_path) == []
    assert all(os.path.lexists(path) for path in kept)
    assert processes.remove_dead_folders(elsewhere) == [target]  # the link's target, swept there


def _edit_record(folder: Path, **fields: object) -> None:
    record = processes.read_owner(folder)
    assert record is not None
    processes.write_owner(folder, {**record, **fields})


def test_a_reused_pid_or_another_boot_is_no_owner(tmp_path: Path) -> None:
    reused = processes.make_owned_folder(parent=tmp_path)
    _edit_record(reused, start="0")  # this process's PID, another process's start time
    rebooted = processes.make_owned_folder(parent=tmp_path)
    _edit_record(rebooted, boot="an earlier boot")
    assert sorted(processes.remove_dead_folders(tmp_path)) == sorted([reused, rebooted])


def test_a_dead_x_servers_socket_goes_a_bound_one_stays(tmp_path: Path) -> None:
    x_dir = tmp_path / "x"
    x_dir.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(x_dir / "X1"))  # bound: a live server's
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(x_dir / "X2"))
    stale.close()  # the file stays, as after a SIGKILL
    try:
        folders = []
        for number in (1, 2):
            folder = _dead_owner_folder(tmp_path)
            # The exited owner's PID stands for the dead server's.
            record = processes.read_owner(folder)
            assert record is not None
            _edit_record(
                folder,
                x_server={
                    "pid": record["pid"],
                    "start": record["start"],
                    "lock": str(x_dir / f".X{number}-lock"),
                    "socket": str(x_dir / f"X{number}"),
                },
            )
            folders.append(folder)
        (x_dir / ".X2-lock").write_text(f"{record['pid']:10d}\n")
        assert sorted(processes.remove_dead_folders(tmp_path)) == sorted(folders)
        assert (x_dir / "X1").exists()
        assert not (x_dir / "X2").exists() and not (x_dir / ".X2-lock").exists()
    finally:
        listener.close()
