"""The ``remote`` provider: guests that already run elsewhere, reached over HTTP or an SSH tunnel.

- ``provider``: ``RemoteProvider``, ``RemoteProviderConfig``, ``RemoteGuest``, ``SSHConfig``.
- ``reset``: how a remote desktop is put back between episodes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

# Loaded on first use: the desktop's own helpers in this folder run as ``python -m`` inside
# the desktop, and importing the package must not load the whole provider there.
_PROVIDER_MODULE = "osworld_gym.providers.remote.provider"
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(_PROVIDER_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
