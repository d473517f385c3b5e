"""Outbound internet for a desktop's private network: slirp4netns behind a filter.

A ``local`` desktop's network namespace has a loopback of its own and nothing else
(``osworld_gym.providers.netns``). OSWorld's Chrome and multi-app tasks load real web pages,
so a desktop may get the internet the way rootless containers do: ``slirp4netns`` (Debian's
package) gives the namespace a ``tap0`` interface whose packets it turns into ordinary sockets
of the host (the driver's network namespace), as an unprivileged user-mode network stack would.

What slirp4netns reaches, the host reaches: besides the internet, the host's own addresses
(a model server bound to ``0.0.0.0``), the local network and the cloud's metadata service
(``169.254.169.254``, where instance credentials live). So before the interface exists, the
namespace gets a packet filter (``iptables``) that rejects every private, shared, link-local,
loopback and reserved IPv4 range and each address of the host, but for slirp4netns's own DNS
forwarder. The desktop's programs cannot change it: they hold no capability in the namespace
(a root launcher's namespace belongs to the host's root; an ordinary launcher's programs drop
every capability). ``--disable-host-loopback`` keeps the gateway from reaching the host's
loopback too, and the namespace has no IPv6 route.

One slirp4netns per desktop, started with its namespace (a reset keeps it), ended when the
namespace's init is replaced, the desktop closes, or the driver dies (its exit descriptor
closes with the driver).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

logger = logging.getLogger(__name__)

# slirp4netns's defaults (--cidr 10.0.2.0/24): the namespace's address, gateway and DNS.
DESKTOP_ADDRESS = "10.0.2.100"
GATEWAY = "10.0.2.2"
DNS_SERVER = "10.0.2.3"
INTERFACE = "tap0"
MTU = 65520  # slirp4netns's recommended value: fewer, larger packets through the stack

# Never the internet: private (RFC 1918), shared (RFC 6598), loopback, link-local (the cloud
# metadata service), "this network", IETF protocol assignments, benchmarking, multicast and
# reserved ranges.
BLOCKED_NETWORKS = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
)

# The resolver configuration a desktop with internet sees as /etc/resolv.conf.
RESOLV_CONF = f"# osworld-gym: slirp4netns's DNS forwarder\nnameserver {DNS_SERVER}\n"


class OutboundError(OSError):
    """The desktop's outbound network could not be set up."""


def available() -> str | None:
    """Why outbound internet cannot be given here (None when it can)."""
    missing = [name for name in ("slirp4netns", "iptables-restore") if not shutil.which(name)]
    if missing:
        return f"{' and '.join(missing)} not installed (run scripts/install_system_deps.sh)"
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        return "/dev/net/tun is not usable by this process"
    return None


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses (of its network namespace), from the kernel's FIB."""
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
    except OSError:
        return []
    found: list[str] = []
    for index, line in enumerate(lines[1:], 1):
        # "|-- 10.1.2.3" followed by "/32 host LOCAL": an address of this host.
        if "/32 host LOCAL" in line and lines[index - 1].strip().startswith("|--"):
            address = lines[index - 1].strip().split()[-1]
            if address not in found:
                found.append(address)
    return found


def filter_rules(blocked: tuple[str, ...]) -> str:
    """``iptables-restore`` input: reject what ``blocked`` names, allow the DNS forwarder.

    Args:
        blocked: IPv4 networks or addresses the desktop must not reach.
    """
    rules = [
        "*filter",
        ":INPUT ACCEPT [0:0]",
        ":FORWARD DROP [0:0]",
        ":OUTPUT ACCEPT [0:0]",
        "-A OUTPUT -o lo -j ACCEPT",
        f"-A OUTPUT -d {DNS_SERVER}/32 -p udp --dport 53 -j ACCEPT",
        f"-A OUTPUT -d {DNS_SERVER}/32 -p tcp --dport 53 -j ACCEPT",
    ]
    for network in blocked:
        parsed = ipaddress.ip_network(network, strict=False)
        if parsed.version == 4:
            # REJECT, not DROP: a program sees "refused" at once, not a timeout.
            rules.append(f"-A OUTPUT -d {parsed} -j REJECT")
    rules.append("COMMIT")
    return "\n".join(rules) + "\n"


def _in_namespace(netns_fd: int, userns_fd: int | None) -> list[str]:
    """``nsenter`` words that run a command in the desktop's network namespace.

    An ordinary launcher enters the user namespace that owns it first (where it has every
    capability); a root launcher's namespace belongs to the host's user namespace.
    """
    words = ["nsenter", f"--net=/proc/self/fd/{netns_fd}"]
    if userns_fd is not None:
        words.insert(1, f"--user=/proc/self/fd/{userns_fd}")
    return words


class OutboundLink:
    """slirp4netns serving one desktop's network namespace, behind the filter.

    Args:
        netns_fd: An open descriptor of the desktop's network namespace.
        userns_fd: The user namespace that owns it (an ordinary launcher), or None (root).
        blocked: Networks the desktop must not reach, beyond the host's own addresses (which
            are added). Default: ``BLOCKED_NETWORKS``.
        timeout: Seconds for the filter and the interface to be ready.
        log: Where slirp4netns writes its messages.

    Raises:
        OutboundError: the filter or slirp4netns failed (the namespace then has no
            interface but its loopback: no internet, and nothing of the host's).
    """

    def __init__(
        self,
        netns_fd: int,
        userns_fd: int | None = None,
        *,
        blocked: tuple[str, ...] = BLOCKED_NETWORKS,
        timeout: float = 10.0,
        log: Path | None = None,
    ) -> None:
        deadline = time.monotonic() + timeout
        self.blocked = (*blocked, *host_addresses())
        fds = (netns_fd,) if userns_fd is None else (netns_fd, userns_fd)
        done = subprocess.run(
            [*_in_namespace(netns_fd, userns_fd), "iptables-restore"],
            input=filter_rules(self.blocked).encode(),
            capture_output=True,
            pass_fds=fds,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise OutboundError(f"the desktop's packet filter failed: {done.stderr.decode()}")
        self._proc = self._start(netns_fd, userns_fd, deadline, log)

    def _start(
        self, netns_fd: int, userns_fd: int | None, deadline: float, log: Path | None
    ) -> subprocess.Popen[bytes]:
        # Ends slirp4netns when its write end closes: with close(), or with this process.
        self._exit_read, self._exit_write = os.pipe()
        os.set_inheritable(self._exit_write, False)
        ready_read, ready_write = os.pipe()
        argv = [
            "slirp4netns",
            "--configure",
            f"--mtu={MTU}",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
            f"--exit-fd={self._exit_read}",
            f"--ready-fd={ready_write}",
            "--netns-type=path",
        ]
        if userns_fd is not None:
            argv.append(f"--userns-path=/proc/self/fd/{userns_fd}")
        argv += [f"/proc/self/fd/{netns_fd}", INTERFACE]
        fds = tuple(
            fd for fd in (netns_fd, userns_fd, self._exit_read, ready_write) if fd is not None
        )
        output = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                pass_fds=fds,
                start_new_session=True,
            )
        finally:
            os.close(ready_write)
            os.close(self._exit_read)
            if log is not None:
                output.close()  # type: ignore[union-attr]
        try:
            self._wait_ready(proc, ready_read, deadline)
        except BaseException:
            self._stop(proc)
            raise
        finally:
            os.close(ready_read)
        return proc

    @staticmethod
    def _wait_ready(proc: subprocess.Popen[bytes], ready: int, deadline: float) -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OutboundError("slirp4netns did not configure the desktop's network in time")
            readable, _, _ = select.select([ready], [], [], min(remaining, 0.1))
            if readable and os.read(ready, 1):
                return
            if proc.poll() is not None:
                raise OutboundError(f"slirp4netns exited with status {proc.returncode}")

    @property
    def pid(self) -> int:
        """slirp4netns's PID."""
        return self._proc.pid

    def running(self) -> bool:
        """Whether slirp4netns still serves the namespace."""
        return self._proc.poll() is None

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        if self._exit_write >= 0:
            os.close(self._exit_write)
            self._exit_write = -1
        try:
            proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop slirp4netns (idempotent)."""
        self._stop(self._proc)
