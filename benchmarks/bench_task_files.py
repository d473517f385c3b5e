"""Task dicts the benchmarks share, built from the standard library alone.

``bench_observe.py --baseline REV`` runs against an older package, so what lives here must not
import anything from ``osworld_gym``.
"""

from __future__ import annotations

from typing import Any


def terminal_task(task_id: str) -> dict[str, Any]:
    """A task that opens an xterm titled ``task_id``, waits for it and focuses it.

    Its evaluator is ``infeasible``: the benchmarks measure the steps, not the score.
    """
    return {
        "id": task_id,
        "instruction": "Type into the terminal.",
        "config": [
            {"type": "launch", "parameters": {"command": ["xterm", "-title", task_id]}},
            {
                "type": "execute",
                "parameters": {
                    "command": f"wmctrl -l | grep -q {task_id}",
                    "shell": True,
                    "until": {"returncode": 0},
                },
            },
            {"type": "activate_window", "parameters": {"window_name": task_id}},
        ],
        "evaluator": {"func": "infeasible"},
    }
