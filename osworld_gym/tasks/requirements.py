"""What a task needs from the desktop and the host, read from its JSON: commands, assets, accounts.

The commands come from a curated, documented mapping rather than from every word of every
command line (``docs/design/task-format.md#task-statistics`` and the 369 Ubuntu task files):

- the program of each ``launch`` step, always (a desktop without it cannot start the task);
- in ``execute``/``command`` steps and ``vm_command_line``/``vm_command_error`` getters, the
  words at a command position (start of a command, after ``;``, ``&&``, ``|``, ``sudo``,
  ``VAR=value`` ...) that are in ``KNOWN_COMMANDS`` - apps and command-line tools whose
  absence changes what a task does; everyday shell words (``ls``, ``echo``, ``mkdir``) are
  everywhere and not listed;
- ``open`` steps: ``xdg-open`` (the guest opens files with it) and the app of the file's
  extension (``OPEN_EXTENSION_COMMANDS``);
- the apps the task is about: its ``related_apps`` tags and its domain
  (``APP_TAG_COMMANDS``), since the agent is expected to use them even when the setup does
  not start them (infeasible Chrome tasks still happen in a desktop with Chrome);
- getters that read an app's running state or profile (``GETTER_COMMANDS``).

``python``/``python3`` are not listed: the guest puts its own interpreter first on ``PATH``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from osworld_gym.tasks.model import Task
from osworld_gym.tasks.placeholders import download_cache_name

__all__ = [
    "APP_LABELS",
    "APP_TAG_COMMANDS",
    "CLI_TOOLS",
    "GETTER_COMMANDS",
    "KNOWN_COMMANDS",
    "NETWORK_GETTERS",
    "OPEN_EXTENSION_COMMANDS",
    "AssetRef",
    "TaskRequirements",
    "all_commands",
    "app_label",
    "command_words",
    "reference_files",
    "task_assets",
    "task_requirements",
]

# GUI apps of OSWorld's VM: command -> what a person calls it.
APP_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "google-chrome": "Chrome",
        "google-chrome-stable": "Chrome",
        "chromium": "Chromium",
        "gimp": "GIMP",
        "vlc": "VLC",
        "thunderbird": "Thunderbird",
        "/usr/bin/thunderbird": "Thunderbird",
        "code": "VS Code",
        "libreoffice": "LibreOffice",
        "soffice": "LibreOffice",
        "nautilus": "Files (nautilus)",
        "picard": "MusicBrainz Picard",
    }
)

# Command-line tools the tasks' setup and checks call, with the Debian package that has them.
CLI_TOOLS: Mapping[str, str] = MappingProxyType(
    {
        "bc": "bc",
        "jq": "jq",
        "xsel": "xsel",
        "xclip": "xclip",
        "tree": "tree",
        "git": "git",
        "sudo": "sudo",
        "zip": "zip",
        "unzip": "unzip",
        "tar": "tar",
        "curl": "curl",
        "wget": "wget",
        "gsettings": "libglib2.0-bin",
        "gio": "libglib2.0-bin",
        "wmctrl": "wmctrl",
        "xdotool": "xdotool",
        "socat": "socat",
        "pkill": "procps",
        "killall": "psmisc",
        "pactl": "pulseaudio-utils",
        "pulseaudio": "pulseaudio",
        "timedatectl": "systemd",
        "update-desktop-database": "desktop-file-utils",
        "xdg-open": "xdg-utils",
        "pip": "python3-pip",
        "ffmpeg": "ffmpeg",
    }
)

KNOWN_COMMANDS = frozenset(APP_LABELS) | frozenset(CLI_TOOLS)
"""Words that count as a requirement when they stand at a command position."""

# ``related_apps`` tags (lower case, spaces as ``_``) and domains -> the app's command.
APP_TAG_COMMANDS: Mapping[str, str] = MappingProxyType(
    {
        "chrome": "google-chrome",
        "browser": "google-chrome",
        "gimp": "gimp",
        "vlc": "vlc",
        "thunderbird": "thunderbird",
        "vscode": "code",
        "vs_code": "code",
        "libreoffice": "soffice",
        "libreoffice_calc": "soffice",
        "libreoffice_writer": "soffice",
        "libreoffice_impress": "soffice",
        "calc": "soffice",
        "writer": "soffice",
        "picard": "picard",
    }
)

# Getters that read an app's running state (CDP, VLC's HTTP interface) or the profile it writes.
_CHROME_GETTERS = (
    "active_tab_info active_url_from_accessTree active_tab_url_parse active_tab_html_parse "
    "open_tabs_info bookmarks history cookie_data profile_name chrome_appearance_mode_ui "
    "enable_safe_browsing enable_do_not_track page_info url_dashPart default_search_engine "
    "data_delete_automacally new_startup_page url_path_parse chrome_font_size "
    "find_unpacked_extension_path find_installed_extension_name "
    "gotoRecreationPage_and_get_html_content pdf_from_url info_from_website chrome_language "
    "chrome_saved_address number_of_search_results googledrive_file chrome_color_scheme"
).split()
GETTER_COMMANDS: Mapping[str, str] = MappingProxyType(
    {
        **{name: "google-chrome" for name in _CHROME_GETTERS},
        "vlc_playing_info": "vlc",
        "vlc_config": "vlc",
        "vscode_config": "code",
        "gimp_config_file": "gimp",
    }
)

# Getters that load pages from the live web on their own.
NETWORK_GETTERS = frozenset(
    {"info_from_website", "pdf_from_url", "gotoRecreationPage_and_get_html_content"}
)

# ``open`` steps: file extension -> the app xdg-open starts for it on OSWorld's VM.
_OFFICE = "xlsx xls ods csv docx doc odt rtf pptx ppt odp".split()
_MEDIA = "mp4 mkv avi webm mp3 wav ogg flac".split()
OPEN_EXTENSION_COMMANDS: Mapping[str, str] = MappingProxyType(
    {**{ext: "soffice" for ext in _OFFICE}, **{ext: "vlc" for ext in _MEDIA}}
)

# Setup steps and getters that need a Google account (OSWorld's test account and Drive).
_GOOGLE_STEPS = frozenset({"googledrive", "login"})
_GOOGLE_GETTERS = frozenset({"googledrive_file"})

# Shell words after which the next word is again at a command position.
_COMMAND_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "{", "}", "!", "$(", "`"})
_SHELL_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "time"})
# Words that run the command after them (their own options skipped).
_PREFIX_COMMANDS = frozenset({"sudo", "nohup", "exec", "env", "timeout", "command", "nice"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OPTION_WITH_VALUE = frozenset({"-u", "-g", "-n", "-k", "-s", "--signal", "--user", "--group"})


@dataclass(frozen=True)
class AssetRef:
    """One file a task fetches on the host, and where the asset cache keeps it.

    Attributes:
        url: Where it is downloaded from.
        task_id: The task (the cache folder ``<cache>/<task_id>/``).
        name: The file name in that folder (OSWorld's cache name).
        kind: ``"download"`` (a setup step's file) or ``"cloud_file"`` (an evaluator reference).
    """

    url: str
    task_id: str
    name: str
    kind: str


@dataclass(frozen=True)
class TaskRequirements:
    """What one task needs besides this package's code.

    Attributes:
        commands: Command -> where the need comes from (e.g. ``("launch step",)``), sorted.
        assets: Files fetched on the host, cacheable.
        google_account: Why it needs OSWorld's Google account, or None.
        proxy: Whether OSWorld runs it behind a proxy (its sites block bots).
        live_web: The live web pages or in-desktop installs it needs, one readable item each.
        local_files: ``upload_file`` sources on the host (relative ones against the task file).
        reference_files: ``cloud_file`` references kept on the host by ``local_path`` (relative
            ones against the task file): read in place, never downloaded nor uploaded.
    """

    commands: Mapping[str, tuple[str, ...]]
    assets: tuple[AssetRef, ...]
    google_account: str | None
    proxy: bool
    live_web: tuple[str, ...]
    local_files: tuple[str, ...]
    reference_files: tuple[str, ...] = ()


def app_label(command: str) -> str:
    """A readable name for a command: ``"VLC (vlc)"``, or the command itself for a tool."""
    label = APP_LABELS.get(command)
    return f"{label} ({command})" if label else command


def command_words(text: str) -> list[str]:
    """The words of a shell command line that stand at a command position, in order.

    Skips ``VAR=value`` prefixes, shell keywords and the options of ``sudo``-like prefixes
    (which are themselves listed). Text that does not tokenize yields what was read so far.

    >>> command_words("VLC_VERBOSE=-1 vlc --no-audio x.mp4")
    ['vlc']
    >>> command_words("echo pw | sudo -S apt-get install -y xsel && xsel -b")
    ['echo', 'sudo', 'apt-get', 'xsel']
    """
    lexer = shlex.shlex(text.replace("`", " ` "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    words: list[str] = []
    expect_command, skip_value = True, False
    try:
        for token in lexer:
            if token in _COMMAND_SEPARATORS or set(token) <= set(";&|()"):
                expect_command, skip_value = True, False
                continue
            if not expect_command:
                continue
            if skip_value:
                skip_value = False
                continue
            if _ASSIGNMENT.match(token) or token in _SHELL_KEYWORDS:
                continue
            after_prefix = bool(words) and words[-1] in _PREFIX_COMMANDS
            if after_prefix and (token.startswith("-") or token[0].isdigit()):
                skip_value = token in _OPTION_WITH_VALUE
                continue
            words.append(token)
            expect_command = token in _PREFIX_COMMANDS
    except ValueError:  # unbalanced quotes: keep what was read
        pass
    for inner in _substitutions(text):  # $(...) inside double quotes is one token above
        words += [w for w in command_words(inner) if w not in words]
    return words


def _substitutions(text: str) -> Iterator[str]:
    """The bodies of the outermost ``$(...)`` command substitutions of a command line."""
    start = text.find("$(")
    while start != -1:
        depth, end = 0, start + 1
        for end in range(start + 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        yield text[start + 2 : end]
        start = text.find("$(", end)


def _shell_text(command: Any, shell: bool) -> tuple[str | None, str | None]:
    """(program, shell text) of an OSWorld ``command``: one of them is set, or neither."""
    if isinstance(command, str):
        return (None, command) if shell or _needs_shell_parse(command) else (_first(command), None)
    if not isinstance(command, list | tuple) or not command:
        return None, None
    argv = [str(c) for c in command]
    if shell:
        return None, " ".join(argv)
    if argv[0].rsplit("/", 1)[-1] in ("bash", "sh") and len(argv) > 2 and argv[1] == "-c":
        return None, argv[2]
    return argv[0], None


def _needs_shell_parse(text: str) -> bool:
    return any(c in text for c in ";&|$`") or bool(_ASSIGNMENT.match(text))


def _first(text: str) -> str | None:
    words = command_words(text)
    return words[0] if words else None


def _programs(command: Any, shell: bool) -> list[str]:
    program, text = _shell_text(command, shell)
    if program is not None:
        return [program]
    return command_words(text) if text is not None else []


def _tags(task: Task) -> Iterator[str]:
    for tag in (*task.related_apps, task.domain or ""):
        yield tag.strip().lower().replace(" ", "_")


def _urls_in(value: Any) -> Iterator[str]:
    items = value if isinstance(value, list | tuple) else [value]
    for item in items:
        if isinstance(item, str) and urlsplit(item).scheme in ("http", "https"):
            host = urlsplit(item).hostname or ""
            if host not in ("localhost", "127.0.0.1", "::1"):
                yield item


def _listed(value: Any) -> list[str]:
    """A getter's ``path``-like value as a list: one string, or the list a ``multi`` one has."""
    if value is None:
        return []
    return [str(value)] if isinstance(value, str) else [str(v) for v in value]


def reference_files(task: Task) -> tuple[str, ...]:
    """The ``local_path`` of every ``cloud_file`` getter, as written (relative to the task file).

    Such references are host files beside the task, not URLs: there is nothing to download.
    """
    found: list[str] = []
    for getter in task.evaluator.getters():
        if getter.type == "cloud_file":
            found += _listed(getter.params.get("local_path"))
    return tuple(dict.fromkeys(found))


def task_assets(task: Task) -> tuple[AssetRef, ...]:
    """The files a task fetches by URL (``download`` steps, ``cloud_file`` getters), in order.

    A ``cloud_file`` with a ``local_path`` is a host file beside the task (``reference_files()``),
    no URL: it is not an asset.
    """
    assets: dict[tuple[str, str], AssetRef] = {}
    for step in task.config + task.evaluator.postconfig:
        if step.type != "download":
            continue
        for item in step.parameters.get("files", ()):
            url, path = str(item["url"]), str(item["path"])
            ref = AssetRef(url, task.id, download_cache_name(url, path), "download")
            assets.setdefault((ref.url, ref.name), ref)
    for getter in task.evaluator.getters():
        if getter.type != "cloud_file" or "local_path" in getter.params:
            continue
        paths, dests = getter.params.get("path"), getter.params.get("dest")
        if not getter.params.get("multi"):
            paths, dests = [paths], [dests]
        for url, dest in zip(paths or (), dests or (), strict=False):
            ref = AssetRef(str(url), task.id, str(dest), "cloud_file")
            assets.setdefault((ref.url, ref.name), ref)
    return tuple(assets.values())


def task_requirements(task: Task) -> TaskRequirements:
    """Everything ``TaskRequirements`` lists, derived from the task's JSON."""
    commands: dict[str, list[str]] = {}

    def need(command: str, why: str) -> None:
        commands.setdefault(command, [])
        if why not in commands[command]:
            commands[command].append(why)

    live_web: list[str] = []
    local_files: list[str] = []
    google: str | None = "OSWorld's fixed-IP Google Drive set-up" if task.fixed_ip else None
    for step in task.config + task.evaluator.postconfig:
        params = step.parameters
        if step.type == "launch":
            program, text = _shell_text(params.get("command"), bool(params.get("shell")))
            first = program or (_first(text) if text else None)
            if first:
                need(first, "launch step")
            command = params.get("command") or ()
            live_web += _urls_in(command.split() if isinstance(command, str) else list(command))
        elif step.type in ("execute", "command", "execute_with_verification"):
            for word in _programs(params.get("command"), bool(params.get("shell"))):
                if word in KNOWN_COMMANDS:
                    need(word, f"{step.type} step")
                if word in ("apt", "apt-get") or (word == "pip" and "install" in str(params)):
                    live_web.append(f"installs packages in the desktop ({word})")
        elif step.type == "open":
            path = str(params.get("path", ""))
            need("xdg-open", "open step")
            ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
            if ext in OPEN_EXTENSION_COMMANDS:
                need(OPEN_EXTENSION_COMMANDS[ext], f"open step (.{ext})")
        elif step.type == "chrome_open_tabs":
            need("google-chrome", "chrome_open_tabs step")
            live_web += _urls_in(list(params.get("urls_to_open") or ()))
        elif step.type in ("chrome_close_tabs", "update_browse_history"):
            need("google-chrome", f"{step.type} step")
        elif step.type == "upload_file":
            local_files += [str(item.get("local_path")) for item in params.get("files", ())]
        if step.type in _GOOGLE_STEPS and google is None:
            google = f"a {step.type!r} step"
    for getter in task.evaluator.getters():
        if getter.type in GETTER_COMMANDS:
            need(GETTER_COMMANDS[getter.type], f"getter {getter.type}")
        if getter.type in ("vm_command_line", "vm_command_error"):
            shell = bool(getter.params.get("shell"))
            for word in _programs(getter.params.get("command"), shell):
                if word in KNOWN_COMMANDS:
                    need(word, f"getter {getter.type}")
        if getter.type in NETWORK_GETTERS:
            live_web.append(f"getter {getter.type} loads pages from the web")
        if getter.type in _GOOGLE_GETTERS and google is None:
            google = f"getter {getter.type!r}"
    for tag in _tags(task):
        if tag in APP_TAG_COMMANDS:
            need(APP_TAG_COMMANDS[tag], f"app {tag!r}")
    return TaskRequirements(
        commands=MappingProxyType({c: tuple(w) for c, w in sorted(commands.items())}),
        assets=task_assets(task),
        google_account=google,
        proxy=task.proxy,
        live_web=tuple(dict.fromkeys(live_web)),
        local_files=tuple(local_files),
        reference_files=reference_files(task),
    )


def all_commands(requirements: Iterable[TaskRequirements]) -> list[str]:
    """Every command any of the requirements names, sorted (one probe for a whole report)."""
    return sorted({c for r in requirements for c in r.commands})
