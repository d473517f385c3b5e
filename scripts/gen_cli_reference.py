"""Generate the documentation's CLI reference from the commands' own parsers.

MkDocs runs this file as a hook (``hooks:`` in ``mkdocs.yml``): ``on_files`` adds the page
``reference/cli.md`` to the build, so the reference always matches the installed commands and
is never copied by hand. ``osworld-gym`` is walked through ``osworld_gym.cli.build_parser()``,
subcommand by subcommand (usage, description, one table row per option with its default);
every other console script of the ``osworld-gym`` distribution (the guest server, the trainer
commands) is run with ``--help`` in a child process, because their parsers are built inside
their entry points and may need optional extras (the trainer commands need torch).

Run it alone to print the page: ``python scripts/gen_cli_reference.py``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
from importlib import metadata
from typing import Any

logger = logging.getLogger("mkdocs.hooks.cli_reference")

PAGE = "reference/cli.md"
"""Where the generated page lives in the site (the nav links to it)."""

MAIN_COMMAND = "osworld-gym"
DISTRIBUTION = "osworld-gym"
HELP_TIMEOUT_S = 120.0
"""The trainer's ``--help`` imports torch and transformers: seconds, not minutes."""
HELP_COLUMNS = "100"

_INTRO = """\
# CLI reference

Generated at build time from the commands' own argument parsers: what you read here is what
`--help` prints for the installed version. Exit codes are the same for every command: `0` ok,
`1` the run had errors, `2` a usage error (a bad option or value, a missing extra).
"""


def render_cli_reference() -> str:
    """The Markdown of the CLI reference page.

    Returns:
        The page: ``osworld-gym`` and each of its subcommands, then every other console
        script of the distribution.
    """
    from osworld_gym.cli import build_parser

    parts = [_INTRO, _render_parser(build_parser(), MAIN_COMMAND, level=2)]
    for name, target in sorted(_other_console_scripts().items()):
        parts.append(_render_help_text(name, target))
    return "\n".join(parts)


def subcommand_paths(parser: argparse.ArgumentParser, prefix: str = MAIN_COMMAND) -> list[str]:
    """Every command path under ``parser``, e.g. ``["osworld-gym doctor", "osworld-gym tasks"]``.

    Args:
        parser: A parser, usually ``osworld_gym.cli.build_parser()``.
        prefix: The command path of ``parser`` itself.

    Returns:
        The paths of all subcommands, nested ones included, in parser order.
    """
    paths: list[str] = []
    for name, child in _subparsers(parser):
        path = f"{prefix} {name}"
        paths.append(path)
        paths.extend(subcommand_paths(child, path))
    return paths


def anchor(path: str) -> str:
    """The heading id of a command path (``osworld-gym tasks list``: ``osworld-gym-tasks-list``)."""
    return re.sub(r"[^a-z0-9-]+", "-", path.lower()).strip("-")


# --- argparse walking ---------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """The (name, parser) pairs of ``parser``'s subcommands, aliases left out."""
    out: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:  # argparse exposes no public walk; sphinx-argparse does the same
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) not in seen:
                    seen.add(id(child))
                    out.append((name, child))
    return out


def _subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    """One-line help of each subcommand, as given to ``add_parser(help=...)``."""
    helps: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                helps[choice.dest] = choice.help or ""
    return helps


def _render_parser(parser: argparse.ArgumentParser, path: str, level: int) -> str:
    hashes = "#" * min(level, 6)
    lines = [f"{hashes} `{path}` {{#{anchor(path)}}}", ""]
    if parser.description:
        lines += [_text(parser.description), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    rows = _option_rows(parser)
    if rows:
        lines += ["| Option | Default | Description |", "|---|---|---|", *rows, ""]
    children = _subparsers(parser)
    if children:
        helps = _subcommand_help(parser)
        lines += ["| Subcommand | What it does |", "|---|---|"]
        lines += [
            f"| [`{name}`](#{anchor(f'{path} {name}')}) | {_cell(helps.get(name, ''))} |"
            for name, _ in children
        ]
        lines.append("")
    if parser.epilog and not children:
        lines += [_text(parser.epilog), ""]
    for name, child in children:
        lines.append(_render_parser(child, f"{path} {name}", level + 1))
    return "\n".join(lines)


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        invocation = formatter._format_action_invocation(action)
        help_text = formatter._expand_help(action) if action.help else ""
        if action.choices is not None and "{" not in invocation:
            help_text = f"{help_text} One of: {', '.join(map(str, action.choices))}.".strip()
        rows.append(f"| `{_cell(invocation)}` | {_default(action)} | {_cell(help_text)} |")
    return rows


def _default(action: argparse.Action) -> str:
    default = action.default
    if action.required or default in (None, argparse.SUPPRESS):
        return ""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return ""  # a flag: off unless given, which the invocation already says
    if isinstance(default, (list, tuple)):
        default = " ".join(map(str, default))
    return f"`{_cell(str(default))}`" if str(default) != "" else ""


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _text(text: str) -> str:
    """A parser description or epilog: kept verbatim (it is often aligned by hand)."""
    stripped = text.strip("\n")
    if "\n" in stripped:
        return f"```text\n{stripped}\n```"
    return stripped


# --- the other console scripts ------------------------------------------------------------


def _other_console_scripts() -> dict[str, str]:
    """``{name: "module:attr"}`` of the distribution's console scripts but ``osworld-gym``."""
    entry_points = metadata.distribution(DISTRIBUTION).entry_points
    return {
        ep.name: ep.value
        for ep in entry_points
        if ep.group == "console_scripts" and ep.name != MAIN_COMMAND
    }


def _render_help_text(name: str, target: str) -> str:
    lines = [f"## `{name}` {{#{anchor(name)}}}", ""]
    ok, text = _help_output(name, target)
    if ok:
        lines += ["```text", text.strip("\n"), "```", ""]
    else:
        # A command that cannot show its help here (the train extra is missing on this
        # machine): say so on the page rather than fail the whole site.
        lines += [
            f"`{name} --help` could not run where this site was built; it said:",
            "",
            "```text",
            text.strip() or "(nothing)",
            "```",
            "",
        ]
        logger.info("cli reference: %s --help failed: %s", name, text.strip()[:200])
    return "\n".join(lines)


def _help_output(name: str, target: str) -> tuple[bool, str]:
    """Run ``name --help`` as the console script would, in a child process."""
    module, _, attr = target.partition(":")
    code = (
        "import sys\n"
        f"sys.argv = [{name!r}, '--help']\n"
        f"from {module} import {attr.split('.')[0]} as entry\n"
        "sys.exit(entry())\n"
    )
    env = {**os.environ, "COLUMNS": HELP_COLUMNS, "NO_COLOR": "1", "TERM": "dumb"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            timeout=HELP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"{name} --help did not finish within {HELP_TIMEOUT_S:.0f} s"
    if done.returncode == 0 and done.stdout.strip():
        return True, done.stdout
    said = (done.stderr or done.stdout).strip().splitlines()
    return False, said[-1] if said else f"exit status {done.returncode}"


# --- the MkDocs hook ----------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated CLI reference to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render_cli_reference()))
    return files


if __name__ == "__main__":
    sys.stdout.write(render_cli_reference())
