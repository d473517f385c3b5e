"""The sandbox a ``local`` desktop's processes run in (bubblewrap namespaces).

OSWorld's tasks name absolute ``/home/user/...`` paths in their setup steps and checks, and
run commands such as ``pkill vlc``. On OSWorld's VM those reach only the VM. A ``local``
desktop is made of processes on this host, so each of them (session bus, window manager, guest
server and every app the guest starts) runs under ``bwrap`` as OSWorld's user ``user`` with:

- the desktop's private home folder mounted at ``/home/user`` (and ``HOME`` pointing there),
  the other homes hidden;
- private ``/tmp`` and ``/var/tmp`` folders (the host's X sockets are bound into ``/tmp``);
- a private ``/run`` holding the desktop's state folder (``STATE_MOUNT``) and its
  ``XDG_RUNTIME_DIR`` (``/run/user/1000``, as in OSWorld's login session);
- everything else of the host read-only;
- one PID and user namespace for all of the desktop's processes, as on a VM: ``pkill`` or
  ``ps`` in a task sees the desktop's own processes and never another desktop's. Its init is
  ``osworld_gym.providers.local.sandbox_init``, started first (``holder_command()``); the other
  processes join its namespaces, each in a mount namespace of its own with the same mounts.

As root (CI) bubblewrap needs nothing more; as an ordinary user it uses unprivileged user
namespaces (enabled by default on Debian). The desktop gets no privilege it did not have:
``sudo`` inside is a wrapper that checks OSWorld's password and runs the command as the same
user (``osworld_gym.providers.desktop.bin``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from osworld_gym.errors import ProviderError
from osworld_gym.providers.local.identity import HostIdentity

DESKTOP_HOME = "/home/user"  # OSWorld's user home, where task files point
DESKTOP_USER = "user"  # OSWorld's user name ...
DESKTOP_UID = 1000  # ... and its uid and gid: /run/user/1000 appears in task commands
STATE_MOUNT = "/run/osworld-gym"  # the desktop's state folder (guest port file, token, scripts)
BIN_MOUNT = f"{STATE_MOUNT}/bin"  # the desktop's command wrappers, first on PATH
# Chromium's program, mounted under the name Chrome's has (see desktop_bin.CHROME_LINK).
CHROMIUM_PROGRAM = "/usr/lib/chromium/chromium"
X11_SOCKETS = "/tmp/.X11-unix"  # the host's X sockets (Xvfb runs outside the sandbox)
RUNTIME_MOUNT = f"/run/user/{DESKTOP_UID}"  # XDG_RUNTIME_DIR inside, as in a login session
# The guest server's own folder in the state folder: the one part of it the desktop can write.
GUEST_STATE = "guest"
_INIT_DEV = ["--tmpfs", "/dev", "--dev-bind", "/dev/null", "/dev/null"]
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap; scripts/install_system_deps.sh)"


@dataclass(frozen=True)
class SandboxFolders:
    """Host folders of one desktop that the sandbox mounts.

    Attributes:
        home: Mounted at ``/home/user``.
        tmp: Mounted at ``/tmp``.
        var_tmp: Mounted at ``/var/tmp``.
        state: Mounted at ``STATE_MOUNT`` (holds the wrappers' ``bin`` folder).
        runtime: Mounted at ``RUNTIME_MOUNT``.
    """

    home: Path
    tmp: Path
    var_tmp: Path
    state: Path
    runtime: Path

    def create(self, identity: HostIdentity | None = None) -> None:
        """Create the folders, the desktop's own where it writes.

        Args:
            identity: Who the desktop's processes are on the host (None: this process). The
                state folder stays this process's, readable but not writable by the desktop;
                the others, and the guest's folder in it, are handed over to ``identity``.
        """
        self.state.mkdir(mode=0o755, parents=True, exist_ok=True)
        self.state.chmod(0o755)  # whatever the umask made of it
        for folder in self.desktops_own:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A shared-looking /tmp, as on any desktop: apps create their own folders in it.
        self.tmp.chmod(0o1777)
        # The mount point of the X server's socket: open to the desktop, not writable by it.
        x_sockets = self.tmp / Path(X11_SOCKETS).name
        x_sockets.mkdir(mode=0o755, exist_ok=True)
        x_sockets.chmod(0o755)
        self.var_tmp.chmod(0o1777)
        write_identity(self.state)
        if identity is not None:
            self.hand_over(identity)

    def hand_over(self, identity: HostIdentity) -> None:
        """Make the folders the desktop writes to ``identity``'s.

        The others stay this process's: the state folder, its wrappers and identity files.
        """
        for folder in self.desktops_own:
            identity.hand_over(folder)

    @property
    def guest_state(self) -> Path:
        """The guest server's folder (recordings, temporary scripts), in the state folder."""
        return self.state / GUEST_STATE

    @property
    def desktops_own(self) -> tuple[Path, ...]:
        """The folders the desktop writes to (each emptied or restored by a reset)."""
        return (self.home, self.tmp, self.var_tmp, self.runtime, self.guest_state)


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


# Hidden folders with a desktop folder mounted right over them (not to be made read-only).
_COVERED = ("/tmp", "/var/tmp")


def _visible(paths: tuple[str, ...], hidden: tuple[str, ...]) -> list[str]:
    """Arguments that show ``paths`` read-only over the hidden folders (or the empty root).

    The folders bubblewrap makes between a hidden folder, or the root, and a path
    (``/root/.pyenv/versions`` for a Python under ``/root``, ``/work`` for a checkout there)
    get the usual ``0755``: made by root, they would be private and a desktop running as its
    own uid could not reach the path.
    """
    words: list[str] = []
    made: set[str] = set()
    for path in paths:
        root = next((folder for folder in hidden if _under(path, folder)), None)
        if root is None and not shown(path):
            root = "/"
        if root is not None:
            parent = Path(path).parent
            between = [parent, *parent.parents]
            for folder in reversed([str(f) for f in between if _under(str(f), root)]):
                if folder != root and folder not in made:
                    made.add(folder)
                    words += ["--perms", "0755", "--dir", folder]
        words += ["--ro-bind", path, path]
    return words


# The host's top-level folders a desktop is shown (read-only): its programs, libraries,
# settings and the system's state. Nothing else of the host's root is there at all: not other
# disks, not the driver's checkout or data (an OSWorld task folder, a build's root file system).
SHOWN_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
               "/var", "/sys")  # fmt: skip
# Folders a desktop sees empty (those that exist): mount points of its own folders (homes,
# /root, temp folders, /run) and what the shown roots hold that is not its own: osworld-gym's
# caches (a qemu image's root file system holds the bundled suites) and Docker's layers.
HIDDEN_ROOTS = ("/home", "/root", "/tmp", "/var/tmp", "/run", "/var/cache/osworld-gym",
                "/var/lib/docker")  # fmt: skip
# Folders the desktop's apps need whole, never hidden even when the driver runs from one.
_SYSTEM_FOLDERS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                   "/opt", "/var", "/boot", "/proc", "/sys", "/dev")  # fmt: skip


def shown(path: str) -> bool:
    """Whether ``path`` lies in a top-level folder the desktop is shown (``SHOWN_ROOTS``)."""
    return any(_under(path, root) for root in SHOWN_ROOTS)


def _shown_roots() -> list[str]:
    """Arguments that show ``SHOWN_ROOTS`` read-only (a merged /usr's links as links)."""
    words: list[str] = []
    for root in SHOWN_ROOTS:
        if os.path.islink(root):
            words += ["--symlink", os.readlink(root), root]
        elif os.path.isdir(root):
            words += ["--ro-bind", root, root]
    return words


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hidden_folders(driver_folders: Sequence[str] = ()) -> tuple[str, ...]:
    """The host folders a desktop sees empty: ``HIDDEN_ROOTS`` and the driver's folders.

    Args:
        driver_folders: Where the driving program's files are (its working directory, its
            script's folder, its ``HOME``): hidden too unless a system folder holds them, one
            of them is a system folder's parent, or an already hidden folder holds them.
    """
    hidden = [root for root in HIDDEN_ROOTS if os.path.isdir(root)]
    for raw in driver_folders:
        if not raw or not os.path.isabs(raw) or not os.path.isdir(raw):
            continue
        path = os.path.realpath(raw)
        if path == "/" or not shown(path) or any(_under(path, root) for root in hidden):
            continue  # outside the shown roots it is not there at all
        if any(_under(path, system) or _under(system, path) for system in _SYSTEM_FOLDERS):
            continue
        hidden.append(path)
    return tuple(dict.fromkeys(hidden))


# Packages whose files hold answers: the bundled suites (task files, reference files) and the
# scripted solutions of their tasks.
_ANSWER_PACKAGES = ("osworld_gym_envs", "osworld_gym.policies.oracles")


def answer_folders(shown_paths: Sequence[str] = ()) -> tuple[str, ...]:
    """Folders of the host whose files hold answers (see ``_ANSWER_PACKAGES``).

    A desktop's Python needs its ``site-packages`` (or the checkout of an editable install)
    shown, and the suites and oracles are installed beside the library: they are masked over it.

    Args:
        shown_paths: Folders shown to the desktop (``python_paths()``): any copy of those
            packages in them is masked too, not only the one this process imports.
    """
    import importlib.util

    found: list[str] = []
    for name in _ANSWER_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent package is not installed (osworld_agents)
            spec = None
        if spec is not None and spec.submodule_search_locations:
            found += [os.path.realpath(folder) for folder in spec.submodule_search_locations]
        for folder in shown_paths:
            copy = os.path.join(folder, *name.split("."))
            if os.path.isdir(copy):
                found.append(os.path.realpath(copy))
    return tuple(dict.fromkeys(found))


def python_paths(python: str) -> list[str]:
    """What a desktop's Python needs shown of the driver's: its prefixes and package folders.

    Not every ``sys.path`` entry: the driver's own folders there (its script's, an agent
    module's) are the driver's, not the desktop's. Site and dist packages, anything under the
    interpreter's prefixes (a venv's, the base one's) and ``osworld_gym`` itself (an editable
    install keeps it off ``sys.path``) are kept.

    Args:
        python: The interpreter that runs the desktop's guest.
    """
    prefixes = [sys.prefix, sys.base_prefix, str(Path(python).parent.parent)]
    packages = [
        entry
        for entry in sys.path
        if entry
        and (
            "site-packages" in entry
            or "dist-packages" in entry
            or any(_under(os.path.realpath(entry), os.path.realpath(p)) for p in prefixes)
        )
    ]
    return [*prefixes, *packages, *package_folders()]


def package_folders() -> list[str]:
    """Where ``osworld_gym`` itself is (an editable install keeps it off ``sys.path``)."""
    import osworld_gym

    return [os.path.dirname(os.path.realpath(osworld_gym.__file__))]


def driver_folders() -> list[str]:
    """The folders of the program driving the desktops: working directory, script, HOME."""
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    folders = [os.getcwd(), os.path.expanduser("~")]
    if os.path.isabs(script) or os.path.exists(script):
        folders.append(os.path.dirname(os.path.abspath(script)))
    return folders


def hidden_paths(paths: list[str], hidden: tuple[str, ...] = HIDDEN_ROOTS) -> tuple[str, ...]:
    """The existing ``paths`` that the sandbox would hide, outermost only.

    A virtual environment under ``/home/<you>``, ``/root`` or ``/tmp``, an editable checkout
    there, the user's site-packages: the desktop's Python (its guest server, pyautogui for
    OSWorld's ``python -c`` steps) needs them at the same place, read-only. Paths under
    ``/home/user`` are left out: that is the desktop's own home.

    Args:
        paths: Candidate paths.
        hidden: The folders the sandbox hides (``hidden_folders()``).
    """
    found: list[str] = []
    for raw in paths:
        if not raw or not os.path.isabs(raw) or not os.path.exists(raw):
            continue
        path = os.path.realpath(raw)
        covered = not shown(path) or any(_under(path, root) for root in hidden)
        own_home = _under(path, DESKTOP_HOME)
        if covered and not own_home and path not in hidden:
            found.append(path)
    outermost = [path for path in found if not any(path.startswith(other + "/") for other in found)]
    return tuple(dict.fromkeys(sorted(outermost)))


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or None when bubblewrap is not installed."""
    return shutil.which("bwrap")


@dataclass(frozen=True)
class Namespaces:
    """Open descriptors of a desktop's namespaces, which its processes join.

    Attributes:
        user: Descriptor of ``/proc/<init>/ns/user``; None when the desktop has a host uid of
            its own (a root launcher): each process then maps it in a user namespace of its own.
        pid: Descriptor of ``/proc/<init>/ns/pid``.
        net: Descriptor of ``/proc/<init>/ns/net``; None when the desktop shares the host's
            network.
    """

    user: int | None
    pid: int
    net: int | None = None

    @classmethod
    def of(cls, pid: int, *, user: bool = True, net: bool = False) -> Namespaces:
        """Open the namespaces of process ``pid`` (user and network ones when asked)."""
        opened: list[int] = []

        def open_ns(kind: str) -> int:
            opened.append(os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC))
            return opened[-1]

        try:
            return cls(
                open_ns("user") if user else None,
                open_ns("pid"),
                open_ns("net") if net else None,
            )
        except OSError:
            for fd in opened:
                os.close(fd)
            raise

    def close(self) -> None:
        """Close the descriptors (the namespaces live on while processes use them)."""
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def fds(self) -> tuple[int, ...]:
        """The descriptors, to pass to the ``bwrap`` that joins them."""
        return tuple(fd for fd in (self.user, self.pid, self.net) if fd is not None)


def holder_command(python: str) -> list[str]:
    """The init of a desktop's namespaces (started first, with ``join=None``)."""
    return [python, "-m", "osworld_gym.providers.local.sandbox_init"]


def wrap(
    argv: list[str],
    folders: SandboxFolders,
    *,
    join: Namespaces | None,
    bwrap: str = "bwrap",
    keep_visible: tuple[str, ...] = (),
    identity: HostIdentity | None = None,
    x_socket: str | None = None,
    hidden: tuple[str, ...] | None = None,
    masked: tuple[str, ...] = (),
    private_network: bool = False,
    as_guest: bool = False,
    resolv_conf: Path | None = None,
    systemd_services: bool = False,
) -> list[str]:
    """The command line that runs ``argv`` inside the desktop's sandbox.

    Everything runs as OSWorld's user (uid 1000, ``user``). Under an ordinary launcher that uid
    stands, in the desktop's user namespace, for the launcher's own, so it has the launcher's
    rights and no more. Under a root launcher (``identity.dedicated``) bubblewrap runs as root
    only to lay out the mounts; the program then runs as the desktop's own unprivileged host
    uid, mapped to 1000 in a user namespace of its own (``desktop_identity``). The caller
    sets the environment (``HOME``, ``PATH`` with ``BIN_MOUNT`` first, ``XDG_RUNTIME_DIR``,
    ``XAUTHORITY``); bubblewrap passes it through.

    Args:
        argv: The command.
        folders: The desktop's folders.
        join: The desktop's namespaces (their descriptors must be passed to the child), or None
            to create them: ``argv`` then becomes their init (``holder_command()``).
        bwrap: The ``bwrap`` executable.
        keep_visible: Host paths that the sandbox's private folders would hide and that its
            programs need, shown read-only at the same place (see ``hidden_paths()``).
        identity: Who the program is on the host (None: the launcher, as an ordinary user).
        x_socket: The desktop's X server socket, the only one shown (None: none).
        hidden: Host folders replaced by empty ones (the homes, ``/root``, temp folders, the
            driver's folders): the private folders and ``keep_visible`` go over them.
            None: ``hidden_folders()`` (those of ``HIDDEN_ROOTS`` that exist).
        masked: Folders replaced by empty ones over everything else, even inside
            ``keep_visible`` (the bundled task suites, whose reference files are answers).
        private_network: The init makes a network namespace of its own (a loopback of its
            own, nothing of the host's; ``osworld_gym.providers.netns``) and the other
            processes join it (``join.net``), entered before bubblewrap starts.
        as_guest: ``argv`` is the guest server (``argv[0]`` its Python): under a root launcher
            it runs with a split identity the desktop's programs cannot signal
            (``HostIdentity.guest_command()``).
        resolv_conf: The resolver configuration shown as ``/etc/resolv.conf`` (a private
            network's outbound link has a DNS forwarder of its own), or None: the host's.
        systemd_services: Show ``/run/systemd/system``, which tells systemd's tools that
            systemd runs (``sd_booted``): the desktop's own system bus answers for the
            services they call (``timedatectl`` refuses to try otherwise).
    """
    if hidden is None:
        hidden = hidden_folders()
    # Masks only where something is shown: elsewhere there is nothing to mask.
    masked = tuple(
        path
        for path in masked
        if (shown(path) and not any(_under(path, folder) for folder in hidden))
        or any(_under(path, kept) for kept in keep_visible)
    )
    dedicated = identity is not None and identity.dedicated
    if dedicated:
        # No user namespace for bubblewrap itself: as root it can bind whatever the desktop
        # needs (a Python under /root); the program drops to the desktop's uid below.
        namespaces = ["--unshare-pid", "--as-pid-1"] if join is None else ["--pidns", str(join.pid)]
    elif join is None:
        namespaces = [
            "--unshare-user", "--uid", str(DESKTOP_UID), "--gid", str(DESKTOP_UID),
            "--unshare-pid", "--as-pid-1",
        ]  # fmt: skip
    else:
        namespaces = ["--userns", str(join.user), "--pidns", str(join.pid)]
    if private_network and join is None:
        namespaces.append("--unshare-net")
    enter: list[str] = []
    if join is not None and join.net is not None:
        # bubblewrap cannot join a network namespace: nsenter does, before it starts.
        enter = ["nsenter", f"--net=/proc/self/fd/{join.net}"]
    program = list(argv)
    if dedicated:
        assert identity is not None
        # The init needs no user namespace (it runs nothing of a task's); every other process
        # sees its uid as OSWorld's 1000, as on the VM.
        if as_guest and join is not None and identity.guest_uid is not None:
            # Its own user namespace too, where its real uid is one the desktop's lacks.
            program = [*identity.guest_command(argv[0]), *program]
        else:
            mapped = [] if join is None else [
                "unshare", "--user", f"--map-user={DESKTOP_UID}", f"--map-group={DESKTOP_UID}",
                "--",
            ]  # fmt: skip
            program = [*identity.drop_command(), *mapped, *program]
    return [
        *enter,
        bwrap,
        *namespaces,
        # The host's system folders, read-only (SHOWN_ROOTS: nothing else of the host's root);
        # then writable private folders over the places apps write to.
        *_shown_roots(),
        # A private /dev, never the host's: a desktop's programs have the launcher's rights on
        # host files, and as root a task's `rm /dev/null` (or an upload to it) would break the
        # whole host. Programs get bubblewrap's (null, zero, random, tty, and a devpts of
        # their own for terminals); the init, which runs no task's program, only /dev/null
        # (bubblewrap's --dev there makes joining its PID namespace fail). The init's /dev
        # counts too: its programs can reach it through /proc/1/root.
        *(["--dev", "/dev"] if join is not None else _INIT_DEV),
        # Open to every user, as on any system (made by root it would be root's alone).
        "--perms", "01777", "--tmpfs", "/dev/shm",
        "--proc", "/proc",
        # Homes, /root, temp folders, /run and the driver's folders: empty, so nothing of the
        # host's (keys, tokens, the driver's files) shows; /home/user gets its mount point.
        *[word for path in hidden for word in ("--tmpfs", path)],
        "--bind", str(folders.home), DESKTOP_HOME,
        "--bind", str(folders.tmp), "/tmp",
        "--bind", str(folders.var_tmp), "/var/tmp",
        # Only this desktop's X server socket (read-only: a socket on a read-only mount still
        # takes connections); the server wants this desktop's cookie anyway (x_auth).
        *(["--ro-bind", x_socket, x_socket] if x_socket else []),
        "--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve",
        *(["--dir", "/run/systemd/system"] if systemd_services else []),
        # The state folder read-only once Chromium's program is mounted in it: the command
        # wrappers first on PATH, the identity files and the X cookie cannot be replaced by a
        # task; only the guest's folder is writable.
        "--bind", str(folders.state), STATE_MOUNT,
        "--ro-bind-try", CHROMIUM_PROGRAM, f"{BIN_MOUNT}/.chrome/chrome",
        "--remount-ro", STATE_MOUNT,
        "--bind", str(folders.state / GUEST_STATE), f"{STATE_MOUNT}/{GUEST_STATE}",
        # bubblewrap makes missing parents of a mount point private to root; /run/user must be
        # open, as on any system, for the desktop's user to reach its runtime folder.
        "--perms", "0755", "--dir", str(Path(RUNTIME_MOUNT).parent),
        "--bind", str(folders.runtime), RUNTIME_MOUNT,
        "--ro-bind", str(folders.state / "passwd"), "/etc/passwd",
        "--ro-bind", str(folders.state / "group"), "/etc/group",
        # Where /etc/resolv.conf leads (a link to systemd-resolved's file on some hosts).
        *(["--ro-bind", str(resolv_conf), os.path.realpath("/etc/resolv.conf")]
          if resolv_conf is not None else []),
        *_visible(keep_visible, hidden),
        *[word for path in masked for word in ("--tmpfs", path)],
        # The empty folders read-only once their mount points are made: a desktop (whose
        # user owns them in an ordinary launcher's user namespace) could otherwise keep files
        # there, in the memory of a component that outlives a reset. /tmp and /var/tmp are
        # covered by the desktop's own folders.
        *[word for path in (*hidden, *masked) if path not in _COVERED
          for word in ("--remount-ro", path)],  # fmt: skip
        # And the root itself, in which bubblewrap made the mount points.
        "--remount-ro", "/",
        "--chdir", DESKTOP_HOME,
        "--",
        *program,
    ]  # fmt: skip


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
        identity = HostIdentity.for_desktop(0)
        folders.create(identity)
        check = f"test -w {DESKTOP_HOME} && test -w /tmp && test $(id -un) = {DESKTOP_USER}"
        command = ["sh", "-c", check]
        if identity.dedicated:  # as a desktop's programs run: its uid, mapped to OSWorld's
            command = ["unshare", "--user", f"--map-user={DESKTOP_UID}",
                       f"--map-group={DESKTOP_UID}", "--", *command]  # fmt: skip
        argv = wrap(command, folders, join=None, bwrap=bwrap, identity=identity)
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
