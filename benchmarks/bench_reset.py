"""Reset latency side by side: local, docker (recreate, session), qemu (loadvm), OSWorld's Docker.

    python benchmarks/bench_reset.py [--resets 5] [--width 1280 --height 720] [--skip-qemu]
        [--image ID] [--sessions minimal gnome]

Every reset follows a dirtied episode (a file written, a terminal left open) and ends when the
guest answers again. Rows:

* ``local``: the local provider's reset (apps killed, HOME restored, session restarted), in
  its sandbox; ``local (no sandbox)`` the same with ``sandbox=False``, for the sandbox's cost.
* ``docker``: the docker provider's reset: the container is replaced by a fresh one from
  ``osworld-gym/desktop`` (needs a running engine and the built image).
* ``docker (session reset)``: its ``reset_mode="session"``: inside the running container,
  every process but Xvfb and the guest killed, HOME restored, the session restarted.
* ``qemu``: the qemu provider's ``loadvm`` (the QEMU helper's
  ``osworld_gym.providers.qemu.bench.measure_qemu_reset()``; the row is skipped, with the
  reason, when that provider or its qcow2 is missing).
* ``osworld-docker, same image``: OSWorld's Docker-provider reset applied to our image:
  ``container.stop()`` + ``remove()`` + its fixed 3 s pause, a new container, then ``GET
  /screenshot`` polled every 1 s until it answers
  (docs/design/osworld-protocol.md#official-docker-image).
* ``osworld-docker, VM boot``: what that reset costs when the container boots a VM, as OSWorld's
  ``happysixd/osworld-docker`` does: the same container and pause costs plus a cold QEMU boot
  of our qcow2 until its guest answers (the qemu row's ``boot_s``).

The local and docker rows run once per session of ``--sessions`` (``minimal``: openbox;
``gnome``: GNOME Shell laid out as OSWorld's VM, which a local reset keeps and the image's
resets start anew).

Ratios are "full boot / this row", the full boot being the VM-boot row when it was measured
(the same-image row otherwise). Targets (issue 7): docker < 3 s and qemu < 2 s, each at least
5x faster than a full boot.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Literal

import requests

from osworld_gym.providers.docker.provider import (
    DockerProvider,
    DockerProviderConfig,
    container_spec,
    ownership_labels,
)
from osworld_gym.providers.docker.provider import (
    start_container as start_desktop_container,
)
from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig
from osworld_gym.providers.ports import reserve_port
from osworld_gym.providers.session_choice import MINIMAL, SESSIONS

OSWORLD_PAUSE = 3.0  # stop_emulator's sleep after removing the container
OSWORLD_POLL = 1.0  # _start_emulator's sleep between /screenshot attempts


def dirty(desktop: Any) -> None:
    """An episode's traces: a file in HOME and a terminal left open."""
    desktop.client.execute("echo dirty > ~/dirty.txt", shell=True)
    desktop.client.launch(["xterm"])


def measure_resets(desktop: Any, resets: int) -> list[float]:
    times = []
    for _ in range(resets):
        dirty(desktop)
        start = time.perf_counter()
        desktop.reset()
        desktop.client.info(refresh=True)
        times.append(time.perf_counter() - start)
        assert "dirty" not in desktop.client.execute("ls ~", shell=True).output
    return times


def bench_local(
    screen: tuple[int, int], resets: int, sandbox: bool = True, session: str = MINIMAL
) -> list[float]:
    config = LocalProviderConfig(screen_size=screen, sandbox=sandbox, session=session)
    with LocalProvider(config).launch() as desktop:
        return measure_resets(desktop, resets)


def bench_docker(
    screen: tuple[int, int],
    resets: int,
    image: str,
    reset_mode: Literal["recreate", "session"] = "recreate",
    session: str = MINIMAL,
) -> list[float]:
    config = DockerProviderConfig(
        image=image, screen_size=screen, reset_mode=reset_mode, session=session
    )
    with DockerProvider(config).launch() as desktop:
        name = desktop.container_name
        times = measure_resets(desktop, resets)
        if reset_mode == "session" and desktop.container_name != name:
            raise RuntimeError("a session reset fell back to recreating the container")
        return times


def bench_osworld_semantics(
    screen: tuple[int, int], resets: int, image: str
) -> tuple[list[float], float]:
    """OSWorld's revert on our image; also returns the mean container stop+remove+run cost."""
    # The host's network, so that its guest port answers on this host's loopback as a
    # published port does (a private network is reached only through the provider's relay).
    config = DockerProviderConfig(image=image, screen_size=screen, network="host")
    provider = DockerProvider(config)
    client = provider.client
    times, overheads = [], []
    with reserve_port() as reservation:
        url = f"http://127.0.0.1:{reservation.port}/screenshot"
        token = "bench-token"
        headers = {"Authorization": f"Bearer {token}"}

        def start_container() -> Any:
            spec = container_spec(
                provider.config,
                name=provider.next_name(),
                port=reservation.port,
                token=token,
                labels=ownership_labels(provider.run_id),
            )
            return start_desktop_container(client, spec, token)

        def wait_for_screenshot() -> None:
            deadline = time.monotonic() + 300  # OSWorld's limit
            while time.monotonic() < deadline:
                try:
                    if requests.get(url, headers=headers, timeout=10).status_code == 200:
                        return
                except requests.RequestException:
                    pass
                time.sleep(OSWORLD_POLL)
            raise TimeoutError("guest did not answer in 300 s")

        container = start_container()
        wait_for_screenshot()
        try:
            for _ in range(resets):
                start = time.perf_counter()
                container.stop()
                container.remove()
                removed = time.perf_counter()
                time.sleep(OSWORLD_PAUSE)  # as OSWorld's stop_emulator does
                restart = time.perf_counter()
                container = start_container()
                started = time.perf_counter()
                wait_for_screenshot()
                times.append(time.perf_counter() - start)
                overheads.append((removed - start) + (started - restart))
        finally:
            container.remove(force=True)
    return times, statistics.mean(overheads)


def bench_qemu(resets: int) -> dict[str, Any] | str:
    """The QEMU helper's measurement, or why it could not run."""
    try:
        from osworld_gym.providers.qemu.bench import measure_qemu_reset
    except ImportError as e:
        return f"qemu provider not available ({e})"
    try:
        return measure_qemu_reset(resets=resets)
    except Exception as e:  # no qcow2 built, no qemu binary: report and go on
        return f"{type(e).__name__}: {e}"


def row(name: str, times: list[float], full_boot: float | None, note: str = "") -> str:
    median = statistics.median(times)
    ratio = f"{full_boot / median:7.1f}x" if full_boot else "      -"
    return f"{name:<34} {median:8.2f} {max(times):8.2f} {ratio}  {note}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--skip-qemu", action="store_true")
    parser.add_argument("--image", default=DockerProviderConfig.image, help="our desktop image")
    parser.add_argument(
        "--sessions", nargs="+", choices=SESSIONS, default=list(SESSIONS), help="desktop sessions"
    )
    args = parser.parse_args(argv)
    screen = (args.width, args.height)

    per_session: list[tuple[str, list[float], str]] = []
    for session in args.sessions:
        tag = f" [{session}]"
        per_session.append(
            ("local" + tag, bench_local(screen, args.resets, session=session), "sandboxed")
        )
        if session == MINIMAL:  # GNOME needs the sandbox
            bare = bench_local(screen, args.resets, sandbox=False)
            per_session.append(("local (no sandbox)" + tag, bare, "sandbox=False"))
        docker = bench_docker(screen, args.resets, args.image, session=session)
        per_session.append(("docker (recreate)" + tag, docker, ""))
        docker_session = bench_docker(
            screen, args.resets, args.image, reset_mode="session", session=session
        )
        per_session.append(("docker (session reset)" + tag, docker_session, "reset_mode='session'"))
    osworld_same, container_overhead = bench_osworld_semantics(
        screen, max(2, args.resets // 2), args.image
    )
    qemu = "skipped (--skip-qemu)" if args.skip_qemu else bench_qemu(args.resets)

    vm_boot = None
    if isinstance(qemu, dict):
        vm_boot = [container_overhead + OSWORLD_PAUSE + qemu["boot_s"]]
    full_boot = statistics.median(vm_boot or osworld_same)

    print(f"reset latency, {args.resets} resets each, screen {screen[0]}x{screen[1]}")
    print(f"{'provider':<34} {'median s':>8} {'max s':>8} {'vs boot':>8}")
    for name, times, note in per_session:
        print(row(name, times, full_boot, note))
    if isinstance(qemu, dict):
        print(row("qemu (loadvm)", qemu["reset_s"], full_boot, f"accel={qemu['accel']}"))
    else:
        print(f"{'qemu (loadvm)':<34} {'-':>8} {'-':>8} {'-':>8}  skipped: {qemu}")
    print(row("osworld-docker, same image", osworld_same, full_boot, "stop+rm+3 s+run+poll 1 s"))
    if vm_boot:
        note = f"container {container_overhead:.2f} s + 3 s + QEMU cold boot {qemu['boot_s']:.1f} s"
        print(row("osworld-docker, VM boot", vm_boot, full_boot, note))
    else:
        print(f"{'osworld-docker, VM boot':<34} {'-':>8} {'-':>8} {'-':>8}  needs the qemu row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
