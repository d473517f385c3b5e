"""Scripted oracle solutions of desktop-basics' LibreOffice Calc, Writer and Impress tasks.

``ORACLES`` maps each task id to the steps passed to ``env.step`` (a step is one typed action
or a list of them). The oracles prefer the keyboard: the Name Box (Ctrl+Shift+F5) to reach
cells, shortcuts, and LibreOffice's command search (Shift+Esc) for menu commands. Where they
click (Impress's slide pane, one dialog button), the points were read off screenshots at the
suite's test size, 1280x720. A new step starts wherever the focus moves to another widget (a
dialog, the Name Box, a menu), because each ``env.step`` returns only once the screen has
settled, so the next keys reach the widget that is now focused.
"""

from __future__ import annotations

from osworld_gym.actions import Action, Click, Done, Hotkey, Press, RightClick, TypeText, Wait

Step = Action | list[Action]

# The first observation can show LibreOffice's window before the document is drawn and ready
# for keys; an oracle cannot observe that, so it waits once before its first key. 2 s was too
# little for Impress on a loaded 2-core host (two oracle runs failed while trainers ran beside).
APP_READY_SECONDS = 4.0


def goto(cell: str) -> list[Step]:
    """Select a cell or range of the current Calc sheet through the Name Box."""
    return [[Hotkey(keys=("ctrl", "shift", "f5"))], [TypeText(text=f"{cell}\n")]]


def command(name: str) -> list[Step]:
    """Run a menu command through LibreOffice's command search: type its name, run the first match.

    The search is Shift+Esc (Help > Search Commands).
    """
    return [[Hotkey(keys=("shift", "escape"))], [TypeText(text=name)], [Press(key="enter")]]


def save_keeping_format() -> list[Step]:
    """Ctrl+S, then Enter on LibreOffice's "Keep current format" question."""
    return [[Hotkey(keys=("ctrl", "s"))], [Press(key="enter")], [Wait(seconds=0.5)]]


def finish(*steps: Step | list[Step]) -> list[Step]:
    """Flatten helper results and plain steps, then save and end with DONE."""
    flat: list[Step] = []
    for item in steps:
        if isinstance(item, list) and item and isinstance(item[0], list):
            flat.extend(item)
        else:
            flat.append(item)
    return [[Wait(seconds=APP_READY_SECONDS)], *flat, *save_keeping_format(), Done()]


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
        [TypeText(text="March 2024\n")],
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
        [TypeText(text="colour")],
        [Hotkey(keys=("alt", "p"))],  # the Replace field
        [TypeText(text="color")],
        [Click(x=905, y=331)],  # Replace All (the dialog opens at the same place every time)
        [Press(key="escape")],
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

# Entering a text box's edit mode can lag behind the screen settling on a loaded host: keys
# sent at once then land before the text cursor (a run typed "MilesMore Milestonestones"). The
# step that enters edit mode waits this long before the next step's keys.
EDIT_MODE_SECONDS = 1.0

# The slide pane thumbnail of slide 2 and the title of a "Title, Content" slide in the main
# view, at 1280x720 with LibreOffice's default layout (read off screenshots).
SLIDE_2_THUMBNAIL = (100, 335)
MAIN_VIEW_TITLE = (530, 215)
DUPLICATE_SLIDE_ITEM = (180, 453)  # in the thumbnail's context menu

IMPRESS: dict[str, list[Step]] = {
    "impress-change-title": finish(
        # Tab selects the slide's first object (the title), Enter edits its text.
        [Press(key="tab")],
        [Press(key="enter"), Wait(seconds=EDIT_MODE_SECONDS)],
        [Hotkey(keys=("ctrl", "a"))],
        [TypeText(text="Annual Review 2024")],
        [Press(key="escape")],
        [Press(key="escape")],
    ),
    "impress-delete-second-slide": finish(
        [Click(x=SLIDE_2_THUMBNAIL[0], y=SLIDE_2_THUMBNAIL[1])],
        [Press(key="delete")],
    ),
    "impress-duplicate-slide": finish(
        # Impress 7.4's command search finds no slide commands: use the slide's context menu.
        [Click(x=SLIDE_2_THUMBNAIL[0], y=SLIDE_2_THUMBNAIL[1])],
        [RightClick(x=SLIDE_2_THUMBNAIL[0], y=SLIDE_2_THUMBNAIL[1])],
        [Click(x=DUPLICATE_SLIDE_ITEM[0], y=DUPLICATE_SLIDE_ITEM[1])],
        # Clicking the copy's title edits it.
        [Click(x=MAIN_VIEW_TITLE[0], y=MAIN_VIEW_TITLE[1]), Wait(seconds=EDIT_MODE_SECONDS)],
        [Hotkey(keys=("ctrl", "a"))],
        [TypeText(text="More Milestones")],
        [Press(key="escape")],
        [Press(key="escape")],
    ),
    "impress-add-speaker-notes": finish(
        # View > Notes (third entry of the View menu), then the notes box is the second object.
        [Hotkey(keys=("alt", "v"))],
        [Press(key="down", presses=2), Press(key="enter")],
        [Press(key="tab")],
        [Press(key="tab")],
        [Press(key="enter"), Wait(seconds=EDIT_MODE_SECONDS)],
        [TypeText(text="Greet everyone and introduce the hosts.")],
        [Press(key="escape")],
        [Press(key="escape")],
    ),
    "impress-bold-slide-title": finish(
        [Press(key="pagedown")],  # slide 2 (nothing is selected yet)
        [Press(key="tab")],
        [Press(key="enter"), Wait(seconds=EDIT_MODE_SECONDS)],
        [Hotkey(keys=("ctrl", "a")), Hotkey(keys=("ctrl", "b"))],
        [Press(key="escape")],
        [Press(key="escape")],
    ),
}

ORACLES: dict[str, list[Step]] = {**CALC, **WRITER, **IMPRESS}
