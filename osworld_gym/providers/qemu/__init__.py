"""The ``qemu`` provider: desktops in virtual machines (OSWorld's images or the qemu recipe).

- ``provider``: ``QemuProvider``, ``QemuDesktop``; ``config``: ``QemuProviderConfig``.
- ``command`` (the qemu command line), ``qmp`` (its monitor), ``state`` (snapshots, leftovers),
  ``bench`` (the snapshot benchmark).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osworld_gym.providers import lazy_exports

if TYPE_CHECKING:
    from osworld_gym.providers.qemu.provider import QemuDesktop, QemuProvider, QemuProviderConfig

__all__ = ["QemuDesktop", "QemuProvider", "QemuProviderConfig"]
__getattr__ = lazy_exports(__name__, "osworld_gym.providers.qemu.provider", __all__)
