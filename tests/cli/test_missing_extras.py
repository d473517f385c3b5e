"""Missing parts refused up front (issue 38): every command that needs an extra checks it before
it starts anything and exits 2 with one line naming the extra and the exact command that installs
it, with the pip of the running interpreter; doctor's fixes name that pip too. No desktop: the
pool and the env's reset fail the test if reached; libraries are hidden with ``None`` in
``sys.modules``, which ``import`` and ``find_spec`` both treat as not installed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import osworld_gym.pool
from osworld_gym.cli import main
from osworld_gym.commands import doctor
from osworld_gym.env import OSWorldEnv

PYTHON = shlex.quote(sys.executable)
PIP = f"{PYTHON} -m pip"
CALC = "calc-rename-sheet"


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make libraries look not installed for the rest of the test."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def refusal(capsys: pytest.CaptureFixture[str], command: str) -> str:
    """The one line a refused command wrote on stderr (and nothing on stdout)."""
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"osworld-gym {command}: error: missing extra")
    return lines[0]


class NoPool:
    """Stands in for the env pool: a run that gets this far has started desktops."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the run went on to start its env pool")


@pytest.fixture()
def no_desktops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any pool or env reset fails the test: refusals must come before either."""
    monkeypatch.setattr(osworld_gym.pool, "EnvPool", NoPool)

    def no_reset(*args: object, **kwargs: object) -> Any:
        raise AssertionError("an episode was started")

    monkeypatch.setattr(OSWorldEnv, "reset", no_reset)


# --- export -------------------------------------------------------------------------------


def test_export_without_pyarrow_exits_2_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "pyarrow")
    out = tmp_path / "dataset"
    assert main(["export", str(tmp_path / "no-such-run"), "--output-dir", str(out)]) == 2
    line = refusal(capsys, "export")
    assert line == (
        "osworld-gym export: error: missing extra 'export' (pyarrow not installed) for "
        f"osworld-gym export: install with {PIP} install 'osworld-gym[export]'"
    )
    assert not out.exists()


@pytest.mark.heavy  # the console script
def test_export_refusal_from_the_console_entry_point(tmp_path: Path) -> None:
    """The same in a fresh interpreter, as a user's shell runs it: no traceback, status 2."""
    code = (
        "import sys; sys.modules['pyarrow'] = sys.modules['yaml'] = None\n"
        "from osworld_gym.cli import main\n"
        f"sys.exit(main(['export', {str(tmp_path)!r}, '--output-dir', {str(tmp_path / 'o')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "missing extra 'export' (pyarrow, pyyaml not installed)" in done.stderr
    assert done.stderr.rstrip().endswith(f"install with {PIP} install 'osworld-gym[export]'")


# --- serve-env ----------------------------------------------------------------------------


def test_serve_env_without_uvicorn_names_the_openenv_extra(
    no_desktops: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "uvicorn")
    assert main(["serve-env", "--port", "0"]) == 2
    line = refusal(capsys, "serve-env")
    assert "'openenv' (uvicorn not installed) for osworld-gym serve-env" in line
    assert line.endswith(f"install with {PIP} install 'osworld-gym[openenv]'")
    assert "No module named" not in line


def test_serve_env_refuses_tasks_it_could_not_score(
    no_desktops: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "openpyxl", "openenv")
    assert main(["serve-env", "--tasks", "desktop-basics", "--port", "0"]) == 2
    line = refusal(capsys, "serve-env")
    # One line, every missing extra, one command.
    assert "'eval' (openpyxl not installed) for 7 of the 37 tasks of 'desktop-basics'" in line
    assert "'openenv' (openenv not installed) for osworld-gym serve-env" in line
    assert line.endswith(f"install with {PIP} install 'osworld-gym[openenv,eval]'")


# --- run and play -------------------------------------------------------------------------


def test_run_on_a_calc_task_without_openpyxl_is_refused_before_its_episode(
    tmp_path: Path,
    no_desktops: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hide(monkeypatch, "openpyxl")
    argv = ["run", "--task-id", CALC, "--task-id", "os-chmod-script", "--progress", "lines"]
    assert main([*argv, "--output-dir", str(tmp_path / "results")]) == 2
    line = refusal(capsys, "run")
    assert line == (
        "osworld-gym run: error: missing extra 'eval' (openpyxl not installed) for 1 of the 2 "
        f"tasks to run ({CALC}): install with {PIP} install 'osworld-gym[eval]'"
    )
    assert not (tmp_path / "results").exists()  # no summary, no task folder


def test_run_on_tasks_that_need_nothing_missing_goes_on(
    tmp_path: Path,
    no_desktops: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hide(monkeypatch, "openpyxl", "pptx", "docx")
    argv = ["run", "--task-id", "os-chmod-script", "--progress", "lines"]
    assert main([*argv, "--output-dir", str(tmp_path / "results")]) == 1
    assert "the run went on to start its env pool" in capsys.readouterr().err


def test_run_on_docker_without_the_sdk_names_both_extras(
    tmp_path: Path,
    no_desktops: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hide(monkeypatch, "docker", "pptx")
    argv = ["run", "--provider", "docker", "--task-id", "impress-change-title"]
    assert main([*argv, "--output-dir", str(tmp_path / "results")]) == 2
    line = refusal(capsys, "run")
    assert "'docker' (docker not installed) for the docker provider" in line
    assert "'eval' (python-pptx not installed) for task impress-change-title" in line
    assert line.endswith(f"install with {PIP} install 'osworld-gym[docker,eval]'")


def test_play_leaves_out_the_tasks_it_could_not_score_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "openpyxl")
    drawn: list[str] = []

    def first_reset(self: OSWorldEnv, *, seed: object = None, options: Any = None) -> Any:
        drawn.append(options["task_id"])
        raise AssertionError("stop at the first reset")

    monkeypatch.setattr(OSWorldEnv, "reset", first_reset)
    assert main(["play", "--tasks", "desktop-basics", "--episodes", "1"]) == 1  # the stop
    note = capsys.readouterr().err.strip().splitlines()[0]
    assert "'eval' (openpyxl not installed) for 7 of the 37 tasks of 'desktop-basics'" in note
    assert note.endswith("; playing the other 30 tasks")
    assert drawn and not drawn[0].startswith(("calc-", "multi-calc"))


def test_play_refuses_a_task_set_it_could_not_score_at_all(
    tmp_path: Path,
    no_desktops: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hide(monkeypatch, "openpyxl")
    assert main(["play", "--tasks", str(_calc_task_file(tmp_path)), "--episodes", "1"]) == 2
    line = refusal(capsys, "play")
    assert "'eval' (openpyxl not installed) for task" in line
    assert line.endswith(f"install with {PIP} install 'osworld-gym[eval]'")


def _calc_task_file(folder: Path) -> Path:
    """A task file of the bundled Calc task alone."""
    from osworld_gym.tasks import load_tasks

    (task,) = [t for t in load_tasks("desktop-basics") if t.id == CALC]
    path = folder / f"{CALC}.json"
    path.write_text(json.dumps(task.to_dict()))
    return path


def test_image_build_without_the_docker_sdk_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "docker")
    assert main(["image", "build"]) == 2
    line = refusal(capsys, "image")
    assert line.endswith(f"install with {PIP} install 'osworld-gym[docker]'")


# --- doctor's fixes -----------------------------------------------------------------------


@pytest.mark.heavy  # the console script
def test_doctors_fixes_use_the_pip_of_the_interpreter_running_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The slow or host-changing probes stubbed out; the Python libraries are really checked.
    for name in ("_sandbox_check", "_limits_check", "_internet_check"):
        monkeypatch.setattr(doctor, name, lambda name=name: doctor.Check("local", name, True))
    monkeypatch.setattr(doctor, "suite_apps", lambda: {})
    monkeypatch.setattr(doctor, "docker_checks", lambda image: [])
    monkeypatch.setattr(doctor, "qemu_checks", lambda: [])
    hide(monkeypatch, "mss", "ray", "openpyxl", "torch")
    assert main(["doctor", "--no-launch"]) == 1
    out = capsys.readouterr().out
    assert f"fix: {PIP} install mss" in out
    assert f"fix: {PIP} install 'osworld-gym[ray]'" in out
    assert f"fixes, in order:\n  {PIP} install mss" in out
    # The trainer's torch: the CPU build, from PyTorch's CPU wheel index.
    cpu_torch = f"{PIP} install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    assert doctor.CPU_TORCH == cpu_torch
    assert doctor.extra_fix("train") == f"{cpu_torch} && {PIP} install 'osworld-gym[train]'"
    # No bare `pip`: every pip command of every fix is this interpreter's.
    for line in out.splitlines():
        for command in line.split("&&"):
            if " pip " in f" {command.strip()} ":
                assert f"{PIP} " in command, line


def test_doctors_engine_fix_starts_dockerd_with_its_bridge(monkeypatch: pytest.MonkeyPatch) -> None:
    # OSWorld's official image publishes its port through the bridge: no --bridge=none.
    for systemd in (True, False):
        fix = doctor.dockerd_fix(systemd=systemd)
        assert "--bridge=none" not in fix and "--iptables=false" not in fix
    assert doctor.dockerd_fix(systemd=True) == "systemctl start docker"
    assert doctor.dockerd_fix(systemd=False).startswith("nohup dockerd >")

    monkeypatch.setattr(doctor.shutil, "which", lambda name: f"/usr/bin/{name}")
    answers: dict[str, int] = {"version": 1}

    def run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        status = answers.get(argv[1], 0)
        return subprocess.CompletedProcess(argv, status, "27.5.1\n" if not status else "", "")

    monkeypatch.setattr(doctor, "_run", run)
    checks = {c.name: c for c in doctor.docker_checks("osworld-gym/desktop:latest")}
    assert not checks["engine reachable"].ok
    assert checks["engine reachable"].fix == doctor.dockerd_fix()
    # An engine that answers but was started without its bridge: a warning with the fix.
    answers.update(version=0, network=1)
    checks = {c.name: c for c in doctor.docker_checks("osworld-gym/desktop:latest")}
    bridge = checks["bridge network"]
    assert bridge.status == "WARN" and not bridge.required
    assert bridge.fix is not None and bridge.fix.endswith(doctor.dockerd_fix())
    answers.update(network=0)
    checks = {c.name: c for c in doctor.docker_checks("osworld-gym/desktop:latest")}
    assert checks["bridge network"].ok and checks["engine reachable"].ok
