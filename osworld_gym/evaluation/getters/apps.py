"""Getters for VLC's live status, desktop shortcuts and the default video player.

``vlc_playing_info`` reads VLC's HTTP interface at the desktop's ``services["vlc"]`` (OSWorld's
port 8080, empty user name, password ``password``); the others go through the guest.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import requests

from osworld_gym.errors import GuestHTTPError

if TYPE_CHECKING:
    from osworld_gym.evaluation.getters.base import EvalContext

logger = logging.getLogger(__name__)

VLC_PASSWORD = "password"  # what OSWorld's tasks start VLC's HTTP interface with
_VLC_TIMEOUT = (5.0, 15.0)  # connect, read


def get_vlc_playing_info(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """VLC's ``/requests/status.xml`` saved as ``dest``; None when VLC does not answer 200.

    OSWorld lets a refused connection raise; here it gives None too (VLC is not running, which
    the metric scores 0), and is logged.
    """
    base = ctx.services.get("vlc")
    if not base:
        logger.warning("vlc_playing_info: this desktop exposes no VLC HTTP service")
        return None
    url = base.rstrip("/") + "/requests/status.xml"
    try:
        response = requests.get(url, auth=("", VLC_PASSWORD), timeout=_VLC_TIMEOUT)
    except requests.RequestException as e:
        logger.warning("vlc_playing_info: VLC's HTTP interface at %s: %s", url, e)
        return None
    if response.status_code != 200:
        logger.warning("vlc_playing_info: %s answered %d", url, response.status_code)
        return None
    target = ctx.fetch_dir / config.get("dest", "status.xml")
    target.write_bytes(response.content)
    return str(target)


def get_shortcuts_on_desktop(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str]:
    """File name → text of every ``.desktop`` file directly on the user's Desktop."""
    desktop = ctx.client.desktop_path().rstrip("/")
    try:
        tree = ctx.client.list_directory(desktop)
    except GuestHTTPError as e:
        if e.status in (400, 404):  # no Desktop folder: no shortcuts
            return {}
        raise
    names = [c["name"] for c in tree.get("children", []) if c["name"].endswith(".desktop")]
    return {
        name: ctx.client.download(f"{desktop}/{name}").decode("utf-8", errors="replace")
        for name in names
    }


# OSWorld's list of video MIME subtypes (``video/<x>``), duplicates included: they weigh votes.
_VIDEO_SUBTYPES = (
    "3gp 3gp 3gpp 3gpp 3gpp2 3gpp2 avi avi divx divx dv dv fli fli flv flv mp2t mp2t mp4 mp4 "
    "mp4v-es mp4v-es mpeg mpeg mpeg-system mpeg-system msvideo msvideo ogg ogg quicktime "
    "quicktime vnd.divx vnd.divx vnd.mpegurl vnd.mpegurl vnd.rn-realvideo vnd.rn-realvideo webm "
    "webm x-anim x-anim x-avi x-avi x-flc x-flc x-fli x-fli x-flv x-flv x-m4v x-m4v x-matroska "
    "x-matroska x-mpeg x-mpeg x-mpeg-system x-mpeg-system x-mpeg2 x-mpeg2 x-ms-asf x-ms-asf "
    "x-ms-asf-plugin x-ms-asf-plugin x-ms-asx x-ms-asx x-ms-wm x-ms-wm x-ms-wmv x-ms-wmv "
    "x-ms-wmx x-ms-wmx x-ms-wvx x-ms-wvx x-msvideo x-msvideo x-nsv x-nsv x-ogm x-ogm x-ogm+ogg "
    "x-theora x-theora x-theora+ogg x-theora+ogg"
).split()


def get_default_video_player(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    r"""The ``.desktop`` file most video types open with (``xdg-mime query default``).

    Like OSWorld's, each answer keeps its newline (``"vlc.desktop\n"``); ``"unknown"`` when no
    type has a default. One guest command asks for all types (OSWorld sends one per type).
    """
    script = 'for t in "$@"; do printf "%s\\036" "$(xdg-mime query default "video/$t")"; done'
    result = ctx.client.execute(["sh", "-c", script, "sh", *_VIDEO_SUBTYPES])
    answers = [a + "\n" for a in result.output.split("\x1e") if a]
    if not answers:
        return "unknown"
    return Counter(answers).most_common(1)[0][0]


APP_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "vlc_playing_info": get_vlc_playing_info,
    "shortcuts_on_desktop": get_shortcuts_on_desktop,
    "default_video_player": get_default_video_player,
}
