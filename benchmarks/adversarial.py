"""The adversarial battery: a policy that acts only through ``env.step`` tries to game the reward,
persist over resets, read answers and secrets, and leave the desktop (issue 35, item 6).

    python benchmarks/adversarial.py [--provider local docker] [--groups x-server doors]
        [--image ID] [--session minimal|gnome]

Every case of ``tests/adversarial_cases.py`` runs on each provider asked for (``local`` by
default): the attack episode types the cases' scripts into a terminal opened with Ctrl+Alt+T,
the env resets, and the next episode is compared with a freshly launched desktop (its recorded
state and first observation) and, for some groups, played (DONE at once must score 0.0,
``banana`` must type as ``banana``). The table gives each case, what was tried, and the outcome:

* ``blocked``: the attempt failed inside the episode;
* ``undone by reset``: it worked, and the reset undid it;
* ``survived reset``: the next episode could notice it (a finding);
* ``leaked``: a secret or an answer was read, or a door out of the desktop opened (a finding).

The exit status is 1 when any case survived the reset or leaked. ``docker`` needs a running
engine and the guest image (``osworld-gym build-image``); ``--image`` names one.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from adversarial_cases import (  # noqa: E402 - the cases live beside the tests
    CHECK_TASK,
    GROUPS,
    Finding,
    GroupResult,
    attack,
)

from osworld_gym import load_tasks  # noqa: E402
from osworld_gym.env import OSWorldEnv  # noqa: E402
from osworld_gym.providers.session_choice import SESSIONS  # noqa: E402
from osworld_gym.tasks import TaskSet  # noqa: E402

SCREEN = (1280, 720)


def battery_tasks() -> TaskSet:
    """Both bundled suites: ui-basics for the checks, desktop-basics for the answer-key route."""
    return TaskSet([*load_tasks("ui-basics"), *load_tasks("desktop-basics")])


def make_env(provider: str, image: str | None, session: str = "minimal") -> OSWorldEnv:
    """An env on ``provider`` with structured actions over both bundled suites.

    ``session``: the local desktops' session (``LocalProviderConfig.session``).
    """
    if provider == "docker":
        from osworld_gym.providers.docker.provider import DockerProviderConfig

        config = DockerProviderConfig(screen_size=SCREEN, **({"image": image} if image else {}))
        chosen: object = config
    else:
        from osworld_gym.providers.local.provider import LocalProviderConfig

        chosen = LocalProviderConfig(screen_size=SCREEN, session=session)
    return OSWorldEnv(
        provider=chosen,
        tasks=battery_tasks(),
        action_format="structured",
        screen_size=SCREEN,
        max_steps=30,
        offline=True,
    )


def save_evidence(folder: Path, result: GroupResult) -> None:
    """Each script's output and the records of the group, for reading what happened."""
    folder.mkdir(parents=True, exist_ok=True)
    assert result.evidence is not None
    for name, text in result.evidence.outputs.items():
        (folder / f"{name}.out").write_text(text)
    for name in ("fresh", "during", "after"):
        report = getattr(result.evidence, name)
        (folder / f"{name}.json").write_text(json.dumps(report, indent=1))
    extra = {"attack_score": result.evidence.attack_score,
             "attack_fault": result.evidence.attack_fault,
             "planted_after": result.evidence.planted_after,
             "next_episode": result.evidence.next_episode}  # fmt: skip
    (folder / "episode.json").write_text(json.dumps(extra, indent=1, default=str))


def run_battery(
    provider: str,
    groups: list[str],
    image: str | None,
    evidence_dir: Path | None = None,
    session: str = "minimal",
) -> list[Finding]:
    """Every chosen group on a fresh env of ``provider``; the findings, printed as they come."""
    findings: list[Finding] = []
    with attack(lambda: make_env(provider, image, session), provider) as battery:
        for group in GROUPS:
            if groups and group.name not in groups:
                continue
            result = battery.result(group.name)
            if evidence_dir is not None:
                save_evidence(evidence_dir / provider / group.name, result)
            rows = [*result.findings.values(), result.state, result.observation]
            findings.extend(row for row in rows if row is not None)
            print(f"[{provider}] {group.name}: {result.seconds:.1f} s", file=sys.stderr)
    return findings


def print_table(provider: str, findings: list[Finding]) -> None:
    """One row per case: name, what was tried, outcome, and the evidence (wrapped)."""
    print(f"\n## {provider}\n")
    print(f"{'case':<40} {'outcome':<16} tried / evidence")
    print("-" * 110)
    for f in findings:
        mark = "!!" if f.bad else "  "
        print(f"{mark}{f.case:<38} {f.outcome:<16} {f.tried}")
        for line in textwrap.wrap(f.evidence, 80)[:6]:
            print(f"{'':<57} {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", nargs="+", default=["local"], choices=["local", "docker"],
                        help="providers to attack (default: local)")  # fmt: skip
    names = [g.name for g in GROUPS]
    parser.add_argument("--groups", nargs="*", default=[], choices=names, metavar="GROUP",
                        help=f"groups to run (default: all of {names})")  # fmt: skip
    parser.add_argument("--image", default=None, help="docker: the guest image (default: built)")
    parser.add_argument("--evidence", type=Path, default=None,
                        help="save the outputs and records in this folder")  # fmt: skip
    parser.add_argument("--session", default="minimal", choices=SESSIONS,
                        help="local: the desktops' session")  # fmt: skip
    args = parser.parse_args()
    bad = 0
    for provider in args.provider:
        started = time.monotonic()
        session = args.session if provider == "local" else "minimal"
        findings = run_battery(provider, args.groups, args.image, args.evidence, session)
        print_table(provider, findings)
        count = sum(f.bad for f in findings)
        bad += count
        took = time.monotonic() - started
        print(
            f"\n{provider}: {len(findings)} checks, {count} findings, {took:.0f} s ({CHECK_TASK})"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
