"""The verl adapter through verl's own classes, on CPU, in verl's side venv.

verl pins ``transformers<5.11``, below the project's ``train`` extra, so its cases run in a
cached side venv (``verl[verl-core]==0.9.1`` over our env: torch, osworld-gym and pytest come
from here) as one script, ``verl_cases.py``: a fake LLM server answering scripted UI-TARS text
with the offline tiny Qwen2.5-VL tokenizer, real ``local`` desktops on ``ui-basics`` (two), and
verl's registry, Hydra instantiation, continuous-token builder, dataset class and
post-processing. Each case below reports one entry of the script's JSON report.

The first run builds the venv (about a minute with a warm pip cache; it needs PyPI then).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fixture_marks import needs
from side_venv import ensure_venv, run_in_venv

from osworld_gym.errors import DependencyNotInstalled

pytestmark = pytest.mark.trainers

VERL_STEPS = [["verl[verl-core]==0.9.1"]]
CASES_SCRIPT = Path(__file__).with_name("verl_cases.py")
RUN_TIMEOUT_S = 480.0
CASES = [
    "setup",
    "registry",
    "dataset",
    "length_check",
    "example_config",
    "correct_and_wrong",
    "fifteen_waits",
    "response_budget_never_cuts_an_image",
    "unknown_task_is_not_retried",
    "killed_desktop_is_retried",
    "killed_every_attempt",
    "desk",
]


@pytest.mark.skipif(
    importlib.util.find_spec("verl") is not None, reason="verl is installed in this env"
)
def test_module_without_verl_names_the_extra() -> None:
    sys.modules.pop("osworld_gym.integrations.verl", None)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'osworld-gym\[verl\]'"):
        import osworld_gym.integrations.verl  # noqa: F401


@pytest.fixture(scope="module")
@needs("desktop")  # the cases drive real local desktops
def verl_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """Run every case once in the side venv: the JSON report and the script's output."""
    python = ensure_venv("verl", VERL_STEPS, inherit=True)
    work = tmp_path_factory.mktemp("verl")
    report_path = work / "report.json"
    completed = run_in_venv(
        python, [str(CASES_SCRIPT), str(work), str(report_path)], timeout=RUN_TIMEOUT_S
    )
    output = (
        f"--- stdout ---\n{completed.stdout[-8000:]}\n--- stderr ---\n{completed.stderr[-8000:]}"
    )
    if not report_path.is_file():
        pytest.fail(f"verl_cases.py wrote no report (exit {completed.returncode})\n{output}")
    report = json.loads(report_path.read_text())
    report["_exit"] = {"ok": completed.returncode == 0, "returncode": completed.returncode}
    return report, output


@pytest.mark.desktop
@pytest.mark.parametrize("case", CASES)
def test_verl_case(verl_run: tuple[dict[str, Any], str], case: str) -> None:
    report, output = verl_run
    entry = report.get(case)
    assert entry is not None, f"case {case!r} did not run\n{output}"
    assert entry["ok"], f"case {case!r} failed:\n{entry.get('error')}\n{output}"


@pytest.mark.desktop
def test_verl_cases_script_exits_cleanly(verl_run: tuple[dict[str, Any], str]) -> None:
    report, output = verl_run
    assert set(report) - {"_exit"} == set(CASES), sorted(report)
    assert report["_exit"]["ok"], f"exit {report['_exit']['returncode']}\n{output}"
