"""The ``local`` provider: desktops on this host, each an X server and a sandboxed session.

- ``provider``: ``LocalProvider``, ``LocalProviderConfig``, ``LocalDesktop``.
- ``components``, ``x_server``, ``x_auth``, ``session``, ``guest``: the parts a desktop starts.
- ``sandbox``, ``sandbox_init``, ``isolation``, ``identity``, ``split_identity``, ``outbound``,
  ``environment``, ``limits``, ``folders``: what its programs see, who they are, their limits.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osworld_gym.providers.local.provider import (
        LocalDesktop,
        LocalProvider,
        LocalProviderConfig,
    )

# Loaded on first use: the desktop's own helpers in this folder run as ``python -m`` inside
# the desktop, and importing the package must not load the whole provider there.
_PROVIDER_MODULE = "osworld_gym.providers.local.provider"
__all__ = ["LocalDesktop", "LocalProvider", "LocalProviderConfig"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(_PROVIDER_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
