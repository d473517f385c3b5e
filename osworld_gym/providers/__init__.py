"""Desktop providers: where a desktop with a guest server comes from.

``make_provider("local")`` (or a config object) builds one; concrete providers are imported
lazily so ``import osworld_gym`` pulls in no provider SDK.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from osworld_gym.providers.base import Desktop, Provider, ProviderConfig

if TYPE_CHECKING:
    from osworld_gym.tasks.model import Task

PROVIDER_NAMES = ("local", "docker", "qemu", "remote")
S = TypeVar("S")

__all__ = [
    "Desktop",
    "Provider",
    "ProviderConfig",
    "PROVIDER_NAMES",
    "lazy_exports",
    "make_provider",
    "settle_session",
]


def lazy_exports(package: str, module: str, names: Sequence[str]) -> Callable[[str], Any]:
    """A provider kind's package ``__getattr__``: its public names, loaded on first use.

    ``osworld_gym.providers.local`` exports ``LocalProvider`` without importing it, so a
    submodule (a desktop's own helper run as ``python -m`` inside the sandbox, the image
    builder, a config) can be imported without loading the whole provider and its SDK.

    Args:
        package: The package's ``__name__`` (for the error message).
        module: The module that defines the names.
        names: The names to export (the package's ``__all__``).
    """

    def load(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(module), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return load


def make_provider(
    spec: str | ProviderConfig | Provider | None = None,
    *,
    screen_size: tuple[int, int] | None = None,
    tasks: Iterable[Task] = (),
) -> Provider:
    """Build a provider from a name, a config object, or pass a provider through.

    Args:
        spec: ``"local"`` (the default), a provider config such as
            ``LocalProviderConfig``, or a ready provider.
        screen_size: Screen size for a provider given by name; a config or provider must
            already have this size.
        tasks: The tasks its desktops will run: a local or docker config that leaves its
            session open (``session=None``) gets the one they need
            (``session_for()``).

    Raises:
        ValueError: unknown name or config type; the message lists what is available.
    """
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    if spec is None or spec == "local":
        spec = LocalProviderConfig()
        if screen_size is not None:
            spec = LocalProviderConfig(screen_size=tuple(screen_size))  # type: ignore[arg-type]
    spec = settle_session(spec, tasks)
    docker_provider = _make_docker_provider(spec, screen_size, tasks)
    if docker_provider is not None:
        return docker_provider
    vm_provider = _make_vm_provider(spec, screen_size, tasks)
    if vm_provider is not None:
        return vm_provider
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


def _make_vm_provider(
    spec: str | ProviderConfig | Provider | None,
    screen_size: tuple[int, int] | None,
    tasks: Iterable[Task],
) -> Provider | None:
    """The ``qemu`` (its session settled) or ``remote`` provider of a name or config; else None."""
    from osworld_gym.providers.qemu.provider import QemuProvider, QemuProviderConfig
    from osworld_gym.providers.remote.provider import RemoteProvider, RemoteProviderConfig

    if spec == "remote":
        raise ValueError(
            "the remote provider needs guest URLs: pass "
            "RemoteProviderConfig(urls=('http://host:5000', ...), token=...) as provider"
        )
    if spec == "qemu":
        spec = QemuProviderConfig.from_built_image(screen_size=screen_size)
    elif not isinstance(spec, (QemuProviderConfig, RemoteProviderConfig)):
        return None
    if screen_size is not None and tuple(spec.screen_size) != tuple(screen_size):
        raise ValueError(
            f"the provider's screen size {spec.screen_size} differs from the "
            f"requested {tuple(screen_size)}; configure both the same"
        )
    if isinstance(spec, RemoteProviderConfig):
        return RemoteProvider(spec)
    return QemuProvider(settle_session(spec, tasks))


def settle_session(spec: S, tasks: Iterable[Task]) -> S:
    """A config that leaves its session open, with the one ``tasks`` need.

    Local, docker and qemu configs of our image. Anything else (a name, a chosen session,
    OSWorld's official image or VM, a ready provider) is returned as it is. See
    ``session_for()``.
    """
    from osworld_gym.providers.local.provider import LocalProviderConfig
    from osworld_gym.providers.qemu.config import QemuProviderConfig
    from osworld_gym.providers.session_choice import session_for

    if isinstance(spec, LocalProviderConfig) and spec.session is None:
        return dataclasses.replace(spec, session=session_for(tasks, sandbox=spec.sandbox))
    # Our image's VM learns its session through guest_env; OSWorld's VM has its own desktop.
    if isinstance(spec, QemuProviderConfig) and spec.session is None and spec.guest_env:
        return dataclasses.replace(spec, session=session_for(tasks, in_image=True))
    try:
        from osworld_gym.providers.docker.provider import DockerProviderConfig
    except ImportError:  # without its optional dependencies there is no docker config either
        return spec
    if isinstance(spec, DockerProviderConfig) and spec.session is None and not spec.official:
        return dataclasses.replace(spec, session=session_for(tasks, in_image=True))
    return spec


def _make_docker_provider(
    spec: str | ProviderConfig | Provider | None,
    screen_size: tuple[int, int] | None,
    tasks: Iterable[Task],
) -> Provider | None:
    """The ``docker`` provider for its name or config (its session settled); None for others."""
    from osworld_gym.providers.docker.provider import DockerProvider, DockerProviderConfig

    if spec == "docker":
        spec = DockerProviderConfig()
        if screen_size is not None:
            spec = DockerProviderConfig(screen_size=tuple(screen_size))  # type: ignore[arg-type]
    elif not isinstance(spec, DockerProviderConfig):
        return None
    if screen_size is not None and tuple(spec.screen_size) != tuple(screen_size):
        raise ValueError(
            f"the provider's screen size {spec.screen_size} differs from the "
            f"requested {tuple(screen_size)}; configure both the same"
        )
    return DockerProvider(settle_session(spec, tasks))
