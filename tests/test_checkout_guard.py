"""The session guard: a package imported from a copy other than this checkout is named."""

from __future__ import annotations

import shutil
from pathlib import Path

from checkout_guard import REPO, stale_copies


def test_this_session_tests_this_checkout() -> None:
    assert stale_copies() == []


def test_a_copy_that_differs_is_named_with_its_files(tmp_path: Path) -> None:
    # A checkout whose agents/ differs from the osworld_agents this session imports.
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "agents", tmp_path / "agents", ignore=skip)
    (tmp_path / "agents" / "arpo" / "replay.py").write_text("# edited\n")
    (tmp_path / "agents" / "new_module.py").write_text("")
    (problem,) = stale_copies(tmp_path)
    assert problem.startswith("osworld_agents is imported from ")
    assert "(2 files differ: arpo/replay.py, new_module.py)" in problem
