"""The ``docker`` provider: desktops in containers of the project's image (or OSWorld's).

- ``provider``: ``DockerProvider``, ``DockerProviderConfig``, ``DockerDesktop``.
- ``client`` (the engine), ``image`` (building the image), ``network`` (its networks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osworld_gym.providers import lazy_exports

if TYPE_CHECKING:
    from osworld_gym.providers.docker.provider import (
        DockerDesktop,
        DockerProvider,
        DockerProviderConfig,
    )

__all__ = ["DockerDesktop", "DockerProvider", "DockerProviderConfig"]
__getattr__ = lazy_exports(__name__, "osworld_gym.providers.docker.provider", __all__)
