"""``osworld-gym view RUN_DIR [--output report.html]``: a run as one self-contained HTML page.

``RUN_DIR`` is a run folder (``<result_dir>/<action_space>/<observation_type>/<model>``), a
whole result dir, or any folder holding task folders in OSWorld's layout. Open the page in any
browser; ``?domain=os&outcome=failure&q=text&open=1`` presets the filters and opens every
task.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from osworld_gym.cli_options import DeprecatedAlias
from osworld_gym.commands.html_report import ImageOptions, render_html, report_data
from osworld_gym.commands.results import iter_run_dirs, read_run
from osworld_gym.commands.summary import load_summary


def add_parser(sub: Any) -> None:
    """Register ``view``."""
    view = sub.add_parser(
        "view", help="write a self-contained HTML report of a run", description=__doc__
    )
    view.add_argument("run_dir", help="a run folder or a result dir")
    view.add_argument(
        "--output", metavar="FILE", help="the HTML file (default: RUN_DIR/report.html)"
    )
    view.add_argument(
        "-o", dest="output", action=DeprecatedAlias, new="--output", help=argparse.SUPPRESS
    )
    view.add_argument(
        "--max-width", type=_max_width, default=960, help="downscale screenshots to this width"
    )
    view.add_argument(
        "--quality", type=_quality, default=70, help="JPEG quality of screenshots (1-95)"
    )
    view.add_argument("--title", help="page title (default: the run folder)")
    view.set_defaults(func=view_command)


def _quality(text: str) -> int:
    value = _integer(text)
    if not 1 <= value <= 95:
        raise argparse.ArgumentTypeError(f"must be 1-95, got {value}")
    return value


def _max_width(text: str) -> int:
    value = _integer(text)
    if value < 32:
        raise argparse.ArgumentTypeError(f"must be at least 32 pixels, got {value}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def view_command(args: argparse.Namespace) -> int:
    """Run the ``view`` subcommand."""
    root = Path(args.run_dir)
    if not root.is_dir():
        sys.stderr.write(f"osworld-gym view: error: {root} is not a folder\n")
        return 2
    records = read_run(root)
    if not records:
        sys.stderr.write(
            f"osworld-gym view: error: no task folders (traj.jsonl, result.txt) in {root}\n"
        )
        return 1
    run_dirs = list(iter_run_dirs(root))
    summary = load_summary(run_dirs[0]) if len(run_dirs) == 1 else None
    if not 1 <= args.quality <= 95 or args.max_width < 32:
        sys.stderr.write("osworld-gym view: error: --quality must be 1-95 and --max-width >= 32\n")
        return 2
    options = ImageOptions(max_width=args.max_width, quality=args.quality)
    title = args.title or f"osworld-gym run: {root.resolve().name}"
    page = render_html(report_data(records, summary, options, title))
    output = Path(args.output) if args.output else root / "report.html"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, encoding="utf-8")
    steps = sum(len(r.steps) for r in records)
    sys.stdout.write(f"{output}: {len(records)} tasks, {steps} steps, {len(page) / 1e6:.1f} MB\n")
    return 0
