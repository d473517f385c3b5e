"""Generate the asset files of the ``os``, ``text_editor`` and ``multi_apps`` tasks.

Run from anywhere: ``python envs/desktop-basics/assets/_make_assets_system.py``. The output is
deterministic (fixed seeds, fixed zip timestamps), so running it again leaves the committed
files unchanged. Each task's files go to ``assets/<task id>/``; files named ``*_expected*`` are
the references its evaluator compares with. They stay on the host (a ``cloud_file`` getter's
``local_path``) and are never uploaded into the desktop, where an agent could copy or edit its
answer key. The script prints the numbers that task instructions and oracles rely on.
"""

from __future__ import annotations

import io
import random
import re
import zipfile
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
STAMP = b"2024-01-01T00:00:00Z"


def write(task_id: str, name: str, content: str | bytes) -> Path:
    """Write one asset file (text as UTF-8, newline line ends)."""
    path = ROOT / task_id / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def lines(*items: str) -> str:
    """Text made of ``items``, each ending with a newline."""
    return "".join(f"{item}\n" for item in items)


# --- os ----------------------------------------------------------------------------------------


def os_assets() -> dict[str, object]:
    facts: dict[str, object] = {}

    task = "os-rename-by-prefix"
    write(task, "draft_jan.txt", lines("January figures: pending review."))
    write(task, "draft_feb.txt", lines("February figures: pending review."))
    write(task, "draft_mar.txt", lines("March figures: pending review."))
    write(task, "draft_notes.md", lines("# Notes", "", "Keep this file as it is."))
    write(task, "summary.txt", lines("Quarterly summary, first draft."))

    task = "os-sort-downloads-by-type"
    rng = random.Random(7)
    for name in ("beach.jpg", "city_night.jpg", "scan_0012.png", "logo.png"):
        write(task, name, bytes(rng.randrange(256) for _ in range(64)))
    write(task, "invoice_2024_03.pdf", b"%PDF-1.4\n% placeholder invoice\n")
    write(task, "shopping.txt", lines("eggs", "flour", "coffee"))

    task = "os-write-file-content"
    write(
        task,
        "motd_expected.txt",
        lines("Welcome to the build server", "Maintenance: Sundays 02:00-04:00"),
    )

    task = "os-chmod-script"
    write(
        task,
        "backup.sh",
        lines(
            "#!/bin/sh",
            "# Copy the documents folder into a dated backup folder.",
            'dest="$HOME/backups/$(date +%Y-%m-%d)"',
            'mkdir -p "$dest"',
            'cp -r "$HOME/Documents" "$dest/"',
        ),
    )

    task = "os-count-error-lines"
    rng = random.Random(2024)
    services = ["web", "db", "auth", "cache", "mail"]
    messages = {
        "INFO": ["request served", "connection opened", "job finished", "user logged in"],
        "WARN": ["slow response", "retrying connection", "disk usage at 85 percent"],
        "ERROR": ["connection refused", "timeout after 30 s", "invalid token", "disk full"],
    }
    log, errors, second = [], 0, 0
    for _ in range(80):
        second += rng.randrange(1, 40)
        level = rng.choices(["INFO", "WARN", "ERROR"], weights=[70, 18, 12])[0]
        errors += level == "ERROR"
        stamp = f"2024-03-14 {8 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        log.append(f"{stamp} {level:<5} [{rng.choice(services)}] {rng.choice(messages[level])}")
    write(task, "server.log", lines(*log))
    write(task, "error_count_expected.txt", lines(str(errors)))
    facts["os-count-error-lines: ERROR lines"] = errors

    task = "os-find-and-copy"
    receipt = lines(
        "Receipt 0419",
        "Date: 2022-04-19",
        "Payee: City Tax Office",
        "Amount: 318.40 EUR",
        "Reference: TX-2022-0419-77",
    )
    write(task, "tax_receipt_0419.txt", receipt)
    write(task, "tax_receipt_0419_expected.txt", receipt)
    write(task, "receipt_0311.txt", lines("Receipt 0311", "Amount: 12.00 EUR"))
    write(task, "travel_plan.txt", lines("Lisbon, 3 nights, May."))
    write(task, "minutes.txt", lines("Minutes of the annual meeting."))

    task = "os-tar-folder"
    write(task, "todo.txt", lines("- write the report", "- book the room"))
    write(task, "ideas.txt", lines("A weekly digest email.", "A shared calendar."))
    write(task, "2024-05-02.txt", lines("Meeting on 2 May: budget approved."))

    task = "os-delete-tmp-files"
    write(task, "main.c", lines("int main(void) { return 0; }"))
    write(task, "notes.tmp", lines("scratch"))
    write(task, "main.o", b"\x7fELF placeholder object\n")
    write(task, "cache.tmp", lines("cached"))
    write(task, "readme.txt", lines("How to build: run make."))
    write(task, "draft.tmp", lines("old draft"))
    write(task, "plan.txt", lines("Plan for version 2."))
    return facts


# --- text editor --------------------------------------------------------------------------


def editor_assets() -> dict[str, object]:
    facts: dict[str, object] = {}

    task = "editor-replace-word"
    letter = lines(
        "Dear Ms. Hall,",
        "",
        "Thank you for the colour samples. The colour of the second sample",
        "matches our logo best, and the other colours will work for the posters.",
        "Could you send the final colour chart by Friday?",
        "",
        "Kind regards,",
        "Peter",
    )
    write(task, "letter.txt", letter)
    write(task, "letter_expected.txt", letter.replace("colour", "color"))

    task = "editor-append-line"
    todo = ["Shopping list", "- bread", "- tomatoes", "- olive oil", "- rice"]
    write(task, "shopping.txt", lines(*todo))
    write(task, "shopping_expected.txt", lines(*todo, "- green tea"))

    task = "editor-delete-line"
    guests = ["Guest list", "Anna Berg", "Carlos Diaz", "Marcus Webb", "Nina Patel", "Olga Ivanova"]
    write(task, "guests.txt", lines(*guests))
    write(task, "guests_expected.txt", lines(*[g for g in guests if g != "Marcus Webb"]))

    task = "editor-fix-indentation"
    two = [
        "def mean(values):",
        "  total = 0",
        "  for value in values:",
        "    total += value",
        "  return total / len(values)",
        "",
        "",
        "def spread(values):",
        "  if not values:",
        "    return 0",
        "  return max(values) - min(values)",
    ]
    four = ["    " * ((len(s) - len(s.lstrip(" "))) // 2) + s.lstrip(" ") for s in two]
    write(task, "stats.py", lines(*two))
    write(task, "stats_expected.py", lines(*four))

    task = "editor-save-as-new-name"
    body = [
        "",
        "The office will be closed on Monday, 3 June, for the annual inventory.",
        "Urgent requests go to the front desk on the ground floor.",
    ]
    write(task, "announcement_draft.txt", lines("DRAFT - do not distribute", *body))
    write(task, "announcement_draft_expected.txt", lines("DRAFT - do not distribute", *body))
    write(task, "announcement_final_expected.txt", lines("FINAL", *body))
    return facts


# --- multi apps -----------------------------------------------------------------------------


def _xlsx_bytes(rows: list[tuple[object, ...]]) -> bytes:
    """An xlsx workbook with ``rows`` on its one sheet; fixed metadata and zip timestamps."""
    import datetime

    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Expenses"
    for row in rows:
        ws.append(row)
    for row in ws.iter_rows(min_row=2, min_col=2, max_col=2):
        for cell in row:
            cell.number_format = "0.00"
    ws.column_dimensions["A"].width = 24
    fixed = datetime.datetime(2024, 1, 1)
    wb.properties.creator = "osworld-gym"
    wb.properties.created = wb.properties.modified = fixed
    raw = io.BytesIO()
    wb.save(raw)
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":  # openpyxl stamps the save time here
                data = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>" + STAMP, data)
            dst.writestr(entry, data)
    return out.getvalue()


def multi_assets() -> dict[str, object]:
    facts: dict[str, object] = {}

    task = "multi-wordcount-into-report"
    essay = lines(
        "Rivers shape the land slowly. Over thousands of years a small stream can carve",
        "a deep valley, carry sand to the sea and build wide plains where farmers grow",
        "grain. People have always settled near rivers because they bring water, food",
        "and a road for trade. Today many rivers are dammed for power, which changes",
        "how they flood and where their sand ends up.",
    )
    words = len(essay.split())
    report = ["Essay review", "Title: Rivers", "Reviewer: J. Okafor"]
    write(task, "essay.txt", essay)
    write(task, "review.txt", lines(*report))
    write(task, "review_expected.txt", lines(*report, f"Words: {words}"))
    facts["multi-wordcount-into-report: words"] = words

    task = "multi-calc-total-to-text"
    items = [
        ("Office chairs", "412.50"),
        ("Printer paper", "38.90"),
        ("Toner", "129.99"),
        ("Coffee machine", "249.00"),
        ("Desk lamps", "87.45"),
        ("Whiteboard", "64.20"),
        ("Cables", "23.75"),
        ("Plants", "56.30"),
    ]
    rows: list[tuple[object, ...]] = [("Item", "Amount")]
    rows += [(name, float(amount)) for name, amount in items]
    total = sum(Decimal(amount) for _, amount in items)
    write(task, "expenses.xlsx", _xlsx_bytes(rows))
    write(task, "summary.txt", "")
    write(task, "summary_expected.txt", lines(f"Total: {total:.2f}"))
    facts["multi-calc-total-to-text: total"] = f"{total:.2f}"

    task = "multi-sorted-tags-heading"
    tags = [
        "python",
        "linux",
        "backup",
        "network",
        "python",
        "storage",
        "linux",
        "docker",
        "backup",
        "monitoring",
        "python",
        "security",
        "docker",
        "network",
        "cron",
    ]
    write(task, "tags.txt", lines(*tags))
    write(task, "tags_sorted_expected.txt", lines("# Tags", *sorted(set(tags))))
    return facts


def main() -> None:
    facts = {**os_assets(), **editor_assets(), **multi_assets()}
    for key, value in facts.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
