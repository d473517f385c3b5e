"""A ``local`` desktop's guest server: started with its token, found ready, its frames shared.

The guest (``osworld_gym.guest``) answers OSWorld's HTTP protocol inside the desktop. Its
token goes on a descriptor it reads and closes, never into a file or its environment; under a
root launcher it runs with a split identity the desktop's programs cannot signal
(``osworld_gym.providers.local.split_identity``). It keeps its port over restarts, so clients
stay valid.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from osworld_gym.errors import DesktopDiedError, GuestError, ProviderError
from osworld_gym.guest.client import GuestClient
from osworld_gym.providers.local.components import ComponentTable
from osworld_gym.providers.local.folders import SHM
from osworld_gym.providers.local.identity import HostIdentity

logger = logging.getLogger(__name__)


class GuestServer:
    """The guest server of one desktop (component ``"guest"``).

    Args:
        components: The desktop's components.
        state_dir: The guest's own folder (port file, recordings) on the host.
        inside: A host path as a component sees it (inside the sandbox or not).
        python: The interpreter that runs it (None: this one).
        official: Answer as OSWorld's own server would (no extensions).
        token: The token clients must present (None: none).
        check: Raises when a core component died (polled while waiting).

    Attributes:
        port: Its port once started (kept for the next start), else 0.
        fixed_port: The port it must take (a private network's relayed port), or None.
    """

    def __init__(
        self,
        components: ComponentTable,
        *,
        state_dir: Path,
        inside: Callable[[Path, str], str],
        python: str | None,
        official: bool,
        token: str | None,
        check: Callable[[], None],
    ) -> None:
        self._components = components
        self._state_dir = state_dir
        self._inside = inside
        self._python = python or sys.executable
        self._official = official
        self._token = token
        self._check = check
        self.fixed_port: int | None = None
        self.port = 0

    def start(self, display: str, client: Callable[[], GuestClient], deadline: float) -> None:
        """Start it, on its previous port when it had one, and wait until it answers.

        Args:
            display: The desktop's X display.
            client: The desktop's client for the guest (made for the port it took).
            deadline: ``time.monotonic()`` value by which it must answer.
        """
        if self.fixed_port is not None:  # its own loopback: the relayed port is free
            self._spawn(display, client, deadline, self.fixed_port)
            return
        if self.port:
            try:
                self._spawn(display, client, deadline, self.port)
                return
            except DesktopDiedError:  # the old port was taken meanwhile: take any
                logger.info("guest port %d is taken; picking a new one", self.port)
        self._spawn(display, client, deadline, 0)

    def _spawn(
        self, display: str, client: Callable[[], GuestClient], deadline: float, port: int
    ) -> None:
        port_file = self._state_dir / "port"
        port_file.unlink(missing_ok=True)
        argv = [
            self._python,
            "-m",
            "osworld_gym.guest",
            "--display",
            display,
            "--port",
            str(port),
            "--port-file",
            self._inside(port_file, "guest"),
            "--state-dir",
            self._inside(self._state_dir, "guest"),
            "--log-level",
            "WARNING",
        ]
        if self._official:
            argv.append("--official")
        token_fd = -1
        if self._token:
            # On a descriptor the guest reads and closes, never in a file or its environment,
            # which the desktop's programs could read.
            token_fd, write_fd = os.pipe()
            os.write(write_fd, self._token.encode())
            os.close(write_fd)
            argv += ["--token-fd", str(token_fd)]
        try:
            self._components.spawn("guest", argv, pass_fds=(token_fd,) if token_fd >= 0 else ())
        finally:
            if token_fd >= 0:
                os.close(token_fd)
        while not port_file.exists():
            self._check()
            if time.monotonic() >= deadline:
                log = self._components.log_tail("guest")
                raise ProviderError(f"guest server not ready in time\n{log}")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        client().wait_until_ready(max(deadline - time.monotonic(), 1.0))

    def share_frames(
        self, client: GuestClient, *, enabled: bool, identity: HostIdentity, frames_dir: Path | None
    ) -> None:
        """Point the client at the shared frame files of the guest just started.

        A sandboxed guest's /dev/shm is a tmpfs of its own, which goes away with it; the
        driver reaches it through ``/proc/<guest>/root`` (the sandbox's user namespace is
        ours, or the files are the desktop's uid's). Without a sandbox the files live in
        ``frames_dir``.
        """
        if not enabled or self._official:
            client.share_frames(None)
        elif self._components.sandboxed("guest"):
            root = f"/proc/{self._components.pid('guest')}/root"
            owner = (identity.uid, identity.gid) if identity.dedicated else None
            client.share_frames(f"{root}{SHM}", str(SHM), owner=owner)
        elif frames_dir is not None:
            client.share_frames(str(frames_dir))

    def healthy(self, client: GuestClient) -> bool:
        """Whether it runs and answers (a stopped one would not: no need to wait for that)."""
        if self._components.down("guest"):
            return False
        try:
            client.info(refresh=True)
        except GuestError:
            return False
        return True
