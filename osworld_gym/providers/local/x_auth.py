"""X server authentication for a ``local`` desktop: its X server answers only its own programs.

Xvfb without authentication takes a connection from any local process: one desktop could read
another's screen and type into it (XTEST), and any local user, ``nobody`` included, a root
launcher's desktop. Each desktop's server therefore starts with a random MIT-MAGIC-COOKIE-1
(``XCookie.write_server_file()``); the desktop's programs get the cookie in their
``XAUTHORITY`` file, and the sandbox shows them only their own server's socket file. The
launcher's own uid is let in by the server's ``localuser`` rule (``admit_launcher()``), so
the host side (reset, the window manager checks) connects without the cookie file.

The server's abstract-namespace socket stays (it keeps display numbers unique, and
python-xlib connects through it first): any process in the host's network namespace can reach
it, and so has to show the cookie, or be the launcher's uid. Under a root launcher the
desktops run as uids of their own, so only the cookie opens another desktop's server; under an
ordinary launcher a desktop shares the launcher's uid and is let in (a known limit until each
desktop has a network namespace of its own).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from osworld_gym.errors import ProviderError

_SCHEME = b"MIT-MAGIC-COOKIE-1"
_FAMILY_WILD = 0xFFFF  # an entry for any address
_FAMILY_LOCAL = 256  # an entry for a Unix socket of the named host


def _counted(data: bytes) -> bytes:
    return struct.pack(">H", len(data)) + data


@dataclass(frozen=True)
class XCookie:
    """A desktop's X cookie.

    Attributes:
        secret: The 16 random bytes of the MIT-MAGIC-COOKIE-1.
    """

    secret: bytes = field(default_factory=lambda: secrets.token_bytes(16), repr=False)

    def _entry(
        self, display_number: str, family: int = _FAMILY_WILD, address: bytes = b""
    ) -> bytes:
        return (
            struct.pack(">H", family)
            + _counted(address)
            + _counted(display_number.encode())
            + _counted(_SCHEME)
            + _counted(self.secret)
        )

    def write_server_file(self, path: Path) -> None:
        """The file for Xvfb's ``-auth`` (its number is not known yet: the server takes any)."""
        _write_private(path, self._entry(""))

    def write_client_file(self, path: Path, display: str) -> None:
        """The ``XAUTHORITY`` file of the desktop's programs, for display ``:N``.

        Two entries: any address (libxcb's programs) and this host's name as a local one
        (python-xlib, the guest's, matches nothing else).
        """
        number = display.lstrip(":").split(".")[0]
        local = self._entry(number, _FAMILY_LOCAL, socket.gethostname().encode())
        # Readable by the desktop's group too: a root launcher's guest has a real uid of its
        # own (osworld_gym.providers.local.split_identity) and the desktop's gid, and libXau checks
        # the file with access(), which asks for the real ids.
        _write_private(path, self._entry(number) + local, mode=0o640)


def _write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)  # whatever the umask made of it


def admit_launcher(display: str, client_file: Path, timeout: float = 10.0) -> None:
    """Let this process's uid connect to ``display`` without a cookie (``si:localuser``).

    Raises:
        ProviderError: ``xhost`` is missing or failed.
    """
    xhost = shutil.which("xhost")
    if xhost is None:
        raise ProviderError(
            "xhost is not installed (apt-get install x11-xserver-utils; "
            "scripts/install_system_deps.sh): local desktops need it to protect their X server"
        )
    user = _user_name(os.geteuid())
    env = {"DISPLAY": display, "XAUTHORITY": str(client_file), "PATH": os.defpath}
    done = subprocess.run(
        [xhost, f"+si:localuser:{user}"],
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        raise ProviderError(f"xhost could not admit {user} to {display}: {message}")


def _user_name(uid: int) -> str:
    """The account name of ``uid`` (``si:localuser`` takes names only)."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError as e:
        raise ProviderError(
            f"uid {uid} has no account name: the X server's localuser rule needs one"
        ) from e
