"""The adversarial suite on ``local`` desktops (issue 35, item 6): a policy that acts only through
``env.step`` tries to game the reward, persist over resets, read answers and secrets, and leave
the desktop; the next episode must score and look as on a fresh desktop. On both sessions: the
openbox one and GNOME's, whose reset keeps the shell and its session.

The attacks and their judges live in ``tests/adversarial_cases.py`` (``benchmarks/adversarial.py``
runs the same battery and prints a table). One env serves the module: each group of cases is one
attack episode, a reset and the checks, run when its first test asks (a few seconds each). The
groups that scan the whole file system and every process's memory are ``slow``.

A case the library fails today is marked ``xfail(strict=True)`` with what leaks: the check is not
weakened, and the mark must go when the library closes the hole.
"""

from __future__ import annotations

import collections.abc
import os
from pathlib import Path

import pytest
from adversarial_cases import (
    CASES,
    CHECK_TASK,
    GROUP_OF,
    GROUPS,
    SKIPPED,
    Agent,
    Battery,
    attack,
)
from desktop_helpers import launch_desktop
from fixture_marks import needs
from PIL import Image

from osworld_gym import load_tasks
from osworld_gym.actions import TypeText
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.local.provider import LocalProviderConfig
from osworld_gym.providers.session_choice import SESSIONS
from osworld_gym.tasks import TaskSet

pytestmark = [pytest.mark.desktop, pytest.mark.apps]
SCREEN = (1280, 720)

# What the library leaks today, by case: the reason is the evidence the battery printed.
KNOWN_LEAKS = {}
if os.geteuid() != 0:
    # An ordinary launcher has one uid to give: the guest's is the desktop's (see
    # osworld_gym.providers.local.split_identity for what a root launcher does).
    KNOWN_LEAKS["kill-guest"] = (
        "the desktop's user may kill -9 the guest server (same uid): the episode ends as an "
        "infrastructure fault instead of being scored"
    )


# The sandbox shows the host's file system but for hidden roots and the masked suites: files
# that answer tasks elsewhere on the host show through. Whether there are any depends on the
# host (here: the qemu image build's root file system under /var/cache/osworld-gym holds the
# suites, and OSWorld's task files sit beside the checkout), so these xfail where they leak.
FILES_ON_THE_HOST = "answers in other files of this host are readable from the desktop"


# Groups whose attacks meet the sandbox and the guest, the same under either session: on GNOME
# they run with -m slow only (the default suite runs them on openbox).
SANDBOX_GROUPS = ("answers", "secrets", "doors", "screen-size", "kill-guest")


def _params(names: list[str], leaks: dict[str, str]) -> list[object]:
    """``(session, name)`` pairs for the module's battery (one per session) and a case or group."""
    params = []
    for session in SESSIONS:
        for name in names:
            group = GROUP_OF.get(name, name)
            marks = [pytest.mark.xfail(strict=True, reason=leaks[name])] if name in leaks else []
            if any(g.slow for g in GROUPS if g.name == group) or (
                session != "minimal" and group in SANDBOX_GROUPS
            ):
                marks.append(pytest.mark.slow)
            params.append(pytest.param(session, name, marks=marks, id=f"{session}-{name}"))
    return params


def _battery_and(argname: str, names: list[str], leaks: dict[str, str]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize(
        ("battery", argname), _params(names, leaks), indirect=["battery"], scope="module"
    )


def _env(session: str = "minimal") -> OSWorldEnv:
    tasks = TaskSet([*load_tasks("ui-basics"), *load_tasks("desktop-basics")])
    return OSWorldEnv(
        tasks=tasks,
        provider=LocalProviderConfig(screen_size=SCREEN, session=session),
        action_format="structured",
        screen_size=SCREEN,
        max_steps=30,
        offline=True,
    )


# Both sessions: GNOME (OSWorld's task files' default) keeps its shell, buses and daemons over
# resets, so what the next episode meets there is the kept session's.
@pytest.fixture(scope="module")
@needs("desktop", "apps")
def battery(request: pytest.FixtureRequest) -> collections.abc.Iterator[Battery]:
    session = request.param
    if session == "gnome" and gnome_session.available() is not None:
        pytest.skip(f"no GNOME session here: {gnome_session.available()}")
    with attack(lambda: _env(session), "local") as b:
        yield b


@pytest.mark.battery
@_battery_and("case", list(CASES), KNOWN_LEAKS)
def test_case(battery: Battery, case: str) -> None:
    finding = battery.finding(case)
    if finding.outcome == SKIPPED:
        pytest.skip(finding.evidence)
    if finding.bad and finding.host_dependent:
        pytest.xfail(f"{FILES_ON_THE_HOST}: {finding.evidence}")
    assert not finding.bad, f"{case} ({finding.tried}): {finding.outcome}: {finding.evidence}"


@pytest.mark.battery
@_battery_and("group", [g.name for g in GROUPS], {})
def test_state_after_reset_equals_a_fresh_desktop(battery: Battery, group: str) -> None:
    result = battery.result(group)
    assert result.state is not None and not result.state.bad, result.state


@_battery_and("group", [g.name for g in GROUPS], {})
def test_first_observation_after_reset_equals_a_fresh_desktop(
    battery: Battery, group: str, tmp_path: Path
) -> None:
    result = battery.result(group)
    observation = result.observation
    assert observation is not None and result.first_observation is not None
    if observation.bad:  # both frames, to look at
        Image.fromarray(battery.baseline.screenshot).save(tmp_path / "fresh.png")
        Image.fromarray(result.first_observation).save(tmp_path / "after.png")
    assert not observation.bad, f"{observation} (frames in {tmp_path})"


def test_every_case_is_in_one_group() -> None:
    grouped = [case for group in GROUPS for case in group.cases]
    assert sorted(grouped) == sorted(CASES) and len(set(grouped)) == len(grouped)
    assert set(KNOWN_LEAKS) <= set(CASES)


def test_a_replaced_x_server_leaves_no_socket_behind() -> None:
    """A reset that replaces the X server (after a keymap change) keeps no socket of the old
    one in the desktop's /tmp/.X11-unix (the mount point of its bind, an empty file)."""
    # The keymap change makes the reset start a new X server; a lower display number freed
    # just before (another desktop closed) makes it take another number than the old one.
    lower = launch_desktop()
    with lower, _env() as env:
        agent = Agent(env)
        agent.start(CHECK_TASK)
        before = env.unwrapped.desktop.display
        if int(before.lstrip(":")) < int(lower.display.lstrip(":")):
            pytest.skip(f"the desktop got {before}, below the other desktop's {lower.display}")
        lower.close()
        agent.open_terminal()
        agent.act(TypeText(text="/usr/bin/xmodmap -e 'keycode 38 = b B'\n"))
        agent.finish()
        agent.start(CHECK_TASK)
        if env.unwrapped.desktop.display == before:
            pytest.skip(f"the new X server got the old number {before} again")
        listing = agent.client.execute(["/bin/ls", "-l", "/tmp/.X11-unix"]).output
        entries = [line for line in listing.splitlines() if line.startswith(("s", "-"))]
        assert len(entries) == 1 and entries[0].startswith("s"), listing
