"""Which session a desktop runs when its config leaves it open (``session=None``).

OSWorld's task files were written, and every published score measured, on an Ubuntu GNOME
desktop: tasks loaded from files run on the GNOME session, laid out as that desktop. The
bundled suites' oracles were written for the light openbox session, and tasks built in memory
say nothing of where they come from: those keep the light session. Where a local desktop
cannot run GNOME (packages missing, no sandbox) the light session runs, and a warning names the
fix, because a policy would then learn a desktop unlike OSWorld's. The guest image (the docker
provider's) has both sessions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from osworld_gym.tasks.model import Task

logger = logging.getLogger(__name__)

MINIMAL = "minimal"
GNOME = "gnome"
SESSIONS = (MINIMAL, GNOME)  # the values of LocalProviderConfig.session (and docker's)
BUNDLED_SOURCE = "osworld-gym"  # the "source" of the bundled suites' tasks


def wants_gnome(tasks: Iterable[Task]) -> bool:
    """Whether any task was loaded from a file and is not one of this package's own.

    The bundled suites' tasks say ``"source": "osworld-gym"`` (wherever their folder is: an
    installed package or a checkout's ``envs/``).
    """
    return any(task.path is not None and task.source != BUNDLED_SOURCE for task in tasks)


def session_for(tasks: Iterable[Task], *, sandbox: bool = True, in_image: bool = False) -> str:
    """The session for desktops that run ``tasks`` when none was chosen.

    Args:
        tasks: The tasks the desktops will run.
        sandbox: Whether the local desktops are sandboxed (GNOME needs it).
        in_image: The desktops run osworld-gym's guest image (the docker provider's), which
            has the GNOME session; this host's packages do not matter.

    Returns:
        ``"gnome"`` for OSWorld's task files where GNOME can run, else ``"minimal"``.
    """
    if not wants_gnome(tasks):
        return MINIMAL
    if in_image:
        return GNOME
    from osworld_gym.providers.desktop import gnome_session

    why_not = "it needs the sandbox (sandbox=True)" if not sandbox else gnome_session.available()
    if why_not is None:
        return GNOME
    logger.warning(
        "these tasks are OSWorld's, written for its GNOME desktop, but GNOME cannot run here "
        "(%s): the desktops run the light openbox session, unlike OSWorld's; "
        "pass session='minimal' to choose it and silence this",
        why_not,
    )
    return MINIMAL
