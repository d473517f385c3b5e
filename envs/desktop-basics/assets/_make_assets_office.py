"""Generate the office assets of the desktop-basics suite (Calc, Writer and Impress tasks).

Run from anywhere: ``python envs/desktop-basics/assets/_make_assets_office.py``. It writes,
for each task, ``assets/<task id>/<document>`` (the file the task uploads and opens) and
``assets/<task id>/expected_<document>``, the reference its evaluator compares the saved
document with. References stay on the host: the task reads them with a ``cloud_file`` getter's
``local_path`` and never uploads them, so an agent cannot copy or edit its answer key. A task
whose reference is the unchanged document (its metric checks a property the reference cannot
show, and that the data stayed) gets its own copy all the same, so no uploaded file is ever a
reference.

Documents are built with openpyxl / python-docx / python-pptx, and so are the Calc and Writer
references: their metrics compare cell values, paragraph texts and line spacing, which do not
depend on the program that wrote the file. Presentation references are saved once more
through LibreOffice (``soffice --headless --convert-to``), because ``compare_pptx_files``
compares the fonts, sizes and geometry LibreOffice writes: the deck the agent saves comes out
of the same filter. The output is deterministic: every zip member gets a fixed timestamp, the
document properties fixed dates, and LibreOffice's random revision and field ids are replaced.

Needs: openpyxl, python-docx, python-pptx, and LibreOffice (``soffice``) on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import docx
import openpyxl
import pptx
from docx.shared import Pt

ASSETS = Path(__file__).resolve().parent
FIXED_DATE = "2024-01-15T09:00:00Z"
ZIP_TIME = (2024, 1, 15, 9, 0, 0)
_CORE_DATE = re.compile(r"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)")
_RSID = re.compile(rb' w:rsid[A-Za-z]*="[0-9A-Fa-f]+"')
_RSIDS_BLOCK = re.compile(rb"<w:rsids>.*?</w:rsids>", re.S)
_FIELD_ID = re.compile(rb'(<a:fld id=")\{[0-9A-Fa-f-]+\}')


# --- deterministic packaging ---------------------------------------------------------------


def _numbered_field_ids(data: bytes) -> bytes:
    """LibreOffice gives every field a random GUID; number them instead."""
    counter = iter(range(1, 1_000_000))
    return _FIELD_ID.sub(
        lambda m: m.group(1) + b"{00000000-0000-4000-8000-%012d}" % next(counter), data
    )


def freeze_zip(path: Path) -> None:
    """Rewrite an OOXML package with fixed member timestamps and fixed document dates."""
    with zipfile.ZipFile(path) as zf:
        members = [(info.filename, zf.read(info.filename)) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            if name == "docProps/core.xml":
                text = _CORE_DATE.sub(rf"\g<1>{FIXED_DATE}\g<3>", data.decode("utf-8"))
                data = text.encode("utf-8")
            if name.startswith("word/") and name.endswith(".xml"):
                data = _RSIDS_BLOCK.sub(b"", _RSID.sub(b"", data))
            if name.startswith("ppt/") and name.endswith(".xml"):
                data = _numbered_field_ids(data)
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)


def through_libreoffice(source: Path, target: Path) -> None:
    """Open ``source`` in headless LibreOffice and save it to ``target`` (same format)."""
    with tempfile.TemporaryDirectory(prefix="office-assets-") as tmp:
        profile = Path(tmp) / "profile"
        outdir = Path(tmp) / "out"
        subprocess.run(
            [
                "soffice",
                f"-env:UserInstallation=file://{profile}",
                "--headless",
                "--convert-to",
                source.suffix.lstrip("."),
                "--outdir",
                str(outdir),
                str(source),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        shutil.copyfile(outdir / source.name, target)


def task_dir(task_id: str) -> Path:
    folder = ASSETS / task_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- Calc -----------------------------------------------------------------------------------


def new_book(sheet: str, rows: list[list]) -> openpyxl.Workbook:
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = sheet
    for row in rows:
        ws.append(row)
    return book


def save_book(book: openpyxl.Workbook, path: Path) -> None:
    book.properties.creator = "osworld-gym"
    book.save(path)
    freeze_zip(path)


def calc_task(task_id: str, name: str, book: Callable[[], openpyxl.Workbook],
              change: Callable[[openpyxl.Workbook], None] | None) -> None:
    """Write the document and the expected book: after ``change``, or as it is without one."""
    folder = task_dir(task_id)
    save_book(book(), folder / name)
    expected = book()
    if change is not None:
        change(expected)
    save_book(expected, folder / f"expected_{name}")


SALES = [
    ["Region", "Revenue"],
    ["North", 12500],
    ["South", 9800],
    ["East", 15320],
    ["West", 11075],
    ["Central", 8640],
    ["Online", 20410],
]

ORDER = [
    ["Item", "Unit Price", "Quantity"],
    ["Stapler", 7.25, 4],
    ["Paper ream", 5.49, 12],
    ["Ballpoint pens", 2.99, 20],
    ["Desk lamp", 24.5, 2],
    ["Sticky notes", 1.75, 30],
    ["Whiteboard", 39.99, 1],
    ["Markers", 3.6, 15],
    ["Folders", 0.85, 40],
    ["Scissors", 4.3, 6],
    ["Calculator", 12.95, 3],
]

SCORES = [
    ["Student", "Class", "Score"],
    ["Alice Moreau", "B", 78],
    ["Ben Okafor", "A", 91],
    ["Chloe Tanaka", "C", 66],
    ["David Reyes", "A", 85],
    ["Elena Petrova", "B", 97],
    ["Farid Haddad", "C", 59],
    ["Grace Lindqvist", "A", 73],
    ["Hugo Martin", "B", 88],
    ["Ines Costa", "C", 94],
    ["Jonas Weber", "A", 81],
]

EXPENSES = [
    ["Date", "Category", "Amount"],
    ["2024-03-02", "Train", 48.6],
    ["2024-03-02", "Hotel", 129.0],
    ["2024-03-03", "Meals", 36.4],
    ["2024-03-04", "Taxi", 22.8],
    ["2024-03-05", "Hotel", 129.0],
]

INVENTORY = [
    ["SKU", "Product", "Stock", "Reorder Level"],
    ["P-1001", "Copper wire", 240, 100],
    ["P-1002", "Steel bolts", 1800, 500],
    ["P-1003", "Rubber seals", 75, 120],
    ["P-1004", "Hinges", 310, 150],
    ["P-1005", "Wall plugs", 960, 400],
    ["P-1006", "Cable ties", 55, 200],
]

FIRST_NAMES = ["Ada", "Bruno", "Carla", "Dmitri", "Esther", "Felix", "Gita", "Hamid",
               "Iris", "Jakob", "Kenji", "Lucia", "Mateo", "Nora", "Omar", "Priya"]
CITIES = ["Lisbon", "Oslo", "Dublin", "Vienna", "Porto", "Bergen", "Cork", "Graz"]
CONTACTS = [["ID", "Name", "City", "Phone"]] + [
    [i + 1, f"{FIRST_NAMES[i % 16]} {chr(65 + (i * 7) % 26)}.", CITIES[(i * 3) % 8],
     f"555-{1000 + i * 37:04d}"]
    for i in range(40)
]

BOOKS = [
    ["Title", "Author", "Year", "Price"],
    ["Winter Harbour", "Ilse Brandt", 2015, 14.99],
    ["A Map of Clouds", "Tomas Quill", 2018, 12.5],
    ["Northern Lanterns", "Ravi Kumar", 2011, 9.99],
    ["Glass Meridian", "June Holloway", 2020, 21.0],
    ["Paper Tigers", "Lena Ortiz", 2009, 8.75],
]
NEW_BOOK = ["The Silent Orchard", "Mara Ellison", 2021, 18.5]


def sales_total(book: openpyxl.Workbook) -> None:
    ws = book.active
    ws["A8"] = "Total"
    ws["B8"] = sum(row[1] for row in SALES[1:])


def line_totals(book: openpyxl.Workbook) -> None:
    ws = book.active
    ws["D1"] = "Line Total"
    for r, (_, price, qty) in enumerate(ORDER[1:], start=2):
        ws.cell(row=r, column=4, value=price * qty)


def sort_scores(book: openpyxl.Workbook) -> None:
    ws = book.active
    rows = sorted(SCORES[1:], key=lambda row: row[2], reverse=True)
    for r, row in enumerate(rows, start=2):
        for c, value in enumerate(row, start=1):
            ws.cell(row=r, column=c, value=value)


def expenses_book() -> openpyxl.Workbook:
    book = new_book("Sheet1", EXPENSES)
    notes = book.create_sheet("Notes")
    notes["A1"] = "Receipts are filed in the blue folder."
    return book


def rename_expenses(book: openpyxl.Workbook) -> None:
    book["Sheet1"].title = "March 2024"


def freeze_top_row(book: openpyxl.Workbook) -> None:
    book.active.freeze_panes = "A2"


def add_book_row(book: openpyxl.Workbook) -> None:
    book.active.append(NEW_BOOK)


def make_calc() -> None:
    calc_task("calc-sum-sales-total", "quarterly_sales.xlsx",
              lambda: new_book("Sales", SALES), sales_total)
    calc_task("calc-fill-line-totals", "order_lines.xlsx",
              lambda: new_book("Order", ORDER), line_totals)
    calc_task("calc-sort-scores-descending", "exam_scores.xlsx",
              lambda: new_book("Scores", SCORES), sort_scores)
    calc_task("calc-rename-sheet", "travel_expenses.xlsx", expenses_book, rename_expenses)
    # Bold header: check_cell rules; the document itself is the reference for the data.
    calc_task("calc-bold-header-row", "inventory.xlsx", lambda: new_book("Stock", INVENTORY),
              None)
    calc_task("calc-freeze-header-row", "contacts.xlsx",
              lambda: new_book("Contacts", CONTACTS), freeze_top_row)
    calc_task("calc-append-book-row", "books.xlsx", lambda: new_book("Books", BOOKS),
              add_book_row)


# --- Writer ---------------------------------------------------------------------------------


def new_document(paragraphs: list[str]) -> docx.Document:
    document = docx.Document()
    style = document.styles["Normal"]
    style.font.name = "Liberation Serif"
    style.font.size = Pt(12)
    for text in paragraphs:
        document.add_paragraph(text)
    return document


def save_document(document: docx.Document, path: Path) -> None:
    document.core_properties.author = "osworld-gym"
    document.core_properties.last_modified_by = "osworld-gym"
    document.core_properties.revision = 1
    document.save(path)
    freeze_zip(path)


def writer_task(task_id: str, name: str, paragraphs: list[str],
                change: Callable[[docx.Document], None] | None) -> None:
    """Write the document and the expected one: after ``change``, or as it is without one."""
    folder = task_dir(task_id)
    save_document(new_document(paragraphs), folder / name)
    expected = new_document(paragraphs)
    if change is not None:
        change(expected)
    save_document(expected, folder / f"expected_{name}")


STATUS = [
    "The migration of the billing service finished on schedule this week.",
    "Two performance regressions were found in the reporting module and are being fixed.",
    "Next week the team will start load testing the new payment gateway.",
]
STATUS_TITLE = "Phoenix Project Weekly Update"

GUIDE = [
    "Choose a colour palette before you design the first page.",
    "Use one accent colour for links and buttons, and keep body text dark grey.",
    "Background colours should never compete with the content.",
    "Check every colour pair for sufficient contrast.",
]

ESSAY = [
    "Rivers have shaped the growth of cities for thousands of years.",
    "They supplied drinking water, carried goods to distant markets and powered early mills.",
    "Today many urban rivers are being restored so that people can walk along their banks again.",
    "Clean rivers make cities healthier and more pleasant places to live.",
]

MEMO = [
    "Memorandum",
    "To: All staff",
    "From: Facilities team",
    "The main entrance will be closed on Friday for floor repairs. Please use the side door.",
]

MINUTES = [
    "Minutes of the garden committee meeting",
    "The committee agreed to plant new fruit trees along the north fence.",
    "Note: this paragraph is a leftover draft and should be removed.",
    "The next meeting will be held on the first Monday of May.",
]


def insert_title(document: docx.Document) -> None:
    document.paragraphs[0].insert_paragraph_before(STATUS_TITLE)


def replace_colour(document: docx.Document) -> None:
    for paragraph in document.paragraphs:
        for run in paragraph.runs:
            run.text = run.text.replace("colour", "color")


def double_spacing(document: docx.Document) -> None:
    for paragraph in document.paragraphs:
        paragraph.paragraph_format.line_spacing = 2.0


def delete_note(document: docx.Document) -> None:
    for paragraph in document.paragraphs:
        if paragraph.text.startswith("Note:"):
            paragraph._element.getparent().remove(paragraph._element)


def make_writer() -> None:
    writer_task("writer-insert-title", "status_report.docx", STATUS, insert_title)
    writer_task("writer-replace-colour", "style_guide.docx", GUIDE, replace_colour)
    writer_task("writer-double-line-spacing", "essay.docx", ESSAY, double_spacing)
    # Centring: is_first_line_centered, and the document itself is the reference text.
    writer_task("writer-center-first-line", "memo.docx", MEMO, None)
    writer_task("writer-delete-paragraph", "minutes.docx", MINUTES, delete_note)


# --- Impress --------------------------------------------------------------------------------

DeckSpec = list[tuple[str, list[str]]]  # (title, body lines); no body lines: title slide


def new_deck(slides: DeckSpec) -> pptx.Presentation:
    deck = pptx.Presentation()
    for title, body in slides:
        if body and body[0].startswith("subtitle:"):
            slide = deck.slides.add_slide(deck.slide_layouts[0])
            slide.placeholders[1].text = body[0].removeprefix("subtitle:")
        else:
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.placeholders[1].text = "\n".join(body)
        slide.shapes.title.text = title
    return deck


def save_deck(deck: pptx.Presentation, path: Path) -> None:
    deck.core_properties.author = "osworld-gym"
    deck.core_properties.last_modified_by = "osworld-gym"
    deck.core_properties.revision = 1
    deck.save(path)
    freeze_zip(path)


def impress_task(task_id: str, name: str, slides: DeckSpec,
                 change: Callable[[pptx.Presentation], None]) -> None:
    """The deck as python-pptx writes it; the expected deck changed, then saved by LibreOffice."""
    folder = task_dir(task_id)
    save_deck(new_deck(slides), folder / name)
    expected = new_deck(slides)
    change(expected)
    with tempfile.TemporaryDirectory(prefix="office-assets-") as tmp:
        changed = Path(tmp) / name
        save_deck(expected, changed)
        target = folder / f"expected_{name}"
        through_libreoffice(changed, target)
        freeze_zip(target)


PITCH = [
    ("Draft Title", ["subtitle:Board meeting, January"]),
    ("Highlights", ["Revenue grew by 12 percent", "Two new offices opened"]),
]
TRAINING = [
    ("Safety Training", ["subtitle:Warehouse staff"]),
    ("Outdated Procedures", ["This slide is no longer used"]),
    ("Emergency Exits", ["Know the two nearest exits", "Keep corridors clear"]),
]
ROADMAP = [
    ("Product Roadmap", ["subtitle:Spring release"]),
    ("Milestones", ["Beta in April", "Launch in June"]),
]
WELCOME = [
    ("Welcome Day", ["subtitle:New employees"]),
    ("Today's Plan", ["Tour of the building", "Meet your mentor"]),
]
QUARTER = [
    ("Sales Update", ["subtitle:Third quarter"]),
    ("Key Numbers", ["Orders up 8 percent", "Returns down 3 percent"]),
]


def retitle(deck: pptx.Presentation) -> None:
    deck.slides[0].shapes.title.text = "Annual Review 2024"


def delete_second(deck: pptx.Presentation) -> None:
    slides = deck.slides._sldIdLst
    slides.remove(list(slides)[1])


def duplicate_milestones(deck: pptx.Presentation) -> None:
    """A copy of slide 2 at the end, retitled (what Slide > Duplicate Slide gives)."""
    title, body = ROADMAP[1]
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.placeholders[1].text = "\n".join(body)
    slide.shapes.title.text = f"More {title}"


def add_notes(deck: pptx.Presentation) -> None:
    deck.slides[0].notes_slide.notes_text_frame.text = "Greet everyone and introduce the hosts."


def bold_second_title(deck: pptx.Presentation) -> None:
    for run in deck.slides[1].shapes.title.text_frame.paragraphs[0].runs:
        run.font.bold = True


def make_impress() -> None:
    impress_task("impress-change-title", "pitch.pptx", PITCH, retitle)
    impress_task("impress-delete-second-slide", "training.pptx", TRAINING, delete_second)
    impress_task("impress-duplicate-slide", "roadmap.pptx", ROADMAP, duplicate_milestones)
    impress_task("impress-add-speaker-notes", "welcome.pptx", WELCOME, add_notes)
    impress_task("impress-bold-slide-title", "sales_update.pptx", QUARTER, bold_second_title)


def main() -> None:
    make_calc()
    make_writer()
    make_impress()


if __name__ == "__main__":
    main()
