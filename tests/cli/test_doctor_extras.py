"""`osworld-gym doctor`'s extras section: every extra of setup.cfg, one line each with its fix;
information unless `--extra` asks for one. Provider checks are stubbed out (no desktops)."""

from __future__ import annotations

import configparser
import importlib.metadata
import importlib.util
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.cli import main
from osworld_gym.commands import doctor
from osworld_gym.commands.doctor import (
    GUI_FIX,
    declared_extras,
    expand_extras,
    extra_distributions,
    extra_fix,
    extras_checks,
    extras_from_metadata,
    extras_from_setup_cfg,
)

SETUP_CFG = Path(__file__).resolve().parents[2] / "setup.cfg"
NOT_THERE = "osworld-gym-test-no-such-library"
# The fixes name the pip of the interpreter running doctor, not whichever `pip` is on PATH.
PIP = f"{shlex.quote(sys.executable)} -m pip"
FAKE = {
    "gui": ["pymsgbox"],
    "guest": ["osworld-gym[gui]"],
    "eval": ["pillow"],
    "ray": ["ray>=2"],
    "present": ["pillow>=10", "numpy"],
    "absent": ["pillow", f"{NOT_THERE}>=1"],
    "all": ["osworld-gym[gui,present,absent]"],
}


@pytest.fixture()
def no_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider checks stubbed out (they launch desktops and ask docker)."""
    for name in ("local_checks", "docker_checks", "qemu_checks", "ray_checks", "eval_checks"):
        monkeypatch.setattr(doctor, name, lambda *args, **kwargs: [])


@pytest.fixture()
def fake_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "declared_extras", lambda: FAKE)


def test_the_extras_are_setup_cfgs() -> None:
    if not SETUP_CFG.is_file():
        pytest.skip("not a checkout: no setup.cfg")
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    assert list(declared_extras()) == list(parser["options.extras_require"])
    for extra in ("gui", "docs", "all", "train"):
        assert extra in declared_extras()
    assert "mypy" in extra_distributions("test")
    assert extra_distributions("guest") == extra_distributions("gui")  # the old name
    # all: every extra that installs with pip alone, never the CUDA or own-venv ones.
    members = set(expand_extras(["all"])) - {"all"}
    assert members == set(declared_extras()) - {"all", "guest", "vllm", "verl", "ocr"}
    assert set(extra_distributions("all")) >= set(extra_distributions("docs"))
    # pyautogui cannot be a dependency: it pulls python3-xlib, which overwrites python-xlib.
    assert not {"pyautogui", "mouseinfo"} & set(extra_distributions("all"))


def test_setup_cfg_of_another_project_is_not_read(tmp_path: Path) -> None:
    other = tmp_path / "setup.cfg"
    other.write_text("[metadata]\nname = other\n[options.extras_require]\nx =\n    y\n")
    assert extras_from_setup_cfg(other) is None
    assert extras_from_setup_cfg(tmp_path / "missing.cfg") is None


def test_metadata_extras_match_setup_cfg() -> None:
    """The installed path reads core metadata; built from setup.cfg it says the same."""
    provides = ["gui", "docs", "all"]
    requires = [
        "numpy>=1.24",
        'pymsgbox; extra == "gui"',
        "mkdocstrings[python]>=0.26; extra == 'docs'",
        'foo; platform_system == "Linux" and extra == "docs"',
        'osworld-gym[docs,gui]; extra == "all"',
    ]
    extras = extras_from_metadata(provides, requires)
    assert extras == {
        "gui": ["pymsgbox"],
        "docs": ["mkdocstrings[python]>=0.26", "foo"],
        "all": ["osworld-gym[docs,gui]"],
    }
    assert expand_extras(["all"], extras) == ["all", "docs", "gui"]


@pytest.mark.heavy  # the console script
def test_each_extra_gets_a_line_and_its_fix(fake_extras: None) -> None:
    checks = {c.name: c for c in extras_checks()}
    # eval and ray have sections of their own; guest and all are made of other extras.
    assert list(checks) == ["extra: gui", "extra: present", "extra: absent"]
    assert checks["extra: present"].ok and checks["extra: present"].detail == "2 installed"
    absent = checks["extra: absent"]
    assert absent.status == "WARN" and absent.detail == f"missing {NOT_THERE}"
    assert absent.fix == f"{PIP} install 'osworld-gym[absent]'"
    required = {c.name: c for c in extras_checks(required=["absent"])}["extra: absent"]
    assert required.status == "MISSING"


@pytest.mark.heavy  # the console script
def test_the_gui_fix_installs_pyautogui_without_its_dependencies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert extra_fix("gui") == GUI_FIX
    assert GUI_FIX == (
        f"{PIP} install 'osworld-gym[gui]' && "
        f"{PIP} install --no-deps pyautogui==0.9.54 mouseinfo==0.1.3"
    )
    # pyautogui is checked although the extra cannot list it.
    monkeypatch.setattr(doctor, "declared_extras", lambda: {"gui": ["pillow"]})
    real = importlib.metadata.version

    def without_pyautogui(name: str) -> str:
        if name in ("pyautogui", "mouseinfo"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(doctor.importlib.metadata, "version", without_pyautogui)
    (gui,) = extras_checks()
    assert not gui.ok and gui.detail == "missing pyautogui, mouseinfo" and gui.fix == GUI_FIX


def test_python3_xlib_installed_fails_local_with_the_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.metadata.version

    def with_python3_xlib(name: str) -> str:
        return "0.15" if name == "python3-xlib" else real(name)

    monkeypatch.setattr(doctor.importlib.metadata, "version", with_python3_xlib)
    check = doctor._xlib_check()
    assert check.status == "MISSING" and "python3-xlib 0.15 installed" in check.detail
    assert check.fix == (
        f"{PIP} uninstall -y python3-xlib && "
        f"{PIP} install --no-deps --force-reinstall 'python-xlib>=0.33'"
    )


def test_the_train_fix_puts_the_cpu_torch_first_when_torch_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def no_torch(name: str, *args: Any) -> Any:
        return None if name == "torch" else real(name, *args)

    monkeypatch.setattr(doctor.importlib.util, "find_spec", no_torch)
    # The CPU build, from PyTorch's CPU wheel index: PyPI's torch is a multi-GB CUDA build.
    assert extra_fix("train") == (
        f"{PIP} install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && "
        f"{PIP} install 'osworld-gym[train]'"
    )
    assert extra_fix("docs") == f"{PIP} install 'osworld-gym[docs]'"


@pytest.mark.heavy  # the console script
def test_missing_extras_are_information_unless_asked_for(
    no_providers: None, fake_extras: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--no-launch"]) == 0
    out = capsys.readouterr().out
    assert f"WARN     extra: absent                missing {NOT_THERE}" in out
    assert "extras not installed (information; add those you need):" in out
    assert f"  {PIP} install 'osworld-gym[absent]'" in out
    assert "fixes, in order:" not in out

    assert main(["doctor", "--no-launch", "--extra", "absent"]) == 1
    out = capsys.readouterr().out
    assert "extras: NOT ready" in out and "MISSING  extra: absent" in out
    assert f"fixes, in order:\n  {PIP} install 'osworld-gym[absent]'" in out

    assert main(["doctor", "--no-launch", "--extra", "present"]) == 0
    assert main(["doctor", "--no-launch", "--extra", "all"]) == 1  # all holds absent
    capsys.readouterr()

    assert main(["doctor", "--no-launch", "--json", "--extra", "all"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["extras"] == {"gui": True, "present": True, "absent": False}
    assert report["extras_required"] == ["all", "gui", "present", "absent"]

    assert main(["doctor", "--no-launch", "--extra", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("osworld-gym doctor: error: unknown extra nope (choose from gui,")


@pytest.mark.heavy  # the console script
def test_asking_for_ray_or_eval_requires_their_sections(
    no_providers: None, fake_extras: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osworld_gym.commands.doctor import Check

    monkeypatch.setattr(doctor, "ray_checks", lambda: [Check("ray", "python: ray", False)])
    monkeypatch.setattr(doctor, "eval_checks", lambda: [Check("eval", "python: x", False)])
    assert main(["doctor", "--no-launch", "--no-eval"]) == 0
    assert main(["doctor", "--no-launch", "--no-eval", "--extra", "ray"]) == 1
    assert main(["doctor", "--no-launch", "--no-eval", "--extra", "eval"]) == 1
