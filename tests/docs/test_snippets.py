"""Every code example of the documentation and every example script runs, as written.

Each Python or shell block of README.md, CONTRIBUTING.md, docs/**/*.md and examples/*/README.md
is a case named ``page:line`` (``doc_snippets`` reads them): it runs for real in a subprocess
with this interpreter, on real ``local`` desktops where it starts them, and must exit 0 within
its deadline and print what its ``expect`` directives name. A block that cannot run here says
so in the page, next to the block (``<!-- snippet: skip — REASON -->``), and is reported skipped
with that reason; a block the test cannot classify (no language, an unknown directive) fails.
CONTRIBUTING.md lists the directives.

A block whose code repeats an earlier one's (the same Python syntax tree, comments aside, or
the same shell text) and expects the same output runs once; the later one reports which ran.

Blocks that name ``evaluation_examples`` run with OSWorld's task folder linked under that name
(``tests/osworld_data.py`` finds it) and skip where it is absent.

Every script under ``examples/`` has a row in ``EXAMPLES``: run here with its arguments, run by
a block of a page (checked: a block that runs names it), or skipped with the reason.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_snippets import REPO, Snippet, SnippetError, page_snippets, pages
from osworld_data import MISSING, OSWORLD_TASKS, have_osworld_tasks
from scripted_endpoint import scripted_endpoint
from snippet_runner import Outcome, Servers, block_env, command_for, make_workdir, run, servers

# Code that starts a desktop (the `desktop` mark): the env, the pool, the provider, the
# adapters, the CLI commands that launch one, and the example scripts.
_DESKTOP = re.compile(
    r"gym\.make\(|EnvPool\(|make_provider\(|DesktopLeases|OSWorldEnvClient|"
    r"osworld-gym (?:play|run|desktop|doctor|serve-env)|examples/"
)
_OSWORLD_FOLDER = "evaluation_examples"
# A block whose code and expectations repeat an earlier block's runs once: name -> the first.
_SAME_AS: dict[str, str] = {}


def _code_key(snippet: Snippet) -> str:
    """What makes two blocks the same: Python's syntax tree (not comments), a shell's text."""
    program = snippet.program()
    if snippet.kind == "python":
        try:
            return ast.dump(ast.parse(program))
        except SyntaxError:
            return program  # the run reports it
    return program


def _page_cases() -> Iterator[object]:
    first: dict[tuple[str, str, str, tuple[str, ...]], str] = {}
    for path in pages():
        try:
            blocks = page_snippets(path)
        except SnippetError as error:
            page = path.relative_to(REPO).as_posix()
            yield pytest.param(error, id=f"{page}:unreadable")
            continue
        # Blocks of a page with a server run against it: the same code elsewhere is not the same.
        context = "" if not any(s.serves for s in blocks) else blocks[0].page
        for snippet in blocks:
            if snippet.kind == "output":
                continue
            if snippet.skip_reason() is None and not snippet.serves:
                key = (context, snippet.kind, _code_key(snippet), snippet.expect)
                _SAME_AS[snippet.name] = first.setdefault(key, snippet.name)
            marks = [pytest.mark.timeout(snippet.timeout + 120)]
            if snippet.slow:
                marks.append(pytest.mark.slow)
            if _DESKTOP.search("".join(block.code for block in snippet.chain())):
                marks.append(pytest.mark.desktop)
            yield pytest.param(snippet, id=snippet.name, marks=marks)


@pytest.fixture(scope="module")
def osworld_tasks() -> Path | None:
    return OSWORLD_TASKS if have_osworld_tasks() else None


@pytest.fixture(scope="module")
def page_servers(
    tmp_path_factory: pytest.TempPathFactory, osworld_tasks: Path | None
) -> Iterator[Servers]:
    with servers(tmp_path_factory.mktemp("servers"), osworld_tasks) as registry:
        yield registry


def _check(outcome: Outcome, name: str, timeout: float, expect: tuple[str, ...]) -> None:
    if outcome.returncode is None:
        pytest.fail(f"{name} still ran after {timeout:.0f} s:\n{outcome.tail()}")
    assert outcome.returncode == 0, f"{name} exited {outcome.returncode}:\n{outcome.tail()}"
    missing = [text for text in expect if text not in outcome.output]
    assert not missing, f"{name} did not print {missing}:\n{outcome.tail()}"


@pytest.mark.battery
@pytest.mark.parametrize("snippet", list(_page_cases()))
def test_snippet(
    snippet: Snippet | SnippetError,
    page_servers: Servers,
    osworld_tasks: Path | None,
    tmp_path: Path,
) -> None:
    if isinstance(snippet, SnippetError):
        pytest.fail(str(snippet))
    reason = snippet.skip_reason()
    if reason is not None:
        pytest.skip(f"{snippet.name}: {reason}")
    if _SAME_AS.get(snippet.name, snippet.name) != snippet.name:
        pytest.skip(f"{snippet.name}: the same block as {_SAME_AS[snippet.name]}, which runs")
    if _OSWORLD_FOLDER in snippet.program() and osworld_tasks is None:
        pytest.skip(MISSING)
    serving = [s for s in page_snippets(REPO / snippet.page) if s.serves and not s.skip]
    state = page_servers.for_page(snippet.page, serving)
    if state.skip:
        pytest.skip(state.skip)
    assert state.error is None, f"the page's server did not come up: {state.error}"
    if snippet.serves:
        (server,) = [s for s in state.servers if s.snippet.name == snippet.name]
        assert server.process.poll() is None, f"{snippet.name} stopped:\n{server.output()}"
        return
    folder = make_workdir(tmp_path / "work", osworld_tasks)
    outcome = run(command_for(snippet, folder), folder, snippet.timeout, prefix=state.prefix)
    _check(outcome, snippet.name, snippet.timeout, snippet.expect)


# --- the example scripts ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Example:
    """How the test covers one script of ``examples/``: exactly one of the three.

    ``args`` run it here (``{tmp}``: a fresh folder; ``{endpoint}``: the scripted UI-TARS
    endpoint's URL); ``run_by`` names the page one of whose blocks runs it; ``skip`` says why
    nothing here runs it.
    """

    args: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    expect: tuple[str, ...] = ()
    run_by: str | None = None
    skip: str | None = None
    desktop: bool = True
    timeout: float = 120.0


EXAMPLES: dict[str, Example] = {
    # One episode: ui-basics' first task. The scripted endpoint knows a task by its instruction,
    # and the second task (click-colour-02) asks for the same button in another layout.
    "examples/openai_endpoint/run_episodes.py": Example(
        args=tuple(
            "--base-url {endpoint} --model oracle --tasks ui-basics --screen-size 336x224 "
            "--desktops 1 --episodes 1".split()
        ),
        expect=("click-colour-01", "reward=1.0", "success rate 1.000 over 1 scored"),
    ),
    "examples/openenv/client.py": Example(run_by="examples/openenv/README.md"),
    "examples/openenv/trl_remote.py": Example(run_by="examples/openenv/README.md"),
    "examples/skyrl/scripted_episodes.py": Example(run_by="examples/skyrl/README.md"),
    "examples/skyrl/make_dataset.py": Example(
        args=("--out", "{tmp}/data", "--desk-size", "2"),
        expect=("train.parquet", "validation.parquet", '"desk_size": 2'),
        desktop=False,
    ),
    "examples/skyrl/run_ui_basics_gpu.sh": Example(
        args=(),
        env=(("DRY_RUN", "1"), ("DATA", "{tmp}/data")),
        expect=("examples/skyrl/train_osworld.py", "environment.env_class=osworld"),
        desktop=False,
    ),
    "examples/skyrl/generator_smoke.py": Example(
        skip="needs SkyRL's trainer package (skyrl==0.4.0, Python 3.12, torch): the GPU install"
    ),
    "examples/skyrl/train_osworld.py": Example(
        skip="trains: needs a GPU and SkyRL's trainer (skyrl[fsdp]==0.4.0, Python 3.12)"
    ),
    "examples/trl/train_grpo.py": Example(run_by="examples/trl/README.md"),
    "examples/verl/make_dataset.py": Example(
        skip="needs verl, installed in a venv of its own (the trainers stage builds one)"
    ),
    "examples/verl/train_ui_basics_grpo.sh": Example(
        skip="DRY_RUN=1 is run by tests/integrations/test_verl_on_cpu.py (-m trainers) in "
        "verl's venv; training needs a GPU"
    ),
}


def _example_scripts() -> list[str]:
    found = [*REPO.glob("examples/**/*.py"), *REPO.glob("examples/**/*.sh")]
    return sorted(path.relative_to(REPO).as_posix() for path in found)


def test_every_example_script_has_a_row() -> None:
    scripts = _example_scripts()
    assert [s for s in scripts if s not in EXAMPLES] == [], "add them to EXAMPLES"
    assert [s for s in EXAMPLES if s not in scripts] == [], "stale rows in EXAMPLES"
    for script, example in EXAMPLES.items():
        ways = [example.args is not None, example.run_by is not None, example.skip is not None]
        assert sum(ways) == 1, f"{script}: one of args, run_by, skip"


def _example_cases() -> Iterator[object]:
    for script, example in EXAMPLES.items():
        marks = [pytest.mark.timeout(example.timeout + 120)]
        if example.desktop and example.args is not None:
            marks.append(pytest.mark.desktop)
        yield pytest.param(script, example, id=script, marks=marks)


@pytest.mark.parametrize(("script", "example"), list(_example_cases()))
def test_example_script(script: str, example: Example, tmp_path: Path) -> None:
    if example.skip is not None:
        pytest.skip(f"{script}: {example.skip}")
    if example.run_by is not None:
        runners = [
            s.name + (" (-m slow)" if s.slow else "")
            for s in page_snippets(REPO / example.run_by)
            if s.kind != "output" and not s.skip_reason() and script in s.program()
        ]
        assert runners, f"no block of {example.run_by} that runs {script}"
        pytest.skip(f"{script}: run by {', '.join(runners)}")
    assert example.args is not None
    folder = make_workdir(tmp_path / "work", None)
    with scripted_endpoint() as endpoint:
        fill = {"tmp": str(tmp_path), "endpoint": endpoint}
        args = [arg.format(**fill) for arg in example.args]
        env = block_env({key: value.format(**fill) for key, value in example.env})
        runner = ["bash"] if script.endswith(".sh") else [sys.executable]
        outcome = run([*runner, script, *args], folder, example.timeout, env=env)
    _check(outcome, script, example.timeout, example.expect)
