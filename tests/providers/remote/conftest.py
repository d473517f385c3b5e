"""Fixtures of the remote-provider tests: local desktops to attach to and an SSH server."""

from __future__ import annotations

import collections.abc

import pytest
from desktop_helpers import launch_desktop
from fixture_marks import needs
from sshd_helpers import running_sshd

from osworld_gym.providers.local.provider import LocalDesktop
from osworld_gym.providers.ssh_tunnel import SSHConfig


@pytest.fixture(scope="package")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[SSHConfig]:
    """A real SSH server on loopback, logged in to as root with a generated key."""
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server.ssh_config()


@pytest.fixture(scope="package")
@needs("desktop")
def guests() -> collections.abc.Iterator[list[LocalDesktop]]:
    """Two running guest servers (local desktops, each with its own token) to attach to."""
    with launch_desktop() as first, launch_desktop() as second:
        yield [first, second]
