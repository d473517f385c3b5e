"""Start the guest server as a process its desktop's programs cannot signal, trace or read.

Run as root (a root launcher's ``bwrap``, inside the desktop's sandbox)::

    python -I split_identity.py --desktop UID:GID --guest UID -- COMMAND...

The desktop's programs run as the desktop's uid, and a process may signal or ``ptrace`` any
other process whose real or saved uid is its own: with the guest under that uid, a desktop
program could ``kill -9`` it and end its own episode as an infrastructure fault, which a
trainer re-runs (a way out of a bad episode). So the guest gets a split identity: its real and
saved uid are a uid of its own (``--guest``), its effective uid the desktop's. It reads and
writes files as the desktop's user (what OSWorld's server does), while the kernel's signal and
``ptrace`` checks, which compare real and saved uids, find no uid in common with the desktop's.

Both uids must mean something inside the guest's user namespace (the desktop's is OSWorld's
1000 there, as for every desktop process), and only a process privileged in the parent
namespace may write a map of more than one uid. So this program forks: the parent makes the
new user namespace, the child, still root outside it, writes its maps and exits.

The split itself happens after ``exec``, in the guest
(``osworld_gym.guest.identity.take_split_identity()``): ``execve`` copies the effective uid
to the saved one, and a program started with real and effective uids apart runs in "secure
execution" mode, where the C library ignores ``XAUTHORITY`` and the like. So this program
starts the guest as the desktop's user with one capability, ``CAP_SETUID``, ambient (it
survives ``exec``) and valid only in the guest's own user namespace; the guest's first act is
to take its own real and saved uid and drop it. The guest starts its own programs as the
desktop's user through and through (``osworld_gym.guest.identity.desktop_user()``).

Only the standard library: it runs isolated (``-I``), without the package's imports.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from pathlib import Path

# What OSWorld's user is inside the guest's user namespace, and the guest's own uid there
# (osworld_gym.guest.identity.INSIDE_GUEST_UID says the same: this script imports nothing).
INSIDE_DESKTOP_UID = 1000
INSIDE_GUEST_UID = 1001

_CLONE_NEWUSER = 0x10000000
_CAP_SETUID = 7
_PR_SET_KEEPCAPS = 8
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_RAISE = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _write_maps(pid: int, desktop: tuple[int, int], guest_uid: int) -> None:
    """Map the desktop's and the guest's uids (and the desktop's gid) into ``pid``'s namespace."""
    proc = Path(f"/proc/{pid}")
    (proc / "uid_map").write_text(
        f"{INSIDE_DESKTOP_UID} {desktop[0]} 1\n{INSIDE_GUEST_UID} {guest_uid} 1\n"
    )
    (proc / "gid_map").write_text(f"{INSIDE_DESKTOP_UID} {desktop[1]} 1\n")


def _drop_bounding_set(libc: ctypes.CDLL, keep: int) -> None:
    """Empty the capability bounding set but for ``keep``."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if cap != keep:
            _check(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap}")


def _keep_only(libc: ctypes.CDLL, cap: int) -> None:
    """Permitted, effective and inheritable sets: ``cap`` alone (a capability below 32)."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = data[0].inheritable = 1 << cap
    _check(libc.capset(ctypes.byref(header), data), "capset")


def _map_in_new_namespace(desktop: tuple[int, int], guest_uid: int) -> None:
    """Enter a new user namespace whose maps a forked child (root outside) writes."""
    libc = _libc()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(ready_w)
            os.read(ready_r, 1)  # the parent has unshared (or failed: then it waits for nothing)
            _write_maps(os.getppid(), desktop, guest_uid)
            code = 0
        except OSError as e:
            os.write(2, f"split_identity: cannot write the uid maps: {e}\n".encode())
        finally:
            os._exit(code)
    os.close(ready_r)
    try:
        _check(libc.unshare(_CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    finally:
        os.write(ready_w, b"x")
        os.close(ready_w)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError("the uid maps of the guest's user namespace were not written")


def enter_guest_namespace(desktop: tuple[int, int], guest_uid: int) -> None:
    """Make this (root, single-threaded) process ready to ``exec`` the guest.

    Afterwards it is the desktop's user (uid and gid 1000 inside a user namespace of its own,
    where the guest's uid is 1001), with no supplementary group, ``no_new_privs``, and
    ``CAP_SETUID`` alone, ambient: the guest takes its split identity with it and drops it.

    Raises:
        OSError: a step failed (not root, user namespaces disabled, a bad id).
    """
    _map_in_new_namespace(desktop, guest_uid)
    libc = _libc()
    # Every capability inside the new namespace, for now.
    _drop_bounding_set(libc, keep=_CAP_SETUID)
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    os.setgroups([])
    os.setresgid(INSIDE_DESKTOP_UID, INSIDE_DESKTOP_UID, INSIDE_DESKTOP_UID)
    # Leaving uid 0 (the unmapped root) would clear the permitted set but for this.
    _check(libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0), "prctl(PR_SET_KEEPCAPS)")
    os.setresuid(INSIDE_DESKTOP_UID, INSIDE_DESKTOP_UID, INSIDE_DESKTOP_UID)
    _keep_only(libc, _CAP_SETUID)
    _check(
        libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _CAP_SETUID, 0, 0),
        "prctl(PR_CAP_AMBIENT_RAISE)",
    )


def _ids(text: str) -> tuple[int, int]:
    uid, _, gid = text.partition(":")
    return int(uid), int(gid or uid)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; execs the command, returns only on failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--desktop", type=_ids, required=True, help="the desktop's UID:GID")
    parser.add_argument("--guest", type=int, required=True, help="the guest's own host uid")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    try:
        enter_guest_namespace(args.desktop, args.guest)
        os.execvp(command[0], command)
    except OSError as e:
        sys.stderr.write(f"split_identity: {e}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
