"""A ``local`` desktop's sandbox: who its programs are, what they see, which network they have.

Every program above the X server runs in the desktop's namespaces, which an init (component
``"sandbox"``) holds: a PID namespace, a mount namespace that shows the host's system folders
read-only and hides the rest (``osworld_gym.providers.local.sandbox``), under a root launcher an
unprivileged uid of the desktop's own (``osworld_gym.providers.local.identity``), and a
network namespace of its own (``osworld_gym.providers.netns``) with the internet behind a
filter (``osworld_gym.providers.local.outbound``). This class keeps those rules together: the
command line of each component, and the links of its network.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from osworld_gym.errors import ProviderError
from osworld_gym.providers import processes
from osworld_gym.providers.local import sandbox
from osworld_gym.providers.local.components import ComponentTable
from osworld_gym.providers.local.folders import DesktopFolders
from osworld_gym.providers.local.identity import HostIdentity
from osworld_gym.providers.local.outbound import RESOLV_CONF, OutboundError, OutboundLink
from osworld_gym.providers.local.outbound import available as outbound_available
from osworld_gym.providers.netns import PortForwarder

logger = logging.getLogger(__name__)


class DesktopSandbox:
    """The namespaces of one sandboxed desktop and how its components enter them.

    Args:
        folders: The desktop's folders (its sandbox folders are mounted).
        bwrap: The ``bwrap`` executable.
        python: The interpreter of the guest (its files are shown to the desktop).
        private_network: A network namespace of its own (else the host's).
        internet: Give a private network the internet (when this host can).
        blocked_networks: Networks the internet must not reach, beyond the default ones.
        host_ports: Host loopback ports a private network's desktop may reach.
        log_dir: Where the outbound link writes its log.
        systemd_services: The desktop's system bus hosts services in systemd's place
            (``timedatectl`` talks to them only where systemd seems to run).

    Attributes:
        identity: Who the desktop's programs are on the host (``take_identity()``).
        namespaces: The namespaces while the init runs (a list: the finalizer closes them).
        links: The relays into the private network and its outbound link, while it lives.
    """

    def __init__(
        self,
        folders: DesktopFolders,
        *,
        bwrap: str,
        python: str,
        private_network: bool,
        internet: bool,
        blocked_networks: tuple[str, ...],
        host_ports: tuple[int, ...],
        log_dir: Path,
        systemd_services: bool = False,
    ) -> None:
        assert folders.sandbox_folders is not None
        self._log_dir = log_dir
        self._folders = folders.sandbox_folders
        self._bwrap = bwrap
        self.hidden = sandbox.hidden_folders(sandbox.driver_folders())
        # This Python's own files (a venv or checkout under /home or /root), for the guest.
        python_paths = sandbox.python_paths(python)
        self.keep_visible = sandbox.hidden_paths(python_paths, self.hidden)
        self._masked = sandbox.answer_folders(python_paths)
        self.private_network = private_network
        self._blocked = blocked_networks
        self._host_ports = host_ports
        self._systemd_services = systemd_services
        self.identity = HostIdentity(os.getuid(), os.getgid(), dedicated=False)
        self.namespaces: list[sandbox.Namespaces] = []
        self.links: list[PortForwarder | OutboundLink] = []
        self._internet = private_network and internet
        if self._internet:
            why_not = outbound_available()
            if why_not is not None:
                logger.warning("desktops start without internet: %s", why_not)
                self._internet = False
        self._resolv_conf = self._folders.state / "resolv.conf"
        if self._internet:
            self._resolv_conf.write_text(RESOLV_CONF)

    def take_identity(self, slot: int) -> None:
        """Take the host identity of a desktop numbered ``slot`` and hand it its folders.

        Raises:
            ProviderError: the desktop's uid could not open this Python's files.
        """
        self.identity = HostIdentity.for_desktop(slot)
        self._folders.hand_over(self.identity)
        closed = self.identity.unreachable(self.keep_visible)
        if closed:
            raise ProviderError(
                f"the desktop runs as an unprivileged uid and cannot open {closed} "
                "(this Python's files): make them readable by all (chmod o+rX)"
            )

    def command(
        self, name: str, argv: list[str], display: str
    ) -> tuple[list[str], tuple[int, ...]]:
        """The command line that runs component ``name`` in the sandbox, and its descriptors.

        The first component (``"sandbox"``) makes the namespaces; the others join them.
        """
        join = None if name == "sandbox" else self.namespaces[0]
        wrapped = sandbox.wrap(
            argv,
            self._folders,
            join=join,
            bwrap=self._bwrap,
            keep_visible=self.keep_visible,
            identity=self.identity,
            x_socket=f"{sandbox.X11_SOCKETS}/X{display.lstrip(':')}",
            hidden=self.hidden,
            masked=self._masked,
            private_network=self.private_network,
            as_guest=name == "guest",
            resolv_conf=self._resolv_conf if self._internet else None,
            systemd_services=self._systemd_services,
        )
        return wrapped, () if join is None else join.fds

    def start(
        self,
        components: ComponentTable,
        python: str,
        inbound: tuple[int, ...],
        deadline: float,
        check: Callable[[], None],
    ) -> None:
        """Start the init of the namespaces (every later component joins them), then the links.

        Args:
            components: The desktop's components.
            python: The interpreter that runs the init.
            inbound: Ports the driver reaches inside a private network through the relay.
            deadline: ``time.monotonic()`` value by which the namespaces must exist.
            check: Raises when a core component died (polled while waiting).
        """
        self.stop()
        holder = components.spawn("sandbox", sandbox.holder_command(python))
        while True:
            chain = processes.sandbox_chain(holder.pid)
            # Its namespaces are final once bubblewrap has started the init program.
            if len(chain) > 1 and processes.command_name(chain[-1]) not in (b"bwrap", None):
                try:
                    self.namespaces.append(
                        sandbox.Namespaces.of(
                            chain[-1],
                            user=not self.identity.dedicated,
                            net=self.private_network,
                        )
                    )
                    self._start_links(inbound, max(deadline - time.monotonic(), 1.0))
                    return
                except OSError:  # gone meanwhile: the checks below say why
                    pass
            check()
            if time.monotonic() >= deadline:
                log = components.log_tail("sandbox")
                raise ProviderError(f"sandbox not ready in time\n{log}")
            time.sleep(0.01)

    def _start_links(self, inbound: tuple[int, ...], timeout: float) -> None:
        """Relay the guest's and OSWorld's service ports into the new private network.

        And give it the internet (``osworld_gym.providers.local.outbound``) when asked.
        """
        namespaces = self.namespaces[0]
        if namespaces.net is None:
            return
        self.links.append(PortForwarder(namespaces.net, inbound, self._host_ports))
        if not self._internet:
            return
        try:
            self.links.append(
                OutboundLink(
                    namespaces.net,
                    namespaces.user,
                    blocked=self._blocked,
                    timeout=timeout,
                    log=self._log_dir / "slirp4netns.log",
                )
            )
        except (OutboundError, OSError, subprocess.TimeoutExpired) as e:
            # The namespace has its loopback only: no internet, nothing of the host's.
            logger.warning("a desktop starts without internet: %s", e)
            self._internet = False

    @property
    def internet(self) -> bool:
        """Whether the desktop's programs reach the internet.

        Through the host's network, or a private network's outbound link.
        """
        if not self.private_network:
            return True
        return any(isinstance(link, OutboundLink) and link.running() for link in self.links)

    def stop(self) -> None:
        """Close the links and the namespaces' descriptors (the init stops with the rest)."""
        while self.links:
            self.links.pop().close()
        while self.namespaces:
            self.namespaces.pop().close()
