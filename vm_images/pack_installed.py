"""Pack the installed osworld-gym distribution into a wheel again, for the image's bundle.

``build_rootfs.sh`` builds the guest's osworld-gym wheel from the source checkout. Installed
from a wheel there is no source (the recipe is package data of ``osworld_gym``), so the wheel is
rebuilt from the installed files that the distribution's RECORD lists: the same packages and
metadata, a fresh RECORD with their hashes, file modes kept.

    python pack_installed.py OUT_DIR    # prints the wheel's path
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import sys
import zipfile
from pathlib import Path

DISTRIBUTION = "osworld-gym"
# Written by the installer, not part of the wheel.
_INSTALLER_FILES = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def pack(out_dir: Path) -> Path:
    """Write ``osworld_gym-<version>-py3-none-any.whl`` into ``out_dir`` and return its path.

    Raises:
        SystemExit: osworld-gym is not installed, or installed editable (build from the checkout).
    """
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as e:
        raise SystemExit(f"pack_installed: {DISTRIBUTION} not installed in {sys.executable}") from e
    direct_url = dist.read_text("direct_url.json")
    if direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"):
        raise SystemExit(
            "pack_installed: osworld-gym is installed editable; build from its checkout"
        )
    files = [f for f in dist.files or () if not f.parts[0] == ".."]  # not the console scripts
    dist_info = next((f.parts[0] for f in files if f.parts[0].endswith(".dist-info")), None)
    if dist_info is None:
        raise SystemExit("pack_installed: the installed osworld-gym has no RECORD to pack from")
    version = dist.version
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"osworld_gym-{version}-py3-none-any.whl"
    record: list[str] = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(files, key=str):
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            if file.parts[0] == dist_info and file.name in _INSTALLER_FILES:
                continue
            path = Path(str(file.locate()))
            data = path.read_bytes()
            info = zipfile.ZipInfo(file.as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (path.stat().st_mode & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
            record.append(f"{file.as_posix()},{_record_hash(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        archive.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: pack_installed.py OUT_DIR")
    print(pack(Path(sys.argv[1])))
