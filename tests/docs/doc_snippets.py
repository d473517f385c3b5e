"""The code examples of the documentation: fenced blocks of its Markdown pages, with directives.

A page's fenced blocks are code when their language is one of ``CODE_LANGUAGES`` (Python or
shell) and output or data when it is one of ``OUTPUT_LANGUAGES`` (never run). A block without a
language, or with another one, is a finding: the test cannot tell whether it should run.

HTML comments on the lines just above a block's opening fence (blank lines may separate them)
steer how ``tests/docs/test_snippets.py`` runs it, one directive a comment; CONTRIBUTING.md lists
them for writers:

* ``<!-- snippet: skip — REASON -->``: not run; the test reports it skipped with REASON;
* ``<!-- snippet: continues -->``: a Python block that uses names an earlier block of the page
  defined; it runs after the page's previous Python block (and what that one continues);
* ``<!-- snippet: serves HOST:PORT -->``: a shell block that starts a server and keeps it up;
  it runs in the background while the page's later blocks run, up once HOST:PORT answers;
* ``<!-- snippet: expect TEXT -->``: TEXT must appear in what the block prints (repeatable);
* ``<!-- snippet: timeout SECONDS -->``: how long the block may take (default 120 s);
* ``<!-- snippet: slow -->``: the block runs only with the ``slow`` mark (it takes minutes).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The Markdown pages whose blocks are examples, as globs under the repository root.
PAGES = ("README.md", "CONTRIBUTING.md", "docs/**/*.md", "examples/*/README.md")

CODE_LANGUAGES = {"python": "python", "py": "python", "bash": "shell", "sh": "shell"}
CODE_LANGUAGES |= {"shell": "shell", "console": "shell"}
OUTPUT_LANGUAGES = frozenset({"text", "json", "yaml", "toml", "ini", "output"})
DEFAULT_TIMEOUT_S = 120.0

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)[ \t]*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*snippet:\s*(?P<body>.*?)\s*-->\s*$")
_SKIP = re.compile(r"^skip\s*(?:—|–|-|:)\s*(?P<reason>\S.*)$")
_SERVES = re.compile(r"^serves\s+(?P<host>[\w.-]+):(?P<port>\d+)$")
_TIMEOUT = re.compile(r"^timeout\s+(?P<seconds>\d+(?:\.\d+)?)$")
_EXPECT = re.compile(r"^expect\s+(?P<text>\S.*)$")


class SnippetError(ValueError):
    """A block or a directive the test cannot run as written (a finding, not a skip)."""


@dataclasses.dataclass(frozen=True)
class Snippet:
    """One fenced block of a page: where it is, what it is, and how to run it."""

    page: str  # the page, relative to the repository root
    line: int  # the opening fence's line, from 1
    language: str  # as written after the fence
    code: str  # the block's text, dedented to its fence
    skip: str | None = None  # the reason the page gives for not running it
    continues: bool = False
    serves: tuple[str, int] | None = None
    expect: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT_S
    slow: bool = False
    previous: Snippet | None = None  # the block a `continues` block runs after

    @property
    def name(self) -> str:
        """``page:line``, the test case's id."""
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """``python``, ``shell`` or ``output``."""
        return CODE_LANGUAGES.get(self.language.lower(), "output")

    def chain(self) -> list[Snippet]:
        """The blocks that run, in order: those this one continues, then itself."""
        blocks: list[Snippet] = []
        block: Snippet | None = self
        while block is not None:
            blocks.insert(0, block)
            block = block.previous if block.continues else None
        return blocks

    def program(self) -> str:
        """What runs: the chain's code, each block after a comment naming it."""
        if self.kind == "shell":
            return shell_commands(self.code, self.language)
        return "".join(f"# {block.name}\n{block.code}\n" for block in self.chain())

    def skip_reason(self) -> str | None:
        """Why the block is not run: its own directive, or that of a block it continues."""
        for block in reversed(self.chain()):
            if block.skip is not None:
                return block.skip if block is self else f"continues {block.name}: {block.skip}"
        return None


def shell_commands(code: str, language: str) -> str:
    """A shell block's commands: a ``console`` block's ``$ `` lines; the whole of any other."""
    if language.lower() != "console":
        return code
    return "".join(line[2:] + "\n" for line in code.splitlines() if line.startswith("$ "))


def _directives(lines: list[str], fence: int) -> list[str]:
    """The directive comments above the line ``fence`` (0-based), top to bottom."""
    found: list[str] = []
    for line in reversed(lines[:fence]):
        match = _DIRECTIVE.match(line)
        if match:
            found.insert(0, match.group("body"))
        elif line.strip():
            break
    return found


def _apply(snippet: Snippet, directives: list[str]) -> Snippet:
    fields: dict[str, object] = {}
    expect: list[str] = []
    for body in directives:
        where = f"{snippet.name}: <!-- snippet: {body} -->"
        if match := _SKIP.match(body):
            fields["skip"] = match.group("reason")
        elif body == "continues":
            if snippet.kind != "python":
                raise SnippetError(f"{where}: only Python blocks continue earlier ones")
            fields["continues"] = True
        elif match := _SERVES.match(body):
            if snippet.kind != "shell":
                raise SnippetError(f"{where}: only shell blocks serve")
            fields["serves"] = (match.group("host"), int(match.group("port")))
        elif match := _EXPECT.match(body):
            expect.append(match.group("text"))
        elif match := _TIMEOUT.match(body):
            fields["timeout"] = float(match.group("seconds"))
        elif body == "slow":
            fields["slow"] = True
        else:
            raise SnippetError(
                f"{where}: unknown directive (skip — REASON, continues, serves HOST:PORT, "
                "expect TEXT, timeout SECONDS, slow)"
            )
    if snippet.kind == "output" and directives:
        raise SnippetError(f"{snippet.name}: a {snippet.language} block is output; it takes none")
    return dataclasses.replace(snippet, expect=tuple(expect), **fields)


def page_snippets(path: Path) -> list[Snippet]:
    """Every fenced block of one page, in order, with its directives applied.

    Raises:
        SnippetError: a block without a language or with one the test does not know, a fence
            left open, a malformed directive, or a ``continues`` block with nothing before it.
    """
    page = (path.relative_to(REPO) if path.is_relative_to(REPO) else path).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    snippets: list[Snippet] = []
    last_python: Snippet | None = None
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening.group("indent"), opening.group("fence")
        language = opening.group("info").split()[0] if opening.group("info") else ""
        start = index
        body: list[str] = []
        index += 1
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if closing and closing.group("fence").startswith(fence) and not closing.group("info"):
                break
            body.append(lines[index][len(indent) :] if lines[index].startswith(indent) else "")
            index += 1
        else:
            raise SnippetError(f"{page}:{start + 1}: the fence is never closed")
        index += 1
        name = f"{page}:{start + 1}"
        if not language:
            raise SnippetError(f"{name}: a block without a language (python, bash, text, ...)")
        known = language.lower() in CODE_LANGUAGES or language.lower() in OUTPUT_LANGUAGES
        if not known:
            raise SnippetError(f"{name}: unknown block language {language!r}")
        snippet = Snippet(page, start + 1, language, "\n".join(body) + "\n")
        snippet = _apply(snippet, _directives(lines, start))
        if snippet.continues:
            if last_python is None:
                raise SnippetError(f"{name}: continues, but no Python block comes before it")
            snippet = dataclasses.replace(snippet, previous=last_python)
        if snippet.kind == "python":
            last_python = snippet
        snippets.append(snippet)
    return snippets


def pages() -> list[Path]:
    """The documentation pages, sorted."""
    found = {path for pattern in PAGES for path in REPO.glob(pattern)}
    return sorted(found)


def all_snippets() -> Iterator[Snippet]:
    """Every block of every page."""
    for path in pages():
        yield from page_snippets(path)
