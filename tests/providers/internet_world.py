"""A made-up internet for the outbound-link tests: nothing of it leaves this machine.

Run as root in a network namespace of its own (``unshare --net python internet_world.py``):
that namespace plays the host. A second namespace plays the internet: a web server at
203.0.113.10 (a documentation address), reached through a pair of TAP devices that a thread
joins frame by frame (this kernel may lack veth). The "host" also serves on its loopback and
on its own address, which a desktop must not reach. A `local` desktop with internet is
launched in the "host"; each probe runs in the desktop as its programs would, and the results
go to standard output as JSON for the test to judge.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000
_CLONE_NEWNET = 0x40000000

HOST_ADDRESS = "198.51.100.1"
ROUTER_ADDRESS = "198.51.100.2"
WEB_ADDRESS = "203.0.113.10"
PAGE = "hello from the made-up internet\n"


def _ip(*words: str, netns: int | None = None) -> None:
    enter = ["nsenter", f"--net=/proc/{netns}/ns/net"] if netns else []
    subprocess.run([*enter, "ip", *words], check=True)


def _setns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(fd)


def _open_tap(name: str, netns: int | None = None) -> int:
    """A TAP device named ``name`` in this namespace, or in process ``netns``'s."""
    result: list[int] = []

    def make() -> None:  # setns moves the calling thread only
        if netns is not None:
            _setns(f"/proc/{netns}/ns/net")
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
        result.append(fd)

    thread = threading.Thread(target=make)
    thread.start()
    thread.join()
    return result[0]


def _bridge(a: int, b: int) -> None:
    """Copy every frame between two TAP devices, both ways (a veth pair in user space)."""
    while True:
        for fd in select.select([a, b], [], [])[0]:
            frame = os.read(fd, 65536)
            try:
                os.write(b if fd == a else a, frame)
            except OSError:  # the other side is down (not up yet): the frame is lost, as on a wire
                pass


def _serve(directory: str, address: str, netns: int | None = None) -> subprocess.Popen[bytes]:
    enter = ["nsenter", f"--net=/proc/{netns}/ns/net"] if netns else []
    return subprocess.Popen(
        [
            *enter,
            sys.executable,
            "-m",
            "http.server",
            "--bind",
            address,
            "--directory",
            directory,
            "8080",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_serving(address: str, netns: int | None = None) -> None:
    probe = f"import socket; socket.create_connection(('{address}', 8080), timeout=1).close()"
    enter = ["nsenter", f"--net=/proc/{netns}/ns/net"] if netns else []
    for _ in range(200):
        if subprocess.run([*enter, sys.executable, "-c", probe], capture_output=True).returncode:
            threading.Event().wait(0.05)
        else:
            return
    raise RuntimeError(f"nothing serves {address}:8080")


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from desktop_helpers import launch_desktop

    _ip("link", "set", "lo", "up")
    internet = subprocess.Popen(["unshare", "--net", "sleep", "600"])
    served: list[subprocess.Popen[bytes]] = []
    try:
        world = internet.pid
        for _ in range(200):  # until unshare has made the namespace and exec'd sleep
            if os.readlink(f"/proc/{world}/ns/net") != os.readlink("/proc/self/ns/net"):
                if Path(f"/proc/{world}/comm").read_text().strip() == "sleep":
                    break
            threading.Event().wait(0.01)
        host_tap, world_tap = _open_tap("uplink"), _open_tap("router", netns=world)
        threading.Thread(target=_bridge, args=(host_tap, world_tap), daemon=True).start()
        _ip("addr", "add", f"{HOST_ADDRESS}/24", "dev", "uplink")
        _ip("link", "set", "uplink", "up")
        _ip("route", "add", "default", "via", ROUTER_ADDRESS)
        _ip("link", "set", "lo", "up", netns=world)
        _ip("addr", "add", f"{WEB_ADDRESS}/32", "dev", "lo", netns=world)
        _ip("addr", "add", f"{ROUTER_ADDRESS}/24", "dev", "router", netns=world)
        _ip("link", "set", "router", "up", netns=world)
        pages = tempfile.mkdtemp()
        Path(pages, "page.txt").write_text(PAGE)
        os.chmod(pages, 0o755)
        served += [
            _serve(pages, WEB_ADDRESS, netns=world),
            _serve(pages, "127.0.0.1"),  # the host's loopback
            _serve(pages, HOST_ADDRESS),  # the host's own address
        ]
        _wait_serving(WEB_ADDRESS)
        _wait_serving("127.0.0.1")
        _wait_serving(HOST_ADDRESS)
        results: dict[str, object] = {}
        with launch_desktop() as desktop:

            def probe(name: str, command: str) -> None:
                done = desktop.client.execute(command, shell=True)
                results[name] = [done.returncode, done.output, done.error]

            def fetch(name: str, address: str) -> None:
                probe(name, f"curl -sS -m 5 http://{address}:8080/page.txt")

            results["internet"] = desktop.internet
            fetch("web", WEB_ADDRESS)
            fetch("host address", HOST_ADDRESS)
            fetch("host loopback", "127.0.0.1")
            fetch("gateway", "10.0.2.2")
            fetch("metadata", "169.254.169.254")
            probe("resolv.conf", "cat /etc/resolv.conf")
            probe("flush the filter", "iptables -F OUTPUT")
            probe("own namespace", "unshare -rn iptables -F OUTPUT && curl -sS -m 5 "
                  f"http://{HOST_ADDRESS}:8080/page.txt")  # fmt: skip
            desktop.reset()
            fetch("web after reset", WEB_ADDRESS)
            fetch("host address after reset", HOST_ADDRESS)
        print(json.dumps(results))
    finally:
        for proc in served:
            proc.kill()
        internet.kill()
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(10)
    sys.exit(main())
