"""Command wrappers that make a desktop answer OSWorld's task commands as OSWorld's VM does.

The shell scripts in this folder go first on the ``PATH`` of a sandboxed ``local`` desktop
(and into ``/usr/local/bin`` of the docker image):

- ``google-chrome`` (and ``google-chrome-stable``): Debian's Chromium with Chrome's profile
  folder, name (``osworld_gym.providers.desktop.chrome_branding``) and window class, and the
  desktop's own debugging port;
- ``socat``: OSWorld's fixed forwarding ports translated to the desktop's own;
- ``vlc``: VLC with the HTTP interface OSWorld's getters read;
- ``sudo``: checks OSWorld's password and runs the command as the same user.

A wrapper is installed only where the program it wraps exists (``sudo`` always), so a desktop
without Chromium has no ``google-chrome`` and a task that launches it fails as on a VM without it.
"""

from __future__ import annotations

import logging
import os
from importlib import resources
from pathlib import Path
from typing import Literal

from osworld_gym.providers.desktop.chrome_branding import PakFormatError, write_rebranded_locale

logger = logging.getLogger(__name__)

# Wrapper -> the program it needs on the host (None: nothing).
WRAPPED: dict[str, str | None] = {
    "google-chrome": "/usr/lib/chromium/chromium",
    "socat": "/usr/bin/socat",
    "vlc": "/usr/bin/vlc",
    "sudo": None,
}
# Other names of a wrapper, as links to it.
ALIASES: dict[str, str] = {"google-chrome-stable": "google-chrome"}
# What ``google-chrome`` starts, named so ``pkill chrome`` finds the browser as on OSWorld's VM
# (Chromium names its process after the file it runs). Chromium reads its resources from that
# file's folder, so the folder mirrors Chromium's.
CHROME_LINK = Path(".chrome") / "chrome"
# The locale pack a desktop's browser reads (its LANG is C.UTF-8, as OSWorld's VM is en-US).
CHROME_LOCALE = "en-US.pak"


def wrapper_source(name: str) -> str:
    """The text of a wrapper script."""
    return resources.files(__name__).joinpath(name).read_text()


def available_wrappers(root: str = "/") -> list[str]:
    """Names of the wrappers (aliases included) whose wrapped program exists under ``root``."""
    names = [
        name
        for name, needs in WRAPPED.items()
        if needs is None or os.access(Path(root) / needs.lstrip("/"), os.X_OK)
    ]
    return names + [alias for alias, target in ALIASES.items() if target in names]


def install_wrappers(
    target: Path,
    root: str = "/",
    exclude: tuple[str, ...] = (),
    chrome: Literal["mount", "link"] = "mount",
) -> list[str]:
    """Write the available wrappers into ``target`` (created), executable; return their names.

    Args:
        target: Folder that goes first on the desktop's ``PATH``.
        root: The file system the wrapped programs are looked up in (``/`` at run time; an image
            root when building one).
        exclude: Wrappers not to install (an image with a real ``sudo`` keeps it).
        chrome: How the browser gets Chrome's program name: ``"mount"`` (a sandbox mounts
            Chromium's program on an empty file here, beside links to its resources) or
            ``"link"`` (a hard link ``chrome`` beside Chromium's program; an image build).
    """
    target.mkdir(parents=True, exist_ok=True)
    installed = [name for name in available_wrappers(root) if name not in exclude]
    for name in installed:
        path = target / name
        path.unlink(missing_ok=True)
        if name in ALIASES:
            path.symlink_to(ALIASES[name])
            continue
        path.write_text(wrapper_source(name))
        path.chmod(0o755)
    if "google-chrome" in installed:
        _install_chrome_program(target / CHROME_LINK, Path(root), chrome)
    return installed


def _install_chrome_program(path: Path, root: Path, how: Literal["mount", "link"]) -> None:
    program = Path(WRAPPED["google-chrome"] or "")
    folder = path.parent
    folder.mkdir(exist_ok=True)
    chromium_dir = root / program.parent.relative_to("/")
    if how == "link":
        hard_link = chromium_dir / path.name
        if not hard_link.exists():
            os.link(root / program.relative_to("/"), hard_link)
        path.unlink(missing_ok=True)
        path.symlink_to(program.parent / path.name)
        # An image of its own: its Chromium speaks as Chrome in every language it has.
        for pack in sorted((chromium_dir / "locales").glob("*.pak")):
            _rebrand(pack, pack)
        return
    for entry in chromium_dir.iterdir():
        if entry.name not in (program.name, path.name, "locales"):
            _replace_with_link(folder / entry.name, program.parent / entry.name)
    # Chromium reads its locale packs from its program's folder: the desktop's language
    # rebranded, the others as they are.
    locales = folder / "locales"
    locales.mkdir(exist_ok=True)
    for pack in sorted((chromium_dir / "locales").glob("*")):
        target = locales / pack.name
        if pack.name != CHROME_LOCALE or not _rebrand(pack, target):
            _replace_with_link(target, program.parent / "locales" / pack.name)
    path.touch()  # the mount point


def _replace_with_link(link: Path, target: Path) -> None:
    link.unlink(missing_ok=True)
    link.symlink_to(target)


def _rebrand(pack: Path, target: Path) -> bool:
    """Write ``pack`` rebranded as Google Chrome to ``target``; False (logged) if unreadable."""
    try:
        write_rebranded_locale(pack, target)
    except (PakFormatError, OSError) as e:
        logger.warning("the browser keeps Chromium's name: %s: %s", pack, e)
        return False
    return True
