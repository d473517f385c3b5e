"""Whether the packages the tests import are this checkout's, file for file.

``scripts/run_tests.sh`` runs the installed package (CI installs the checkout first), and a
contributor's ``python -m pytest`` imports ``osworld_gym`` from the checkout but
``osworld_agents`` and the bundled suites from wherever they were installed. Either way an
installed copy older than the checkout would test code that is not the code being changed;
the test session refuses to start then, naming the stale copy and the fix.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Import name -> the checkout's folders of it, by where they sit inside the package
# (setup.py's package_dir: osworld_gym.vm_images is the checkout's vm_images/).
PACKAGES: dict[str, dict[str, str]] = {
    "osworld_gym": {"": "osworld_gym", "vm_images": "vm_images"},
    "osworld_agents": {"": "agents"},
    "osworld_gym_envs": {"": "envs"},
}
FIX = (
    "install the checkout editable (`python -m pip install -e .` or `bash scripts/install.sh "
    "--editable`), reinstall it (`bash scripts/install.sh`), or run with `PYTHONPATH=. python -m "
    "pytest` for osworld_gym alone"
)


def _python_files(folder: Path, inside: str = "") -> dict[str, bytes]:
    return {
        str(Path(inside) / path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def _checkout_files(repo: Path, folders: dict[str, str]) -> dict[str, bytes]:
    """The package's Python files as the checkout lays them out inside the package."""
    files: dict[str, bytes] = {}
    for inside, folder in folders.items():
        if inside:  # a subpackage from another folder: the package's own copy does not count
            files = {k: v for k, v in files.items() if not k.startswith(inside + "/")}
        files.update(_python_files(repo / folder, inside))
    return files


def _with_subpackage(
    name: str, inside: str, ours: dict[str, bytes], theirs: dict[str, bytes]
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """Compare a subpackage that lives in another folder with wherever it is imported from.

    An editable install cannot map a subpackage to another folder (setuptools' finder maps
    top-level names only), so there the subpackage is not importable and is not compared.
    """
    theirs = {k: v for k, v in theirs.items() if not k.startswith(inside + "/")}
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return {k: v for k, v in ours.items() if not k.startswith(inside + "/")}, theirs
    location = Path(next(iter(spec.submodule_search_locations)))
    return ours, {**theirs, **_python_files(location, inside)}


def stale_copies(repo: Path = REPO) -> list[str]:
    """One line per imported package whose Python files differ from the checkout's."""
    problems: list[str] = []
    for name, folders in PACKAGES.items():
        source = repo / folders[""]
        spec = importlib.util.find_spec(name)
        if not source.is_dir() or spec is None or not spec.submodule_search_locations:
            continue
        imported = Path(next(iter(spec.submodule_search_locations))).resolve()
        if imported == source.resolve():
            continue
        ours, theirs = _checkout_files(repo, folders), _python_files(imported)
        for inside in (i for i in folders if i):
            ours, theirs = _with_subpackage(f"{name}.{inside}", inside, ours, theirs)
        differing = sorted(
            path for path in ours.keys() | theirs.keys() if ours.get(path) != theirs.get(path)
        )
        if differing:
            shown = ", ".join(differing[:5]) + (" ..." if len(differing) > 5 else "")
            problems.append(
                f"{name} is imported from {imported}, which is not this checkout's "
                f"{source} ({len(differing)} files differ: {shown})"
            )
    return problems
