"""The ``docker`` provider: desktops in containers of the project's image (or OSWorld's).

- ``provider``: ``DockerProvider``, ``DockerProviderConfig``, ``DockerDesktop``.
- ``client`` (the engine), ``image`` (building the image), ``network`` (its networks).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osworld_gym.providers.docker.provider import (
        DockerDesktop,
        DockerProvider,
        DockerProviderConfig,
    )

# Loaded on first use: the desktop's own helpers in this folder run as ``python -m`` inside
# the desktop, and importing the package must not load the whole provider there.
_PROVIDER_MODULE = "osworld_gym.providers.docker.provider"
__all__ = ["DockerDesktop", "DockerProvider", "DockerProviderConfig"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(_PROVIDER_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
