"""The adversarial suite on ``docker`` desktops (issue 35, item 6): the battery of
``tests/adversarial_cases.py`` against containers of our guest image.

A container is recreated at every reset, so nothing planted can survive it; what matters here is
what a program in the container can read or reach: the image's own files, ``sudo`` (OSWorld's
user has it), the host's services and other desktops, and whether the agent can void its own
episode. Slow: about two and a half minutes on top of the image build.
"""

from __future__ import annotations

import collections.abc

import pytest
from adversarial_cases import CASES, GROUPS, SKIPPED, Battery, attack

from osworld_gym import load_tasks
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.docker.provider import DockerProviderConfig
from osworld_gym.tasks import TaskSet

pytestmark = [pytest.mark.slow]
SCREEN = (1280, 720)

# What the docker provider leaks today, by case.
KNOWN_LEAKS = {
    "identity": "sudo with OSWorld's password makes the desktop uid 0, and the container has no "
    "user namespace (uid_map 0 0 4294967295): root of the host's user namespace",
    "kill-window-manager": "the desktop's user may kill -9 openbox, and nothing in the container "
    "restarts it: the episode ends as an infrastructure fault instead of being scored",
}


def _param(name: str) -> object:
    leak = KNOWN_LEAKS.get(name)
    marks = [pytest.mark.xfail(strict=True, reason=leak)] if leak else []
    return pytest.param(name, marks=marks, id=name)


@pytest.fixture(scope="module")
def battery(guest_image: str) -> collections.abc.Iterator[Battery]:
    def make_env() -> OSWorldEnv:
        tasks = TaskSet([*load_tasks("ui-basics"), *load_tasks("desktop-basics")])
        return OSWorldEnv(
            provider=DockerProviderConfig(image=guest_image, screen_size=SCREEN),
            tasks=tasks,
            action_format="structured",
            screen_size=SCREEN,
            max_steps=30,
            offline=True,
        )

    with attack(make_env, "docker") as b:
        yield b


@pytest.mark.parametrize("case", [_param(name) for name in CASES])
def test_case(battery: Battery, case: str) -> None:
    finding = battery.finding(case)
    if finding.outcome == SKIPPED:
        pytest.skip(finding.evidence)
    assert not finding.bad, f"{case} ({finding.tried}): {finding.outcome}: {finding.evidence}"


@pytest.mark.parametrize("group", [g.name for g in GROUPS])
def test_state_after_reset_equals_a_fresh_desktop(battery: Battery, group: str) -> None:
    result = battery.result(group)
    assert result.state is not None and not result.state.bad, result.state
    assert result.observation is not None and not result.observation.bad, result.observation
