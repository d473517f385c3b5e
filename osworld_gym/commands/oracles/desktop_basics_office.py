"""Scripted oracle solutions of desktop-basics' LibreOffice Calc, Writer and Impress tasks.

``ORACLES`` maps each task id to its script: action steps (one typed action or a list of them,
each passed to ``env.step``) and :class:`~osworld_gym.commands.oracles.conditions.WaitFor`
steps, the screen the next keys wait for. The oracles prefer the keyboard: arrow keys from
Ctrl+Home to reach cells (the keys stay in the grid: no focus moves to wait for), shortcuts,
and LibreOffice's command search (Shift+Esc) for menu commands. Where they click (Impress's
slide pane, a menu item, one dialog button), the points were read off screenshots at the
suite's test size, 1280x720, and so were the regions the conditions watch.

Wherever the focus moves to another widget (a dialog, the command search, a menu, a text box's
edit mode) the script waits until that widget shows before its next keys: LibreOffice draws a
dialog's widgets, and enters edit mode, a moment after the screen first settles, and keys sent
in between are lost (seen on a loaded 2-core host: "MilesMore Milestonestones", and an Enter
that never answered the Keep format question).
"""

from __future__ import annotations

from collections.abc import Sequence

from osworld_gym.actions import Action, Click, Done, Hotkey, Press, RightClick, TypeText
from osworld_gym.commands.oracles.conditions import DRAWN_COLOURS, WaitFor

Step = Action | Sequence[Action] | WaitFor

# --- what the scripts watch (1280x720, LibreOffice 7.4's default layout) ----------------------

# The bold first lines of the "Keep current format" question, centred on the screen.
KEEP_FORMAT_TEXT = (420, 300, 440, 50)
# The command search's entry field and its first result, below the toolbar's right half.
SEARCH_FIELD = (660, 55, 400, 24)
SEARCH_FIRST_RESULT = (660, 92, 400, 20)
# Calc's Rename Sheet dialog: its Name label and entry.
RENAME_SHEET_DIALOG = (520, 330, 240, 100)
# Writer's Find and Replace dialog: the Find and Replace fields.
FIND_REPLACE_DIALOG = (300, 140, 680, 120)
# Impress's "Insert Text Box" toolbar button: pressed while a text box is in edit mode.
TEXT_EDIT_BUTTON = (934, 50, 26, 26)
# Impress: the first items of the View menu; the notes box of the Notes view.
VIEW_MENU_ITEMS = (90, 60, 150, 100)
NOTES_BOX = (370, 375, 320, 260)

# Impress's slide pane thumbnail of slide 2, the title of a "Title, Content" slide in the main
# view, and the Duplicate Slide item of the thumbnail's context menu.
SLIDE_2_THUMBNAIL = (100, 335)
MAIN_VIEW_TITLE = (530, 215)
DUPLICATE_SLIDE_ITEM = (180, 453)
DUPLICATE_SLIDE_ITEM_AREA = (120, 442, 120, 22)

EDIT_MODE = WaitFor("the text box's edit mode", TEXT_EDIT_BUTTON)


def goto(cell: str) -> list[Step]:
    """Select a cell (``"C2"``) or a range (``"D2:D11"``) of the current Calc sheet.

    Arrow keys from Ctrl+Home: the focus stays in the grid, so no key can land in a widget that
    is still taking the focus (the Name Box).

    Raises:
        ValueError: Not a cell or range of columns A-Z.
    """
    first, _, last = cell.partition(":")
    col, row = _cell(first)
    keys: list[Action] = [Hotkey(keys=("ctrl", "home"))]
    if col:
        keys.append(Press(key="right", presses=col))
    if row:
        keys.append(Press(key="down", presses=row))
    if last:
        end_col, end_row = _cell(last)
        keys.extend(Hotkey(keys=("shift", "right")) for _ in range(end_col - col))
        keys.extend(Hotkey(keys=("shift", "down")) for _ in range(end_row - row))
    return [keys]


def _cell(name: str) -> tuple[int, int]:
    """Zero-based (column, row) of a cell name such as ``"D11"``."""
    letters, digits = name[:1].upper(), name[1:]
    if not ("A" <= letters <= "Z" and digits.isdigit() and int(digits) >= 1):
        raise ValueError(f"not a cell of columns A-Z: {name!r}")
    return ord(letters) - ord("A"), int(digits) - 1


def command(name: str) -> list[Step]:
    """Run a menu command through LibreOffice's command search: type its name, run the first match.

    The search is Shift+Esc (Help > Search Commands); each key waits for what it goes to.
    """
    return [
        [Hotkey(keys=("shift", "escape"))],
        WaitFor("the command search", SEARCH_FIELD, min_colours=DRAWN_COLOURS),
        [TypeText(text=name)],
        WaitFor(f"the command search's match for {name!r}", SEARCH_FIRST_RESULT, min_colours=4),
        [Press(key="enter")],
        WaitFor("the command search to close", SEARCH_FIELD),
    ]


def save_keeping_format() -> list[Step]:
    """Ctrl+S, then Enter on LibreOffice's "Keep current format" question once it is drawn."""
    return [
        [Hotkey(keys=("ctrl", "s"))],
        WaitFor("the Keep format question", KEEP_FORMAT_TEXT, min_colours=DRAWN_COLOURS),
        [Press(key="enter")],
        WaitFor("the Keep format question to close", KEEP_FORMAT_TEXT),
    ]


def finish(*steps: Step | Sequence[Step]) -> list[Step]:
    """Flatten helper results and plain steps, then save and end with DONE."""
    flat: list[Step] = []
    for item in steps:
        if isinstance(item, list) and item and isinstance(item[0], (list, WaitFor)):
            flat.extend(item)
        else:
            flat.append(item)  # type: ignore[arg-type]  # an action step, by the test above
    return [*flat, *save_keeping_format(), Done()]


CALC: dict[str, list[Step]] = {
    "calc-sum-sales-total": finish(
        goto("A8"),
        [TypeText(text="Total\t=SUM(B2:B7)\n")],
    ),
    "calc-fill-line-totals": finish(
        goto("D1"),
        [TypeText(text="Line Total\n=B2*C2\n")],
        goto("D2:D11"),
        [Hotkey(keys=("ctrl", "d"))],
    ),
    "calc-sort-scores-descending": finish(
        goto("C2"),
        command("Sort Descending"),
    ),
    "calc-rename-sheet": finish(
        command("Rename Sheet"),
        WaitFor("the Rename Sheet dialog", RENAME_SHEET_DIALOG, min_colours=DRAWN_COLOURS),
        [TypeText(text="March 2024\n")],
        WaitFor("the Rename Sheet dialog to close", RENAME_SHEET_DIALOG),
    ),
    "calc-bold-header-row": finish(
        goto("A1:D1"),
        [Hotkey(keys=("ctrl", "b"))],
    ),
    "calc-freeze-header-row": finish(
        command("Freeze First Row"),
    ),
    "calc-append-book-row": finish(
        goto("A7"),
        [TypeText(text="The Silent Orchard\tMara Ellison\t2021\t18.5\n")],
    ),
}

WRITER: dict[str, list[Step]] = {
    "writer-insert-title": finish(
        # An empty paragraph above the first one, then the title typed into it; the text comes
        # last, so no Enter can accept a word-completion suggestion.
        [Hotkey(keys=("ctrl", "home")), Press(key="enter"), Press(key="up")],
        [TypeText(text="Phoenix Project Weekly Update")],
    ),
    "writer-replace-colour": finish(
        [Hotkey(keys=("ctrl", "h"))],
        WaitFor("the Find and Replace dialog", FIND_REPLACE_DIALOG, min_colours=DRAWN_COLOURS),
        [TypeText(text="colour")],
        [Hotkey(keys=("alt", "p"))],  # the Replace field
        [TypeText(text="color")],
        [Click(x=905, y=331)],  # Replace All (the dialog opens at the same place every time)
        [Press(key="escape")],
        WaitFor("the Find and Replace dialog to close", FIND_REPLACE_DIALOG),
    ),
    "writer-double-line-spacing": finish(
        [Hotkey(keys=("ctrl", "a"))],
        command("Line Spacing: 2"),  # Ctrl+2 is Heading 2 in LibreOffice 7.4
    ),
    "writer-center-first-line": finish(
        [Hotkey(keys=("ctrl", "home")), Hotkey(keys=("ctrl", "e"))],
    ),
    "writer-delete-paragraph": finish(
        # Start of the third paragraph, select it with its paragraph mark, delete.
        [Hotkey(keys=("ctrl", "home")), Hotkey(keys=("ctrl", "down"))],
        [Hotkey(keys=("ctrl", "down"))],
        [Hotkey(keys=("ctrl", "shift", "down")), Hotkey(keys=("shift", "right"))],
        [Press(key="delete")],
    ),
}

# Leaving edit mode and then the selection: both keys go to the slide view, in order.
LEAVE_TEXT_BOX = [Press(key="escape"), Press(key="escape")]

IMPRESS: dict[str, list[Step]] = {
    "impress-change-title": finish(
        # Tab selects the slide's first object (the title), Enter edits its text.
        [Press(key="tab")],
        [Press(key="enter")],
        EDIT_MODE,
        [Hotkey(keys=("ctrl", "a"))],
        [TypeText(text="Annual Review 2024")],
        LEAVE_TEXT_BOX,
    ),
    "impress-delete-second-slide": finish(
        [Click(x=SLIDE_2_THUMBNAIL[0], y=SLIDE_2_THUMBNAIL[1])],
        [Press(key="delete")],
    ),
    "impress-duplicate-slide": finish(
        # Impress 7.4's command search finds no slide commands: use the slide's context menu.
        [Click(x=SLIDE_2_THUMBNAIL[0], y=SLIDE_2_THUMBNAIL[1])],
        [RightClick(x=SLIDE_2_THUMBNAIL[0], y=SLIDE_2_THUMBNAIL[1])],
        WaitFor("the slide's context menu", DUPLICATE_SLIDE_ITEM_AREA, min_colours=DRAWN_COLOURS),
        [Click(x=DUPLICATE_SLIDE_ITEM[0], y=DUPLICATE_SLIDE_ITEM[1])],
        # Clicking the copy's title edits it.
        [Click(x=MAIN_VIEW_TITLE[0], y=MAIN_VIEW_TITLE[1])],
        EDIT_MODE,
        [Hotkey(keys=("ctrl", "a"))],
        [TypeText(text="More Milestones")],
        LEAVE_TEXT_BOX,
    ),
    "impress-add-speaker-notes": finish(
        # View > Notes (third entry of the View menu), then the notes box is the second object.
        [Hotkey(keys=("alt", "v"))],
        WaitFor("the View menu", VIEW_MENU_ITEMS, min_colours=DRAWN_COLOURS),
        [Press(key="down", presses=2), Press(key="enter")],
        WaitFor("the Notes view", NOTES_BOX),
        [Press(key="tab")],
        [Press(key="tab")],
        [Press(key="enter")],
        EDIT_MODE,
        [TypeText(text="Greet everyone and introduce the hosts.")],
        LEAVE_TEXT_BOX,
    ),
    "impress-bold-slide-title": finish(
        [Press(key="pagedown")],  # slide 2 (nothing is selected yet)
        [Press(key="tab")],
        [Press(key="enter")],
        EDIT_MODE,
        [Hotkey(keys=("ctrl", "a")), Hotkey(keys=("ctrl", "b"))],
        LEAVE_TEXT_BOX,
    ),
}

ORACLES: dict[str, list[Step]] = {**CALC, **WRITER, **IMPRESS}
