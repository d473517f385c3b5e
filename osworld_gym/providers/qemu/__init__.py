"""The ``qemu`` provider: desktops in virtual machines (OSWorld's images or the qemu recipe).

- ``provider``: ``QemuProvider``, ``QemuDesktop``; ``config``: ``QemuProviderConfig``.
- ``command`` (the qemu command line), ``qmp`` (its monitor), ``state`` (snapshots, leftovers),
  ``bench`` (the snapshot benchmark).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osworld_gym.providers.qemu.provider import QemuDesktop, QemuProvider, QemuProviderConfig

# Loaded on first use: the desktop's own helpers in this folder run as ``python -m`` inside
# the desktop, and importing the package must not load the whole provider there.
_PROVIDER_MODULE = "osworld_gym.providers.qemu.provider"
__all__ = ["QemuDesktop", "QemuProvider", "QemuProviderConfig"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(_PROVIDER_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
