"""The folders of one ``local`` desktop: made at launch, restored or emptied by each reset.

Everything a desktop writes lives in one folder of its own (under the temp folder or
``work_dir``), capped in size where this host can mount a tmpfs: its HOME, ``/tmp``,
``/var/tmp``, the runtime folder (``XDG_RUNTIME_DIR``), the state folder (the command
wrappers, the X cookie, the guest's folder) and the logs. The folder records its owner, so a
dead run's is found and removed (``osworld_gym.providers.processes.remove_dead_folders()``).
A reset empties every one of them that the desktop can write, as a VM's revert would.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from osworld_gym.providers import processes
from osworld_gym.providers.desktop.bin import install_wrappers
from osworld_gym.providers.desktop.home_skeleton import write_default_home
from osworld_gym.providers.local import sandbox
from osworld_gym.providers.local.identity import HostIdentity
from osworld_gym.providers.local.limits import can_mount_capped, disk_full, mount_capped

logger = logging.getLogger(__name__)

SHM = Path("/dev/shm")
HOST_TEMP = ("/tmp/", "/var/tmp/")  # where apps without a sandbox may leave sockets
# A Unix socket path holds at most 107 bytes; the D-Bus and AT-SPI sockets live in the runtime
# folder, with names of up to ~20 bytes.
_MAX_RUNTIME_PATH = 80


def empty_folder(folder: Path, keep: tuple[str, ...] = ()) -> None:
    """Delete what ``folder`` holds (except the names in ``keep``), keeping the folder itself."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _empty_in_place(folder: Path, mode: int) -> bool | None:
    """Empty a real folder, set its ``mode`` back, drop its extended attributes (ACLs too).

    Returns:
        True when it held anything or had another mode or attributes, False when it was as
        given, None when ``folder`` is no real folder (missing, a link, a file): left to be
        replaced.
    """
    try:
        info = folder.lstat()
        if not stat.S_ISDIR(info.st_mode):
            return None
        changed = info.st_mode != mode or any(folder.iterdir())
        empty_folder(folder)
        for name in os.listxattr(folder, follow_symlinks=False):
            os.removexattr(folder, name, follow_symlinks=False)
            changed = True
        os.chmod(folder, stat.S_IMODE(mode), follow_symlinks=False)
    except OSError as e:
        logger.info("%s cannot be emptied in place (%s): it is replaced", folder, e)
        return None
    return changed


def empty_tree(folder: Path, keep: set[Path]) -> None:
    """Delete what ``folder`` holds but the paths in ``keep`` (and the folders leading to them)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry in keep and not entry.is_dir():
            continue
        if entry.is_dir() and not entry.is_symlink():
            if any(entry in path.parents for path in keep):
                empty_tree(entry, keep)
            else:
                shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _runtime_dir(root: Path, marker: str) -> Path:
    """The desktop's XDG_RUNTIME_DIR without a sandbox: inside its folder, or a short path.

    A deep ``work_dir`` would make the sockets' paths too long.
    """
    inside = root / "runtime"
    if len(os.fsencode(inside)) <= _MAX_RUNTIME_PATH:
        inside.mkdir(mode=0o700)
        return inside
    return processes.make_owned_folder("osworld-gym-run-", marker=marker)


class DesktopFolders:
    """The folders of one desktop, made by the constructor.

    Args:
        marker: The desktop's marker (recorded as the folders' owner).
        work_dir: Parent folder (None: the temp folder).
        disk_bytes: Cap on what the desktop writes (None, or a host that cannot mount a tmpfs:
            no cap).
        sandboxed: The desktop runs in a sandbox (its folders are mounted at OSWorld's paths).
        shared_frames: Frames go through shared memory: without a sandbox they need a folder
            in the host's ``/dev/shm``.

    Attributes:
        root: The desktop's folder.
        home: Its HOME (``/home/user`` inside a sandbox).
        tmp_dir: Its ``/tmp`` (``TMPDIR`` without a sandbox).
        state_dir: The state folder (the wrappers' ``bin``, identity files, the X cookie).
        log_dir: The components' logs.
        runtime_dir: Its ``XDG_RUNTIME_DIR``.
        frames_dir: Shared frame files of a desktop without a sandbox, or None.
        sandbox_folders: What the sandbox mounts, or None without a sandbox.
        disk_capped: Whether ``root`` is a size-capped tmpfs.
    """

    def __init__(
        self,
        marker: str,
        *,
        work_dir: str | None,
        disk_bytes: int | None,
        sandboxed: bool,
        shared_frames: bool,
    ) -> None:
        self.root = processes.make_owned_folder(parent=work_dir, marker=marker)
        self.disk_capped = disk_bytes is not None and can_mount_capped()
        self._disk_bytes = disk_bytes
        if self.disk_capped:
            # Everything the desktop writes lives here: a full disk is the desktop's alone.
            record = processes.read_owner(self.root)
            try:
                mount_capped(self.root, disk_bytes)
            except OSError:
                processes.remove_tree(self.root)
                raise
            if record is not None:  # the mount hides the first one
                processes.write_owner(self.root, record)
        # Shared frame files of a desktop without a sandbox (the host's /dev/shm is theirs).
        self.frames_dir: Path | None = None
        if shared_frames and not sandboxed and os.access(SHM, os.W_OK | os.X_OK):
            self.frames_dir = processes.make_owned_folder(parent=SHM, marker=marker)
        self.home = self.root / "home"
        # Apps' temp files: the sandbox's /tmp, or TMPDIR without a sandbox.
        self.tmp_dir = self.root / "tmp"
        self.state_dir = self.root / "state"
        self.log_dir = self.root / "logs"
        self.log_dir.mkdir(mode=0o700)
        self.sandbox_folders: sandbox.SandboxFolders | None = None
        if sandboxed:
            # Sockets are made at their paths inside the sandbox: no length limit on the host's.
            self.runtime_dir = self.root / "runtime"
            self.sandbox_folders = sandbox.SandboxFolders(
                home=self.home,
                tmp=self.tmp_dir,
                var_tmp=self.root / "var-tmp",
                state=self.state_dir,
                runtime=self.runtime_dir,
            )
            self.sandbox_folders.create()
            install_wrappers(self.state_dir / "bin")
        else:
            self.runtime_dir = _runtime_dir(self.root, marker)
            self.state_dir.mkdir(mode=0o700)
            self.tmp_dir.mkdir(mode=0o700)

    def to_remove(self) -> tuple[Path, ...]:
        """The folders teardown (or the watchdog) deletes."""
        extra = () if self.frames_dir is None else (self.frames_dir,)
        return (self.root, self.runtime_dir, *extra)

    @property
    def guest_state(self) -> Path:
        """The guest server's folder (the one part of the state folder the desktop writes)."""
        return self.state_dir / sandbox.GUEST_STATE

    def desktop_path(self, path: str | Path) -> str:
        """A host path under these folders as the desktop's processes see it.

        ``<root>/home/x`` is ``/home/user/x`` inside a sandbox; without one, paths are the same.

        Raises:
            ValueError: the path is not visible inside the desktop.
        """
        path = Path(path)
        if self.sandbox_folders is None:
            return str(path)
        folders = self.sandbox_folders
        for host, inside in (
            (folders.home, sandbox.DESKTOP_HOME),
            (folders.tmp, "/tmp"),
            (folders.var_tmp, "/var/tmp"),
            (folders.state, sandbox.STATE_MOUNT),
            (folders.runtime, sandbox.RUNTIME_MOUNT),
        ):
            if path == host or host in path.parents:
                return str(Path(inside) / path.relative_to(host))
        raise ValueError(f"{path} is not visible inside the desktop")

    def restore_home(
        self,
        identity: HostIdentity,
        template: str | None,
        session_files: Callable[[Path], None] | None = None,
        kept_folders: tuple[tuple[str, int], ...] = (),
    ) -> None:
        """HOME as a new desktop's: the default skeleton, ``template``, the session's files.

        The session's files come last: they build on the template's (a GNOME session's settings
        database holds the template's settings and its own).

        Args:
            identity: The desktop user, who gets HOME.
            template: A folder copied into HOME, or None.
            session_files: Writes the session's own files into HOME.
            kept_folders: (name, mode) of folders of HOME that programs kept over the reset
                watch (the desktop icons' ``Desktop``): each emptied in place, its mode set back
                and its extended attributes removed, when it is still a real folder.
        """
        # Emptied, not replaced: a guest kept over a reset has this very folder mounted.
        emptied = {name: _empty_in_place(self.home / name, mode) for name, mode in kept_folders}
        keep = tuple(name for name, outcome in emptied.items() if outcome is not None)
        empty_folder(self.home, keep=keep)
        write_default_home(self.home)
        if template:
            shutil.copytree(template, self.home, symlinks=True, dirs_exist_ok=True)
        if session_files is not None:
            session_files(self.home)
        identity.hand_over(self.home, recursive=True)

    def restore_home_folder(
        self, folder: Path, identity: HostIdentity, template: str | None
    ) -> None:
        """``folder`` of HOME (relative) as a new desktop has it: the template's, or none."""
        target = self.home / folder
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
        source = Path(template, folder) if template else None
        if source is not None and source.is_dir():
            shutil.copytree(source, target, symlinks=True)
            identity.hand_over(target, recursive=True)

    def empty_in_place(self, folders: tuple[tuple[str, int], ...]) -> bool:
        """Empty ``folders`` of HOME, given as (name, mode), in place (see ``restore_home``).

        Returns:
            Whether any of them held anything, had another mode or attributes, or was replaced.
        """
        changed = [_empty_in_place(self.home / name, mode) for name, mode in folders]
        return any(c is not False for c in changed)

    def empty_temp_folders(self, keep_visible: tuple[str, ...], display: str) -> None:
        """Empty the private ``/tmp`` and ``/var/tmp``, as a VM's revert would.

        Args:
            keep_visible: Host paths shown at their place in the sandbox (their mount points
                stay: running programs use them).
            display: The running X server (``":N"``, empty when none): its socket's mount
                point stays.
        """
        folders = self.sandbox_folders
        if folders is None:
            empty_folder(self.tmp_dir)  # TMPDIR without a sandbox
            return
        # Mount points stay: the host's X sockets on /tmp/.X11-unix, and the host paths kept
        # visible (a venv under /tmp), which running programs use.
        for folder, inside in ((folders.tmp, "/tmp"), (folders.var_tmp, "/var/tmp")):
            keep = {Path(path).relative_to(inside).parts[0] for path in keep_visible
                    if path.startswith(inside + "/")}  # fmt: skip
            if inside == "/tmp":
                keep.add(Path(sandbox.X11_SOCKETS).name)
            empty_folder(folder, keep=tuple(keep))
        # Only the running X server's socket (its mount point): a replaced server's would
        # stay as an empty file, telling this desktop from a new one.
        current = (f"X{display.lstrip(':')}",) if display else ()
        empty_folder(folders.tmp / Path(sandbox.X11_SOCKETS).name, keep=current)

    def empty_shm_of(self, pid: int, keep: tuple[str, ...] = ()) -> None:
        """Empty the ``/dev/shm`` of the sandboxed process ``pid`` (but for ``keep``).

        The programs a kept component starts share it (Chromium leaves files there when
        killed; a terminal the window manager opened can write there).
        """
        shm = Path(f"/proc/{pid}/root{SHM}")
        try:
            empty_folder(shm, keep=keep)
        except OSError as e:  # the component is going away: its /dev/shm goes with it
            logger.debug("cannot empty %s: %s", shm, e)

    def host_sockets(self, marker: str, exclude: list[int]) -> set[str]:
        """Sockets the desktop's processes left in the host's temp folders (no sandbox).

        The processes are those marked ``marker`` but for ``exclude``. Without a sandbox the
        desktop's ``/tmp`` is the host's, and some apps put sockets there whatever ``TMPDIR``
        says (LibreOffice's single-instance pipe); killed with SIGKILL they leave them behind.
        A sandbox's ``/tmp`` is its own, emptied on reset: none then, and no scan of the host's
        processes.
        """
        if self.sandbox_folders is not None:
            return set()
        pids = processes.find_marked(marker, exclude=exclude)
        return {path for path in processes.socket_paths(pids) if path.startswith(HOST_TEMP)}

    def disk_full(self) -> str | None:
        """Why the desktop's disk counts as full, or None."""
        if self.disk_capped and disk_full(self.root):
            return f"disk full: the desktop wrote {self._disk_bytes} bytes"
        return None
