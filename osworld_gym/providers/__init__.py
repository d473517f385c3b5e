"""Desktop providers: where a desktop with a guest server comes from.

``make_provider("local")`` (or a config object) builds one; concrete providers are imported
lazily so ``import osworld_gym`` pulls in no provider SDK.
"""

from __future__ import annotations

import difflib

from osworld_gym.providers.base import Desktop, Provider, ProviderConfig

PROVIDER_NAMES = ("local",)

__all__ = ["Desktop", "Provider", "ProviderConfig", "PROVIDER_NAMES", "make_provider"]


def make_provider(
    spec: str | ProviderConfig | Provider | None = None,
    *,
    screen_size: tuple[int, int] | None = None,
) -> Provider:
    """Build a provider from a name, a config object, or pass a provider through.

    Args:
        spec: ``"local"`` (the default), a provider config such as
            :class:`~osworld_gym.providers.local.LocalProviderConfig`, or a ready provider.
        screen_size: Screen size for a provider given by name; a config or provider must
            already have this size.

    Raises:
        ValueError: unknown name or config type; the message lists what is available.
    """
    from osworld_gym.providers.local import LocalProvider, LocalProviderConfig

    if spec is None or spec == "local":
        config = LocalProviderConfig()
        if screen_size is not None:
            config = LocalProviderConfig(screen_size=tuple(screen_size))  # type: ignore[arg-type]
        return LocalProvider(config)
    provider = spec if isinstance(spec, Provider) else None
    if isinstance(spec, LocalProviderConfig):
        provider = LocalProvider(spec)
    if provider is not None:
        if screen_size is not None and tuple(provider.config.screen_size) != tuple(screen_size):
            raise ValueError(
                f"the provider's screen size {provider.config.screen_size} differs from the "
                f"requested {tuple(screen_size)}; configure both the same"
            )
        return provider
    if isinstance(spec, str):
        close = difflib.get_close_matches(spec, PROVIDER_NAMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown provider {spec!r}{hint} (available: {list(PROVIDER_NAMES)})")
    raise ValueError(f"Unsupported provider config: {spec!r}")
