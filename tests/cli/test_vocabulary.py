"""One command-line vocabulary: the same option names, help with defaults, ``--version``, one-line
usage errors (status 2) and run errors (status 1), old names that still work with a warning, the
trainer commands' install hint, and ``run --agent openai``'s check of its server."""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_helpers import loopback_server

import osworld_gym.pool
from osworld_gym import __version__
from osworld_gym.cli import build_parser, main
from osworld_gym.cli_options import HelpFormatter
from osworld_gym.commands.agents import EndpointError, check_openai_endpoint

VERSION = f"osworld-gym {__version__}"


def all_parsers(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, Any]]:
    """Every parser under ``parser`` (subcommands and their subcommands), with its command."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from all_parsers(sub, f"{path} {name}")


def shown_defaults_missing(parser: argparse.ArgumentParser) -> list[str]:
    """Options with a default whose help does not show it (formatted as ``--help`` prints)."""
    missing = []
    formatter = parser._get_formatter()
    for action in parser._actions:
        default = action.default
        if (
            not action.option_strings
            or action.help == argparse.SUPPRESS
            or default in (None, False, argparse.SUPPRESS)
            or (isinstance(default, list | tuple) and not default)
            or isinstance(action, argparse._HelpAction | argparse._VersionAction)
        ):
            continue
        text = " ".join(formatter._format_action(action).split())
        if "(default:" not in text and "default " not in text:
            missing.append(action.option_strings[-1])
    return missing


def test_every_help_of_osworld_gym_shows_the_defaults_and_version() -> None:
    parsers = dict(all_parsers(build_parser(), "osworld-gym"))
    assert {"osworld-gym run", "osworld-gym export", "osworld-gym image build"} <= set(parsers)
    for path, parser in parsers.items():
        assert parser.formatter_class is HelpFormatter, path
        assert shown_defaults_missing(parser) == [], path
        if not path.endswith("serve-guest"):  # its --version is the guest parser's
            assert any(isinstance(a, argparse._VersionAction) for a in parser._actions), path


def test_run_help_shows_sampling_defaults_and_the_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--help"]) == 0  # main returns the status, help and errors included
    text = " ".join(capsys.readouterr().out.split())
    assert "openai: sampling temperature (default: 0.6)" in text
    assert "openai: nucleus sampling mass (default: 0.9)" in text
    assert "--output-dir DIR" in text and "--result-dir" not in text  # the old name is hidden
    assert main(["--help"]) == 0
    top = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 success; 1 an error while running" in top and "2 a usage error" in top


@pytest.mark.parametrize(
    "argv", [["--version"], ["run", "--version"], ["image", "build", "--version"]]
)
def test_version(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0 and capsys.readouterr().out == f"{VERSION}\n"


BAD_VALUES = [
    (["--log-level", "foo", "tasks", "suites"], "argument --log-level: invalid choice"),
    (["tasks", "suites", "--log-level", "loud"], "argument --log-level: invalid choice"),
    (["run", "--screen-size", "1280x"], "argument --screen-size: must look like WIDTHxHEIGHT"),
    (["run", "--screen-size", "0x720"], "at least 1 pixel"),
    (["run", "--num-envs", "0"], "argument --num-envs: must be at least 1, got 0"),
    (["run", "--max-steps", "many"], "argument --max-steps: expected an integer"),
    (["run", "--provider", "aws"], "argument --provider: invalid choice: 'aws'"),
    (["run", "--tasks", "/no/such/tasks.json"], "cannot load tasks '/no/such/tasks.json'"),
    (["run", "--agent", "nobody"], "unknown agent 'nobody'"),
    (["serve-env", "--num-envs", "-1"], "argument --num-envs: must be at least 1"),
    (["serve-env", "--screen-size", "big"], "argument --screen-size"),
    (["play", "--screen-size", "12"], "argument --screen-size"),
    (["desktop", "--screen-size", "axb"], "argument --screen-size"),
    (["view", "x", "--quality", "100"], "argument --quality: must be 1-95"),
    (["export", "somewhere"], "the following arguments are required: --output-dir"),
    (["tasks", "list", "/no/such/folder"], "/no/such/folder"),
    (["tasks", "fetch", "desktop-basics", "--jobs", "0"], "argument --jobs: must be at least 1"),
    (["serve-guest", "--display", ":9", "--port", "x"], "argument --port: invalid int value"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize(("argv", "why"), BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_a_bad_value_is_one_line_and_status_2(
    argv: list[str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv[0] == "run":
        argv = [*argv, "--output-dir", str(tmp_path)]
    if argv[0] == "serve-guest":  # the guest's own parser, as its console script
        with pytest.raises(SystemExit) as done:
            main(argv)
        status = done.value.code
    else:
        status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, err
    assert len(err.splitlines()) == 1, err
    assert ": error: " in err and why in err and out == ""


@pytest.mark.heavy  # the console script
def test_a_bad_value_from_the_console_script_is_one_line_without_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "osworld_gym.cli", "--log-level", "foo", "tasks", "suites"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("osworld-gym: error: argument --log-level: invalid choice")
    assert len(done.stderr.splitlines()) == 1


def test_an_error_while_running_is_one_line_and_status_1(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    import osworld_gym.tasks

    def broken() -> list[str]:
        raise RuntimeError("the suites folder\nvanished")

    monkeypatch.setattr(osworld_gym.tasks, "available_suites", broken)
    assert main(["tasks", "suites"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "osworld-gym tasks: error: RuntimeError: the suites folder vanished "
        "(--log-level DEBUG shows the traceback)\n"
    )
    assert not [r for r in caplog.records if r.exc_info]
    # DEBUG (given after the subcommand as well) logs the traceback too.
    assert main(["tasks", "suites", "--log-level", "debug"]) == 1
    assert capsys.readouterr().err.startswith("osworld-gym tasks: error: RuntimeError")
    (logged,) = [r for r in caplog.records if r.exc_info]
    assert logged.exc_info[0] is RuntimeError


# --- old names ----------------------------------------------------------------------------


DEPRECATED = [
    (["run", "--result-dir", "out"], "output_dir", "out", "--result-dir", "--output-dir"),
    (["view", "run", "-o", "r.html"], "output", "r.html", "-o", "--output"),
    (["export", "run", "-o", "ds"], "output_dir", "ds", "-o", "--output-dir"),
    (["export", "run", "--output", "ds"], "output_dir", "ds", "--output", "--output-dir"),
    (["play", "--width", "800"], "screen_size", (800, 720), "--width", "--screen-size WxH"),
    (["desktop", "--height", "600"], "screen_size", (1920, 600), "--height", "--screen-size"),
    (["desktop", "--width", "8", "--height", "6"], "screen_size", (8, 6), "--width", "WxH"),
]


@pytest.mark.parametrize(
    ("argv", "dest", "value", "old", "new"), DEPRECATED, ids=[" ".join(d[0]) for d in DEPRECATED]
)
def test_old_option_names_still_work_and_warn(
    argv: list[str],
    dest: str,
    value: object,
    old: str,
    new: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    lines = capsys.readouterr().err.splitlines()
    assert lines and all("is deprecated" in line for line in lines)
    assert lines[0].startswith(f"osworld-gym {argv[0]}: warning: {old} is deprecated")
    assert new in lines[0]


def test_new_names_give_no_warning(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["run", "--output-dir", "o", "--screen-size", "800X600"])
    assert (args.output_dir, args.screen_size) == ("o", (800, 600))
    assert build_parser().parse_args(["play"]).screen_size == (1280, 720)
    assert capsys.readouterr().err == ""


@pytest.mark.heavy  # the console script
def test_serve_guest_help_names_its_own_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "osworld_gym.cli", "serve-guest", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("usage: osworld-gym serve-guest ")
    assert "osworld-gym-guest" not in done.stdout
    assert "(default: 5000)" in done.stdout


# --- run --agent openai: the server is asked before any desktop starts --------------------


@contextlib.contextmanager
def models_server(status: int = 200, body: object = None) -> Iterator[str]:
    """A loopback OpenAI-style server answering ``GET /v1/models``; yields its API root."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            payload = json.dumps(body or {"object": "list", "data": [{"id": "m"}]}).encode()
            self.send_response(status if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    with loopback_server(Handler) as root:
        yield f"{root}/v1"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_endpoint_check_lists_models_or_names_the_url() -> None:
    with models_server() as url:
        assert check_openai_endpoint(url) == ["m"]
    with models_server(status=500) as url, pytest.raises(EndpointError, match="HTTP 500"):
        check_openai_endpoint(url)
    with models_server(body=["not", "a", "list"]) as url, pytest.raises(EndpointError):
        check_openai_endpoint(url)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(EndpointError, match=f"GET {dead}/models"):
        check_openai_endpoint(dead, timeout=2)


class PoolStarted(Exception):
    """Raised by the stand-in pool: the run got as far as starting desktops."""


class NoPool:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise PoolStarted("desktops would start here")


@pytest.fixture()
def no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(osworld_gym.pool, "EnvPool", NoPool)


def openai_run(base_url: str, output: Path) -> list[str]:
    return [
        "run", "--agent", "openai", "--model", "m", "--base-url", base_url,
        "--task-id", "os-chmod-script", "--output-dir", str(output), "--progress", "lines",
    ]  # fmt: skip


def test_run_openai_with_no_server_stops_before_any_desktop(
    no_pool: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(openai_run(dead, tmp_path)) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"GET {dead}/models" in err
    assert err.startswith("osworld-gym run: error: cannot reach the model server")
    assert not any(tmp_path.iterdir())  # nothing started, nothing written
    with models_server(status=503) as url:
        assert main(openai_run(url, tmp_path)) == 1
    assert "HTTP 503" in capsys.readouterr().err


def test_run_openai_with_a_server_goes_on_to_the_desktops(
    no_pool: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with models_server() as url:
        assert main(openai_run(url, tmp_path)) == 1  # the stand-in pool's error
    err = capsys.readouterr().err
    assert "PoolStarted: desktops would start here" in err
    assert "cannot reach" not in err and "lists no model" not in err


# --- the trainer commands -----------------------------------------------------------------

TRAINER_ENTRIES = {"osworld-arpo": "arpo", "osworld-arpo-cpu": "arpo_cpu",
                   "osworld-arpo-select": "arpo_select"}  # fmt: skip


def trainer(entry: str, *args: str, block_train_extra: bool = False) -> subprocess.CompletedProcess:
    """A trainer entry point in a fresh interpreter; optionally as if torch and transformers
    were not installed (``None`` in ``sys.modules`` makes both imports and ``find_spec`` fail)."""
    block = "import sys; sys.modules['torch'] = sys.modules['transformers'] = None; "
    code = (
        f"{block if block_train_extra else ''}import sys; "
        f"from osworld_agents.trainer.entry import {entry}; sys.exit({entry}({list(args)!r}))"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("prog", sorted(TRAINER_ENTRIES))
@pytest.mark.parametrize("args", [[], ["--help"], ["--preset", "cpu"]])
@pytest.mark.heavy  # the console script
def test_trainer_commands_without_the_train_extra_print_the_install_hint(
    prog: str, args: list[str]
) -> None:
    done = trainer(TRAINER_ENTRIES[prog], *args, block_train_extra=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"{prog}: needs the train extra (torch, transformers): pip install 'osworld-gym[train]'\n"
    )


@pytest.mark.heavy  # imports the trainer and torch
def test_trainer_helps_show_defaults_and_version() -> None:
    from osworld_agents.trainer import config, cpu_run

    for parser in (config.build_parser(), config.build_parser(preset=config.PRESETS["cpu"])):
        assert shown_defaults_missing(parser) == []
    text = " ".join(config.build_parser(preset=config.PRESETS["cpu"]).format_help().split())
    assert "--screen-size WxH Desktop (width, height) in pixels. (default: 336x224)" in text
    assert "--tasks STR" in text and "--suite" not in text
    with pytest.raises(SystemExit) as done:
        cpu_run.parse_args(["--version"])
    assert done.value.code == 0
    for parser in (cpu_run,):
        with contextlib.redirect_stdout(open(os.devnull, "w")), pytest.raises(SystemExit):
            parser.parse_args(["--help"])


@pytest.mark.heavy  # the console script
def test_osworld_arpo_select_help_has_both_option_sets() -> None:
    done = trainer("arpo_select", "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert text.startswith("usage: osworld-arpo-select ")
    assert "--baseline-rollouts BASELINE_ROLLOUTS episodes per task (default: 8)" in text
    assert "--lr FLOAT" in text and "(default: 1e-06)" in text


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        ([], "choose a preset: --preset cpu"),
        (["--preset", "gpu"], "argument --preset: invalid choice: 'gpu'"),
        (["--preset", "cpu", "--lr", "fast"], "argument --lr: invalid float value: 'fast'"),
        (["--preset", "cpu", "--screen-size", "12"], "argument --screen-size"),
        (["--preset", "cpu", "--num-envs", "0"], "num_envs must be >= 1"),
        (["--preset", "cpu", "--dart-rollouts", "3"], "--dart-rollouts: expected 2 values"),
        (["--preset", "cpu", "--algo", "ppo"], "argument --algo: invalid choice"),
    ],
)
def test_osworld_arpo_usage_errors_are_one_line(
    argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from osworld_agents.trainer.config import parse_config

    with pytest.raises(SystemExit) as done:
        parse_config(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith("osworld-arpo: error: ") and why in err


def test_osworld_arpo_presets_and_old_names(capsys: pytest.CaptureFixture[str]) -> None:
    from osworld_agents.trainer.config import PRESETS, parse_config

    assert parse_config(["--preset", "paper"]) == PRESETS["paper"]
    assert parse_config(["--preset", "cpu"]) == PRESETS["cpu"]
    # A model without a preset: the paper settings for it (what a user with a GPU means).
    assert parse_config(["--model", "my/model"]).num_envs == PRESETS["paper"].num_envs
    assert capsys.readouterr().err == ""
    config = parse_config(
        ["--preset", "cpu", "--suite", "desktop-basics", "--screen-size", "160", "120"]
    )
    assert (config.suite, config.screen_size) == ("desktop-basics", (160, 120))
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "osworld-arpo: warning: --screen-size W H is deprecated and will be removed in the next "
        "release; use --screen-size WxH",
        "osworld-arpo: warning: --suite is deprecated and will be removed in the next release; "
        "use --tasks",
    ]
    config = parse_config(["--preset", "cpu", "--tasks", "desktop-basics", "--no-replay"])
    assert config.suite == "desktop-basics" and not config.replay


@pytest.mark.heavy  # the console script
def test_osworld_arpo_without_preset_or_model_is_a_usage_error() -> None:
    done = trainer("arpo")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("osworld-arpo: error: choose a preset")
    assert len(done.stderr.splitlines()) == 1
