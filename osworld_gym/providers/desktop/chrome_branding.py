"""Debian's Chromium named Google Chrome, as OSWorld's VM runs it.

OSWorld's tasks and agents know the browser as Google Chrome: 29 task files activate a window
titled "… - Google Chrome", and its window class is ``google-chrome``. Google Chrome is not in
Debian; Chromium is the same browser under another name. The name is text: Chromium writes its
window titles ("$1 - Chromium"), menus and dialogs from its locale resource pack
(``locales/<lang>.pak``), so a copy of the pack with "Chromium" replaced by "Google Chrome" makes
it present itself as Chrome. The window class follows ``CHROME_DESKTOP`` (the desktop file the
browser was started from), set by the ``google-chrome`` command.

The pack's layout (version 5, as Chromium's ``tools/grit/grit/format/data_pack.py`` writes
it): a 12-byte header (version, encoding, resource count, alias count), a table of ``(id: u16,
offset: u32)`` with one extra entry whose offset ends the last resource, a table of aliases
``(id: u16, index: u16)`` that name table entries (unchanged by a rewrite), then the resources'
bytes.
"""

from __future__ import annotations

import struct
from pathlib import Path

OLD_NAME = b"Chromium"
NEW_NAME = b"Google Chrome"
PAK_VERSION = 5
_HEADER = struct.Struct("<IBxxxHH")
_ENTRY = struct.Struct("<HI")
_ALIAS_SIZE = 4
_UTF8 = 1


class PakFormatError(ValueError):
    """A resource pack this module cannot read (another version, truncated, not UTF-8)."""


def rebrand_pak(data: bytes, old: bytes = OLD_NAME, new: bytes = NEW_NAME) -> bytes:
    """A copy of the locale pack ``data`` with ``old`` replaced by ``new`` in every resource.

    Raises:
        PakFormatError: Not a version-5 UTF-8 pack, or its tables point outside it.
    """
    if len(data) < _HEADER.size:
        raise PakFormatError("shorter than a pack's header")
    version, encoding, count, alias_count = _HEADER.unpack_from(data)
    if version != PAK_VERSION:
        raise PakFormatError(f"pack version {version}, not {PAK_VERSION}")
    if encoding != _UTF8:
        raise PakFormatError(f"pack encoding {encoding}, not UTF-8 ({_UTF8})")
    table_end = _HEADER.size + (count + 1) * _ENTRY.size
    data_start = table_end + alias_count * _ALIAS_SIZE
    if data_start > len(data):
        raise PakFormatError("the pack's tables run past its end")
    entries = [_ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size) for i in range(count + 1)]
    offsets = [offset for _, offset in entries]
    if offsets != sorted(offsets) or offsets[0] < data_start or offsets[-1] > len(data):
        raise PakFormatError("the pack's offsets are out of order or outside it")
    bodies = [data[offsets[i] : offsets[i + 1]].replace(old, new) for i in range(count)]
    table = bytearray()
    offset = data_start
    for (resource_id, _), body in zip(entries[:-1], bodies, strict=True):
        table += _ENTRY.pack(resource_id, offset)
        offset += len(body)
    table += _ENTRY.pack(entries[-1][0], offset)
    return b"".join([data[: _HEADER.size], bytes(table), data[table_end:data_start], *bodies])


def write_rebranded_locale(source: Path, target: Path) -> None:
    """Write ``source`` (a locale pack) rebranded to ``target``, through a temporary file.

    Raises:
        PakFormatError: ``source`` is not a pack this module reads.
        OSError: Reading or writing failed.
    """
    rebranded = rebrand_pak(source.read_bytes())
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(rebranded)
    partial.replace(target)
