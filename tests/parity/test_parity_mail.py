"""Parity of the Thunderbird folder metric (OSWorld's ``thunderbird.check_thunderbird_folder``)
with ours, and what the ``"fixed"`` evaluation mode changes.

Folder files are mbox text as Thunderbird writes it (each message after a ``From - <date>``
line, with ``X-Mozilla-Status`` headers), made at test time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from parity_harness import (
    ABSENT,
    FileContent,
    OSWorld,
    assert_same_score,
    compare,
    make_file,
    real_checks,
)

from osworld_gym.evaluation.metrics.registry import metrics_for

pytestmark = pytest.mark.parity


def message(subject: str, *, status: str = "0001", keys: str = "", body: str = "Hello") -> str:
    """One message as Thunderbird stores it in a folder file."""
    return (
        "From - Mon Jan 15 10:00:00 2024\n"
        f"X-Mozilla-Status: {status}\n"
        "X-Mozilla-Status2: 00000000\n"
        f"X-Mozilla-Keys: {keys}\n"
        "MIME-Version: 1.0\n"
        f"Subject: {subject}\n"
        "From: Ada <ada@example.org>\n"
        "To: Bob <bob@example.org>\n"
        "\n"
        f"{body}\n"
        "\n"
    )


A, B, C = message("Alpha"), message("Beta"), message("Gamma")
DELETED = message("Old", status="0009")
READ_A = message("Alpha", status="0003")
LABELLED_A = message("Alpha", keys="$label1")

_REAL_OPTIONS = [options for _, _, _, options in real_checks("check_thunderbird_folder")] or [
    {"remove_deleted": True, "remove_duplicate": True},
    {},
]
_OPTIONS = [dict(o) for o in {str(sorted(o.items())): o for o in _REAL_OPTIONS}.values()]

FOLDER_CASES: list[tuple[str, FileContent, FileContent, dict[str, Any]]] = [
    ("same", A + B, A + B, {}),
    ("reordered", B + A, A + B, {}),
    ("different", A + B, A + C, {}),
    ("missing-message", A, A + B, {}),
    ("extra-message", A + B + C, A + B, {}),
    ("duplicate", A + A + B, A + B, {}),
    ("duplicate-kept", A + A + B, A + B, {"remove_duplicate": False}),
    ("deleted", A + DELETED, A, {}),
    ("deleted-kept", A + DELETED, A, {"remove_deleted": False}),
    ("status", READ_A, A, {}),
    ("status-ignored", READ_A, A, {"ignore_status": True}),
    ("keys", LABELLED_A, A, {}),
    ("keys-ignored", LABELLED_A, A, {"ignore_keys": True}),
    ("empty-vs-messages", "", A, {}),
    ("both-empty", "", "", {}),
    ("blank-vs-empty", "\n\n  \n", "", {}),
    ("upper-from", "FROM - x\n" + A, A, {}),
    ("upper-from-both", "FROM - x\n" + A, "FROM - y\n" + B, {}),
    ("upper-from-no-dup", "FROM - FROM - x", "FROM - y", {"remove_duplicate": False}),
    ("upper-from-twice", "FROM - FROM - x", "FROM - y", {}),
    ("crlf", (A + B).replace("\n", "\r\n"), A + B, {}),
    ("unicode", message("Zürich 東京"), message("Zürich 東京"), {}),
    ("latin-1", message("café").encode("latin-1"), message("café"), {}),
    ("none", None, A, {}),
    ("expected-none", A, None, {}),
    ("absent", ABSENT, A, {}),
    ("expected-absent", A, ABSENT, {}),
]

FOLDERS = [
    *[
        pytest.param(result, expected, {**options, **real}, id=f"{name}-real{i}")
        for i, real in enumerate(_OPTIONS)
        for name, result, expected, options in FOLDER_CASES
        if not options
    ],
    *[
        pytest.param(result, expected, options, id=name)
        for name, result, expected, options in FOLDER_CASES
        if options
    ],
]


@pytest.mark.parametrize(("result", "expected", "options"), FOLDERS)
def test_check_thunderbird_folder(
    osworld: OSWorld,
    tmp_path: Path,
    result: FileContent,
    expected: FileContent,
    options: dict[str, Any],
) -> None:
    assert_same_score(
        osworld,
        "check_thunderbird_folder",
        make_file(tmp_path, "Inbox", result),
        make_file(tmp_path, "Inbox-gold", expected),
        **options,
    )


FOLDER_LISTS = [
    pytest.param([A, B], [A, B], id="both-same"),
    pytest.param([A, B], [A, C], id="second-differs"),
    pytest.param([A, ""], [A, B], id="second-empty"),
    pytest.param(["", ""], ["", ""], id="all-empty"),
    pytest.param([A], [A, ""], id="result-shorter"),
    pytest.param([A, "", B], [A, B], id="result-longer"),
    pytest.param([None, A], [A, A], id="none-inside"),
    pytest.param([], [], id="empty-lists"),
]


@pytest.mark.parametrize(("result", "expected"), FOLDER_LISTS)
def test_check_thunderbird_folder_lists(
    osworld: OSWorld, tmp_path: Path, result: list[FileContent], expected: list[FileContent]
) -> None:
    got = [make_file(tmp_path, f"r{i}", c) for i, c in enumerate(result)]
    want = [make_file(tmp_path, f"e{i}", c) for i, c in enumerate(expected)]
    assert_same_score(osworld, "check_thunderbird_folder", got, want)


def test_check_thunderbird_folder_list_against_path(osworld: OSWorld, tmp_path: Path) -> None:
    """A list of results against one reference path: OSWorld wraps both and fails."""
    got = [make_file(tmp_path, "r0", A)]
    assert_same_score(osworld, "check_thunderbird_folder", got, make_file(tmp_path, "e", A))


@pytest.mark.parametrize(
    ("result", "expected", "osworld_score", "fixed_score"),
    [
        pytest.param(A + B, A + C, 1.0, 0.0, id="wrong-folder"),
        pytest.param(A + B, B + A, 1.0, 1.0, id="right-folder"),
        pytest.param(A + DELETED, A, 1.0, 1.0, id="deleted-ignored"),
        pytest.param("", A, 0.0, 0.0, id="empty-folder"),
    ],
)
def test_fixed_mode_compares_the_messages(
    osworld: OSWorld,
    tmp_path: Path,
    result: str,
    expected: str,
    osworld_score: float,
    fixed_score: float,
) -> None:
    """The default mode scores as OSWorld (any two non-empty folders pass); fixed compares."""
    got, want = make_file(tmp_path, "Inbox", result), make_file(tmp_path, "gold", expected)
    outcome = compare(osworld, "check_thunderbird_folder", got, want)
    assert outcome.agreed and outcome.our_effective_score == osworld_score
    assert metrics_for("fixed")["check_thunderbird_folder"](str(got), str(want)) == fixed_score
