"""OSWorld's own Thunderbird tasks on sandboxed local desktops, solved through the GUI and scored.

Every Thunderbird task downloads OSWorld's profile (``thunderbird-profile.tar.gz``: an Outlook
IMAP account and Local Folders, unpacked into /home/user) from the network, unreachable here. The
test builds a small profile of the same shape instead and puts it in the asset cache under
OSWorld's cache name: the profile folder the tasks name (``t5q2a5hp.default-release``), the
Outlook account as identity ``id1`` (never connecting: no check at start-up), Local Folders, and
the prefs that keep a first start quiet. The task files, their setup (download, ``tar``, launch),
their postconfig and checks run as OSWorld's. Unsolved, each scores what OSWorld's evaluator
gives the untouched profile: 0.
"""

from __future__ import annotations

import collections.abc
import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from desktop_helpers import wait_until
from fixture_marks import needs
from real_tasks import kind_marks, real_env, real_task

from osworld_gym.actions import Click, Done, Press, RightClick, TypeText, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.tasks.placeholders import download_cache_name

pytestmark = [pytest.mark.desktop, pytest.mark.apps, pytest.mark.osworld_tasks, *kind_marks()]

LOCAL_FOLDERS = "a10b69e1"  # two folders, checked on `ls -R` of Local Folders (check_list)
NO_QUOTE = "f201fbc3"  # mail.identity.id1.auto_quote = false in prefs.js
SIGNATURE = "3f28fe4f"  # mail.identity.id1.htmlSigText matches "Anonym\nXYZ Lab"

PROFILE = "t5q2a5hp.default-release"  # the folder OSWorld's task files read
MAIN_WINDOW_CLASS = "Mail.thunderbird"  # OSWorld's postconfig closes Thunderbird by this class

# Screen positions at 1280x720 (the tests' screen), as an agent reads them off the screenshot.
LOCAL_FOLDERS_ROW = {"x": 143, "y": 160}  # "Local Folders" in the folder pane
ACCOUNT_SETTINGS = {"x": 1175, "y": 94}  # the account page's "Account Settings" button
COMPOSITION = {"x": 194, "y": 252}  # the account's "Composition & Addressing" settings
AUTO_QUOTE_BOX = {"x": 370, "y": 273}  # "Automatically quote the original message when replying"
SIGNATURE_TEXT = {"x": 745, "y": 618}  # the identity's "Signature text" box

_PREFS: dict[str, Any] = {
    # Local Folders (server1) and the Outlook account (server2, identity id1), as in OSWorld's.
    "mail.accountmanager.accounts": "account2,account1",
    "mail.accountmanager.defaultaccount": "account2",
    "mail.accountmanager.localfoldersserver": "server1",
    "mail.account.account1.server": "server1",
    "mail.account.account2.server": "server2",
    "mail.account.account2.identities": "id1",
    "mail.identity.id1.fullName": "Anonym",
    "mail.identity.id1.useremail": "anonym-x2024@outlook.com",
    "mail.identity.id1.valid": True,
    "mail.server.server1.directory-rel": "[ProfD]Mail/Local Folders",
    "mail.server.server1.hostname": "Local Folders",
    "mail.server.server1.name": "Local Folders",
    "mail.server.server1.type": "none",
    "mail.server.server1.userName": "nobody",
    "mail.server.server2.directory-rel": "[ProfD]ImapMail/outlook.office365.com",
    "mail.server.server2.hostname": "outlook.office365.com",
    "mail.server.server2.name": "anonym-x2024@outlook.com",
    "mail.server.server2.port": 993,
    "mail.server.server2.socketType": 3,
    "mail.server.server2.type": "imap",
    "mail.server.server2.userName": "anonym-x2024@outlook.com",
    # No network here: never log in or check mail (a password prompt would cover the window).
    "mail.server.server2.login_at_startup": False,
    "mail.server.server2.check_new_mail": False,
    # A quiet start: no default-client question, no account hub, no start or what's-new page.
    "mail.shell.checkDefaultClient": False,
    "mail.provider.suppress_dialog_on_startup": True,
    "mailnews.start_page.enabled": False,
    "mailnews.start_page_override.mstone": "ignore",
    "mail.rights.version": 1,
}


def _install_dir() -> str:
    """Where this host's Thunderbird is installed (its profile records it)."""
    for folder in ("/usr/lib/thunderbird", "/usr/lib64/thunderbird", "/opt/thunderbird"):
        if (Path(folder) / "application.ini").is_file():
            return folder
    pytest.skip("Thunderbird is not installed here")


def _profile_tarball() -> bytes:
    """A ``.thunderbird`` folder Thunderbird starts with, as OSWorld's tarball holds one.

    ``profiles.ini`` names the profile as the default; Thunderbird takes the default profile for
    its install only when ``compatibility.ini`` says this install used it last (else it makes a
    fresh profile and opens the account hub). An older ``LastVersion`` avoids the downgrade
    warning.
    """
    install = _install_dir()
    files = {
        ".thunderbird/profiles.ini": (
            "[Profile0]\nName=default-release\nIsRelative=1\n"
            f"Path={PROFILE}\nDefault=1\n\n[General]\nStartWithLastProfile=1\nVersion=2\n"
        ),
        f".thunderbird/{PROFILE}/compatibility.ini": (
            "[Compatibility]\nLastVersion=115.0_20230101000000/20230101000000\n"
            f"LastOSABI=Linux_x86_64-gcc3\nLastPlatformDir={install}\nLastAppDir={install}\n"
        ),
        f".thunderbird/{PROFILE}/prefs.js": "".join(
            f"user_pref({json.dumps(key)}, {json.dumps(value)});\n" for key, value in _PREFS.items()
        ),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o644
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _cache_profile(cache: Path, task: dict[str, Any], tarball: bytes) -> None:
    for step in task["config"]:
        if step["type"] != "download":
            continue
        for item in step["parameters"]["files"]:
            target = cache / task["id"] / download_cache_name(item["url"], item["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tarball)


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    tasks = [real_task("thunderbird", task) for task in (LOCAL_FOLDERS, NO_QUOTE, SIGNATURE)]
    cache = tmp_path_factory.mktemp("cache")
    tarball = _profile_tarball()
    for task in tasks:
        _cache_profile(cache, task, tarball)
    with real_env(tasks, cache_dir=str(cache)) as environment:
        yield environment


def _windows(env: OSWorldEnv) -> str:
    return env.unwrapped._desktop.client.execute(["wmctrl", "-lx"]).output


def _start(env: OSWorldEnv, prefix: str) -> None:
    """Reset to the task and wait for Thunderbird's main window on the task's profile."""
    task = next(task.id for task in env.unwrapped.tasks if task.id.startswith(prefix))
    env.reset(options={"task_id": task})
    # The account's page, not the account hub: Thunderbird took the task's profile.
    wait_until(
        lambda: "anonym-x2024@outlook.com - Mozilla Thunderbird" in _windows(env),
        timeout=60,
        message="Thunderbird's main window on the task's profile",
    )
    assert MAIN_WINDOW_CLASS in _windows(env)


def _act(env: OSWorldEnv, steps: list) -> float | None:
    """Take ``steps``; the last reward when they end the episode, else None."""
    for step in steps:
        _, reward, terminated, truncated, info = env.step(step)
        assert info["infra_error"] is None, info["infra_error"]
        if terminated or truncated:
            return reward
    return None


def _episode(env: OSWorldEnv, prefix: str, steps: list) -> float | None:
    _start(env, prefix)
    return _act(env, steps)


def _until_window(env: OSWorldEnv, steps: list, title: str) -> None:
    """Take ``steps`` until a window titled ``title`` shows, as an agent would (3 tries).

    Thunderbird maps its window before it has finished starting; a click in that moment goes
    nowhere (seen on this loaded host), and the agent, seeing nothing open, clicks again.
    """
    for _ in range(3):
        _act(env, steps)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if title in _windows(env):
                return
            time.sleep(0.2)
    pytest.fail(f"no window {title!r} after {steps}")


def _open_account_settings(env: OSWorldEnv) -> None:
    _until_window(env, [Click(**ACCOUNT_SETTINGS)], "Account Settings - Mozilla Thunderbird")


def _local_folders(env: OSWorldEnv) -> set[str]:
    """What Local Folders holds: what an agent reads off the folder pane."""
    folder = f"/home/user/.thunderbird/{PROFILE}/Mail/Local Folders"
    return set(env.unwrapped._desktop.client.execute(["ls", folder]).output.split())


def _active_window_title(env: OSWorldEnv) -> str:
    return env.unwrapped._desktop.client.execute(
        ["xdotool", "getactivewindow", "getwindowname"]
    ).output.strip()


def _appears(predicate: collections.abc.Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _new_local_folder(env: OSWorldEnv, name: str) -> None:
    """Make a folder in Local Folders through its context menu, checking the result (3 tries).

    The dialog's window maps before it takes the keyboard: a name typed in that moment is lost
    (seen once in CI, on a loaded host), so the agent waits for the dialog to have focus, then
    looks for the folder in the pane and, when it is not there, closes the dialog and tries
    again, as an agent looking at the screen would.
    """
    for _ in range(3):
        # Local Folders' context menu; "New Folder…" is its N item; the dialog takes the name.
        _until_window(env, [RightClick(**LOCAL_FOLDERS_ROW), Press(key="n")], "New Folder")
        _appears(lambda: _active_window_title(env) == "New Folder", 10.0)
        _act(env, [TypeText(text=f"{name}\n")])
        if _appears(lambda: f"{name}.msf" in _local_folders(env), 10.0):
            return
        if "New Folder" in _windows(env):
            _act(env, [Press(key="escape")])
    pytest.fail(f"no folder {name!r} in Local Folders after 3 tries: {_windows(env)}")


def test_create_two_local_folders(env: OSWorldEnv) -> None:
    _start(env, LOCAL_FOLDERS)
    _new_local_folder(env, "COMPANY")
    _new_local_folder(env, "UNIVERSITY")
    assert _act(env, [Wait(seconds=1.0), Done()]) == 1.0
    # Asked in the desktop: its HOME is on this host only for local desktops.
    assert {"COMPANY", "UNIVERSITY"} <= _local_folders(env)
    assert _episode(env, LOCAL_FOLDERS, [Done()]) == 0.0


def test_reply_without_quoting(env: OSWorldEnv) -> None:
    _start(env, NO_QUOTE)
    _open_account_settings(env)
    steps = [Click(**COMPOSITION), Wait(seconds=1.0), Click(**AUTO_QUOTE_BOX), Done()]
    assert _act(env, steps) == 1.0
    # OSWorld's postconfig closed Thunderbird by its window class.
    wait_until(lambda: MAIN_WINDOW_CLASS not in _windows(env), message="Thunderbird to close")
    assert _episode(env, NO_QUOTE, [Done()]) == 0.0


def test_plain_text_signature(env: OSWorldEnv) -> None:
    _start(env, SIGNATURE)
    _open_account_settings(env)  # the account's page: its identity and signature
    assert _act(env, [Click(**SIGNATURE_TEXT), TypeText(text="Anonym\nXYZ Lab"), Done()]) == 1.0
    assert _episode(env, SIGNATURE, [Done()]) == 0.0
