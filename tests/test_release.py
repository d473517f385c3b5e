"""The release artefacts, as a user of each supported Python gets them (issue 38).

``python -m build`` makes the sdist and the wheel from a copy of this checkout, ``twine check``
passes on both, and the wheel installs core-only (no extras) into a fresh venv of every Python
the package declares (3.10 to 3.13), where the README's first code block runs: a local
desktop, a reset, a UI-TARS click, close. An editable install of a checkout under ``/tmp`` and
under HOME (folders the desktops' sandbox hides) runs ``osworld-gym play --episodes 2``.

Marked ``release`` (its own stage of the README's test command): four venvs and four desktops
take a few minutes. The interpreters come from PATH or pyenv; a missing one skips its case with
the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from fixture_marks import needs
from wheel_helpers import REPO, clean_env, copy_checkout, find_python

pytestmark = [pytest.mark.release, pytest.mark.desktop]

PYTHONS = ("3.10", "3.11", "3.12", "3.13")
_BUILD_TIMEOUT_S = 900  # an isolated build installs setuptools from the index first
_INSTALL_TIMEOUT_S = 900


@pytest.fixture(scope="module")
@needs("heavy")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build``'s sdist and wheel of a copy of this checkout."""
    pytest.importorskip("build", reason="build is not installed (pip install 'osworld-gym[test]')")
    root = tmp_path_factory.mktemp("release")
    source = copy_checkout(root / "source")
    out = root / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, env=clean_env(),
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def _readme_first_code_block() -> str:
    match = re.search(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    assert match, "the README has no python code block"
    return match.group(1)


def test_twine_check_passes(dist: Path) -> None:
    pytest.importorskip("twine", reason="twine is not installed (pip install 'osworld-gym[test]')")
    artefacts = sorted(dist.iterdir())
    assert sorted(p.name.rsplit(".", 1)[-1] for p in artefacts) == ["gz", "whl"], artefacts
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, artefacts)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_declares_what_it_supports(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    assert "Requires-Python: >=3.10" in text
    for version in PYTHONS:
        assert f"Classifier: Programming Language :: Python :: {version}" in text
    assert "Project-URL: Documentation" in text and "Project-URL: Source" in text


@pytest.mark.parametrize("version", PYTHONS)
def test_the_wheel_runs_the_readme_on_each_python(dist: Path, version: str, tmp_path: Path) -> None:
    python = find_python(version)
    if python is None:
        pytest.skip(f"no Python {version} on PATH or in pyenv")
    venv = tmp_path / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, timeout=120)
    (wheel,) = dist.glob("*.whl")
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, env=clean_env(),
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    probe = "import importlib.util as u; print(u.find_spec('openpyxl') is None)"
    script = _readme_first_code_block() + (
        "assert obs['screenshot'].shape == (720, 1280, 3), obs['screenshot'].shape\n"
        "assert info['parse_error'] is None and info['step'] == 1, info\n"
        "import sys; print('ran on', '%d.%d' % sys.version_info[:2])\n"
    )
    for code, expected in ((probe, "True"), (script, f"ran on {version}")):
        # Run outside the checkout: `python -c` there would import the checkout's package.
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", code],
            capture_output=True, text=True, timeout=600, env=clean_env(), cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert done.stdout.strip().splitlines()[-1] == expected, done.stdout


@pytest.mark.parametrize("parent", ["/tmp", "~"], ids=["under-tmp", "under-home"])
def test_an_editable_install_runs_play_from_a_hidden_folder(parent: str) -> None:
    """``pip install -e .`` of a checkout in a folder the desktop's sandbox hides.

    The editable finder keeps the checkout off ``sys.path``; the desktop's Python (its guest
    server) must still import the package from there.
    """
    folder = Path(tempfile.mkdtemp(prefix="osworld-gym-editable-", dir=os.path.expanduser(parent)))
    try:
        source = copy_checkout(folder / "checkout")
        venv = folder / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        pip = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e", str(source)],
            capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, env=clean_env(),
        )  # fmt: skip
        assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
        play = subprocess.run(
            [str(venv / "bin" / "osworld-gym"), "play", "--episodes", "2"],
            capture_output=True, text=True, timeout=600, env=clean_env(), cwd=folder,
        )  # fmt: skip
        output = play.stdout + play.stderr
        assert play.returncode == 0, output[-4000:]
        assert re.findall(r"^episode (\d): task ", play.stdout, re.MULTILINE) == ["0", "1"], output
    finally:
        shutil.rmtree(folder, ignore_errors=True)
