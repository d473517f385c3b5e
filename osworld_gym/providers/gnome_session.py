"""The files of a GNOME session like OSWorld's Ubuntu 22.04 VM (``session="gnome"``).

OSWorld's tasks were made, and its published numbers measured, on Ubuntu 22.04's GNOME session
under Xorg: the top bar, the Ubuntu dock on the left, the Yaru theme. Debian 12 packages what it
is made of (GNOME Shell 43 in X11 mode, dash-to-dock, Yaru), so a ``local`` desktop can run it
on its own Xvfb with Mesa's software GL. What Ubuntu's session mode adds is written here, into
the desktop's read-only state folder, where every program of the desktop finds it:

- a session mode (``gnome-shell --mode=osworld``): Yaru's shell theme and dash-to-dock, as
  Ubuntu's ``ubuntu`` mode has its theme and dock;
- vendor defaults for GSettings, as Ubuntu's ``gschema.override`` files are: compiled with the
  host's schemas into a folder of the desktop's own (``GSETTINGS_SCHEMA_DIR``), so ``gsettings
  get`` shows them, ``set`` writes the user's own database in HOME (restored by each reset) and
  ``reset`` comes back to them, as on the VM;
- a private system bus configuration: GNOME Shell and ``timedatectl`` want a system bus, and
  the sandbox has no system services.

Each choice below names its source: OSWorld's task files (``os/<id>``) or the accessibility tree
of OSWorld's desktop that OSWorld's agent code carries (``mm_agents/autoglm/prompt/
deduplicate_node.py`` in OSWorld's repository, April 2026). docs/concepts/desktop.md lists them.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SESSION_MODE = "osworld"
DOCK_EXTENSION = "dash-to-dock@micxgx.gmail.com"
SYSTEM_SCHEMAS = Path("/usr/share/glib-2.0/schemas")

# The dock of OSWorld's desktop, top to bottom (its accessibility tree: Google Chrome,
# Thunderbird Mail, Visual Studio Code, VLC, Writer, Calc, Impress, GIMP, Files, Ubuntu
# Software, Help; Trash is the dock's own). Apps this host lacks are skipped by the shell.
FAVORITE_APPS = (
    "google-chrome.desktop",
    "thunderbird.desktop",
    "code.desktop",
    "vlc.desktop",
    "libreoffice-writer.desktop",
    "libreoffice-calc.desktop",
    "libreoffice-impress.desktop",
    "gimp.desktop",
    "org.gnome.Nautilus.desktop",
    "snap-store_ubuntu-software.desktop",
    "yelp.desktop",
)

# Vendor defaults (GVariant text), by schema. Sources: Ubuntu 22.04's own defaults where OSWorld's
# tasks rely on them; OSWorld's image notes (screen never blanks, accessibility on).
DEFAULTS: dict[str, dict[str, str]] = {
    "org.gnome.shell": {
        "favorite-apps": "[" + ", ".join(f"'{app}'" for app in FAVORITE_APPS) + "]",
        "enabled-extensions": f"['{DOCK_EXTENSION}']",
        # No "welcome to GNOME" tour: OSWorld's desktop is long past its first login.
        "welcome-dialog-last-shown-version": "'999'",
    },
    # Ubuntu's dock: fixed on the left, the whole height, the apps button at the bottom, Trash
    # shown, no start in the overview (the desktop is what OSWorld's first screenshots show).
    "org.gnome.shell.extensions.dash-to-dock": {
        "dock-position": "'LEFT'",
        "dock-fixed": "true",
        "extend-height": "true",
        "dash-max-icon-size": "48",
        "show-apps-at-top": "false",
        "show-trash": "true",
        "show-mounts": "false",
        "disable-overview-on-startup": "true",
        "click-action": "'focus-or-appspread'",
        "custom-theme-shrink": "true",
        "running-indicator-style": "'DOTS'",
    },
    "org.gnome.desktop.interface": {
        "gtk-theme": "'Yaru'",
        "icon-theme": "'Yaru'",
        "cursor-theme": "'Yaru'",
        "enable-animations": "false",  # frames as the agent acts, not mid-animation
        "clock-show-weekday": "false",  # the top bar's clock: "Apr 17 17:04"
        "toolkit-accessibility": "true",  # OSWorld's image: apps expose their trees
    },
    "org.gnome.desktop.session": {"idle-delay": "uint32 0"},  # image notes: never blank
    "org.gnome.desktop.screensaver": {"lock-enabled": "false"},  # os/a4d98375 sets it true
    "org.gnome.desktop.notifications": {"show-banners": "true"},  # os/f9be0997 turns them off
    "org.gnome.settings-daemon.plugins.power": {
        "idle-dim": "true",  # os/bedcedc4 expects the agent to turn it off
        "sleep-inactive-ac-type": "'nothing'",
    },
}

# A system bus of the desktop's own: any of its programs may own and call any name (the
# services it hosts are the desktop's own; nothing of the host's is on it).
_SYSTEM_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC
 "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""


@dataclass(frozen=True)
class GnomeFiles:
    """Where the session's files are, on the host (inside: under the state mount).

    Attributes:
        schemas: The compiled GSettings schemas with the vendor defaults.
        data: A data folder to put first on ``XDG_DATA_DIRS`` (the session mode, desktop files).
        system_bus_config: The system bus's configuration.
    """

    schemas: Path
    data: Path
    system_bus_config: Path


def _override() -> str:
    lines = ["# osworld-gym: Ubuntu 22.04's GNOME session as OSWorld's VM has it"]
    for schema, keys in DEFAULTS.items():
        lines.append(f"[{schema}]")
        lines.extend(f"{key}={value}" for key, value in keys.items())
        lines.append("")
    return "\n".join(lines)


def _session_mode() -> str:
    return (
        "{\n"
        '    "parentMode": "user",\n'
        '    "stylesheetName": "Yaru/gnome-shell.css",\n'
        f'    "enabledExtensions": ["{DOCK_EXTENSION}"]\n'
        "}\n"
    )


# Chromium as OSWorld's tasks and dock know it: the desktop file google-chrome.desktop,
# named Google Chrome, running the desktop's `google-chrome` command.
_GOOGLE_CHROME_DESKTOP = """[Desktop Entry]
Version=1.0
Name=Google Chrome
GenericName=Web Browser
Comment=Access the Internet
Exec=google-chrome %U
StartupNotify=true
Terminal=false
Icon=chromium
Type=Application
Categories=Network;WebBrowser;
MimeType=text/html;text/xml;application/xhtml+xml;x-scheme-handler/http;x-scheme-handler/https;
"""


def available() -> str | None:
    """Why a GNOME session cannot run here (None when it can)."""
    missing = [
        name
        for name in ("gnome-shell", "glib-compile-schemas", "dbus-daemon")
        if shutil.which(name) is None
    ]
    if not Path("/usr/share/gnome-shell/extensions", DOCK_EXTENSION).is_dir():
        missing.append("gnome-shell-extension-dashtodock")
    if not Path("/usr/share/gnome-shell/theme/Yaru").is_dir():
        missing.append("yaru-theme-gnome-shell")
    if missing:
        return f"missing {', '.join(missing)} (run scripts/install_system_deps.sh)"
    return None


def write_files(state: Path, system_bus_socket: str) -> GnomeFiles:
    """Write the session's files into the desktop's state folder ``state``.

    Args:
        state: The state folder on the host.
        system_bus_socket: Where the system bus listens, as the desktop sees it.

    Raises:
        OSError: the schemas could not be compiled (the message says why).
    """
    schemas = state / "gnome" / "schemas"
    schemas.mkdir(parents=True, exist_ok=True)
    for source in SYSTEM_SCHEMAS.glob("*"):
        if source.suffix in (".xml", ".override"):
            shutil.copyfile(source, schemas / source.name)
    # After the distribution's own overrides (files are read in name order).
    (schemas / "zz_osworld-gym.gschema.override").write_text(_override())
    done = subprocess.run(
        ["glib-compile-schemas", str(schemas)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise OSError(f"glib-compile-schemas failed: {done.stderr.strip()}")
    data = state / "gnome" / "share"
    (data / "gnome-shell" / "modes").mkdir(parents=True, exist_ok=True)
    (data / "gnome-shell" / "modes" / f"{SESSION_MODE}.json").write_text(_session_mode())
    (data / "applications").mkdir(exist_ok=True)
    (data / "applications" / "google-chrome.desktop").write_text(_GOOGLE_CHROME_DESKTOP)
    config = state / "gnome" / "system-bus.conf"
    config.write_text(_SYSTEM_BUS_CONFIG.replace("{socket}", system_bus_socket))
    return GnomeFiles(schemas=schemas, data=data, system_bus_config=config)


# LibreOffice saves in Microsoft's formats by default on OSWorld's VM (its image notes: "Always
# save as" Word/Excel/PowerPoint 2007-365), so the evaluators' bare Ctrl+S on a .docx, .xlsx or
# .pptx meets no "Keep current format" question (132 of 133 such postconfig steps answer none).
_LIBREOFFICE_DEFAULT_FILTERS = {
    "com.sun.star.text.TextDocument": "MS Word 2007 XML",
    "com.sun.star.sheet.SpreadsheetDocument": "Calc MS Excel 2007 XML",
    "com.sun.star.presentation.PresentationDocument": "Impress MS PowerPoint 2007 XML",
}
_DEFAULT_FILTER_ITEM = (
    '<item oor:path="/org.openoffice.Setup/Office/Factories/'
    "org.openoffice.Setup:Factory['{factory}']\">"
    '<prop oor:name="ooSetupFactoryDefaultFilter" oor:op="fuse">'
    "<value>{name}</value></prop></item>\n"
)

# VLC asks about network access on its first start, and answering writes vlcrc whole, which alone
# solves vlc/5ac2891a (its setup edits vlcrc while VLC runs). OSWorld's VM was configured through
# VLC's preferences long before (its image notes: the web interface): no question.
_VLCRC = "[qt] # Qt interface\nqt-privacy-ask=0\n"


def write_home(home: Path) -> None:
    """What OSWorld's desktop keeps in HOME, long past its first login (after the skeleton).

    - GNOME Shell tells a user without GNOME's display manager, once, that the screen cannot
      lock; OSWorld's VM logs in through GDM and never shows it: its marker says it was shown.
    - LibreOffice's default formats as on the VM, VLC without its first-start question.
    """
    marker = home / ".local" / "share" / "gnome-shell" / "lock-warning-shown"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    settings = home / ".config" / "libreoffice" / "4" / "user" / "registrymodifications.xcu"
    if settings.is_file():
        items = "".join(
            _DEFAULT_FILTER_ITEM.format(factory=factory, name=name)
            for factory, name in _LIBREOFFICE_DEFAULT_FILTERS.items()
        )
        text = settings.read_text()
        settings.write_text(text.replace("</oor:items>", items + "</oor:items>"))
    vlcrc = home / ".config" / "vlc" / "vlcrc"
    vlcrc.parent.mkdir(parents=True, exist_ok=True)
    vlcrc.write_text(_VLCRC)


# Ubuntu's gnome-settings-daemon keeps a "terminal" media key (ctrl+alt+t), which upstream GNOME
# (Debian's) dropped: a custom keybinding does the same. Custom keybindings live at paths of
# their own, which vendor defaults cannot reach, so the media-keys daemon's start sets it in the
# user's database first (restored with HOME by each reset).
_TERMINAL_BINDING = "/org/gnome/settings-daemon/plugins/media-keys/custom-keybindings/terminal/"


def media_keys_command(daemon: str = "/usr/libexec/gsd-media-keys") -> tuple[str, ...]:
    """The media-keys daemon's command line, ``ctrl+alt+t`` (GNOME Terminal) set first."""
    schema = f"org.gnome.settings-daemon.plugins.media-keys.custom-keybinding:{_TERMINAL_BINDING}"
    script = "; ".join(
        [
            "gsettings set org.gnome.settings-daemon.plugins.media-keys custom-keybindings"
            f" \"['{_TERMINAL_BINDING}']\"",
            f"gsettings set {schema} name 'Terminal'",
            f"gsettings set {schema} command 'gnome-terminal'",
            f"gsettings set {schema} binding '<Primary><Alt>t'",
            f'exec "{daemon}"',
        ]
    )
    return ("sh", "-c", script)
