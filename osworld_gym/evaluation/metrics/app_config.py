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
from osworld_gym.evaluation.metrics.files import read_text

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


def _vlc_setting_is(path: str | None, marker: str, default: str, want: Any) -> float:
    if path is None:
        return 0.0
    return float(vlcrc_setting(read_text(path), marker, default) == str(want))


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
    value = vlcrc_setting(read_text(result), "global-key-play-pause=", "")
    return float(("0" if value == "" else "1") == str(rule["expected_global_key_play_pause"]))


def is_vlc_recordings_folder(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when the first uncommented ``input-record-path`` is the expected folder."""
    if result is None:
        return 0.0
    for line in read_text(result).split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return float(line.split("=")[-1].strip() == rule["recording_file_path"])
    return 0.0


def check_qt_slider_colours(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's volume-slider colours are as the rule wants.

    ``type: match`` compares with ``expected_qt_slider_colours``; ``type: blackish`` wants
    every RGB component below 100.
    """
    if result is None:
        return 0.0
    colours = vlcrc_setting(read_text(result), "qt-slider-colours", _DEFAULT_SLIDER_COLOURS)
    if rule["type"] == "match":
        return float(colours == rule["expected_qt_slider_colours"])
    if rule["type"] == "blackish":
        try:
            values = [int(v) for v in colours.split(";")]
        except ValueError:
            return 0.0
        return float(all(v < _BLACKISH_BELOW for v in values))
    raise ValueError(f"check_qt_slider_colours: unknown rule type {rule['type']!r}")


# --- GIMP ------------------------------------------------------------------------------------


def check_config_status(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when a GIMP config line ``(key [subkey] ... value)`` has the expected value.

    ``rule["key"]`` is a name or a two-item list (name and sub-name); ``rule["value"]`` is
    compared with the line's last token.
    """
    if result is None:
        return 0.0
    key = rule["key"]
    for line in read_text(result).splitlines(keepends=True):
        if line.startswith("#") or line == "\n":
            continue
        items = line.strip().lstrip("(").rstrip(")\n").split()
        if not items or items[-1] != rule["value"]:
            continue
        if isinstance(key, str) and items[0] == key:
            return 1.0
        if isinstance(key, list) and len(key) == 2 and items[:2] == key:
            return 1.0
    return 0.0


# --- Thunderbird -------------------------------------------------------------------------------

_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')
_FILTER_CONDITION = re.compile(
    r"\b(?:AND|OR) \((?:[\w ]+),(?:[\w ']+),(?:\"(?:(?:[^\"]|\")+)\"|(?:[^)]+))\)|\bALL\b"
)
_FILTER_KEYS = ("name", "enabled", "type", "action", "actionValue")


def check_thunderbird_prefs(result: str | None, rule: Mapping[str, Any]) -> float:
    """Thunderbird ``prefs.js`` values against ``{"method", "ref"}`` rules.

    Every ``expect`` pref must be present and match its rule; no ``unexpect`` pref may match.
    """
    if result is None:
        return 0.0
    expect: Mapping[str, Any] = rule.get("expect", {})
    unexpect: Mapping[str, Any] = rule.get("unexpect", {})
    found = dict.fromkeys(expect, False)
    for line in read_text(result).splitlines():
        match = _PREF.match(line.strip())
        if match is None:
            continue
        key = match.group("key")
        try:
            value = json.loads(match.group("val"))
        except json.JSONDecodeError:
            continue
        if key in expect:
            found[key] = match_value_to_rule(value, expect[key])
        elif key in unexpect and match_value_to_rule(value, unexpect[key]):
            return 0.0
    return float(all(found.values()))


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


def read_thunderbird_filters(text: str) -> list[dict[str, Any]]:
    r"""Filters of a ``msgFilterRules.dat``; each is complete at its ``condition=`` line.

    Example:
        >>> text = 'name="A"\nenabled="yes"\ncondition="AND (subject,contains,x)"\n'
        >>> read_thunderbird_filters(text)
        [{'name': 'A', 'enabled': 'yes', 'condition': ['AND (subject,contains,x)']}]
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in text.splitlines():
        key, _, raw = line.partition("=")
        value = _unescape(raw[1:-1])  # drop the surrounding quotes
        if key == "name":
            current = {"name": value}
        elif key in _FILTER_KEYS:
            current[key] = value
        elif key == "condition":
            current["condition"] = _FILTER_CONDITION.findall(value)
            filters.append(current)
    return filters


def check_thunderbird_filter(result: str | None, rules: Mapping[str, Any]) -> float:
    """Filter records: each ``expect`` dict matches some filter, none matches ``unexpect``."""
    if result is None:
        return 0.0
    filters = read_thunderbird_filters(read_text(result))
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
