"""Media metrics: MP3 tags and the VLC window's size.

OSWorld's ``others.check_mp3_meta``, ``vlc.is_vlc_fullscreen`` and ``vlc.is_vlc_playing``. MP3
tags are read with mutagen's ``EasyID3`` (the ``eval`` extra).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse
from xml.etree import ElementTree

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics._rules import match_value_to_rule

logger = logging.getLogger(__name__)


def check_mp3_meta(result: str | None, rules: Mapping[str, Mapping[str, Any]]) -> float:
    """1 when every listed ID3 field of the MP3 satisfies its ``{"method", "ref"}`` rule.

    Args:
        result: Path of the MP3 file.
        rules: EasyID3 key (``title``, ``artist``, ``album``, ...) → value rule (see
            ``match_value_to_rule()``). A field
            with several values is compared as their comma-joined text; a missing field as
            ``""``.

    Returns:
        1.0 or 0.0; 0.0 for a missing file or one without an ID3 tag.
    """
    if not result:
        return 0.0
    mutagen = require("mutagen")
    easyid3 = require("mutagen.easyid3")
    try:
        tags = easyid3.EasyID3(result)
    except (OSError, mutagen.MutagenError) as e:  # no ID3 header: nothing was tagged
        logger.info("check_mp3_meta: cannot read tags of %s: %s", result, e)
        return 0.0
    for key, rule in rules.items():
        value = tags.get(key, "")
        text = ",".join(value) if isinstance(value, list) else str(value)
        try:
            if not match_value_to_rule(text, rule):
                return 0.0
        except TypeError as e:
            logger.info("check_mp3_meta: rule for %r cannot be applied: %s", key, e)
            return 0.0
    return 1.0


def is_vlc_fullscreen(
    result: Mapping[str, int] | None, expected: Mapping[str, int] | None
) -> float:
    """1 when the two sizes (the screen's and VLC's window, in either order) are equal.

    Args:
        result: ``{"width", "height"}`` from one getter (the task gives the screen size).
        expected: The other size (VLC's window); ``None`` when VLC has no window.
    """
    if result is None or expected is None:
        return 0.0
    return float(result["width"] == expected["width"] and result["height"] == expected["height"])


_FILE_FIELDS = ("filename", "title", "uri", "location", "name")
_URL_PATHS = (
    *(f'information/category[@name="meta"]/info[@name="{n}"]' for n in ("url", "URI")),
    *(f'information/category[@name="meta"]/info[@name="{n}"]' for n in ("location", "title")),
    'information/category[@name="meta"]/info[@name="filename"]',
    *(f'information/category[@name="Stream 0"]/info[@name="{n}"]' for n in ("Codec", "Type")),
    'information/category[@name="Stream 0"]/info[@name="Language"]',
)


def _first_text(tree: ElementTree.Element, paths: Sequence[str]) -> str | None:
    for path in paths:
        element = tree.find(path)
        if element is not None and element.text:
            return element.text
    return None


def _url_matches(expected: str, shown: str) -> bool:
    if expected in shown or shown.endswith(expected):
        return True
    wanted = urlparse(expected)
    if shown == os.path.basename(wanted.path):  # HLS streams show the playlist's file name
        return True
    if "://" in shown:
        actual = urlparse(shown)
        return wanted.netloc == actual.netloc and wanted.path in actual.path
    return False


def is_vlc_playing(result: str | None, rule: Mapping[str, Any]) -> float:
    """1 when VLC's ``status.xml`` says ``playing`` and the media matches the rule.

    Args:
        result: Path of VLC's HTTP ``/requests/status.xml`` (``vlc_playing_info``).
        rule: ``{"type": "file_name", "file_name": ...}``: the first of the meta fields
            filename, title, uri, location, name has that base name, ends with it, or ends
            with ``/`` + it; ``{"type": "url", "url": ...}``: the first of the meta fields
            url, URI, location, title, filename or stream 0's Codec, Type, Language contains
            or ends with the URL, equals its path's base name, or is a URL of the same host
            whose path contains the expected path. Another type scores 0.

    Returns:
        1.0 or 0.0; 0.0 when VLC is not playing. A missing file raises FileNotFoundError
        (the evaluator scores it 0, as OSWorld's exception does).
    """
    if result is None:
        return 0.0
    with open(result, "rb") as f:
        tree = ElementTree.fromstring(f.read().decode("utf-8"))
    state = tree.find("state")
    if state is None or state.text != "playing":
        return 0.0
    if rule["type"] == "file_name":
        shown = _first_text(
            tree, [f'information/category[@name="meta"]/info[@name="{n}"]' for n in _FILE_FIELDS]
        )
        if not shown:
            logger.warning("is_vlc_playing: no file information in VLC's status")
            return 0.0
        name = rule["file_name"]
        ends = shown.endswith("/" + name) or shown.endswith("\\" + name)
        return float(os.path.basename(shown) == name or shown.endswith(name) or ends)
    if rule["type"] == "url":
        shown = _first_text(tree, _URL_PATHS)
        if not shown:
            logger.warning("is_vlc_playing: no URL information in VLC's status")
            return 0.0
        return float(_url_matches(rule["url"], shown))
    logger.error("is_vlc_playing: unknown rule type %r", rule["type"])
    return 0.0
