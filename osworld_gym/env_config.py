"""Settings of ``OSWorldEnv``, one frozen dataclass, documented per field."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from osworld_gym.evaluation.references import DEFAULT_REFERENCE, check_reference

DEFAULT_SUITE = "desktop-basics"
DEFAULT_MAX_STEPS = 15  # OSWorld's runners and ARPO
ACTION_FORMATS = ("uitars", "pyautogui", "computer_13", "structured")
# "osworld": every metric scores as OSWorld's own code does (published numbers compare);
# "fixed": the metrics where OSWorld has a score-changing bug use the corrected version.
EVALUATION_MODES = ("osworld", "fixed")
# How the guest decides the screen settled (osworld_gym.guest.settle.SETTLE_MODES; repeated
# here so the config imports nothing of the guest).
SETTLE_MODES = ("poll", "events")
# Quiet periods per settle mode: the events mode knows when work is pending, so tens of
# milliseconds of stillness are enough; polling frames needs longer to cover silent work.
FRAME_FORMATS = ("raw", "png", "jpeg")
SETTLE_QUIET = {"events": 0.03, "poll": 0.2}
RESET_SETTLE_QUIET = {"events": 0.1, "poll": 0.6}
# ... after a setup that started an app: LibreOffice Impress fills its sidebar's lists about
# 0.5 s after its window first went still (impress/2cd43775's first frame was early in both
# of its resets in a fidelity report with 0.1 s).
RESET_SETTLE_QUIET_AFTER_LAUNCH = {"events": 0.75, "poll": 0.75}
# Setup steps that start or open an app (OSWorld's step types).
LAUNCHING_STEPS = frozenset({"launch", "open", "chrome_open_tabs"})


def resolve_step_limit(max_steps: int, max_episode_steps: int | None) -> int:
    """The env's step limit, the step it scores at, from ``max_steps`` and ``max_episode_steps``.

    ``max_episode_steps`` is what ``gym.make`` or ``gym.make_vec`` was given. ``max_steps`` at
    its default (``DEFAULT_MAX_STEPS``, what the registered ids carry) yields to it; any other
    value must equal it.

    Raises:
        ValueError: Both were given and differ: Gymnasium's ``TimeLimit`` would cut the
            episode unscored, or never.
    """
    if max_episode_steps is None or max_episode_steps == max_steps:
        return max_steps
    if max_steps != DEFAULT_MAX_STEPS:
        raise ValueError(
            f"max_steps={max_steps} and max_episode_steps={max_episode_steps} disagree: "
            "give one of them (the env scores the episode at its last step, and Gymnasium's "
            "TimeLimit would end it at the other)"
        )
    return max_episode_steps


@dataclass(frozen=True)
class EnvConfig:
    """Everything that shapes an episode besides the provider and the tasks.

    Attributes:
        action_format: Dialect of the actions ``step`` receives.
        dialect_options: Extra options of the dialect's parser (e.g. UI-TARS coordinates).
        max_steps: Step limit (OSWorld's runners and ARPO use 15).
        hard: OSWorld-Hard: no FAIL replacement on the last allowed step.
        parse_error_ends_episode: End the episode on unparsable output (ARPO) instead of a
            no-op step.
        screen_size: (width, height) in pixels of the desktop and of observations.
        settle: Observe only once the screen stopped changing (bounded by settle_timeout).
        settle_timeout: Seconds to wait at most for the screen to stop changing (an animation
            alone ends the wait here).
        settle_quiet: Seconds without change that count as settled; None: the mode's default
            (``SETTLE_QUIET``: 0.03 s for ``"events"``, 0.2 s for ``"poll"``).
        settle_mode: ``"events"`` (default) waits on X damage and window events and holds
            while work is pending (a new process using CPU, an app busy since the action, a
            dialog that got Enter, startup notification, busy cursor), then ``settle_quiet``
            of stillness; ``"poll"`` compares full frames until ``settle_quiet`` passes
            without change (blind to apps that work without drawing). A guest without the
            events mode (OSWorld's own server, an old image) is polled.
            ``info["settle_end"]`` and ``info["settle_pending"]`` say how each observation's
            wait ended.
        settle_launch_timeout: ``"events"`` only: seconds the wait may last while work is
            pending, e.g. an app's first start (never less than ``settle_timeout``).
        reset_settle_quiet: The same as ``settle_quiet`` for the first observation after a
            reset (apps that the setup just started draw in phases); None: the mode's default
            (``RESET_SETTLE_QUIET``, or ``RESET_SETTLE_QUIET_AFTER_LAUNCH`` after a setup that
            started or opened an app).
        frame_format: How each observation's frame travels from the guest: ``"raw"`` RGB
            (default: no encoding on either side; through shared memory on a local desktop),
            ``"png"`` (lossless, for desktops across a network, e.g. ``remote`` guests: a
            1080p desktop's frame is ~6 MB raw, ~0.1-0.5 MB as PNG, for ~20 ms of guest CPU)
            or ``"jpeg"`` (lossy, fewest bytes: the observation then carries JPEG's artefacts).
            ``frame_quality`` is the JPEG quality.
        frame_quality: JPEG quality of ``frame_format="jpeg"`` (1-100).
        accessibility_tree: Add OSWorld's XML accessibility tree to observations (costly:
            0.1-10 s a step depending on the apps).
        wait_seconds: Seconds a WAIT action without a length waits.
        max_wait_seconds: Cap on a WAIT action's length.
        open_file_timeout: Seconds an ``open`` setup step waits for its window.
        restart_attempts: Relaunches ``reset`` tries after infrastructure faults.
        cache_dir: Host folder of the task asset cache (default ``~/.cache/osworld-gym``).
        offline: Never download task assets; they must be in the cache.
        client_password: The desktop user's password (OSWorld's ``{CLIENT_PASSWORD}``).
        evaluation: ``"osworld"`` (default) scores exactly as OSWorld's code, bugs included;
            ``"fixed"`` corrects the metrics docs/concepts/evaluation.md#fixed-mode lists.
        evaluator_reference: Which OSWorld's evaluator code scores follow:
            ``"osworld-2026.04"`` (default: the code that goes with the task files) or
            ``"osworld-1.0.2"`` (desktop-env 1.0.2, to reproduce numbers of that era);
            recorded in ``info`` and run summaries (``osworld_gym.evaluation.references``).
    """

    action_format: str = "uitars"
    dialect_options: tuple[tuple[str, Any], ...] = ()
    max_steps: int = DEFAULT_MAX_STEPS
    hard: bool = False
    parse_error_ends_episode: bool = False
    screen_size: tuple[int, int] = (1920, 1080)
    settle: bool = True
    settle_timeout: float = 3.0
    settle_quiet: float | None = None
    settle_mode: str = "events"
    settle_launch_timeout: float = 30.0
    reset_settle_quiet: float | None = None
    frame_format: str = "raw"
    frame_quality: int = 85
    accessibility_tree: bool = False
    wait_seconds: float = 1.0
    max_wait_seconds: float = 10.0
    open_file_timeout: float = 60.0
    restart_attempts: int = 2
    cache_dir: str | None = None
    offline: bool = False
    client_password: str = "password"
    evaluation: str = "osworld"
    evaluator_reference: str = DEFAULT_REFERENCE

    def __post_init__(self) -> None:
        if self.action_format not in ACTION_FORMATS:
            raise ValueError(
                f"action_format must be one of {ACTION_FORMATS}, got {self.action_format!r}"
            )
        if self.evaluation not in EVALUATION_MODES:
            raise ValueError(
                f"evaluation must be one of {EVALUATION_MODES}, got {self.evaluation!r}"
            )
        check_reference(self.evaluator_reference)
        if self.settle_mode not in SETTLE_MODES:
            raise ValueError(f"settle_mode must be one of {SETTLE_MODES}, got {self.settle_mode!r}")
        if self.frame_format not in FRAME_FORMATS:
            raise ValueError(
                f"frame_format must be one of {FRAME_FORMATS}, got {self.frame_format!r}"
            )
        if not 1 <= self.frame_quality <= 100:
            raise ValueError(f"frame_quality must be in [1, 100], got {self.frame_quality}")
        if not 0 < self.settle_timeout <= 60:
            raise ValueError(f"settle_timeout must be in (0, 60], got {self.settle_timeout}")
        if not self.settle_timeout <= self.settle_launch_timeout <= 120:
            raise ValueError(
                "settle_launch_timeout must be in [settle_timeout, 120], "
                f"got {self.settle_launch_timeout}"
            )
        for name in ("settle_quiet", "reset_settle_quiet"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 10:
                raise ValueError(f"{name} must be None or in [0, 10], got {value}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        width, height = self.screen_size
        if width < 64 or height < 64:
            raise ValueError(f"screen_size must be at least 64x64, got {self.screen_size}")
        if isinstance(self.dialect_options, Mapping):
            object.__setattr__(self, "dialect_options", tuple(sorted(self.dialect_options.items())))

    def quiet(self, mode: str, reset: bool = False, launched: bool = False) -> float:
        """The quiet period of an observation settled in ``mode`` (after a reset or a step).

        ``launched``: the reset's setup started or opened an app (``LAUNCHING_STEPS``).
        """
        if not reset:
            chosen, defaults = self.settle_quiet, SETTLE_QUIET
        elif launched:
            chosen, defaults = self.reset_settle_quiet, RESET_SETTLE_QUIET_AFTER_LAUNCH
        else:
            chosen, defaults = self.reset_settle_quiet, RESET_SETTLE_QUIET
        return chosen if chosen is not None else defaults[mode]

    def replace(self, **changes: Any) -> EnvConfig:
        """A copy with some fields changed; unknown names raise ``TypeError`` naming them."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown OSWorldEnv option(s) {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Timings(Mapping[str, float]):
    """Seconds spent per phase of a reset or step (``action``, ``observe``, ``evaluate``, ...).

    A read-only mapping. Two records compare equal when they cover the same phases: they are
    measurements, not state, so the same transition run twice (as Gymnasium's determinism
    checks do) gives equal infos. Compare values explicitly when you need to.
    """

    seconds: Mapping[str, float] = field(default_factory=dict)

    def __getitem__(self, phase: str) -> float:
        return self.seconds[phase]

    def __iter__(self) -> Iterator[str]:
        return iter(self.seconds)

    def __len__(self) -> int:
        return len(self.seconds)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timings):
            return NotImplemented
        return set(self.seconds) == set(other.seconds)

    def __hash__(self) -> int:
        return hash(frozenset(self.seconds))

    @property
    def total(self) -> float:
        """Sum of all phases."""
        return sum(self.seconds.values())
