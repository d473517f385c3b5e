"""Files saved by LibreOffice itself, for the office-document parity families.

``convert()`` runs ``soffice --headless --convert-to`` once over a batch of files, with its
own throw-away profile (``-env:UserInstallation``) and a deadline, so that a module converts its
handful of base documents in one call (LibreOffice takes seconds to start). Modules call it from
a module-scoped fixture and derive their variants from the converted files; where LibreOffice
is not installed the fixture skips the cases that need it, with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

CONVERT_TIMEOUT_S = 300.0


def soffice() -> str | None:
    """The LibreOffice executable, or None."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def convert(sources: Iterable[Path], target: str, outdir: Path) -> dict[str, Path]:
    """Convert ``sources`` with LibreOffice into ``outdir``; stem -> converted file.

    Args:
        sources: Files to open (their stems must be unique).
        target: ``--convert-to`` argument, e.g. ``"xlsx"`` or ``"docx:MS Word 2007 XML"``.
        outdir: Where the converted files go (not the sources' folder: a same-format
            conversion would overwrite them).

    Skips the calling test when LibreOffice is missing; fails it when a file did not convert.
    """
    executable = soffice()
    if executable is None:
        pytest.skip("LibreOffice (soffice) is not installed: no LibreOffice-saved files")
    sources = list(sources)
    outdir.mkdir(parents=True, exist_ok=True)
    extension = target.split(":", 1)[0]
    with tempfile.TemporaryDirectory(prefix="lo-profile-") as profile:
        completed = subprocess.run(
            [
                executable,
                f"-env:UserInstallation=file://{profile}",
                "--headless",
                "--norestore",
                "--convert-to",
                target,
                "--outdir",
                str(outdir),
                *map(str, sources),
            ],
            capture_output=True,
            text=True,
            timeout=CONVERT_TIMEOUT_S,
            check=False,
        )
    converted = {source.stem: outdir / f"{source.stem}.{extension}" for source in sources}
    missing = [str(path) for path in converted.values() if not path.is_file()]
    if missing:
        pytest.fail(
            f"LibreOffice did not write {missing} ({completed.returncode}): "
            f"{completed.stdout[-1500:]} {completed.stderr[-1500:]}"
        )
    return converted


def patch_zip(
    source: Path, target: Path, edits: dict[str, Callable[[bytes], bytes] | None]
) -> Path:
    """Copy an OOXML/ODF package, rewriting members: ``edits[name](data)``; None drops one."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename in edits:
                edit = edits[info.filename]
                if edit is None:
                    continue
                data = edit(data)
            new.writestr(info, data)
    return target
