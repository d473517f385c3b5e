"""A record of what an agent or an evaluator could notice of a desktop, to compare after resets.

``record()`` runs one stdlib-only Python program in the desktop through the guest (what an
evaluator's getters see: files, processes, the X server, a new shell's environment) and
returns it as a dict of named parts. ``normalize()`` drops what legitimately differs from one
launch or episode to the next (PIDs, times, window ids, the guest's shared-frame files, the
session bus's guid); ``differences()`` names the parts in which two records differ.

Every program the recorder runs is named by its absolute path: a program planted on ``PATH``
(a ``cat`` that prints the answer) must not fool the record itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Folders an episode can write to; listed with sizes, modes and hashes.
WATCHED_FOLDERS = (
    "/home/user",
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/run/user/1000",
    "/run/osworld-gym",
)
RECORDER_PYTHON = "/usr/bin/python3"

# Runs inside the desktop; prints one JSON object. Kept to the standard library and absolute
# program paths (see the module doc).
_RECORDER = r"""
import hashlib, json, os, stat, subprocess, sys

FOLDERS = sys.argv[1].split(":")
LIMIT = 64 << 20  # bytes hashed per file: a planted file is small, a disk filler is noticed by size


def digest(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            h.update(f.read(LIMIT))
    except OSError as e:
        return "unreadable:" + type(e).__name__
    return h.hexdigest()[:16]


def listing(top):
    found = {}
    for folder, dirs, files in os.walk(top, onerror=lambda e: None):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            kind = stat.S_IFMT(st.st_mode)
            entry = [oct(st.st_mode), st.st_uid]
            if stat.S_ISREG(st.st_mode):
                entry += [st.st_size, digest(path)]
            elif stat.S_ISLNK(st.st_mode):
                entry.append(os.readlink(path))
            elif kind == stat.S_IFSOCK:
                entry.append("socket")
            found[os.path.relpath(path, top)] = entry
    return found


def processes():
    mine = os.getpid()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == mine:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == mine:  # the recorder's own children
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile
        found.append([fields[0], name, [a.decode(errors="replace") for a in argv if a]])
    return found


def run(*argv, timeout=10):
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "error:" + type(e).__name__
    return done.stdout.decode(errors="replace") + (
        "" if done.returncode == 0 else f"[exit {done.returncode}]"
    )


def selection(name):
    # xclip asks the owner for the text; without an owner it fails at once.
    return run("/usr/bin/xclip", "-o", "-selection", name, timeout=3)


def quiet(seconds=1.0, limit=4.0):
    # Services a session starts at its own pace (GNOME's have the bus start Files, GVfs and
    # Tracker) are up before anything is recorded: once no program has come or gone for
    # `seconds` (at most `limit`). A program left from an earlier episode stays either way.
    import time

    def names():
        return sorted(name for _state, name, _argv in processes())

    start = time.monotonic()
    last, since = names(), time.monotonic()
    while time.monotonic() - since < seconds and time.monotonic() - start < limit:
        time.sleep(0.1)
        now = names()
        if now != last:
            last, since = now, time.monotonic()


quiet()
report = {"files": {top: listing(top) for top in FOLDERS if os.path.isdir(top)}}
report["missing_folders"] = [top for top in FOLDERS if not os.path.isdir(top)]
report["processes"] = processes()
report["xprop_root"] = run("/usr/bin/xprop", "-root")
report["xset"] = run("/usr/bin/xset", "q")
keymap = run("/usr/bin/xmodmap", "-pke")
report["keymap_sha"] = hashlib.sha256(keymap.encode()).hexdigest()[:16]
report["keymap_a"] = [line for line in keymap.splitlines() if line.startswith("keycode  38 ")]
report["modifiers"] = run("/usr/bin/xmodmap", "-pm")
report["pointer"] = run("/usr/bin/xmodmap", "-pp")
report["xkb_sha"] = hashlib.sha256(
    run("/usr/bin/xkbcomp", "-xkb", os.environ.get("DISPLAY", ":0"), "-").encode()
).hexdigest()[:16]
report["xhost"] = run("/usr/bin/xhost")
report["xrdb"] = run("/usr/bin/xrdb", "-query")
report["selections"] = {n: selection(n) for n in ("primary", "secondary", "clipboard")}
report["screen"] = [
    line.strip() for line in run("/usr/bin/xdpyinfo").splitlines() if "dimensions:" in line
]
# A new terminal's shell: an interactive login bash reads ~/.profile and ~/.bashrc.
report["shell_env"] = run("/bin/bash", "-lic", "/usr/bin/env", timeout=10)
print(json.dumps(report))
"""

# Root properties whose values name windows or change with every window manager start.
_VOLATILE_PROPERTIES = re.compile(
    r"^(_NET_CLIENT_LIST|_NET_CLIENT_LIST_STACKING|_NET_ACTIVE_WINDOW|_NET_SUPPORTING_WM_CHECK"
    r"|_OB_.*|_OPENBOX_PID|_NET_STARTUP_ID)\b"
)
# Shell variables that differ between any two shells.
_VOLATILE_ENV = ("_", "SHLVL", "PWD", "OLDPWD")
# Variables whose values differ from one launch of a desktop to the next (its marker, its own
# service ports, its display number, a container's host name).
_PER_LAUNCH_ENV = re.compile(
    r"^(OSWORLD_GYM_DESKTOP|OSWORLD_GYM_PORT_\d+|OSWORLD_GUEST_PORT|DISPLAY|HOSTNAME)$"
)
# Sockets the GVfs daemon opens and closes for its clients as they come (a GNOME session's trash
# and file monitors): there or not from one moment to the next.
_TIMED_RUNTIME = re.compile(r"^gvfsd/socket-")
# Names numbered or drawn per launch: the X server's socket and lock, the AT-SPI bus's socket,
# a container's runtime folder (made by the image's session script with mktemp).
_PER_LAUNCH_NAME = re.compile(
    r"(\.X11-unix/X|at-spi/bus_|^\.X(?=\d+-lock$)|runtime-user\.)[A-Za-z0-9]+"
)
# Files whose contents differ from one launch to the next: the X server's cookie and lock.
_PER_LAUNCH_CONTENT = {"/run/osworld-gym": ("Xauthority",), "/tmp": (".XN-lock",)}
_FRAME_FILE = re.compile(r"osworld-gym-frame-")
# Files a launch writes and a light reset, which keeps the program that wrote them, does not:
# openbox's log of its start (HOME is restored, openbox kept) and the guest's port file (its
# folder is emptied, the guest kept). They tell a first episode from a later one, nothing more.
_LAUNCH_FILES = {
    "/home/user": (".cache", ".cache/openbox", ".cache/openbox/openbox.log"),
    "/run/osworld-gym": ("guest/port",),
}
# Caches that fontconfig writes in HOME as the first apps start, a moment sooner or later; and
# what a GNOME session's programs write as the session starts (GStreamer's plugin registry,
# Mesa's shader cache index, Tracker's file index, Nautilus's tag database and folders, IBus's
# folder), by programs the dock starts through D-Bus at the session's start and a reset stops:
# a desktop's first episode has them, a kept session's later ones do not; GVfs's metadata, which
# its daemon writes with times as programs of the session ask. They say which episode of a
# desktop this is, nothing of what an earlier one did (HOME is restored under them).
_TIMED_CACHES = re.compile(
    r"^(\.fontconfig|\.cache/fontconfig|\.cache/gstreamer-1\.0|\.cache/mesa_shader_cache"
    r"|\.cache/tracker3|\.config/ibus|\.config/nautilus|\.local/share/nautilus"
    r"|\.local/share/gvfs-metadata)(/|$)"
)


def record(client: Any, folders: tuple[str, ...] = WATCHED_FOLDERS) -> dict[str, Any]:
    """Record the desktop behind guest ``client`` now (a second or so); see the module doc."""
    result = client.execute([RECORDER_PYTHON, "-c", _RECORDER, ":".join(folders)], timeout=60)
    try:
        return json.loads(result.output)
    except json.JSONDecodeError as e:
        raise AssertionError(f"the recorder failed: {result.output[-2000:]}") from e


def _files(listings: dict[str, dict[str, list]]) -> dict[str, dict[str, list]]:
    """Listings without the frame files and ``_LAUNCH_FILES``; per-launch contents unhashed;
    numbered sockets (the X server's, the AT-SPI bus's) under one name."""
    kept = {
        top: {
            _PER_LAUNCH_NAME.sub(r"\1N", path, count=2): entry
            for path, entry in entries.items()
            if not _FRAME_FILE.search(path)
            and path not in _LAUNCH_FILES.get(top, ())
            and not (top == "/home/user" and _TIMED_CACHES.match(path))
            and not (top == "/run/user/1000" and _TIMED_RUNTIME.match(path))
        }
        for top, entries in listings.items()
    }
    kept["/tmp"] = {k: v for k, v in kept.get("/tmp", {}).items() if k != ".X11-unix/XN"}
    for top, names in _PER_LAUNCH_CONTENT.items():
        for name in names:
            if name in kept.get(top, {}):
                kept[top][name] = kept[top][name][:3]  # mode, owner, size: not the hash
    return kept


def _processes(found: list) -> list[str]:
    """Command names and arguments, sorted; numbers that are PIDs, ports or descriptors become
    ``N``. Zombies are left out: the last session's programs, killed by the reset, stay zombies
    for the moment until the sandbox's init reaps them."""
    lines = []
    for state, name, argv in found:
        if state == "Z":
            continue
        words = [re.sub(r"\d{3,}", "N", word) for word in argv]
        # Descriptor numbers, display numbers, numbered bus sockets.
        words = [re.sub(r"^(--print-address=|--token-fd=|:|)\d+$", r"\1N", w) for w in words]
        words = [re.sub(r"(bus_|/X)\d+", r"\1N", w) for w in words]
        # D-Bus unique names (":1.22"), handed to the services a bus starts: in the order they
        # connected, which differs from one start of a session to the next.
        words = [re.sub(r"^:\d+\.\d+$", ":N.N", w) for w in words]
        # GVfs numbers the backends it spawns (exec_spaw/0, /1, ...) in the order asked for.
        words = [re.sub(r"(/exec_spaw/)\d+$", r"\1N", w) for w in words]
        lines.append(f"{name}: {' '.join(words)}")
    return sorted(lines)


def _root_properties(text: str) -> list[str]:
    """``xprop -root`` lines but those naming windows (see ``_VOLATILE_PROPERTIES``)."""
    kept = []
    for line in text.splitlines():
        if line.startswith((" ", "\t")):
            if kept:
                kept[-1] += line  # a continued value
            continue
        name = re.split(r"[(:=]", line, maxsplit=1)[0]
        if not _VOLATILE_PROPERTIES.match(name):
            # The AT-SPI bus's address: its guid, and its socket numbered per launch.
            kept.append(re.sub(r"(,guid=[0-9a-f]+|(?<=bus_)\d+)", "", line))
    return sorted(kept)


def _environment(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if name in _VOLATILE_ENV:
            continue
        if _PER_LAUNCH_ENV.match(name):
            value = "N"
        if name == "DBUS_SESSION_BUS_ADDRESS":
            value = re.sub(r",guid=[0-9a-f]+", "", value)
        lines.append(f"{name}={value}")
    return sorted(lines)


_X_SOCKET = re.compile(r"^\.X11-unix/X\d+$")


def _x_sockets(listings: dict[str, dict[str, list]]) -> list[str]:
    """What ``/tmp/.X11-unix`` holds, by kind: a fresh desktop shows its one socket (its name
    is the display number, which differs per launch)."""
    entries = listings.get("/tmp", {})
    return sorted(
        "socket" if entry[-1] == "socket" else f"{entry[0]} size {entry[2]}"
        for path, entry in entries.items()
        if _X_SOCKET.match(path)
    )


def normalize(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` without what differs between two fresh desktops (see the module doc)."""
    out = dict(report)
    out["x_sockets"] = _x_sockets(report["files"])
    out["files"] = _files(report["files"])
    out["processes"] = _processes(report["processes"])
    out["xprop_root"] = _root_properties(report["xprop_root"])
    out["shell_env"] = _environment(report["shell_env"])
    return out


def differences(fresh: dict[str, Any], now: dict[str, Any]) -> dict[str, str]:
    """The parts in which normalized record ``now`` differs from ``fresh``, each with a summary."""
    a, b = normalize(fresh), normalize(now)
    found: dict[str, str] = {}
    for part in sorted(set(a) | set(b)):
        if a.get(part) == b.get(part):
            continue
        found[part] = _summary(a.get(part), b.get(part))
    return found


def _summary(was: Any, now: Any) -> str:
    """What changed, briefly: entries added and removed for listings, else both values."""
    if isinstance(was, dict) and isinstance(now, dict):
        parts = []
        for key in sorted(set(was) | set(now)):
            if was.get(key) != now.get(key):
                parts.append(f"{key}: {_summary(was.get(key), now.get(key))}")
        return "; ".join(parts)[:2000]
    if (
        isinstance(was, list)
        and isinstance(now, list)
        and all(isinstance(x, str) for x in was + now)
    ):
        added = sorted(set(now) - set(was))
        removed = sorted(set(was) - set(now))
        return f"added {added} removed {removed}"[:2000]
    return f"was {json.dumps(was)[:500]} now {json.dumps(now)[:500]}"
