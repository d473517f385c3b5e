"""The GNOME session's files and the checks a reset makes before keeping it (no desktop)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.local.folders import _empty_in_place, empty_tree
from osworld_gym.providers.local.provider import _unflagged_dconf_flags

TOP_BAR_RESERVED = (70, 27, 1210, 693)
needs_gnome = pytest.mark.skipif(
    gnome_session.available() is not None,
    reason=f"no GNOME session here: {gnome_session.available()}",
)


@pytest.mark.parametrize(
    "properties, laid_out",
    [
        ({}, False),
        ({"_NET_NUMBER_OF_DESKTOPS": (1,), "_NET_WORKAREA": (0, 0, 1280, 720)}, False),
        ({"_NET_NUMBER_OF_DESKTOPS": (1,), "_NET_WORKAREA": (70, 27, 1210, 693)}, True),
        # A second workspace whose room is not reserved yet.
        (
            {
                "_NET_NUMBER_OF_DESKTOPS": (2,),
                "_NET_WORKAREA": (70, 27, 1210, 693, 0, 0, 1280, 720),
            },
            False,
        ),
        ({"_NET_NUMBER_OF_DESKTOPS": (2,), "_NET_WORKAREA": (70, 27, 1210, 693)}, False),
    ],
)
def test_the_shell_has_laid_out_once_the_top_bar_is_reserved_everywhere(
    properties: dict, laid_out: bool
) -> None:
    assert gnome_session.laid_out(properties) is laid_out


def test_a_reset_empties_the_runtime_folder_but_the_kept_files(tmp_path: Path) -> None:
    kept = [tmp_path / "bus", tmp_path / "dconf" / "user", tmp_path / "at-spi" / "bus_0"]
    for path in kept:
        path.parent.mkdir(exist_ok=True)
        path.write_text("kept")
    for planted in ("dconf/other", "at-spi/extra", "dbus-1/services/x.service", "pulse/native"):
        (tmp_path / planted).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / planted).write_text("planted")
    (tmp_path / "dconf-link").symlink_to(tmp_path / "dconf")
    empty_tree(tmp_path, {*kept, tmp_path / "dconf", tmp_path / "at-spi"})
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["at-spi", "at-spi/bus_0", "bus", "dconf", "dconf/user"]


def _dump(database: Path, tmp_path: Path) -> str:
    return gnome_session._dump(database, tmp_path)  # noqa: SLF001 - the module's reader


@needs_gnome
def test_session_files_hold_the_extension_and_the_users_settings(tmp_path: Path) -> None:
    files = gnome_session.write_files(
        tmp_path,
        "/run/user/1000/system_bus_socket",
        None,
        state_inside="/run/osworld-gym",
        runtime_inside="/run/user/1000",
    )
    extension = files.data / "gnome-shell" / "extensions" / gnome_session.STATE_EXTENSION
    assert json.loads((extension / "metadata.json").read_text())["shell-version"] == ["43"]
    assert "Freshen" in (extension / "extension.js").read_text()
    mode = json.loads((files.data / "gnome-shell" / "modes" / "osworld.json").read_text())
    assert gnome_session.STATE_EXTENSION in mode["enabledExtensions"]
    settings = files.user_settings.read_text()
    assert "binding='<Primary><Alt>t'" in settings and "folder-children=" in settings
    assert _dump(files.user_database, tmp_path) == settings
    assert "UpdateActivationEnvironment" in files.session_bus_config.read_text()
    # The system bus starts timedate1 from the state folder, as the desktop sees it.
    assert "<servicedir>/run/osworld-gym/gnome/system-services</servicedir>" in (
        files.system_bus_config.read_text()
    )
    service = tmp_path / "gnome" / "system-services" / "org.freedesktop.timedate1.service"
    assert "Exec=/usr/bin/python3 -I /run/osworld-gym/gnome/timedate_service.py " in (
        service.read_text()
    )
    assert (tmp_path / "gnome" / "timedate_service.py").is_file()
    # GNOME Shell's monitor configuration names the X server's fast mode (1920x1080 here).
    monitors = (files.config / "monitors.xml").read_text()
    assert "<width>1920</width>" in monitors and "<rate>240.000</rate>" in monitors
    home = tmp_path / "home"
    gnome_session.write_home(home, files)
    assert (home / gnome_session.USER_DATABASE).read_bytes() == files.user_database.read_bytes()


@needs_gnome
def test_a_home_templates_settings_stay_with_the_sessions(tmp_path: Path) -> None:
    keyfiles = tmp_path / "template-settings"
    keyfiles.mkdir()
    (keyfiles / "user").write_text("[org/gnome/desktop/interface]\ngtk-theme='Adwaita'\n")
    template = tmp_path / "template"
    (template / gnome_session.USER_DATABASE).parent.mkdir(parents=True)
    subprocess.run(
        ["dconf", "compile", str(template / gnome_session.USER_DATABASE), str(keyfiles)],
        check=True,
    )
    state = tmp_path / "state"
    files = gnome_session.write_files(
        state,
        "/run/user/1000/system_bus_socket",
        str(template),
        state_inside="/run/osworld-gym",
        runtime_inside="/run/user/1000",
    )
    settings = files.user_settings.read_text()
    assert "gtk-theme='Adwaita'" in settings and "command='gnome-terminal'" in settings
    shutil.rmtree(template)  # compiled once: the desktop does not read it again
    assert _dump(files.user_database, tmp_path) == settings


def test_a_reader_of_an_old_unflagged_change_flag_is_told_apart(tmp_path: Path) -> None:
    """dconf's service flags a change flag before replacing it; a replaced unflagged one is not."""
    flag = tmp_path / "user"
    flag.write_bytes(b"\0")
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import mmap, sys; f = open(sys.argv[1], 'rb');"
            " m = mmap.mmap(f.fileno(), 1, prot=mmap.PROT_READ); print('mapped', flush=True);"
            " sys.stdin.read()",
            str(flag),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == b"mapped\n"
        mapped = flag.stat().st_ino
        assert _unflagged_dconf_flags(reader.pid, str(flag), current=mapped) == []
        with open(flag, "r+b", buffering=0) as old:
            # Replaced under the reader, unflagged (a program's doing): it would never reread.
            (tmp_path / "new").write_bytes(b"\0")
            (tmp_path / "new").replace(flag)
            current = flag.stat().st_ino
            assert _unflagged_dconf_flags(reader.pid, str(flag), current=current) == [mapped]
            # Flagged, as the service does before it replaces one: the reader rereads.
            old.write(b"\1")
            assert _unflagged_dconf_flags(reader.pid, str(flag), current=current) == []
    finally:
        reader.kill()
        reader.wait()


def test_a_watched_folder_is_emptied_in_place_with_its_mode_and_attributes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "Desktop"
    folder.mkdir(mode=0o755)
    mode = folder.stat().st_mode
    inode = folder.stat().st_ino
    assert _empty_in_place(folder, mode) is False  # as given: nothing to redraw
    (folder / "answer.txt").write_text("42")
    (folder / "sub").mkdir()
    folder.chmod(0o700)
    assert _empty_in_place(folder, mode) is True
    assert folder.stat().st_ino == inode and folder.stat().st_mode == mode
    assert list(folder.iterdir()) == []
    folder.rmdir()
    folder.symlink_to(tmp_path)  # no real folder: left to the HOME restore to replace
    assert _empty_in_place(folder, mode) is None
