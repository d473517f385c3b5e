"""The ``docker`` provider: one container per desktop, reset by recreating the container.

Two kinds of image run:

* ours, ``osworld-gym/desktop`` (built by ``vm_images/``, see
  ``osworld_gym.providers.docker.image``): Xvfb, openbox, the apps and our guest server
  start in about a second, so a reset is a fresh container from the image: every trace of the
  episode (files, processes, settings) is gone. On a local engine each container has a
  network namespace of its own (``network_mode="none"``, ``network="private"``): a loopback of
  its own and no route anywhere, so the host's loopback services and the other desktops'
  guests are out of its reach; this host reaches the guest and the CDP and VLC ports through
  a relay into that namespace (``osworld_gym.providers.docker.network``), on reserved
  loopback ports (``osworld_gym.providers.ports``) that are the same numbers inside.
  ``network="host"`` (and every remote engine) shares the engine host's network instead,
  the guest binding its reserved port there. Containers lack ``CAP_NET_RAW``, so not even
  ``sudo`` inside can read the loopback's traffic.
  The guest requires a random token, which goes in as a file readable by root only
  (``/run/osworld-gym/guest-token``, copied into the created container before it starts),
  never as an environment variable. The entrypoint, root, reads and removes it, starts every
  desktop program as user ``user`` and hands the token to the guest (``user`` too) on a pipe;
  the guest makes itself non-dumpable first. So neither ``docker inspect`` nor any file,
  environment, command line or memory the desktop's programs (``sudo`` included) can read
  holds it.
  The desktop runs the session ``session`` names: GNOME Shell laid out as OSWorld's Ubuntu VM
  (``"gnome"``, the default for OSWorld's task files) or openbox (``"minimal"``).
  ``reset_mode="session"`` resets in place instead (cheaper than a new container): a ``docker
  exec`` of ``osworld-gym-reset-session`` as root kills every process but Xvfb, openbox and
  the guest, restores ``/home/user`` from the snapshot the image took at build time, cleans
  ``/tmp``, starts the session bus and AT-SPI again and reconfigures openbox (a GNOME session
  is started again whole); the guest keeps its port and token. When that fails the container
  is recreated.
* OSWorld's official ``happysixd/osworld-docker`` (``official=True``): QEMU in a container
  booting ``Ubuntu.qcow2`` mounted read-only, with ``/dev/kvm`` when the host has it
  (``docs/design/osworld-protocol.md#official-docker-image``). It needs an engine with a bridge
  network (its port 5000 is published on loopback) and boots for minutes without KVM; every
  reset is such a boot, as in OSWorld.

Guests of a remote engine bind the engine host's loopback too (ours, and the official image's
published ports), and this host reaches each desktop's guest and service ports (CDP, VLC)
through SSH tunnels (``osworld_gym.providers.ssh_tunnel``, one SSH connection per desktop):
for ``ssh://`` engines with the engine's own SSH login, for ``tcp://`` engines with
``guest_ssh``. Plain HTTP across the network (``guest_transport="direct"``) only when asked for.

Every container carries labels naming the host, process and run that started it. A provider
removes, when it starts, the containers whose starting process is gone (an interrupted run's
leftovers); a desktop removes its container on ``close()``, on garbage collection and at
interpreter exit.

The docker SDK is imported lazily: ``pip install 'osworld-gym[docker]'``.
"""

from __future__ import annotations

import http.client
import io
import itertools
import logging
import os
import secrets
import socket
import tarfile
import time
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from osworld_gym.errors import DesktopDiedError, GuestError, ProviderError
from osworld_gym.guest.client import ClientConfig, GuestClient
from osworld_gym.providers.base import Desktop, Provider, ProviderConfig
from osworld_gym.providers.docker.client import connect, docker_sdk, engine_host, is_loopback
from osworld_gym.providers.docker.network import forward_into
from osworld_gym.providers.ports import PortReservation, reserve_port
from osworld_gym.providers.services import (
    HOST_FACING_SERVICES,
    OSWORLD_SERVICE_PORTS,
    port_environment,
    service_urls,
)
from osworld_gym.providers.session_choice import MINIMAL, SESSIONS
from osworld_gym.providers.ssh_tunnel import SSHConfig, SSHConnection, SSHTunnel

if TYPE_CHECKING:
    import docker

logger = logging.getLogger(__name__)

OWNER_LABEL = "osworld-gym.owner"  # host name of the machine whose process started it
BOOT_LABEL = "osworld-gym.boot"  # that machine's boot id (a reboot ends every owner)
PID_LABEL = "osworld-gym.pid"  # the starting process ...
PID_START_LABEL = "osworld-gym.pid-start"  # ... and its start time (PIDs are reused)
RUN_LABEL = "osworld-gym.run"  # the provider instance
KIND_LABEL = "osworld-gym.kind"  # "desktop" or "official"

OFFICIAL_IMAGE = "happysixd/osworld-docker"
_OFFICIAL_GUEST_PORT = 5000
_STATUS_POLL = 0.5  # seconds between container status checks while waiting for the guest
_LOG_TAIL_LINES = 30
SESSION_RESET_COMMAND = "/usr/local/bin/osworld-gym-reset-session"
# Where our image's guest finds its token (osworld-gym-desktop's OSWORLD_GUEST_TOKEN_FILE).
TOKEN_FILE = "/run/osworld-gym/guest-token"
# Root: the entrypoint reads the file as root and removes it; the desktop's user never can.
_TOKEN_OWNER_UID = 0
NETWORKS = ("private", "host")  # DockerProviderConfig.network
# The host name of a container with a network of its own (the same after every reset).
DESKTOP_HOSTNAME = "osworld-desktop"
# The capability to read raw packets: `sudo` in a desktop would read the guest's token off
# the loopback (the relay's requests, or every desktop's on a shared host network).
_DROPPED_CAPABILITIES = ("NET_RAW",)
# Guests of remote engines bind this address of the engine's host; tunnels lead there.
_ENGINE_LOOPBACK = "127.0.0.1"
_GUEST_PORT_NAME = "guest"  # the guest server's entry among a desktop's reached ports


@dataclass(frozen=True)
class DockerProviderConfig(ProviderConfig):
    """Settings of the ``docker`` provider.

    Attributes:
        image: The image of our desktops (``official=False``).
        base_url: The engine: None for ``DOCKER_HOST`` or the local socket, else
            ``unix://...``, ``tcp://host:port`` or ``ssh://user@host[:port]`` (paramiko; keys
            and known hosts from ``~/.ssh``).
        cpus: CPU limit of each container (None: no limit).
        memory: Memory limit of each container, e.g. ``"4g"`` (None: no limit).
        shm_size: Size of ``/dev/shm`` (LibreOffice and browsers need more than 64 MB).
        use_token: Protect each guest with a random token (ours only).
        guest_transport: How this host reaches the guests (and the desktops' CDP and VLC
            ports). ``"auto"``: directly on loopback for a local engine (``base_url`` or
            ``DOCKER_HOST`` a unix socket or a loopback address), through SSH tunnels for a
            remote one (guests bind the engine host's loopback; a ``tcp://`` engine then needs
            ``guest_ssh``). ``"ssh"``: always through SSH tunnels. ``"direct"``: plain HTTP to
            ``guest_host`` (default: the engine's host, whose guests then bind all interfaces
            and whose tokens cross the network in clear text; a warning is logged).
        guest_ssh: The SSH server of the engine's host that tunnels go through. Default for
            ``ssh://`` engines: the engine's own login (its URL, ``~/.ssh/config`` and
            ``~/.ssh/known_hosts``, as the docker SDK reads them).
        guest_host: Address the guests are reached at from here with ``"direct"``. Default:
            loopback for a local engine, the engine's host for a remote one. A loopback
            address selects ``"direct"`` under ``"auto"`` (a forward of your own); another
            address needs ``guest_transport="direct"``.
        reap_leftovers: Remove, when the provider starts, containers left by dead processes.
        extra_env: Extra environment variables for every container.
        official: Run OSWorld's QEMU-in-Docker image with ``Ubuntu.qcow2`` instead of ours.
        official_image: That image (never pulled automatically: ``docker pull`` it first).
        vm_image_path: Path of ``Ubuntu.qcow2`` on the engine's host (official only).
        disk_size: ``DISK_SIZE`` of the official image.
        ram_size: ``RAM_SIZE`` of the official image.
        cpu_cores: ``CPU_CORES`` of the official image.
        kvm: Give the official image ``/dev/kvm``; None: when this host has it (local
            engines) or never (remote ones).
        reset_mode: ``"recreate"``: a reset replaces the container by a fresh one (every
            trace gone, also outside HOME). ``"session"``: reset inside the running container
            (processes killed, HOME and ``/tmp`` restored, session restarted; about twice as
            fast), falling back to a recreate when that fails. Ours only.
        network: Our containers on a local engine. ``"private"``: a network namespace of
            their own (``network_mode="none"``): their own loopback and nothing else, so
            neither the host's loopback services (a vLLM server, Ray's dashboard) nor other
            desktops' guests are reachable, and no internet; this host reaches the guest, CDP
            and VLC ports through a relay into it (entering it needs root). ``"host"``: the
            host's network, loopback services and internet included. A remote engine's
            containers always share its host's network (reached through SSH tunnels); the
            official image keeps its bridge.
        host_ports: Ports of this host's loopback that a ``"private"`` desktop may reach, at
            the same port on its own loopback (a page server for its browser in a test).
        session: Our image's desktop session (``OSWORLD_SESSION``), as a local desktop's:
            ``"gnome"``: GNOME Shell laid out as OSWorld's Ubuntu VM
            (``osworld_gym.providers.desktop.gnome_image``); ``"minimal"``: openbox. None: the env
            picks by its tasks (GNOME for OSWorld's task files,
            ``session_for()``); a container started
            outside an env with None runs ``"minimal"``. The official image is OSWorld's own
            GNOME desktop: None or ``"gnome"``.
    """

    image: str = "osworld-gym/desktop:latest"
    base_url: str | None = None
    cpus: float | None = 2.0
    memory: str | None = "4g"
    shm_size: str | None = "512m"
    use_token: bool = True
    guest_transport: Literal["auto", "ssh", "direct"] = "auto"
    guest_ssh: SSHConfig | None = None
    guest_host: str | None = None
    reap_leftovers: bool = True
    extra_env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    official: bool = False
    official_image: str = OFFICIAL_IMAGE
    vm_image_path: str | None = None
    disk_size: str = "32G"
    ram_size: str = "4G"
    cpu_cores: int = 4
    kvm: bool | None = None
    reset_mode: Literal["recreate", "session"] = "recreate"
    network: Literal["private", "host"] = "private"
    host_ports: tuple[int, ...] = ()
    session: str | None = None

    def __post_init__(self) -> None:
        if self.session is not None and self.session not in SESSIONS:
            raise ValueError(f"session must be one of {SESSIONS}, not {self.session!r}")
        if self.official and self.session == MINIMAL:
            raise ValueError("the official image is OSWorld's GNOME desktop: no session='minimal'")
        if self.network not in NETWORKS:
            raise ValueError(f"network must be one of {NETWORKS}, not {self.network!r}")
        if any(not 0 < port < 65536 for port in self.host_ports):
            raise ValueError(f"host_ports must be TCP ports, not {self.host_ports!r}")
        if self.reset_mode not in ("recreate", "session"):
            raise ValueError(f"reset_mode must be 'recreate' or 'session', not {self.reset_mode!r}")
        if self.official and self.reset_mode == "session":
            raise ValueError("reset_mode='session' needs our image (official=False)")
        if self.guest_transport not in ("auto", "ssh", "direct"):
            raise ValueError(
                f"guest_transport must be 'auto', 'ssh' or 'direct', not {self.guest_transport!r}"
            )
        _resolve_transport(self)  # refuses unsafe or incomplete settings now, not at launch

    @classmethod
    def for_official(cls, vm_image_path: str, **settings: Any) -> DockerProviderConfig:
        """Settings for OSWorld's official image, with its 300 s boot allowance.

        See ``docs/design/osworld-protocol.md#official-docker-image``.
        """
        settings.setdefault("boot_timeout", 300.0)
        settings.setdefault("cpus", None)
        settings.setdefault("memory", None)
        return cls(official=True, vm_image_path=vm_image_path, **settings)

    @property
    def engine_url(self) -> str | None:
        """The engine's URL: ``base_url``, else ``DOCKER_HOST`` (None: the local socket)."""
        return self.base_url or os.environ.get("DOCKER_HOST") or None

    @property
    def transport(self) -> Literal["ssh", "direct"]:
        """How guests are reached: ``guest_transport`` with ``"auto"`` resolved.

        Raises:
            ValueError: the settings ask for plain HTTP across the network without saying
                ``"direct"``, or for tunnels without an SSH server to go through.
        """
        return _resolve_transport(self)

    @property
    def reaches_guest_at(self) -> str:
        """The address guests are reached at from here (a tunnel's local end for ``"ssh"``)."""
        if self.transport == "ssh":
            return "127.0.0.1"
        if self.guest_host:
            return self.guest_host
        host = engine_host(self.engine_url)
        return "127.0.0.1" if is_loopback(host) else str(host)

    @property
    def guest_bind_host(self) -> str:
        """The address guests bind on the engine's host (ours; the official image's ports).

        All interfaces only for ``"direct"`` to a non-loopback address; loopback otherwise.
        """
        if self.transport == "direct" and not is_loopback(self.reaches_guest_at):
            return "0.0.0.0"
        return _ENGINE_LOOPBACK

    def ssh_for_guests(self) -> SSHConfig | None:
        """The SSH server that tunnels to the guests go through (None for ``"direct"``)."""
        if self.transport != "ssh":
            return None
        if self.guest_ssh is not None:
            return self.guest_ssh
        assert self.engine_url is not None  # _resolve_transport checked it is ssh://
        return SSHConfig.from_openssh_config(self.engine_url)

    @property
    def private_network(self) -> bool:
        """Whether our containers get a network namespace of their own, relayed from here.

        Only where this host runs the engine and reaches the guests on its own loopback: the
        relay enters the containers' namespaces from here.
        """
        return (
            self.network == "private"
            and not self.official
            and self.transport == "direct"
            and is_loopback(engine_host(self.engine_url))
            and is_loopback(self.reaches_guest_at)
        )

    def use_kvm(self) -> bool:
        """Whether official containers get ``/dev/kvm``."""
        if self.kvm is not None:
            return self.kvm
        return is_loopback(engine_host(self.engine_url)) and Path("/dev/kvm").exists()


def _is_ssh_url(url: str | None) -> bool:
    return bool(url) and urlsplit(url).scheme == "ssh"


def _resolve_transport(config: DockerProviderConfig) -> Literal["ssh", "direct"]:
    """``config.guest_transport`` with ``"auto"`` resolved; see ``DockerProviderConfig``."""
    url = config.engine_url
    if config.guest_transport == "direct":
        return "direct"
    if config.guest_transport == "ssh":
        if config.guest_host:
            raise ValueError(
                "guest_host is for guest_transport='direct': tunnels reach the guests on "
                "the loopback of the engine's host"
            )
        if config.guest_ssh is None and not _is_ssh_url(url):
            raise ValueError(
                f"guest_transport='ssh' needs guest_ssh (the SSH server of the engine's host) "
                f"for the engine {url or '(local socket)'}"
            )
        return "ssh"
    if config.guest_host:
        if is_loopback(config.guest_host):
            return "direct"
        raise ValueError(
            f"guest_host={config.guest_host!r} is not a loopback address: guests reached "
            "there speak plain HTTP and their tokens cross the network in clear text; set "
            "guest_transport='direct' to accept that, or leave guest_host unset to reach "
            "them through SSH tunnels"
        )
    if is_loopback(engine_host(url)):
        return "direct"
    if config.guest_ssh is not None or _is_ssh_url(url):
        return "ssh"
    raise ValueError(
        f"the Docker engine {url} is remote: set guest_ssh (an SSHConfig for its host) to "
        "reach its guests through SSH tunnels, or guest_transport='direct' to reach them "
        "over plain HTTP (their tokens then cross the network in clear text)"
    )


def container_spec(
    config: DockerProviderConfig,
    *,
    name: str,
    port: int,
    token: str | None,
    labels: dict[str, str],
    service_ports: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``containers.create`` for one desktop (pure; tested on its own).

    The token is not in it: the container's environment only names the file that
    ``start_container()`` puts into the created container before it starts.

    Args:
        config: The provider's settings.
        name: Container name.
        port: Host port of the guest server.
        token: The guest's token (ours only), or None for a guest without one.
        labels: Ownership labels.
        service_ports: Host ports for OSWorld's in-desktop services by name (``"cdp"``,
            ``"chrome_debugging"``, ``"vlc"``): our image's wrappers use them, the same
            numbers inside a private network as on the host; the official image's are
            published there.
    """
    service_ports = dict(service_ports or {})
    spec: dict[str, Any] = {
        "name": name,
        "detach": True,
        "labels": dict(labels),
        "init": True,  # reaps the zombies of apps the guest launched and left
    }
    if config.cpus:
        spec["nano_cpus"] = int(config.cpus * 1e9)
    if config.memory:
        spec["mem_limit"] = config.memory
    if config.shm_size:
        spec["shm_size"] = config.shm_size
    if config.official:
        return _official_spec(config, spec, port, service_ports)
    width, height = config.screen_size
    environment = {
        "OSWORLD_GUEST_HOST": config.guest_bind_host,
        "OSWORLD_GUEST_PORT": str(port),
        "OSWORLD_SCREEN": f"{width}x{height}",
        "OSWORLD_BOOT_TIMEOUT": str(int(config.boot_timeout)),
        "OSWORLD_SESSION": config.session or MINIMAL,
        **port_environment(service_ports),
        **dict(config.extra_env),
    }
    if token:
        environment["OSWORLD_GUEST_TOKEN_FILE"] = TOKEN_FILE
    spec.update(image=config.image, environment=environment, cap_drop=list(_DROPPED_CAPABILITIES))
    if config.private_network:
        # The engine names no host in /etc/hosts without a network; sudo looks its own up.
        spec.update(
            network_mode="none",
            hostname=DESKTOP_HOSTNAME,
            extra_hosts={DESKTOP_HOSTNAME: "127.0.1.1"},
        )
    else:
        spec["network_mode"] = "host"
    return spec


def token_archive(token: str, path: str = TOKEN_FILE, uid: int = _TOKEN_OWNER_UID) -> bytes:
    """A tar archive, to extract at ``/``, holding ``token`` at ``path`` for user ``uid`` only.

    Its folder (mode 0700) and the file (0600) belong to ``uid`` (root: the entrypoint reads
    the file and removes it before any desktop program starts); the engine keeps the owners
    of ``put_archive`` entries.
    """
    buffer = io.BytesIO()
    data = token.encode()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folder = tarfile.TarInfo(os.path.dirname(path).lstrip("/"))
        folder.type, folder.mode = tarfile.DIRTYPE, 0o700
        entry = tarfile.TarInfo(path.lstrip("/"))
        entry.size, entry.mode = len(data), 0o600
        for info in (folder, entry):
            info.uid = info.gid = uid
            info.mtime = now
        tar.addfile(folder)
        tar.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()


def _official_spec(
    config: DockerProviderConfig, spec: dict[str, Any], port: int, service_ports: dict[str, int]
) -> dict[str, Any]:
    if not config.vm_image_path:
        raise ValueError("official=True needs vm_image_path, the path of Ubuntu.qcow2")
    environment = {
        "DISK_SIZE": config.disk_size,
        "RAM_SIZE": config.ram_size,
        "CPU_CORES": str(config.cpu_cores),
        **dict(config.extra_env),
    }
    kvm = config.use_kvm()
    if not kvm:
        environment["KVM"] = "N"
    spec.update(
        image=config.official_image,
        environment=environment,
        cap_add=["NET_ADMIN"],
        # The base disk is never written: the guest's writes stay in the container.
        volumes={
            str(Path(config.vm_image_path).absolute()): {"bind": "/System.qcow2", "mode": "ro"}
        },
        ports={
            f"{_OFFICIAL_GUEST_PORT}/tcp": (config.guest_bind_host, port),
            # The VM's CDP and VLC ports, as OSWorld's own Docker provider publishes them.
            **{
                f"{OSWORLD_SERVICE_PORTS[name]}/tcp": (config.guest_bind_host, host_port)
                for name, host_port in service_ports.items()
                if name in HOST_FACING_SERVICES
            },
        },
    )
    if kvm:
        spec["devices"] = ["/dev/kvm:/dev/kvm:rwm"]
    return spec


def start_container(client: docker.DockerClient, spec: dict[str, Any], token: str | None) -> Any:
    """Create a container from ``container_spec()``, put its token file in, start it.

    The file is in place before the entrypoint runs, which refuses to start without it.

    Args:
        client: The engine.
        spec: Keyword arguments from ``container_spec()``.
        token: The token the spec was made with (None: no file).

    Returns:
        The started container.

    Raises:
        docker.errors.DockerException: the engine refused a step (the container, if it was
            created, is removed).
    """
    container = client.containers.create(**spec)
    try:
        if token:
            container.put_archive("/", token_archive(token))
        container.start()
    except BaseException:
        _remove_container(container)
        raise
    return container


# --- ownership labels and the reaper --------------------------------------------------------


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _process_start(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot, or None if it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()  # field 22 of stat(5); 20 after pid, comm and state


def ownership_labels(run_id: str) -> dict[str, str]:
    """The labels that tie a container to this process and run."""
    pid = os.getpid()
    return {
        OWNER_LABEL: socket.gethostname(),
        BOOT_LABEL: _boot_id(),
        PID_LABEL: str(pid),
        PID_START_LABEL: _process_start(pid) or "",
        RUN_LABEL: run_id,
    }


def owner_is_alive(labels: dict[str, str]) -> bool | None:
    """Whether the process that started a container still runs.

    Returns:
        None when the container comes from another host (its owner cannot be checked here).
    """
    if labels.get(OWNER_LABEL) != socket.gethostname():
        return None
    if labels.get(BOOT_LABEL) != _boot_id():
        return False
    try:
        pid = int(labels.get(PID_LABEL, ""))
    except ValueError:
        return False
    start = _process_start(pid)
    return start is not None and start == labels.get(PID_START_LABEL)


def reap_leftovers(client: docker.DockerClient) -> list[str]:
    """Remove this host's osworld-gym containers whose starting process is gone.

    Returns:
        Names of the removed containers.
    """
    errors = docker_sdk().errors
    removed = []
    filters = {"label": f"{OWNER_LABEL}={socket.gethostname()}"}
    # ignore_removed: a container removed between the listing and its inspection (another
    # process's close or reaper) is skipped instead of failing the whole sweep.
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        if owner_is_alive(container.labels) is not False:
            continue
        try:
            container.remove(force=True, v=True)
        except errors.NotFound:
            continue  # removed meanwhile by another reaper
        except errors.APIError as e:
            if e.status_code == 409:  # removal already in progress elsewhere
                continue
            raise
        removed.append(container.name)
    if removed:
        logger.info("removed %d containers left by dead processes: %s", len(removed), removed)
    return removed


# --- provider and desktop -------------------------------------------------------------------


class DockerProvider(Provider):
    """Launches ``DockerDesktop`` instances on one Docker engine."""

    name = "docker"

    def __init__(self, config: DockerProviderConfig | None = None) -> None:
        super().__init__(config or DockerProviderConfig())
        self.config: DockerProviderConfig
        self.run_id = uuid.uuid4().hex[:12]
        self._names = itertools.count()
        self.guest_ssh = self.config.ssh_for_guests()
        if self.config.transport == "direct" and not is_loopback(self.config.reaches_guest_at):
            logger.warning(
                "guests of %s bind all interfaces and are reached over plain HTTP at %s "
                "(guest_transport='direct'): their tokens cross the network in clear text",
                self.config.engine_url,
                self.config.reaches_guest_at,
            )
        self.client = connect(self.config.base_url)
        if self.config.reap_leftovers:
            reap_leftovers(self.client)
        self._check_image()

    def _check_image(self) -> None:
        errors = docker_sdk().errors
        image = self.config.official_image if self.config.official else self.config.image
        try:
            self.client.images.get(image)
        except errors.ImageNotFound as e:
            if self.config.official:
                hint = f"`docker pull {image}` on the engine's host (nothing is pulled for you)"
            else:
                hint = (
                    "build it with `bash scripts/build_guest_image.sh` (or osworld-gym image build)"
                )
            raise ProviderError(f"image {image} is not on the Docker engine: {hint}") from e

    def next_name(self) -> str:
        """A container name unique to this provider."""
        return f"osworld-gym-{self.run_id}-{next(self._names)}"

    def _launch_impl(self) -> DockerDesktop:
        return DockerDesktop(self)


def _remove(state: dict[str, Any]) -> None:
    """Remove the desktop's container, relay, tunnels and ports (also the GC finalizer)."""
    _close_forwarder(state)
    container = state.pop("container", None)
    if container is not None:
        _remove_container(container)
    for tunnel in state.pop("tunnels", {}).values():
        tunnel.close()
    connection: SSHConnection | None = state.pop("ssh", None)
    if connection is not None:
        connection.close()
    reservation: PortReservation | None = state.pop("port", None)
    if reservation is not None:
        reservation.release()
    for service in state.pop("service_ports", []):
        service.release()


def _close_forwarder(state: dict[str, Any]) -> None:
    """Stop relaying into the container's network namespace (it goes with the container)."""
    forwarder = state.pop("forwarder", None)
    if forwarder is not None:
        forwarder.close()


def _remove_container(container: Any) -> None:
    errors = docker_sdk().errors
    try:
        container.remove(force=True, v=True)
    except errors.NotFound:
        pass
    except errors.APIError as e:
        if e.status_code != 409:  # 409: already being removed
            logger.warning("removing container %s failed: %s", container.name, e)


class DockerDesktop(Desktop):
    """One desktop in a container. Starts in the constructor; use ``DockerProvider``."""

    def __init__(self, provider: DockerProvider) -> None:
        super().__init__()
        self.provider = provider
        self.config = provider.config
        self._token = secrets.token_urlsafe(24) if self.config.use_token else None
        if self.config.official:
            self._token = None  # OSWorld's server knows no token
        self._state: dict[str, Any] = {"port": reserve_port(self.config.guest_bind_host)}
        self._finalizer = weakref.finalize(self, _remove, self._state)
        self.port = self._state["port"].port
        self._state["service_ports"] = [
            reserve_port(self.config.guest_bind_host) for _ in OSWORLD_SERVICE_PORTS
        ]
        self.service_ports = {
            name: reservation.port
            for name, reservation in zip(
                OSWORLD_SERVICE_PORTS, self._state["service_ports"], strict=True
            )
        }
        # Where this host connects, by name: the engine host's ports, or tunnels' local ends.
        self._reached_ports = {_GUEST_PORT_NAME: self.port, **self.service_ports}
        try:
            self._open_tunnels()
            self._start_container()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"DockerDesktop(container={self.container_name!r}, endpoint={self.endpoint!r})"

    # --- Desktop interface ---------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """Base URL of this desktop's guest server."""
        return f"http://{self.config.reaches_guest_at}:{self._reached_ports[_GUEST_PORT_NAME]}"

    @property
    def token(self) -> str | None:
        """The guest's token."""
        return self._token

    @property
    def client_config(self) -> ClientConfig:
        """Client settings from the provider config."""
        return self.config.client

    @property
    def service_urls(self) -> dict[str, str]:
        """The desktop's OSWorld services at their host ports."""
        services = {name: self._reached_ports[name] for name in self.service_ports}
        return service_urls(self.config.reaches_guest_at, services)

    @property
    def private_network(self) -> bool:
        """Whether the container has a network of its own (no internet, no host services)."""
        return self.config.private_network

    @property
    def tunnels(self) -> dict[str, SSHTunnel]:
        """The SSH tunnels by name (``"guest"``, ``"cdp"``, ``"vlc"``); empty unless ``"ssh"``."""
        return dict(self._state.get("tunnels", {}))

    @property
    def container(self) -> Any:
        """The current ``docker`` container object (a new one after each reset)."""
        return self._state.get("container")

    @property
    def container_name(self) -> str | None:
        """Name of the current container."""
        container = self.container
        return container.name if container is not None else None

    def _reset_impl(self) -> None:
        if self.config.reset_mode == "session":
            try:
                self._reset_session()
                return
            except (ProviderError, docker_sdk().errors.DockerException) as e:
                logger.warning("session reset of %r failed (%s); recreating its container", self, e)
        self._remove_current()
        self._start_container()

    def _reset_session(self) -> None:
        """Reset inside the running container; the guest keeps its port and token."""
        deadline = time.monotonic() + self.config.boot_timeout
        container = self.container
        if container is None:
            raise ProviderError("no container to reset")
        # Bounded by the script itself: it gives up at the boot deadline.
        result = container.exec_run(
            [SESSION_RESET_COMMAND],
            # Numeric: a name is looked up in the container's /etc/passwd, which the engine
            # once failed to read under load ("unable to find user root", seen in CI).
            user="0",
            environment={"OSWORLD_BOOT_TIMEOUT": str(int(self.config.boot_timeout))},
        )
        if result.exit_code != 0:
            output = result.output.decode(errors="replace").strip()
            raise ProviderError(f"{SESSION_RESET_COMMAND} exited with {result.exit_code}: {output}")
        self._wait_until_ready(deadline)

    def _check_impl(self) -> None:
        errors = docker_sdk().errors
        container = self.container
        if container is None:
            raise DesktopDiedError("container", None, "no container")
        try:
            container.reload()
        except errors.NotFound as e:
            raise DesktopDiedError("container", None, f"{container.name} was removed") from e
        if container.status != "running":
            code = container.attrs.get("State", {}).get("ExitCode")
            raise DesktopDiedError("container", code, self.logs())

    def _close_impl(self) -> None:
        self._finalizer()

    def logs(self) -> str:
        """The last lines the container printed."""
        container = self.container
        if container is None:
            return ""
        try:
            text = container.logs(tail=_LOG_TAIL_LINES).decode(errors="replace")
        except docker_sdk().errors.DockerException as e:
            return f"(logs of {container.name} unavailable: {e})"
        return f"--- {container.name} ---\n{text}"

    # --- start-up ------------------------------------------------------------------------

    def _open_tunnels(self) -> None:
        """Forward the guest's and the host-facing services' ports (``"ssh"`` transport).

        One SSH connection carries them all and outlives resets: a recreated container binds
        the same ports on the engine's host.
        """
        ssh = self.provider.guest_ssh
        if ssh is None:
            return
        self._state["ssh"] = connection = SSHConnection(ssh)
        tunnels: dict[str, SSHTunnel] = {}
        self._state["tunnels"] = tunnels
        for name in (_GUEST_PORT_NAME, *HOST_FACING_SERVICES):
            tunnels[name] = SSHTunnel(connection, _ENGINE_LOOPBACK, self._reached_ports[name])
            self._reached_ports[name] = tunnels[name].local_port

    def _remove_current(self) -> None:
        _close_forwarder(self._state)
        container = self._state.pop("container", None)
        if container is not None:
            _remove_container(container)

    def _start_container(self) -> None:
        spec = container_spec(
            self.config,
            name=self.provider.next_name(),
            port=self.port,
            token=self._token,
            service_ports=self.service_ports,
            labels={
                **ownership_labels(self.provider.run_id),
                KIND_LABEL: "official" if self.config.official else "desktop",
            },
        )
        errors = docker_sdk().errors
        try:
            self._state["container"] = start_container(self.provider.client, spec, self._token)
            if self.config.private_network:
                self._start_forwarder()
        except errors.DockerException as e:
            raise ProviderError(f"docker could not start {spec['name']}: {e}") from e
        self._wait_until_ready(time.monotonic() + self.config.boot_timeout)
        if self._token:
            self._check_token_required()

    def _start_forwarder(self) -> None:
        """Relay the guest's, CDP's and VLC's host ports into the new container's network."""
        inbound = (self.port, *(self.service_ports[name] for name in HOST_FACING_SERVICES))
        try:
            self._state["forwarder"] = forward_into(
                self.container, inbound, tuple(self.config.host_ports)
            )
        except ProviderError:
            self._check_impl()  # a container that exited at once: say why (its log)
            raise

    def _check_token_required(self) -> None:
        """Refuse a guest that answers a request without the token.

        An image whose entrypoint predates ``OSWORLD_GUEST_TOKEN_FILE`` starts its guest
        without a token; better no desktop than one anybody can drive.
        """
        parts = urlsplit(self.endpoint)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10.0)
        try:
            connection.request("GET", "/health")
            status = connection.getresponse().status
        except (OSError, http.client.HTTPException) as e:
            raise ProviderError(f"guest of {self.container_name} stopped answering: {e}") from e
        finally:
            connection.close()
        if status != 401:
            raise ProviderError(
                f"guest of {self.container_name} answered {status} without its token: the "
                f"image {self.config.image} does not read OSWORLD_GUEST_TOKEN_FILE; rebuild it "
                "with `bash scripts/build_guest_image.sh`"
            )

    def _wait_until_ready(self, deadline: float) -> None:
        """Poll the guest until it answers, checking that the container still runs."""
        probe = GuestClient(
            self.endpoint,
            token=self._token,
            config=ClientConfig(connect_timeout=1.0, timeout=10.0, retries=0),
        )
        next_status = 0.0
        try:
            while True:
                try:
                    probe.info(refresh=True)
                    return
                except GuestError as e:
                    last_error = e
                now = time.monotonic()
                if now >= next_status:
                    self._check_impl()  # a container that exited will never answer
                    next_status = now + _STATUS_POLL
                if now >= deadline:
                    raise ProviderError(
                        f"guest of {self.container_name} not ready after "
                        f"{self.config.boot_timeout:g} s: {last_error}\n{self.logs()}"
                    )
                time.sleep(0.05)
        finally:
            probe.close()
