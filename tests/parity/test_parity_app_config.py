"""Parity of the application-settings metrics with OSWorld's (``vlc``, ``gimp``, ``thunderbird``,
``slides`` and ``docs`` modules): VLC's ``vlcrc``, GIMP's ``gimprc``/``sessionrc``, Thunderbird's
``prefs.js`` and ``msgFilterRules.dat``, LibreOffice's ``registrymodifications.xcu``.

Each case writes the fetched config file to pytest's tmp folder; the rules come from the real
task files where they exist, with variations around them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from parity_harness import (
    ABSENT,
    FileContent,
    OSWorld,
    assert_same_score,
    make_file,
    real_rules,
)

pytestmark = pytest.mark.parity

# --- VLC ----------------------------------------------------------------------------------

_VLCRC_HEAD = "###\n### vlc 3.0.16\n###\n\n[qt] # Qt interface\n\n"


def vlcrc(*lines: str) -> str:
    """A ``vlcrc`` holding ``lines`` after VLC's header."""
    return _VLCRC_HEAD + "\n".join(lines) + "\n"


# (metric, rule key, marker, default) for VLC's one-value settings.
_VLC_SETTINGS = [
    ("check_qt_bgcone", "expected_qt_bgcone", "qt-bgcone", "1"),
    ("check_qt_max_volume", "expected_qt_max_volume", "qt-max-volume", "125"),
    ("check_qt_minimal_view", "expected_qt_minimal_view", "qt-minimal-view", "0"),
    (
        "check_one_instance_when_started_from_file",
        "expected_one_instance_when_started_from_file",
        "one-instance-when-started-from-file",
        "1",
    ),
]


def _vlc_setting_cases() -> list[Any]:
    cases = []
    for metric, key, marker, default in _VLC_SETTINGS:
        real = [rules for _, rules in real_rules(metric)] or [{key: 0}]
        for rules in real:
            want = rules[key]
            other = "7" if str(want) != "7" else "8"
            files = {
                "set": vlcrc(f"# comment\n#{marker}={default}", f"{marker}={want}"),
                "other": vlcrc(f"{marker}={other}"),
                "default-only": vlcrc(f"#{marker}={default}"),
                "absent-key": vlcrc("# nothing here"),
                "set-then-commented": vlcrc(f"{marker}={want}", f"#{marker}={other}"),
                "spaces": vlcrc(f"{marker} = {want} "),
                "crlf": vlcrc(f"{marker}={want}").replace("\n", "\r\n"),
                "lone-cr": vlcrc(f"{marker}={want}\rx={other}"),  # not a line end there
                "empty": "",
            }
            for name, text in files.items():
                cases.append(pytest.param(metric, text, rules, id=f"{metric}-{name}"))
            for variant in (str(want), int(want) + 0.0, True, None):
                cases.append(
                    pytest.param(
                        metric,
                        vlcrc(f"{marker}={want}"),
                        {key: variant},
                        id=f"{metric}-rule-{type(variant).__name__}-{variant}",
                    )
                )
            cases.append(pytest.param(metric, None, rules, id=f"{metric}-none"))
            cases.append(pytest.param(metric, vlcrc("x"), {}, id=f"{metric}-no-rule-key"))
            cases.append(
                pytest.param(
                    metric,
                    vlcrc(f"{marker}={want}").encode() + b"# caf\xe9\n",
                    rules,
                    id=f"{metric}-latin-1",  # OSWorld's strict decode raises
                )
            )
    return cases


@pytest.mark.parametrize(("metric", "content", "rules"), _vlc_setting_cases())
def test_vlc_setting(
    osworld: OSWorld, tmp_path: Path, metric: str, content: FileContent, rules: dict[str, Any]
) -> None:
    assert_same_score(osworld, metric, make_file(tmp_path, "vlcrc", content), rules)


_BLACKISH = {"type": "blackish"}
_SLIDER_DEFAULT = "153;210;153;20;210;20;255;199;15;245;39;29"

SLIDER = [
    *[
        pytest.param(vlcrc(f"qt-slider-colours={value}"), rules, id=f"{task}-{name}")
        for task, rules in (real_rules("check_qt_slider_colours") or [("blackish", _BLACKISH)])
        for name, value in [
            ("black", "0;0;0;0;0;0;0;0;0;0;0;0"),
            ("dark", "10;20;30;40;50;60;70;80;90;99;99;99"),
            ("one-light", "0;0;0;0;0;0;0;0;0;0;0;100"),
            ("default", _SLIDER_DEFAULT),
            ("spaces", "0; 0; 0; 0; 0; 0"),
            ("empty", ""),
            ("not-numbers", "black"),
            ("negative", "-1;-1;-1"),
        ]
    ],
    pytest.param(vlcrc(f"#qt-slider-colours={_SLIDER_DEFAULT}"), _BLACKISH, id="commented"),
    pytest.param(vlcrc("nothing"), _BLACKISH, id="absent-key"),
    pytest.param(
        vlcrc("qt-slider-colours=10;20;30;200"),
        _BLACKISH,
        id="blackish-incomplete-triple",  # the incomplete last triple goes unchecked: 1
    ),
    pytest.param(
        vlcrc(f"qt-slider-colours={_SLIDER_DEFAULT}"),
        {"type": "match", "expected_qt_slider_colours": _SLIDER_DEFAULT},
        id="match",
    ),
    pytest.param(
        vlcrc("qt-slider-colours=1;2;3"),
        {"type": "match", "expected_qt_slider_colours": _SLIDER_DEFAULT},
        id="match-differs",
    ),
    pytest.param(vlcrc("nothing"), {"type": "match"}, id="match-without-expected"),
    pytest.param(vlcrc("qt-slider-colours=0;0;0"), {"type": "gray"}, id="unknown-type"),
    pytest.param(vlcrc("qt-slider-colours=0;0;0"), {}, id="no-type"),
    pytest.param(None, _BLACKISH, id="none"),
]


@pytest.mark.parametrize(("content", "rules"), SLIDER)
def test_check_qt_slider_colours(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "vlcrc", content)
    assert_same_score(osworld, "check_qt_slider_colours", path, rules)


GLOBAL_KEY = [
    *[
        pytest.param(text, rules, id=f"{task}-{name}")
        for task, rules in (
            real_rules("check_global_key_play_pause")
            or [("real", {"expected_global_key_play_pause": 1})]
        )
        for name, text in [
            ("set", vlcrc("global-key-play-pause=Ctrl+Space")),
            ("default", vlcrc("#global-key-play-pause=")),
            ("set-then-cleared", vlcrc("global-key-play-pause=Alt+p", "global-key-play-pause=")),
            ("local-key-only", vlcrc("key-play-pause=Space")),
            ("equals-sign-key", vlcrc("global-key-play-pause=Alt+=")),
            ("crlf", vlcrc("global-key-play-pause=Ctrl+Space").replace("\n", "\r\n")),
            ("empty", ""),
        ]
    ],
    pytest.param(vlcrc("#global-key-play-pause="), {"expected_global_key_play_pause": "0"}, id="0"),
    pytest.param(vlcrc("global-key-play-pause=x"), {"expected_global_key_play_pause": 1.0}, id="f"),
    pytest.param(None, {"expected_global_key_play_pause": 0}, id="none"),
]


@pytest.mark.parametrize(("content", "rules"), GLOBAL_KEY)
def test_check_global_key_play_pause(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "vlcrc", content)
    assert_same_score(osworld, "check_global_key_play_pause", path, rules)


RECORDINGS = [
    *[
        pytest.param(text, rules, id=f"{task}-{name}")
        for task, rules in (
            real_rules("is_vlc_recordings_folder")
            or [("real", {"recording_file_path": "/home/user/Desktop"})]
        )
        for name, text in [
            ("set", vlcrc("#input-record-path=", "input-record-path=/home/user/Desktop")),
            ("trailing-slash", vlcrc("input-record-path=/home/user/Desktop/")),
            ("commented-only", vlcrc("#input-record-path=/home/user/Desktop")),
            ("other", vlcrc("input-record-path=/tmp")),
            ("first-wins", vlcrc("input-record-path=/tmp", "input-record-path=/home/user/Desktop")),
            ("indented", vlcrc("  input-record-path=/home/user/Desktop  ")),
            ("native-option", vlcrc("input-record-native=1")),
            ("empty", ""),
            ("absent", ABSENT),
        ]
    ],
    pytest.param(vlcrc("input-record-path=/x"), {}, id="no-rule-key"),
]


@pytest.mark.parametrize(("content", "rules"), RECORDINGS)
def test_is_vlc_recordings_folder(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "vlcrc", content)
    assert_same_score(osworld, "is_vlc_recordings_folder", path, rules)


# --- GIMP ---------------------------------------------------------------------------------

_GIMPRC = """# GIMP gimprc
#
# This is your personal gimprc file.

(undo-levels 100)
(theme "Light")
(layer-new-name "Square")
(default-image
    (width 1920)
    (height 1080))
(hide-docks yes)
(show-tips no)

# end of gimprc
"""


def _config_status_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_config_status"):
        key, value = rules["key"], rules["value"]
        cases += [
            pytest.param(_GIMPRC, rules, id=f"{task}-{key}-set"),
            pytest.param(_GIMPRC.replace(f" {value})", " other)"), rules, id=f"{task}-{key}-off"),
            pytest.param(f"# ({key} {value})\n", rules, id=f"{task}-{key}-commented"),
            pytest.param("", rules, id=f"{task}-{key}-empty"),
        ]
    return cases


CONFIG_STATUS = [
    *_config_status_real(),
    pytest.param(_GIMPRC, {"key": ["default-image", "width"], "value": "1920"}, id="pair-nested"),
    pytest.param("(size 1920 1080)\n", {"key": ["size", "1920"], "value": "1080"}, id="pair"),
    pytest.param("(size 1920 1080)\n", {"key": ["size", "1080"], "value": "1080"}, id="pair-off"),
    pytest.param("(size 1920 1080)\n", {"key": ["size"], "value": "1080"}, id="one-item-list"),
    pytest.param("(theme)\n", {"key": ["theme", "x"], "value": "theme"}, id="pair-one-token"),
    pytest.param("    (width 1920)\n", {"key": "width", "value": "1920"}, id="indented"),
    pytest.param("(undo-levels 100)\r\n", {"key": "undo-levels", "value": "100"}, id="crlf"),
    pytest.param("(undo-levels 100)", {"key": "undo-levels", "value": "100"}, id="no-newline"),
    pytest.param("(undo-levels 100))\n", {"key": "undo-levels", "value": "100"}, id="two-parens"),
    pytest.param(
        "\n\n(undo-levels 100)\n", {"key": "undo-levels", "value": "100"}, id="blank-lines"
    ),
    pytest.param(
        '(theme "Light")\n  \n(undo-levels 100)\n',
        {"key": "undo-levels", "value": "100"},
        id="whitespace-line-before-match",  # no items to index: OSWorld raises
    ),
    pytest.param('(theme "Zürich")\n', {"key": "theme", "value": '"Zürich"'}, id="unicode"),
    pytest.param(_GIMPRC, {"key": 5, "value": "100"}, id="key-not-text"),
    pytest.param("  \n(size 1 2)\n", {"key": ["size", "1"], "value": "2"}, id="pair-after-spaces"),
    pytest.param("  \n(undo-levels 100)\n", {"key": 5, "value": "100"}, id="spaces-key-not-text"),
    pytest.param(
        "()\n(undo-levels 100)\n", {"key": "undo-levels", "value": "100"}, id="empty-parens"
    ),
    pytest.param(_GIMPRC, {"value": "100"}, id="rule-without-key"),
    pytest.param(None, {"key": "theme", "value": '"Light"'}, id="none"),
]


@pytest.mark.parametrize(("content", "rule"), CONFIG_STATUS)
def test_check_config_status(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rule: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "gimprc", content)
    assert_same_score(osworld, "check_config_status", path, rule)


# --- Thunderbird ----------------------------------------------------------------------------

_PREFS = """// Mozilla User Preferences

// DO NOT EDIT THIS FILE.
user_pref("extensions.activeThemeID", "thunderbird-compact-dark@mozilla.org");
user_pref("mail.identity.id1.auto_quote", true);
user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");
user_pref("mail.imap.use_status_for_biff", false);
user_pref("mail.server.default.applyIncomingFilters", true);
user_pref("mail.server.default.autosync_offline_stores", true);
user_pref("mail.server.server1.max_cached_connections", 5);
"""


def _prefs_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_thunderbird_prefs"):
        flipped = (
            _PREFS.replace("true);", "TMP);")
            .replace("false);", "true);")
            .replace("TMP);", "false);")
        )
        cases += [
            pytest.param(_PREFS, rules, id=f"{task}-prefs"),
            pytest.param(flipped, rules, id=f"{task}-flipped"),
            pytest.param("// Mozilla User Preferences\n", rules, id=f"{task}-no-prefs"),
            pytest.param(_PREFS.replace("\n", "\r\n"), rules, id=f"{task}-crlf"),
        ]
    return cases


def _eq(ref: Any) -> dict[str, Any]:
    return {"method": "eq", "ref": ref}


PREFS = [
    *_prefs_real(),
    pytest.param(
        _PREFS, {"expect": {"mail.server.server1.max_cached_connections": _eq(5)}}, id="n"
    ),
    pytest.param(
        _PREFS,
        {"expect": {"mail.server.server1.max_cached_connections": {"method": "gt", "ref": 9}}},
        id="gt",
    ),
    pytest.param(_PREFS, {"expect": {"missing.pref": _eq(True)}}, id="missing-pref"),
    pytest.param(_PREFS, {"unexpect": {"missing.pref": _eq(True)}}, id="unexpect-missing"),
    pytest.param(_PREFS, {}, id="no-rules"),
    pytest.param(
        _PREFS + 'user_pref("mail.identity.id1.auto_quote", false);\n',
        {"expect": {"mail.identity.id1.auto_quote": _eq(False)}},
        id="last-wins",
    ),
    pytest.param(
        _PREFS,
        {"expect": {"mail.identity.id1.auto_quote": {"method": "re", "ref": "true"}}},
        id="re-on-bool",
    ),
    pytest.param(
        _PREFS,
        {
            "expect": {"mail.identity.id1.auto_quote": _eq(True)},
            "unexpect": {"mail.identity.id1.auto_quote": _eq(True)},
        },
        id="expect-and-unexpect",
    ),
    pytest.param(
        'user_pref("a.b", "Zürich ✓");\n', {"expect": {"a.b": _eq("Zürich ✓")}}, id="unicode"
    ),
    pytest.param(
        'user_pref("a.b", "x");  \n   user_pref("c.d", 1);\n',
        {"expect": {"a.b": _eq("x"), "c.d": _eq(1)}},
        id="spaces-around",
    ),
    pytest.param(
        'user_pref("a\\"b", 1);\n', {"expect": {'a\\"b': _eq(1)}}, id="escaped-quote-in-name"
    ),
    pytest.param(
        _PREFS + "user_pref(\"broken.value\", 'single');\n",
        {"expect": {"mail.identity.id1.auto_quote": _eq(True)}},
        id="malformed-value-elsewhere",  # OSWorld's unguarded json.loads raises
    ),
    pytest.param(None, {"expect": {"a": _eq(1)}}, id="none"),
    pytest.param(ABSENT, {"expect": {"a": _eq(1)}}, id="absent"),
]


@pytest.mark.parametrize(("content", "rule"), PREFS)
def test_check_thunderbird_prefs(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rule: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "prefs.js", content)
    assert_same_score(osworld, "check_thunderbird_prefs", path, rule)


_FILTERS = """version="9"
logging="no"
name="Promotions"
enabled="yes"
type="17"
action="Move to folder"
actionValue="mailbox://nobody@Local%20Folders/Promotions"
condition="AND (subject,contains,discount)"
name="Forward all"
enabled="yes"
type="17"
action="Forward"
actionValue="anonym-x2024@gmail.com"
condition="ALL"
name="Quoted \\"name\\""
enabled="no"
type="1"
action="Mark read"
condition="OR (from,is,\\"a b\\"@x.org) OR (subject,contains,hi there)"
"""


_LAST_CONDITIONS = ['OR (from,is,"a b"@x.org)', "OR (subject,contains,hi there)"]


def _filter_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_thunderbird_filter"):
        cases += [
            pytest.param(_FILTERS, rules, id=f"{task}-filters"),
            pytest.param(
                _FILTERS.replace('enabled="yes"', 'enabled="no"'), rules, id=f"{task}-off"
            ),
            pytest.param('version="9"\nlogging="no"\n', rules, id=f"{task}-no-filters"),
            pytest.param(_FILTERS.replace("\n", "\r\n"), rules, id=f"{task}-crlf"),
            pytest.param(
                _FILTERS.replace("discount", "sale").replace('"ALL"', '"AND (all,is,x)"'),
                rules,
                id=f"{task}-other-condition",
            ),
        ]
    return cases


FILTER = [
    *_filter_real(),
    pytest.param(_FILTERS, {"expect": [{"name": 'Quoted "name"'}]}, id="unescaped-name"),
    pytest.param(_FILTERS, {"expect": [{"action": "Mark read", "enabled": "no"}]}, id="record"),
    pytest.param(
        _FILTERS,
        {"expect": [{"condition": _LAST_CONDITIONS}]},
        id="two-conditions",
    ),
    pytest.param(_FILTERS, {"unexpect": [{"action": "Forward"}]}, id="unexpected"),
    pytest.param(_FILTERS, {"unexpect": [{"action": "Delete"}]}, id="unexpect-absent"),
    pytest.param(_FILTERS, {}, id="no-rules"),
    pytest.param("", {"expect": [{"name": "x"}]}, id="empty"),
    pytest.param('enabled="yes"\n' + _FILTERS, {"expect": [{"name": "x"}]}, id="field-first"),
    pytest.param(
        _FILTERS.replace('name="Forward all"', 'name="Forward\x0ball"'),
        {"expect": [{"name": "Forward\x0ball"}]},
        id="vertical-tab",  # no line end for file iteration
    ),
    pytest.param(
        _FILTERS.rstrip("\n"),
        {"expect": [{"condition": _LAST_CONDITIONS}]},
        id="no-final-newline",  # the value slice assumes '"\n': the last ')' is lost, 0
    ),
    pytest.param(
        _FILTERS.replace("Promotions", "Prömotions"), {"expect": [{"name": "Prömotions"}]}, id="u"
    ),
    pytest.param(None, {"expect": [{"name": "x"}]}, id="none"),
]


@pytest.mark.parametrize(("content", "rules"), FILTER)
def test_check_thunderbird_filter(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "msgFilterRules.dat", content)
    assert_same_score(osworld, "check_thunderbird_filter", path, rules)


# --- LibreOffice's registrymodifications.xcu --------------------------------------------------


def xcu(*items: str) -> str:
    """A ``registrymodifications.xcu`` holding ``items``."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        + "\n".join(items)
        + "\n</oor:items>\n"
    )


def _font(name: str) -> str:
    return (
        '<item oor:path="/org.openoffice.Office.Writer/DefaultFont">'
        f'<prop oor:name="Standard" oor:op="fuse"><value>{name}</value></prop></item>'
    )


_OTHER_ITEM = (
    '<item oor:path="/org.openoffice.Office.Common/Misc">'
    '<prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>'
)

DEFAULT_FONT = [
    *[
        pytest.param(text, rules, id=f"{task}-{name}")
        for task, rules in (
            real_rules("find_default_font") or [("real", {"font_name": "Times New Roman"})]
        )
        for name, text in [
            ("set", xcu(_OTHER_ITEM, _font(rules["font_name"]))),
            ("other-font", xcu(_font("Liberation Serif"))),
            ("last-wins", xcu(_font("Liberation Serif"), _font(rules["font_name"]))),
            ("last-wins-other", xcu(_font(rules["font_name"]), _font("Liberation Serif"))),
            ("unset", xcu(_OTHER_ITEM)),
            ("empty-value", xcu(_font(""))),
            ("malformed", "<oor:items"),
            ("empty-file", ""),
        ]
    ],
    pytest.param(
        xcu(_font("Noto Sans CJK 日本")), {"font_name": "Noto Sans CJK 日本"}, id="unicode"
    ),
    pytest.param(None, {"font_name": "Times New Roman"}, id="none"),
    pytest.param(xcu(_font("x")), {}, id="rules-without-font-name"),
]


@pytest.mark.parametrize(("content", "rules"), DEFAULT_FONT)
def test_find_default_font(
    osworld: OSWorld, tmp_path: Path, content: FileContent, rules: dict[str, Any]
) -> None:
    path = make_file(tmp_path, "registrymodifications.xcu", content)
    assert_same_score(osworld, "find_default_font", path, rules)


def _presenter(value: str | None) -> str:
    inner = "" if value is None else f"<value>{value}</value>"
    return (
        '<item oor:path="/org.openoffice.Office.Impress/Misc/Start">'
        f'<prop oor:name="EnablePresenterScreen" oor:op="fuse">{inner}</prop></item>'
    )


PRESENTER = [
    pytest.param(xcu(_OTHER_ITEM, _presenter("false")), id="disabled"),
    pytest.param(xcu(_presenter("true")), id="enabled"),
    pytest.param(xcu(_presenter("False")), id="capitalised"),
    pytest.param(xcu(_presenter("false"), _presenter("true")), id="first-wins"),
    pytest.param(xcu(_presenter("true"), _presenter("false")), id="first-wins-enabled"),
    pytest.param(xcu(_presenter("")), id="empty-value"),
    pytest.param(xcu(_presenter(None)), id="no-value"),
    pytest.param(xcu(_OTHER_ITEM), id="unset"),
    pytest.param("<oor:items", id="malformed"),
    pytest.param("", id="empty-file"),
    pytest.param(None, id="none"),
    pytest.param(ABSENT, id="absent"),
]


@pytest.mark.parametrize("content", PRESENTER)
def test_check_presenter_console_disable(
    osworld: OSWorld, tmp_path: Path, content: FileContent
) -> None:
    path = make_file(tmp_path, "registrymodifications.xcu", content)
    assert_same_score(osworld, "check_presenter_console_disable", path)
