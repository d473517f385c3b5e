"""Who a ``local`` desktop's processes are on the host.

A desktop is a guest: its programs must own nothing of the host's. Under a root launcher (CI,
most cluster jobs) mapping OSWorld's user onto the launcher's uid, as an unprivileged user
namespace does, would make every desktop program host root: ``/proc/sys`` writable, ``/root``
and ``/etc/shadow`` readable. So a root launcher gives each desktop an unprivileged uid of its
own, one no account of the host has (``DEDICATED_UID_BASE`` plus a number unique among the
host's live desktops); inside its sandbox that uid is still OSWorld's ``user`` (uid 1000). An
ordinary launcher cannot hand out uids: its desktops map onto its own uid, with the host
read-only and its homes hidden (see ``osworld_gym.providers.local.sandbox``).

A root launcher also gives each desktop's guest server a second uid of its own
(``HostIdentity.guest_uid``), its real uid while it acts as the desktop's user
(``osworld_gym.providers.local.split_identity``): the desktop's programs cannot signal it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# 0x70000000: far above the uids a Linux system hands out (accounts stop at 60000 by default,
# subordinate ranges for containers start at 100000 and take 65536 per user).
DEDICATED_UID_BASE = 0x70000000
# Numbers added to the base: a desktop's first reserved port (unique while it runs, see
# osworld_gym.providers.ports) is below this.
_SLOTS = 1 << 16


@dataclass(frozen=True)
class HostIdentity:
    """The host uid and gid a desktop's processes run as.

    Attributes:
        uid: Host uid of the desktop's processes.
        gid: Host gid of the desktop's processes.
        dedicated: True when it is a uid of the desktop's own (a root launcher), False when it
            is the launcher's (an ordinary user's unprivileged user namespace).
        guest_uid: The guest server's own host uid (a root launcher), None when the guest
            runs as the desktop's uid.
    """

    uid: int
    gid: int
    dedicated: bool
    guest_uid: int | None = None

    @classmethod
    def for_desktop(cls, slot: int) -> HostIdentity:
        """The identity of a desktop launched by this process.

        Args:
            slot: A number unique among the host's live desktops (its reserved port).
        """
        if os.geteuid() == 0:
            uid = DEDICATED_UID_BASE + slot % _SLOTS
            return cls(uid, uid, dedicated=True, guest_uid=uid + _SLOTS)
        return cls(os.getuid(), os.getgid(), dedicated=False)

    def hand_over(self, path: Path, recursive: bool = False) -> None:
        """Make ``path`` (and, with ``recursive``, all below it) the desktop's.

        Nothing to do for the launcher's own identity: it created the files.
        """
        if not self.dedicated:
            return
        os.lchown(path, self.uid, self.gid)
        if not recursive or not path.is_dir() or path.is_symlink():
            return
        for folder, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                os.lchown(os.path.join(folder, name), self.uid, self.gid)

    def unreachable(self, paths: tuple[str, ...]) -> list[str]:
        """The ``paths`` (shown to the desktop at their place) its uid could not open.

        Shown read-only at the same place, a folder keeps its mode: a virtual environment made
        private to root (``0700``) is closed to a desktop that runs as a uid of its own.
        """
        if not self.dedicated:
            return []
        closed = []
        for path in paths:
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue
            needed = 0o005 if os.path.isdir(path) else 0o004
            if mode & needed != needed:
                closed.append(path)
        return closed

    def drop_command(self) -> list[str]:
        """Words that run the rest of a command line as this identity (root launcher only).

        ``setpriv`` leaves root for the desktop's uid with no capability and no supplementary
        group; the processes it starts cannot regain any (bubblewrap sets no_new_privs).
        """
        if not self.dedicated:
            return []
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--bounding-set=-all",
            "--inh-caps=-all",
        ]

    def guest_command(self, python: str) -> list[str]:
        """Words that run the rest of a command line as the guest server (root launcher only).

        The guest's real and saved uid are ``guest_uid``, its effective uid the desktop's
        (``osworld_gym.providers.local.split_identity``); without a uid of its own, the same words
        as ``drop_command()``.

        Args:
            python: The Python that runs the split (the guest's own: only the standard library
                is needed, so the script runs isolated, without the package's imports).
        """
        if not self.dedicated or self.guest_uid is None:
            return self.drop_command()
        script = Path(__file__).with_name("split_identity.py")
        return [
            python,
            "-I",  # no script folder on sys.path: its neighbours would shadow the stdlib
            str(script),
            f"--desktop={self.uid}:{self.gid}",
            f"--guest={self.guest_uid}",
            "--",
        ]
