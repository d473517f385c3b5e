"""Metrics over application configuration files fetched from the desktop.

VLC's ``vlcrc``, GIMP's ``gimprc``-style files, Thunderbird's ``prefs.js`` and
``msgFilterRules.dat``, and LibreOffice's ``registrymodifications.xcu``. The first argument is
the fetched file's host path; ``None`` (the file did not exist) scores 0.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree

from osworld_gym.evaluation.metrics._rules import match_record, match_value_to_rule
from osworld_gym.evaluation.metrics.files import file_lines, read_utf8

logger = logging.getLogger(__name__)

# --- VLC -------------------------------------------------------------------------------------

_DEFAULT_SLIDER_COLOURS = "153;210;153;20;210;20;255;199;15;245;39;29"
_BLACKISH_BELOW = 100


def vlcrc_setting(text: str, marker: str, default: str) -> str:
    r"""The value after ``=`` on the last line containing ``marker`` (comments included).

    VLC writes every option, commented out when it has its default value
    (``#qt-bgcone=1``); OSWorld reads such lines too, and so does this.

    Example:
        >>> vlcrc_setting("#qt-bgcone=1\nqt-bgcone=0\n", "qt-bgcone=", "1")
        '0'
    """
    value = default
    for line in text.split("\n"):
        if marker in line:
            value = line.split("=")[-1].strip()
    return value


def _read_vlcrc(path: str) -> str:
    """A ``vlcrc``'s text as OSWorld reads it: its bytes decoded as UTF-8, line ends untouched.

    Raises:
        UnicodeDecodeError: The file is not UTF-8; OSWorld decodes before its ``try`` block,
            so its metric raises too.
    """
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def _vlc_setting_is(path: str | None, marker: str, default: str, want: Any) -> float:
    if path is None:
        return 0.0
    # OSWorld turns an int expectation into its text and compares anything else as it is.
    if isinstance(want, int):
        want = str(want)
    return float(vlcrc_setting(_read_vlcrc(path), marker, default) == want)


def check_qt_bgcone(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's ``qt-bgcone`` (default 1) has the expected value."""
    return _vlc_setting_is(result, "qt-bgcone=", "1", rule["expected_qt_bgcone"])


def check_qt_max_volume(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's ``qt-max-volume`` (default 125) has the expected value."""
    return _vlc_setting_is(result, "qt-max-volume=", "125", rule["expected_qt_max_volume"])


def check_qt_minimal_view(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's ``qt-minimal-view`` (default 0) has the expected value."""
    return _vlc_setting_is(result, "qt-minimal-view=", "0", rule["expected_qt_minimal_view"])


def check_one_instance_when_started_from_file(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's ``one-instance-when-started-from-file`` (default 1) has the expected value."""
    want = rule["expected_one_instance_when_started_from_file"]
    return _vlc_setting_is(result, "one-instance-when-started-from-file=", "1", want)


def check_play_and_exit(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's ``play-and-exit`` (default 0) has the expected value."""
    return _vlc_setting_is(result, "play-and-exit=", "0", rule["expected_play_and_exit"])


def check_global_key_play_pause(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when a global play/pause hotkey is set (``"1"``) or not (``"0"``) as expected."""
    if result is None:
        return 0.0
    value = vlcrc_setting(_read_vlcrc(result), "global-key-play-pause=", "")
    return float(("0" if value == "" else "1") == str(rule["expected_global_key_play_pause"]))


def is_vlc_recordings_folder(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when the first uncommented ``input-record-path`` is the expected folder."""
    if result is None:
        return 0.0
    for line in _read_vlcrc(result).split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return float(line.split("=")[-1].strip() == rule["recording_file_path"])
    return 0.0


def check_qt_slider_colours(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's volume-slider colours are as the rule wants.

    ``type: match`` compares with ``expected_qt_slider_colours``; ``type: blackish`` wants
    every component of every complete RGB triple below 100 (OSWorld groups the values in
    threes and drops an incomplete last group unchecked).
    """
    if result is None:
        return 0.0
    colours = vlcrc_setting(_read_vlcrc(result), "qt-slider-colours", _DEFAULT_SLIDER_COLOURS)
    if rule["type"] == "match":
        return float(colours == rule["expected_qt_slider_colours"])
    if rule["type"] == "blackish":
        try:
            values = [int(v) for v in colours.split(";")]
        except ValueError:
            return 0.0
        return float(all(v < _BLACKISH_BELOW for v in _complete_triples(values)))
    raise ValueError(f"check_qt_slider_colours: unknown rule type {rule['type']!r}")


def _complete_triples(values: list[int]) -> list[int]:
    """The values of the complete RGB triples: a count not a multiple of 3 loses its tail.

    Example:
        >>> _complete_triples([1, 2, 3, 4])
        [1, 2, 3]
    """
    return values[: len(values) - len(values) % 3]


# --- GIMP ------------------------------------------------------------------------------------


def check_config_status(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when a GIMP config line ``(key [subkey] ... value)`` has the expected value.

    ``rule["key"]`` is a name or a two-item list (name and sub-name); ``rule["value"]`` is
    compared with the line's last token. Lines starting with ``#`` and empty lines are
    skipped, as OSWorld skips them.

    Raises:
        IndexError: A line with too few items to compare, such as a line of spaces or ``()``
            before the match (OSWorld indexes the items unguarded and raises there too).
        UnicodeDecodeError: The file is not UTF-8.
    """
    if result is None:
        return 0.0
    key, value = rule["key"], rule["value"]
    for line in file_lines(read_utf8(result)):
        if line.startswith("#") or line == "\n":
            continue
        items = line.strip().lstrip("(").rstrip(")\n").split()
        if _config_items_match(items, key, value):
            return 1.0
    return 0.0


def _config_items_match(items: list[str], key: Any, value: Any) -> bool:
    """Whether one config line's items are ``key ... value``; indexes as OSWorld does.

    The items are compared in OSWorld's order, so a short line raises ``IndexError`` where
    OSWorld's comparison reaches a missing item: a line without items for either kind of
    key, a one-item line with the right name for a two-item key.
    """
    if isinstance(key, str):
        return items[0] == key and items[-1] == value
    if isinstance(key, list) and len(key) == 2:
        return items[0] == key[0] and items[1] == key[1] and items[-1] == value
    return False


# --- Thunderbird -------------------------------------------------------------------------------

_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')
_FILTER_CONDITION = re.compile(
    r"\b(?:AND|OR) \((?:[\w ]+),(?:[\w ']+),(?:\"(?:(?:[^\"]|\")+)\"|(?:[^)]+))\)|\bALL\b"
)
_FILTER_FIELDS = ("enabled", "type", "action", "actionValue", "condition")


def check_thunderbird_prefs(result: str | None, rule: Mapping[str, Any]) -> float:
    """Thunderbird ``prefs.js`` values against ``{"method", "ref"}`` rules.

    Every ``expect`` pref must be present and match its rule (the last line setting it
    counts); no ``unexpect`` pref may match.

    Raises:
        json.JSONDecodeError: A ``user_pref`` line whose value is not JSON, anywhere in the
            file (OSWorld parses every pref line unguarded, so its metric raises too).
        UnicodeDecodeError: The file is not UTF-8.
    """
    if result is None:
        return 0.0
    expect: Mapping[str, Any] = rule.get("expect", {})
    unexpect: Mapping[str, Any] = rule.get("unexpect", {})
    found = dict.fromkeys(expect, False)
    for line in file_lines(read_utf8(result)):
        match = _PREF.match(line.strip())
        if match is None:
            continue
        key = match.group("key")
        value = json.loads(match.group("val"))
        if key in expect:
            found[key] = match_value_to_rule(value, expect[key])
        elif key in unexpect and match_value_to_rule(value, unexpect[key]):
            return 0.0
    return float(all(found.values()))


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


def _filter_value(line: str, key: str) -> str:
    r"""The value of a ``key="value"`` line of ``msgFilterRules.dat``, unescaped.

    OSWorld cuts ``key="`` off the front and two characters off the end, taking them for
    the closing quote and the newline, so on a last line without a newline the value loses
    its last character as well (a condition its closing ``)``); so does this.

    Example:
        >>> _filter_value('name="A"\n', "name"), _filter_value('name="AB"', "name")
        ('A', 'A')
    """
    return _unescape(line[len(key) + 2 : -2])


def read_thunderbird_filters(text: str) -> list[dict[str, Any]]:
    r"""Filters of a ``msgFilterRules.dat``; each is complete at its ``condition=`` line.

    Lines are those of file iteration (``file_lines()``).

    Raises:
        ValueError: A filter field before the first ``name=`` line (OSWorld has no filter
            to put it in there and raises).

    Example:
        >>> text = 'name="A"\nenabled="yes"\ncondition="AND (subject,contains,x)"\n'
        >>> read_thunderbird_filters(text)
        [{'name': 'A', 'enabled': 'yes', 'condition': ['AND (subject,contains,x)']}]
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in file_lines(text):
        key = line.partition("=")[0]
        if key == "name":
            current = {"name": _filter_value(line, key)}
            continue
        if key not in _FILTER_FIELDS:
            continue
        if current is None:
            raise ValueError(f"msgFilterRules.dat: {key}= before the first name=")
        value = _filter_value(line, key)
        if key == "condition":
            current["condition"] = _FILTER_CONDITION.findall(value)
            filters.append(current)
        else:
            current[key] = value
    return filters


def check_thunderbird_filter(result: str | None, rules: Mapping[str, Any]) -> float:
    """Filter records: each ``expect`` dict matches some filter, none matches ``unexpect``.

    Raises:
        UnicodeDecodeError: The file is not UTF-8.
    """
    if result is None:
        return 0.0
    filters = read_thunderbird_filters(read_utf8(result))
    expect = rules.get("expect", [])
    unexpect = rules.get("unexpect", [])
    if any(match_record(pattern, f) for f in filters for pattern in unexpect):
        return 0.0
    return float(all(any(match_record(pattern, f) for f in filters) for pattern in expect))


# --- LibreOffice registry ------------------------------------------------------------------

_OOR = {"oor": "http://openoffice.org/2001/registry"}


def _registry_values(path: str, item_path: str, prop: str) -> list[str | None]:
    """Every ``<value>`` of one property in a ``registrymodifications.xcu``, in file order."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as e:
        logger.info("cannot read LibreOffice registry %s: %s", path, e)
        return []
    query = f".//item[@oor:path='{item_path}']/prop[@oor:name='{prop}']/value"
    return [element.text for element in root.findall(query, _OOR)]


def find_default_font(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when Writer's default (Standard) font is ``rules["font_name"]``."""
    if not result:
        return 0.0
    fonts = _registry_values(result, "/org.openoffice.Office.Writer/DefaultFont", "Standard")
    return float(bool(fonts) and fonts[-1] == rules["font_name"])  # the last setting wins


def check_presenter_console_disable(result: str | None) -> float:
    """1 when Impress's presenter screen is switched off."""
    if not result:
        return 0.0
    values = _registry_values(
        result, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen"
    )
    return float(bool(values) and (values[0] or "").lower() == "false")  # OSWorld reads the first
