"""Desktop providers: where a desktop with a guest server comes from.

``make_provider("local")`` (or a config object) builds one; concrete providers are imported
lazily so ``import osworld_gym`` pulls in no provider SDK.
"""

from __future__ import annotations

import difflib

from osworld_gym.providers.base import Desktop, Provider, ProviderConfig

PROVIDER_NAMES = ("local",)

__all__ = ["Desktop", "Provider", "ProviderConfig", "PROVIDER_NAMES", "make_provider"]


def make_provider(spec: str | ProviderConfig | Provider | None = None) -> Provider:
    """Build a provider from a name, a config object, or pass a provider through.

    Args:
        spec: ``"local"`` (the default), a provider config such as
            :class:`~osworld_gym.providers.local.LocalProviderConfig`, or a ready provider.

    Raises:
        ValueError: unknown name or config type; the message lists what is available.
    """
    from osworld_gym.providers.local import LocalProvider, LocalProviderConfig

    if spec is None or spec == "local":
        return LocalProvider(LocalProviderConfig())
    if isinstance(spec, Provider):
        return spec
    if isinstance(spec, LocalProviderConfig):
        return LocalProvider(spec)
    if isinstance(spec, str):
        close = difflib.get_close_matches(spec, PROVIDER_NAMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown provider {spec!r}{hint} (available: {list(PROVIDER_NAMES)})")
    raise ValueError(f"Unsupported provider config: {spec!r}")
