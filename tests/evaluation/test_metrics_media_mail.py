"""MP3 tags (written with mutagen), window sizes, Thunderbird mbox folders, a city column."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from osworld_gym.evaluation.metrics import get_metric, metrics_for
from osworld_gym.evaluation.metrics.table_checks import compare_conference_city_in_order_1_0_2

# --- check_mp3_meta --------------------------------------------------------------------------


def tagged_mp3(path: Path, **tags: str) -> str:
    easyid3 = pytest.importorskip("mutagen.easyid3")
    path.write_bytes(b"")
    id3 = easyid3.EasyID3()
    for key, value in tags.items():
        id3[key] = value
    id3.save(str(path))
    return str(path)


RULES = {
    "title": {"method": "eq", "ref": "Missing You"},
    "artist": {"method": "eq", "ref": "Cheng Xiang"},
}


def test_check_mp3_meta(tmp_path: Path) -> None:
    metric = get_metric("check_mp3_meta")
    good = tagged_mp3(tmp_path / "good.mp3", title="Missing You", artist="Cheng Xiang")
    assert metric(good, RULES) == 1.0
    wrong = tagged_mp3(tmp_path / "wrong.mp3", title="Missing You", artist="Someone")
    assert metric(wrong, RULES) == 0.0
    untitled = tagged_mp3(tmp_path / "untitled.mp3", artist="Cheng Xiang")
    assert metric(untitled, RULES) == 0.0  # a missing field reads as ""
    assert metric(untitled, {"title": {"method": "eq", "ref": ""}}) == 1.0
    assert metric(good, {"title": {"method": "re", "ref": "^Missing"}}) == 1.0
    plain = tmp_path / "plain.mp3"
    plain.write_bytes(b"\xff\xfb\x90\x00" + b"\x00" * 200)  # audio frame bytes, no ID3 tag
    assert metric(str(plain), RULES) == 0.0
    assert metric(None, RULES) == 0.0
    assert metric(str(tmp_path / "absent.mp3"), RULES) == 0.0


# --- is_vlc_fullscreen -----------------------------------------------------------------------


def test_is_vlc_fullscreen() -> None:
    metric = get_metric("is_vlc_fullscreen")
    screen = {"width": 1920, "height": 1080}
    assert metric(screen, {"width": 1920, "height": 1080}) == 1.0
    assert metric(screen, {"width": 1280, "height": 720}) == 0.0
    assert metric(screen, {"width": 1920, "height": 1053}) == 0.0  # maximised, not fullscreen
    assert metric(screen, None) == 0.0  # no VLC window
    assert metric(None, screen) == 0.0


# --- check_thunderbird_folder ----------------------------------------------------------------


def message(subject: str, status: str = "0001", date: str = "Mon Jan  1 10:00:00 2024") -> str:
    return (
        f"From - {date}\n"
        f"X-Mozilla-Status: {status}\n"
        "X-Mozilla-Status2: 00000000\n"
        f"Subject: {subject}\n"
        "From: billing@example.com\n"
        "\n"
        f"Body of {subject}.\n"
    )


def mbox(tmp_path: Path, name: str, *messages: str) -> str:
    path = tmp_path / name
    path.write_text("".join(messages))
    return str(path)


def test_check_thunderbird_folder_scores_as_osworld(tmp_path: Path) -> None:
    """OSWorld's reader keeps only blank pieces between upper-case "FROM - " markers."""
    metric = get_metric("check_thunderbird_folder")
    gold = mbox(tmp_path, "gold", message("Invoice"), message("Receipt"))
    wrong = mbox(tmp_path, "wrong", message("Spam"))
    assert metric(wrong, gold) == 1.0  # any two non-empty folders pass
    assert metric([wrong, gold], [gold, wrong]) == 1.0
    empty = mbox(tmp_path, "empty")
    assert metric(empty, gold) == 0.0  # an empty file is one blank piece, a folder none
    assert metric(empty, empty) == 1.0
    marked = mbox(tmp_path, "marked", "FROM - x\n", "FROM - y\n")
    assert metric(marked, empty) == 1.0  # a leading "FROM - " leaves a blank piece too
    assert metric(marked, gold) == 0.0
    assert metric(None, gold) == 0.0
    assert metric(str(tmp_path / "absent"), gold) == 0.0
    latin = tmp_path / "latin"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    assert metric(str(latin), gold) == 0.0  # not UTF-8: OSWorld's read fails


def test_check_thunderbird_folder_fixed(tmp_path: Path) -> None:
    metric = metrics_for("fixed")["check_thunderbird_folder"]
    gold = mbox(tmp_path, "gold", message("Invoice"), message("Receipt"))
    # other order, other "From -" dates: same folder
    reordered = mbox(
        tmp_path, "reordered", message("Receipt", date="Tue"), message("Invoice", date="Wed")
    )
    assert metric(reordered, gold) == 1.0
    assert metric(mbox(tmp_path, "missing", message("Invoice")), gold) == 0.0
    extra = mbox(tmp_path, "extra", message("Invoice"), message("Receipt"), message("Spam"))
    assert metric(extra, gold) == 0.0
    deleted = mbox(
        tmp_path, "deleted", message("Invoice"), message("Receipt"), message("Spam", "0009")
    )
    assert metric(deleted, gold, remove_deleted=True) == 1.0
    assert metric(deleted, gold, remove_deleted=False) == 0.0
    doubled = mbox(tmp_path, "doubled", message("Invoice"), message("Receipt"), message("Receipt"))
    assert metric(doubled, gold) == 1.0
    assert metric(doubled, gold, remove_duplicate=False) == 0.0
    unread = mbox(tmp_path, "unread", message("Invoice", "0000"), message("Receipt"))
    assert metric(unread, gold) == 0.0
    assert metric(unread, gold, ignore_status=True) == 1.0


def test_check_thunderbird_folder_fixed_lists_and_missing_files(tmp_path: Path) -> None:
    metric = metrics_for("fixed")["check_thunderbird_folder"]
    a = mbox(tmp_path, "a", message("Invoice"))
    b = mbox(tmp_path, "b", message("Receipt"))
    assert metric([a, b], [a, b]) == 1.0
    assert metric([b, a], [a, b]) == 0.0  # folders are paired by position
    assert metric([a, None], [a, b]) == 0.0
    assert metric([a], [a, b]) == 0.0
    assert metric(None, a) == 0.0
    assert metric(str(tmp_path / "absent"), a) == 0.0


# --- compare_conference_city_in_order --------------------------------------------------------

CITIES = ["Scottsdale", "Atlanta", ["Lake Tahoe", "Stateline"], ["Montreal", "Montréal"]]
CITIES += [f"City {i}" for i in range(len(CITIES), 21)]


def city_book(tmp_path: Path, column: list[object]) -> str:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["C1"] = "City"
    for row, value in enumerate(column, start=2):
        sheet.cell(row=row, column=3, value=value)
    path = tmp_path / "ConferenceCity.xlsx"
    book.save(path)
    return str(path)


def first_spellings() -> list[object]:
    return [c if isinstance(c, str) else c[0] for c in CITIES]


def test_compare_conference_city_in_order(tmp_path: Path) -> None:
    metric = get_metric("compare_conference_city_in_order")
    rules = {"expected": CITIES}
    assert metric(city_book(tmp_path, first_spellings()), rules) == 1.0
    spelled = first_spellings()
    spelled[2], spelled[3] = "Stateline, NV", "Montréal (QC)"
    assert metric(city_book(tmp_path, spelled), rules) == 1.0
    spelled[3] = "MONTRÉAL (QC)"  # 2026.04 ignores case, accents and punctuation
    assert metric(city_book(tmp_path, spelled), rules) == 1.0
    assert compare_conference_city_in_order_1_0_2(city_book(tmp_path, spelled), rules) == 0.0
    spelled[3] = "Toronto"
    assert metric(city_book(tmp_path, spelled), rules) == 0.0
    swapped = first_spellings()
    swapped[0], swapped[1] = swapped[1], swapped[0]
    assert metric(city_book(tmp_path, swapped), rules) == 0.0
    assert metric(city_book(tmp_path, first_spellings()[:-1]), rules) == 0.0  # C22 empty
    assert metric(city_book(tmp_path, first_spellings()), {"expected": CITIES[:20]}) == 0.0
    assert metric(None, rules) == 0.0
    broken = tmp_path / "broken.xlsx"
    broken.write_text("not a workbook")
    assert metric(str(broken), rules) == 0.0


def test_missing_mutagen_raises_with_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osworld_gym.errors import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "mutagen", None)  # makes `import mutagen` fail
    with pytest.raises(DependencyNotInstalled, match=r"'mutagen'.*osworld-gym\[eval\]"):
        get_metric("check_mp3_meta")(str(tmp_path / "a.mp3"), RULES)
