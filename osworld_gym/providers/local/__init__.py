"""The ``local`` provider: desktops on this host, each an X server and a sandboxed session.

- ``provider``: ``LocalProvider``, ``LocalProviderConfig``, ``LocalDesktop``.
- ``components``, ``x_server``, ``x_auth``, ``session``, ``guest``: the parts a desktop starts.
- ``sandbox``, ``sandbox_init``, ``isolation``, ``identity``, ``split_identity``, ``outbound``,
  ``environment``, ``limits``, ``folders``: what its programs see, who they are, their limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osworld_gym.providers import lazy_exports

if TYPE_CHECKING:
    from osworld_gym.providers.local.provider import (
        LocalDesktop,
        LocalProvider,
        LocalProviderConfig,
    )

__all__ = ["LocalDesktop", "LocalProvider", "LocalProviderConfig"]
__getattr__ = lazy_exports(__name__, "osworld_gym.providers.local.provider", __all__)
