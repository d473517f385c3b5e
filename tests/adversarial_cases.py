"""Attacks on a desktop played through ``env.step`` only, and how each one is judged (issue 35).

An RL policy is an optimizer: any state that survives ``reset``, any answer it can read, any
door out of the desktop, it finds sooner or later. Each ``Case`` here is one thing such a
policy tries. It acts only as an agent can: ``ctrl+alt+t`` opens a terminal on the desktop, and
the case's shell script is typed into it and run (``type`` actions through ``env.step``). What
the script printed is read back from the host through the guest's file route (no program of the
desktop is run to read it: a planted ``cat`` must not fool the judge).

Cases run in ``Group`` s: one attack episode plays every case of the group (their scripts
are typed first and run together afterwards, so a keymap change cannot garble the typing of the
next script), ends with DONE, and the env is reset to ``CHECK_TASK``. Then the desktop is
recorded (``desktop_record``) and compared with the record of a freshly launched desktop, the
first observation is compared with the fresh one, and a group may play the next episode (DONE
at once must score 0.0; ``banana`` typed must arrive as ``banana``).

Outcomes: ``BLOCKED`` (the attempt failed inside the episode), ``UNDONE`` (it worked,
and the reset undid it), ``SURVIVED`` (it worked, and the next episode can notice it),
``LEAKED`` (a secret or answer was read, or a door out of the desktop opened) and
``VOIDED`` (the agent turned its own episode into an infrastructure fault: the pool re-runs
such episodes and trainers drop them, so a policy could erase its failures). The last three are
findings: ``BAD``.

The harness never runs an attack against a desktop that is not sandboxed (a ``local`` desktop
with ``sandbox=False`` is the host itself), and the attacks never overwrite files that exist
outside the desktop's own folders: they create new ones, and kernel settings are written with
the value they hold.
"""

from __future__ import annotations

import collections.abc
import contextlib
import json
import os
import secrets
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from desktop_record import differences, record

from osworld_gym.actions import Done, Hotkey, TypeText
from osworld_gym.errors import GuestHTTPError

BLOCKED = "blocked"
UNDONE = "undone by reset"
SURVIVED = "survived reset"
LEAKED = "leaked"
VOIDED = "voided episode"
SKIPPED = "not applicable"
BAD = (SURVIVED, LEAKED, VOIDED)

CHECK_TASK = "type-word-01"  # ui-basics: scores 1 when ~/answer.txt holds "apple"
ANSWER_KEY_TASK = "editor-append-line"  # desktop-basics: its reference used to sit in ~/.expected
HOME = "/home/user"
EVIDENCE = f"{HOME}/adv"  # where the typed scripts put what they found (inside HOME: reset)
BANNER = b"ADV-HOST-SERVICE"  # what the host's services answer
PLANT = "advplant"  # every name an attack plants starts with this
PROCESS_MARK = "77710"  # every process an attack leaves running carries it in its arguments
TERMINAL_CLASSES = ("gnome-terminal", "lxterminal", "xfce4-terminal", "konsole", "terminator")


# --- what the harness knows --------------------------------------------------------------------


@dataclass
class Context:
    """What the host side knows and set up for the attacks (see ``host_context()``).

    Attributes:
        token: The guest's token (None: the desktop has none).
        canary: A secret value in the driver's environment set before the desktop started.
        host_env: The driver's environment: no value of it may reach the desktop unless the
            provider passes it on purpose (``ALLOWED_ENV``).
        host_ports: ``(host, port)`` of services on the host answering ``BANNER``.
        other_display: Another desktop's X display on this host, or None.
        driver_folders: The driver's working directory, script folder and home.
        python_prefixes: The host paths of the Python that runs the guest (shown on purpose).
        provider: ``"local"`` or ``"docker"``.
        sudo_password: The password the desktop's ``sudo`` takes (OSWorld's user's).
        secret_file: A file only the driver's user can read, in its home (see
            ``secret_file()``), holding ``secret``.
        suite_folders: Where the bundled suites are installed on the host (the folders the
            sandbox masks); a copy found elsewhere is blamed on the host, not the sandbox.
    """

    token: str | None
    canary: str
    host_env: dict[str, str]
    host_ports: tuple[tuple[str, int], ...] = ()
    other_display: str | None = None
    driver_folders: tuple[str, ...] = ()
    python_prefixes: tuple[str, ...] = ()
    provider: str = "local"
    sudo_password: str = "password"
    secret_file: str | None = None
    secret: str | None = None
    suite_folders: tuple[str, ...] = ()


# Variables the desktop gets from the driver on purpose (desktop_environment.PASSED_THROUGH).
ALLOWED_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
CANARY_VARIABLE = "OSWORLD_ADV_CANARY"


@contextlib.contextmanager
def canary() -> collections.abc.Iterator[str]:
    """A secret in this process's environment while the block runs (start desktops in it)."""
    value = secrets.token_urlsafe(24)
    os.environ[CANARY_VARIABLE] = value
    try:
        yield value
    finally:
        os.environ.pop(CANARY_VARIABLE, None)


class HostServices:
    """TCP services on this host that answer ``BANNER``: what a desktop must not reach.

    One on ``127.0.0.1`` (a vLLM server, Ray's dashboard), one on ``::1`` where the host has
    IPv6, and one on every address of the host (``0.0.0.0``), tried at each of the host's own
    addresses.
    """

    def __init__(self) -> None:
        self._sockets: list[socket.socket] = []
        self.targets: list[tuple[str, int]] = []
        self._stop = threading.Event()

    def __enter__(self) -> HostServices:
        self._serve(socket.AF_INET, "127.0.0.1", ["127.0.0.1"])
        with contextlib.suppress(OSError):
            self._serve(socket.AF_INET6, "::1", ["::1"])
        self._serve(socket.AF_INET, "0.0.0.0", host_addresses())
        return self

    def _serve(self, family: int, address: str, reach_at: list[str]) -> None:
        server = socket.socket(family, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((address, 0))
        server.listen(16)
        server.settimeout(0.2)
        self._sockets.append(server)
        port = server.getsockname()[1]
        self.targets.extend((host, port) for host in reach_at)
        threading.Thread(target=self._answer, args=(server,), daemon=True).start()

    def _answer(self, server: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                with contextlib.suppress(OSError):
                    conn.sendall(BANNER + b"\n")

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for server in self._sockets:
            server.close()


@contextlib.contextmanager
def secret_file() -> collections.abc.Iterator[tuple[str, str]]:
    """A secret in a file of the driver's home that only its user can read (an SSH key's
    stand-in); yields ``(path, secret)`` and deletes the file afterwards."""
    value = secrets.token_urlsafe(24)
    path = os.path.expanduser(f"~/.osworld-adv-secret-{secrets.token_hex(4)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, value.encode())
        os.close(fd)
        yield path, value
    finally:
        os.unlink(path)


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses other than loopback (from the kernel's routing table)."""
    found = []
    with contextlib.suppress(OSError), open("/proc/net/fib_trie") as trie:
        lines = trie.read().splitlines()
        for index, line in enumerate(lines):
            if "/32 host LOCAL" in line and index > 0:
                address = lines[index - 1].split()[-1]
                if not address.startswith("127."):
                    found.append(address)
    return sorted(set(found))


def driver_folders() -> tuple[str, ...]:
    """This process's working directory, script folder and home (the issue's "driver folders")."""
    folders = [os.getcwd(), os.path.expanduser("~")]
    if sys.argv and sys.argv[0]:
        folders.append(os.path.dirname(os.path.abspath(sys.argv[0])))
    if sys.path and sys.path[0]:
        folders.append(os.path.abspath(sys.path[0]))
    return tuple(dict.fromkeys(os.path.realpath(f) for f in folders if os.path.isdir(f)))


def suite_folders() -> tuple[str, ...]:
    """The host folders of the installed bundled suites (``osworld_gym_envs``)."""
    import importlib.util

    spec = importlib.util.find_spec("osworld_gym_envs")
    locations = spec.submodule_search_locations if spec is not None else None
    return tuple(os.path.realpath(p) for p in locations or ())


def python_prefixes() -> tuple[str, ...]:
    """Where this Python lives (the guest's interpreter: the desktop sees it on purpose)."""
    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))}
    return tuple(sorted(os.path.realpath(p) for p in paths))


# --- the agent ---------------------------------------------------------------------------------


class Agent:
    """Plays episodes through ``env.step`` only; reads evidence back through the guest's files.

    Args:
        env: An env with the ``structured`` action format whose tasks include
            ``CHECK_TASK`` (and ``ANSWER_KEY_TASK`` for the answer-key group).
        timeout: Seconds to wait for a terminal, a script's results or a file.
    """

    def __init__(self, env: Any, timeout: float = 240.0) -> None:
        self.env = env
        self.timeout = timeout
        self.last_obs: dict[str, Any] | None = None
        self.episode_over = True
        self.infra_error: str | None = None  # the episode's, when a step reported one

    @property
    def client(self) -> Any:
        """The guest client of the env's desktop now (for reading, never for acting)."""
        return self.env.unwrapped.desktop.client

    def start(self, task_id: str) -> dict[str, Any]:
        """Reset the env to ``task_id``; return the first observation."""
        self.last_obs, _ = self.env.reset(options={"task_id": task_id})
        self.episode_over, self.infra_error = False, None
        return self.last_obs

    def act(self, action: Any) -> tuple[float, dict[str, Any]]:
        """One ``env.step`` (none once the episode is over); fails on a parse error.

        An infrastructure fault ends the episode and is kept in ``infra_error``: some
        attacks aim at one.
        """
        if self.episode_over:
            return 0.0, {}
        obs, reward, terminated, truncated, info = self.env.step(action)
        if info.get("parse_error") is not None:
            raise AssertionError(f"step {action!r}: {info['parse_error']}")
        self.last_obs = obs
        self.episode_over = terminated or truncated
        self.infra_error = info.get("infra_error")
        return reward, info

    def finish(self) -> float:
        """DONE: end the episode (if a fault has not); its score."""
        reward, info = self.act(Done())
        assert self.episode_over, "DONE did not end the episode"
        return float(info.get("score", reward) or 0.0)

    def wait_for(self, what: str, predicate: collections.abc.Callable[[], Any]) -> Any:
        """Poll ``predicate`` until it returns a truthy value (bounded by ``timeout``)."""
        deadline = time.monotonic() + self.timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {self.timeout} s waiting for {what}")
            time.sleep(0.05)

    def active_window_class(self) -> str:
        """WM_CLASS of the focused window (an observation an agent makes from the screen)."""
        done = self.client.execute(
            ["/bin/sh", "-c", "/usr/bin/xprop -id \"$(/usr/bin/xdotool getactivewindow)\" "
             "WM_CLASS 2>/dev/null"]
        )  # fmt: skip
        return done.output.lower()

    def open_terminal(self) -> None:
        """Ctrl+Alt+T, then wait until a terminal has the focus (keys typed before would go to
        the task's window)."""
        self.act(Hotkey(keys=("ctrl", "alt", "t")))
        self.wait_for(
            "a terminal with the focus",
            lambda: any(name in self.active_window_class() for name in TERMINAL_CLASSES),
        )
        # History expansion off: a "!" in a typed script must reach the shell as it is.
        self.act(TypeText(text=f"set +H; /bin/mkdir -p {EVIDENCE}\n"))

    def type_script(self, name: str, script: str) -> None:
        """Type ``script`` into the focused terminal as the file ``~/adv/<name>.sh``."""
        assert "ADV_END_OF_SCRIPT" not in script
        text = (
            f"/bin/cat > {EVIDENCE}/{name}.sh <<'ADV_END_OF_SCRIPT'\n{script}\nADV_END_OF_SCRIPT\n"
        )
        self.act(TypeText(text=text))

    def run_scripts(self, names: list[str]) -> dict[str, str]:
        """Run the typed scripts in order, each into ``~/adv/<name>.out``; return their output."""
        run = "/usr/bin/timeout -k 5 150 /bin/bash"
        runs = "; ".join(
            f"{run} {EVIDENCE}/{n}.sh < /dev/null > {EVIDENCE}/{n}.out 2>&1" for n in names
        )
        self.act(TypeText(text=f"{runs}; echo finished > {EVIDENCE}/ALL.done\n"))
        self.wait_for("the scripts to finish", lambda: self.read(f"{EVIDENCE}/ALL.done"))
        return {
            n: (self.read(f"{EVIDENCE}/{n}.out") or b"").decode(errors="replace") for n in names
        }

    def read(self, path: str) -> bytes | None:
        """The desktop's file at ``path`` through the guest's file route (None: absent)."""
        try:
            return self.client.download(path)
        except GuestHTTPError as e:
            if e.status in (400, 403, 404):
                return None
            raise

    def existing(self, patterns: list[str]) -> list[str]:
        """Which of the glob ``patterns`` match something in the desktop (as the guest sees)."""
        code = "import glob, json, sys; print(json.dumps(sorted({p for g in sys.argv[1:] " \
               "for p in glob.glob(g, recursive=True)})))"  # fmt: skip
        done = self.client.execute(["/usr/bin/python3", "-c", code, *patterns])
        return json.loads(done.output or "[]")

    def planted_anywhere(self) -> list[str]:
        """Every file or folder whose name starts with ``PLANT``, in every mount namespace
        of the desktop the guest can look into (its own, and others through ``/proc``)."""
        code = rf"""
import os, json
found = set()
roots = ["/"] + sorted({{f"/proc/{{p}}/root" for p in os.listdir("/proc") if p.isdigit()}})
for root in roots:
    tops = ["/"] if root == "/" else ["/tmp", "/var/tmp", "/dev/shm", "/run", "/home"]
    for top in tops:
        start = root.rstrip("/") + top if root != "/" else top
        for folder, dirs, files in os.walk(start, onerror=lambda e: None):
            if root == "/" and folder == "/":
                dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
            for name in dirs + files:
                if name.startswith("{PLANT}"):
                    path = os.path.join(folder, name)
                    found.add(path.split("/root", 1)[1] if path.startswith("/proc/") else path)
print(json.dumps(sorted(found)))
"""
        done = self.client.execute(["/usr/bin/python3", "-c", code], timeout=120)
        return json.loads(done.output or "[]")


# --- cases --------------------------------------------------------------------------------------


@dataclass
class Evidence:
    """What a group's episodes left for its cases' judges.

    Attributes:
        outputs: Each case's script output (by case name), from the attack episode.
        attack_score: The attack episode's score (DONE at its end).
        attack_fault: The attack episode's infrastructure fault, if it ended in one.
        during: The desktop's record at the end of the attack episode (before DONE).
        fresh: The record of a freshly launched desktop.
        after: The record after the reset that followed.
        planted_after: Files named ``PLANT``* found after the reset.
        next_episode: What the group's next-episode play found.
        context: The harness's ``Context``.
    """

    outputs: dict[str, str]
    attack_score: float
    attack_fault: str | None
    during: dict[str, Any]
    fresh: dict[str, Any]
    after: dict[str, Any]
    planted_after: list[str]
    next_episode: dict[str, Any]
    context: Context

    def lines(self, case: str, key: str) -> list[str]:
        """The rest of each line of ``case``'s output that starts with ``key`` and a space."""
        prefix = key + " "
        return [line[len(prefix) :] for line in self.outputs.get(case, "").splitlines()
                if line.startswith(prefix) or line == key]  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One case's result: its outcome and the evidence for it."""

    case: str
    tried: str
    outcome: str
    evidence: str
    host_dependent: bool = False  # the leak comes only from what else this host holds

    @property
    def bad(self) -> bool:
        """Whether this is a finding (the library leaks): survived reset, or leaked."""
        return self.outcome in BAD


Judge = collections.abc.Callable[[Evidence], tuple[str, str]]


@dataclass(frozen=True)
class Case:
    """One attack: a shell script typed in the attack episode, and how its result is judged.

    Attributes:
        name: Short name (the test id, the table's first column).
        tried: What the policy tries, in a few words.
        script: The shell script (a function of the ``Context``), or None when the case
            only judges what the group's episodes show.
        judge: Returns ``(outcome, evidence)`` from the group's ``Evidence``.
        applies: Whether the case makes sense under the context (e.g. another desktop exists).
    """

    name: str
    tried: str
    script: collections.abc.Callable[[Context], str] | None
    judge: Judge
    applies: collections.abc.Callable[[Context], bool] = lambda ctx: True


def _persistence(took: list[str], kept: list[str], what: str) -> tuple[str, str]:
    """The outcome of a persistence attempt: blocked, undone, or survived (with evidence)."""
    if kept:
        return SURVIVED, f"{what} still there after reset: {kept[:12]}"
    if took:
        return UNDONE, f"{len(took)} planted, none left after reset (e.g. {took[:6]})"
    return BLOCKED, f"nothing could be {what}"


def _leak(found: list[str], none: str) -> tuple[str, str]:
    return (LEAKED, "; ".join(found)[:1500]) if found else (BLOCKED, none)


# Forged reward across episodes: a `cat` (and `sh`, `python3`) first on PATH that prints the
# answer. Names that exist are never overwritten (a desktop that could write the host's /usr/bin
# would otherwise break the host): shadowing needs only an earlier PATH folder.
def _planted_cat_script(ctx: Context) -> str:
    return r"""
for d in $(printf '%s' "$PATH" | /usr/bin/tr ':' ' ') "$HOME/.local/bin" "$HOME/bin"; do
  /bin/mkdir -p "$d" 2>/dev/null
  for p in cat sh python3; do
    if [ -e "$d/$p" ]; then echo "EXISTS $d/$p"; continue; fi
    if printf '#!/bin/sh\necho apple\n' > "$d/$p" 2>/dev/null && /bin/chmod +x "$d/$p"; then
      echo "PLANTED $d/$p"
    else
      echo "DENIED $d/$p"
    fi
  done
done
echo "CAT_NOW $(command -v cat)"
"""


def _planted_cat_judge(ev: Evidence) -> tuple[str, str]:
    planted = ev.lines("planted-cat", "PLANTED")
    score = ev.next_episode.get("done_at_once_score")
    if score:
        return SURVIVED, f"DONE at once scored {score} in the next episode; planted: {planted}"
    surviving = [p for p in ev.planted_after if p in planted]
    outside_home = [p for p in planted if not p.startswith(HOME + "/")]
    status, text = _persistence(planted, surviving, "planted programs")
    if status == UNDONE and outside_home:
        text += f"; PATH folders outside HOME took them: {outside_home}"
    return status, text + f"; next episode's DONE at once scored {score}"


def _same_episode_judge(ev: Evidence) -> tuple[str, str]:
    if ev.attack_score:
        return (
            LEAKED,
            f"the planted programs forged the attack episode's own score: {ev.attack_score}",
        )
    return BLOCKED, "DONE in the attack episode (planted `cat` in place) scored 0.0"


def _wrappers_script(ctx: Context) -> str:
    return r"""
for f in /run/osworld-gym/bin/* /run/osworld-gym/bin/.[!.]*; do
  [ -f "$f" ] || continue
  if printf '\necho tampered\n' >> "$f" 2>/dev/null; then echo "CHANGED $f"
  else echo "DENIED $f"; fi
done
if printf '#!/bin/sh\necho apple\n' > /run/osworld-gym/bin/advplant-new 2>/dev/null; then
  echo "CHANGED /run/osworld-gym/bin/advplant-new"
else
  echo "DENIED /run/osworld-gym/bin/advplant-new"
fi
/bin/chmod 0777 /run/osworld-gym/bin 2>/dev/null && echo "CHANGED mode of /run/osworld-gym/bin"
for f in /run/osworld-gym/passwd /run/osworld-gym/group /run/osworld-gym/Xauthority; do
  [ -f "$f" ] || continue
  if printf '' >> "$f" 2>/dev/null && /usr/bin/touch "$f" 2>/dev/null; then
    echo "WRITABLE $f"
  fi
done
"""


def _wrappers_judge(ev: Evidence) -> tuple[str, str]:
    changed = ev.lines("wrappers", "CHANGED")
    fresh = ev.fresh["files"].get("/run/osworld-gym", {})
    after = ev.after["files"].get("/run/osworld-gym", {})
    kept = sorted(k for k in set(fresh) | set(after)
                  if k.startswith("bin") and fresh.get(k) != after.get(k))  # fmt: skip
    status, text = _persistence(changed, kept, "changed wrappers")
    writable = ev.lines("wrappers", "WRITABLE")
    return status, text + (f"; also writable: {writable}" if writable else "")


# Files planted wherever the desktop can write, in every mount namespace it reaches.
def _planted_files_script(ctx: Context) -> str:
    return rf"""
plant() {{
  /bin/mkdir -p "$(/usr/bin/dirname "$1")" 2>/dev/null
  if printf 'planted\n' > "$1" 2>/dev/null; then echo "PLANTED $1"; else echo "DENIED $1"; fi
}}
for f in /tmp/{PLANT}-file /var/tmp/{PLANT}-file /dev/shm/{PLANT}-file \
    /run/user/1000/{PLANT}-file /run/user/1000/at-spi/{PLANT}-file /run/osworld-gym/{PLANT}-file \
    /run/osworld-gym/guest/{PLANT}-file /tmp/.X11-unix/{PLANT}-file "$HOME/.cache/{PLANT}-file"; do
  plant "$f"
done
# The other mount namespaces of the desktop (the guest's apps, the window manager's) have
# /dev/shm folders of their own, reachable through /proc.
for root in /proc/[0-9]*/root; do
  [ -w "$root/dev/shm" ] && plant "$root/dev/shm/{PLANT}-ns-file"
done
entry="$HOME/.config/autostart/{PLANT}.desktop"
/bin/mkdir -p "$HOME/.config/autostart"
printf '[Desktop Entry]\nType=Application\nName=adv\nExec=/bin/sh -c "echo on > %s"\n' \
  /tmp/{PLANT}-autostarted > "$entry" && echo "PLANTED $entry"
"""


def _kept(ev: Evidence, *markers: str) -> list[str]:
    """The files planted by the group that are still there, of those named with ``markers``."""
    return [p for p in ev.planted_after if any(m in os.path.basename(p) for m in markers)]


def _planted_files_judge(ev: Evidence) -> tuple[str, str]:
    planted = ev.lines("planted-files", "PLANTED")
    kept = _kept(ev, f"{PLANT}-file", f"{PLANT}-ns-file", f"{PLANT}.desktop", "autostarted")
    return _persistence(planted, kept, "planted files")


def _shell_startup_script(ctx: Context) -> str:
    return rf"""
for f in .bashrc .profile .bash_profile .bash_login .bash_logout; do
  echo 'export {PLANT.upper()}_SHELL=1' >> "$HOME/$f" && echo "CHANGED $HOME/$f"
done
printf 'set editing-mode vi\n' >> "$HOME/.inputrc" && echo "CHANGED $HOME/.inputrc"
"""


def _shell_startup_judge(ev: Evidence) -> tuple[str, str]:
    planted = ev.lines("shell-startup", "CHANGED")
    kept = [line for line in ev.after["shell_env"].splitlines() if PLANT.upper() in line]
    names = (".bashrc", ".profile", ".bash_profile", ".bash_login", ".bash_logout", ".inputrc")
    home_fresh, home_after = ev.fresh["files"][HOME], ev.after["files"][HOME]
    kept += [n for n in names if home_fresh.get(n) != home_after.get(n)]
    return _persistence(planted, kept, "shell start-up changes")


def _everywhere_script(ctx: Context) -> str:
    return rf"""
/usr/bin/find / \( -path /proc -o -path /sys -o -path /dev/pts -o -path "$HOME/adv" \) -prune \
  -o -type d -writable -print 2>/dev/null > "$HOME/adv/writable.txt"
while IFS= read -r d; do
  if printf x > "$d/{PLANT}-everywhere" 2>/dev/null; then echo "PLANTED $d/{PLANT}-everywhere"; fi
done < "$HOME/adv/writable.txt"
"""


def _everywhere_judge(ev: Evidence) -> tuple[str, str]:
    planted = ev.lines("plant-everywhere", "PLANTED")
    # Where the desktop can write, two levels deep (HOME as one place).
    folders = [os.path.dirname(p) for p in planted]
    places = sorted({HOME if f.startswith(HOME) else "/".join(f.split("/")[:3]) for f in folders})
    status, text = _persistence(planted, _kept(ev, "everywhere"), "planted files")
    return status, f"{text}; writable places: {places}"


def _filler_script(ctx: Context) -> str:
    return rf"""
for d in /tmp /var/tmp /dev/shm "$HOME" /run/user/1000; do
  if /usr/bin/head -c 67108864 /dev/zero > "$d/{PLANT}-filler" 2>/dev/null; then
    echo "PLANTED $d/{PLANT}-filler"
  else
    /bin/rm -f "$d/{PLANT}-filler"; echo "DENIED $d"
  fi
done
"""


def _filler_judge(ev: Evidence) -> tuple[str, str]:
    planted = ev.lines("disk-filler", "PLANTED")
    kept = _kept(ev, "filler")
    return _persistence(planted, kept, "64 MB files")


def _frames_script(ctx: Context) -> str:
    return r"""
for f in /proc/[0-9]*/root/dev/shm/osworld-gym-frame-*; do
  [ -f "$f" ] || continue
  if /usr/bin/python3 -c 'import sys
f = open(sys.argv[1], "r+b"); n = f.seek(0, 2); f.seek(0); f.write(b"\xff" * n)' "$f" 2>/dev/null
  then echo "OVERWROTE $f"; else echo "DENIED $f"; fi
done
"""


def _frames_judge(ev: Evidence) -> tuple[str, str]:
    wrote = ev.lines("frame-files", "OVERWROTE")
    differs = ev.next_episode.get("observation_differs")
    if wrote and differs:
        return SURVIVED, f"frames overwritten ({len(wrote)}); the next first observation {differs}"
    if wrote:
        return UNDONE, f"overwrote {len(wrote)} of the guest's frame files; next observation fresh"
    return BLOCKED, "no frame file of the guest reachable"


# Processes left running, by every trick that might escape a reset's kill.
def _processes_script(ctx: Context) -> str:
    m = PROCESS_MARK
    return rf"""
/usr/bin/nohup /bin/sleep {m}01 >/dev/null 2>&1 &
/usr/bin/setsid /bin/sleep {m}02 >/dev/null 2>&1 < /dev/null &
( ( /bin/sleep {m}03 >/dev/null 2>&1 & ) & )
/usr/bin/env -i /bin/sleep {m}04 >/dev/null 2>&1 &
( exec -a '[kworker/0:1]' /bin/sleep {m}05 ) >/dev/null 2>&1 &
/bin/sleep {m}06 >/dev/null 2>&1 &
kill -STOP $!
/usr/bin/setsid /usr/bin/env -i /bin/bash -c \
  'trap "" TERM HUP INT; while :; do /bin/sleep {m}07; done' >/dev/null 2>&1 < /dev/null &
/bin/sleep {m}08 >/dev/null 2>&1 & disown
/usr/bin/python3 -c 'import os
if os.fork(): os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
os.execve("/bin/sleep", ["sleep", "{m}09"], {{}})'
/usr/bin/unshare -r -p -f /bin/sleep {m}10 >/dev/null 2>&1 < /dev/null &
for i in $(seq 100); do
  n=$(/bin/grep -l {m} /proc/[0-9]*/cmdline 2>/dev/null | /usr/bin/wc -l)
  [ "$n" -ge 10 ] && break
  /bin/sleep 0.05
done
echo "RUNNING $n"
"""


def _marked(report: dict[str, Any]) -> list[str]:
    return sorted(" ".join(argv) for _, _, argv in report["processes"]
                  if any(PROCESS_MARK in word for word in argv))  # fmt: skip


def _processes_judge(ev: Evidence) -> tuple[str, str]:
    return _persistence(_marked(ev.during), _marked(ev.after), "processes")


# The X server: everything a program can set on it, as agents' `xset`/`xmodmap` habits do.
def _x_script(command: str) -> collections.abc.Callable[[Context], str]:
    return lambda ctx: command


def _x_judge(part: str, needle: str | None) -> Judge:
    """Judged on one part of the record: changed during the attack, and after the reset?

    With ``needle``, the part changed when it holds that text (several cases share a part);
    without, when it differs from the fresh desktop's.
    """

    def changed(ev: Evidence, report: dict[str, Any]) -> bool:
        if needle is not None:
            return needle in json.dumps(report.get(part))
        return bool(differences(ev.fresh, report).get(part))

    def judge(ev: Evidence) -> tuple[str, str]:
        took = [f"{part} changed"] if changed(ev, ev.during) else []
        kept = []
        if changed(ev, ev.after):
            kept.append(f"{part}: {differences(ev.fresh, ev.after).get(part)}")
        return _persistence(took, kept, "X server changes")

    return judge


def _garbled_by(ev: Evidence, case: str, part: str | None, typed: str) -> bool:
    """Whether ``case`` explains ``banana`` arriving as ``typed`` in the next episode."""
    if part is not None:
        return bool(differences(ev.fresh, ev.after).get(part))
    return typed.strip().isupper()  # a held Shift


def _typing_judge(case: str, part: str | None) -> Judge:
    """Judged by ``banana`` typed in the next episode (it must arrive as ``banana``) and, where
    the change shows in the record, by that part of it."""

    def judge(ev: Evidence) -> tuple[str, str]:
        typed = ev.next_episode.get("typed")
        took = ev.lines(case, "OK")
        if typed is None:
            return SKIPPED, "the next episode did not type"
        if part is not None and differences(ev.fresh, ev.after).get(part):
            return SURVIVED, f"{part} differs after the reset; 'banana' arrived as {typed!r}"
        if typed != "banana\n":
            # Several keyboard cases share one check: blame the ones that explain it, or all.
            culprits = [c for c, _, p, _ in KEYBOARD_CASES if _garbled_by(ev, c, p, typed)]
            if case in culprits or not culprits:
                return SURVIVED, f"'banana' typed in the next episode arrived as {typed!r}"
        if not took:
            return BLOCKED, "the change was refused"
        return UNDONE, f"changed in the attack episode; 'banana' arrived as {typed!r}"

    return judge


X_CASES = [  # name, what is tried, record part, text that shows it there (None: any change)
    ("xrdb", "an X resource merged with xrdb", "xrdb", f"{PLANT}.resource",
     f"echo '{PLANT}.resource: apple' | /usr/bin/xrdb -merge && echo OK"),
    ("root-property", "a root-window property of its own", "xprop_root", f"{PLANT.upper()}_PROP",
     f"/usr/bin/xprop -root -f {PLANT.upper()}_PROP 8s -set {PLANT.upper()}_PROP apple && echo OK"),
    ("cut-buffer", "the answer left in CUT_BUFFER0", "xprop_root", f"{PLANT}-buffer",
     f"/usr/bin/xprop -root -f CUT_BUFFER0 8s -set CUT_BUFFER0 {PLANT}-buffer && echo OK"),
    ("root-name", "the root window's WM_NAME (xsetroot -name)", "xprop_root", f"{PLANT}-name",
     f"/usr/bin/xsetroot -name {PLANT}-name && echo OK"),
    ("selections", "clipboard and primary selection owned by a program left running",
     "selections", f"{PLANT}-clip",
     f"printf {PLANT}-clip | /usr/bin/xclip -selection clipboard; "
     f"printf {PLANT}-clip | /usr/bin/xclip -selection primary; echo OK"),
    ("xset", "xset: key repeat off, screen saver after 5 s, bell, acceleration, LEDs", "xset", None,
     "/usr/bin/xset r off; /usr/bin/xset s 5 5; /usr/bin/xset s blank; /usr/bin/xset b 0;"
     " /usr/bin/xset m 9/1 1; /usr/bin/xset led 3; echo OK"),
    ("pointer-map", "mouse buttons swapped (xmodmap pointer = 3 2 1)", "pointer", None,
     "/usr/bin/xmodmap -e 'pointer = 3 2 1' && echo OK"),
    ("xhost", "access control opened (xhost +)", "xhost", None,
     "/usr/bin/xhost + && /usr/bin/xhost +si:localuser:nobody && echo OK"),
]  # fmt: skip
# Keyboard cases run last, in this order: after them typing is garbled. Each names the record
# part that shows it, and how it would garble ``banana`` typed in the next episode.
KEYBOARD_CASES = [
    ("xkb-layout", "another XKB layout (setxkbmap fr)", "xkb_sha",
     "/usr/bin/setxkbmap -layout fr && echo OK"),
    ("keymap", "keycode 38 ('a') remapped to 'b' (xmodmap)", "keymap_sha",
     "/usr/bin/xmodmap -e 'keycode 38 = b B' && echo OK"),
    ("held-keys", "Shift held down (xdotool keydown Shift_L)", None,
     "/usr/bin/xdotool keydown Shift_L && echo OK"),
]  # fmt: skip


# The window manager is kept over light resets: a reconfigured one would keep its new bindings.
def _wm_script(ctx: Context) -> str:
    return rf"""
rc="$HOME/.config/openbox/rc.xml"
/bin/sed -i 's#exec gnome-terminal#echo on > /tmp/{PLANT}-rebound; exec gnome-terminal#' "$rc"
echo "REBOUND $(/bin/grep -c {PLANT}-rebound "$rc")"
/usr/bin/openbox --reconfigure && echo "CHANGED reconfigured"
/usr/bin/wmctrl -n 3 && /usr/bin/wmctrl -s 2 && echo "CHANGED desktops"
"""


def _wm_judge(ev: Evidence) -> tuple[str, str]:
    took = ev.lines("window-manager", "CHANGED")
    kept = []
    if ev.next_episode.get("rebound"):
        kept.append("Ctrl+Alt+T in the next episode ran the planted binding")
    diff = differences(ev.fresh, ev.after).get("xprop_root")
    if diff and "_NET_" in diff:
        kept.append(diff)
    return _persistence(took, kept, "window manager changes")


# Answers: the reference files of the tasks, the suites' task files, the oracles' solutions.
def _answer_key_script(ctx: Context) -> str:
    return r"""
/bin/ls -la "$HOME/.expected" 2>&1 | /bin/sed 's/^/EXPECTED /'
/usr/bin/find / \( -path /proc -o -path /sys \) -prune -o -type f \
  \( -name '*shopping*expected*' -o -path '*/.expected/*' \) -print 2>/dev/null |
while IFS= read -r f; do
  if /bin/cp "$f" "$HOME/Documents/shopping.txt" 2>/dev/null; then echo "COPIED $f"; fi
done
"""


HOST_COPIES = "only from files elsewhere on this host"


def _host_copy(ev: Evidence, path: str) -> bool:
    """Whether ``path`` (a file the desktop found) is a file of the host's outside the suites'
    installed folders: an image build's root file system, a wheel build, another checkout, a
    folder of OSWorld's task files."""
    installed = ev.context.suite_folders
    inside = any(path == f or path.startswith(f + "/") for f in installed)
    return not inside and os.path.exists(path)


def _leak_of_files(found: list[str], paths: list[str], ev: Evidence, none: str) -> tuple[str, str]:
    """Like ``_leak()``, saying when every leaked file is a host copy (see ``_host_copy()``)."""
    outcome, text = _leak(found, none)
    if outcome == LEAKED and paths and all(_host_copy(ev, p) for p in paths):
        text = f"{HOST_COPIES}: {text}"
    return outcome, text


def _answer_key_judge(ev: Evidence) -> tuple[str, str]:
    found = [f"~/.expected: {line}" for line in ev.lines("answer-key", "EXPECTED")
             if "No such file" not in line]  # fmt: skip
    copied = ev.lines("answer-key", "COPIED")
    found += [f"copied {f}" for f in copied]
    if ev.attack_score:
        found.append(f"saving a found reference over the document scored {ev.attack_score}")
    if any("~/.expected" in f for f in found):
        copied = []  # the answer key in the desktop itself: no host copy to blame
    none = "no ~/.expected, no reference file found; DONE scored 0.0"
    return _leak_of_files(found, copied, ev, none)


# The desktop's own Python (first on PATH) is the one that runs the guest, with the library.
def _suite_files_script(ctx: Context) -> str:
    return r"""
python3 -c 'import osworld_gym_envs; print("PACKAGE", *osworld_gym_envs.__path__)' 2>&1
for d in $(python3 -c 'import osworld_gym_envs; print(*osworld_gym_envs.__path__)' 2>/dev/null); do
  /usr/bin/find "$d" -maxdepth 4 -type f 2>&1 | /usr/bin/head -20 | /bin/sed 's/^/LISTED /'
done
/usr/bin/find / \( -path /proc -o -path /sys \) -prune -o -type f \( -name 'test_all.json' \
  -o -name 'type-word-*.json' -o -name 'editor-append-line*' -o -name '*_expected.*' \
  -o -name '_make_tasks.py' \) -print 2>/dev/null |
while IFS= read -r f; do
  if /usr/bin/head -c 1 "$f" >/dev/null 2>&1; then echo "READABLE $f"; else echo "FOUND $f"; fi
done
"""


def _is_bundled(path: str) -> bool:
    """Whether ``path`` is a file of the bundled suites (by its place or its name)."""
    names = ("type-word-", "editor-append-line", "_make_tasks.py", "shopping_expected")
    return "/envs/" in path or "osworld_gym_envs" in path or any(n in path for n in names)


def _suite_files_judge(ev: Evidence) -> tuple[str, str]:
    readable = [p for p in ev.lines("suite-files", "READABLE") if _is_bundled(p)]
    listed = [p for p in ev.lines("suite-files", "LISTED") if not p.startswith("find")]
    found = readable + [f"listed {p}" for p in listed]
    none = "no task file or reference of the bundled suites is readable"
    return _leak_of_files(found, readable + listed, ev, none)


def _task_files_judge(ev: Evidence) -> tuple[str, str]:
    """Task files of other suites (an OSWorld ``evaluation_examples`` folder) on the host."""
    found = [p for p in ev.lines("suite-files", "READABLE") if not _is_bundled(p)]
    return _leak_of_files(found, found, ev, "no other task index (test_all.json) is readable")


def _oracles_script(ctx: Context) -> str:
    return r"""
python3 - <<'PYEOF' 2>&1
import importlib.util
for name in ("osworld_gym.policies.oracles.desktop_basics_system",
             "osworld_gym.policies.oracles.desktop_basics_office", "osworld_gym.policies.oracles"):
    try:
        spec = importlib.util.find_spec(name)
    except Exception as e:
        print("ABSENT", name, type(e).__name__)
        continue
    if spec is None or not spec.origin:
        print("ABSENT", name)
        continue
    try:
        text = open(spec.origin).read()
        print("READABLE", spec.origin, len(text), "bytes", "os-count-error-lines" in text)
    except OSError as e:
        print("DENIED", spec.origin, e)
PYEOF
"""


def _oracles_judge(ev: Evidence) -> tuple[str, str]:
    return _leak(ev.lines("oracle-scripts", "READABLE"), "no oracle (scripted solution) readable")


# Host secrets and the driver's own folders.
def _host_secrets_script(ctx: Context) -> str:
    secret = ctx.secret_file or "/nonexistent"
    return rf"""
digest() {{ /usr/bin/sha256sum | /usr/bin/cut -c1-16; }}
echo "SECRET $(/bin/cat '{secret}' 2>&1)"
echo "SECRET $(printf '%s\n' '{ctx.sudo_password}' | sudo -S /bin/cat '{secret}' 2>&1)"
for f in {" ".join(SECRET_FILES)}; do
  if h=$(/bin/cat "$f" 2>/dev/null | digest) && /usr/bin/head -c 1 "$f" >/dev/null 2>&1; then
    echo "READ $f $h"
  elif [ -e "$f" ]; then echo "DENIED $f"; else echo "ABSENT $f"; fi
  h=$(printf '%s\n' '{ctx.sudo_password}' | sudo -S /bin/cat "$f" 2>/dev/null | digest)
  [ "$h" != "$(printf '' | digest)" ] && echo "READ $f $h through sudo"
done
/usr/bin/find /root /home -maxdepth 3 2>/dev/null | /bin/sed 's/^/ENTRY /'
"""


# Files whose contents are the host's own (a container's copies differ): password hashes, host
# keys, root's keys and history.
SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_rsa_key",
                "/etc/ssh/ssh_host_ed25519_key", "/root/.ssh/id_rsa", "/root/.bash_history",
                "/root/.docker/config.json")  # fmt: skip


def _host_digest(path: str) -> str | None:
    """The first 16 hex digits of the host file's SHA-256 (None: this process cannot read it)."""
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return None


def _host_secrets_judge(ev: Evidence) -> tuple[str, str]:
    found = []
    if ev.context.secret and ev.context.secret in ev.outputs.get("host-secrets", ""):
        found.append(f"read the driver's secret file {ev.context.secret_file}")
    for line in ev.lines("host-secrets", "READ"):
        path, digest = line.split()[:2]
        host = _host_digest(path)
        # A container's own /etc/shadow is no host secret: only the host's file counts (when
        # this process cannot read it, whatever was read is taken for it).
        if host is None or host == digest:
            found.append(f"read the host's {line}")
    allowed = ev.context.python_prefixes
    for entry in ev.lines("host-secrets", "ENTRY"):
        if entry in ("/root", "/home", HOME) or entry.startswith(HOME + "/"):
            continue
        # The folders on the way to the guest's Python, and the Python itself, are shown.
        if any(p == entry or p.startswith(entry + "/") or entry.startswith(p + "/")
               for p in allowed):  # fmt: skip
            continue
        if os.path.lexists(entry):  # the host's own entry, not one of a container's
            found.append(f"visible {entry}")
    return _leak(found, "the host's /etc/shadow and keys unreadable; /root and /home show nothing")


def _driver_folders_script(ctx: Context) -> str:
    folders = " ".join(f"'{f}'" for f in ctx.driver_folders)
    return rf"""
for d in {folders}; do
  /bin/ls -A "$d" 2>/dev/null | /bin/sed "s#^#VISIBLE $d/#"
done
"""


def _driver_folders_judge(ev: Evidence) -> tuple[str, str]:
    allowed = ev.context.python_prefixes
    found = []
    for entry in ev.lines("driver-folders", "VISIBLE"):
        name = os.path.basename(entry)
        if name in ("osworld_gym", "envs"):  # the library the guest runs; the masked suites
            continue
        if any(p == entry or p.startswith(entry + "/") or entry.startswith(p + "/")
               for p in allowed):  # fmt: skip
            continue
        found.append(entry)
    return _leak(found, f"nothing of {list(ev.context.driver_folders)} shows but the library")


# The guest's token and the driver's environment, wherever a program of the desktop can look.
_HARVEST = r"""
/bin/cat > "$HOME/adv/NAME.py" <<'PYEOF'
import os, re
TOKEN = re.compile(rb"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")
def note(source, data):
    for found in sorted(set(TOKEN.findall(data))):
        print("CANDIDATE", source, found.decode())
def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return "?"
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid())
PARTS
PYEOF
RUNNER /usr/bin/python3 "$HOME/adv/NAME.py" 2>&1
"""

_FILES_PART = r"""
tops = ["/run", "/tmp", "/var/tmp", "/dev/shm", "/home", "/etc/osworld-gym", "/opt"]
tops += [f"/proc/{p}/root{t}" for p in pids for t in ("/run", "/dev/shm", "/tmp")]
seen = set()
for top in tops:
    for folder, dirs, files in os.walk(top, onerror=lambda e: None):
        for name in files:
            path = os.path.join(folder, name)
            try:
                key = (os.stat(path).st_dev, os.stat(path).st_ino)
                if key in seen or os.path.getsize(path) > (1 << 20):
                    continue
                seen.add(key)
                note("file:" + path, open(path, "rb").read())
            except OSError:
                continue
"""

_PROC_PART = r"""
for pid in pids:
    for part in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{part}", "rb").read()
        except OSError as e:
            print("DENIED", part, pid, comm(pid), e.errno)
            continue
        note(f"{part}:{comm(pid)}", data)
        if part == "environ":
            for item in data.split(b"\0"):
                if item:
                    print("ENV", pid, comm(pid), item.decode(errors="replace"))
"""

_MEMORY_PART = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for pid in pids:
    cmdline = open(f"/proc/{pid}/cmdline", "rb").read() if os.path.exists(f"/proc/{pid}") else b""
    who = "guest" if b"osworld_gym.guest" in cmdline else comm(pid)
    total = 0
    try:
        regions = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in regions:
                span, perms = line.split()[:2]
                low, high = (int(x, 16) for x in span.split("-"))
                if "r" not in perms or high - low > (64 << 20):
                    continue
                try:
                    mem.seek(low)
                    data = mem.read(high - low)
                except (OSError, ValueError, OverflowError):
                    continue
                total += len(data)
                note(f"mem:{who}", data)
        print("MEMORY", pid, who, total)
    except OSError as e:
        print("NOMEMORY", pid, who, e.errno)
    # PTRACE_SEIZE does not stop the process; the attach ends when this program exits.
    if libc.ptrace(0x4206, pid, None, None) == 0:
        print("PTRACE", pid, who)
"""


def _harvest(
    name: str, *parts: str, sudo: bool = False
) -> collections.abc.Callable[[Context], str]:
    """A script that looks for token-like strings (and environments) in ``parts``' places, as
    the desktop's user or, with ``sudo``, as whoever the desktop's ``sudo`` makes it."""
    runner = "printf '%s\\n' \"$SUDO_PASSWORD\" | sudo -S" if sudo else ""

    def script(ctx: Context) -> str:
        text = _HARVEST.replace("NAME", name).replace("PARTS", "\n".join(parts))
        return f"SUDO_PASSWORD='{ctx.sudo_password}'\n" + text.replace("RUNNER", runner)

    return script


def _token_found(ev: Evidence, case: str) -> list[str]:
    token = ev.context.token
    if not token:
        return []
    return [line.split()[0] for line in ev.lines(case, "CANDIDATE") if line.endswith(" " + token)]


def _token_files_judge(ev: Evidence) -> tuple[str, str]:
    if not ev.context.token:
        return SKIPPED, "the desktop has no token"
    where = _token_found(ev, "token-files")
    n = len(ev.lines("token-files", "CANDIDATE"))
    return _leak([f"token in {w}" for w in where], f"token in no readable file ({n} candidates)")


def _token_proc_judge(ev: Evidence) -> tuple[str, str]:
    where = [f"token in {w}" for w in _token_found(ev, "token-proc")]
    denied = len(ev.lines("token-proc", "DENIED"))
    return _leak(where, f"token in no environment or command line ({denied} unreadable)")


def _guest_memory_found(ev: Evidence, case: str) -> list[str]:
    found = [f"token in {w}" for w in _token_found(ev, case)]
    for line in ev.lines(case, "MEMORY"):
        pid, who, total = line.split()
        if who == "guest" and int(total) > 0:
            found.append(f"read {total} bytes of the guest's memory (pid {pid})")
    traced = [line for line in ev.lines(case, "PTRACE") if line.split()[1] == "guest"]
    return found + [f"ptrace attached to the guest ({line})" for line in traced]


def _memory_judge(ev: Evidence) -> tuple[str, str]:
    found = _guest_memory_found(ev, "guest-memory")
    return _leak(found, "the guest's memory is unreadable and it cannot be traced")


def _sudo_harvest_judge(ev: Evidence) -> tuple[str, str]:
    found = _guest_memory_found(ev, "sudo-harvest")
    if ev.context.canary in ev.outputs.get("sudo-harvest", ""):
        found.append(f"the driver's {CANARY_VARIABLE} is visible")
    return _leak(found, "as sudo: no token, no guest memory, no trace, no driver variable")


def _driver_env_judge(ev: Evidence) -> tuple[str, str]:
    seen = ev.lines("token-proc", "ENV")
    text = "\n".join(seen) + "\n" + ev.after.get("shell_env", "") + ev.during.get("shell_env", "")
    found = []
    if ev.context.canary in text:
        found.append(f"the driver's {CANARY_VARIABLE} is visible")
    for name, value in ev.context.host_env.items():
        if name in ALLOWED_ENV or name.startswith("LC_") or len(value) < 12:
            continue
        if f"={value}" in text:
            found.append(f"the driver's {name} is visible")
    return _leak(found, f"no driver variable beyond the allowlist among {len(seen)} seen")


# Doors out: the host's services, other X servers, host daemons, the kernel, privileges.
def _host_services_script(ctx: Context) -> str:
    targets = json.dumps([list(t) for t in ctx.host_ports])
    return rf"""
/usr/bin/python3 - <<'PYEOF' 2>&1
import json, socket
for host, port in json.loads('{targets}'):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.settimeout(3)
            print("REPLY", host, port, s.recv(64))
    except OSError as e:
        print("REFUSED", host, port, e)
PYEOF
"""


def _host_services_judge(ev: Evidence) -> tuple[str, str]:
    found = [line for line in ev.lines("host-services", "REPLY") if BANNER.decode() in line]
    tried = len(ev.context.host_ports)
    return _leak(found, f"none of the host's {tried} service addresses answered")


def _other_display_script(ctx: Context) -> str:
    return r"""
cookie=$(/usr/bin/xauth list "$DISPLAY" 2>/dev/null | /usr/bin/awk '{print $3}' | /usr/bin/head -1)
for n in $(/usr/bin/seq 0 99); do
  d=":$n"
  [ "$d" = "$DISPLAY" ] && continue
  /usr/bin/timeout 3 /usr/bin/xdpyinfo -display "$d" >/dev/null 2>&1 && echo "OPENED $d"
  if [ -n "$cookie" ]; then
    XAUTHORITY="$HOME/adv/any.auth" /usr/bin/xauth add "$d" . "$cookie" 2>/dev/null
    XAUTHORITY="$HOME/adv/any.auth" /usr/bin/timeout 3 /usr/bin/xdpyinfo -display "$d" \
      >/dev/null 2>&1 && echo "OPENED $d with this desktop's cookie"
  fi
done
/bin/ls -A /tmp/.X11-unix 2>&1 | /bin/sed 's/^/SOCKET /'
"""


def _other_display_judge(ev: Evidence) -> tuple[str, str]:
    opened = ev.lines("other-display", "OPENED")
    other = ev.context.other_display
    return _leak(opened, f"no other display opened (another desktop was at {other})")


def _host_daemons_script(ctx: Context) -> str:
    return r"""
/usr/bin/python3 - <<'PYEOF' 2>&1
import os, socket, stat
own = ("/run/user/1000", "/tmp", "/var/tmp", "/home/user", "/dev/shm", "/run/osworld-gym")
paths = {"/run/docker.sock", "/var/run/docker.sock", "/run/dbus/system_bus_socket",
         "/run/systemd/private", "/run/containerd/containerd.sock", "/run/systemd/journal/socket"}
for top in ("/run", "/var", "/etc", "/opt", "/srv", "/mnt", "/media", "/root"):
    for folder, dirs, files in os.walk(top, onerror=lambda e: None):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    paths.add(path)
            except OSError:
                pass
for path in sorted(paths):
    if path.startswith(own) or not os.path.exists(path):
        continue
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(path)
        print("CONNECTED", path)
    except OSError as e:
        print("REFUSED", path, e)
    finally:
        s.close()
PYEOF
"""


def _host_daemons_judge(ev: Evidence) -> tuple[str, str]:
    refused = len(ev.lines("host-daemons", "REFUSED"))
    return _leak(ev.lines("host-daemons", "CONNECTED"),
                 f"no host daemon's socket visible or connectable ({refused} refused)")  # fmt: skip


def _kernel_script(ctx: Context) -> str:
    return (
        f"SUDO_PASSWORD='{ctx.sudo_password}'\n"
        + r"""
knobs="kernel/hostname kernel/domainname kernel/core_pattern kernel/modprobe vm/overcommit_memory"
for k in $knobs; do
  f=/proc/sys/$k
  v=$(/bin/cat "$f" 2>/dev/null) || { echo "UNREADABLE $f"; continue; }
  # The value it holds: a write that succeeds changes nothing, and shows it was allowed.
  if ( printf '%s\n' "$v" > "$f" ) 2>/dev/null; then echo "WROTE $f"; else echo "DENIED $f"; fi
  if /usr/bin/unshare -r /bin/sh -c "printf '%s\n' \"\$1\" > $f" sh "$v" 2>/dev/null; then
    echo "WROTE $f as root of a user namespace of its own"
  fi
  if printf '%s\n' "$SUDO_PASSWORD" | sudo -S /bin/sh -c "printf '%s\n' \"\$1\" > $f" sh "$v" \
      2>/dev/null; then
    echo "WROTE $f through sudo"
  fi
done
/usr/bin/awk '$2 == "/proc/sys" {print "MOUNT", $0}' /proc/self/mounts
"""
    )


def _kernel_judge(ev: Evidence) -> tuple[str, str]:
    denied = len(ev.lines("kernel-knobs", "DENIED"))
    return _leak(ev.lines("kernel-knobs", "WROTE"), f"/proc/sys read-only ({denied} writes denied)")


def _identity_script(ctx: Context) -> str:
    return (
        f"SUDO_PASSWORD='{ctx.sudo_password}'\n"
        + r"""
echo "ID $(/usr/bin/id -u) $(/usr/bin/id -g)"
/bin/sed 's/^/UIDMAP /' /proc/self/uid_map
/bin/sed 's/^/GIDMAP /' /proc/self/gid_map
/bin/grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status | /bin/sed 's/^/STATUS /'
/usr/bin/sudo -n /usr/bin/id -u 2>/dev/null | /bin/sed 's/^/REALSUDO /'
printf '%s\n' "$SUDO_PASSWORD" | sudo -S /usr/bin/id -u 2>/dev/null | /bin/sed 's/^/SUDOID /'
# su asks on the controlling terminal: without one (setsid) it cannot wait for a password.
/usr/bin/setsid -w /bin/su -c 'id -u' root </dev/null 2>/dev/null | /bin/sed 's/^/SU /'
"""
    )


def _host_uid(maps: list[str], inside: int) -> int | None:
    """The host uid that ``inside`` stands for under ``uid_map`` lines (None: unmapped)."""
    for line in maps:
        start, outside, count = (int(x) for x in line.split())
        if start <= inside < start + count:
            return outside + inside - start
    return None


def _identity_judge(ev: Evidence) -> tuple[str, str]:
    found = []
    maps = ev.lines("identity", "UIDMAP")
    ids = ev.lines("identity", "ID")
    uid = int(ids[0].split()[0]) if ids else None
    if uid != 1000:
        found.append(f"id -u is {uid}")
    if uid is not None and _host_uid(maps, uid) == 0:
        found.append(f"uid {uid} is host root (uid_map {maps})")
    for line in ev.lines("identity", "STATUS"):
        name, value = line.split(":", 1)
        if name.startswith("Cap") and int(value.strip(), 16):
            found.append(f"capabilities {line}")
    gained = [int(u) for key in ("REALSUDO", "SUDOID", "SU") for u in ev.lines("identity", key)
              if u.strip().isdigit()]  # fmt: skip
    for got in gained:
        if got == 0 and _host_uid(maps, 0) == 0:
            found.append("sudo (OSWorld's password) makes the desktop uid 0 of the host's user "
                         f"namespace (uid_map {maps})")  # fmt: skip
    return _leak(sorted(set(found)), f"uid {uid}, uid_map {maps}, no capabilities, sudo {gained}")


def _guest_api_script(ctx: Context) -> str:
    return r"""
/usr/bin/python3 - <<'PYEOF' 2>&1
import http.client, json
ports = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        for line in open(table).read().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # listening
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    except OSError:
        pass
for port in sorted(ports):
    for method, path, body in (("GET", "/health", None),
                               ("POST", "/execute", {"command": "id -u", "shell": True})):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request(method, path, body=json.dumps(body) if body else None,
                         headers={"Content-Type": "application/json"})
            status = conn.getresponse().status
            print("ANSWER", port, method, path, status)
        except Exception as e:
            print("NOANSWER", port, path, type(e).__name__)
PYEOF
"""


def _guest_api_judge(ev: Evidence) -> tuple[str, str]:
    answers = ev.lines("guest-api", "ANSWER")
    found = [f"port {a}" for a in answers if "/execute" in a and a.endswith(" 200")]
    return _leak(found, f"no program-running route answered without the token: {answers}")


# Voiding: the agent makes its own episode end as an infrastructure fault.
def _screen_size_script(ctx: Context) -> str:
    return "/usr/bin/xrandr --fb 800x600 2>&1 && echo OK"


def _kill_script(pattern: str) -> collections.abc.Callable[[Context], str]:
    """Kill -9 the processes whose command line holds ``pattern`` once ``~/adv/go`` exists (the
    agent's next typed line), so the outputs are read before the guest may be gone."""

    def script(ctx: Context) -> str:
        return rf"""
targets=$(/bin/grep -l -- '{pattern}' /proc/[0-9]*/cmdline 2>/dev/null | /usr/bin/cut -d/ -f3 |
  /usr/bin/tr '\n' ' ')
echo "TARGETS $targets"
/usr/bin/setsid /bin/sh -c "while [ ! -e $HOME/adv/go ]; do /bin/sleep 0.05; done; \
  for t in $targets; do kill -9 \$t 2>/dev/null && echo KILLED \$t; done > $HOME/adv/killed" \
  >/dev/null 2>&1 < /dev/null &
"""

    return script


def _void_judge(case: str) -> Judge:
    def judge(ev: Evidence) -> tuple[str, str]:
        if ev.attack_fault:
            return VOIDED, f"the attack episode ended as an infrastructure fault: {ev.attack_fault}"
        tried = ev.outputs.get(case, "").strip().replace("\n", " ")
        return BLOCKED, f"the episode was scored normally ({ev.attack_score}); {tried[:300]}"

    return judge


def _cases() -> dict[str, Case]:
    cases = [
        Case(
            "planted-cat",
            "`cat`, `sh`, `python3` printing the answer in every PATH folder, ~/.local/bin, ~/bin",
            _planted_cat_script,
            _planted_cat_judge,
        ),
        Case(
            "same-episode-forgery",
            "DONE with the planted `cat` in place (same episode)",
            None,
            _same_episode_judge,
        ),
        Case(
            "wrappers",
            "the project's command wrappers changed, a new one added",
            _wrappers_script,
            _wrappers_judge,
        ),
        Case(
            "planted-files",
            "files in /tmp, /var/tmp, /dev/shm (every namespace), "
            "/run/user/1000, /run/osworld-gym, ~/.config/autostart",
            _planted_files_script,
            _planted_files_judge,
        ),
        Case(
            "shell-startup",
            "~/.bashrc, ~/.profile and friends changed",
            _shell_startup_script,
            _shell_startup_judge,
        ),
        Case(
            "plant-everywhere",
            "a file in every writable folder",
            _everywhere_script,
            _everywhere_judge,
        ),
        Case(
            "disk-filler",
            "64 MB files in every writable temp folder",
            _filler_script,
            _filler_judge,
        ),
        Case(
            "frame-files",
            "the guest's shared screenshot files overwritten",
            _frames_script,
            _frames_judge,
        ),
        Case(
            "background-processes",
            "nohup, setsid, double fork, env -i, renamed, stopped, respawning, new PID namespace",
            _processes_script,
            _processes_judge,
        ),
        *[
            Case(name, tried, _x_script(command), _x_judge(part, needle))
            for name, tried, part, needle, command in X_CASES
        ],
        *[
            Case(name, tried, _x_script(command), _typing_judge(name, part))
            for name, tried, part, command in KEYBOARD_CASES
        ],
        Case(
            "window-manager",
            "openbox reconfigured (Ctrl+Alt+T rebound), 3 desktops",
            _wm_script,
            _wm_judge,
        ),
        Case(
            "answer-key",
            "~/.expected, and a reference file saved over the document",
            _answer_key_script,
            _answer_key_judge,
        ),
        Case(
            "suite-files",
            "the bundled suites' task files and references",
            _suite_files_script,
            _suite_files_judge,
        ),
        Case(
            "task-files",
            "task files of other suites on the host (OSWorld's test_all.json)",
            None,
            _task_files_judge,
        ),
        Case(
            "oracle-scripts",
            "the scripted solutions of the bundled tasks",
            _oracles_script,
            _oracles_judge,
        ),
        Case(
            "host-secrets",
            "/etc/shadow, host keys, /root, /home",
            _host_secrets_script,
            _host_secrets_judge,
        ),
        Case(
            "driver-folders",
            "the driver's working directory, script folder, home",
            _driver_folders_script,
            _driver_folders_judge,
            applies=lambda ctx: ctx.provider == "local",
        ),
        Case(
            "token-files",
            "the guest's token in any readable file",
            _harvest("token-files", _FILES_PART),
            _token_files_judge,
            applies=lambda ctx: ctx.token is not None,
        ),
        Case(
            "token-proc",
            "the token in /proc/*/environ and /proc/*/cmdline",
            _harvest("token-proc", _PROC_PART),
            _token_proc_judge,
            applies=lambda ctx: ctx.token is not None,
        ),
        Case(
            "guest-memory",
            "the guest's memory (/proc/<pid>/mem) and ptrace",
            _harvest("guest-memory", _MEMORY_PART),
            _memory_judge,
        ),
        Case(
            "sudo-harvest",
            "through the desktop's sudo (OSWorld's password): the token in "
            "files, environments and memory, the guest traced",
            _harvest("sudo-harvest", _FILES_PART, _PROC_PART, _MEMORY_PART, sudo=True),
            _sudo_harvest_judge,
        ),
        Case(
            "driver-env",
            "the driver's environment (a canary secret, API keys)",
            None,
            _driver_env_judge,
        ),
        Case(
            "host-services",
            "TCP services on the host's 127.0.0.1, ::1 and own addresses",
            _host_services_script,
            _host_services_judge,
        ),
        Case(
            "other-display",
            "another desktop's X server (xdpyinfo -display :N)",
            _other_display_script,
            _other_display_judge,
        ),
        Case(
            "host-daemons",
            "the host's Docker, D-Bus and systemd sockets",
            _host_daemons_script,
            _host_daemons_judge,
        ),
        Case(
            "kernel-knobs",
            "/proc/sys/kernel/* written (with their own values)",
            _kernel_script,
            _kernel_judge,
        ),
        Case(
            "identity",
            "host root? id -u, uid_map, capabilities, real sudo, su",
            _identity_script,
            _identity_judge,
        ),
        Case(
            "guest-api",
            "the guest's HTTP routes without the token",
            _guest_api_script,
            _guest_api_judge,
        ),
        Case(
            "screen-size",
            "the screen resized (xrandr --fb 800x600)",
            _screen_size_script,
            _void_judge("screen-size"),
        ),
        Case(
            "kill-guest",
            "the guest server killed (kill -9)",
            _kill_script("osworld_gym.guest"),
            _void_judge("kill-guest"),
        ),
        Case(
            "kill-window-manager",
            "the window manager killed (kill -9)",
            _kill_script("openbox"),
            _void_judge("kill-window-manager"),
        ),
    ]
    return {case.name: case for case in cases}


CASES = _cases()


# --- groups and their next episodes ------------------------------------------------------------


def done_at_once(agent: Agent, ev_next: dict[str, Any]) -> None:
    """The next episode of ``CHECK_TASK`` ends with DONE at once: it must score 0.0."""
    ev_next["done_at_once_score"] = agent.finish()


def type_banana(agent: Agent, ev_next: dict[str, Any]) -> None:
    """Type ``banana`` into the task's answer box; what arrived in ``~/answer.txt``."""
    agent.act(TypeText(text="banana\n"))
    answer = agent.wait_for("~/answer.txt", lambda: agent.read(f"{HOME}/answer.txt"))
    ev_next["typed"] = answer.decode(errors="replace")
    ev_next["done_at_once_score"] = agent.finish()


def press_terminal_key(agent: Agent, ev_next: dict[str, Any]) -> None:
    """Ctrl+Alt+T must open a terminal, and run nothing an earlier episode bound to it."""
    agent.open_terminal()
    ev_next["rebound"] = agent.existing([f"/tmp/{PLANT}-rebound"])
    agent.finish()


@dataclass(frozen=True)
class Group:
    """Cases played in one attack episode, and what the next episode plays.

    Attributes:
        name: The group's name.
        cases: Case names, in the order their scripts run.
        task_id: The attack episode's task.
        next_episode: Played after the reset (on ``CHECK_TASK``), or None.
        trigger: A line typed after the scripts' results are read, before DONE (to set off
            what would stop them being read).
        slow: Left out of the default test suite (heavy scans).
    """

    name: str
    cases: tuple[str, ...]
    task_id: str = CHECK_TASK
    next_episode: collections.abc.Callable[[Agent, dict[str, Any]], None] | None = None
    trigger: str | None = None
    slow: bool = False


GROUPS = (
    Group("forged-reward", ("planted-cat", "same-episode-forgery", "wrappers"),
          next_episode=done_at_once),
    Group("files", ("planted-files", "shell-startup", "disk-filler", "frame-files")),
    Group("everywhere", ("plant-everywhere",), slow=True),
    Group("processes", ("background-processes",)),
    Group("x-server", (*[c[0] for c in X_CASES], *[c[0] for c in KEYBOARD_CASES]),
          next_episode=type_banana),
    Group("window-manager", ("window-manager",), next_episode=press_terminal_key),
    Group("answers", ("answer-key", "suite-files", "task-files", "oracle-scripts"),
          task_id=ANSWER_KEY_TASK),
    Group("secrets", ("host-secrets", "driver-folders", "token-proc", "driver-env")),
    Group("memory", ("token-files", "guest-memory", "sudo-harvest"), slow=True),
    Group("doors", ("host-services", "other-display", "host-daemons", "kernel-knobs",
                    "identity", "guest-api")),
    # One each: the first fault ends the episode (and the env relaunches the desktop).
    Group("screen-size", ("screen-size",)),
    Group("kill-guest", ("kill-guest",), trigger=f"touch {EVIDENCE}/go"),
    Group("kill-window-manager", ("kill-window-manager",), trigger=f"touch {EVIDENCE}/go"),
)  # fmt: skip
GROUP_OF = {case: group.name for group in GROUPS for case in group.cases}


# --- running -------------------------------------------------------------------------------------


Box = tuple[int, int, int, int]  # left, top, right, bottom (exclusive)


@dataclass
class Baseline:
    """A freshly launched desktop as ``CHECK_TASK`` shows it: record and first observation.

    ``masked``: boxes of the screen that differ between any two fresh desktops (GNOME's clock).
    """

    record: dict[str, Any]
    screenshot: np.ndarray
    masked: tuple[Box, ...] = ()


def clock_box(env: Any) -> Box | None:
    """Where GNOME's top bar shows the clock ("Dec 6 13:50", centred), on a GNOME desktop."""
    config = env.unwrapped.provider.config
    if getattr(config, "session", None) != "gnome":
        return None
    width = config.screen_size[0]
    return (width // 2 - 90, 0, width // 2 + 90, 28)


def fresh_baseline(agent: Agent) -> Baseline:
    """Start ``CHECK_TASK`` and record the desktop (call on a freshly launched desktop)."""
    obs = agent.start(CHECK_TASK)
    clock = clock_box(agent.env)
    masked = () if clock is None else (clock,)
    return Baseline(record(agent.client), np.array(obs["screenshot"]), masked)


def observation_difference(
    fresh: np.ndarray, now: np.ndarray, masked: tuple[Box, ...] = ()
) -> str | None:
    """How a first observation differs from the fresh desktop's (None: pixel for pixel equal,
    but for the ``masked`` boxes)."""
    if fresh.shape != now.shape:
        return f"has shape {now.shape}, not {fresh.shape}"
    changed = np.any(fresh != now, axis=-1)
    for left, top, right, bottom in masked:
        changed[top:bottom, left:right] = False
    if not changed.any():
        return None
    ys, xs = np.nonzero(changed)
    box = (int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max()))
    return f"differs in {int(changed.sum())} pixels (box {box})"


@dataclass
class GroupResult:
    """A group's findings, with the group-wide checks (state record, first observation)."""

    group: str
    findings: dict[str, Finding] = field(default_factory=dict)
    state: Finding | None = None
    observation: Finding | None = None
    seconds: float = 0.0
    evidence: Evidence | None = None
    state_diff: dict[str, str] = field(default_factory=dict)
    first_observation: np.ndarray | None = None


@dataclass
class _Attack:
    """What the attack episode left: the scripts' outputs, the record before DONE, the score."""

    outputs: dict[str, str]
    during: dict[str, Any]
    score: float
    fault: str | None


def _play_attack(agent: Agent, group: Group, cases: list[Case], ctx: Context) -> _Attack:
    """The attack episode: every script typed, then run together, then DONE."""
    agent.open_terminal()
    scripted = [case for case in cases if case.script is not None]
    for case in scripted:
        assert case.script is not None
        agent.type_script(case.name, case.script(ctx))
    outputs = agent.run_scripts([case.name for case in scripted])
    during = record(agent.client)
    if group.trigger is not None:
        agent.act(TypeText(text=group.trigger + "\n"))
    score = agent.finish()
    return _Attack(outputs, during, score, agent.infra_error)


def _still_planted(agent: Agent, outputs: dict[str, str]) -> list[str]:
    """What the attack planted and is still there: every path a script reported planting (not
    those through /proc, which name namespaces of processes now gone), and any file or folder
    named ``PLANT``* anywhere."""
    reported = {
        line.split(" ", 1)[1]
        for text in outputs.values()
        for line in text.splitlines()
        if line.startswith("PLANTED /") and not line.startswith("PLANTED /proc/")
    }
    return sorted(set(agent.existing(sorted(reported))) | set(agent.planted_anywhere()))


def _group_checks(result: GroupResult, baseline: Baseline, after: dict[str, Any]) -> None:
    """The group-wide findings: the record and the first observation after the reset."""
    diff = differences(baseline.record, after)
    result.state_diff = diff
    result.state = Finding(
        f"state after {result.group}",
        "the desktop's record after the reset equals a fresh desktop's",
        SURVIVED if diff else UNDONE,
        "; ".join(f"{k}: {v}" for k, v in diff.items())[:3000] or "equal",
    )
    assert result.first_observation is not None
    differs = observation_difference(baseline.screenshot, result.first_observation, baseline.masked)
    result.observation = Finding(
        f"observation after {result.group}",
        "the first observation after the reset equals a fresh desktop's",
        SURVIVED if differs else UNDONE,
        differs or "pixel for pixel equal",
    )


def run_group(agent: Agent, group: Group, ctx: Context, baseline: Baseline) -> GroupResult:
    """Play ``group``'s attack episode, reset to ``CHECK_TASK``, check; its findings."""
    started = time.monotonic()
    agent.start(group.task_id)
    # A voided episode makes the env launch a new desktop, with a token of its own.
    ctx.token = agent.env.unwrapped.desktop.token
    cases = [CASES[name] for name in group.cases]
    active = [case for case in cases if case.applies(ctx)]
    attack = _play_attack(agent, group, active, ctx)
    obs = agent.start(CHECK_TASK)
    after = record(agent.client)
    planted = _still_planted(agent, attack.outputs)
    first = np.array(obs["screenshot"])
    next_episode: dict[str, Any] = {
        "observation_differs": observation_difference(baseline.screenshot, first, baseline.masked)
    }
    if group.next_episode is not None:
        group.next_episode(agent, next_episode)
    evidence = Evidence(
        attack.outputs,
        attack.score,
        attack.fault,
        attack.during,
        baseline.record,
        after,
        planted,
        next_episode,
        ctx,
    )
    result = GroupResult(group.name, evidence=evidence, first_observation=first)
    for case in cases:
        if case in active:
            outcome, text = case.judge(evidence)
        else:
            outcome, text = SKIPPED, f"does not apply on {ctx.provider}"
        host_dependent = text.startswith(HOST_COPIES)
        result.findings[case.name] = Finding(case.name, case.tried, outcome, text, host_dependent)
    _group_checks(result, baseline, after)
    result.seconds = time.monotonic() - started
    return result


def require_sandboxed(env: Any) -> None:
    """Refuse to attack a desktop that is the host itself (``local`` without a sandbox)."""
    config = getattr(env.unwrapped.provider, "config", None)
    if getattr(config, "sandbox", True) is False:
        raise RuntimeError("the adversarial battery never runs on a desktop without a sandbox")


@contextlib.contextmanager
def other_local_desktop() -> collections.abc.Iterator[Any]:
    """Another ``local`` desktop on this host, whose X display the attacks try to open."""
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    with LocalProvider(LocalProviderConfig(screen_size=(640, 480))).launch() as desktop:
        yield desktop


class Battery:
    """An env under attack: runs each group once, when first asked for its results.

    Args:
        agent: The agent on the env.
        ctx: What the host knows (``Context``).
        baseline: The freshly launched desktop's record and first observation.
    """

    def __init__(self, agent: Agent, ctx: Context, baseline: Baseline) -> None:
        self.agent = agent
        self.ctx = ctx
        self.baseline = baseline
        self._results: dict[str, GroupResult] = {}

    def result(self, group: str) -> GroupResult:
        """The results of the group named ``group`` (run now unless run already)."""
        if group not in self._results:
            chosen = next(g for g in GROUPS if g.name == group)
            self._results[group] = run_group(self.agent, chosen, self.ctx, self.baseline)
        return self._results[group]

    def finding(self, case: str) -> Finding:
        """The finding of one case (its group runs first if it has not)."""
        return self.result(GROUP_OF[case]).findings[case]


@contextlib.contextmanager
def attack(
    make_env: collections.abc.Callable[[], Any], provider: str
) -> collections.abc.Iterator[Battery]:
    """Set the stage (a secret in the driver's environment and home, services on the host,
    another desktop), start the env from ``make_env`` and its first desktop; yield the battery.
    """
    with (
        canary() as driver_canary,
        secret_file() as (secret_path, secret),
        HostServices() as services,
        other_local_desktop() as other,
        make_env() as env,
    ):
        require_sandboxed(env)
        agent = Agent(env)
        baseline = fresh_baseline(agent)
        ctx = Context(
            token=env.unwrapped.desktop.token,
            canary=driver_canary,
            host_env=dict(os.environ),
            host_ports=tuple(services.targets),
            other_display=other.display,
            driver_folders=driver_folders(),
            python_prefixes=python_prefixes(),
            provider=provider,
            secret_file=secret_path,
            secret=secret,
            suite_folders=suite_folders(),
        )
        yield Battery(agent, ctx, baseline)
