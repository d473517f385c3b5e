"""Fixtures of the docker provider's tests: a running engine and the guest image, once a session.

The engine is started with scripts/start_docker.sh when none answers (as root; CI runs as
root). The image is built with the cached recipe (scripts/run_tests.sh builds it before pytest,
so here it is found in the caches in seconds). Tests skip only where Docker cannot run at all:
no docker SDK, or no engine and no way to start one.
"""

from __future__ import annotations

import collections.abc
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fixture_marks import needs

REPO = Path(__file__).resolve().parents[3]
START_DOCKER = REPO / "scripts" / "start_docker.sh"


def _sdk_or_skip() -> None:
    try:
        import docker  # noqa: F401
    except ImportError:
        pytest.skip("the docker SDK is not installed: pip install 'osworld-gym[docker]'")


@pytest.fixture(scope="session")
@needs("docker")
def docker_engine() -> collections.abc.Iterator[object]:
    """A docker client of a running engine (started here when possible)."""
    _sdk_or_skip()
    from osworld_gym.errors import ProviderError
    from osworld_gym.providers.docker.client import connect

    try:
        client = connect()
    except ProviderError as e:
        if os.geteuid() != 0 or not shutil.which("dockerd"):
            pytest.skip(f"no Docker engine, and starting one needs root and docker.io: {e}")
        done = subprocess.run(
            ["bash", str(START_DOCKER)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"start_docker.sh failed:\n{done.stdout}{done.stderr}"
        client = connect()
    yield client
    client.close()


@pytest.fixture(scope="session")
@needs("docker")
def guest_image(docker_engine: object) -> str:
    """The ID of our guest image, built (or found cached) once per session."""
    from osworld_gym.errors import ProviderError
    from osworld_gym.providers.docker.image import build_image

    try:
        result = build_image(client=docker_engine, recipe_dir=REPO / "vm_images")
    except ProviderError as e:
        if os.geteuid() != 0 and "needs root" in str(e):
            pytest.skip(f"the guest image is not built and building it needs root: {e}")
        raise
    # Its ID, not a tag: a build from another checkout on this engine (a CI run of a clean
    # clone) may move the tags while these tests run.
    return result.image_id


@pytest.fixture()
def our_containers(docker_engine: object) -> collections.abc.Iterator[collections.abc.Callable]:
    """Lists this process's containers; asserts at the end of the test that none is left."""
    from osworld_gym.providers.docker.provider import OWNER_LABEL, PID_LABEL

    def listing() -> list:
        filters = {"label": [f"{PID_LABEL}={os.getpid()}", OWNER_LABEL]}
        return docker_engine.containers.list(all=True, filters=filters)  # type: ignore[attr-defined]

    yield listing
    left = listing()
    for container in left:
        container.remove(force=True)
    assert not left, f"containers left behind: {[c.name for c in left]}"
