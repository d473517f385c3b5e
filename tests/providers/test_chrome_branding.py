"""Chromium's locale pack rebranded as Google Chrome (providers.chrome_branding)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from pak_files import make_pak, read_pak

from osworld_gym.providers.desktop.chrome_branding import PakFormatError, rebrand_pak

HOST_PACK = Path("/usr/lib/chromium/locales/en-US.pak")


def test_every_resource_names_google_chrome_and_aliases_still_point_at_their_entries() -> None:
    pack = make_pak(
        {800: b"Relaunch Chromium?", 956: b"$1 - Chromium", 957: b"Chromium and Chromium", 2: b""},
        aliases={958: 2},  # 958 is 956's text ("$1 - Chromium Beta" in the real pack)
    )
    resources, aliases = read_pak(rebrand_pak(pack))
    assert resources == {
        2: b"",
        800: b"Relaunch Google Chrome?",
        956: b"$1 - Google Chrome",
        957: b"Google Chrome and Google Chrome",
    }
    assert aliases == struct.pack("<HH", 958, 2)


@pytest.mark.parametrize(
    "broken, why",
    [
        (b"\x05\x00", "shorter"),
        (struct.pack("<IBxxxHH", 4, 1, 0, 0), "version 4"),
        (make_pak({1: b"x"}, {}, encoding=2), "encoding 2"),
        (make_pak({1: b"x", 2: b"y"}, {})[:-20], "past its end"),
        (make_pak({1: b"abc"}, {})[:-1], "outside"),
    ],
)
def test_a_pack_it_cannot_read_is_refused_with_the_reason(broken: bytes, why: str) -> None:
    with pytest.raises(PakFormatError, match=why):
        rebrand_pak(broken)


@pytest.mark.skipif(not HOST_PACK.is_file(), reason="Chromium is not installed")
def test_the_hosts_chromium_pack_titles_windows_as_google_chrome() -> None:
    original, original_aliases = read_pak(HOST_PACK.read_bytes())
    rebranded, aliases = read_pak(rebrand_pak(HOST_PACK.read_bytes()))
    assert rebranded.keys() == original.keys() and aliases == original_aliases
    assert b"$1 - Google Chrome" in rebranded.values()
    assert not any(b"Chromium" in text for text in rebranded.values())
