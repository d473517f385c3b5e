"""Files open in the apps Ubuntu opens them with (OSWorld's task files `open` them)."""

from __future__ import annotations

import shutil

import pytest
from desktop_helpers import launch_desktop, wait_until
from pdf_files import text_pdf_bytes

from osworld_gym.providers.local import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("evince") is None, reason="evince is not installed"),
]


@pytest.fixture(scope="module")
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
