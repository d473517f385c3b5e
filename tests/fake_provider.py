"""A provider whose desktops need no X server, for fast tests of the env, pool and adapter logic.

``FakeProvider`` is a real ``osworld_gym.providers.base.Provider`` (and ``FakeDesktop`` a real
``Desktop``), so everything above the provider runs as it does on a ``local`` desktop::

    env = gym.make("OSWorld-v0", provider=FakeProvider(), tasks=[...task dicts...],
                   screen_size=FAKE_SCREEN)

Each desktop serves the OSWorld guest double (``osworld_guest_double``) on loopback: OSWorld's
own HTTP protocol, commands run for real with ``HOME`` set to the desktop's folder, and every
pyautogui call recorded instead of driving a display. Why the double rather than a lighter
in-process fake of our guest:

- it is a protocol the env really meets (OSWorld's official images), written from the protocol
  and already tested against the client, so the fake adds no second guest to keep in step;
- setup steps, actions and evaluator getters all go over real HTTP and run real commands, so a
  score comes from the real evaluator reading what the setup and the actions left behind
  (files in ``home``, the recorded input log);
- it costs almost nothing to start (one loopback server thread), and the one cost per step,
  the ``python -c`` program an action becomes, is kept small by running that Python without
  ``site`` (``-S``: the action code imports only the pyautogui stand-in and the standard
  library).

What it does not have: a screen (every screenshot is the same picture), an accessibility tree,
our guest's extended endpoints (``/health``, settle events, shared frames), and apps
(``/setup/launch`` records the command). Tests of those need a real desktop.

Faults: ``FakeDesktop.kill()`` stops the guest server, as a desktop that died would (its next
call fails, the env ends the episode with ``info["infra_error"]``, and the next reset launches
a new one); ``FakeProvider(fail_launches=N)`` fails the first N launches.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_guest_double import OSWorldGuestDouble, osworld_guest

from osworld_gym.errors import DesktopDiedError, ProviderError
from osworld_gym.guest.client import ClientConfig
from osworld_gym.providers.base import Desktop, Provider, ProviderConfig

FAKE_SCREEN = (640, 400)
# Quick to give up on a desktop that died: two retries, 50 ms apart.
FAKE_CLIENT = ClientConfig(connect_timeout=2.0, timeout=20.0, retries=2, retry_backoff=0.05)


@dataclass(frozen=True)
class FakeProviderConfig(ProviderConfig):
    """Settings of the fake provider.

    Attributes:
        root: Folder of the desktops' folders (None: a temp folder, removed with the last
            desktop's close).
    """

    screen_size: tuple[int, int] = FAKE_SCREEN
    boot_timeout: float = 10.0
    client: ClientConfig = FAKE_CLIENT
    root: str | None = None


class FakeProvider(Provider):
    """Launches ``FakeDesktop``s; safe to share between the envs of a pool (threads).

    Args:
        config: Its settings (default: ``FakeProviderConfig()``).
        fail_launches: The first this many launches fail with ``ProviderError``.

    Attributes:
        desktops: Every desktop it launched, in order (closed ones included).
    """

    name = "fake"

    def __init__(self, config: FakeProviderConfig | None = None, *, fail_launches: int = 0) -> None:
        super().__init__(config or FakeProviderConfig())
        self.config: FakeProviderConfig
        self.desktops: list[FakeDesktop] = []
        self._failures_left = fail_launches
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def _launch_impl(self) -> FakeDesktop:
        with self._lock:
            if self._failures_left > 0:
                self._failures_left -= 1
                raise ProviderError("fake desktop failed to start (planned)")
            number = next(self._numbers)
        desktop = FakeDesktop(self.config, number)
        with self._lock:
            self.desktops.append(desktop)
        return desktop

    def __deepcopy__(self, memo: dict[int, Any]) -> FakeProvider:
        """A new provider with the same settings and none of the desktops.

        ``gym.make(env.spec)`` copies the spec's arguments, this provider among them.
        """
        with self._lock:
            return FakeProvider(self.config, fail_launches=self._failures_left)

    def live(self) -> list[FakeDesktop]:
        """The desktops launched and not closed yet."""
        with self._lock:
            return [d for d in self.desktops if not d.closed]


class FakeDesktop(Desktop):
    """One OSWorld guest double on loopback, with its own home folder.

    Args:
        config: The provider's settings.
        number: Its number among the provider's desktops (in its folder's name).

    Attributes:
        guest: The double: ``home``, ``inputs()`` (the pyautogui calls), ``launched``,
            ``requests``.
    """

    def __init__(self, config: FakeProviderConfig, number: int) -> None:
        super().__init__()
        self._config = config
        self._own_root = config.root is None
        parent = Path(config.root) if config.root else Path(tempfile.mkdtemp(prefix="fake-desk-"))
        self.folder = parent / f"desktop-{number}"
        self._stack = contextlib.ExitStack()
        self.guest: OSWorldGuestDouble = self._stack.enter_context(
            osworld_guest(self.folder, config.screen_size, python_flags=("-S",))
        )
        self.dead = False

    @property
    def endpoint(self) -> str:
        """The double's URL."""
        return self.guest.url

    @property
    def client_config(self) -> ClientConfig:
        """Quick retries: a killed desktop fails its next call in a fraction of a second."""
        return self._config.client

    @property
    def closed(self) -> bool:
        """``close()`` was called."""
        return self._closed

    def kill(self) -> None:
        """Stop the guest server as if the desktop died (its next call fails)."""
        self.dead = self.guest.dead = True
        self._stack.close()

    def inputs(self) -> list[list[Any]]:
        """The pyautogui calls the actions made since the last reset."""
        return self.guest.inputs()

    def _reset_impl(self) -> None:
        if self.dead:
            raise DesktopDiedError("guest", None, "the fake desktop was killed")
        home = self.guest.home
        shutil.rmtree(home)
        (home / "Desktop").mkdir(parents=True)
        self.guest.input_log.unlink(missing_ok=True)
        with self.guest.lock:
            self.guest.requests.clear()
            self.guest.launched.clear()

    def _check_impl(self) -> None:
        if self.dead:
            raise DesktopDiedError("guest", None, "the fake desktop was killed")

    def _close_impl(self) -> None:
        self._stack.close()
        shutil.rmtree(self.folder.parent if self._own_root else self.folder, ignore_errors=True)

    def __repr__(self) -> str:
        return f"FakeDesktop({self.folder.name}, endpoint={self.guest.url!r})"
