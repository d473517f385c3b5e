"""Chromium resource packs (version 5) written and read for tests."""

from __future__ import annotations

import struct


def make_pak(resources: dict[int, bytes], aliases: dict[int, int], encoding: int = 1) -> bytes:
    """A version-5 pack, laid out as Chromium's grit writes one."""
    ids = sorted(resources)
    start = 12 + 6 * (len(ids) + 1) + 4 * len(aliases)
    table, offset = bytearray(), start
    for resource_id in ids:
        table += struct.pack("<HI", resource_id, offset)
        offset += len(resources[resource_id])
    table += struct.pack("<HI", 0, offset)
    alias_table = b"".join(struct.pack("<HH", a, index) for a, index in sorted(aliases.items()))
    header = struct.pack("<IBxxxHH", 5, encoding, len(ids), len(aliases))
    return header + bytes(table) + alias_table + b"".join(resources[i] for i in ids)


def read_pak(data: bytes) -> tuple[dict[int, bytes], bytes]:
    """A pack's resources by id, and its alias table's bytes."""
    _, _, count, alias_count = struct.unpack_from("<IBxxxHH", data)
    entries = [struct.unpack_from("<HI", data, 12 + 6 * i) for i in range(count + 1)]
    table_end = 12 + 6 * (count + 1)
    resources = {entries[i][0]: data[entries[i][1] : entries[i + 1][1]] for i in range(count)}
    return resources, data[table_end : table_end + 4 * alias_count]
