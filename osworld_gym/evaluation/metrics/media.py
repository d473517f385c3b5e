"""Media metrics: MP3 tags and the VLC window's size.

OSWorld's ``others.check_mp3_meta`` and ``vlc.is_vlc_fullscreen``. MP3 tags are read with
mutagen's ``EasyID3`` (the ``eval`` extra).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics._rules import match_value_to_rule

logger = logging.getLogger(__name__)


def check_mp3_meta(result: str | None, rules: Mapping[str, Mapping[str, Any]]) -> float:
    """1 when every listed ID3 field of the MP3 satisfies its ``{"method", "ref"}`` rule.

    Args:
        result: Path of the MP3 file.
        rules: EasyID3 key (``title``, ``artist``, ``album``, ...) → value rule (see
            :func:`~osworld_gym.evaluation.metrics._rules.match_value_to_rule`). A field
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
