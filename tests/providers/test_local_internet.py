"""A private network's outbound link: the internet, and nothing of the host's (issue 35).

The test plays host and internet in network namespaces of its own (internet_world.py): a web
server on a documentation address stands for the internet, reached through TAP devices; the
"host" serves on its loopback and on its own address. Nothing of it leaves this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_marks import needs

from osworld_gym.providers.local import outbound

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(os.geteuid() != 0, reason="making network namespaces needs root"),
]
WORLD = Path(__file__).with_name("internet_world.py")
PAGE = "hello from the made-up internet\n"


@pytest.fixture(scope="module")
@needs("desktop")
def results() -> dict[str, list]:
    assert outbound.available() is None, outbound.available()
    done = subprocess.run(
        ["unshare", "--net", sys.executable, str(WORLD)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_internet_is_reached_and_stays_after_a_reset(results: dict[str, list]) -> None:
    assert results["internet"] is True
    assert results["web"] == [0, PAGE, ""]
    assert results["web after reset"] == [0, PAGE, ""]


@pytest.mark.parametrize(
    "probe", ["host address", "host address after reset", "host loopback", "gateway", "metadata"]
)
def test_nothing_of_the_hosts_is_reached(results: dict[str, list], probe: str) -> None:
    code, output, error = results[probe]
    assert code != 0 and output == "", error
    assert "Couldn't connect" in error  # refused at once by the filter, not a timeout


def test_the_desktop_resolves_through_the_links_forwarder(results: dict[str, list]) -> None:
    assert results["resolv.conf"][1].splitlines()[-1] == f"nameserver {outbound.DNS_SERVER}"


def test_the_desktop_cannot_change_the_filter(results: dict[str, list]) -> None:
    assert results["flush the filter"][0] != 0
    assert "Permission denied" in results["flush the filter"][2]
    assert results["own namespace"][0] != 0  # a namespace of its own has no way out at all


def test_the_filters_rules() -> None:
    rules = outbound.filter_rules(("10.0.0.0/8", "192.0.2.7", "::1/128"))
    assert "-A OUTPUT -d 10.0.0.0/8 -j REJECT" in rules
    assert "-A OUTPUT -d 192.0.2.7/32 -j REJECT" in rules
    assert "::1" not in rules  # no IPv6 route: nothing to filter
    # The DNS forwarder is allowed before the private ranges that hold it are rejected.
    assert rules.index(f"-d {outbound.DNS_SERVER}/32 -p udp") < rules.index("10.0.0.0/8")
    assert "127.0.0.1" in outbound.host_addresses()
