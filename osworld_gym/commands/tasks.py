"""``osworld-gym tasks``: list suites and tasks, show one task, and the support report.

Usage::

    osworld-gym tasks suites                     # bundled suites, task and domain counts
    osworld-gym tasks list desktop-basics        # domain/id: instruction, a task a line
    osworld-gym tasks show desktop-basics <id>   # the task's JSON
    osworld-gym tasks report <folder>            # fully supported tasks; the rest's lacks
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``tasks``."""
    tasks = sub.add_parser("tasks", help="list, show and check tasks")
    tasks.add_argument("action", choices=["suites", "list", "show", "report"])
    tasks.add_argument(
        "source",
        nargs="?",
        default="desktop-basics",
        help="suite name, OSWorld folder, index JSON or task file",
    )
    tasks.add_argument("task_id", nargs="?", help="for show: the task id")
    tasks.add_argument("--domain", action="append", help="only this domain (repeatable)")
    tasks.add_argument("--summary", action="store_true", help="report: counts only")
    tasks.set_defaults(func=tasks_command)


def tasks_command(args: argparse.Namespace) -> int:
    """Run the ``tasks`` subcommand."""
    from osworld_gym.support import format_report, support_report
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
                sys.stderr.write("osworld-gym tasks show: give SOURCE and TASK_ID\n")
                return 2
            task = tasks[args.task_id]
    except (OSError, LookupError, ValueError) as e:
        why = e.args[0] if isinstance(e, KeyError) and e.args else e  # KeyError quotes its text
        sys.stderr.write(f"osworld-gym tasks: {args.source}: {why}\n")
        return 1
    if args.action == "list":
        for task in tasks:
            flag = " (infeasible)" if task.infeasible else ""
            sys.stdout.write(f"{task.domain}/{task.id}{flag}: {task.instruction}\n")
    elif args.action == "show":
        sys.stdout.write(json.dumps(task.to_dict(), indent=2) + "\n")
    else:
        report = support_report(tasks)
        sys.stdout.write(format_report(report, verbose=not args.summary) + "\n")
    return 0
