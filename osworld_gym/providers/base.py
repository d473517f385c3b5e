"""The provider interface: something that launches, resets and stops desktops running a guest.

A ``Provider`` is a factory configured once; each ``Provider.launch()`` returns a
``Desktop``, one running desktop with a guest server reachable over HTTP. Concrete
providers implement only the ``_impl`` hooks; the common work (logging, counting, error
wrapping with the desktop's logs) lives here.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from urllib.parse import urlsplit

from osworld_gym.errors import DesktopDiedError, ProviderError
from osworld_gym.guest.client import ClientConfig, GuestClient
from osworld_gym.providers.services import OSWORLD_SERVICE_PORTS, service_urls

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProviderConfig:
    """Settings every provider shares.

    Attributes:
        screen_size: (width, height) of the desktop in pixels.
        boot_timeout: Seconds a launch may take before it counts as failed.
        client: Timeouts and retries of the guest client handed out with each desktop.
    """

    screen_size: tuple[int, int] = (1920, 1080)
    boot_timeout: float = 60.0
    client: ClientConfig = ClientConfig()


class Desktop(ABC):
    """One running desktop with a guest server.

    ``close()`` is idempotent, and ``with desktop:`` closes it.
    """

    def __init__(self) -> None:
        self._client: GuestClient | None = None
        self._closed = False
        self.resets = 0

    @property
    @abstractmethod
    def endpoint(self) -> str:
        """Base URL of the guest server, e.g. ``http://127.0.0.1:40123``."""

    @property
    def token(self) -> str | None:
        """The shared token the guest requires, if any."""
        return None

    @property
    def client_config(self) -> ClientConfig:
        """Client settings for this desktop."""
        return ClientConfig()

    @property
    def service_urls(self) -> dict[str, str]:
        """Where the host reaches the desktop's OSWorld services, by name (``"cdp"``, ``"vlc"``).

        The default is OSWorld's own: the guest's host at the fixed ports (9222, 8080), as on
        a VM with a network of its own. Desktops that share the host's network override it.
        """
        host = urlsplit(self.endpoint).hostname or "127.0.0.1"
        return service_urls(host, OSWORLD_SERVICE_PORTS)

    @property
    def client(self) -> GuestClient:
        """A client for this desktop's guest (rebuilt when the endpoint changes)."""
        if self._client is None or self._client.base_url != self.endpoint.rstrip("/"):
            if self._client is not None:
                self._client.close()
            self._client = GuestClient(self.endpoint, token=self.token, config=self.client_config)
        return self._client

    def reset(self) -> None:
        """Bring the desktop back to a clean state (apps closed, home restored).

        Raises:
            ProviderError: the reset failed; the message carries the desktop's recent logs.
        """
        self._ensure_open()
        start = time.perf_counter()
        try:
            self._reset_impl()
        except ProviderError:
            raise
        except Exception as e:
            raise ProviderError(f"reset of {self!r} failed: {e}\n{self.logs()}") from e
        self.resets += 1
        logger.info("reset %r in %.2f s", self, time.perf_counter() - start)

    def check(self) -> None:
        """Raise ``DesktopDiedError`` if a part of the desktop is no longer running."""
        self._ensure_open()
        self._check_impl()

    def quick_check(self) -> None:
        """``check()``, where it is cheap enough to run before every observation.

        The env calls it at each observation, so a part that dies mid-episode without breaking
        the guest's answers (the window manager, the session bus) ends the episode as an
        infrastructure fault. Providers whose check costs a round trip (to a guest, a Docker
        engine or a monitor) keep this default, which checks nothing: their desktops' faults
        surface as failed guest calls.

        Raises:
            DesktopDiedError: a part of the desktop has stopped.
        """
        self._ensure_open()
        self._quick_check_impl()

    def close(self) -> None:
        """Stop the desktop and everything it started. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._client is not None:
            self._client.close()
        self._close_impl()

    def logs(self) -> str:
        """Recent log output of the desktop's processes, for error messages."""
        return ""

    def _ensure_open(self) -> None:
        if self._closed:
            raise ProviderError(f"{self!r} is closed")

    @abstractmethod
    def _reset_impl(self) -> None: ...

    @abstractmethod
    def _check_impl(self) -> None: ...

    def _quick_check_impl(self) -> None:  # noqa: B027 - optional hook, default: no check
        """Override with a check of local state only (no network round trip)."""

    @abstractmethod
    def _close_impl(self) -> None: ...

    def __enter__(self) -> Desktop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Provider(ABC):
    """Launches desktops of one kind. Subclasses implement ``_launch_impl()``."""

    name = "base"

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.launches = 0
        self.failed_launches = 0

    def launch(self) -> Desktop:
        """Start a desktop and wait until its guest answers.

        Raises:
            ProviderError: the desktop could not be started; the message says why.
        """
        self.launches += 1
        start = time.perf_counter()
        try:
            desktop = self._launch_impl()
        except DesktopDiedError as e:
            self.failed_launches += 1
            raise ProviderError(f"{self.name} desktop died while starting: {e}") from e
        except ProviderError:
            self.failed_launches += 1
            raise
        except Exception as e:
            self.failed_launches += 1
            raise ProviderError(f"{self.name} desktop failed to start: {e}") from e
        logger.info("launched %r in %.2f s", desktop, time.perf_counter() - start)
        return desktop

    @abstractmethod
    def _launch_impl(self) -> Desktop: ...
