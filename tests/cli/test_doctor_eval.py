"""`osworld-gym doctor`'s check of the eval extra's metric libraries, without desktops: the
provider checks are stubbed out, so only the ``eval`` section decides the exit status."""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import shlex
import sys
from pathlib import Path

import pytest

from osworld_gym.cli import main
from osworld_gym.commands import doctor
from osworld_gym.commands.doctor import EVAL_FIX, _library_check, eval_checks, extra_distributions

SETUP_CFG = Path(__file__).resolve().parents[2] / "setup.cfg"
NOT_THERE = "osworld-gym-test-no-such-library"
# The fixes name the pip of the interpreter running doctor, not whichever `pip` is on PATH.
FIX = f"{shlex.quote(sys.executable)} -m pip install 'osworld-gym[eval]'"


@pytest.fixture()
def eval_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider checks stubbed out (they launch desktops and ask docker)."""
    for name in ("local_checks", "docker_checks", "qemu_checks", "ray_checks"):
        monkeypatch.setattr(doctor, name, lambda *args, **kwargs: [])


@pytest.mark.heavy  # imports the eval extra's libraries
def test_the_eval_extra_is_read_as_setup_cfg_declares_it() -> None:
    if not SETUP_CFG.is_file():
        pytest.skip("not a checkout: no setup.cfg")
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    declared = parser["options.extras_require"]["eval"].split()
    names = [line.split(">")[0].split("=")[0].split("<")[0] for line in declared]
    assert extra_distributions("eval") == names
    assert [c.name for c in eval_checks()] == [f"python: {name}" for name in names]
    assert extra_distributions("no-such-extra") == []


def test_an_installed_library_is_ok_with_its_version() -> None:
    check = _library_check("eval", "pillow", ["PIL"], EVAL_FIX)
    assert check.status == "OK" and check.detail == importlib.metadata.version("pillow")


def test_a_missing_library_is_missing_with_the_install_command() -> None:
    check = _library_check("eval", NOT_THERE, [], EVAL_FIX)
    assert check.status == "MISSING" and check.detail == "not installed"
    assert check.fix == FIX == EVAL_FIX
    # Installed, but its module is gone (a broken install): missing as well.
    broken = _library_check("eval", "pillow", ["osworld_gym_no_such_module"], EVAL_FIX)
    assert broken.status == "MISSING" and "not importable" in broken.detail


@pytest.mark.heavy  # the console script
def test_doctor_fails_without_the_eval_libraries_and_names_the_fix(
    eval_only: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(doctor, "extra_distributions", lambda extra: ["pillow", NOT_THERE])
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "eval: NOT ready" in out
    assert "OK       python: pillow" in out
    assert f"MISSING  python: {NOT_THERE}" in out
    assert f"fix: {FIX}" in out
    assert f"fixes, in order:\n  {FIX}" in out

    # --no-eval: still listed, no longer required.
    assert main(["doctor", "--no-eval"]) == 0
    assert f"MISSING  python: {NOT_THERE}" in capsys.readouterr().out

    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["eval"] is False and report["eval_required"] is True
    assert set(report["providers"]) == set(doctor.PROVIDERS)
    missing = [c for c in report["checks"] if c["status"] == "MISSING"]
    assert [(c["provider"], c["name"], c["fix"]) for c in missing] == [
        ("eval", f"python: {NOT_THERE}", FIX)
    ]


@pytest.mark.heavy  # the console script
def test_doctor_passes_with_the_eval_libraries(
    eval_only: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(doctor, "extra_distributions", lambda extra: ["pillow", "numpy"])
    assert main(["doctor"]) == 0
    assert "eval: works" in capsys.readouterr().out
