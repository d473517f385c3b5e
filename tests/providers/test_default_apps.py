"""Files open in the apps Ubuntu opens them with (OSWorld's task files `open` them)."""

from __future__ import annotations

import shutil

import pytest
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs
from pdf_files import text_pdf_bytes

from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("evince") is None, reason="evince is not installed"),
]


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> LocalDesktop:
    with launch_desktop() as launched:
        yield launched


def test_a_pdf_opens_in_evince_not_gimp(desktop: LocalDesktop) -> None:
    client = desktop.client
    query = client.execute(["xdg-mime", "query", "default", "application/pdf"])
    assert query.output.strip() == "org.gnome.Evince.desktop"
    client.upload("/home/user/Documents/report.pdf", text_pdf_bytes(["Quarterly report"]))
    client.open_file("/home/user/Documents/report.pdf")
    windows = wait_until(
        lambda: [
            line
            for line in client.execute(["wmctrl", "-lx"]).output.splitlines()
            if "report.pdf" in line
        ],
        timeout=30,
        message="a window showing report.pdf",
    )
    assert "evince" in windows[0].lower() and "gimp" not in windows[0].lower()


@pytest.mark.skipif(
    gnome_session.available() is not None or not gnome_session.GEDIT_DESKTOP.is_file(),
    reason="needs the GNOME session and gedit",
)
def test_on_gnome_a_text_file_opens_in_gedit_titled_as_osworlds_tasks_expect() -> None:
    # multi_apps/d1acdb87 activates "restaurants.txt (~/Desktop) - gedit" after `open`ing it.
    with launch_desktop(session="gnome", screen_size=(1280, 720)) as gnome:
        client = gnome.client
        query = client.execute(["xdg-mime", "query", "default", "text/plain"])
        assert query.output.strip() == "org.gnome.gedit.desktop"
        client.upload("/home/user/Desktop/restaurants.txt", b"Tim Ho Wan\n")
        client.open_file("/home/user/Desktop/restaurants.txt")
        wait_until(
            lambda: (
                "restaurants.txt (~/Desktop) - gedit" in client.execute(["wmctrl", "-l"]).output
            ),
            timeout=30,
            message="gedit's window",
        )


def test_the_light_session_keeps_mousepad_for_text_files(desktop: LocalDesktop) -> None:
    query = desktop.client.execute(["xdg-mime", "query", "default", "text/plain"])
    assert query.output.strip() == "org.xfce.mousepad.desktop"
