"""The command-line vocabulary every ``osworld-gym`` command and trainer command shares.

One parser class (``Parser``): help that shows every default and keeps descriptions as
written, ``--version``, and usage errors as one line, ``PROG: error: ...``, with exit status 2.
One name per thing: ``--output-dir`` for a folder written, ``--output`` for a single file,
``--screen-size WxH``, ``--tasks``, ``--provider``, ``--num-envs``, ``--seed``. Names used before
(``--result-dir``, ``-o``, ``--width``/``--height``, ``--screen-size W H``) keep working for one
release through ``DeprecatedAlias`` and friends, each with a one-line warning on stderr.

Exit statuses: 0 success, 1 an error while running, 2 a usage error (bad arguments) or a
missing extra (``report_missing_part()``: refused before anything starts, with the exact
command that installs it).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from osworld_gym.version import __version__

__all__ = [
    "EXIT_CODES",
    "EXIT_USAGE",
    "LOG_LEVELS",
    "DeprecatedAlias",
    "HelpFormatter",
    "Parser",
    "ScreenSideAlias",
    "add_log_level",
    "add_output_dir",
    "format_screen",
    "log_level",
    "positive_int",
    "report_missing_part",
    "report_run_error",
    "rewrite_legacy_screen_size",
    "screen_size",
    "version_text",
    "warn_deprecated",
]

EXIT_CODES = (
    "exit status: 0 success, 1 an error while running, 2 a usage error (bad arguments) or a "
    "missing extra"
)
EXIT_USAGE = 2
"""A usage error or a missing extra: the command cannot run here as asked."""
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def version_text() -> str:
    """What ``--version`` prints: ``osworld-gym X.Y.Z``."""
    return f"osworld-gym {__version__}"


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Descriptions as written; each option's default after its help, when it has one.

    A default of None or False (an unset option, a flag) says nothing and is left out, as is a
    default the help text already states.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            default is None
            or default is False
            or default is argparse.SUPPRESS
            or not action.option_strings
            or "%(default)" in text
            or "default:" in text
            or isinstance(action, argparse._VersionAction | argparse._HelpAction)
        ):
            return action.help
        if isinstance(default, tuple) and len(default) == 2 and action.dest == "screen_size":
            shown = format_screen(default)
        elif isinstance(default, list | tuple) and not default:
            return action.help
        else:
            shown = "%(default)s"
        return f"{text} (default: {shown})" if text else f"(default: {shown})"


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with the shared help format, ``--version`` and one-line errors.

    Subcommand parsers made with ``add_subparsers().add_parser`` are of this class too.

    Args:
        *args: As for ``argparse.ArgumentParser``.
        version: Add ``--version``.
        **kwargs: As for ``argparse.ArgumentParser``; ``formatter_class`` defaults to
            ``HelpFormatter``.
    """

    def __init__(self, *args: Any, version: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.required_options: list[tuple[str, str]] = []
        """(dest, option) pairs checked after parsing: required, but with deprecated aliases
        (argparse's own ``required`` would refuse an alias alone)."""
        if version:
            self.add_argument(
                "--version",
                action="version",
                version=version_text(),
                help="print the version and exit",
            )

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As ``argparse``, then the check of ``required_options``."""
        parsed, extras = super().parse_known_args(args, namespace)
        missing = [
            option for dest, option in self.required_options if getattr(parsed, dest, None) is None
        ]
        if missing:
            self.error(f"the following arguments are required: {', '.join(missing)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE`` on one line and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def one_line(text: object) -> str:
    """``text`` with its whitespace runs (newlines included) collapsed to single spaces."""
    return " ".join(str(text).split())


def report_run_error(prog: str, error: BaseException, log_level: str, log: logging.Logger) -> int:
    """Report an error a run let out as one line on stderr; return the exit status (1).

    Args:
        prog: The program (and subcommand) named in the message.
        error: The error.
        log_level: The run's ``--log-level``: at ``DEBUG`` the traceback is logged as well.
        log: The logger of the command that ran.
    """
    if log_level == "DEBUG":
        log.error("%s failed", prog, exc_info=error)
    hint = "" if log_level == "DEBUG" else " (--log-level DEBUG shows the traceback)"
    sys.stderr.write(f"{prog}: error: {type(error).__name__}: {one_line(error)}{hint}\n")
    return 1


def report_missing_part(
    prog: str, error: BaseException, log_level: str, log: logging.Logger
) -> int:
    """Report a missing optional part as one line on stderr; return the exit status (2).

    The one way every command refuses what it cannot run without an extra: the error's message
    says what is missing, for what, and the exact command that installs it
    (``MissingExtraError``, built by ``osworld_gym.extras``).

    Args:
        prog: The program (and subcommand) named in the message.
        error: The error (a ``DependencyNotInstalled``).
        log_level: The run's ``--log-level``: at ``DEBUG`` the traceback is logged as well.
        log: The logger of the command that ran.
    """
    if log_level == "DEBUG":
        log.error("%s cannot run", prog, exc_info=error)
    sys.stderr.write(f"{prog}: error: {one_line(error)}\n")
    return EXIT_USAGE


def warn_deprecated(prog: str, old: str, new: str) -> None:
    """The one-line warning a deprecated option gives on stderr, naming its replacement."""
    sys.stderr.write(
        f"{prog}: warning: {old} is deprecated and will be removed in the next release; use {new}\n"
    )


class DeprecatedAlias(argparse.Action):
    """An old option name: stores into the new option's ``dest`` and warns once per use.

    Registered with ``help=argparse.SUPPRESS`` so that help lists only the new name::

        parser.add_argument("--result-dir", dest="output_dir", action=DeprecatedAlias,
                            new="--output-dir", help=argparse.SUPPRESS)

    Args:
        new: The option to use instead (named in the warning).
        **kwargs: As for ``argparse.Action``.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, new: str, **kwargs: Any) -> None:
        kwargs.setdefault("default", argparse.SUPPRESS)  # never overwrite the new option's default
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Store ``values`` as the new option would, after the warning."""
        warn_deprecated(parser.prog, option_string or self.option_strings[0], self.new)
        setattr(namespace, self.dest, values)


class ScreenSideAlias(argparse.Action):
    """``--width N`` / ``--height N`` (deprecated): one side of ``namespace.screen_size``.

    Args:
        side: 0 for the width, 1 for the height.
        **kwargs: As for ``argparse.Action`` (``dest`` is ``screen_size``).
    """

    def __init__(self, option_strings: Sequence[str], dest: str, side: int, **kwargs: Any) -> None:
        kwargs.setdefault("default", argparse.SUPPRESS)
        kwargs.setdefault("type", _positive_side)
        super().__init__(option_strings, dest, **kwargs)
        self.side = side

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Replace one side of the screen size, after the warning."""
        warn_deprecated(parser.prog, option_string or self.option_strings[0], "--screen-size WxH")
        size = list(getattr(namespace, self.dest))
        size[self.side] = values
        setattr(namespace, self.dest, (size[0], size[1]))


def _positive_side(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of pixels, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 pixel, got {value}")
    return value


def screen_size(text: str) -> tuple[int, int]:
    """An argparse type: ``"1280x720"`` as ``(1280, 720)``.

    Raises:
        argparse.ArgumentTypeError: Anything but two positive integers joined by ``x``.
    """
    parts = text.lower().split("x")
    try:
        width, height = (int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must look like WIDTHxHEIGHT in pixels, e.g. 1280x720, got {text!r}"
        ) from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"both sides must be at least 1 pixel, got {text!r}")
    return width, height


def format_screen(size: Sequence[int]) -> str:
    """``(1280, 720)`` as ``"1280x720"``."""
    return f"{size[0]}x{size[1]}"


def rewrite_legacy_screen_size(argv: Sequence[str], prog: str) -> list[str]:
    """``--screen-size W H`` (the old form) as ``--screen-size WxH``, with the warning.

    Args:
        argv: Command-line arguments.
        prog: The program named in the warning.

    Returns:
        The arguments with every old-form ``--screen-size`` rewritten.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        following = argv[i + 1 : i + 3]
        if arg == "--screen-size" and len(following) == 2 and all(_is_int(a) for a in following):
            warn_deprecated(prog, "--screen-size W H", "--screen-size WxH")
            out += [arg, f"{following[0]}x{following[1]}"]
            i += 3
        else:
            out.append(arg)
            i += 1
    return out


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1 (``--num-envs``, ``--max-steps``...).

    Raises:
        argparse.ArgumentTypeError: Not an integer, or below 1.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def log_level(text: str) -> str:
    """An argparse type: a logging level name in any case, as upper case."""
    return text.upper()


def add_log_level(parser: argparse.ArgumentParser, default: str | None = "WARNING") -> None:
    """``--log-level`` with the logging levels as choices (any case).

    Args:
        parser: The parser to add it to.
        default: The level when not given; None leaves the attribute unset, so a subcommand's
            ``--log-level`` does not overwrite the main parser's.
    """
    parser.add_argument(
        "--log-level",
        type=log_level,
        choices=LOG_LEVELS,
        default=argparse.SUPPRESS if default is None else default,
        metavar="LEVEL",
        help=f"logging level: {', '.join(LOG_LEVELS)}; DEBUG also shows tracebacks",
    )


def add_output_dir(
    parser: argparse.ArgumentParser,
    default: str | None,
    help: str,
    old: Sequence[str] = (),
    required: bool = False,
) -> None:
    """``--output-dir`` (a folder the command writes), with old names kept as deprecated aliases.

    Args:
        parser: The parser to add it to.
        default: The folder when not given (None: required or decided by the command).
        help: What goes into the folder.
        old: Option names used before (``--result-dir``, ``-o``...), hidden from help.
        required: The option must be given (checked after parsing by a ``Parser``, so
            that an old name alone counts).
    """
    parser.add_argument("--output-dir", default=default, metavar="DIR", help=help)
    if required:
        if not isinstance(parser, Parser):
            raise TypeError("a required --output-dir needs an osworld_gym.cli_options.Parser")
        parser.required_options.append(("output_dir", "--output-dir"))
    if old:
        parser.add_argument(
            *old,
            dest="output_dir",
            action=DeprecatedAlias,
            new="--output-dir",
            help=argparse.SUPPRESS,
        )
