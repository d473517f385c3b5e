"""``osworld-gym tasks``: list suites and tasks, show one task, and the support report.

Usage::

    osworld-gym tasks suites                     # bundled suites, task and domain counts
    osworld-gym tasks list desktop-basics        # domain/id: instruction, a task a line
    osworld-gym tasks show desktop-basics <id>   # the task's JSON
    osworld-gym tasks report <folder>            # fully supported tasks; the rest's lacks
    osworld-gym tasks report <folder> --provider local   # runnable here, or the reason not
    osworld-gym tasks report <folder> --provider local --fidelity [--session gnome] [--passes 3]
        # each runnable task's empty episodes (DONE, FAIL) and first frames, against OSWorld's
    osworld-gym tasks fetch <folder> [--cache DIR]       # download the tasks' assets

A source or task id that does not exist is a usage error (exit status 2), and so is a fidelity
report whose tasks need an extra that is not installed (refused before any desktop starts, with
the command that installs it); a fetch that could not download every asset exits 1; a fidelity
report with findings exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osworld_gym.cli_options import one_line, positive_int, screen_size
from osworld_gym.evaluation.references import DEFAULT_REFERENCE, REFERENCES
from osworld_gym.providers import PROVIDER_NAMES
from osworld_gym.providers.session_choice import SESSIONS, session_for

if TYPE_CHECKING:
    from osworld_gym.task_setup.downloads import AssetCache
    from osworld_gym.tasks import TaskSet


def add_parser(sub: Any) -> None:
    """Register ``tasks``."""
    tasks = sub.add_parser("tasks", help="list, show and check tasks", description=__doc__)
    tasks.add_argument(
        "action",
        choices=["suites", "list", "show", "report", "fetch"],
        help="what to do (see above)",
    )
    tasks.add_argument(
        "source",
        nargs="?",
        default="desktop-basics",
        help="suite name, OSWorld folder, index JSON or task file",
    )
    tasks.add_argument("task_id", nargs="?", help="for show: the task id")
    tasks.add_argument("--domain", action="append", help="only this domain (repeatable)")
    tasks.add_argument("--summary", action="store_true", help="report: counts only")
    tasks.add_argument(
        "--provider",
        choices=PROVIDER_NAMES,
        help="report: which tasks run on this provider here (apps, cached assets)",
    )
    tasks.add_argument("--json", action="store_true", help="report --provider: JSON output")
    tasks.add_argument(
        "--cache", help="report/fetch: the asset cache folder (default ~/.cache/osworld-gym/assets)"
    )
    tasks.add_argument(
        "--image", default="osworld-gym/desktop:latest", help="report --provider docker: image"
    )
    tasks.add_argument("--docker-url", help="report --provider docker: the engine's URL")
    tasks.add_argument(
        "--fidelity",
        action="store_true",
        help="report --provider local|docker: play each runnable task's empty episodes (DONE, "
        "FAIL) and check its first frames, against OSWorld's (runs desktops: minutes)",
    )
    tasks.add_argument(
        "--passes", type=positive_int, default=1, help="report --fidelity: episodes per kind"
    )
    tasks.add_argument(
        "--session",
        choices=SESSIONS,
        default=None,
        help="report --provider local or docker: the desktops' session (default: gnome for "
        "OSWorld's task files, minimal for the bundled suites)",
    )
    tasks.add_argument(
        "--gallery",
        metavar="DIR",
        help="report --fidelity: save the first frame of each domain's first task here "
        "(<domain>.png, half size)",
    )
    tasks.add_argument(
        "--screen-size",
        type=screen_size,
        default=(1920, 1080),
        help="report --fidelity: WxH (OSWorld's VM: 1920x1080)",
    )
    tasks.add_argument(
        "--evaluator-reference",
        choices=REFERENCES,
        default=DEFAULT_REFERENCE,
        help="report: the OSWorld evaluator code tasks would be scored under; warns where a "
        "task file uses an option or metric that code does not know",
    )
    tasks.add_argument("--guest-url", help="report: ask this running guest for its commands")
    tasks.add_argument("--token", help="report --guest-url: the guest's token")
    tasks.add_argument("--jobs", type=positive_int, default=4, help="fetch: downloads at once")
    tasks.add_argument("--tries", type=positive_int, default=5, help="fetch: attempts per URL")
    tasks.add_argument(
        "--timeout", type=float, default=60.0, help="fetch: seconds without data before retrying"
    )
    tasks.set_defaults(func=tasks_command)


def tasks_command(args: argparse.Namespace) -> int:
    """Run the ``tasks`` subcommand."""
    from osworld_gym.task_setup.support import format_report, support_report
    from osworld_gym.tasks import available_suites, load_tasks

    if args.action == "suites":
        for name in available_suites():
            suite = load_tasks(name)
            sys.stdout.write(
                f"{name:<20} {len(suite):>4} tasks  "
                f"{sum(t.infeasible for t in suite):>3} infeasible  "
                f"domains: {', '.join(suite.domains)}\n"
            )
        return 0
    try:
        tasks = load_tasks(args.source, domain=args.domain)
        if args.action == "show":
            if not args.task_id:
                sys.stderr.write("osworld-gym tasks: error: show needs SOURCE and TASK_ID\n")
                return 2
            task = tasks[args.task_id]
    except (OSError, LookupError, ValueError) as e:
        why = e.args[0] if isinstance(e, KeyError) and e.args else e  # KeyError quotes its text
        sys.stderr.write(f"osworld-gym tasks: error: {args.source}: {one_line(why)}\n")
        return 2
    if args.action == "list":
        for task in tasks:
            flag = " (infeasible)" if task.infeasible else ""
            sys.stdout.write(f"{task.domain}/{task.id}{flag}: {task.instruction}\n")
    elif args.action == "show":
        sys.stdout.write(json.dumps(task.to_dict(), indent=2) + "\n")
    elif args.action == "fetch":
        from osworld_gym.commands.task_fetch import fetch_command
        from osworld_gym.task_setup.asset_fetch import FetchSettings

        settings = FetchSettings(jobs=args.jobs, tries=args.tries, read_timeout=args.timeout)
        return fetch_command(tasks, _cache(args), settings)
    elif args.provider:
        return _runnable_report(args, tasks)
    else:
        report = support_report(tasks, args.evaluator_reference)
        sys.stdout.write(format_report(report, verbose=not args.summary) + "\n")
    return 0


def _cache(args: argparse.Namespace) -> AssetCache:
    from osworld_gym.task_setup.downloads import AssetCache

    return AssetCache(Path(args.cache)) if args.cache else AssetCache.default()


def _runnable_report(args: argparse.Namespace, tasks: TaskSet) -> int:
    from osworld_gym.providers.command_probe import probe_for
    from osworld_gym.task_setup.runnable import format_runnable_report, runnable_report

    guest = None
    if args.guest_url:
        from osworld_gym.guest.client import GuestClient

        guest = GuestClient(args.guest_url, token=args.token)
    probe = probe_for(args.provider, image=args.image, base_url=args.docker_url, guest=guest)
    session = None
    if args.provider in ("local", "docker"):
        session = args.session or session_for(tasks, in_image=args.provider == "docker")
    report = runnable_report(tasks, probe, _cache(args), args.provider, session)
    if args.fidelity:
        return _fidelity_report(args, tasks, report, session)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=1) + "\n")
    else:
        sys.stdout.write(format_runnable_report(report, verbose=not args.summary) + "\n")
    return 0


def _fidelity_report(
    args: argparse.Namespace, tasks: TaskSet, runnable: Any, session: str | None
) -> int:
    from osworld_gym.commands.run import check_installed
    from osworld_gym.env import OSWorldEnv
    from osworld_gym.fidelity import (
        FidelityReport,
        check_tasks,
        format_fidelity_report,
        runnable_tasks,
    )

    if args.provider not in ("local", "docker"):
        sys.stderr.write("osworld-gym tasks: error: --fidelity runs on local or docker desktops\n")
        return 2
    provider: Any
    if args.provider == "local":
        from osworld_gym.providers.local.provider import LocalProviderConfig

        provider = LocalProviderConfig(screen_size=args.screen_size, session=session)
        desktop = f"local desktops, session {session!r}"
    else:
        from osworld_gym.providers.docker.provider import DockerProviderConfig

        provider = DockerProviderConfig(
            image=args.image, screen_size=args.screen_size, session=session
        )
        desktop = f"docker desktops ({args.image}), session {session!r}"
    run, skipped = runnable_tasks(runnable, tasks)
    results = []
    if run:
        with OSWorldEnv(
            tasks=run,
            provider=provider,
            action_format="structured",
            screen_size=args.screen_size,
            offline=True,
            cache_dir=args.cache,
        ) as env:
            # Its empty episodes are scored too: a missing extra is refused before the first.
            check_installed(run, args.provider, env.evaluator, what=" to check")
            results = check_tasks(
                env,
                run,
                passes=args.passes,
                progress=lambda line: sys.stderr.write(line + "\n"),
                first_frame=_gallery_saver(Path(args.gallery)) if args.gallery else None,
            )
    report = FidelityReport(desktop, args.passes, tuple(results), tuple(skipped))
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=1) + "\n")
    else:
        sys.stdout.write(format_fidelity_report(report) + "\n")
    return 1 if any(task.findings() for task in report.tasks) else 0


def _gallery_saver(folder: Path) -> Any:
    """Saves the first frame it is given of each domain as ``folder/<domain>.png``, half size."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    saved: set[str] = set()

    def save(task: Any, frame: Any) -> None:
        domain = task.domain or "tasks"
        if domain not in saved:
            saved.add(domain)
            image = Image.fromarray(frame)
            half = image.resize((image.width // 2, image.height // 2), Image.LANCZOS)
            half.save(folder / f"{domain}.png")

    return save
