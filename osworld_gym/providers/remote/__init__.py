"""The ``remote`` provider: guests that already run elsewhere, reached over HTTP or an SSH tunnel.

- ``provider``: ``RemoteProvider``, ``RemoteProviderConfig``, ``RemoteGuest``, ``SSHConfig``.
- ``reset``: how a remote desktop is put back between episodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osworld_gym.providers import lazy_exports

if TYPE_CHECKING:
    from osworld_gym.providers.remote.provider import (
        CommandReset,
        GuestScriptReset,
        NoReset,
        RemoteDesktop,
        RemoteGuest,
        RemoteProvider,
        RemoteProviderConfig,
        ResetStrategy,
        SSHConfig,
    )

__all__ = [
    "CommandReset",
    "GuestScriptReset",
    "NoReset",
    "RemoteDesktop",
    "RemoteGuest",
    "RemoteProvider",
    "RemoteProviderConfig",
    "ResetStrategy",
    "SSHConfig",
]
__getattr__ = lazy_exports(__name__, "osworld_gym.providers.remote.provider", __all__)
