"""OSWorld's fixed in-desktop service ports, and where the host reaches them on each desktop.

OSWorld's tasks start Chrome with ``--remote-debugging-port=1337`` and forward port 9222 to it with
``socat`` (the host's Playwright connects to 9222 over CDP); VLC's HTTP interface, which the
``vlc_playing_info`` getter reads, listens on 8080 (``docs/design/osworld-protocol.md#ports``). On
OSWorld's VM each desktop has its own network, so these numbers never collide. Our ``local`` and
``docker`` desktops share the host's network, so each desktop reserves a free loopback port per
service and tells its processes through ``OSWORLD_GYM_PORT_<number>`` variables; the commands tasks
run (``google-chrome``, ``socat``, ``vlc``) go through small wrappers in the desktop that translate
OSWorld's number into the desktop's own (``osworld_gym.providers.desktop.bin``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Service name -> the port OSWorld's tasks and host code use for it inside the desktop.
OSWORLD_SERVICE_PORTS: Mapping[str, int] = MappingProxyType(
    {
        "cdp": 9222,  # what the host connects to (socat forwards it to Chrome's debugging port)
        "chrome_debugging": 1337,  # Chrome's own --remote-debugging-port in the task files
        "vlc": 8080,  # VLC's HTTP interface (password "password")
    }
)

# Services the host side connects to (setup steps and getters); the rest are internal.
HOST_FACING_SERVICES = ("cdp", "vlc")


def port_variable(osworld_port: int) -> str:
    """The environment variable that carries a desktop's own port for an OSWorld port.

    >>> port_variable(9222)
    'OSWORLD_GYM_PORT_9222'
    """
    return f"OSWORLD_GYM_PORT_{osworld_port}"


def port_environment(ports: Mapping[str, int]) -> dict[str, str]:
    """The variables a desktop's processes get for its service ports (by service name).

    >>> port_environment({"cdp": 20001, "vlc": 20002})
    {'OSWORLD_GYM_PORT_9222': '20001', 'OSWORLD_GYM_PORT_8080': '20002'}
    """
    return {port_variable(OSWORLD_SERVICE_PORTS[name]): str(port) for name, port in ports.items()}


def service_urls(host: str, ports: Mapping[str, int]) -> dict[str, str]:
    """``http://host:port`` of each host-facing service of a desktop.

    >>> service_urls("127.0.0.1", {"cdp": 20001, "chrome_debugging": 20003, "vlc": 20002})
    {'cdp': 'http://127.0.0.1:20001', 'vlc': 'http://127.0.0.1:20002'}
    """
    return {name: f"http://{host}:{ports[name]}" for name in HOST_FACING_SERVICES if name in ports}
