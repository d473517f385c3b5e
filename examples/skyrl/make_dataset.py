"""Write SkyRL dataset files for the ``osworld`` env (runs on CPU; no SkyRL trainer needed).

Each row: ``prompt`` (UI-TARS-1.5's system text and computer-use prompt with the instruction),
``env_class="osworld"``, ``task_id``, ``data_source`` and ``osworld_config`` (the env settings
as JSON: suite, screen, desktops per trainer process, image encoding). SkyRL reads ``.parquet``
and ``.jsonl``; every column besides ``prompt`` and ``env_class`` reaches the env as ``extras``.

Usage::

    python examples/skyrl/make_dataset.py --out ~/data/osworld-ui-basics --desk-size 16
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from osworld_gym.integrations.skyrl import make_skyrl_dataset


def main() -> None:
    """Write train and validation files (the same tasks: ``ui-basics`` is a smoke suite)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("~/data/osworld-ui-basics"))
    parser.add_argument("--tasks", default="ui-basics", help="suite, folder or index file")
    parser.add_argument("--screen", default="336x224", help="WIDTHxHEIGHT of the desktops")
    parser.add_argument("--desk-size", type=int, default=16, help="desktops per process")
    parser.add_argument("--provider", default="local", help="local, docker, ...")
    parser.add_argument("--max-pixels", type=int, default=None, help="screenshot pixel budget")
    parser.add_argument("--format", choices=["parquet", "jsonl"], default="parquet")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    width, height = (int(side) for side in args.screen.lower().split("x"))
    config = {
        "tasks": args.tasks,
        "screen_size": [width, height],
        "desk_size": args.desk_size,
        "provider": args.provider,
        "max_pixels": args.max_pixels,
    }
    out = args.out.expanduser()
    for split in ("train", "validation"):
        path = make_skyrl_dataset(out / f"{split}.{args.format}", config=config)
        print(path)
    print(json.dumps(config))


if __name__ == "__main__":
    main()
