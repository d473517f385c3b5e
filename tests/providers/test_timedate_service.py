"""The timedate1 service's settings and requests (the parts that need no bus; the service on a
real GNOME desktop is tested in test_local_gnome_session.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.desktop.timedate_service import (
    DEFAULTS,
    SettingsError,
    apply,
    is_time_zone,
    properties,
    read_settings,
    time_zones,
    write_settings,
)


def test_settings_round_trip_and_malformed_files_read_as_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "timedate.json"
    assert read_settings(path) == DEFAULTS  # missing
    write_settings(path, {**DEFAULTS, "timezone": "Europe/Zurich"})
    assert read_settings(path)["timezone"] == "Europe/Zurich"
    assert [p.name for p in tmp_path.iterdir()] == ["timedate.json"]  # no partial file left
    for broken in ("{", "[]", '{"timezone": 3, "ntp": "yes"}', "\x00", '{"timezone": "Foo"}'):
        path.write_text(broken)
        assert read_settings(path) == DEFAULTS


def test_only_installed_zones_are_time_zones() -> None:
    assert is_time_zone("Asia/Hong_Kong") and is_time_zone("UTC") and is_time_zone("Etc/UTC")
    for not_a_zone in ("", "Nowhere/Land", "/etc/passwd", "../../../etc/passwd", "Asia"):
        assert not is_time_zone(not_a_zone), not_a_zone
    zones = time_zones()
    assert {"UTC", "Asia/Hong_Kong", "Europe/Zurich"} <= set(zones) and zones == sorted(zones)


def test_requests_change_the_settings_or_answer_systemds_errors() -> None:
    settings = dict(DEFAULTS)
    assert apply(settings, "SetTimezone", ("UTC", False))["timezone"] == "UTC"
    with pytest.raises(SettingsError) as bad:
        apply(settings, "SetTimezone", ("Nowhere/Land", True))
    assert bad.value.dbus_name == "org.freedesktop.DBus.Error.InvalidArgs"
    assert apply(settings, "SetNTP", (False, True))["ntp"] is False
    assert apply(settings, "SetLocalRTC", (True, False, True))["local_rtc"] is True
    with pytest.raises(SettingsError, match="Automatic time synchronization"):
        apply(settings, "SetTime", (0, True, False))
    with pytest.raises(SettingsError, match="cannot set"):
        apply({**settings, "ntp": False}, "SetTime", (0, True, False))
    assert apply(settings, "ListTimezones", ()) is None
    assert properties(settings)["Timezone"] == "Etc/UTC"


def test_a_new_episode_starts_in_the_documented_zone(tmp_path: Path) -> None:
    gnome_session.write_time_settings(tmp_path)
    stored = json.loads((tmp_path / gnome_session.TIME_SETTINGS).read_text())
    assert stored["timezone"] == gnome_session.TIME_ZONE != "Etc/UTC"
    assert is_time_zone(gnome_session.TIME_ZONE)
