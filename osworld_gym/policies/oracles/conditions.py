"""Condition steps of the oracle scripts: wait until the screen shows the app ready for keys.

The env's ``step`` returns once the screen has settled, but an app can still be about to react:
LibreOffice maps a dialog and paints its widgets a moment later, and enters a text box's edit
mode on a timer after the click or Enter. Keys sent in between are lost or land in the wrong
place (a loaded host makes the gap longer). A script therefore says what it expects to see
before its next keys: a ``WaitFor`` step. The oracle checks it on each observation and,
while it does not hold, answers a short ``Wait`` action (a bounded poll, backing off) instead
of the next keys.

A condition looks only at the observed screenshot, as an agent would: a region of the screen
differs from how it looked when the previous action was sent, and (optionally) shows drawn
content rather than a blank area.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

Region: TypeAlias = tuple[int, int, int, int]
"""``(x, y, width, height)`` of a screen area, in screen pixels."""

POLL_SECONDS = (0.25, 0.5, 1.0, 2.0)
"""Lengths of the successive ``Wait`` polls of one condition (the last one repeats)."""
DEFAULT_TIMEOUT = 12.0
"""Seconds of polling after which the oracle gives up on a condition and sends its next keys."""
DRAWN_COLOURS = 8
"""Distinct colours a region needs to count as drawn (a blank dialog shows one or two)."""


@dataclass(frozen=True)
class WaitFor:
    """A script step that is no action: the condition the next keys wait for.

    Attributes:
        what: What it waits for, for logs ("the Keep format dialog").
        region: The screen area to watch.
        min_colours: Also require this many distinct colours in the area (it is drawn, not a
            blank window); 0: any change will do.
        timeout: Seconds of polling before the oracle goes on regardless (logged).
    """

    what: str
    region: Region
    min_colours: int = 0
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        x, y, width, height = self.region
        if x < 0 or y < 0 or width <= 0 or height <= 0:
            raise ValueError(f"{self.what}: bad region {self.region}")
        if self.timeout <= 0:
            raise ValueError(f"{self.what}: timeout must be positive, got {self.timeout}")

    def met(self, screen: np.ndarray, before: np.ndarray) -> bool:
        """Whether ``screen`` shows it, given the screen the previous action was sent on.

        Raises:
            ValueError: The region lies outside the screenshots, or their shapes differ.
        """
        if screen.shape != before.shape:
            raise ValueError(
                f"{self.what}: screenshots of different shapes {screen.shape} and {before.shape}"
            )
        x, y, width, height = self.region
        if y + height > screen.shape[0] or x + width > screen.shape[1]:
            raise ValueError(
                f"{self.what}: region {self.region} is off a {screen.shape[1]}x"
                f"{screen.shape[0]} screen"
            )
        now = screen[y : y + height, x : x + width]
        if np.array_equal(now, before[y : y + height, x : x + width]):
            return False
        return self.min_colours <= 0 or distinct_colours(now) >= self.min_colours


def distinct_colours(area: np.ndarray) -> int:
    """Number of distinct RGB colours in an ``(height, width, 3)`` uint8 area."""
    pixels = np.ascontiguousarray(area[..., :3], dtype=np.uint8).reshape(-1, 3).astype(np.uint32)
    packed = (pixels[:, 0] << 16) | (pixels[:, 1] << 8) | pixels[:, 2]
    return int(np.unique(packed).size)


def poll_seconds(polls_done: int) -> float:
    """The length of the next ``Wait`` poll after ``polls_done`` polls of one condition."""
    return POLL_SECONDS[min(polls_done, len(POLL_SECONDS) - 1)]
