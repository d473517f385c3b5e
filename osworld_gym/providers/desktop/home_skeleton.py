"""The default HOME of a fresh desktop (``local``, and the docker image's ``/home/user``).

XDG folders, maximized windows, quiet first starts, and OSWorld's desktop conventions: Ctrl+Alt+T
opens GNOME's terminal (as on OSWorld's Ubuntu; tasks press it in their setup steps), and
LibreOffice opens documents directly. Without these settings LibreOffice greets every fresh HOME
with a "Tip of the Day" dialog that covers the document, Impress with its template chooser, and
text files open in a word processor. The skeleton is written in code (not copied from package
data) so it stays readable and reviewable here.
"""

from __future__ import annotations

from pathlib import Path

XDG_FOLDERS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos")

# AutoRecovery stays at LibreOffice's defaults (on, every 10 minutes), as on OSWorld's VM: task
# libreoffice_impress/2cd43775 ("Enable auto-save every 3min") starts from those defaults in the
# Options dialog and checks ``Recovery/AutoSave`` in registrymodifications.xcu. A reset restores
# HOME, so no recovery dialog follows from apps killed in an earlier episode.
# Impress's template chooser: LibreOffice 7.4 (Debian 12's) reads ``Misc/NewDoc/AutoPilot``; its
# schema has no ``Misc/StartWithTemplate`` and drops that item silently (the chooser then opened a
# few seconds after every Impress start). Both are written, for releases that use either name.
_LIBREOFFICE_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" \
xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" \
oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" \
oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Setup/Office"><prop oor:name="ooSetupInstCompleted" \
oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Setup/Product"><prop oor:name="ooSetupLastVersion" \
oor:op="fuse"><value>7.4</value></prop></item>
<item oor:path="/org.openoffice.Office.Impress/Misc"><prop oor:name="StartWithTemplate" \
oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Impress/Misc/NewDoc"><prop oor:name="AutoPilot" \
oor:op="fuse"><value>false</value></prop></item>
{factories}</oor:items>
"""

# LibreOffice remembers window geometry per document kind ("X,Y,W,H;STATE;MAXIMIZED RECT;",
# state 5 = maximized). A fresh profile has none and maps a 24x26 window under openbox.
_LIBREOFFICE_FACTORIES = (
    "com.sun.star.sheet.SpreadsheetDocument",
    "com.sun.star.text.TextDocument",
    "com.sun.star.presentation.PresentationDocument",
    "com.sun.star.drawing.DrawingDocument",
    "com.sun.star.frame.StartModule",
)
_FACTORY_ITEM = (
    '<item oor:path="/org.openoffice.Setup/Office/Factories/'
    "org.openoffice.Setup:Factory['{name}']\">"
    '<prop oor:name="ooSetupFactoryWindowAttributes" oor:op="fuse">'
    "<value>0,0,1024,700;5;0,0,1024,700;</value></prop></item>\n"
)

# Plain text in the text editor, as on a desktop; office formats keep LibreOffice's defaults.
# PDFs in Evince, as on Ubuntu (five OSWorld task files open one; GIMP, which otherwise claims
# them first, would ask how to import it).
_MIMEAPPS = """[Default Applications]
application/pdf=org.gnome.Evince.desktop
text/plain=org.xfce.mousepad.desktop
text/x-python=org.xfce.mousepad.desktop
text/markdown=org.xfce.mousepad.desktop
application/x-shellscript=org.xfce.mousepad.desktop
application/x-zerosize=org.xfce.mousepad.desktop
"""


# The sound server a task starts (``pulseaudio --start``) plays to a null sink in a desktop with no
# sound card, which PulseAudio creates at 100%. OSWorld's VM has its volume below the maximum:
# os/28cc3b7e asks the agent to turn it up to 100% and checks ``pactl``'s first sink volume (the
# exact value is not known; 70% here). The user's default.pa keeps the system's and sets it.
_PULSE_DEFAULT_PA = """.include /etc/pulse/default.pa
.nofail
set-sink-volume auto_null 45875
"""
PULSE_START_VOLUME = 70  # percent: 45875 / 65536


SYSTEM_OPENBOX_RC = Path("/etc/xdg/openbox/rc.xml")

# Normal windows open maximized, as on OSWorld's desktops (LibreOffice otherwise maps a 24x26
# window under openbox); dialogs keep their own size. GIMP places its main window itself (a
# user-specified position with south-west gravity, 1024x768): on a screen smaller than that it
# lands mostly below the bottom edge, so its position and size are forced to the whole screen.
_OPENBOX_APPLICATIONS = """<applications>
  <application type="normal"><maximized>true</maximized></application>
  <application class="Gimp" type="normal">
    <position force="yes"><x>0</x><y>0</y></position>
    <size><width>100%</width><height>100%</height></size>
    <maximized>true</maximized>
  </application>
</applications>"""

# Ctrl+Alt+T opens a terminal, as on OSWorld's Ubuntu: 12 of OSWorld's task files press it in
# their setup steps, and agents learn it. GNOME's terminal, whose text ``/terminal`` reads, where
# it is installed; else the system's default terminal.
TERMINAL_KEY = "C-A-t"
_TERMINAL_COMMAND = "sh -c 'exec gnome-terminal 2>/dev/null || exec x-terminal-emulator'"
_TERMINAL_KEYBIND = (
    f'<keybind key="{TERMINAL_KEY}"><action name="Execute">'
    f"<command>{_TERMINAL_COMMAND}</command></action></keybind>"
)


def openbox_rc(system_rc: Path = SYSTEM_OPENBOX_RC) -> str | None:
    """Debian's openbox configuration with every normal window maximized and Ctrl+Alt+T bound.

    None when the system's configuration is missing or has no ``<applications>`` section.
    """
    try:
        text = system_rc.read_text()
    except OSError:
        return None
    start, end = text.find("<applications>"), text.find("</applications>")
    if start < 0 or end < 0:
        return None
    text = text[:start] + _OPENBOX_APPLICATIONS + text[end + len("</applications>") :]
    if f'key="{TERMINAL_KEY}"' not in text:
        text = text.replace("<keyboard>", f"<keyboard>\n  {_TERMINAL_KEYBIND}", 1)
    return text


def write_default_home(home: Path) -> None:
    """Create the XDG folders and the quiet-first-start settings under ``home``."""
    rc = openbox_rc()
    if rc is not None:
        (home / ".config" / "openbox").mkdir(parents=True, exist_ok=True)
        (home / ".config" / "openbox" / "rc.xml").write_text(rc)
    for folder in XDG_FOLDERS:
        (home / folder).mkdir(parents=True, exist_ok=True)
    settings = home / ".config" / "libreoffice" / "4" / "user" / "registrymodifications.xcu"
    settings.parent.mkdir(parents=True, exist_ok=True)
    factories = "".join(_FACTORY_ITEM.format(name=name) for name in _LIBREOFFICE_FACTORIES)
    settings.write_text(_LIBREOFFICE_SETTINGS.format(factories=factories))
    (home / ".config" / "mimeapps.list").write_text(_MIMEAPPS)
    (home / ".config" / "pulse").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "pulse" / "default.pa").write_text(_PULSE_DEFAULT_PA)
