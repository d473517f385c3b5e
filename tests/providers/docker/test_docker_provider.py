"""The docker provider on a real engine: launch, reset by recreation, limits, labels, cleanup."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time

import pytest
from desktop_helpers import wait_until

from osworld_gym.errors import DesktopDiedError
from osworld_gym.providers import make_provider
from osworld_gym.providers.docker.provider import (
    PID_LABEL,
    RUN_LABEL,
    DockerProvider,
    DockerProviderConfig,
    reap_leftovers,
)
from osworld_gym.providers.ports import is_port_free

SCREEN = (1024, 768)


@pytest.fixture()
def provider(guest_image: str, our_containers: object) -> DockerProvider:
    return DockerProvider(
        DockerProviderConfig(image=guest_image, screen_size=SCREEN, cpus=1.0, memory="1g")
    )


def test_launch_reset_close(provider: DockerProvider, our_containers) -> None:
    with provider.launch() as desktop:
        client = desktop.client
        assert client.info().screen_size == SCREEN
        assert client.screenshot().to_array().shape == (SCREEN[1], SCREEN[0], 3)
        who = client.execute("id -un; echo $HOME; pwd", shell=True).output.split()
        assert who == ["user", "/home/user", "/home/user"]
        assert client.execute("test -d ~/Documents && echo yes", shell=True).output == "yes\n"
        # The guest rejects callers without the desktop's token.
        from osworld_gym.guest.client import GuestClient

        with GuestClient(desktop.endpoint, token="wrong") as stranger:
            with pytest.raises(Exception, match="401|token|nauthor"):
                stranger.execute("true", shell=True)

        container = desktop.container
        container.reload()
        host_config = container.attrs["HostConfig"]
        assert host_config["NanoCpus"] == 1_000_000_000
        assert host_config["Memory"] == 1 << 30
        assert host_config["NetworkMode"] == "none"  # its own network (test_docker_isolation)
        assert container.labels[RUN_LABEL] == provider.run_id
        assert container.labels[PID_LABEL] == str(os.getpid())
        assert [c.name for c in our_containers()] == [container.name]

        client.execute("echo x > ~/Documents/trace.txt; sleep 600 >/dev/null 2>&1 &", shell=True)
        endpoint, first = desktop.endpoint, container.name
        start = time.perf_counter()
        desktop.reset()
        elapsed = time.perf_counter() - start
        assert elapsed < 10, f"reset took {elapsed:.1f} s"
        assert desktop.endpoint == endpoint and desktop.container_name != first
        assert client.execute("ls ~/Documents", shell=True).output == ""
        assert "sleep 600" not in client.execute("ps -eo args", shell=True).output
        assert [c.name for c in our_containers()] == [desktop.container_name]
        port = desktop.port
    assert our_containers() == []
    assert is_port_free(port)


def test_a_killed_container_is_reported_dead(provider: DockerProvider, our_containers) -> None:
    desktop = provider.launch()
    try:
        desktop.check()
        desktop.container.kill()
        with pytest.raises(DesktopDiedError, match="container"):
            desktop.check()
        desktop.reset()  # a reset starts a fresh container whatever state the old one was in
        desktop.check()
        assert desktop.client.info().screen_size == SCREEN
    finally:
        desktop.close()
    assert our_containers() == []


def test_dropped_desktop_is_removed_by_gc(provider: DockerProvider, our_containers) -> None:
    desktop = provider.launch()
    name = desktop.container_name
    assert [c.name for c in our_containers()] == [name]
    del desktop
    gc.collect()
    assert our_containers() == []


def test_leftovers_of_a_killed_process_are_reaped(
    guest_image: str, docker_engine, our_containers
) -> None:
    name, pid = _leave_a_container(guest_image)
    leftover = docker_engine.containers.get(name)
    assert leftover.labels[PID_LABEL] == str(pid)
    provider = DockerProvider(DockerProviderConfig(image=guest_image, reap_leftovers=False))
    assert _exists(docker_engine, name)
    # A live owner's containers are never touched; a dead owner's are removed.
    with provider.launch() as mine:
        assert name in reap_leftovers(docker_engine)
        assert not _exists(docker_engine, name)
        assert _exists(docker_engine, mine.container_name)
    # What a provider does when it starts (reap_leftovers=True, the default).
    child_name, _ = _leave_a_container(guest_image)
    DockerProvider(DockerProviderConfig(image=guest_image))
    assert not _exists(docker_engine, child_name)


def _leave_a_container(image: str) -> tuple[str, int]:
    """Launch a desktop in a child process and SIGKILL it; the container's name, child's PID."""
    code = (
        "from osworld_gym.providers.docker.provider import DockerProvider, DockerProviderConfig\n"
        f"p = DockerProvider(DockerProviderConfig(image={image!r}, screen_size=(640, 480)))\n"
        "d = p.launch()\n"
        "print(d.container_name, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        name = child.stdout.readline().strip()
        assert name, "the child did not launch a desktop"
    finally:
        child.send_signal(signal.SIGKILL)  # no finalizer runs: the container stays behind
        child.wait()
    return name, child.pid


def _exists(client, name: str) -> bool:
    return bool(client.containers.list(all=True, filters={"name": f"^{name}$"}))


def test_make_provider_by_name(guest_image: str, our_containers) -> None:
    provider = make_provider("docker", screen_size=(800, 600))
    assert isinstance(provider, DockerProvider)
    assert provider.config.screen_size == (800, 600)


def test_missing_image_is_a_clear_error(docker_engine) -> None:
    from osworld_gym.errors import ProviderError

    with pytest.raises(ProviderError, match="build_guest_image.sh"):
        DockerProvider(DockerProviderConfig(image="osworld-gym/desktop:no-such-tag"))


@pytest.mark.desktop  # a host X server of its own, beside the container
@pytest.mark.parametrize("network", ["private", "host"])
def test_host_x_servers_do_not_capture_the_container_apps(
    guest_image: str, tmp_path, our_containers, network: str
) -> None:
    """A host X server on the display number a container asks for stays out of it.

    With host networking, containers share the host's abstract socket namespace, and X clients
    try the abstract socket first: the entrypoint must move to a number nobody uses there. A
    network of its own has its own abstract sockets: the number is free there.
    """
    host_x = subprocess.Popen(
        ["Xvfb", "-screen", "0", "640x480x24", "-nolisten", "tcp", "-displayfd", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert host_x.stdout is not None
        number = int(host_x.stdout.readline())
        config = DockerProviderConfig(
            image=guest_image,
            screen_size=SCREEN,
            extra_env=(("OSWORLD_DISPLAY", str(number)),),
            network=network,
        )
        with DockerProvider(config).launch() as desktop:
            assert desktop.client.info().screen_size == SCREEN
            display = desktop.client.execute("echo $DISPLAY", shell=True).output.strip()
            assert (display == f":{number}") is (network == "private")
            dims = desktop.client.execute("xdpyinfo | grep dimensions", shell=True).output
            assert f"{SCREEN[0]}x{SCREEN[1]} pixels" in dims
    finally:
        host_x.terminate()
        host_x.wait()


def test_google_chrome_starts_in_a_container_as_chrome(
    provider: DockerProvider, our_containers
) -> None:
    """The container refuses Chromium's namespace sandbox: the browser runs without it, shows
    no warning bar for that, and is presented as Google Chrome (title and window class)."""
    with provider.launch() as desktop:
        client = desktop.client
        client.launch(["google-chrome", "--remote-debugging-port=1337"])
        windows = wait_until(
            lambda: (
                "Google Chrome" in (listed := client.execute("wmctrl -lx", shell=True).output)
                and listed
            ),
            timeout=60,
            message="a window titled Google Chrome",
        )
        assert "Google Chrome" in windows and "google-chrome" in windows, windows
        url = "http://127.0.0.1:${OSWORLD_GYM_PORT_1337:-1337}/json/version"
        version = wait_until(
            lambda: (
                '"Browser"' in (out := client.execute(f"curl -s {url}", shell=True).output) and out
            ),
            timeout=30,
            message="the browser's debugging endpoint",
        )
        assert "Chrome" in version
        args = client.execute("ps -eo args | grep -m1 '^/.*chrome .*--no-sandbox'", shell=True)
        assert "--test-type" in args.output, args.output  # no "unsupported flag" bar
