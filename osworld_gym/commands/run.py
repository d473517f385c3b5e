"""``osworld-gym run``: an agent over a task set on N envs, with OSWorld-style results.

Episodes run rollout-wise on an ``EnvPool`` (a free env starts the next
task at once). Each finished task is written in OSWorld's layout (``.results``) as soon as it
ends, the progress display counts it, and ``summary.json`` is rewritten, so a run killed at any
point keeps every finished task. Rerunning the same command skips the tasks that have a
``result.txt`` and runs the rest; a rerun whose score-relevant settings differ from the run
folder's is refused (use another ``--output-dir`` or ``--model``).

A task that cannot be scored is an error, never a 0: its episode could not start (a setup step
failed), an infrastructure fault cut it, or it could not be evaluated (a metric library that is
not installed names ``pip install 'osworld-gym[eval]'``). Its folder gets ``error.txt`` instead of
``result.txt``, the summary counts it under ``errors`` apart from the scored tasks, and a rerun
runs it again. ``summary.json`` also records the evaluation mode (``--evaluation``), the
evaluator reference (``--evaluator-reference``: whose OSWorld evaluator code the scores follow),
the seed and the versions of Python, osworld-gym and the metric libraries (``versions``).

Before any desktop starts, the run checks what its tasks and provider need: a task whose setup
steps, getters or metrics import a library of an extra that is not installed (openpyxl of
``eval`` for a Calc task, Playwright of ``chrome`` for Chrome's; on ``local`` desktops, which run
this Python, pyautogui of ``gui`` for a task whose own commands import it), or the docker
provider without the docker SDK, refuses the run with exit status 2 and the exact command that
installs the extras (``/path/to/python -m pip install 'osworld-gym[eval]'``), instead of
episodes that end unscored.

``--agent openai`` first asks the server for ``GET {--base-url}/models`` (a few seconds at
most): an unreachable server or an error answer stops the run before any desktop starts.

Exit status: 0 when every task was scored, 1 when some could not be (listed in the summary;
``--allow-errors`` exits 0 all the same) or when the model server of ``--agent openai`` does not
answer, 2 for bad arguments or a missing extra, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osworld_gym.cli_options import (
    add_output_dir,
    one_line,
    positive_int,
    screen_size,
)
from osworld_gym.commands.agents import (
    BUILTIN_AGENTS,
    Agent,
    AgentOptions,
    EndpointError,
    TimedPolicy,
    check_openai_endpoint,
    make_agent,
)
from osworld_gym.commands.progress import Progress
from osworld_gym.commands.results import (
    Dialect,
    RunLayout,
    TaskRecord,
    read_run,
    read_task,
    write_task,
)
from osworld_gym.commands.summary import (
    build_summary,
    domain_rows,
    format_table,
    library_versions,
    load_summary,
    settings_conflicts,
    write_summary,
)
from osworld_gym.env_config import EVALUATION_MODES
from osworld_gym.evaluation.references import DEFAULT_REFERENCE, REFERENCES
from osworld_gym.extras import Need, check_tasks, runs_this_python
from osworld_gym.providers import PROVIDER_NAMES
from osworld_gym.providers.session_choice import SESSIONS, session_for
from osworld_gym.tasks import Task, TaskSet, load_tasks
from osworld_gym.version import __version__

if TYPE_CHECKING:
    from osworld_gym.evaluation.evaluator import Evaluator
    from osworld_gym.providers.remote.provider import RemoteProviderConfig

logger = logging.getLogger(__name__)

PROVIDER_NEEDS: dict[str, tuple[Need, ...]] = {"docker": (Need("docker", "docker"),)}
"""What each provider imports lazily to start its desktops (the docker SDK)."""
OBSERVATION_TYPE = "screenshot"
DEFAULT_SCREEN = (1920, 1080)
SUITE_SCREENS = {"ui-basics": (336, 224), "desktop-basics": (1280, 720)}
"""Screens the bundled suites are laid out for (their oracles click at measured points)."""


def add_parser(sub: Any) -> None:
    """Register ``run``."""
    run = sub.add_parser(
        "run",
        help="run an agent over tasks on N envs; OSWorld's results layout; resumable",
        description=__doc__.split("\n\n")[0],
    )
    run.add_argument("--tasks", default="desktop-basics", help="suite, folder or index JSON")
    run.add_argument("--domain", action="append", help="only this domain (repeatable)")
    run.add_argument("--task-id", action="append", dest="task_ids", help="only this task")
    run.add_argument("--limit", type=positive_int, help="at most this many tasks (after filters)")
    run.add_argument(
        "--agent",
        default="oracle",
        help=f"{', '.join(BUILTIN_AGENTS)}, or module:callable (a batched pool policy)",
    )
    run.add_argument(
        "--agent-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="module:callable: an argument of its factory (repeatable)",
    )
    run.add_argument("--model", help="served model (openai); results folder name otherwise")
    run.add_argument(
        "--base-url",
        default="http://127.0.0.1:8000/v1",
        help="openai: API root (checked with GET /models before any desktop starts)",
    )
    run.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: key variable")
    run.add_argument("--temperature", type=float, default=0.6, help="openai: sampling temperature")
    run.add_argument("--top-p", type=float, default=0.9, help="openai: nucleus sampling mass")
    run.add_argument(
        "--max-new-tokens", type=positive_int, default=1500, help="openai: tokens per response"
    )
    run.add_argument(
        "--history-images", type=int, default=5, help="openai: screenshots per prompt (0: all)"
    )
    run.add_argument(
        "--provider", choices=PROVIDER_NAMES, default="local", help="where the desktops run"
    )
    run.add_argument("--image", help="the provider's desktop image (recorded in the summary)")
    add_session_option(run)
    run.add_argument(
        "--guest-url",
        action="append",
        dest="guest_urls",
        metavar="URL",
        help="remote: a running guest server, e.g. http://10.0.0.5:5000 (repeatable; one env "
        "per URL)",
    )
    run.add_argument(
        "--guest-token-env",
        metavar="VAR",
        help="remote: the environment variable holding the guests' token (kept off the "
        "command line, which the summary records)",
    )
    run.add_argument(
        "--num-envs", type=positive_int, default=1, help="desktops running episodes at once"
    )
    run.add_argument("--max-steps", type=positive_int, default=15, help="step limit per episode")
    run.add_argument("--hard", action="store_true", help="OSWorld-Hard: no FAIL at the limit")
    run.add_argument(
        "--screen-size",
        type=screen_size,
        metavar="WxH",
        help="screen in pixels, e.g. 1280x720 (default: the suite's, or 1920x1080)",
    )
    add_output_dir(
        run,
        "results",
        "the results folder (OSWorld's layout: ACTION_SPACE/OBSERVATION/MODEL/DOMAIN/TASK)",
        old=("--result-dir",),
    )
    run.add_argument(
        "--seed", type=int, default=0, help="seeds the agent and the envs (recorded in the summary)"
    )
    run.add_argument(
        "--evaluation",
        choices=EVALUATION_MODES,
        default="osworld",
        help="osworld: score exactly as OSWorld's code; fixed: with the metric fixes of "
        "docs/concepts/evaluation.md",
    )
    run.add_argument(
        "--evaluator-reference",
        choices=REFERENCES,
        default=DEFAULT_REFERENCE,
        help="whose OSWorld evaluator code the scores follow: the one that goes with the task "
        "files (default) or desktop-env 1.0.2's, to reproduce numbers of that era (recorded in "
        "the summary)",
    )
    run.add_argument("--online", action="store_true", help="allow downloading task assets")
    run.add_argument("--step-timeout", type=float, default=600.0, help="seconds per step")
    run.add_argument(
        "--progress",
        choices=["auto", "bar", "lines"],
        default="auto",
        help="a progress bar, a line per task, or a bar on a terminal only",
    )
    run.add_argument(
        "--allow-errors",
        action="store_true",
        help="exit 0 even when some tasks could not be scored (still counted as errors, not 0)",
    )
    run.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run the ``run`` subcommand."""
    try:
        plan = _plan(args)
    except ValueError as e:
        sys.stderr.write(f"osworld-gym run: error: {one_line(e)}\n")
        return 2
    try:
        if plan.agent.kind == "openai":
            try:  # before any desktop starts: minutes of launching for a server that is not up
                served = check_openai_endpoint(args.base_url, args.api_key_env)
            except EndpointError as e:
                sys.stderr.write(f"osworld-gym run: error: {one_line(e)}\n")
                return 1
            if served and args.model not in served:  # some gateways list only part of theirs
                sys.stderr.write(
                    f"osworld-gym run: warning: {args.base_url} lists no model {args.model!r} "
                    f"(it lists {', '.join(served[:5])})\n"
                )
        return _execute(plan)
    finally:
        if plan.agent.close is not None:
            plan.agent.close()


class _Plan:
    """Everything decided before the first env starts."""

    def __init__(
        self,
        args: argparse.Namespace,
        tasks: TaskSet,
        agent: Agent,
        layout: RunLayout,
        dialect: Dialect,
        settings: dict[str, Any],
        env_kwargs: dict[str, Any],
    ) -> None:
        self.args, self.tasks, self.agent, self.layout = args, tasks, agent, layout
        self.dialect, self.settings, self.env_kwargs = dialect, settings, env_kwargs


def _plan(args: argparse.Namespace) -> _Plan:
    remote = remote_config(args)  # usage errors first, before any agent or env starts
    tasks = _select_tasks(args)
    requested_screen = args.screen_size
    options = AgentOptions(
        agent=args.agent,
        model=args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        temperature=args.temperature,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens,
        history_images=args.history_images or None,
        seed=args.seed,
        screen_size=requested_screen or suite_screen(args.tasks),
        num_envs=args.num_envs,
        agent_args=dict(_key_value(item) for item in args.agent_arg),
    )
    agent = make_agent(options, tasks)
    screen = requested_screen or agent.screen_size or options.screen_size
    if agent.screen_size and screen != agent.screen_size:
        raise ValueError(
            f"the {agent.kind} agent needs a {agent.screen_size[0]}x{agent.screen_size[1]} "
            f"screen, not {screen[0]}x{screen[1]}"
        )
    if args.num_envs < 1 or args.max_steps < 1:  # main() parses these; callers may not
        raise ValueError("--num-envs and --max-steps must be at least 1")
    layout = RunLayout(Path(args.output_dir), agent.action_format, OBSERVATION_TYPE, agent.model)
    dialect = Dialect(
        agent.action_format,
        screen,
        dict(agent.env_kwargs.get("dialect_options") or {}),
        max_steps=args.max_steps,
        hard=args.hard,
    )
    provider, image = provider_from_args(
        args.provider, args.image, screen, remote, session=args.session, tasks=tasks
    )
    env_kwargs = {
        "tasks": args.tasks,
        "provider": provider,
        "action_format": agent.action_format,
        "max_steps": args.max_steps,
        "hard": args.hard,
        "screen_size": screen,
        "offline": not args.online,
        "evaluation": args.evaluation,
        "evaluator_reference": args.evaluator_reference,
        **agent.env_kwargs,
    }
    settings = {
        "mode": "hard" if args.hard else "standard",
        "max_steps": args.max_steps,
        "fail_at_step_limit": not args.hard,
        "parse_error_ends_episode": False,
        "screen_size": list(screen),
        "action_space": agent.action_format,
        "observation_type": OBSERVATION_TYPE,
        "provider": args.provider,
        # The desktop the scores come from (local, docker: "gnome" or "minimal"; others: their
        # image's).
        "session": getattr(provider, "session", None),
        "image": image,
        "agent": agent.kind,
        "model": agent.model,
        **agent.settings,
        "tasks": args.tasks,
        "package_version": __version__,
        "env_id": "OSWorld-Hard-v0" if args.hard else "OSWorld-v0",
        "rollouts_per_task": 1,
        "num_envs": args.num_envs,
        "offline": not args.online,
        "evaluation": args.evaluation,
        "evaluator_reference": args.evaluator_reference,
        "seed": args.seed,
    }
    return _Plan(args, tasks, agent, layout, dialect, settings, env_kwargs)


def _select_tasks(args: argparse.Namespace) -> TaskSet:
    try:
        tasks = load_tasks(args.tasks, domain=args.domain, ids=args.task_ids)
    except (OSError, LookupError) as e:
        why = e.args[0] if isinstance(e, KeyError) and e.args else e  # KeyError quotes its text
        raise ValueError(f"cannot load tasks {args.tasks!r}: {why}") from e
    if args.limit is not None:
        tasks = tasks[: args.limit]
    if not len(tasks):
        raise ValueError(f"no tasks selected from {args.tasks!r}")
    return tasks


def suite_screen(source: str) -> tuple[int, int]:
    """The screen size a bundled suite was made for (the default screen for other sources)."""
    return SUITE_SCREENS.get(str(source), DEFAULT_SCREEN)


def remote_config(args: argparse.Namespace) -> RemoteProviderConfig | None:
    """The remote provider's config from ``--guest-url``/``--guest-token-env``; else None.

    Raises:
        ValueError: a usage error (no guest for ``--provider remote``, fewer guests than envs,
            guest options for another provider, an unset token variable, a malformed URL).
    """
    urls = tuple(args.guest_urls or ())
    if args.provider != "remote":
        if urls or args.guest_token_env:
            raise ValueError("--guest-url and --guest-token-env are for --provider remote")
        return None
    if not urls:
        raise ValueError(
            "--provider remote needs the running guest servers: --guest-url "
            "http://HOST:5000 (repeatable; one env per URL)"
        )
    if args.num_envs > len(urls):
        raise ValueError(
            f"--num-envs {args.num_envs} needs as many --guest-url (got {len(urls)}): each "
            f"env claims a guest of its own"
        )
    token = None
    if args.guest_token_env:
        token = os.environ.get(args.guest_token_env)
        if not token:
            raise ValueError(f"--guest-token-env: the variable {args.guest_token_env} is not set")
    from osworld_gym.providers.remote.provider import RemoteProviderConfig

    return RemoteProviderConfig(urls=urls, token=token)  # validates the URLs


def add_session_option(parser: Any) -> None:
    """``--session``: the local or docker desktops' session (see docs/concepts/desktop.md)."""
    parser.add_argument(
        "--session",
        choices=SESSIONS,
        default=None,
        help="local, docker, qemu: the desktop's session: 'gnome' (GNOME Shell laid out as "
        "OSWorld's Ubuntu VM) or 'minimal' (openbox, light); default: gnome for OSWorld's task "
        "files, minimal for the bundled suites",
    )


def provider_from_args(
    name: str,
    image: str | None,
    screen: tuple[int, int],
    remote: RemoteProviderConfig | None = None,
    session: str | None = None,
    tasks: Iterable[Task] = (),
) -> tuple[Any, str]:
    """What the envs get as ``provider`` (a picklable name or config), and the image to record.

    A local, docker or qemu provider's session is settled here (``session``, else the one
    ``tasks`` need), so the run records the desktop its scores come from.
    """
    if session is not None and (remote is not None or name not in ("local", "docker", "qemu")):
        raise ValueError(
            f"--session {session} is for the local, docker and qemu providers, not {name}"
        )
    if remote is not None:
        if image:
            raise ValueError("--image is for the docker provider, not remote")
        return dataclasses.replace(remote, screen_size=screen), "remote guests (--guest-url)"
    if name == "local":
        if image:
            raise ValueError("--image is for the docker provider; local runs this host's apps")
        described = "local host (Debian packages, scripts/install_system_deps.sh)"
        from osworld_gym.providers.local.provider import LocalProviderConfig

        chosen = session or session_for(tasks)
        return LocalProviderConfig(screen_size=screen, session=chosen), f"{described}, {chosen}"
    if name == "docker":
        try:
            from osworld_gym.providers.docker.provider import DockerProviderConfig
        except ImportError as e:
            raise ValueError(f"the docker provider is not available: {e}") from e
        chosen = session or session_for(tasks, in_image=True)
        config = DockerProviderConfig(screen_size=screen, session=chosen)
        if image:
            config = DockerProviderConfig(screen_size=screen, image=image, session=chosen)
        return config, config.image
    if image:
        raise ValueError(f"--image is for the docker provider, not {name}")
    if name == "qemu":
        from osworld_gym.errors import ProviderError
        from osworld_gym.providers.qemu.config import QemuProviderConfig

        chosen = session or session_for(tasks, in_image=True)
        try:
            config = QemuProviderConfig.from_built_image(screen_size=screen, session=chosen)
        except ProviderError as e:
            raise ValueError(str(e)) from e
        return config, f"{config.image}, {chosen}"
    return name, f"{name} provider default"


def check_installed(
    tasks: Iterable[Task],
    provider: str,
    evaluator: Evaluator,
    *,
    what: str = "",
    also: Mapping[str, Iterable[Need]] | None = None,
) -> None:
    """Refuse, before any desktop starts, what the tasks and the provider need but lack here.

    Args:
        tasks: The tasks to be run.
        provider: The provider's name (``--provider``).
        evaluator: The evaluator that will score them.
        what: Said of the tasks after their count (``" of 'desktop-basics'"``).
        also: What else the command needs, by what needs it.

    Raises:
        MissingExtraError: One message naming every missing extra and the command that
            installs them (the CLI's exit status 2).
    """
    needs = {**(also or {}), f"the {provider} provider": PROVIDER_NEEDS.get(provider, ())}
    check_tasks(tasks, evaluator, what=what, also=needs, guest_python=runs_this_python(provider))


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ValueError(f"--agent-arg must be KEY=VALUE, got {item!r}")
    return key, value


def _execute(plan: _Plan) -> int:
    from osworld_gym.evaluation.evaluator import Evaluator
    from osworld_gym.pool import CollectorConfig, EnvPool, EnvSpec, PoolConfig, RolloutCollector
    from osworld_gym.pool.collector import policy_call_limit

    args, layout = plan.args, plan.layout
    run_dir = layout.run_dir
    earlier = load_summary(run_dir)
    if earlier is not None:
        conflicts = settings_conflicts(earlier.get("settings", {}), plan.settings)
        if conflicts:
            sys.stderr.write(
                f"osworld-gym run: {run_dir} holds a run with other settings "
                f"({'; '.join(conflicts)}); use another --output-dir or --model\n"
            )
            return 2
    todo = [t for t in plan.tasks if not layout.is_done(t.domain, t.id)]
    if todo:  # every missing part at once, before the first desktop (status 2)
        check_installed(
            todo,
            args.provider,
            Evaluator(mode=args.evaluation, reference=args.evaluator_reference),
            what=" to run",
        )
    versions = library_versions()
    _warn_about_libraries(versions, earlier)
    skipped = len(plan.tasks) - len(todo)
    created = earlier.get("created") if earlier else None
    invocation: dict[str, Any] = {
        "command": "osworld-gym " + " ".join(sys.argv[1:]),
        "selected": len(plan.tasks),
        "skipped_done": skipped,
        "episodes_run": 0,
        "errors": 0,
        "requeued_after_infra_errors": 0,
        "interrupted": False,
        "status": "running",
        "wall_seconds": 0.0,
    }
    records = {r.task_dir: r for r in read_run(run_dir)} if run_dir.exists() else {}
    _save_summary(run_dir, plan, invocation, created, records, versions)
    sys.stderr.write(
        f"osworld-gym run: {len(todo)} task(s) to run, {skipped} done already; "
        f"{plan.agent.kind} agent on {min(args.num_envs, max(len(todo), 1))} {args.provider} "
        f"env(s); results in {run_dir}\n"
    )
    by_id = {t.id: t for t in plan.tasks}
    started = time.monotonic()
    status = 0
    progress = Progress(
        len(todo), skipped, bar={"auto": None, "bar": True, "lines": False}[args.progress]
    )
    try:
        if todo:
            spec = EnvSpec(kwargs=plan.env_kwargs)
            config = PoolConfig(screenshot_format="png", step_timeout=args.step_timeout)
            with EnvPool(spec, num_envs=min(args.num_envs, len(todo)), config=config) as pool:
                # Each env's request goes out as soon as it is ready, unless the agent limits
                # its calls in flight (max_concurrent_calls), which the wrapper would hide.
                calls = policy_call_limit(plan.agent.policy)
                collector = RolloutCollector(
                    pool,
                    TimedPolicy(plan.agent.policy),
                    CollectorConfig(group_size=1, seed=args.seed, policy_concurrency=calls),
                )
                for group in collector.groups([t.id for t in todo]):
                    trajectory = group.trajectories[0]
                    task = by_id[trajectory.task_id]
                    task_dir = plan.layout.task_dir(task.domain, task.id)
                    score = _record(plan, task, task_dir, trajectory)
                    records[task_dir] = read_task(task_dir)
                    if score is None:
                        why = records[task_dir].error or "no score"
                        progress.message(
                            f"{task.domain}/{task.id}: not scored "
                            f"({records[task_dir].error_kind} error): {why}"
                        )
                    invocation["episodes_run"] += 1 + len(group.discarded)
                    invocation["errors"] += score is None
                    invocation["requeued_after_infra_errors"] = collector.requeued
                    invocation["wall_seconds"] = round(time.monotonic() - started, 2)
                    parse_errors = sum(s.parse_error is not None for s in trajectory.steps)
                    progress.update(
                        f"{task.domain}/{task.id}",
                        score,
                        len(trajectory.steps),
                        trajectory.wall_seconds,
                        parse_errors,
                    )
                    _save_summary(run_dir, plan, invocation, created, records, versions)
        invocation["status"] = "finished"
        status = 1 if invocation["errors"] and not args.allow_errors else 0
    except KeyboardInterrupt:
        invocation.update(status="interrupted", interrupted=True)
        progress.message("interrupted: finished tasks are kept; rerun to complete the rest")
        status = 130
    finally:
        progress.close()
        invocation["wall_seconds"] = round(time.monotonic() - started, 2)
        _save_summary(run_dir, plan, invocation, created, records, versions)
    # The table covers the selected tasks; summary.json covers the whole run folder.
    rows = domain_rows(sorted((r for r in records.values() if r.task_id in by_id), key=_order))
    sys.stdout.write(format_table(rows) + "\n")
    overall = rows[-1]
    rate = overall.success_rate
    sys.stdout.write(
        f"{plan.settings['mode']} mode, {plan.settings['max_steps']} steps, agent "
        f"{plan.agent.kind} ({plan.agent.model}): "
        f"{'-' if rate is None else f'{100 * rate:.1f}%'} over {overall.scored} scored "
        f"task(s), {overall.errors} error(s) not scored; this invocation ran "
        f"{invocation['episodes_run']} episode(s); summary: {run_dir / 'summary.json'}\n"
    )
    if invocation["errors"]:
        selected = [r for r in records.values() if r.task_id in by_id]
        _report_errors(invocation["errors"], selected, status)
    return status


def _warn_about_libraries(versions: dict[str, Any], earlier: dict[str, Any] | None) -> None:
    """Say before the run what will stop tasks from being scored, or may move their scores.

    Missing metric libraries: the tasks that need them will be errors. Libraries whose versions
    differ from the earlier invocation's in this run folder: its scores mix the two.
    """
    for extra, dists in versions["missing"].items():
        if extra == "eval":  # the others are for few tasks (audio, video, OCR, Chrome)
            sys.stderr.write(
                f"osworld-gym run: metric libraries not installed: {', '.join(dists)}; tasks "
                f"scored with them will be errors, not scores: pip install 'osworld-gym[eval]'\n"
            )
    before = (earlier or {}).get("versions", {}).get("packages")
    if before is None:
        return
    now = versions["packages"]
    changed = sorted(d for d in set(before) | set(now) if before.get(d) != now.get(d))
    if changed:
        sys.stderr.write(
            "osworld-gym run: metric libraries differ from this run folder's earlier "
            "invocation: "
            + ", ".join(f"{d} {before.get(d, '-')} -> {now.get(d, '-')}" for d in changed)
            + "\n"
        )


def _report_errors(count: int, records: Iterable[TaskRecord], status: int) -> None:
    """The distinct reasons tasks were not scored, and the exit status they caused, if any."""
    reasons = dict.fromkeys(r.error for r in records if r.score is None and r.error)
    shown = list(reasons)[:5]
    lines = [f"osworld-gym run: {count} task(s) not scored in this invocation (errors, not 0s):"]
    lines += [f"  {reason}" for reason in shown]
    if len(reasons) > len(shown):
        lines.append(f"  ... and {len(reasons) - len(shown)} more reason(s): see summary.json")
    if status == 1:
        lines.append("  exit status 1 (--allow-errors exits 0 with errors)")
    sys.stderr.write("\n".join(lines) + "\n")


def _record(plan: _Plan, task: Task, task_dir: Path, trajectory: Any) -> float | None:
    settings = plan.settings
    extra = {
        "agent": plan.agent.kind,
        "model": plan.agent.model,
        "evaluation": settings["evaluation"],
        "evaluator_reference": settings["evaluator_reference"],
        "seed": settings["seed"],
    }
    return write_task(task_dir, trajectory, domain=task.domain, dialect=plan.dialect, extra=extra)


def _order(record: TaskRecord) -> tuple[str, str]:
    return record.domain, record.task_id


def _save_summary(
    run_dir: Path,
    plan: _Plan,
    invocation: dict[str, Any],
    created: str | None,
    records: dict[Path, TaskRecord],
    versions: dict[str, Any],
) -> dict[str, Any]:
    ids = {t.id for t in plan.tasks}
    # The summary covers every task in the run folder (earlier invocations' selections too).
    ordered = sorted(records.values(), key=_order)
    summary = build_summary(ordered, plan.settings, invocation, created=created)
    summary["selected_tasks"] = sorted(ids)
    summary["not_done"] = sorted(
        t.id for t in plan.tasks if not plan.layout.is_done(t.domain, t.id)
    )
    summary["tasks_in_folder"] = len(ordered)
    summary["versions"] = versions
    write_summary(run_dir, summary)
    return summary
