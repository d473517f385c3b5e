"""Write verl's parquet files for an osworld-gym task suite (CPU; no verl model needed).

Usage::

    python examples/verl/make_dataset.py --tasks ui-basics --out data/osworld-verl

writes ``train.parquet`` and ``val.parquet`` (the same tasks: verl repeats each one
``rollout.n`` times per step). Needs verl installed (``pip install 'osworld-gym[verl]'``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from osworld_gym.integrations.verl import make_verl_dataset


def main() -> None:
    """Parse the arguments and write both files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="ui-basics", help="suite name, folder or index JSON")
    parser.add_argument("--out", type=Path, default=Path("data/osworld-verl"))
    args = parser.parse_args()
    for split in ("train", "val"):
        path = make_verl_dataset(args.tasks, args.out / f"{split}.parquet")
        print(path)


if __name__ == "__main__":
    main()
