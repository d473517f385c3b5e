"""The documentation site builds with ``mkdocs build --strict``, and what is generated is complete.

The CLI reference is generated from the parsers at build time (``scripts/gen_cli_reference.py``),
so these tests check the built page against the parsers themselves: every subcommand and every
option must be there. Design references in the code (``docs/design/<page>.md#<anchor>``) must
resolve to a heading of the built site.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fixture_marks import needs

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (the docs extra): pip install 'osworld-gym[docs]'",
)

# Where the code may point at documentation pages.
_REFERENCE_ROOTS = ("osworld_gym", "agents", "tests", "benchmarks", "scripts")
_DOC_REFERENCE = re.compile(
    r"docs/((?:design|concepts|howto|reference)/[a-z0-9-]+)\.md(?:#([a-z0-9-]+))?"
)


def _load_generator() -> ModuleType:
    path = ROOT / "scripts" / "gen_cli_reference.py"
    spec = importlib.util.spec_from_file_location("gen_cli_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
@needs("heavy")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    return out


@pytest.fixture(scope="module")
def cli_page(site: Path) -> str:
    return html.unescape((site / "reference" / "cli" / "index.html").read_text(encoding="utf-8"))


def test_strict_build_writes_the_main_pages(site: Path) -> None:
    for page in ("index.html", "quickstart/index.html", "reference/api/env/index.html"):
        assert (site / page).is_file(), page
    api = (site / "reference" / "api" / "pool" / "index.html").read_text(encoding="utf-8")
    assert 'id="osworld_gym.pool.EnvPool"' in api  # mkdocstrings rendered the docstrings


def test_cli_reference_has_every_subcommand_and_option(cli_page: str) -> None:
    from osworld_gym.cli import build_parser

    gen = _load_generator()
    parser = build_parser()
    paths = gen.subcommand_paths(parser)
    assert {"osworld-gym run", "osworld-gym tasks", "osworld-gym play"} <= set(paths)
    missing = [path for path in paths if f'id="{gen.anchor(path)}"' not in cli_page]
    assert not missing, f"subcommands missing from the CLI reference: {missing}"

    def options(p: argparse.ArgumentParser) -> set[str]:
        # Hidden options (deprecated spellings, help=SUPPRESS) are left out of the page too.
        shown = [a for a in p._actions if a.help != argparse.SUPPRESS]
        found = {s for a in shown for s in a.option_strings if s.startswith("--")}
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    found |= options(child)
        return found

    absent = sorted(o for o in options(parser) if o not in cli_page)
    assert not absent, f"options missing from the CLI reference: {absent}"


def test_cli_reference_has_every_other_console_script(cli_page: str) -> None:
    gen = _load_generator()
    scripts = gen._other_console_scripts()
    assert {"osworld-arpo", "osworld-arpo-cpu", "osworld-arpo-select"} <= set(scripts)
    for name in scripts:
        assert f'id="{gen.anchor(name)}"' in cli_page, name
        assert f"usage: {name}" in cli_page or "needs the train extra" in cli_page, name


def test_design_references_in_the_code_resolve(site: Path) -> None:
    references: set[tuple[str, str | None]] = set()
    for root in _REFERENCE_ROOTS:
        for path in (ROOT / root).rglob("*.py"):
            for match in _DOC_REFERENCE.finditer(path.read_text(encoding="utf-8")):
                references.add((match.group(1), match.group(2)))
    assert references, "no docs/ references found in the code"
    broken = []
    for page, anchor in sorted(references, key=str):
        folder = page.removesuffix("/index")  # design/index.md is built as design/index.html
        built = site / folder / "index.html"
        if not built.is_file():
            broken.append(f"{page}.md")
        elif anchor and f'id="{anchor}"' not in built.read_text(encoding="utf-8"):
            broken.append(f"{page}.md#{anchor}")
    assert not broken, f"references to missing pages or headings: {broken}"


def test_no_reference_points_outside_the_repository() -> None:
    """Design notes live in docs/: the team's ``specs/`` and ``DESIGN.md`` are not shipped."""
    stale = re.compile(r"\bspecs/(?:osworld|arpo|trainers|rollout_engines)\.md|\bDESIGN\.md\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for root in _REFERENCE_ROOTS
        for path in (ROOT / root).rglob("*.py")
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if stale.search(line)
    ]
    found += [
        f"{name}:{number}"
        for name in ("setup.cfg", "setup.py", "pyproject.toml")
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1)
        if stale.search(line)
    ]
    assert not found, f"references to documents outside the repository: {found}"


# A Sphinx role (":class:`X`"): MkDocs shows it as typed, and so does --help.
_SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|mod|data|exc|obj|const|ref|doc):`")


def test_the_built_site_shows_no_sphinx_role(site: Path) -> None:
    found = [
        str(page.relative_to(site))
        for page in site.rglob("*.html")
        if _SPHINX_ROLE.search(html.unescape(page.read_text(encoding="utf-8")))
    ]
    assert not found, f"Sphinx roles shown as text in: {found}"


def test_docstrings_use_markdown_not_sphinx_roles() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for root in ("osworld_gym", "agents", "envs", "scripts", "benchmarks", "examples")
        for path in (ROOT / root).rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _SPHINX_ROLE.search(line)
    ]
    assert not found, f"Sphinx roles (write ``name`` or a Markdown link instead): {found}"
