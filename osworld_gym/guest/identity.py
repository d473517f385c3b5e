"""The guest's identity, and that of the programs it starts.

Under a root launcher the guest is started as the desktop's user holding ``CAP_SETUID`` alone,
in a user namespace of its own where uid 1001 is a host uid of the guest's own
(``osworld_gym.providers.local.split_identity``). ``take_split_identity()``, its first act, makes
that uid its real and saved one and drops the capability: the desktop's programs, whose uids
are the desktop's, can then neither signal nor trace it, while it reads and writes files as
the desktop's user (its effective uid).

A child that kept the guest's real uid could signal the guest (the kernel compares real and
saved uids), so every child takes the effective uid as its real and saved one too
(``desktop_user()``), which needs no privilege and cannot be undone.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

# The guest's own uid inside its user namespace (as in osworld_gym.providers.local.split_identity).
INSIDE_GUEST_UID = 1001

_CAP_SETUID = 7
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _capabilities(kind: str) -> int:
    """This process's ``CapAmb``/``CapPrm``/... set from ``/proc/self/status`` (0 off Linux)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith(f"{kind}:"):
            return int(line.split()[1], 16)
    return 0


def _drop_all_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    if libc.capset(ctypes.byref(Header(_LINUX_CAPABILITY_VERSION_3, 0)), (Data * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def take_split_identity() -> bool:
    """Take the guest's own real and saved uid, when started for it; then hold no capability.

    Call it first thing. No program of the desktop runs while a guest starts (a reset stops
    them first), so none can signal it before this.

    Returns:
        Whether the guest was started for a split identity (and now has it).

    Raises:
        OSError: the identity could not be taken or the capability not dropped.
    """
    if not _capabilities("CapAmb") & (1 << _CAP_SETUID):
        return False
    os.setresuid(INSIDE_GUEST_UID, -1, INSIDE_GUEST_UID)
    _drop_all_capabilities()
    if _capabilities("CapPrm") or _capabilities("CapEff"):
        raise OSError("the guest kept a capability after taking its identity")
    return True


def desktop_user() -> dict[str, int]:
    """``subprocess`` keyword arguments that start a child as the desktop's user only.

    Empty when the guest's identity is not split (its real uid already is the desktop's).
    """
    euid = os.geteuid()
    return {"user": euid} if os.getuid() != euid else {}
