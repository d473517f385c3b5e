"""Complete observations per action: our settled screenshot vs OSWorld's fixed 2 s pause.

    nice -n 5 python benchmarks/bench_settle.py [--trials 3] [--screen 1920x1080]
        [--ours "settle_mode=events,settle_quiet=0.03" ...] [--only ACTION ...] [--dump DIR]
        [--no-defaults]

On one ``local`` desktop, each action of a fixed set runs ``--trials`` times in every mode, each
time on a freshly reset desktop prepared for it (apps started, windows mapped, the screen still).
Fast actions: a focus click between two terminals, typing into a terminal and into a text
editor, opening a menu, a file dialog, LibreOffice's Format Cells. Slow ones: LibreOffice Calc,
GIMP and Chromium launched from a terminal (typed command + Enter) and from the desktop's
(openbox) menu, a large spreadsheet opened through Calc's Open dialog, a save-as.

Modes, the same input in each:
  * ``osworld``: the input as pyautogui code through ``/execute``, a fixed 2 s pause, a PNG
    ``/screenshot`` (OSWorld's ``DesktopEnv.step(action, pause=2)``);
  * ``ours``: the input through the typed ``/actions`` endpoint, then a raw ``/screenshot`` with
    ``settle=1`` and the env's defaults (every ``settle_*`` field of ``EnvConfig``);
  * ``ours+1``, ``ours+2``...: one per ``--ours "key=value,key=value"``, the same with these
    screenshot query options on top of the defaults, e.g. ``--ours settle_quiet=0.05``. Options
    go to the guest as they are, so a new settle mode is compared by naming its options
    (``--ours settle_mode=events,settle_quiet=0.03``). The guest reads only the option names it
    knows: with an unknown name the variant measures the defaults; a bad value of a known one
    is answered 400 and shows as an error.

Complete: the observation matches a frame taken 2 s after it, and the final frame (taken once
the action's end condition holds, e.g. its window is listed, and the screen then stayed
unchanged for 1.5 s). Frames match when no pixel differs, except inside a 64x64 box around the
pointer (its shape changes, busy cursor to arrow, and xterm hides it while typing) and except
when every differing pixel lies in one box at most 4 px wide and 40 px tall: a blinking text
caret. Xvfb renders deterministically, so no tolerance on colours is needed.

Prints per action and mode the median step latency (input sent until the screenshot's bytes
arrived) and the complete observations (k/n), side by side, with the speed-up of each of ours
over osworld; then the guest server's CPU time per step (the process itself, and its reaped
children: the ``python -c`` of OSWorld's way); then each incomplete observation with what
differed. ``--dump DIR`` saves those observations and their reference frames as PNGs.
Needs psutil (the ``test`` extra) and openpyxl (``eval``). Targets (issue 20): every
observation complete, fast steps <= 150 ms median at 1920x1080 and >= 15x faster than osworld,
guest CPU per step at least halved.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from PIL import Image

from osworld_gym.env_config import EnvConfig
from osworld_gym.guest import protocol
from osworld_gym.guest.client import Screenshot
from osworld_gym.guest.x11 import X11Session
from osworld_gym.providers.local.provider import LocalDesktop, LocalProvider, LocalProviderConfig

OSWORLD_PAUSE = 2.0  # DesktopEnv.step(action, pause=2): part of what is measured
REFERENCE_DELAY = 2.0  # the "2 s later" frame each observation is compared with
POINTER_BOX = 32  # half the side of the box around the pointer left out of comparisons
CARET_MAX = (4, 40)  # width, height of a change that counts as a blinking caret
PREP_QUIET = 1.0  # seconds the prepared screen must stay unchanged before the step
FINAL_QUIET = 1.5  # ... and after the action's end condition, for the final frame
STILL_TIMEOUT = 60.0
WINDOW_TIMEOUT = 120.0  # GIMP's first start on a fresh HOME takes 5-10 s here; margin
DIALOG_TIMEOUT = 30.0
POLL = 0.1
HOME = "/home/user"  # the desktop's HOME inside its sandbox
LARGE_ROWS = 120_000  # rows x 10 columns: Calc takes a few seconds to load it

# xterm keeps the title it is given: Debian's bashrc would retitle it "user@host: dir".
XTERM = ["xterm", "-xrm", "XTerm*allowTitleOps: false"]
# Chromium through the project's google-chrome wrapper (own profile, quiet first start,
# debugging on loopback) with the no-network flags the project's tests use; a local page.
CHROMIUM = (
    "google-chrome --disable-background-networking --disable-component-update --disable-sync "
    f"--disable-default-apps file://{HOME}/bench.html"
)
MENU_ITEMS = (
    ("LibreOffice Calc", "soffice --calc"),
    ("GIMP", "gimp"),
    ("Chromium", CHROMIUM),
)
# The desktop's right-click menu, as a desktop's app menu: these apps, with startup
# notification (the busy cursor) as desktop menus launch apps.
MENU_XML = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_menu xmlns="http://openbox.org/">
<menu id="root-menu" label="Apps">
{items}</menu>
</openbox_menu>
"""
MENU_ITEM = (
    '  <item label="{label}"><action name="Execute"><command>{command}</command>'
    "<startupnotify><enabled>yes</enabled></startupnotify></action></item>\n"
)
PAGE = "<!doctype html><title>bench page</title><h1>Settle benchmark</h1><p>A local page.</p>\n"


# --- frames and their comparison ----------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    pixels: int
    box: tuple[int, int, int, int]  # x0, y0, x1, y1

    def __str__(self) -> str:
        x0, y0, x1, y1 = self.box
        return f"{self.pixels} px in ({x0},{y0})-({x1},{y1})"


def difference(a: np.ndarray, b: np.ndarray, pointer: tuple[int, int] | None) -> Difference | None:
    """What differs between two frames, None when they match (see the module doc).

    ``pointer``: where the pointer is, left out of the comparison; None for frames without it.
    """
    changed = np.any(a != b, axis=2)
    if pointer is not None:
        x, y = pointer
        top, left = max(0, y - POINTER_BOX), max(0, x - POINTER_BOX)
        changed[top : y + POINTER_BOX, left : x + POINTER_BOX] = False
    ys, xs = np.nonzero(changed)
    if not len(ys):
        return None
    box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
    if box[2] - box[0] <= CARET_MAX[0] and box[3] - box[1] <= CARET_MAX[1]:
        return None
    return Difference(len(ys), box)


class Bench:
    """One desktop and the helpers that prepare it: windows, frames, waits with deadlines."""

    def __init__(self, desktop: LocalDesktop) -> None:
        self.desktop = desktop
        self.client = desktop.client
        self._x11: X11Session | None = None

    def fresh(self) -> None:
        """Reset the desktop (apps killed, HOME restored) and wait for its window manager."""
        self.desktop.reset()
        if self._x11 is not None:
            self._x11.close()
        # A new connection each time: a reset may have restarted the X server.
        self._x11 = X11Session(self.desktop.display)
        deadline = time.monotonic() + 15
        while self.x11.window_manager() is None:
            if time.monotonic() > deadline:
                raise TimeoutError("no window manager after the reset")
            time.sleep(POLL)

    @property
    def x11(self) -> X11Session:
        """A connection of the benchmark's own to the display, for window and pointer queries."""
        assert self._x11 is not None, "fresh() first"
        return self._x11

    def close(self) -> None:
        if self._x11 is not None:
            self._x11.close()

    def frame(self, cursor: bool = True) -> np.ndarray:
        """The screen now, as the observation shows it (raw, pointer drawn in, no settle)."""
        return self.client.screenshot(format="raw", cursor=cursor).to_array()

    def pointer(self) -> tuple[int, int]:
        return self.x11.cursor_position()

    def wait_still(self, quiet: float = PREP_QUIET, timeout: float = STILL_TIMEOUT) -> np.ndarray:
        """Poll frames until none changed for ``quiet`` seconds; returns the last one."""
        frame, stable = self.still_frame(quiet, timeout)
        if not stable:
            raise TimeoutError(f"the screen kept changing for {timeout:g} s")
        return frame

    def still_frame(self, quiet: float, timeout: float) -> tuple[np.ndarray, bool]:
        deadline = time.monotonic() + timeout
        last, since = self.frame(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(POLL)  # poll interval of a condition wait, bounded by the deadline
            frame = self.frame()
            if difference(last, frame, self.pointer()) is not None:
                last, since = frame, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return frame, True
        return last, False

    def wait_window(self, title: str, timeout: float = WINDOW_TIMEOUT) -> bool:
        """Wait until a window whose title contains ``title`` (any case) is listed."""
        deadline = time.monotonic() + timeout
        while not self.x11.find_windows(title):
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL)
        return True

    def window(self, title: str, timeout: float = WINDOW_TIMEOUT) -> None:
        """Wait for a window, then for the screen to be still."""
        # An app that just mapped its window may not take input yet: Calc drops a Ctrl+O sent
        # as soon as its window is listed.
        if not self.wait_window(title, timeout):
            raise TimeoutError(f"no window {title!r} after {timeout:g} s")
        self.wait_still()

    def rect(self, title: str) -> tuple[int, int, int, int]:
        rect = self.x11.window_rect(self.x11.find_windows(title)[0].window_id)
        assert rect is not None
        return rect

    def launch(self, command: list[str] | str, title: str) -> None:
        self.client.launch(command, shell=isinstance(command, str))
        self.window(title)

    def act(self, *actions: dict[str, Any]) -> None:
        """Input during preparation (through the typed endpoint: fast, not measured)."""
        self.client.actions(list(actions))


# --- the actions --------------------------------------------------------------------------

Inputs = list[dict[str, Any]]


def type_(text: str) -> dict[str, Any]:
    return {"kind": "type", "text": text}


def hotkey(*keys: str) -> dict[str, Any]:
    return {"kind": "hotkey", "keys": list(keys)}


def click(x: int, y: int) -> dict[str, Any]:
    return {"kind": "click", "x": x, "y": y}


ENTER = {"kind": "press", "key": "enter"}


def terminal(b: Bench) -> None:
    b.launch([*XTERM, "-title", "bench-term"], "bench-term")


def editor(b: Bench) -> None:
    b.launch(["mousepad"], "Mousepad")


def calc(b: Bench) -> None:
    b.launch(["soffice", "--calc"], "LibreOffice Calc")


def prep_focus_click(b: Bench) -> Inputs:
    # Two terminals side by side (the desktop maximizes new windows; wmctrl undoes it), the
    # right one focused: the click focuses the left one (title bars and text cursors change).
    width, height = b.x11.screen_size()
    half = width // 2
    for title, left in (("bench-left", 0), ("bench-right", half)):
        b.launch([*XTERM, "-title", title], title)
        b.client.execute(["wmctrl", "-r", title, "-b", "remove,maximized_vert,maximized_horz"])
        b.client.execute(["wmctrl", "-r", title, "-e", f"0,{left},0,{half - 10},{height - 60}"])
    b.client.activate_window("bench-right")
    return [click(half // 2, height // 2)]


def prep_type_terminal(b: Bench) -> Inputs:
    terminal(b)
    return [type_("echo the quick brown fox jumps over the lazy dog\n")]


def prep_type_editor(b: Bench) -> Inputs:
    editor(b)
    return [type_("The quick brown fox jumps over the lazy dog. 0123456789")]


def prep_open_menu(b: Bench) -> Inputs:
    editor(b)
    x, y, _, _ = b.rect("Mousepad")
    return [click(x + 18, y + 12)]  # "File" in the menu bar, just under the title bar


def prep_file_dialog(b: Bench) -> Inputs:
    editor(b)
    return [hotkey("ctrl", "o")]


def prep_format_cells(b: Bench) -> Inputs:
    calc(b)
    return [hotkey("ctrl", "1")]


def prep_launch_from_terminal(command: str) -> Callable[[Bench], Inputs]:
    def prepare(b: Bench) -> Inputs:
        terminal(b)
        return [type_(f"{command} &\n")]

    return prepare


def prep_launch_from_menu(label: str) -> Callable[[Bench], Inputs]:
    def prepare(b: Bench) -> Inputs:
        # Right-click the empty desktop until openbox shows its menu (right after a reset it
        # may not have grabbed the button yet), then click the item: items are equally tall.
        # Frames without the pointer: what differs from the empty desktop is the menu alone.
        empty = b.frame(cursor=False)
        deadline = time.monotonic() + 20
        menu = None
        while menu is None:
            if time.monotonic() > deadline:
                raise TimeoutError("the desktop's menu did not open")
            b.act({"kind": "right_click", "x": 200, "y": 150})
            b.wait_still(0.3)
            menu = difference(empty, b.frame(cursor=False), None)
            if menu is None:
                b.act({"kind": "press", "key": "escape"})
        x0, y0, _, y1 = menu.box
        index = [item for item, _ in MENU_ITEMS].index(label)
        row = (y1 - y0) / len(MENU_ITEMS)
        return [click(x0 + 40, int(y0 + row * (index + 0.5)))]

    return prepare


def prep_open_large_file(b: Bench) -> Inputs:
    calc(b)
    b.act(hotkey("ctrl", "o"))
    b.window("Open", DIALOG_TIMEOUT)
    b.act(type_(f"{HOME}/big.xlsx"))  # GTK's chooser opens its location field on "/"
    return [ENTER]


def prep_save_as(b: Bench) -> Inputs:
    calc(b)
    b.act(type_("1\n2\n3\n"), hotkey("ctrl", "shift", "s"))
    b.window("Save", DIALOG_TIMEOUT)
    b.act(type_("saved"))  # replaces the selected "Untitled 1"; ODS, no format question
    return [ENTER]


@dataclass(frozen=True)
class Action:
    name: str
    fast: bool
    prepare: Callable[[Bench], Inputs]  # sets the desktop up, returns the measured input
    done: str | None = None  # a window title that shows the action finished


ACTIONS = (
    Action("focus-click", True, prep_focus_click),
    Action("type-terminal", True, prep_type_terminal),
    Action("type-editor", True, prep_type_editor),
    Action("open-menu", True, prep_open_menu),
    Action("file-dialog", True, prep_file_dialog, "Open File"),
    Action("format-cells", True, prep_format_cells, "Format Cells"),
    Action("calc-terminal", False, prep_launch_from_terminal("soffice --calc"), "Calc"),
    Action("gimp-terminal", False, prep_launch_from_terminal("gimp"), "GNU Image"),
    Action("chromium-terminal", False, prep_launch_from_terminal(CHROMIUM), "Chromium"),
    Action("calc-menu", False, prep_launch_from_menu("LibreOffice Calc"), "Calc"),
    Action("gimp-menu", False, prep_launch_from_menu("GIMP"), "GNU Image"),
    Action("chromium-menu", False, prep_launch_from_menu("Chromium"), "Chromium"),
    Action("open-large-file", False, prep_open_large_file, "big.xlsx"),
    Action("save-as", False, prep_save_as, "saved.ods"),
)


# --- modes and trials ---------------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    name: str
    options: dict[str, str] | None  # screenshot query options; None: OSWorld's way

    def describe(self) -> str:
        if self.options is None:
            return "pyautogui code via /execute, fixed 2 s pause, PNG /screenshot"
        query = "&".join(f"{k}={v}" for k, v in self.options.items())
        return f"/actions, then /screenshot?{query}"


def parse_options(text: str) -> dict[str, str]:
    options = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected key=value[,key=value...], got {text!r}")
        options[key.strip()] = value.strip()
    return options


def make_modes(variants: list[dict[str, str]], with_defaults: bool = True) -> list[Mode]:
    # "ours" is the env's observation with the env's settle defaults, whichever settle_* fields
    # EnvConfig has (a new one is compared at its default without editing this file).
    defaults = EnvConfig()
    ours = {"format": "raw", "cursor": "1", "settle": "1"}
    for name in (f.name for f in dataclasses.fields(EnvConfig) if f.name.startswith("settle_")):
        value = getattr(defaults, name)
        if name == "settle_quiet":
            value = defaults.quiet(defaults.settle_mode)  # None: the mode's own default
        if name == "settle_launch_timeout" and defaults.settle_mode != "events":
            continue
        ours[name] = f"{value:g}" if isinstance(value, float) else str(value)
    modes = [Mode("osworld", None)] + ([Mode("ours", ours)] if with_defaults else [])
    modes += [Mode(f"ours+{i}", ours | extra) for i, extra in enumerate(variants, 1)]
    return modes


@dataclass
class Trial:
    action: str
    mode: str
    index: int
    latency: float = 0.0
    cpu_self: float = 0.0  # guest server CPU seconds during the step
    cpu_children: float = 0.0  # ... of its children that exited during it
    later: Difference | None = None  # vs the frame 2 s after the observation
    final: Difference | None = None  # vs the final frame
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None and self.later is None and self.final is None


def observe(b: Bench, mode: Mode, inputs: Inputs) -> tuple[np.ndarray, dict[str, str]]:
    """One step in ``mode``; returns the observation and the guest's settle headers."""
    if mode.options is None:
        result = b.client.execute(["python", "-c", protocol.to_pyautogui_code(inputs)])
        if result.returncode != 0:
            raise RuntimeError(f"pyautogui code failed: {result.error.strip()[-300:]}")
        time.sleep(OSWORLD_PAUSE)  # OSWorld's fixed pause, reproduced on purpose
        return b.client.screenshot(format="png").to_array(), {}
    b.client.actions(inputs)
    # The client's screenshot() has fixed keywords; the request is built here so any option,
    # known to today's guest or not, reaches it as it is.
    wait = float(mode.options.get("settle_timeout", 3.0))
    response = b.client._request(  # noqa: SLF001 - the benchmark passes options through
        "GET",
        "/screenshot",
        idempotent=True,
        params=mode.options,
        timeout=b.client.config.timeout + wait,
    )
    headers = {k: v for k, v in response.headers.items() if k.lower().startswith("x-settle")}
    shot = Screenshot(
        response.content,
        response.headers.get("Content-Type", "image/png"),
        int(response.headers.get("X-Image-Width", 0)),
        int(response.headers.get("X-Image-Height", 0)),
    )
    return shot.to_array(), headers


def run_trial(b: Bench, action: Action, mode: Mode, index: int, dump: Path | None) -> Trial:
    trial = Trial(action.name, mode.name, index)
    try:
        b.fresh()
        inputs = action.prepare(b)
        b.wait_still()  # nothing left over from the preparation moves during the step
        guest = psutil.Process(b.desktop.component_pid("guest"))
        before = guest.cpu_times()
        start = time.perf_counter()
        obs, headers = observe(b, mode, inputs)
        trial.latency = time.perf_counter() - start
        after = guest.cpu_times()
    except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
        trial.error = f"{type(e).__name__}: {e}"
        return trial
    trial.cpu_self = (after.user + after.system) - (before.user + before.system)
    trial.cpu_children = (after.children_user + after.children_system) - (
        before.children_user + before.children_system
    )
    trial.notes += [f"{k}={v}" for k, v in headers.items()]
    pointer = b.pointer()  # no input follows: the pointer stays where the step left it
    time.sleep(REFERENCE_DELAY)  # the reference frame "2 s later" is part of the definition
    later = b.frame()
    if action.done and not b.wait_window(action.done):
        trial.notes.append(f"no window {action.done!r} after {WINDOW_TIMEOUT:g} s")
    final, stable = b.still_frame(FINAL_QUIET, STILL_TIMEOUT)
    if not stable:
        trial.notes.append("final frame not still")
    trial.later = difference(obs, later, pointer)
    trial.final = difference(obs, final, pointer)
    if dump is not None and not trial.complete:
        for name, frame in (("obs", obs), ("later", later), ("final", final)):
            Image.fromarray(frame).save(dump / f"{action.name}-{mode.name}-{index}-{name}.png")
    return trial


# --- the large file and the desktop's HOME --------------------------------------------------


def write_home_template(folder: Path) -> None:
    """Files every fresh HOME gets: the desktop menu, the page, the large spreadsheet."""
    try:
        import openpyxl
    except ImportError as e:
        raise SystemExit("the large file needs openpyxl: pip install -e '.[eval]'") from e
    menu = folder / ".config" / "openbox" / "menu.xml"
    menu.parent.mkdir(parents=True)
    items = "".join(MENU_ITEM.format(label=label, command=cmd) for label, cmd in MENU_ITEMS)
    menu.write_text(MENU_XML.format(items=items))
    (folder / "bench.html").write_text(PAGE)
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("data")
    sheet.append([f"col{i}" for i in range(10)])
    for r in range(LARGE_ROWS):
        sheet.append(
            [r, r * 1.5, f"item {r}", r % 97, r * r % 1000, f"group {r % 13}", r / 7, r % 2 == 0]
            + [r * 3, f"note {r % 101}"]
        )
    book.save(folder / "big.xlsx")


# --- report ---------------------------------------------------------------------------------


def median_ms(trials: list[Trial]) -> float | None:
    samples = [t.latency for t in trials if t.error is None]
    return statistics.median(samples) * 1000 if samples else None


def cell(trials: list[Trial], reference: float | None, with_speedup: bool) -> str:
    ms = median_ms(trials)
    ok = sum(t.complete for t in trials)
    text = f"{'-' if ms is None else f'{ms:.0f}':>8} {f'{ok}/{len(trials)}':>6}"
    if with_speedup:
        ratio = f"{reference / ms:.1f}x" if ms and reference else "-"
        text += f" {ratio:>7}"
    return text


def report(trials: list[Trial], modes: list[Mode], actions: list[Action]) -> None:
    def pick(action: Action | None, mode: Mode, fast: bool | None = None) -> list[Trial]:
        names = {a.name for a in actions if fast is None or a.fast == fast}
        return [
            t
            for t in trials
            if t.mode == mode.name and (t.action == action.name if action else t.action in names)
        ]

    print()
    widths = [15 if m.options is None else 23 for m in modes]
    head1 = " ".join(f"{m.name:^{w}}" for m, w in zip(modes, widths, strict=True))
    head2 = " ".join(
        f"{'ms':>8} {'compl':>6}" + ("" if m.options is None else f" {'speedup':>7}") for m in modes
    )
    print(f"{'':<24} {head1}")
    print(f"{'action':<24} {head2}")
    rows: list[tuple[str, Action | None, bool | None]] = [(a.name, a, None) for a in actions]
    rows += [("all fast actions", None, True), ("all slow actions", None, False)]
    rows += [("all actions", None, None)]
    for label, action, fast in rows:
        if action is None and label == "all fast actions":
            print("-" * (25 + len(head2)))
        osworld = median_ms(pick(action, modes[0], fast))
        cells = [cell(pick(action, m, fast), osworld, m.options is not None) for m in modes]
        print(f"{label:<24} {' '.join(cells)}")

    print()
    # Mean, not median: CPU times tick in 10 ms steps, a sum over the steps keeps the precision.
    print("guest CPU ms per step, mean: server process / its children that exited")
    print(f"{'action':<24} " + " ".join(f"{m.name:>15}" for m in modes))
    for label, action, fast in rows:
        cells = []
        for m in modes:
            done = [t for t in pick(action, m, fast) if t.error is None]
            if not done:
                cells.append(f"{'-':>15}")
                continue
            own = statistics.fmean(t.cpu_self for t in done) * 1000
            kids = statistics.fmean(t.cpu_children for t in done) * 1000
            cells.append(f"{f'{own:.0f} / {kids:.0f}':>15}")
        print(f"{label:<24} " + " ".join(cells))

    problems = [t for t in trials if not t.complete]
    print()
    print(f"incomplete observations: {len(problems)} of {len(trials)}")
    for t in problems:
        what = (
            t.error
            if t.error
            else "; ".join(
                f"vs {name}: {diff}"
                for name, diff in (("+2 s", t.later), ("final", t.final))
                if diff is not None
            )
        )
        notes = f" [{', '.join(t.notes)}]" if t.notes else ""
        print(f"  {t.action} {t.mode} #{t.index}: {what}{notes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--screen", default="1920x1080", help="WxH")
    parser.add_argument(
        "--ours",
        action="append",
        type=parse_options,
        default=[],
        metavar="KEY=VALUE[,...]",
        help="another of our modes: screenshot options on top of the defaults (repeatable)",
    )
    parser.add_argument("--only", nargs="+", choices=[a.name for a in ACTIONS], metavar="ACTION")
    parser.add_argument("--dump", type=Path, help="save incomplete observations' frames here")
    parser.add_argument(
        "--no-defaults", action="store_true", help="leave out the env defaults' mode (ours)"
    )
    args = parser.parse_args()
    width, height = (int(v) for v in args.screen.lower().split("x"))
    actions = [a for a in ACTIONS if not args.only or a.name in args.only]
    modes = make_modes(args.ours, with_defaults=not args.no_defaults)
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)

    template = Path(tempfile.mkdtemp(prefix="bench-settle-"))
    trials: list[Trial] = []
    try:
        write_home_template(template)
        config = LocalProviderConfig(screen_size=(width, height), home_template=str(template))
        with LocalProvider(config).launch() as desktop:
            bench = Bench(desktop)
            try:
                print(f"screen {width}x{height}, {args.trials} trials per action and mode")
                for mode in modes:
                    print(f"  {mode.name:<8} {mode.describe()}")
                for action in actions:
                    started = time.monotonic()
                    # Modes alternate within each trial, so a drift in the host's load hits
                    # all of them alike.
                    for index in range(1, args.trials + 1):
                        for mode in modes:
                            trials.append(run_trial(bench, action, mode, index, args.dump))
                    print(f"  {action.name}: {time.monotonic() - started:.0f} s", flush=True)
            finally:
                bench.close()
    finally:
        shutil.rmtree(template, ignore_errors=True)
    report(trials, modes, actions)


if __name__ == "__main__":
    main()
