"""Scripted solutions of the ``os``, ``text_editor`` and ``multi_apps`` tasks of desktop-basics.

``ORACLES`` maps a task id to the steps passed to ``env.step`` one by one (a step is a list of
structured actions or a single action). Terminal work is typed as shell commands; editor work
uses mousepad's keyboard shortcuts. Two conventions keep them robust on a 1280x720 desktop:

* Switching windows with alt+tab takes three separate steps (alt down, tab, alt up). Sent as one
  burst (a ``Hotkey``), openbox misses the alt release and keeps its window switcher open, and
  the switcher swallows the next key.
* Where a new window takes the focus (a dialog, an app started from the terminal), a
  ``WaitFor`` step waits until it shows before
  the next keys go to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from osworld_gym.actions import Click, Done, Fail, Hotkey, KeyDown, KeyUp, Press, TypeText
from osworld_gym.policies.oracles.conditions import DRAWN_COLOURS, WaitFor


def shell(command: str) -> list:
    """Type one command line into the focused terminal and run it."""
    return [TypeText(text=command + "\n")]


def switch_window() -> list[list]:
    """Alt+tab to the previously focused window, one key event per step."""
    return [[KeyDown(key="alt")], [Press(key="tab")], [KeyUp(key="alt")]]


SAVE = [Hotkey(keys=("ctrl", "s"))]
END_OF_FILE = [Hotkey(keys=("ctrl", "end"))]
START_OF_FILE = [Hotkey(keys=("ctrl", "home"))]

STATS_4_SPACES = """\
def mean(values):
    total = 0
    for value in values:
        total += value
    return total / len(values)


def spread(values):
    if not values:
        return 0
    return max(values) - min(values)
"""


@dataclass(frozen=True)
class ReplaceDialog:
    """mousepad's Find and Replace dialog (ctrl+r) at 1280x720, on one session's desktop.

    Attributes:
        search_row: Its "Search for" row (what the conditions watch).
        replace_all_box: The "Replace all in" check box (the dialog has no keyboard mnemonics).
        replace_button: The "Replace" button.
    """

    search_row: tuple[int, int, int, int]
    replace_all_box: tuple[int, int]
    replace_button: tuple[int, int]


# openbox maximizes mousepad; GNOME Shell centres its window beside the dock.
OPENBOX_REPLACE = ReplaceDialog((460, 255, 360, 60), (443, 467), (722, 507))
GNOME_REPLACE = ReplaceDialog((446, 270, 450, 32), (458, 478), (774, 518))
# What the conditions watch at 1280x720: the name entry of GTK's Save As dialog; an area of
# mousepad's white page that the terminal shows black.
SAVE_AS_NAME = (170, 36, 400, 20)
MOUSEPAD_PAGE = (700, 400, 400, 200)

OS: dict[str, list[Any]] = {
    "os-create-project-tree": [
        shell(
            "mkdir -p ~/projects/webapp/src ~/projects/webapp/tests ~/projects/webapp/docs"
            " && touch ~/projects/webapp/README.md"
        ),
        Done(),
    ],
    "os-rename-by-prefix": [
        shell('cd ~/reports && for f in draft_*.txt; do mv "$f" "final_${f#draft_}"; done'),
        Done(),
    ],
    "os-sort-downloads-by-type": [
        shell(
            "mkdir -p ~/Pictures/imported"
            " && mv ~/Downloads/*.jpg ~/Downloads/*.png ~/Pictures/imported/"
        ),
        Done(),
    ],
    "os-write-file-content": [
        shell(
            r"printf 'Welcome to the build server\nMaintenance: Sundays 02:00-04:00\n'"
            " > ~/Documents/motd.txt"
        ),
        Done(),
    ],
    "os-chmod-script": [shell("chmod 750 ~/scripts/backup.sh"), Done()],
    "os-count-error-lines": [
        shell("grep -c ERROR ~/logs/server.log > ~/logs/error_count.txt"),
        Done(),
    ],
    "os-find-and-copy": [
        shell('cp "$(find ~/archive -name tax_receipt_0419.txt)" ~/Desktop/'),
        Done(),
    ],
    "os-tar-folder": [
        shell("tar -czf ~/backup/project_notes.tar.gz -C ~ project_notes"),
        Done(),
    ],
    "os-delete-tmp-files": [
        shell("find ~/workspace -type f -name '*.tmp' -delete"),
        Done(),
    ],
    "os-infeasible-network-share": [Fail()],
}


def replace_word(dialog: ReplaceDialog) -> list[Any]:
    """editor-replace-word's script: every "colour" replaced through mousepad's dialog."""
    return [
        [Hotkey(keys=("ctrl", "r"))],
        WaitFor("the Find and Replace dialog", dialog.search_row, min_colours=DRAWN_COLOURS),
        [TypeText(text="colour"), Press(key="tab"), TypeText(text="color")],
        [Click(x=dialog.replace_all_box[0], y=dialog.replace_all_box[1])],
        [Click(x=dialog.replace_button[0], y=dialog.replace_button[1])],
        [Press(key="escape")],
        WaitFor("the Find and Replace dialog to close", dialog.search_row),
        SAVE,
        Done(),
    ]


TEXT_EDITOR: dict[str, list[Any]] = {
    "editor-replace-word": replace_word(OPENBOX_REPLACE),
    "editor-append-line": [
        END_OF_FILE,  # the file ends with a newline: the cursor is on the empty last line
        [TypeText(text="- green tea")],
        SAVE,
        Done(),
    ],
    "editor-delete-line": [
        START_OF_FILE,
        [Press(key="down", presses=3)],  # line 4: Marcus Webb
        [Hotkey(keys=("shift", "down")), Press(key="delete")],
        SAVE,
        Done(),
    ],
    "editor-fix-indentation": [
        [Hotkey(keys=("ctrl", "a"))],
        [TypeText(text=STATS_4_SPACES)],
        SAVE,
        Done(),
    ],
    "editor-save-as-new-name": [
        START_OF_FILE,
        [Hotkey(keys=("shift", "end")), TypeText(text="FINAL")],
        [Hotkey(keys=("ctrl", "shift", "s"))],
        WaitFor("the Save As dialog", SAVE_AS_NAME, min_colours=4),
        [Hotkey(keys=("ctrl", "a")), TypeText(text="~/Documents/announcement_final.txt\n")],
        WaitFor("the Save As dialog to close", SAVE_AS_NAME),
        Done(),
    ],
    "editor-infeasible-track-changes": [Fail()],
}

MULTI_APPS: dict[str, list[Any]] = {
    "multi-wordcount-into-report": [
        shell("wc -w ~/Documents/essay.txt"),  # 64 words
        *switch_window(),
        END_OF_FILE,
        [TypeText(text="Words: 64")],
        SAVE,
        Done(),
    ],
    "multi-calc-total-to-text": [
        # In Calc, a formula in a free cell gives the total: =SUM(B2:B9) -> 1062.09.
        [Hotkey(keys=("ctrl", "home")), Press(key="right", presses=3)],
        [TypeText(text="=SUM(B2:B9)\n")],
        *switch_window(),
        [TypeText(text="Total: 1062.09")],
        SAVE,
        Done(),
    ],
    "multi-sorted-tags-heading": [
        shell(
            "sort -u ~/Documents/tags.txt > ~/Documents/tags_sorted.txt"
            " && mousepad ~/Documents/tags_sorted.txt &"
        ),
        WaitFor("mousepad's window", MOUSEPAD_PAGE),
        START_OF_FILE,
        [TypeText(text="# Tags\n")],
        SAVE,
        Done(),
    ],
    "multi-infeasible-vscode-prettier": [Fail()],
}

ORACLES: dict[str, list] = {**OS, **TEXT_EDITOR, **MULTI_APPS}
# The GNOME session's: the same but where mousepad's dialog lies elsewhere.
GNOME_ORACLES: dict[str, list] = {**ORACLES, "editor-replace-word": replace_word(GNOME_REPLACE)}
