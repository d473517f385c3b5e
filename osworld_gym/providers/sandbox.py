"""The sandbox a ``local`` desktop's processes run in (bubblewrap namespaces).

OSWorld's tasks name absolute ``/home/user/...`` paths in their setup steps and checks, and
run commands such as ``pkill vlc``. On OSWorld's VM those reach only the VM. A ``local``
desktop is made of processes on this host, so each of them (session bus, window manager, guest
server and every app the guest starts) runs under ``bwrap`` as OSWorld's user ``user`` with:

- the desktop's private home folder mounted at ``/home/user`` (and ``HOME`` pointing there),
  the other homes hidden;
- private ``/tmp`` and ``/var/tmp`` folders (the host's X sockets are bound into ``/tmp``);
- a private ``/run`` holding the desktop's state folder (:data:`STATE_MOUNT`) and its
  ``XDG_RUNTIME_DIR`` (``/run/user/1000``, as in OSWorld's login session);
- everything else of the host read-only;
- one PID and user namespace for all of the desktop's processes, as on a VM: ``pkill`` or
  ``ps`` in a task sees the desktop's own processes and never another desktop's. Its init is
  :mod:`osworld_gym.providers.sandbox_init`, started first (:func:`holder_command`); the other
  processes join its namespaces, each in a mount namespace of its own with the same mounts.

As root (CI) bubblewrap needs nothing more; as an ordinary user it uses unprivileged user
namespaces (enabled by default on Debian). The desktop gets no privilege it did not have:
``sudo`` inside is a wrapper that checks OSWorld's password and runs the command as the same
user (:mod:`osworld_gym.providers.desktop_bin`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from osworld_gym.errors import ProviderError

DESKTOP_HOME = "/home/user"  # OSWorld's user home, where task files point
DESKTOP_USER = "user"  # OSWorld's user name ...
DESKTOP_UID = 1000  # ... and its uid and gid: /run/user/1000 appears in task commands
STATE_MOUNT = "/run/osworld-gym"  # the desktop's state folder (guest port file, token, scripts)
BIN_MOUNT = f"{STATE_MOUNT}/bin"  # the desktop's command wrappers, first on PATH
# Chromium's program, mounted under the name Chrome's has (see desktop_bin.CHROME_LINK).
CHROMIUM_PROGRAM = "/usr/lib/chromium/chromium"
X11_SOCKETS = "/tmp/.X11-unix"  # the host's X sockets (Xvfb runs outside the sandbox)
RUNTIME_MOUNT = f"/run/user/{DESKTOP_UID}"  # XDG_RUNTIME_DIR inside, as in a login session
_INIT_DEV = ["--tmpfs", "/dev", "--dev-bind", "/dev/null", "/dev/null"]
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap; scripts/install_system_deps.sh)"


@dataclass(frozen=True)
class SandboxFolders:
    """Host folders of one desktop that the sandbox mounts.

    Attributes:
        home: Mounted at ``/home/user``.
        tmp: Mounted at ``/tmp``.
        var_tmp: Mounted at ``/var/tmp``.
        state: Mounted at :data:`STATE_MOUNT` (holds the wrappers' ``bin`` folder).
        runtime: Mounted at :data:`RUNTIME_MOUNT`.
    """

    home: Path
    tmp: Path
    var_tmp: Path
    state: Path
    runtime: Path

    def create(self) -> None:
        """Create the folders (private to this user)."""
        for folder in (self.home, self.tmp, self.var_tmp, self.state, self.runtime):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A shared-looking /tmp, as on any desktop: apps create their own folders in it.
        self.tmp.chmod(0o1777)
        self.var_tmp.chmod(0o1777)
        write_identity(self.state)


def _without(lines: list[str], name: str, number: int) -> list[str]:
    """``passwd``/``group`` lines other than those of ``name`` or id ``number``."""
    kept = []
    for line in lines:
        fields = line.split(":")
        if len(fields) > 2 and (fields[0] == name or fields[2] == str(number)):
            continue
        kept.append(line)
    return kept


def write_identity(state: Path) -> None:
    """``passwd`` and ``group`` files that name the sandbox's user as on OSWorld's VM.

    The host's entries stay (system users own files the desktop reads), except any that
    already use OSWorld's user name or id.
    """
    for name, entry in (
        (
            "passwd",
            f"{DESKTOP_USER}:x:{DESKTOP_UID}:{DESKTOP_UID}:{DESKTOP_USER}:{DESKTOP_HOME}:/bin/bash",
        ),
        ("group", f"{DESKTOP_USER}:x:{DESKTOP_UID}:"),
    ):
        try:
            host = Path("/etc", name).read_text().splitlines()
        except OSError:
            host = []
        lines = [*_without(host, DESKTOP_USER, DESKTOP_UID), entry]
        (state / name).write_text("\n".join(lines) + "\n")


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or None when bubblewrap is not installed."""
    return shutil.which("bwrap")


@dataclass(frozen=True)
class Namespaces:
    """Open descriptors of a desktop's user and PID namespaces, which its processes join.

    Attributes:
        user: Descriptor of ``/proc/<init>/ns/user``.
        pid: Descriptor of ``/proc/<init>/ns/pid``.
    """

    user: int
    pid: int

    @classmethod
    def of(cls, pid: int) -> Namespaces:
        """Open the namespaces of process ``pid``."""
        user = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return cls(user, os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            os.close(user)
            raise

    def close(self) -> None:
        """Close both descriptors (the namespaces live on while processes use them)."""
        for fd in (self.user, self.pid):
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def fds(self) -> tuple[int, int]:
        """Both descriptors, to pass to the ``bwrap`` that joins them."""
        return self.user, self.pid


def holder_command(python: str) -> list[str]:
    """The init of a desktop's namespaces (started first, with ``join=None``)."""
    return [python, "-m", "osworld_gym.providers.sandbox_init"]


def wrap(
    argv: list[str],
    folders: SandboxFolders,
    *,
    join: Namespaces | None,
    bwrap: str = "bwrap",
    keep_visible: tuple[str, ...] = (),
) -> list[str]:
    """The command line that runs ``argv`` inside the desktop's sandbox.

    Everything runs as OSWorld's user (uid 1000, ``user``) in the desktop's user namespace;
    that uid stands for the caller's own on the host, so it has the caller's rights and no
    more. The caller sets the environment (``HOME``, ``PATH`` with :data:`BIN_MOUNT` first,
    ``XDG_RUNTIME_DIR``); bubblewrap passes it through.

    Args:
        argv: The command.
        folders: The desktop's folders.
        join: The desktop's namespaces (their descriptors must be passed to the child), or None
            to create them: ``argv`` then becomes their init (:func:`holder_command`).
        bwrap: The ``bwrap`` executable.
        keep_visible: Host paths that the sandbox's private folders would hide and that its
            programs need, shown read-only at the same place (see :func:`hidden_paths`).
    """
    if join is None:
        namespaces = [
            "--unshare-user", "--uid", str(DESKTOP_UID), "--gid", str(DESKTOP_UID),
            "--unshare-pid", "--as-pid-1",
        ]  # fmt: skip
    else:
        namespaces = ["--userns", str(join.user), "--pidns", str(join.pid)]
    return [
        bwrap,
        *namespaces,
        # The host, read-only; then writable private folders over the places apps write to.
        "--ro-bind", "/", "/",
        # A private /dev, never the host's: a desktop's programs have the launcher's rights on
        # host files, and as root a task's `rm /dev/null` (or an upload to it) would break the
        # whole host. Programs get bubblewrap's (null, zero, random, tty, and a devpts of
        # their own for terminals); the init, which runs no task's program, only /dev/null
        # (bubblewrap's --dev there makes joining its PID namespace fail). The init's /dev
        # counts too: its programs can reach it through /proc/1/root.
        *(["--dev", "/dev"] if join is not None else _INIT_DEV),
        "--tmpfs", "/dev/shm",
        "--proc", "/proc",
        # /home holds other users' homes: a tmpfs hides them and gives /home/user a mount point.
        "--tmpfs", "/home",
        "--bind", str(folders.home), DESKTOP_HOME,
        "--bind", str(folders.tmp), "/tmp",
        # Read-only: clients connect to the X servers' sockets (a socket on a read-only mount
        # still takes connections) but cannot remove other desktops' or the host's.
        "--ro-bind-try", X11_SOCKETS, X11_SOCKETS,
        "--bind", str(folders.var_tmp), "/var/tmp",
        # A private /run (the host's holds its sockets: system bus, docker): only what resolves
        # names, the desktop's state and its runtime folder.
        "--tmpfs", "/run",
        "--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve",
        "--bind", str(folders.state), STATE_MOUNT,
        "--bind", str(folders.runtime), RUNTIME_MOUNT,
        "--ro-bind", str(folders.state / "passwd"), "/etc/passwd",
        "--ro-bind", str(folders.state / "group"), "/etc/group",
        "--ro-bind-try", CHROMIUM_PROGRAM, f"{BIN_MOUNT}/.chrome/chrome",
        *[word for path in keep_visible for word in ("--ro-bind", path, path)],
        "--chdir", DESKTOP_HOME,
        "--",
        *argv,
    ]  # fmt: skip


# Host folders the sandbox replaces with private ones; what lies under them is hidden.
HIDDEN_ROOTS = ("/home", "/tmp", "/var/tmp", "/run")


def hidden_paths(paths: list[str]) -> tuple[str, ...]:
    """The existing ``paths`` that the sandbox would hide, outermost only.

    A virtual environment under ``/home/<you>`` or ``/tmp``, an editable checkout there, the
    user's site-packages: the desktop's Python (its guest server, pyautogui for OSWorld's
    ``python -c`` steps) needs them at the same place, read-only. Paths under ``/home/user``
    are left out: that is the desktop's own home.
    """
    found: list[str] = []
    for raw in paths:
        if not raw or not os.path.isabs(raw) or not os.path.exists(raw):
            continue
        path = os.path.realpath(raw)
        hidden = any(path == root or path.startswith(root + "/") for root in HIDDEN_ROOTS)
        own_home = path == DESKTOP_HOME or path.startswith(DESKTOP_HOME + "/")
        if hidden and not own_home and path not in HIDDEN_ROOTS:
            found.append(path)
    outermost = [path for path in found if not any(path.startswith(other + "/") for other in found)]
    return tuple(dict.fromkeys(sorted(outermost)))


@dataclass(frozen=True)
class SandboxSupport:
    """Whether local desktops can be sandboxed here, and how.

    Attributes:
        ok: A test sandbox ran.
        mode: ``"root"`` (mount namespaces as root) or ``"user namespaces"`` (an ordinary user).
        detail: Why not, with the fix, when ``ok`` is False; else what was used.
    """

    ok: bool
    mode: str
    detail: str


def probe(timeout: float = 10.0) -> SandboxSupport:
    """Run ``true`` in a sandbox laid out like a desktop's; say whether and how it works."""
    mode = "root" if os.geteuid() == 0 else "user namespaces"
    bwrap = bwrap_path()
    if bwrap is None:
        return SandboxSupport(False, mode, f"bubblewrap is not installed: {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="osworld-gym-probe-") as work:
        root = Path(work)
        folders = SandboxFolders(
            root / "home", root / "tmp", root / "var-tmp", root / "state", root / "run"
        )
        folders.create()
        check = f"test -w {DESKTOP_HOME} && test -w /tmp && test $(id -un) = {DESKTOP_USER}"
        argv = wrap(["sh", "-c", check], folders, join=None, bwrap=bwrap)
        try:
            done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return SandboxSupport(False, mode, f"bwrap did not run: {e}")
    if done.returncode == 0:
        return SandboxSupport(True, mode, f"{bwrap} ({mode})")
    message = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
    fix = (
        "this process lacks CAP_SYS_ADMIN (a container without it?)"
        if mode == "root"
        else "unprivileged user namespaces are off: sysctl kernel.unprivileged_userns_clone=1 "
        "(and user.max_user_namespaces > 0), or run as root"
    )
    return SandboxSupport(False, mode, f"bwrap failed: {message}; {fix}")


def require_bwrap() -> str:
    """The ``bwrap`` executable.

    Raises:
        ProviderError: bubblewrap is missing (with the install hint).
    """
    bwrap = bwrap_path()
    if bwrap is None:
        raise ProviderError(
            "the local provider runs each desktop in a sandbox and needs bubblewrap: "
            f"{INSTALL_HINT}; `osworld-gym doctor` checks it (LocalProviderConfig(sandbox=False) "
            "runs without, sharing the host's /home/user and /tmp)"
        )
    return bwrap
