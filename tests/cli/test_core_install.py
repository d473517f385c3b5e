"""A core-only install: a wheel built from a copy of this checkout, installed into a fresh venv
with no extras, used as a new user would (issues 17 and 21).

* ``doctor`` names every missing extra with the exact command that adds it (with the venv's own
  ``python -m pip``), and the missing ``eval`` libraries fail it;
* the trainer commands print the one-line install hint of the ``train`` extra and exit 2, with
  no traceback, even for ``--help``;
* the wheel ships the LICENSE and the guest image recipes, and ``image build`` finds them
  outside any checkout;
* running LibreOffice tasks is refused before any desktop starts, with exit status 2 and the
  command that installs the ``eval`` extra; so are ``export`` and ``serve-env`` without theirs.

The venv is a plain one (no system site-packages: the host's libraries must not show through);
pip installs the core requirements from its index or local wheels.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from fixture_marks import needs
from wheel_helpers import clean_env, copy_checkout

REPO = Path(__file__).resolve().parents[2]
TASKS = {"libreoffice_calc": "calc-rename-sheet", "libreoffice_impress": "impress-change-title"}
CPU_TORCH = "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
TRAIN_HINT = ": needs the train extra (torch, transformers): "
TRAIN_FIX = "pip install 'osworld-gym[train]'"


@pytest.fixture(scope="module")
@needs("heavy")
def core_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps`` of a copy of this checkout: the wheel users install."""
    if not (REPO / "setup.cfg").is_file():
        pytest.skip("needs a checkout to build from")
    root = tmp_path_factory.mktemp("core-wheel")
    source = copy_checkout(root / "source")
    out = root / "dist"
    # This Python's setuptools (pyproject.toml's requirement): no download of a build backend.
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=600, env=clean_env(),
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = out.glob("osworld_gym-*.whl")
    return wheel


@pytest.fixture(scope="module")
def core_venv(core_wheel: Path) -> Path:
    """A fresh venv with the wheel installed: the core, no extras."""
    venv = core_wheel.parents[1] / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(core_wheel)],
        capture_output=True,
        text=True,
        timeout=900,
        env=clean_env(),
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    return venv


def _venv_pip(venv: Path) -> str:
    """How doctor and the refusals name pip there: the venv's interpreter, ``-m pip``."""
    done = _in_venv(venv, "python", "-c", "import sys; print(sys.executable)", timeout=60)
    return f"{done.stdout.strip()} -m pip"


def _in_venv(venv: Path, *argv: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a program of the venv outside the checkout (``python -c`` would import from it)."""
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(),
        cwd=venv.parent,
    )


def test_the_venv_is_core_only(core_venv: Path) -> None:
    probe = "import importlib.util as u; print(u.find_spec('openpyxl'), u.find_spec('osworld_gym'))"
    found = _in_venv(core_venv, "python", "-c", probe, timeout=60)
    openpyxl, package = found.stdout.split(" ", 1)
    assert openpyxl == "None" and str(core_venv) in package, found.stdout + found.stderr


def test_doctor_names_the_eval_extra(core_venv: Path) -> None:
    done = _in_venv(core_venv, "osworld-gym", "doctor", "--no-launch", timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "eval: NOT ready" in done.stdout
    fix = f"{_venv_pip(core_venv)} install 'osworld-gym[eval]'"
    assert "MISSING  python: openpyxl" in done.stdout and f"fix: {fix}" in done.stdout


def test_libreoffice_tasks_are_refused_before_any_desktop_starts(
    core_venv: Path, tmp_path: Path
) -> None:
    fix = f"{_venv_pip(core_venv)} install 'osworld-gym[eval]'"
    ids = [arg for task_id in TASKS.values() for arg in ("--task-id", task_id)]
    run = ["run", "--agent", "oracle", *ids, "--output-dir", str(tmp_path)]
    # play leaves out the tasks it cannot score; with none left it is refused.
    calc_only = REPO / "envs" / "desktop-basics" / "examples" / "libreoffice_calc"
    for command in (run, ["play", "--tasks", str(calc_only)]):
        done = _in_venv(core_venv, "osworld-gym", *command, timeout=300)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert "error: missing extra 'eval' (" in line and line.endswith(f"install with {fix}")
    assert not any(tmp_path.iterdir())  # no results folder: nothing ran


def test_export_and_serve_env_name_their_extras(core_venv: Path, tmp_path: Path) -> None:
    pip = _venv_pip(core_venv)
    export = _in_venv(
        core_venv, "osworld-gym", "export", str(tmp_path), "--output-dir", str(tmp_path / "o"),
        timeout=120,
    )  # fmt: skip
    assert export.returncode == 2, export.stdout + export.stderr
    assert export.stderr.rstrip().endswith(f"install with {pip} install 'osworld-gym[export]'")
    serve = _in_venv(core_venv, "osworld-gym", "serve-env", "--tasks", "ui-basics", timeout=120)
    assert serve.returncode == 2, serve.stdout + serve.stderr
    assert "'openenv' (" in serve.stderr and "No module named" not in serve.stderr
    assert serve.stderr.rstrip().endswith(f"install with {pip} install 'osworld-gym[openenv]'")


def _installed_extras(venv: Path) -> dict[str, list[str]]:
    """The extras as the venv's installed metadata declares them (what doctor reads there)."""
    probe = (
        "import json; from osworld_gym.commands import doctor; "
        "print(json.dumps(doctor.declared_extras()))"
    )
    done = _in_venv(venv, "python", "-c", probe, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_installed_metadata_declares_the_extras_of_setup_cfg(core_venv: Path) -> None:
    """What doctor reads in an install (metadata) is what it reads in a checkout (setup.cfg)."""
    from osworld_gym.commands.doctor import expand_extras, extras_from_setup_cfg

    def packages(extras: dict[str, list[str]]) -> dict[str, set[str]]:
        # Names only: the metadata writes specifiers and self-references in its own order.
        return {
            extra: {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0]
                    for name in expand_extras([extra], extras) for r in extras[name]
                    if not r.startswith("osworld-gym[")}
            for extra in extras
        }  # fmt: skip

    installed = _installed_extras(core_venv)
    declared = extras_from_setup_cfg(REPO / "setup.cfg")
    assert declared is not None and list(installed) == list(declared)
    assert packages(installed) == packages(declared)


def test_doctor_names_every_missing_extra_with_its_fix(core_venv: Path) -> None:
    extras = _installed_extras(core_venv)
    pip = _venv_pip(core_venv)
    done = _in_venv(core_venv, "osworld-gym", "doctor", "--no-launch", "--json", timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr  # eval is missing
    report = json.loads(done.stdout)
    fixes = {c["name"]: c["fix"] for c in report["checks"] if c["provider"] == "extras"}
    aliases = {n for n, parts in extras.items() if all(p.startswith("osworld-gym[") for p in parts)}
    lines = set(extras) - aliases  # all and guest are made of the others
    assert set(fixes) == {f"extra: {name}" for name in lines - {"eval", "ray"}}
    for name in lines - {"eval", "ray"}:
        assert report["extras"][name] is False, name  # a core install has none of them
        expected = f"{pip} install 'osworld-gym[{name}]'"
        if name == "gui":
            expected = f"{expected} && {pip} install --no-deps pyautogui==0.9.54 mouseinfo==0.1.3"
        elif name == "train":  # no torch either: the CPU build first, from the CPU index
            expected = f"{pip} install {CPU_TORCH} && {expected}"
        assert fixes[f"extra: {name}"] == expected
    by_name = {(c["provider"], c["name"]): c for c in report["checks"]}
    assert by_name[("ray", "python: ray")]["fix"] == f"{pip} install 'osworld-gym[ray]'"
    assert by_name[("eval", "python: openpyxl")]["fix"] == f"{pip} install 'osworld-gym[eval]'"

    # The text names them too; missing extras other than eval are information, not failures.
    text = _in_venv(core_venv, "osworld-gym", "doctor", "--no-launch", "--no-eval", timeout=180)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "extras not installed (information; add those you need):" in text.stdout
    for name in lines - {"eval", "ray"}:
        assert f"WARN     extra: {name}" in text.stdout
    assert f"  {pip} install 'osworld-gym[docs]'" in text.stdout
    asked = _in_venv(
        core_venv, "osworld-gym", "doctor", "--no-launch", "--no-eval", "--extra", "docs",
        timeout=180,
    )  # fmt: skip
    assert asked.returncode == 1 and "MISSING  extra: docs" in asked.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ("osworld-arpo", "--help"),
        ("osworld-arpo-cpu", "--help"),
        ("osworld-arpo-select", "--help"),
        ("osworld-arpo",),
    ],
    ids=" ".join,
)
def test_trainer_commands_print_the_install_hint(core_venv: Path, argv: tuple[str, ...]) -> None:
    done = _in_venv(core_venv, *argv, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{argv[0]}{TRAIN_HINT}") and lines[0].endswith(TRAIN_FIX)


def test_the_wheel_ships_the_license_and_the_image_recipes(core_wheel: Path) -> None:
    with zipfile.ZipFile(core_wheel) as wheel:
        names = set(wheel.namelist())
        (license_file,) = [n for n in names if ".dist-info/" in n and n.endswith("/LICENSE")]
        text = wheel.read(license_file).decode()
        assert text == (REPO / "LICENSE").read_text()
        assert "Apache License" in text and "Version 2.0, January 2004" in text
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        assert "License-File: LICENSE" in wheel.read(metadata).decode()
        recipes = REPO / "vm_images"
        for path in recipes.rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            name = f"osworld_gym/vm_images/{path.relative_to(recipes).as_posix()}"
            assert name in names, name
            # The image's session scripts must stay executable.
            mode = wheel.getinfo(name).external_attr >> 16
            assert bool(mode & stat.S_IXUSR) == os.access(path, os.X_OK), name


def test_image_build_finds_the_installed_recipes_outside_a_checkout(
    core_venv: Path, tmp_path: Path
) -> None:
    usage = _in_venv(core_venv, "osworld-gym", "image", "build", "--help", timeout=60)
    assert usage.returncode == 0 and "--dry-run" in usage.stdout and "--recipe-dir" in usage.stdout
    done = _in_venv(core_venv, "osworld-gym", "image", "build", "--dry-run", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    recipe = Path(lines[0].removeprefix("recipe: "))
    assert recipe.parts[-2:] == ("osworld_gym", "vm_images") and recipe.is_relative_to(core_venv)
    checkout_hash = subprocess.run(
        ["bash", str(REPO / "vm_images" / "build_rootfs.sh"), "--print-hash"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert lines[1] == f"base hash: {checkout_hash}"  # the same base as the checkout's
    assert "  rootfs/usr/local/bin/osworld-gym-desktop" in lines
    # The build itself: the docker SDK (an extra) is named, not a traceback.
    build = _in_venv(core_venv, "osworld-gym", "image", "build", timeout=60)
    assert build.returncode == 2 and "-m pip install 'osworld-gym[docker]'" in build.stderr
    assert "Traceback" not in build.stderr


def test_the_installed_recipe_bundles_the_installed_package(
    core_venv: Path, core_wheel: Path, tmp_path: Path
) -> None:
    """Without a source tree, the image's wheel is the installed distribution packed again."""
    recipe = next((core_venv / "lib").glob("python3*/site-packages/osworld_gym/vm_images"))
    bundle = tmp_path / "bundle"
    env = clean_env() | {"PYTHON": str(core_venv / "bin" / "python")}
    done = subprocess.run(
        ["bash", str(recipe / "build_rootfs.sh"), "--bundle", str(bundle)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (bundle / "install_project.sh").is_file()
    assert os.access(bundle / "rootfs" / "usr" / "local" / "bin" / "osworld-gym-desktop", os.X_OK)
    (packed,) = bundle.glob("osworld_gym-*.whl")
    assert packed.name == core_wheel.name
    with zipfile.ZipFile(core_wheel) as original, zipfile.ZipFile(packed) as again:
        for name in original.namelist():
            if name.endswith(".dist-info/RECORD"):
                continue
            assert again.read(name) == original.read(name), name
        assert set(again.namelist()) == set(original.namelist())
