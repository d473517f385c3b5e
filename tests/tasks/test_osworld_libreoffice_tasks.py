"""OSWorld's own LibreOffice tasks (Calc, Writer, Impress) on sandboxed local desktops.

Each task file is read from shared/osworld_tasks; the solutions are written here as an agent
would act (keys, and clicks at positions read off the 1280x720 screenshot). Unsolved, each
scores what OSWorld's evaluator gives: 0.

Every Calc and Writer task downloads its document from the network, unreachable here: the
test makes a plausible document with openpyxl or python-docx (the layout the instruction
describes) and puts it in the asset cache under OSWorld's cache name. Both checks compare the
saved document against rules, with no reference file. The Impress tasks download nothing.

LibreOffice asks before it saves a Microsoft format ("Use Word/Excel 2007-365!" is the default
button): the solutions save with Ctrl+S and Enter, as an agent does, before OSWorld's
postconfig presses Ctrl+S again.
"""

from __future__ import annotations

import collections.abc
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from desktop_helpers import run_episode
from fixture_marks import needs
from real_tasks import kind_marks, real_env, real_task, task_id

from osworld_gym.actions import Click, Done, Hotkey, Press, TypeText, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.tasks.placeholders import download_cache_name

pytestmark = [pytest.mark.desktop, pytest.mark.apps, pytest.mark.osworld_tasks, *kind_marks()]

TIME_TIMES_RATE = "357ef137"  # Calc: check_cell E3 ~ 191.6667 (rules only, no reference)
TIMES_NEW_ROMAN = "0e763496"  # Writer: compare_font_names against a rule
AUTOSAVE = "2cd43775"  # Impress: AutoSaveTimeIntervall 3 in registrymodifications.xcu
SLIDE_PANE = "ef9d12bd"  # Impress: its setup hides the slide pane; checked in the a11y tree

TASKS = (
    ("libreoffice_calc", TIME_TIMES_RATE),
    ("libreoffice_writer", TIMES_NEW_ROMAN),
    ("libreoffice_impress", AUTOSAVE),
    ("libreoffice_impress", SLIDE_PANE),
)

FONT_NAME_BOX = {"x": 355, "y": 101}  # Writer's font name box on the formatting toolbar
VIEW_MENU = {"x": 103, "y": 31}  # Impress's menu bar
SLIDE_PANE_ITEM = {"x": 142, "y": 303}  # View > Slide Pane

SAVE_KEEPING_FORMAT = [Hotkey(keys=("ctrl", "s")), Press(key="enter")]


# --- documents the tasks would download ------------------------------------------------------


def _work_hours(path: Path) -> None:
    """Daily hours as times, their total (19:10, a time) and an hourly rate; E3 is for the pay."""
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Date", "Hours", None, "Item", "Value"])
    for row, (hours, minutes) in enumerate([(4, 0), (3, 30), (4, 10), (3, 45), (3, 45)], 2):
        sheet.cell(row, 1, datetime.date(2024, 1, 6 + row)).number_format = "yyyy-mm-dd"
        sheet.cell(row, 2, datetime.time(hours, minutes)).number_format = "[h]:mm"
    sheet["D2"], sheet["E2"] = "Total hours", datetime.timedelta(hours=19, minutes=10)
    sheet["E2"].number_format = "[h]:mm"
    sheet["D3"] = "Total earned"
    sheet["D4"], sheet["E4"] = "Hourly rate", 10
    sheet.column_dimensions["A"].width = sheet.column_dimensions["D"].width = 14
    book.save(path)


def _paragraphs_in(font: str, *paragraphs: str) -> Callable[[Path], None]:
    """A .docx of ``paragraphs``, each run set in ``font``."""

    def make(path: Path) -> None:
        docx = pytest.importorskip("docx")
        document = docx.Document()
        for text in paragraphs:
            document.add_paragraph().add_run(text).font.name = font
        document.save(path)

    return make


DOCUMENTS: dict[str, Callable[[Path], None]] = {
    "Multiply_Time_Number.xlsx": _work_hours,
    "Dublin_Zoo_Intro.docx": _paragraphs_in(
        "Arial",
        "Dublin Zoo",
        "Dublin Zoo is a zoo in Phoenix Park, Dublin, opened in 1831.",
        "The zoo works for the conservation of endangered species.",
    ),
}


def _cache_documents(cache: Path, task: dict[str, Any]) -> None:
    """Make the documents the task downloads, in the asset cache under OSWorld's names."""
    for step in task["config"]:
        if step["type"] != "download":
            continue
        for item in step["parameters"]["files"]:
            target = cache / task["id"] / download_cache_name(item["url"], item["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            DOCUMENTS[Path(item["path"]).name](target)


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    tasks = [real_task(domain, task) for domain, task in TASKS]
    cache = tmp_path_factory.mktemp("cache")
    for task in tasks:
        _cache_documents(cache, task)
    with real_env(tasks, cache_dir=str(cache)) as environment:
        yield environment


def _in_cell(cell: str, text: str) -> list:
    """Go to ``cell`` through the Name Box (Ctrl+Shift+F5) and enter ``text`` there."""
    return [Hotkey(keys=("ctrl", "shift", "f5")), TypeText(text=f"{cell}\n"), TypeText(text=text)]


# --- Calc ------------------------------------------------------------------------------------


def test_calc_multiply_a_time_by_a_number(env: OSWorldEnv) -> None:
    task = task_id(env, TIME_TIMES_RATE)
    # A time is a fraction of a day: hours = time * 24.
    solved = [*_in_cell("E3", "=E2*24*E4\n"), *SAVE_KEEPING_FORMAT, Done()]
    assert run_episode(env, task, solved) == 1.0
    naive = [*_in_cell("E3", "=E2*E4\n"), *SAVE_KEEPING_FORMAT, Done()]  # the user's mistake
    assert run_episode(env, task, naive) == 0.0


# --- Writer ----------------------------------------------------------------------------------


def test_writer_font_throughout_the_text(env: OSWorldEnv) -> None:
    task = task_id(env, TIMES_NEW_ROMAN)
    steps = [
        Hotkey(keys=("ctrl", "a")),
        Click(**FONT_NAME_BOX, clicks=3),
        TypeText(text="Times New Roman\n"),
        *SAVE_KEEPING_FORMAT,
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0


# --- Impress ---------------------------------------------------------------------------------


def test_impress_autosave_every_three_minutes(env: OSWorldEnv) -> None:
    task = task_id(env, AUTOSAVE)
    # Tools > Options (Alt+F12) > Load/Save > General: the tree's 13th row is Load/Save; its
    # page's third control is "Save AutoRecovery information every", then its minutes.
    steps = [
        Hotkey(keys=("alt", "f12")),
        Wait(seconds=2.0),
        Press(key="down", presses=12),
        Press(key="right"),
        Press(key="down"),
        Press(key="tab", presses=3),
        Press(key="space"),
        Press(key="tab"),
        Hotkey(keys=("ctrl", "a")),
        TypeText(text="3"),
        Press(key="enter"),  # OK
        Wait(seconds=3.0),  # LibreOffice writes registrymodifications.xcu a moment later
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0


def test_impress_restore_the_slide_pane(env: OSWorldEnv) -> None:
    task = task_id(env, SLIDE_PANE)
    steps = [Click(**VIEW_MENU), Click(**SLIDE_PANE_ITEM), Wait(seconds=1.0), Done()]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0  # the task's setup hid it
