"""The desktop icons of OSWorld's desktop, and a reset that keeps their program only while fresh.

OSWorld's desktop shows one icon, Home, in the bottom-right corner (issue 36, item 1). Its
program (Desktop Icons NG) holds an episode's state: a reset keeps it only while it looks and
runs as a new one's (``osworld_gym.providers.desktop.desktop_icons``). Each test leaves
something behind as an agent could, resets, and checks that the next episode sees a new
desktop's icons, and that they still follow ``~/Desktop``. The default suite keeps the
cases that keep the program; those that replace it (a few seconds each) are in the battery.
"""

from __future__ import annotations

import collections.abc

import numpy as np
import pytest
from desktop_helpers import launch_desktop, settled_screen, wait_until
from desktop_helpers import shell_output as _sh
from fixture_marks import needs

from osworld_gym.providers.desktop import desktop_icons, gnome_session
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        gnome_session.available() is not None,
        reason=f"no GNOME session here: {gnome_session.available()}",
    ),
]

SCREEN = (1920, 1080)  # OSWorld's: where its accessibility tree places Home
CLOCK = (slice(0, 27), slice(860, 1060))  # the top bar's clock changes by the minute
HOME_ICON = (1853, 1001)  # OSWorld's tree: a 64-pixel icon labelled Home, centred here


def _screen(desktop: LocalDesktop) -> np.ndarray:
    return settled_screen(desktop, CLOCK)


def _icons_program(desktop: LocalDesktop) -> int | None:
    return desktop_icons.program(desktop.components.pid("wm"))


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop(session="gnome", screen_size=SCREEN) as launched:
        yield launched


@pytest.fixture(scope="module")
def fresh_screen(desktop: LocalDesktop) -> np.ndarray:
    desktop.reset()
    return _screen(desktop)


def _changed(desktop: LocalDesktop, fresh_screen: np.ndarray) -> bool:
    return bool(np.abs(_screen(desktop) - fresh_screen).mean() > 0.01)


def _assert_fresh(desktop: LocalDesktop, fresh_screen: np.ndarray) -> None:
    assert not _changed(desktop, fresh_screen)


def test_home_is_the_one_desktop_icon_in_the_bottom_right_corner(desktop: LocalDesktop) -> None:
    desktop.reset()
    pid = _icons_program(desktop)
    assert pid is not None
    conn = desktop.x_server.connect()
    try:
        _, shown = desktop_icons.client_windows(conn, pid)
        assert len(shown) == 1
        window = conn.create_resource_object("window", shown[0])
        geometry = window.get_geometry()
        assert (geometry.width, geometry.height) == SCREEN
        rows = [
            window.get_image(0, y, SCREEN[0], 40, 2, 0xFFFFFFFF).data  # 2: ZPixmap
            for y in range(0, SCREEN[1], 40)
        ]
    finally:
        conn.close()
    alpha = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(SCREEN[1], SCREEN[0], 4)[..., 3]
    ys, xs = np.nonzero(alpha > 128)
    # One icon and its label, nothing else drawn: the icon centred where OSWorld's tree has it.
    assert xs.min() > 1780 and ys.min() > 930 and ys.max() < SCREEN[1]
    x, y = HOME_ICON
    icon = (slice(y - 32, y + 32), slice(x - 32, x + 32))
    assert (alpha[icon] > 128).mean() > 0.5
    assert abs((xs.min() + xs.max()) / 2 - HOME_ICON[0]) < 8


def test_an_untouched_desktop_keeps_its_icons_program(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    before = _icons_program(desktop)
    desktop.reset()
    assert _icons_program(desktop) == before
    _assert_fresh(desktop, fresh_screen)


def test_files_an_episode_left_on_the_desktop_are_gone(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    before = _icons_program(desktop)
    _sh(desktop, "touch ~/Desktop/answer.txt && mkdir ~/Desktop/kept")
    wait_until(lambda: _changed(desktop, fresh_screen), message="the files' icons")
    desktop.reset()
    # Kept: its folder was emptied in place, and it drew a new desktop's icons again.
    assert _icons_program(desktop) == before
    _assert_fresh(desktop, fresh_screen)
    assert _sh(desktop, "ls -A ~/Desktop") == ""


@pytest.mark.battery
def test_a_selected_icon_gives_a_new_icons_program(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    before = _icons_program(desktop)
    x, y = HOME_ICON
    desktop.client.actions([{"kind": "click", "x": x, "y": y}])
    desktop.client.actions([{"kind": "move", "x": 900, "y": 500}])  # no hover: the selection
    wait_until(lambda: _changed(desktop, fresh_screen), message="the selected icon")
    desktop.reset()
    assert _icons_program(desktop) not in (None, before)
    _assert_fresh(desktop, fresh_screen)


@pytest.mark.battery
def test_a_replaced_desktop_folder_is_followed_in_the_next_episode(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    # The program watches the folder it was started on: it cannot see into a new one.
    _sh(desktop, "mv ~/Desktop ~/Old && mkdir ~/Desktop")
    desktop.reset()
    _assert_fresh(desktop, fresh_screen)
    _sh(desktop, "touch ~/Desktop/notes.txt")
    wait_until(lambda: _changed(desktop, fresh_screen), message="the new file's icon")
    desktop.reset()


@pytest.mark.battery
@pytest.mark.parametrize(
    "plant",
    [
        "gsettings set org.gnome.shell.extensions.ding icon-size large",
        "gsettings set org.gnome.shell.extensions.ding show-home false",
        'chmod 700 ~/Desktop && python3 -c "import os; os.setxattr('
        "os.path.expanduser('~/Desktop'), 'user.planted', b'42')\"",
        "pkill -f ding@rastersoft.com/ding.js",
    ],
    ids=["icon-size", "no-home", "folder-mode", "killed"],
)
def test_what_an_episode_changes_in_the_icons_is_undone(
    desktop: LocalDesktop, fresh_screen: np.ndarray, plant: str
) -> None:
    desktop.client.execute(plant, shell=True)
    desktop.reset()
    _assert_fresh(desktop, fresh_screen)
    assert _sh(desktop, "stat -c %a ~/Desktop") == "755\n"
    attributes = "import os; print(os.listxattr(os.path.expanduser('~/Desktop')))"
    assert "planted" not in _sh(desktop, f'python3 -c "{attributes}"')


@pytest.mark.battery
def test_a_menu_or_a_moved_icon_is_gone_after_a_reset(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    desktop.client.actions([{"kind": "click", "x": 900, "y": 500, "button": "right"}])
    wait_until(lambda: _changed(desktop, fresh_screen), message="the desktop's menu")
    desktop.reset()
    _assert_fresh(desktop, fresh_screen)
    x, y = HOME_ICON
    desktop.client.actions([{"kind": "drag", "x": x, "y": y, "to_x": 1500, "to_y": 600}])
    desktop.client.actions([{"kind": "click", "x": 900, "y": 500}])
    wait_until(lambda: _changed(desktop, fresh_screen), message="the moved icon")
    desktop.reset()
    _assert_fresh(desktop, fresh_screen)
