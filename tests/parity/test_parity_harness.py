"""The parity harness itself: deadlines, unavailable modules, name resolution, known gaps.

These tests call the worker directly (no parity cases are counted).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from parity_harness import (
    OSWorld,
    OSWorldError,
    OSWorldUnavailable,
    WorkerError,
    disagreement,
    make_file,
    metric_modules,
)

from osworld_gym.evaluation.metrics import metric_names

pytestmark = pytest.mark.parity

# Metrics we register that desktop-env 1.0.2 does not define (newer OSWorld task files use them).
NOT_IN_DESKTOP_ENV_1_0_2 = {"check_play_and_exit", "check_structure_sim_with_threshold"}


def test_osworld_defines_every_metric_we_register_but_the_known_newer_ones(
    osworld: OSWorld,
) -> None:
    defined = metric_modules(osworld.root / "evaluators" / "metrics")
    assert {name for name in metric_names() if name not in defined} == NOT_IN_DESKTOP_ENV_1_0_2


def test_a_name_defined_twice_resolves_to_the_module_osworld_exports_it_from(
    osworld: OSWorld,
) -> None:
    # docs.py and gimp.py both define check_file_exists; the package __init__ imports it from
    # docs, then from gimp, so gimp's is the one OSWorld's evaluator calls.
    assert osworld.module_of("check_file_exists") == "evaluators/metrics/gimp.py"
    assert osworld.module_of("find_default_font") == "evaluators/metrics/docs.py"
    assert osworld.module_of("compare_csv") == "evaluators/metrics/table.py"
    assert osworld.module_of("compare_result_files") == "evaluators/metrics/vscode.py"


def test_osworld_exceptions_carry_their_type_name(osworld: OSWorld) -> None:
    with pytest.raises(OSWorldError) as raised:
        osworld.score("evaluators/metrics/general.py", "exact_match", "a", {})
    assert raised.value.name == "KeyError"
    assert "expected" in raised.value.message


def test_a_result_that_is_no_number_is_reported_as_such(osworld: OSWorld) -> None:
    # OSWorld's check_qt_slider_colours falls through and returns None for an unknown type.
    path = make_file(Path(osworld.workdir), "vlcrc", "qt-slider-colours=0;0;0\n")
    with pytest.raises(OSWorldError) as raised:
        osworld.score("evaluators/metrics/vlc.py", "check_qt_slider_colours", path, {"type": "x"})
    assert raised.value.name == "NonNumericResult"


def test_a_module_that_cannot_be_imported_is_unavailable(osworld: OSWorld) -> None:
    with pytest.raises(OSWorldUnavailable, match="cannot be imported"):
        osworld.score("evaluators/metrics/no_such_module.py", "f")
    # the worker survives it
    assert osworld.score("evaluators/metrics/general.py", "exact_match", 1, {"expected": 1}) == 1


def test_a_call_past_its_deadline_fails_and_the_next_call_gets_a_fresh_worker(
    osworld: OSWorld, tmp_path: Path
) -> None:
    client = OSWorld(osworld.python, tmp_path, timeout=1.0)
    try:
        rules = {"expected": 1}
        assert client.score("evaluators/metrics/general.py", "exact_match", 1, rules) == 1.0
        # Catastrophic backtracking: the worker's alarm interrupts it, the client kills the
        # worker (its state is unknown) and the case fails.
        hung = make_file(tmp_path, "list.txt", "a" * 40 + "!\n")
        with pytest.raises(WorkerError, match="deadline"):
            client.score(
                "evaluators/metrics/general.py", "check_list", hung, {"expect": ["(a+)+$"]}
            )
        assert client.score("evaluators/metrics/general.py", "exact_match", 1, rules) == 1.0
    finally:
        client.close()


def test_a_worker_that_never_answers_is_killed_at_the_deadline(tmp_path: Path) -> None:
    # A stand-in "python" that greets, then hangs where no signal reaches OSWorld's code.
    fake = tmp_path / "python"
    fake.write_text(
        '#!/bin/sh\necho \'{"ready": true, "desktop_env": "/nowhere"}\'\nexec sleep 600\n'
    )
    fake.chmod(0o755)
    client = OSWorld(fake, tmp_path, timeout=0.5, import_timeout=0.5)
    try:
        with pytest.raises(WorkerError, match="in time"):
            client.score("evaluators/metrics/general.py", "exact_match", 1, {"expected": 1})
        assert client._proc is None  # killed; the next call would start a fresh one
    finally:
        client.close()


def test_the_disagreement_marker_is_a_strict_xfail_on_assertions() -> None:
    mark = disagreement("why").mark
    assert mark.name == "xfail"
    assert mark.kwargs == {"strict": True, "reason": "why", "raises": AssertionError}
