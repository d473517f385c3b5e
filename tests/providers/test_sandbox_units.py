"""The sandbox's command lines, identity files and command wrappers, without a desktop."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from desktop_helpers import wait_until
from pak_files import make_pak, read_pak

from osworld_gym.guest import identity as guest_identity
from osworld_gym.providers.desktop import bin as desktop_bin
from osworld_gym.providers.desktop.bin import CHROME_LINK, available_wrappers, install_wrappers
from osworld_gym.providers.local import sandbox, split_identity
from osworld_gym.providers.local.environment import passed_through, search_path
from osworld_gym.providers.local.identity import DEDICATED_UID_BASE, HostIdentity


def _folders(root: Path) -> sandbox.SandboxFolders:
    return sandbox.SandboxFolders(
        home=root / "home",
        tmp=root / "tmp",
        var_tmp=root / "vt",
        state=root / "s",
        runtime=root / "r",
    )


def _pairs(argv: list[str], flag: str) -> dict[str, str]:
    """Destination -> source of every ``flag SRC DEST`` in a bwrap command line."""
    return {argv[i + 2]: argv[i + 1] for i, word in enumerate(argv) if word == flag}


def test_the_first_process_makes_the_namespaces_and_the_others_join_them(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    first = sandbox.wrap(["init"], folders, join=None)
    assert first[:8] == ["bwrap", "--unshare-user", "--uid", "1000", "--gid", "1000",
                         "--unshare-pid", "--as-pid-1"]  # fmt: skip
    assert first[-2:] == ["--", "init"]
    joined = sandbox.wrap(["app", "--x"], folders, join=sandbox.Namespaces(user=7, pid=9))
    assert joined[:5] == ["bwrap", "--userns", "7", "--pidns", "9"]
    assert "--unshare-user" not in joined and joined[-3:] == ["--", "app", "--x"]
    # Both see the same mounts: the desktop's folders over OSWorld's paths, the host read-only.
    for argv in (first, joined):
        assert _pairs(argv, "--ro-bind")["/usr"] == "/usr" and "/" not in _pairs(argv, "--ro-bind")
        binds = _pairs(argv, "--bind")
        assert binds["/home/user"] == str(folders.home) and binds["/tmp"] == str(folders.tmp)
        assert binds["/var/tmp"] == str(folders.var_tmp)
        assert binds["/run/user/1000"] == str(folders.runtime)
        # The state folder (wrappers, identity files, X cookie) is read-only; only the
        # guest's own folder in it can be written.
        assert binds["/run/osworld-gym"] == str(folders.state)
        assert argv[argv.index("--remount-ro") + 1] == "/run/osworld-gym"
        assert binds["/run/osworld-gym/guest"] == str(folders.state / "guest")
        assert argv[argv.index("--chdir") + 1] == "/home/user"


def test_a_root_launcher_runs_the_desktop_as_an_unprivileged_uid_of_its_own(
    tmp_path: Path,
) -> None:
    """bubblewrap lays out the mounts as root; the program runs as the desktop's host uid."""
    folders = _folders(tmp_path)
    identity = HostIdentity(DEDICATED_UID_BASE + 7, DEDICATED_UID_BASE + 7, dedicated=True)
    first = sandbox.wrap(["init"], folders, join=None, identity=identity)
    assert first[1:4] == ["--unshare-pid", "--as-pid-1", "--ro-bind"]
    assert "--unshare-user" not in first
    drop = first[first.index("--") + 1 :]
    assert drop[:3] == ["setpriv", f"--reuid={identity.uid}", f"--regid={identity.gid}"]
    assert "--clear-groups" in drop and "--bounding-set=-all" in drop and drop[-1] == "init"
    joined = sandbox.wrap(["app"], folders, join=sandbox.Namespaces(None, 9), identity=identity)
    assert joined[1:3] == ["--pidns", "9"] and "--userns" not in joined
    program = joined[joined.index("--") + 1 :]
    unshare = program.index("unshare")
    assert program[unshare:] == [
        "unshare", "--user", "--map-user=1000", "--map-group=1000", "--", "app",
    ]  # fmt: skip
    assert HostIdentity.for_desktop(7).dedicated == (os.geteuid() == 0)


def test_a_root_launchers_guest_gets_a_split_identity(tmp_path: Path) -> None:
    """The guest: a user namespace mapping its own uid too (split_identity), not setpriv."""
    folders = _folders(tmp_path)
    identity = HostIdentity(
        DEDICATED_UID_BASE + 7, DEDICATED_UID_BASE + 7, dedicated=True, guest_uid=1 << 30
    )
    guest = ["/venv/bin/python", "-m", "osworld_gym.guest"]
    joined = sandbox.wrap(
        guest, folders, join=sandbox.Namespaces(None, 9), identity=identity, as_guest=True
    )
    program = joined[joined.index("--") + 1 :]
    assert program[:2] == ["/venv/bin/python", "-I"]
    assert program[2].endswith("osworld_gym/providers/local/split_identity.py")
    assert program[3:6] == [f"--desktop={identity.uid}:{identity.gid}", f"--guest={1 << 30}", "--"]
    assert program[6:] == guest and "setpriv" not in program
    # The guest's own uid inside is the one the guest takes (two modules, one number).
    assert split_identity.INSIDE_GUEST_UID == guest_identity.INSIDE_GUEST_UID
    # Not root: the same setpriv and user namespace as every other program.
    plain = HostIdentity(os.getuid(), os.getgid(), dedicated=False)
    assert sandbox.wrap(guest, folders, join=sandbox.Namespaces(3, 9), identity=plain,
                        as_guest=True)[-3:] == guest  # fmt: skip


def test_a_process_not_started_for_a_split_identity_keeps_its_own() -> None:
    assert guest_identity.take_split_identity() is False
    assert guest_identity.desktop_user() == {}
    assert os.getresuid()[0] == os.getresuid()[2]


def test_host_folders_are_hidden_and_the_python_shown_reachable(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    argv = sandbox.wrap(
        ["app"],
        folders,
        join=None,
        keep_visible=("/root/.pyenv/versions/3.11.7",),
        hidden=("/home", "/root", "/tmp"),
        x_socket="/tmp/.X11-unix/X5",
    )
    tmpfs = [argv[i + 1] for i, word in enumerate(argv) if word == "--tmpfs"]
    assert {"/home", "/root", "/tmp"} <= set(tmpfs)
    # The folders between /root and the Python are made open, then the Python is shown.
    text = " ".join(argv)
    assert "--perms 0755 --dir /root/.pyenv --perms 0755 --dir /root/.pyenv/versions" in text
    ro_binds = _pairs(argv, "--ro-bind")
    assert ro_binds["/root/.pyenv/versions/3.11.7"] == "/root/.pyenv/versions/3.11.7"
    # Only this desktop's X socket, not the folder of every server's.
    assert ro_binds["/tmp/.X11-unix/X5"] == "/tmp/.X11-unix/X5"
    assert "/tmp/.X11-unix" not in ro_binds


def test_the_drivers_folders_are_hidden_but_never_a_system_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    hidden = sandbox.hidden_folders([str(project), "/", "/usr/lib", "/opt", "/etc"])
    # tmp_path lives under /tmp, hidden whole already.
    assert str(project) not in hidden and "/tmp" in hidden and "/root" in hidden
    assert not {"/", "/usr/lib", "/opt", "/etc"} & set(hidden)
    assert sandbox.hidden_folders(["/srv/project"]) == sandbox.hidden_folders()
    outside = Path("/var/lib") if Path("/var/lib").is_dir() else None
    if outside is not None:  # under /var, a system folder: its apps' data stays
        assert str(outside) not in sandbox.hidden_folders([str(outside)])


def test_the_desktop_environment_is_an_allowlist() -> None:
    driver = {
        "PATH": "/usr/bin:/home/user/bin::relative:/tmp/planted:/bin",
        "LANG": "C.UTF-8",
        "LC_TIME": "C",
        "OPENAI_API_KEY": "sk-secret",
        "RAY_AUTH_TOKEN": "t",
        "OSWORLD_GYM_SUDO_PASSWORD": "host's",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    seen = passed_through(driver)
    assert set(seen) == {"PATH", "LANG", "LC_TIME"}
    path = search_path(seen["PATH"], ("/home/user", "/tmp"), first="/run/osworld-gym/bin")
    assert path == "/run/osworld-gym/bin:/usr/bin:/bin"


def test_identity_files_name_osworlds_user(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    folders.create()
    passwd = (folders.state / "passwd").read_text().splitlines()
    assert "user:x:1000:1000:user:/home/user:/bin/bash" in passwd
    assert [line for line in passwd if line.split(":")[2] == "1000"] == [passwd[-1]]
    assert any(line.startswith("root:") for line in passwd)  # the host's users stay
    group = (folders.state / "group").read_text().splitlines()
    assert group[-1] == "user:x:1000:" and sum(g.split(":")[2] == "1000" for g in group) == 1
    assert oct(folders.tmp.stat().st_mode & 0o7777) == "0o1777"


def _fake_root(root: Path, programs: list[str]) -> None:
    for program in programs:
        path = root / program.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    (root / "usr/lib/chromium/resources.pak").parent.mkdir(parents=True, exist_ok=True)
    (root / "usr/lib/chromium/resources.pak").write_text("pak")
    (root / "usr/lib/chromium/locales").mkdir()
    for locale in ("en-US", "de"):
        pack = make_pak({956: b"$1 - Chromium"}, {})
        (root / f"usr/lib/chromium/locales/{locale}.pak").write_bytes(pack)


def test_wrappers_are_installed_only_for_programs_that_exist(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _fake_root(root, ["/usr/bin/socat"])
    assert available_wrappers(str(root)) == ["socat", "sudo"]
    target = tmp_path / "bin"
    assert install_wrappers(target, str(root), exclude=("sudo",)) == ["socat"]
    assert sorted(p.name for p in target.iterdir()) == ["socat"]
    assert os.access(target / "socat", os.X_OK)
    assert (target / "socat").read_text().startswith("#!/bin/sh")


def test_chrome_gets_chromes_program_name_in_both_layouts(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _fake_root(root, ["/usr/lib/chromium/chromium"])
    # A sandbox mounts Chromium's program on an empty file beside links to its resources.
    mounted = tmp_path / "mounted"
    assert "google-chrome-stable" in install_wrappers(mounted, str(root), chrome="mount")
    assert (mounted / "google-chrome-stable").readlink() == Path("google-chrome")
    assert (mounted / CHROME_LINK).stat().st_size == 0
    resources = mounted / CHROME_LINK.parent / "resources.pak"
    assert resources.readlink() == Path("/usr/lib/chromium/resources.pak")
    assert not (mounted / CHROME_LINK.parent / "chromium").exists()
    # Its locale pack says Google Chrome (window titles); other languages are Chromium's own.
    locales = mounted / CHROME_LINK.parent / "locales"
    assert read_pak((locales / "en-US.pak").read_bytes())[0] == {956: b"$1 - Google Chrome"}
    assert (locales / "de.pak").readlink() == Path("/usr/lib/chromium/locales/de.pak")
    assert b"Chromium" in (root / "usr/lib/chromium/locales/en-US.pak").read_bytes()
    # Installed again (a desktop's restart) over what is there.
    install_wrappers(mounted, str(root), chrome="mount")
    assert read_pak((locales / "en-US.pak").read_bytes())[0] == {956: b"$1 - Google Chrome"}
    # An image gets a hard link named `chrome` beside Chromium's program, and every pack of
    # its own Chromium rebranded.
    linked = tmp_path / "linked"
    install_wrappers(linked, str(root), chrome="link")
    assert (linked / CHROME_LINK).readlink() == Path("/usr/lib/chromium/chrome")
    assert (root / "usr/lib/chromium/chrome").samefile(root / "usr/lib/chromium/chromium")
    for locale in ("en-US", "de"):
        pack = (root / f"usr/lib/chromium/locales/{locale}.pak").read_bytes()
        assert read_pak(pack)[0] == {956: b"$1 - Google Chrome"}


def test_a_pack_it_cannot_read_leaves_chromiums_name(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _fake_root(root, ["/usr/lib/chromium/chromium"])
    (root / "usr/lib/chromium/locales/en-US.pak").write_bytes(b"not a pack")
    mounted = tmp_path / "mounted"
    install_wrappers(mounted, str(root), chrome="mount")
    pack = mounted / CHROME_LINK.parent / "locales" / "en-US.pak"
    assert pack.readlink() == Path("/usr/lib/chromium/locales/en-US.pak")


def _time_wait_port() -> int:
    """A loopback port left with a connection in TIME_WAIT (its server closed first)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            conn, _ = listener.accept()
            conn.close()  # the server's side closes first: it ends in TIME_WAIT
            assert client.recv(1) == b""
    with pytest.raises(OSError), socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # a plain bind (no SO_REUSEADDR) is refused
    return port


def _hello(port: int) -> bytes | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            return conn.recv(100)
    except OSError:
        return None


@pytest.mark.skipif(shutil.which("socat") is None, reason="no socat")
def test_socat_wrapper_listens_on_a_port_whose_old_connections_linger() -> None:
    """A reset kills a task's socat; the next task's socat binds the same port at once."""
    port = _time_wait_port()
    wrapper = Path(desktop_bin.__file__).parent / "socat"
    env = {**os.environ, "OSWORLD_GYM_PORT_9222": str(port)}
    proc = subprocess.Popen(
        ["sh", str(wrapper), "tcp-listen:9222,fork", "SYSTEM:echo hello"],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: _hello(port) or proc.poll() is not None, message="socat")
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert _hello(port) == b"hello\n"
    finally:
        proc.kill()
        proc.wait(5)
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_an_ordinary_user_gets_the_same_sandbox_through_user_namespaces() -> None:
    """The sandbox as `nobody` would run it: unprivileged user namespaces, no root at all."""
    with tempfile.TemporaryDirectory(prefix="osworld-gym-nobody-") as work:
        _run_as_nobody(Path(work))


def _run_as_nobody(work: Path) -> None:
    work.chmod(0o755)  # pytest's own temp folders are root's alone
    folders = _folders(work / "desktop")
    folders.create()
    for path in [work / "desktop", *(work / "desktop").rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)
    script = "id -un; echo hi > /home/user/f && cat /home/user/f; touch /etc/x 2>&1; ps -eo comm"
    argv = sandbox.wrap(["sh", "-c", script], folders, join=None, bwrap=sandbox.bwrap_path() or "")
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines[:2] == ["user", "hi"], done.stdout + done.stderr
    assert "Read-only file system" in lines[2]
    assert lines[3:] == ["COMMAND", "sh", "ps"]  # its own PID namespace
    assert (folders.home / "f").stat().st_uid == 65534  # the files are the user's own


def test_hidden_paths_keeps_the_outermost_existing_ones_under_private_folders() -> None:
    with tempfile.TemporaryDirectory(prefix="osworld-gym-hidden-", dir="/tmp") as work:
        (Path(work) / "venv" / "lib").mkdir(parents=True)
        paths = [
            f"{work}/venv/lib",
            f"{work}/venv",
            "/usr/lib",  # visible anyway
            "/tmp",  # the private folder itself
            f"{work}/missing",
            "relative/path",
            "/home/user/.local/lib",  # the desktop's own home
        ]
        assert sandbox.hidden_paths(paths) == (f"{work}/venv",)


def test_a_lost_race_with_a_host_mount_is_told_from_other_deaths() -> None:
    from osworld_gym.providers.local.provider import _lost_mount_race

    race = (
        "desktop component 'sandbox' is not running (exit status 1): bwrap: Can't bind mount "
        "/oldroot/ on /newroot/: Unable to apply mount flags: remount "
        '"/newroot/var/lib/docker/overlay2/5ebe/merged": No such file or directory'
    )
    assert _lost_mount_race(race)
    assert not _lost_mount_race("desktop component 'wm' is not running (exit status 1): oops")
    assert not _lost_mount_race("bwrap: Can't find source path /nowhere: No such file")


def test_a_desktop_sees_the_pythons_folders_not_the_drivers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An agent module's folder on sys.path is the driver's: never shown to the desktop."""
    agent = tmp_path / "my-agent"
    packages = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    for folder in (agent, packages):
        folder.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(agent), str(packages), ""])
    shown = sandbox.python_paths(sys.executable)
    assert str(packages) in shown and str(agent) not in shown
    assert sys.prefix in shown


def _chrome_command_line(tmp_path: Path, *args: str) -> list[str]:
    """What the ``google-chrome`` wrapper starts, with a stand-in for Chromium's program."""
    folder = tmp_path / "bin"
    (folder / ".chrome").mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(desktop_bin.__file__).parent / "google-chrome", folder / "google-chrome")
    program = folder / ".chrome" / "chrome"
    program.write_text('#!/bin/sh\nprintf "%s\\n" "$CHROME_DESKTOP" "$@"\n')
    program.chmod(0o755)
    env = {**os.environ, "HOME": str(tmp_path), "OSWORLD_GYM_PORT_1337": "4242"}
    done = subprocess.run(
        ["sh", str(folder / "google-chrome"), *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_google_chrome_runs_as_osworlds_chrome(tmp_path: Path) -> None:
    desktop_file, *argv = _chrome_command_line(tmp_path, "--remote-debugging-port=1337")
    assert desktop_file == "google-chrome.desktop"  # Chrome's window class
    assert "--remote-debugging-port=4242" in argv  # the desktop's own port
    # Features OSWorld's Chrome predates stay off, also when a task names features of its own.
    assert "--disable-features=LocalNetworkAccessChecks" in argv
    _, *argv = _chrome_command_line(tmp_path, "--disable-features=Translate", "about:blank")
    assert "--disable-features=Translate,LocalNetworkAccessChecks" in argv
    assert sum(a.startswith("--disable-features") for a in argv) == 1
