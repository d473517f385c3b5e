"""Scripted oracle solutions of desktop-basics' LibreOffice Calc, Writer and Impress tasks.

``ORACLES`` (the openbox session) and ``GNOME_ORACLES`` (the GNOME session) map each task id to
its script: action steps (one typed action or a list of them, each passed to ``env.step``) and
``WaitFor`` steps, the screen the next keys wait
for. The oracles prefer the keyboard: arrow keys from Ctrl+Home to reach cells (the keys stay in
the grid: no focus moves to wait for), shortcuts, and LibreOffice's command search (Shift+Esc)
for menu commands. Where they click (Impress's slide pane, a menu item, one dialog button), the
points were read off screenshots of each session at the suite's test size, 1280x720
(``OfficeLayout``), and so were the regions the conditions watch.

Wherever the focus moves to another widget (a dialog, the command search, a menu, a text box's
edit mode) the script waits until that widget shows before its next keys: LibreOffice draws a
dialog's widgets, and enters edit mode, a moment after the screen first settles, and keys sent
in between are lost (seen on a loaded 2-core host: "MilesMore Milestonestones", and an Enter
that never answered the Keep format question).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from osworld_gym.actions import Action, Click, Done, Hotkey, Press, RightClick, TypeText
from osworld_gym.policies.oracles.conditions import DRAWN_COLOURS, Region, WaitFor

Step = Action | Sequence[Action] | WaitFor
Point = tuple[int, int]


@dataclass(frozen=True)
class OfficeLayout:
    """Where the scripts click and what they watch, on one session's desktop at 1280x720.

    Attributes:
        keep_format_text: The bold first lines of LibreOffice's "Keep current format" question;
            None where Ctrl+S asks none (the GNOME session's LibreOffice saves Microsoft's
            formats by default, as OSWorld's VM).
        save_button: Where Ctrl+S asks nothing: the Standard toolbar's Save button, whose icon
            marks unsaved changes until the save is done. None where the question comes.
        search_field: The command search's entry field.
        search_first_result: Its first result.
        rename_sheet_dialog: Calc's Rename Sheet dialog: its Name label and entry.
        find_replace_dialog: Writer's Find and Replace dialog: its Find and Replace fields.
        replace_all: Its Replace All button.
        text_edit_button: Impress's "Insert Text Box" toolbar button, pressed in edit mode.
        view_menu_items: Impress: the first items of the View menu.
        notes_box: Impress: the notes box of the Notes view.
        slide_2_thumbnail: Impress: the slide pane's thumbnail of slide 2.
        main_view_title: Impress: the title of a "Title, Content" slide in the main view.
        duplicate_slide_item: Impress: "Duplicate Slide" in slide 2's context menu.
        duplicate_slide_item_area: The same item's area.
    """

    keep_format_text: Region | None
    save_button: Region | None
    search_field: Region
    search_first_result: Region
    rename_sheet_dialog: Region
    find_replace_dialog: Region
    replace_all: Point
    text_edit_button: Region
    view_menu_items: Region
    notes_box: Region
    slide_2_thumbnail: Point
    main_view_title: Point
    duplicate_slide_item: Point
    duplicate_slide_item_area: Region

    def __post_init__(self) -> None:
        if (self.keep_format_text is None) == (self.save_button is None):
            raise ValueError("a save waits for either the Keep format question or the Save button")


# openbox maximizes LibreOffice's windows over the whole screen (LibreOffice 7.4's default
# layout); its dialogs open centred on the screen, as do the session's menus.
OPENBOX = OfficeLayout(
    keep_format_text=(420, 300, 440, 50),
    save_button=None,
    search_field=(660, 55, 400, 24),
    search_first_result=(660, 92, 400, 20),
    rename_sheet_dialog=(520, 330, 240, 100),
    find_replace_dialog=(300, 140, 680, 120),
    replace_all=(905, 331),
    text_edit_button=(934, 50, 26, 26),
    view_menu_items=(90, 60, 150, 100),
    notes_box=(370, 375, 320, 260),
    slide_2_thumbnail=(100, 335),
    main_view_title=(530, 215),
    duplicate_slide_item=(180, 453),
    duplicate_slide_item_area=(120, 442, 120, 22),
)
# GNOME Shell maximizes them beside the dock, below the top bar, with Yaru's taller widgets; a
# modal dialog dims its window; the slide's context menu opens upwards.
GNOME = OfficeLayout(
    keep_format_text=None,
    save_button=(168, 98, 32, 24),
    search_field=(700, 101, 370, 24),
    search_first_result=(700, 138, 370, 18),
    # The Name label and the entry's left part: clear of the command search, which closes as
    # the dialog opens.
    rename_sheet_dialog=(530, 340, 130, 60),
    find_replace_dialog=(320, 205, 700, 130),
    replace_all=(960, 370),
    text_edit_button=(1004, 96, 26, 26),
    view_menu_items=(170, 50, 150, 100),
    notes_box=(415, 410, 275, 220),
    slide_2_thumbnail=(185, 415),
    main_view_title=(557, 281),
    duplicate_slide_item=(270, 213),
    duplicate_slide_item_area=(215, 203, 120, 22),
)


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


def command(layout: OfficeLayout, name: str) -> list[Step]:
    """Run a menu command through LibreOffice's command search: type its name, run the first match.

    The search is Shift+Esc (Help > Search Commands); each key waits for what it goes to.
    """
    field, first = layout.search_field, layout.search_first_result
    return [
        [Hotkey(keys=("shift", "escape"))],
        WaitFor("the command search", field, min_colours=DRAWN_COLOURS),
        [TypeText(text=name)],
        WaitFor(f"the command search's match for {name!r}", first, min_colours=4),
        [Press(key="enter")],
        WaitFor("the command search to close", field),
    ]


def save(layout: OfficeLayout) -> list[Step]:
    """Ctrl+S, then Enter on LibreOffice's "Keep current format" question once it is drawn.

    Where no question comes (``keep_format_text`` is None), until the Save button's icon no
    longer marks unsaved changes.
    """
    question = layout.keep_format_text
    if question is None:
        assert layout.save_button is not None  # OfficeLayout checks that one of them is set
        return [[Hotkey(keys=("ctrl", "s"))], WaitFor("the save", layout.save_button)]
    return [
        [Hotkey(keys=("ctrl", "s"))],
        WaitFor("the Keep format question", question, min_colours=DRAWN_COLOURS),
        [Press(key="enter")],
        WaitFor("the Keep format question to close", question),
    ]


def _flat(*steps: Step | Sequence[Step]) -> list[Step]:
    """Helper results and plain steps, flattened into one script."""
    flat: list[Step] = []
    for item in steps:
        if isinstance(item, list) and item and isinstance(item[0], (list, WaitFor)):
            flat.extend(item)
        else:
            flat.append(item)  # type: ignore[arg-type]  # an action step, by the test above
    return flat


# Leaving edit mode and then the selection: both keys go to the slide view, in order.
LEAVE_TEXT_BOX = [Press(key="escape"), Press(key="escape")]


def oracles(layout: OfficeLayout) -> dict[str, list[Step]]:
    """The Calc, Writer and Impress scripts for a desktop laid out as ``layout``."""

    def finish(*steps: Step | Sequence[Step]) -> list[Step]:
        """The steps, then save and DONE."""
        return [*_flat(*steps), *save(layout), Done()]

    edit_mode = WaitFor("the text box's edit mode", layout.text_edit_button)
    thumbnail = {"x": layout.slide_2_thumbnail[0], "y": layout.slide_2_thumbnail[1]}
    calc: dict[str, list[Step]] = {
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
            command(layout, "Sort Descending"),
        ),
        "calc-rename-sheet": finish(
            command(layout, "Rename Sheet"),
            WaitFor(
                "the Rename Sheet dialog", layout.rename_sheet_dialog, min_colours=DRAWN_COLOURS
            ),
            [TypeText(text="March 2024\n")],
            WaitFor("the Rename Sheet dialog to close", layout.rename_sheet_dialog),
        ),
        "calc-bold-header-row": finish(
            goto("A1:D1"),
            [Hotkey(keys=("ctrl", "b"))],
        ),
        "calc-freeze-header-row": finish(
            command(layout, "Freeze First Row"),
        ),
        "calc-append-book-row": finish(
            goto("A7"),
            [TypeText(text="The Silent Orchard\tMara Ellison\t2021\t18.5\n")],
        ),
    }
    writer: dict[str, list[Step]] = {
        "writer-insert-title": finish(
            # An empty paragraph above the first one, then the title typed into it; the text
            # comes last, so no Enter can accept a word-completion suggestion.
            [Hotkey(keys=("ctrl", "home")), Press(key="enter"), Press(key="up")],
            [TypeText(text="Phoenix Project Weekly Update")],
        ),
        "writer-replace-colour": finish(
            [Hotkey(keys=("ctrl", "h"))],
            WaitFor(
                "the Find and Replace dialog", layout.find_replace_dialog, min_colours=DRAWN_COLOURS
            ),
            [TypeText(text="colour")],
            [Hotkey(keys=("alt", "p"))],  # the Replace field
            [TypeText(text="color")],
            # Replace All (the dialog opens at the same place every time)
            [Click(x=layout.replace_all[0], y=layout.replace_all[1])],
            [Press(key="escape")],
            WaitFor("the Find and Replace dialog to close", layout.find_replace_dialog),
        ),
        "writer-double-line-spacing": finish(
            [Hotkey(keys=("ctrl", "a"))],
            command(layout, "Line Spacing: 2"),  # Ctrl+2 is Heading 2 in LibreOffice 7.4
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
    impress: dict[str, list[Step]] = {
        "impress-change-title": finish(
            # Tab selects the slide's first object (the title), Enter edits its text.
            [Press(key="tab")],
            [Press(key="enter")],
            edit_mode,
            [Hotkey(keys=("ctrl", "a"))],
            [TypeText(text="Annual Review 2024")],
            LEAVE_TEXT_BOX,
        ),
        "impress-delete-second-slide": finish(
            [Click(**thumbnail)],
            [Press(key="delete")],
        ),
        "impress-duplicate-slide": finish(
            # Impress 7.4's command search finds no slide commands: the slide's context menu.
            [Click(**thumbnail)],
            [RightClick(**thumbnail)],
            WaitFor(
                "the slide's context menu",
                layout.duplicate_slide_item_area,
                min_colours=DRAWN_COLOURS,
            ),
            [Click(x=layout.duplicate_slide_item[0], y=layout.duplicate_slide_item[1])],
            # Clicking the copy's title edits it.
            [Click(x=layout.main_view_title[0], y=layout.main_view_title[1])],
            edit_mode,
            [Hotkey(keys=("ctrl", "a"))],
            [TypeText(text="More Milestones")],
            LEAVE_TEXT_BOX,
        ),
        "impress-add-speaker-notes": finish(
            # View > Notes (third entry of the View menu), then the notes box is the second
            # object.
            [Hotkey(keys=("alt", "v"))],
            WaitFor("the View menu", layout.view_menu_items, min_colours=DRAWN_COLOURS),
            [Press(key="down", presses=2), Press(key="enter")],
            WaitFor("the Notes view", layout.notes_box),
            [Press(key="tab")],
            [Press(key="tab")],
            [Press(key="enter")],
            edit_mode,
            [TypeText(text="Greet everyone and introduce the hosts.")],
            LEAVE_TEXT_BOX,
        ),
        "impress-bold-slide-title": finish(
            [Press(key="pagedown")],  # slide 2 (nothing is selected yet)
            [Press(key="tab")],
            [Press(key="enter")],
            edit_mode,
            [Hotkey(keys=("ctrl", "a")), Hotkey(keys=("ctrl", "b"))],
            LEAVE_TEXT_BOX,
        ),
    }
    return {**calc, **writer, **impress}


ORACLES: dict[str, list[Step]] = oracles(OPENBOX)
GNOME_ORACLES: dict[str, list[Step]] = oracles(GNOME)
