"""Application-config metrics: vlcrc, gimprc, Thunderbird prefs and filters, LibreOffice xcu."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from osworld_gym.evaluation.metrics import get_metric

VLCRC = """\
# VLC media player preferences
#qt-bgcone=1
qt-bgcone=0
#qt-max-volume=125
qt-minimal-view=1
#one-instance-when-started-from-file=1
play-and-exit=1
global-key-play-pause=Ctrl+Space
qt-slider-colours=10;20;30;40;50;60;70;80;90;1;2;3
input-record-path=/home/user/Desktop
"""


@pytest.mark.parametrize(
    ("name", "rule", "score"),
    [
        ("check_qt_bgcone", {"expected_qt_bgcone": 0}, 1.0),
        ("check_qt_bgcone", {"expected_qt_bgcone": "1"}, 0.0),
        ("check_qt_max_volume", {"expected_qt_max_volume": 125}, 1.0),  # commented default
        ("check_qt_max_volume", {"expected_qt_max_volume": 200}, 0.0),
        ("check_qt_minimal_view", {"expected_qt_minimal_view": 1}, 1.0),
        ("check_one_instance_when_started_from_file",
         {"expected_one_instance_when_started_from_file": 1}, 1.0),
        ("check_one_instance_when_started_from_file",
         {"expected_one_instance_when_started_from_file": 0}, 0.0),
        ("check_play_and_exit", {"expected_play_and_exit": 1}, 1.0),
        ("check_play_and_exit", {"expected_play_and_exit": 0}, 0.0),
        ("check_global_key_play_pause", {"expected_global_key_play_pause": 1}, 1.0),
        ("check_global_key_play_pause", {"expected_global_key_play_pause": 0}, 0.0),
        ("check_qt_slider_colours", {"type": "blackish"}, 1.0),
        ("check_qt_slider_colours", {"type": "match", "expected_qt_slider_colours": "1;2"}, 0.0),
        ("is_vlc_recordings_folder", {"recording_file_path": "/home/user/Desktop"}, 1.0),
        ("is_vlc_recordings_folder", {"recording_file_path": "/home/user/Videos"}, 0.0),
    ],
)  # fmt: skip
def test_vlc_settings(tmp_path: Path, name: str, rule: dict[str, Any], score: float) -> None:
    path = tmp_path / "vlcrc"
    path.write_text(VLCRC)
    assert get_metric(name)(str(path), rule) == score
    assert get_metric(name)(None, rule) == 0.0


def test_vlc_defaults_apply_when_a_setting_is_absent(tmp_path: Path) -> None:
    path = tmp_path / "vlcrc"
    path.write_text("# nothing set\n")
    assert get_metric("check_qt_bgcone")(str(path), {"expected_qt_bgcone": 1}) == 1.0
    assert get_metric("check_qt_slider_colours")(str(path), {"type": "blackish"}) == 0.0
    assert get_metric("is_vlc_recordings_folder")(str(path), {"recording_file_path": "/"}) == 0.0
    with pytest.raises(ValueError, match="unknown rule type"):
        get_metric("check_qt_slider_colours")(str(path), {"type": "rainbow"})


VLC_READERS = [
    ("check_qt_bgcone", {"expected_qt_bgcone": 0}),
    ("check_qt_max_volume", {"expected_qt_max_volume": 125}),
    ("check_qt_minimal_view", {"expected_qt_minimal_view": 0}),
    ("check_one_instance_when_started_from_file",
     {"expected_one_instance_when_started_from_file": 1}),
    ("check_global_key_play_pause", {"expected_global_key_play_pause": 0}),
    ("check_qt_slider_colours", {"type": "blackish"}),
    ("is_vlc_recordings_folder", {"recording_file_path": "/"}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "rule"), VLC_READERS)
def test_vlcrc_not_utf8_raises(tmp_path: Path, name: str, rule: dict[str, Any]) -> None:
    path = tmp_path / "vlcrc"
    path.write_bytes(b"qt-bgcone=0\n# caf\xe9\n")  # OSWorld decodes the bytes strictly
    with pytest.raises(UnicodeDecodeError):
        get_metric(name)(str(path), rule)


def test_vlcrc_is_read_as_osworld_reads_it(tmp_path: Path) -> None:
    metric = get_metric("check_qt_bgcone")
    path = tmp_path / "vlcrc"
    path.write_bytes(b"qt-bgcone=0\rx=1\n")  # a lone CR ends no line: the value is "1"
    assert metric(str(path), {"expected_qt_bgcone": 0}) == 0.0
    assert metric(str(path), {"expected_qt_bgcone": 1}) == 1.0
    path.write_bytes(b"qt-bgcone=0\r\n")  # a CRLF's CR is stripped with the value
    assert metric(str(path), {"expected_qt_bgcone": 0}) == 1.0
    # an int is compared as its text, anything else as it is
    assert metric(str(path), {"expected_qt_bgcone": "0"}) == 1.0
    assert metric(str(path), {"expected_qt_bgcone": 0.0}) == 0.0


@pytest.mark.parametrize(
    ("colours", "score"),
    [
        ("10;20;30;40;50;60", 1.0),
        ("10;20;30;40;50;160", 0.0),
        ("10;20;30;200", 1.0),  # an incomplete last triple goes unchecked, as in OSWorld
        ("10;20;30;40;200", 1.0),
        ("200;20", 1.0),  # no complete triple at all
        ("black", 0.0),
    ],
)
def test_blackish_slider_colours(tmp_path: Path, colours: str, score: float) -> None:
    path = tmp_path / "vlcrc"
    path.write_text(f"qt-slider-colours={colours}\n")
    assert get_metric("check_qt_slider_colours")(str(path), {"type": "blackish"}) == score


GIMPRC = "# GIMP gimprc\n\n(undo-levels 100)\n(default-image (width 640))\n"


@pytest.mark.parametrize(
    ("rule", "score"),
    [
        ({"key": "undo-levels", "value": "100"}, 1.0),
        ({"key": "undo-levels", "value": "5"}, 0.0),
        ({"key": ["default-image", "(width"], "value": "640"}, 1.0),
        ({"key": "missing", "value": "1"}, 0.0),
    ],
)
def test_check_config_status(tmp_path: Path, rule: dict[str, Any], score: float) -> None:
    path = tmp_path / "gimprc"
    path.write_text(GIMPRC)
    assert get_metric("check_config_status")(str(path), rule) == score
    assert get_metric("check_config_status")(None, rule) == 0.0


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("(theme x)\n  \n(undo-levels 100)\n", {"key": "undo-levels", "value": "100"}),
        ("()\n(undo-levels 100)\n", {"key": "undo-levels", "value": "100"}),
        ("  \n(size 1 2)\n", {"key": ["size", "1"], "value": "2"}),
        ("(size)\n(size 1 2)\n", {"key": ["size", "1"], "value": "2"}),
    ],
)
def test_check_config_status_short_line_raises(
    tmp_path: Path, text: str, rule: dict[str, Any]
) -> None:
    # OSWorld skips only "#" lines and empty ones; a line with too few items to compare
    # before the match makes its indexing raise.
    path = tmp_path / "gimprc"
    path.write_text(text)
    with pytest.raises(IndexError):
        get_metric("check_config_status")(str(path), rule)


def test_check_config_status_short_lines_that_pass(tmp_path: Path) -> None:
    metric = get_metric("check_config_status")
    path = tmp_path / "gimprc"
    path.write_text("(other)\n(size 1 2)\n")  # the name differs: item 1 is never read
    assert metric(str(path), {"key": ["size", "1"], "value": "2"}) == 1.0
    path.write_text("  \n(size 1 2)\n")  # a key of neither kind reads no item
    assert metric(str(path), {"key": 5, "value": "2"}) == 0.0


PREFS = """\
// Mozilla User Preferences
user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");
user_pref("mail.server.server1.check_time", 10);
user_pref("mail.spam.enabled", true);
"""


@pytest.mark.parametrize(
    ("rule", "score"),
    [
        ({"expect": {"mail.identity.id1.htmlSigText": {"method": "re.S", "ref": "Anonym\nXYZ"}}},
         1.0),
        ({"expect": {"mail.server.server1.check_time": {"method": "eq", "ref": 10}}}, 1.0),
        ({"expect": {"mail.server.server1.check_time": {"method": "eq", "ref": 5}}}, 0.0),
        ({"expect": {"absent.pref": {"method": "eq", "ref": 1}}}, 0.0),
        ({"unexpect": {"mail.spam.enabled": {"method": "eq", "ref": False}}}, 1.0),
        ({"unexpect": {"mail.spam.enabled": {"method": "eq", "ref": True}}}, 0.0),
    ],
)  # fmt: skip
def test_check_thunderbird_prefs(tmp_path: Path, rule: dict[str, Any], score: float) -> None:
    path = tmp_path / "prefs.js"
    path.write_text(PREFS)
    assert get_metric("check_thunderbird_prefs")(str(path), rule) == score
    assert get_metric("check_thunderbird_prefs")(None, rule) == 0.0


def test_check_thunderbird_prefs_value_not_json_raises(tmp_path: Path) -> None:
    path = tmp_path / "prefs.js"
    path.write_text(PREFS + "user_pref(\"broken.value\", 'single');\n")
    rule = {"expect": {"mail.spam.enabled": {"method": "eq", "ref": True}}}
    with pytest.raises(ValueError):  # OSWorld parses every pref line unguarded
        get_metric("check_thunderbird_prefs")(str(path), rule)


FILTERS = """\
version="9"
logging="no"
name="Promo"
enabled="yes"
type="17"
action="Move to folder"
actionValue="mailbox://nobody@Local%20Folders/Promotions"
condition="AND (subject,contains,discount) AND (from,is,\\"shop\\")"
"""
PROMO = {
    "enabled": "yes",
    "action": "Move to folder",
    "actionValue": "mailbox://nobody@Local%20Folders/Promotions",
    "condition": ["AND (subject,contains,discount)", 'AND (from,is,"shop")'],
}


@pytest.mark.parametrize(
    ("rules", "score"),
    [
        ({"expect": [PROMO]}, 1.0),
        ({"expect": [{**PROMO, "enabled": "no"}]}, 0.0),
        ({"expect": [{**PROMO, "condition": ["AND (subject,contains,discount)"]}]}, 0.0),
        ({"unexpect": [{"name": "Promo"}]}, 0.0),
        ({"unexpect": [{"name": "Other"}]}, 1.0),
    ],
)
def test_check_thunderbird_filter(tmp_path: Path, rules: dict[str, Any], score: float) -> None:
    path = tmp_path / "msgFilterRules.dat"
    path.write_text(FILTERS)
    assert get_metric("check_thunderbird_filter")(str(path), rules) == score
    assert get_metric("check_thunderbird_filter")(None, rules) == 0.0


def test_check_thunderbird_filter_reads_values_as_osworld(tmp_path: Path) -> None:
    metric = get_metric("check_thunderbird_filter")
    path = tmp_path / "msgFilterRules.dat"
    # OSWorld cuts two characters off each line for '"\n': a last line without its newline
    # loses the condition's ")", which then does not parse.
    path.write_text(FILTERS.rstrip("\n"))
    assert metric(str(path), {"expect": [PROMO]}) == 0.0
    assert metric(str(path), {"expect": [{"name": "Promo"}]}) == 1.0
    path.write_text('enabled="yes"\n' + FILTERS)  # a field before any filter's name
    with pytest.raises(ValueError, match="before the first name"):
        metric(str(path), {"expect": [PROMO]})
    path.write_bytes(FILTERS.encode() + b'name="caf\xe9"\n')
    with pytest.raises(UnicodeDecodeError):
        metric(str(path), {"expect": [PROMO]})


def xcu(*items: tuple[str, str, str]) -> str:
    body = "".join(
        f'<item oor:path="{path}"><prop oor:name="{prop}" oor:op="fuse"><value>{value}</value>'
        "</prop></item>"
        for path, prop, value in items
    )
    return f'<oor:items xmlns:oor="http://openoffice.org/2001/registry">{body}</oor:items>'


FONT = ("/org.openoffice.Office.Writer/DefaultFont", "Standard", "Times New Roman")
PRESENTER = ("/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen", "false")


def test_libreoffice_registry_metrics(tmp_path: Path) -> None:
    font = get_metric("find_default_font")
    presenter = get_metric("check_presenter_console_disable")
    both = tmp_path / "both.xcu"
    both.write_text(xcu(FONT, PRESENTER))
    neither = tmp_path / "neither.xcu"
    neither.write_text(xcu((FONT[0], FONT[1], "Arial"), (*PRESENTER[:2], "true")))
    broken = tmp_path / "broken.xcu"
    broken.write_text("<oor:items")
    assert font(str(both), {"font_name": "Times New Roman"}) == 1.0
    assert font(str(neither), {"font_name": "Times New Roman"}) == 0.0
    assert font(str(broken), {"font_name": "Times New Roman"}) == 0.0
    assert font(None, {"font_name": "Times New Roman"}) == 0.0
    assert presenter(str(both)) == 1.0
    assert presenter(str(neither)) == 0.0
    assert presenter(str(broken)) == 0.0
    assert presenter(None) == 0.0
