"""``org.freedesktop.timedate1`` on a GNOME desktop's own system bus, for ``timedatectl``.

OSWorld's VM runs systemd, whose ``systemd-timedated`` answers ``timedatectl`` and GNOME
Settings' Date & Time panel; a local desktop has no systemd. This standalone script, started
by the desktop's system bus when a program first calls the name, answers the same interface:
the properties ``timedatectl status`` prints and the methods that set them.

Its settings live in one JSON file the provider writes anew at every reset (the script keeps
nothing in memory), so nothing an episode sets reaches the next one. Only what the service
reports changes: the desktop's programs keep the host's clock and zone (the sandbox shows the
host's ``/etc/localtime``), so dates computed on the desktop and by the evaluator agree. Setting
the clock itself is refused (the host's clock is not the desktop's to change). Like
``systemd-timedated`` without polkit, it answers every caller of the desktop's bus: on OSWorld's
VM the agent's user may change these with ``sudo`` or polkit anyway.

It imports only the standard library and ``gi`` (Debian's ``/usr/bin/python3`` has it), and
``gi`` lazily, so the settings helpers can be tested from any Python.

Usage::

    /usr/bin/python3 -I timedate_service.py SETTINGS_FILE
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

NAME = "org.freedesktop.timedate1"
PATH = "/org/freedesktop/timedate1"
ZONEINFO = Path("/usr/share/zoneinfo")
DEFAULTS = {"timezone": "Etc/UTC", "local_rtc": False, "ntp": True}
EXIT_AFTER_IDLE_S = 30  # as systemd-timedated: started again on the next call

INTERFACE = """
<node>
  <interface name="org.freedesktop.timedate1">
    <property name="Timezone" type="s" access="read"/>
    <property name="LocalRTC" type="b" access="read"/>
    <property name="CanNTP" type="b" access="read"/>
    <property name="NTP" type="b" access="read"/>
    <property name="NTPSynchronized" type="b" access="read"/>
    <property name="TimeUSec" type="t" access="read"/>
    <property name="RTCTimeUSec" type="t" access="read"/>
    <method name="SetTime">
      <arg name="usec_utc" type="x" direction="in"/>
      <arg name="relative" type="b" direction="in"/>
      <arg name="interactive" type="b" direction="in"/>
    </method>
    <method name="SetTimezone">
      <arg name="timezone" type="s" direction="in"/>
      <arg name="interactive" type="b" direction="in"/>
    </method>
    <method name="SetLocalRTC">
      <arg name="local_rtc" type="b" direction="in"/>
      <arg name="fix_system" type="b" direction="in"/>
      <arg name="interactive" type="b" direction="in"/>
    </method>
    <method name="SetNTP">
      <arg name="use_ntp" type="b" direction="in"/>
      <arg name="interactive" type="b" direction="in"/>
    </method>
    <method name="ListTimezones">
      <arg name="timezones" type="as" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="out"/>
    </method>
    <method name="GetAll">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="properties" type="a{sv}" direction="out"/>
    </method>
    <method name="Set">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="in"/>
    </method>
    <signal name="PropertiesChanged">
      <arg name="interface_name" type="s"/>
      <arg name="changed_properties" type="a{sv}"/>
      <arg name="invalidated_properties" type="as"/>
    </signal>
  </interface>
</node>
"""
PROPERTIES = "org.freedesktop.DBus.Properties"


class SettingsError(ValueError):
    """A request the service refuses: ``dbus_name`` is the D-Bus error it answers with."""

    def __init__(self, dbus_name: str, message: str) -> None:
        super().__init__(message)
        self.dbus_name = dbus_name


def read_settings(path: Path) -> dict[str, Any]:
    """The settings in ``path``; the defaults for any that are missing or malformed."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        stored = {}
    settings = dict(DEFAULTS)
    if isinstance(stored, dict):
        for key, default in DEFAULTS.items():
            if isinstance(stored.get(key), type(default)):
                settings[key] = stored[key]
    if not is_time_zone(settings["timezone"]):  # as systemd reads a dangling /etc/localtime
        settings["timezone"] = DEFAULTS["timezone"]
    return settings


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    """Replace ``path`` whole (a reader never sees half a file)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(settings))
    partial.replace(path)


def is_time_zone(name: str) -> bool:
    """Whether ``name`` is an installed time zone, as systemd checks it (a TZif file)."""
    if not name or name.startswith("/") or ".." in name.split("/"):
        return False
    try:
        with open(ZONEINFO / name, "rb") as f:
            return f.read(4) == b"TZif"
    except OSError:
        return False


def time_zones() -> list[str]:
    """The installed zones, from tzdata's list (what ``timedatectl list-timezones`` prints)."""
    names = {"UTC"}
    for table in ("tzdata.zi", "zone1970.tab"):
        try:
            lines = (ZONEINFO / table).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            words = line.split()
            if table == "tzdata.zi" and len(words) > 1 and words[0] in ("Z", "L"):
                names.add(words[1] if words[0] == "Z" else words[2])
            elif table == "zone1970.tab" and len(words) > 2 and not line.startswith("#"):
                names.add(words[2])
        break
    return sorted(name for name in names if is_time_zone(name))


def apply(settings: dict[str, Any], method: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
    """The settings after ``method`` (None: nothing to store).

    Raises:
        SettingsError: The request is refused (the D-Bus error systemd-timedated answers).
    """
    if method == "SetTimezone":
        zone = args[0]
        if not is_time_zone(zone):
            raise SettingsError(
                "org.freedesktop.DBus.Error.InvalidArgs",
                f"Invalid or not installed time zone '{zone}'",
            )
        return {**settings, "timezone": zone}
    if method == "SetLocalRTC":
        return {**settings, "local_rtc": bool(args[0])}
    if method == "SetNTP":
        return {**settings, "ntp": bool(args[0])}
    if method == "SetTime":
        if settings["ntp"]:
            raise SettingsError(
                "org.freedesktop.timedate1.AutomaticTimeSyncEnabled",
                "Automatic time synchronization is enabled",
            )
        raise SettingsError(
            "org.freedesktop.DBus.Error.NotSupported",
            "This desktop shares its host's clock, which it cannot set",
        )
    return None


def properties(settings: dict[str, Any]) -> dict[str, Any]:
    """The interface's properties as Python values."""
    return {
        "Timezone": settings["timezone"],
        "LocalRTC": settings["local_rtc"],
        "CanNTP": True,
        "NTP": settings["ntp"],
        "NTPSynchronized": True,  # the host keeps the clock
        "TimeUSec": time.time_ns() // 1000,
        "RTCTimeUSec": 0,  # no RTC: timedatectl prints "n/a"
    }


_SIGNATURES = {"Timezone": "s", "TimeUSec": "t", "RTCTimeUSec": "t"}


def serve(settings_path: Path) -> int:
    """Own the name on the system bus and answer until idle; the exit status."""
    from gi.repository import Gio, GLib

    loop = GLib.MainLoop()
    idle: list[int] = []

    def rearm() -> None:
        if idle:
            GLib.source_remove(idle.pop())
        idle.append(GLib.timeout_add_seconds(EXIT_AFTER_IDLE_S, lambda: loop.quit() or False))

    def variant(name: str, value: Any) -> Any:
        return GLib.Variant(_SIGNATURES.get(name, "b"), value)

    def on_properties(method: str, args: tuple[Any, ...], invocation: Any) -> None:
        # Our own, not GDBus's: timedatectl asks GetAll for the interface "" (all of them,
        # as sd-bus allows), which GDBus's refuses.
        if args[0] not in ("", NAME):
            invocation.return_dbus_error(
                "org.freedesktop.DBus.Error.UnknownInterface", f"No interface {args[0]!r}"
            )
            return
        current = properties(read_settings(settings_path))
        if method == "GetAll":
            values = {k: variant(k, v) for k, v in current.items()}
            invocation.return_value(GLib.Variant("(a{sv})", (values,)))
        elif method == "Get" and args[1] in current:
            invocation.return_value(GLib.Variant("(v)", (variant(args[1], current[args[1]]),)))
        elif method == "Get":
            invocation.return_dbus_error(
                "org.freedesktop.DBus.Error.UnknownProperty", f"No property {args[1]!r}"
            )
        else:
            invocation.return_dbus_error(
                "org.freedesktop.DBus.Error.PropertyReadOnly", f"Property {args[1]!r} is read-only"
            )

    def on_call(conn, sender, path, interface, method, params, invocation):  # type: ignore[no-untyped-def]
        rearm()
        if interface == PROPERTIES:
            on_properties(method, params.unpack(), invocation)
            return
        if method == "ListTimezones":
            invocation.return_value(GLib.Variant("(as)", (time_zones(),)))
            return
        before = read_settings(settings_path)
        try:
            after = apply(before, method, params.unpack())
        except SettingsError as e:
            invocation.return_dbus_error(e.dbus_name, str(e))
            return
        if after is not None and after != before:
            write_settings(settings_path, after)
            new, old = properties(after), properties(before)
            changed = {k: variant(k, v) for k, v in new.items() if k != "TimeUSec" and v != old[k]}
            conn.emit_signal(
                None,
                PATH,
                "org.freedesktop.DBus.Properties",
                "PropertiesChanged",
                GLib.Variant("(sa{sv}as)", (NAME, changed, [])),
            )
        invocation.return_value(None)

    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    # The object first: a call may come as soon as the name is ours.
    for info in Gio.DBusNodeInfo.new_for_xml(INTERFACE).interfaces:
        bus.register_object(PATH, info, on_call, None, None)
    Gio.bus_own_name_on_connection(
        bus, NAME, Gio.BusNameOwnerFlags.NONE, None, lambda conn, name: loop.quit()
    )
    rearm()
    loop.run()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: timedate_service.py SETTINGS_FILE\n")
        sys.exit(2)
    sys.exit(serve(Path(sys.argv[1])))
