"""Files open in the apps Ubuntu opens them with (OSWorld's task files `open` them)."""

from __future__ import annotations

import shutil

import pytest
from desktop_helpers import launch_desktop, wait_until

from osworld_gym.providers.local import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("evince") is None, reason="evince is not installed"),
]


def _pdf(text: str) -> bytes:
    """A one-page PDF that shows ``text`` (objects, then a cross-reference table)."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@pytest.fixture(scope="module")
def desktop() -> LocalDesktop:
    with launch_desktop() as launched:
        yield launched


def test_a_pdf_opens_in_evince_not_gimp(desktop: LocalDesktop) -> None:
    client = desktop.client
    query = client.execute(["xdg-mime", "query", "default", "application/pdf"])
    assert query.output.strip() == "org.gnome.Evince.desktop"
    client.upload("/home/user/Documents/report.pdf", _pdf("Quarterly report"))
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
