"""`osworld-gym tasks`: suites, lists, one task, the support report, and clear errors."""

from __future__ import annotations

import json

import pytest
from conftest import osworld_gym
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

from osworld_gym import load_tasks

pytestmark = pytest.mark.heavy  # the console script, a fresh interpreter each


def test_suites_and_lists() -> None:
    suites = osworld_gym("tasks", "suites")
    assert suites.returncode == 0
    rows = {line.split()[0]: line for line in suites.stdout.splitlines()}
    basics = load_tasks("desktop-basics")
    assert f"{len(basics)} tasks" in rows["desktop-basics"] and "ui-basics" in rows
    listed = osworld_gym("tasks", "list", "desktop-basics", "--domain", "os")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == len(basics.filter(domain="os")) and all(
        line.startswith("os/") for line in lines
    )
    assert any("(infeasible)" in line for line in lines)
    shown = osworld_gym("tasks", "show", "desktop-basics", "os-chmod-script")
    assert json.loads(shown.stdout)["id"] == "os-chmod-script"


def test_errors_name_what_is_wrong() -> None:
    missing = osworld_gym("tasks", "show", "desktop-basics", "no-such-task")
    assert missing.returncode == 2 and "no-such-task" in missing.stderr
    assert "Traceback" not in missing.stderr
    no_id = osworld_gym("tasks", "show", "desktop-basics")
    assert no_id.returncode == 2 and "TASK_ID" in no_id.stderr


@needs_osworld_tasks
def test_support_report_over_osworld_tasks() -> None:
    report = osworld_gym("tasks", "report", str(OSWORLD_TASKS), "--domain", "os")
    assert report.returncode == 0
    assert "os " in report.stdout and "supported" in report.stdout
    summary = osworld_gym("tasks", "report", str(OSWORLD_TASKS), "--summary")
    assert summary.returncode == 0 and "most common lacks:" in summary.stdout
    assert len(summary.stdout) < len(osworld_gym("tasks", "report", str(OSWORLD_TASKS)).stdout)
