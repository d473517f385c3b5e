"""Write a suite's OSWorld index file (``test_all.json``: ``{domain: [task ids]}``).

    python scripts/make_suite_index.py envs/desktop-basics

The index is derived from ``examples/<domain>/<id>.json``; the suite's test checks that the two
agree, so rerun this after adding or removing a task.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Write the suite's test_all.json; return the exit status."""
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    suite = Path(argv[0])
    index = {
        domain.name: sorted(task.stem for task in domain.glob("*.json"))
        for domain in sorted((suite / "examples").iterdir())
        if domain.is_dir()
    }
    (suite / "test_all.json").write_text(json.dumps(index, indent=2) + "\n")
    sys.stdout.write(f"{sum(map(len, index.values()))} tasks in {len(index)} domains\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
