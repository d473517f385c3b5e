"""The live progress of a run: tasks done, success so far, throughput and failures.

On a terminal it is a tqdm bar (when tqdm is installed) whose postfix carries the numbers; in
logs and pipes (or without tqdm) it is one plain line per finished task, which reads well in a
CI log and is easy to parse.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    """Counts finished tasks and shows them.

    Args:
        total: Tasks this invocation will run.
        skipped: Tasks skipped because an earlier run finished them.
        stream: Where to write (stderr by default).
        bar: Use a tqdm bar: None decides by whether ``stream`` is a terminal.
    """

    def __init__(
        self, total: int, skipped: int = 0, stream: TextIO | None = None, bar: bool | None = None
    ) -> None:
        self.total, self.skipped = total, skipped
        self.stream = stream or sys.stderr
        self.done = 0
        self.scored = 0
        self.score_sum = 0.0
        self.errors = 0
        self.parse_errors = 0
        self.steps = 0
        self.started = time.monotonic()
        self._bar: Any = None
        if bar is None:
            bar = bool(getattr(self.stream, "isatty", lambda: False)())
        if bar:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, file=self.stream, unit="task", dynamic_ncols=True)
        if skipped:
            self._write(f"{skipped} task(s) already done in this run folder: skipped")

    def update(
        self, label: str, score: float | None, steps: int, seconds: float, parse_errors: int = 0
    ) -> None:
        """Count one finished task (``score`` None: it could not be scored)."""
        self.done += 1
        self.steps += steps
        self.parse_errors += parse_errors
        if score is None:
            self.errors += 1
        else:
            self.scored += 1
            self.score_sum += score
        if self._bar is not None:
            self._bar.set_postfix_str(self.status(), refresh=False)
            self._bar.update(1)
            return
        width = len(str(self.total))
        outcome = "error" if score is None else f"score {score:.2f}"
        self._write(
            f"[{self.done:>{width}}/{self.total}] {label}: {outcome} ({steps} steps, "
            f"{seconds:.1f} s) | {self.status()}"
        )

    def status(self) -> str:
        """Success so far, throughput and failures, in one line."""
        minutes = max(time.monotonic() - self.started, 1e-9) / 60
        rate = "-" if not self.scored else f"{100 * self.score_sum / self.scored:.1f}%"
        return (
            f"success {rate} ({self.score_sum:g}/{self.scored}) | "
            f"{self.done / minutes:.1f} tasks/min, {self.steps / minutes / 60:.2f} steps/s | "
            f"errors {self.errors}, parse errors {self.parse_errors}"
        )

    def message(self, text: str) -> None:
        """A line between updates (the bar stays below it)."""
        self._write(text)

    def close(self) -> None:
        """Finish the display."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _write(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()
