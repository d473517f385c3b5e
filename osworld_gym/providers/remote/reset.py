"""How a ``remote`` desktop is brought back to a clean state.

The guest server itself has no reset endpoint: a desktop that runs elsewhere is reset by
whoever owns it. A strategy says how:

- ``NoReset`` leaves the desktop as it is (a desktop reset by other means, or tasks that
  tolerate leftovers);
- ``CommandReset`` runs a command on this host or, over the desktop's SSH connection, on
  the SSH server, e.g. ``virsh snapshot-revert vm clean`` or ``VBoxManage snapshot ... restore``;
- ``GuestScriptReset`` runs a bash script inside the guest, the guest's own reset (close
  apps, restore HOME from a pristine copy): through ``/run_bash_script`` on our guest, through
  ``/execute`` on OSWorld's (whose ``/run_bash_script`` answers 500 without the result).

After any strategy the provider waits until the guest answers again.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from osworld_gym.errors import GuestError, ProviderError

if TYPE_CHECKING:
    from osworld_gym.providers.remote.provider import RemoteDesktop

logger = logging.getLogger(__name__)

_OUTPUT_TAIL = 2000
COMMAND_LOCATIONS = ("local", "ssh")


@runtime_checkable
class ResetStrategy(Protocol):
    """Something that resets a remote desktop; raises ``ProviderError`` on failure."""

    def reset(self, desktop: RemoteDesktop) -> None:
        """Bring ``desktop`` back to its clean state."""
        ...


@dataclass(frozen=True)
class NoReset:
    """Leave the desktop as it is; a reset only checks that the guest still answers."""

    def reset(self, desktop: RemoteDesktop) -> None:
        """Do nothing."""


@dataclass(frozen=True)
class CommandReset:
    """Run a shell command that restores the desktop (a VM snapshot revert, a script).

    The command is a ``str.format`` template; the fields are shell-quoted: ``{url}`` (the
    guest's URL as configured), ``{host}``, ``{port}`` (taken from it) and ``{index}`` (the
    guest's position in the provider's list). Run locally, the same values are also in the
    environment as ``OSWORLD_GYM_GUEST_URL``, ``..._HOST``, ``..._PORT`` and ``..._INDEX``.

    Attributes:
        command: The shell command template.
        where: ``"local"`` (``/bin/sh -c`` on this host) or ``"ssh"`` (on the desktop's SSH
            server; the guest must be configured with ``ssh``).
        timeout: Seconds the command may run.
    """

    command: str
    where: str = "local"
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.where not in COMMAND_LOCATIONS:
            raise ValueError(f"where must be one of {COMMAND_LOCATIONS}, got {self.where!r}")

    def render(self, desktop: RemoteDesktop) -> str:
        """The command with the desktop's fields filled in (shell-quoted)."""
        fields = {key.lower(): shlex.quote(value) for key, value in _fields(desktop).items()}
        return self.command.format(**fields)

    def reset(self, desktop: RemoteDesktop) -> None:
        """Run the command; a non-zero exit status fails the reset."""
        command = self.render(desktop)
        if self.where == "ssh":
            if desktop.tunnel is None:
                raise ProviderError(f"CommandReset(where='ssh') needs an SSH server: {desktop!r}")
            result = desktop.tunnel.run(command, timeout=self.timeout)
            status, output = result.returncode, result.output
        else:
            env = dict(os.environ)
            env.update({f"OSWORLD_GYM_GUEST_{k}": v for k, v in _fields(desktop).items()})
            try:
                done = subprocess.run(
                    ["/bin/sh", "-c", command],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=self.timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired as e:
                raise ProviderError(f"reset command timed out after {self.timeout:g} s") from e
            status, output = done.returncode, done.stdout.decode(errors="replace")
        if status != 0:
            raise ProviderError(
                f"reset command exited with {status} ({self.where}): {command}\n"
                f"{output[-_OUTPUT_TAIL:]}"
            )
        logger.debug("reset command for %r done: %s", desktop, command)


@dataclass(frozen=True)
class GuestScriptReset:
    """Run a bash script inside the guest (as the guest's user, in its HOME).

    The script runs once per reset (OSWorld's host re-runs a failed-looking script three times;
    a reset must not repeat its side effects). See ``GuestClient.run_script`` for how each
    server runs it.

    Attributes:
        script: The script, e.g. ``"pkill -u user -f soffice; rsync -a --delete
            /opt/home-clean/ ~/"``.
        timeout: Seconds the script may run (our guest allows up to 600, OSWorld's 120).
    """

    script: str
    timeout: float = 120.0

    def reset(self, desktop: RemoteDesktop) -> None:
        """Run the script; a non-zero exit status fails the reset."""
        try:
            result = desktop.client.run_script(self.script, timeout=self.timeout)
        except GuestError as e:
            raise ProviderError(f"reset script failed in {desktop!r}: {e}") from e
        if result.returncode != 0:
            raise ProviderError(
                f"reset script exited with {result.returncode} in {desktop!r}:\n"
                f"{result.output[-_OUTPUT_TAIL:]}"
            )


def _fields(desktop: RemoteDesktop) -> dict[str, str]:
    return {
        "URL": desktop.url,
        "HOST": desktop.guest_host,
        "PORT": str(desktop.guest_port),
        "INDEX": str(desktop.index),
    }
