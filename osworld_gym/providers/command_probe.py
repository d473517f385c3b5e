"""Which commands a provider's desktops have: the "apps present" half of "runnable here".

- ``local``: the host's commands (the local desktop sees the host's ``/usr`` read-only) plus the
  desktop wrappers of ``osworld_gym.providers.desktop.bin``, each counted only when what it
  wraps is on the host (as the desktop installs them).
- ``docker``: asked of the image itself (``sh -c 'command -v ...'`` in a throw-away container).
- a running guest (any provider, ``remote`` included): ``command -v`` through its ``/execute``.
- otherwise (``qemu`` or ``remote`` without a guest to ask): unknown, and the result says so.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from osworld_gym.errors import OSWorldGymError

if TYPE_CHECKING:
    from osworld_gym.guest.client import GuestClient

logger = logging.getLogger(__name__)

# Where the image's desktop session finds commands before its default PATH (vm_images/rootfs).
IMAGE_EXTRA_PATH = ("/opt/osworld-gym/bin",)

# Prints "+cmd" or "-cmd" for each argument: the same answer from a container or a guest.
_PROBE_SCRIPT = (
    'for c do if command -v "$c" >/dev/null 2>&1; then echo "+$c"; else echo "-$c"; fi; done'
)


@dataclass(frozen=True)
class ProbeResult:
    """Whether each command is present: True, False, or None (not known).

    Attributes:
        present: Command -> presence.
        where: What was asked (``"this host"``, ``"image osworld-gym/desktop:latest"``).
        note: Why presence is unknown, when it is.
    """

    present: Mapping[str, bool | None] = field(default_factory=dict)
    where: str = ""
    note: str | None = None


class CommandProbe(Protocol):
    """Answers which of some commands a provider's desktops have."""

    def probe(self, commands: Collection[str]) -> ProbeResult:
        """Presence of each command."""
        ...


def _parse_probe_output(text: str, commands: Collection[str]) -> dict[str, bool | None]:
    found: dict[str, bool | None] = dict.fromkeys(commands)
    for line in text.splitlines():
        if line[:1] in "+-" and line[1:] in found:
            found[line[1:]] = line[0] == "+"
    return found


class LocalCommandProbe:
    """The ``local`` desktop's commands: the host's plus the desktop wrappers that work here.

    Args:
        wrappers: Wrapper commands the local desktop has (default: those of
            ``osworld_gym.providers.desktop.bin.available_wrappers()``, i.e. whose wrapped
            program is on this host).
        path: The host ``PATH`` to search (default: this process's, plus the sbin folders).
    """

    def __init__(self, wrappers: Collection[str] | None = None, path: str | None = None) -> None:
        if wrappers is None:
            from osworld_gym.providers.desktop.bin import available_wrappers

            wrappers = available_wrappers()
        self.wrappers = frozenset(wrappers)
        default = os.environ.get("PATH", "/usr/bin:/bin")
        extra = [d for d in ("/usr/local/sbin", "/usr/sbin", "/sbin") if d not in default]
        self.path = path if path is not None else os.pathsep.join([default, *extra])

    def has(self, command: str) -> bool:
        """Whether the local desktop can run ``command``."""
        return command in self.wrappers or shutil.which(command, path=self.path) is not None

    def probe(self, commands: Collection[str]) -> ProbeResult:
        """Presence of each command on this host's local desktops."""
        return ProbeResult({c: self.has(c) for c in commands}, "this host (local desktop)")


class DockerImageProbe:
    """Asks a desktop image which commands it has, in a throw-away container.

    Args:
        image: The image (``osworld-gym/desktop:latest`` by default).
        base_url: The Docker engine (None: ``DOCKER_HOST`` or the default socket).
        extra_path: Folders put before the image's ``PATH``, as its desktop session does.
    """

    def __init__(
        self,
        image: str = "osworld-gym/desktop:latest",
        base_url: str | None = None,
        extra_path: tuple[str, ...] = IMAGE_EXTRA_PATH,
    ) -> None:
        self.image, self.base_url, self.extra_path = image, base_url, extra_path

    def probe(self, commands: Collection[str]) -> ProbeResult:
        """Presence of each command in the image; unknown with the reason when it cannot ask."""
        where = f"image {self.image}"
        unknown = dict.fromkeys(commands)
        try:
            output = self._run(list(commands))
        except OSWorldGymError as e:
            return ProbeResult(unknown, where, str(e))
        return ProbeResult(_parse_probe_output(output, commands), where)

    def _run(self, commands: list[str]) -> str:
        from osworld_gym.providers.docker.client import connect, docker_sdk

        errors = docker_sdk().errors
        client = connect(self.base_url, timeout=120)
        try:
            client.images.get(self.image)
        except errors.ImageNotFound as e:
            raise OSWorldGymError(
                f"image {self.image} is not on the Docker engine: build it with "
                "`bash scripts/build_guest_image.sh` (or `osworld-gym image build`)"
            ) from e
        path = ":".join(self.extra_path)
        script = f'PATH="{path}:$PATH"; {_PROBE_SCRIPT}' if path else _PROBE_SCRIPT
        try:
            output = client.containers.run(
                self.image,
                ["-c", script, "probe", *commands],
                entrypoint="sh",
                remove=True,
                network_disabled=True,
                stdout=True,
                stderr=False,
            )
        except errors.DockerException as e:
            raise OSWorldGymError(f"could not run a probe container of {self.image}: {e}") from e
        finally:
            client.close()
        return output.decode(errors="replace") if isinstance(output, bytes) else str(output)


class GuestCommandProbe:
    """Asks a running guest server (any provider's desktop) through its ``/execute``.

    Args:
        client: The guest's client.
    """

    def __init__(self, client: GuestClient) -> None:
        self.client = client

    def probe(self, commands: Collection[str]) -> ProbeResult:
        """Presence of each command in that desktop; unknown with the reason on a guest error."""
        where = f"guest {self.client.base_url}"
        try:
            result = self.client.execute(["sh", "-c", _PROBE_SCRIPT, "probe", *commands])
        except OSWorldGymError as e:
            return ProbeResult(dict.fromkeys(commands), where, f"could not ask {where}: {e}")
        return ProbeResult(_parse_probe_output(result.output, commands), where)


class UnprobedCommands:
    """For providers whose desktops cannot be asked from here: every command is unknown.

    Args:
        provider: The provider's name, for the note.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def probe(self, commands: Collection[str]) -> ProbeResult:
        """Every command unknown, with a note on how to find out."""
        note = (
            f"apps on {self.provider} desktops are not probed from here; start one and pass "
            "its guest's URL (--guest-url) to ask it"
        )
        return ProbeResult(dict.fromkeys(commands), f"{self.provider} desktops", note)


def probe_for(
    provider: str,
    *,
    image: str | None = None,
    base_url: str | None = None,
    guest: GuestClient | None = None,
) -> CommandProbe:
    """The probe that answers for ``provider`` (a running ``guest``, when given, wins).

    Raises:
        ValueError: an unknown provider name.
    """
    if guest is not None:
        return GuestCommandProbe(guest)
    if provider == "local":
        return LocalCommandProbe()
    if provider == "docker":
        return DockerImageProbe(image or "osworld-gym/desktop:latest", base_url)
    if provider in ("qemu", "remote"):
        return UnprobedCommands(provider)
    raise ValueError(f"unknown provider {provider!r}: local, docker, qemu or remote")
