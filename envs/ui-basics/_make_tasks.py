"""Generate the task files of the ``ui-basics`` suite (``examples/<domain>/<id>.json``).

    python envs/ui-basics/_make_tasks.py            # write the task files
    python envs/ui-basics/_make_tasks.py --check    # only compare with the committed files
    python scripts/make_suite_index.py envs/ui-basics

Button dialogs are ``xmessage`` windows with the X server's built-in ``fixed`` font and
``overrideRedirect`` set, so neither fonts installed on the host nor the window manager change
where they appear. Their layout is not computed here but measured: each dialog is opened on a
real ``local`` desktop with the task's own launch command, and the window tree is read through
Xlib. The measured boxes go into each task's ``ui_basics`` key, which the oracle
(``osworld_gym.policies.oracles.ui_basics``) reads; the setup's readiness check names the measured
window geometry, so a host that lays a dialog out differently fails at reset instead of
scoring the oracle 0. Output is deterministic: running the script again leaves the files as
they are.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("make_ui_basics")

ROOT = Path(__file__).resolve().parent
SCREEN_SIZE = (336, 224)
"""The suite's screen: both sides are multiples of 28, so Qwen2.5-VL sees it unresized."""

ANSWER_FILE = "~/answer.txt"
DIALOG_TOP = 40  # centred dialogs sit above the pointer, which a reset puts mid-screen
CORNER_MARGIN = 12
MEASURE_TIMEOUT = 10.0

# Colour buttons: background and label colour, chosen for contrast with each other and black.
COLOURS = {
    "Red": ("#d83c3c", "white"),
    "Green": ("#38a848", "black"),
    "Blue": ("#3c64d8", "white"),
    "Yellow": ("#e8c828", "black"),
}

# Resources shared by every dialog. Each name is at least as specific as the line of Debian's
# app-defaults file it overrides (Xrm prefers the more specific name, then the later source).
_XMESSAGE_RESOURCES = (
    "xmessage.overrideRedirect: true",
    "*message.scrollVertical: Never",
    "*message.scrollHorizontal: Never",
    "*message.borderWidth: 0",
    "*message.displayCaret: false",
    "*Command.shapeStyle: Rectangle",
    "*Command.internalWidth: 8",
    "*Command.internalHeight: 6",
    "*Command.highlightThickness: 1",
    "*Command.background: gray85",
    "*background: white",
    "*foreground: black",
)


@dataclass(frozen=True)
class ButtonTask:
    """A dialog task: click ``answer`` among ``buttons``.

    Attributes:
        id: Task id.
        domain: Family (folder under ``examples/``).
        instruction: What the agent is told.
        message: The dialog's text line.
        buttons: Labels, left to right.
        answer: The label to click.
        coloured: Paint each button in the colour it names.
        place: ``"top"`` (centred near the top), an edge's middle ``"left"``, ``"right"``,
            ``"bottom"``, or a corner ``"tl"``, ``"tr"``, ``"bl"``, ``"br"``.
    """

    id: str
    domain: str
    instruction: str
    message: str
    buttons: tuple[str, ...]
    answer: str
    coloured: bool = False
    place: str = "top"


@dataclass(frozen=True)
class TypeTask:
    """A terminal task: type ``word`` and press Enter."""

    id: str
    word: str


def _click(label: str) -> str:
    return f"Click the {label} button."


COLOUR_ORDERS = (
    # (order, answer): every colour is the answer twice, at two different positions, and
    # every position holds the answer twice, so neither the word nor the place alone solves it.
    (("Red", "Green", "Blue", "Yellow"), "Red"),
    (("Green", "Blue", "Yellow", "Red"), "Red"),
    (("Blue", "Green", "Red", "Yellow"), "Green"),
    (("Yellow", "Red", "Blue", "Green"), "Green"),
    (("Green", "Yellow", "Blue", "Red"), "Blue"),
    (("Blue", "Red", "Green", "Yellow"), "Blue"),
    (("Red", "Yellow", "Green", "Blue"), "Yellow"),
    (("Blue", "Green", "Yellow", "Red"), "Yellow"),
    # 09-16: each colour twice more, elsewhere in the row (Green is in slot 1 in 03 and in 12,
    # at different x: the button before it differs). One fixed click point per instruction now
    # solves at most 6 of the 16, against 4 of 8 before (tests/suite/test_ui_basics.py).
    (("Green", "Red", "Yellow", "Blue"), "Red"),
    (("Yellow", "Blue", "Red", "Green"), "Red"),
    (("Green", "Yellow", "Red", "Blue"), "Green"),
    (("Yellow", "Green", "Blue", "Red"), "Green"),
    (("Yellow", "Blue", "Green", "Red"), "Blue"),
    (("Red", "Green", "Yellow", "Blue"), "Blue"),
    (("Yellow", "Red", "Blue", "Green"), "Yellow"),
    (("Green", "Red", "Blue", "Yellow"), "Yellow"),
)
LABEL_ORDERS = (
    (("Open", "Save", "Print", "Close"), "Save"),
    (("Close", "Print", "Save", "Open"), "Open"),
    (("Print", "Open", "Close", "Save"), "Print"),
    (("Save", "Open", "Close", "Print"), "Close"),
    # 05-08: each label at a second position
    (("Save", "Close", "Open", "Print"), "Save"),
    (("Print", "Open", "Save", "Close"), "Open"),
    (("Close", "Save", "Open", "Print"), "Print"),
    (("Close", "Open", "Print", "Save"), "Close"),
)
OK_PLACES = ("tl", "tr", "bl", "br", "top", "left", "right", "bottom")
WORDS = ("apple", "river", "cloud", "tiger", "lemon", "piano")


def button_tasks() -> list[ButtonTask]:
    """Every dialog task of the suite."""
    tasks = [
        ButtonTask(
            id=f"click-colour-{i:02d}",
            domain="click_colour",
            instruction=_click(answer),
            message="Pick a colour:",
            buttons=order,
            answer=answer,
            coloured=True,
        )
        for i, (order, answer) in enumerate(COLOUR_ORDERS, start=1)
    ]
    tasks += [
        ButtonTask(
            id=f"click-label-{i:02d}",
            domain="click_label",
            instruction=_click(answer),
            message="Choose an action:",
            buttons=order,
            answer=answer,
        )
        for i, (order, answer) in enumerate(LABEL_ORDERS, start=1)
    ]
    tasks += [
        ButtonTask(
            id=f"find-ok-{i:02d}",
            domain="find_ok",
            instruction=_click("OK"),
            message="Continue?",
            buttons=("OK", "Cancel"),
            answer="OK",
            place=place,
        )
        for i, place in enumerate(OK_PLACES, start=1)
    ]
    return tasks


def type_tasks() -> list[TypeTask]:
    """Every terminal task of the suite."""
    return [TypeTask(id=f"type-word-{i:02d}", word=w) for i, w in enumerate(WORDS, start=1)]


# --- commands ----------------------------------------------------------------------------------


def xmessage_command(task: ButtonTask, x: int, y: int) -> str:
    """The shell command that opens the task's dialog at ``(x, y)`` (its outer corner).

    ``-print`` writes the clicked label and a newline to the answer file; ``LC_ALL=C`` keeps
    Xaw from building a font set for the UTF-8 locale (and warning about it).
    """
    resources = list(_XMESSAGE_RESOURCES)
    if task.coloured:
        for label in task.buttons:
            background, foreground = COLOURS[label]
            resources += [f"*{label}.background: {background}"]
            resources += [f"*{label}.foreground: {foreground}"]
    argv = ["xmessage", "-fn", "fixed"]
    for resource in resources:
        argv += ["-xrm", resource]
    argv += ["-geometry", f"+{x}+{y}", "-buttons", ",".join(task.buttons), "-print", task.message]
    return f"LC_ALL=C {shlex.join(argv)} > {ANSWER_FILE} 2>/dev/null"


def viewable_check(window: tuple[int, int, int, int]) -> str:
    """A shell test that succeeds once a top-level window with this geometry is viewable.

    Override-redirect windows carry no title or class (Xt sets none for them) and are not in
    the window manager's client list, so the check finds the dialog by its geometry, which
    also proves it is laid out as the task file says.
    """
    x, y, width, height = window
    pattern = f" {width}x{height}[+]{x}[+]{y} "
    return (
        f"for w in $(xwininfo -root -children | awk '/{pattern}/{{print $1}}'); do "
        'xwininfo -id "$w" | grep -q IsViewable && exit 0; done; exit 1'
    )


TERMINAL_TITLE = "Answer box"
# After the line is read the shell gives way to a sleep that reads nothing: the terminal stays
# as Enter left it. Were it to close, the frame after Enter would depend on the host's load (the
# shell's exit, then the terminal's, can come after the screen has been still long enough to
# be observed), and two runs of one seed would see different screens and train different models.
TERMINAL_SCRIPT = (
    f"printf 'Type here: '; read -r w; printf '%s\\n' \"$w\" > {ANSWER_FILE}; exec sleep infinity"
)


def xterm_command() -> list[str]:
    """The typing tasks' terminal: a prompt, one line read and written; then it stays open."""
    return [
        "xterm",
        "-T",
        TERMINAL_TITLE,
        "-fa",
        "DejaVu Sans Mono",
        "-fs",
        "12",
        "-e",
        "sh",
        "-c",
        TERMINAL_SCRIPT,
    ]


# --- measuring on a real desktop ---------------------------------------------------------------

Box = tuple[int, int, int, int]


def _dialog(conn: Any) -> Any | None:
    """The viewable override-redirect top-level window with content, if there is one."""
    from Xlib import X

    for window in conn.screen().root.query_tree().children:
        attributes = window.get_attributes()
        if not attributes.override_redirect or attributes.map_state != X.IsViewable:
            continue
        geometry = window.get_geometry()
        if geometry.width > 1 and geometry.height > 1:
            return window
    return None


def _box(conn: Any, window: Any) -> Box:
    """(x, y, width, height) of a window's inside, in root coordinates."""
    geometry = window.get_geometry()
    origin = conn.screen().root.translate_coords(window, 0, 0)
    return origin.x, origin.y, geometry.width, geometry.height


def measure(desktop: Any, command: str, labels: tuple[str, ...]) -> tuple[Box, dict[str, Box]]:
    """Open a dialog with ``command``; return its outer geometry and its buttons' boxes.

    The outer geometry is X's (border corner position, inside size), as ``xwininfo`` prints
    it. Buttons are the form's children below the message line, left to right.
    """
    from Xlib import display

    desktop.client.launch(command, shell=True)
    conn = display.Display(desktop.display)
    try:
        deadline = time.monotonic() + MEASURE_TIMEOUT
        while True:
            window = _dialog(conn)
            if window is not None:
                (form,) = window.query_tree().children
                children = form.query_tree().children
                if len(children) == len(labels) + 1:
                    break
            if time.monotonic() >= deadline:
                raise RuntimeError(f"no dialog appeared for {command!r}")
            time.sleep(0.02)
        geometry = window.get_geometry()
        outer = (geometry.x, geometry.y, geometry.width, geometry.height)
        boxes = sorted((_box(conn, child) for child in children), key=lambda b: (b[1], b[0]))
        message, buttons = boxes[0], boxes[1:]
        if any(b[1] != buttons[0][1] or b[1] <= message[1] for b in buttons):
            raise RuntimeError(f"unexpected dialog layout {boxes} for {command!r}")
        return outer, dict(zip(labels, buttons, strict=True))
    finally:
        conn.close()
        desktop.reset()  # closes the dialog


def _place(place: str, size: tuple[int, int]) -> tuple[int, int]:
    """The outer corner of a window of ``size`` (border included) at ``place``."""
    width, height = size
    screen_w, screen_h = SCREEN_SIZE
    right, bottom = screen_w - CORNER_MARGIN - width, screen_h - CORNER_MARGIN - height
    return {
        "top": ((screen_w - width) // 2, DIALOG_TOP),
        "left": (CORNER_MARGIN, (screen_h - height) // 2),
        "right": (right, (screen_h - height) // 2),
        "bottom": ((screen_w - width) // 2, bottom),
        "tl": (CORNER_MARGIN, CORNER_MARGIN),
        "tr": (right, CORNER_MARGIN),
        "bl": (CORNER_MARGIN, bottom),
        "br": (right, bottom),
    }[place]


# --- task files --------------------------------------------------------------------------------


def _task_json(
    task_id: str,
    instruction: str,
    config: list[dict[str, Any]],
    answer: str,
    apps: list[str],
    layout: dict[str, Any],
) -> dict[str, Any]:
    return {
        "id": task_id,
        "snapshot": "ui-basics",
        "instruction": instruction,
        "source": "osworld-gym",
        "config": config,
        "trajectory": "trajectories/",
        "related_apps": apps,
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": f"cat {ANSWER_FILE}", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": f"{answer}\n"}},
        },
        "proxy": False,
        "fixed_ip": False,
        "possibility_of_env_change": "low",
        "ui_basics": layout,
    }


def button_task_json(desktop: Any, task: ButtonTask) -> dict[str, Any]:
    """Measure the task's dialog and build its task file."""
    (_, _, width, height), _ = measure(desktop, xmessage_command(task, 0, 0), task.buttons)
    x, y = _place(task.place, (width + 2, height + 2))  # the shell's 1-pixel border
    command = xmessage_command(task, x, y)
    window, buttons = measure(desktop, command, task.buttons)
    if window[:2] != (x, y):
        raise RuntimeError(f"{task.id}: dialog at {window[:2]}, asked for {(x, y)}")
    config = [
        {"type": "launch", "parameters": {"command": command, "shell": True}},
        {
            "type": "execute_with_verification",
            "parameters": {
                "command": "true",
                "shell": True,
                "verification": {"command_success": viewable_check(window)},
                "max_wait_time": 10,
                "check_interval": 0.05,
            },
        },
    ]
    layout = {
        "screen_size": list(SCREEN_SIZE),
        "action": "click",
        "answer": task.answer,
        "window": list(window),
        "buttons": {label: list(box) for label, box in buttons.items()},
    }
    return _task_json(task.id, task.instruction, config, task.answer, ["xmessage"], layout)


def type_task_json(task: TypeTask) -> dict[str, Any]:
    """The task file of a typing task (no measuring: typing needs only the terminal's focus)."""
    config = [
        {"type": "launch", "parameters": {"command": xterm_command(), "shell": False}},
        {
            "type": "execute_with_verification",
            "parameters": {
                "command": "true",
                "shell": True,
                "verification": {"window_exists": TERMINAL_TITLE},
                "max_wait_time": 10,
                "check_interval": 0.05,
            },
        },
        {"type": "activate_window", "parameters": {"window_name": TERMINAL_TITLE}},
    ]
    layout = {"screen_size": list(SCREEN_SIZE), "action": "type", "answer": task.word}
    instruction = f'Type the word "{task.word}" and press Enter.'
    return _task_json(task.id, instruction, config, task.word, ["xterm"], layout)


def build_all() -> dict[Path, str]:
    """Every task file's path and text, measured on a fresh desktop."""
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    files: dict[Path, dict[str, Any]] = {}
    config = LocalProviderConfig(screen_size=SCREEN_SIZE, accessibility=False)
    with LocalProvider(config).launch() as desktop:
        for button in button_tasks():
            path = ROOT / "examples" / button.domain / f"{button.id}.json"
            files[path] = button_task_json(desktop, button)
    for typing in type_tasks():
        files[ROOT / "examples" / "type_word" / f"{typing.id}.json"] = type_task_json(typing)
    return {path: json.dumps(data, indent=2) + "\n" for path, data in files.items()}


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the task files; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    files = build_all()
    stale = sorted(p for p, text in files.items() if not p.is_file() or p.read_text() != text)
    if args.check:
        for path in stale:
            logger.error("out of date: %s", path.relative_to(ROOT))
        logger.info("%d task files, %d out of date", len(files), len(stale))
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
    logger.info("%d task files, %d written", len(files), len(stale))
    return 0


if __name__ == "__main__":
    sys.exit(main())
