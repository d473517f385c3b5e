"""Tests of the AT-SPI backend of /accessibility and /terminal (osworld_gym.guest.a11y).

The desktop tests start their own X stack (Xvfb, a private session bus, the AT-SPI bus launcher,
openbox, mousepad) and walk it for real with Debian's /usr/bin/python3. Everything started here is
killed by PID at the end, including the processes the buses activated.
"""

from __future__ import annotations

import importlib.util
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import types
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixture_marks import needs

from osworld_gym.guest import a11y

NS_BASE = "https://accessibility.ubuntu.example.org/ns/"
NS = {
    "st": NS_BASE + "state",
    "attr": NS_BASE + "attributes",
    "cp": NS_BASE + "component",
    "doc": NS_BASE + "document",
    "docattr": NS_BASE + "document/attributes",
    "txt": NS_BASE + "text",
    "val": NS_BASE + "value",
    "act": NS_BASE + "action",
}
Q = {prefix: "{" + uri + "}" for prefix, uri in NS.items()}  # Clark-notation prefixes
ST, CP, VAL = Q["st"], Q["cp"], Q["val"]
SCREEN_W, SCREEN_H = 1280, 800
TYPED = "Hello a11y <walker> & co 42"
LAUNCHER = "/usr/libexec/at-spi-bus-launcher"


def _load_walker() -> types.ModuleType:
    """The walker script as a module (it imports gi lazily, so any Python can load it)."""
    spec = importlib.util.spec_from_file_location("a11y_walker_under_test", a11y.WALKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


walker = _load_walker()


def _system_gi_problem() -> str | None:
    if not os.path.exists(a11y.SYSTEM_PYTHON):
        return f"{a11y.SYSTEM_PYTHON} is missing"
    probe = subprocess.run(
        [
            a11y.SYSTEM_PYTHON,
            "-I",
            "-c",
            "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return (
            f"{a11y.SYSTEM_PYTHON} cannot import gi.repository.Atspi (apt-get install "
            f"python3-pyatspi): {probe.stderr.strip().splitlines()[-1:]}"
        )
    return None


def _wait_for(predicate: Callable[[], Any], timeout: float, what: str, step: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = predicate()
        except a11y.AccessibilityUnavailable as exc:
            last_error, result = exc, None
        if result:
            return result
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} ({last_error=})")


# --------------------------------------------------------------------------------------------
# Process bookkeeping: everything is killed by PID, descendants included.
# --------------------------------------------------------------------------------------------


def _ppid_map() -> dict[int, int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        parents[int(entry)] = int(fields[1])
    return parents


def _descendants(pids: list[int]) -> list[int]:
    parents = _ppid_map()
    found: list[int] = []
    frontier = set(pids)
    while frontier:
        children = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in found}
        found.extend(sorted(children))
        frontier = children
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def _kill(pids: list[int], popens: dict[int, subprocess.Popen[bytes]]) -> None:
    """SIGTERM ``pids`` (in order), wait up to 3 s, then SIGKILL what is left; reap our children."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 3
    for pid in pids:
        while _alive(pid) and time.monotonic() < deadline:
            if pid in popens and popens[pid].poll() is not None:
                break
            time.sleep(0.05)
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if pid in popens:
            try:
                popens[pid].wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


class A11yDesktop:
    """An Xvfb display with a private session bus, the AT-SPI bus, openbox and apps."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.popens: dict[int, subprocess.Popen[bytes]] = {}
        self.daemons: list[int] = []  # forked, not our children (the session dbus-daemon)
        self.display = ""
        self.env: dict[str, str] = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "GSETTINGS_BACKEND": "memory",
        }

    def spawn(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{Path(argv[0]).name}.log", "ab")
        try:
            proc = subprocess.Popen(
                argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, **kwargs
            )
        finally:
            log.close()
        self.popens[proc.pid] = proc
        return proc

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            self.spawn(
                [
                    "Xvfb",
                    "-displayfd",
                    str(write_fd),
                    "-screen",
                    "0",
                    f"{SCREEN_W}x{SCREEN_H}x24",
                    "-nolisten",
                    "tcp",
                ],
                pass_fds=(write_fd,),
            )
            os.close(write_fd)
            write_fd = -1
            data = b""
            deadline = time.monotonic() + 15
            while not data.endswith(b"\n") and time.monotonic() < deadline:
                ready, _, _ = select.select([read_fd], [], [], 0.5)
                if ready:
                    chunk = os.read(read_fd, 64)
                    if not chunk:
                        break
                    data += chunk
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        assert data.strip().isdigit(), f"Xvfb reported no display number: {data!r}"
        self.display = f":{int(data)}"
        self.env["DISPLAY"] = self.display

        out = subprocess.run(
            ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=True,
            text=True,
        ).stdout.split("\n")
        self.daemons.append(int(out[1]))
        self.env["DBUS_SESSION_BUS_ADDRESS"] = out[0].strip()

        self.spawn([LAUNCHER, "--launch-immediately"])
        bus_socket = self.home / ".cache" / "at-spi" / f"bus_{self.display[1:]}"
        deadline = time.monotonic() + 5
        while not bus_socket.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.spawn(["openbox"])

    def stop(self) -> None:
        ours = list(self.popens) + self.daemons
        # Apps first, then what the buses activated, then the buses and the X server.
        everything = _descendants(ours)
        order = [p for p in everything if p not in ours] + ours[::-1]
        _kill(order, self.popens)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
@needs("desktop")
def a11y_desktop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A11yDesktop]:
    """A display running mousepad with TYPED typed into it."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb)")
    problem = _system_gi_problem()
    if problem:
        pytest.skip(problem)
    desktop = A11yDesktop(tmp_path_factory.mktemp("a11y"))
    try:
        desktop.start()
        desktop.spawn(["mousepad"])

        def mousepad_text() -> ET.Element | None:
            root = ET.fromstring(a11y.accessibility_tree(desktop.display, desktop.env))
            for app in root.findall("application"):
                if app.get("name", "").lower() == "mousepad":
                    for text in app.iter("text"):
                        if text.get(ST + "showing") == "true":
                            return text
            return None

        _wait_for(lambda: mousepad_text() is not None, 30, "mousepad's text area in the a11y tree")
        if shutil.which("xdotool"):
            subprocess.run(
                [
                    "xdotool",
                    "search",
                    "--sync",
                    "--onlyvisible",
                    "--class",
                    "mousepad",
                    "windowactivate",
                    "--sync",
                ],
                env=desktop.env,
                timeout=15,
                check=True,
                capture_output=True,
            )
            subprocess.run(
                ["xdotool", "type", "--delay", "5", TYPED],
                env=desktop.env,
                timeout=30,
                check=True,
                capture_output=True,
            )
        else:  # no xdotool: type through AT-SPI's EditableText interface instead
            subprocess.run(
                [a11y.SYSTEM_PYTHON, "-I", "-c", _INSERT_TEXT_SCRIPT, TYPED],
                env=desktop.env,
                timeout=30,
                check=True,
                capture_output=True,
            )
        _wait_for(
            lambda: (t := mousepad_text()) is not None and TYPED in (t.text or ""),
            15,
            "the typed text in mousepad's text area",
        )
        yield desktop
    finally:
        desktop.stop()


_INSERT_TEXT_SCRIPT = """
import sys, gi
gi.require_version('Atspi', '2.0')
from gi.repository import Atspi
def find(acc):
    if acc.get_role() == Atspi.Role.TEXT:
        return acc
    for i in range(acc.get_child_count()):
        hit = find(acc.get_child_at_index(i))
        if hit is not None:
            return hit
desktop = Atspi.get_desktop(0)
for i in range(desktop.get_child_count()):
    app = desktop.get_child_at_index(i)
    if app.get_name().lower() == 'mousepad':
        Atspi.EditableText.insert_text(find(app), 0, sys.argv[1], len(sys.argv[1]))
"""


def _pair(value: str | None) -> tuple[int, int]:
    assert value is not None
    match = re.fullmatch(r"\((-?\d+), (-?\d+)\)", value)
    assert match, value
    return int(match.group(1)), int(match.group(2))


# --------------------------------------------------------------------------------------------
# Real desktop.
# --------------------------------------------------------------------------------------------


@pytest.mark.apps
def test_tree_shows_mousepad_with_typed_text(a11y_desktop: A11yDesktop) -> None:
    started = time.monotonic()
    xml = a11y.accessibility_tree(a11y_desktop.display, a11y_desktop.env)
    elapsed = time.monotonic() - started
    assert elapsed < 15
    assert xml.startswith("<desktop-frame ")
    for prefix, uri in NS.items():
        assert f'xmlns:{prefix}="{uri}"' in xml

    root = ET.fromstring(xml)
    assert root.tag == "desktop-frame"
    apps = [app for app in root if app.get("name", "").lower() == "mousepad"]
    assert len(apps) == 1 and apps[0].tag == "application"
    app = apps[0]
    frame = app.find("frame")
    assert frame is not None and frame.get(ST + "active") == "true"
    tags = {element.tag for element in app.iter()}
    assert {"menu-bar", "menu-item", "text"} <= tags
    assert not any(" " in tag for tag in tags)

    texts = [t for t in app.iter("text") if TYPED in (t.text or "")]
    assert len(texts) == 1
    text = texts[0]
    assert text.get(ST + "showing") == "true" and text.get(ST + "visible") == "true"
    assert text.get(ST + "multi_line") == "true"  # OSWorld's state spelling
    x, y = _pair(text.get(CP + "screencoord"))
    w, h = _pair(text.get(CP + "size"))
    assert 0 <= x < SCREEN_W and 0 <= y < SCREEN_H
    assert 0 < w and 0 < h and x + w <= SCREEN_W and y + h <= SCREEN_H

    # Only visible+showing nodes carry coordinates; every namespaced attribute is OSWorld's.
    for element in root.iter():
        showing = element.get(ST + "showing") == "true" and element.get(ST + "visible") == "true"
        if not showing:
            assert CP + "screencoord" not in element.attrib
        for key in element.attrib:
            if key.startswith("{"):
                assert key[1:].split("}")[0] in NS.values(), key
    # Actions of menu items come through (act:click_desc / act:click_kb).
    assert any(k.startswith(Q["act"]) for e in app.iter("menu-item") for k in e.attrib)


@pytest.mark.apps
def test_prune_and_lean_options(a11y_desktop: A11yDesktop) -> None:
    full = ET.fromstring(a11y.accessibility_tree(a11y_desktop.display, a11y_desktop.env))
    lean = ET.fromstring(
        a11y.accessibility_tree(a11y_desktop.display, a11y_desktop.env, prune=True, lean=True)
    )
    assert 0 < sum(1 for _ in lean.iter()) < sum(1 for _ in full.iter())
    assert any(TYPED in (t.text or "") for t in lean.iter("text"))
    for element in lean.iter():
        assert not any(k.startswith((Q["attr"], Q["act"])) for k in element.attrib)


@pytest.mark.apps
def test_terminal_text_is_none_without_a_terminal(a11y_desktop: A11yDesktop) -> None:
    assert a11y.terminal_text(a11y_desktop.display, a11y_desktop.env) is None


@pytest.mark.apps
def test_concurrent_calls_are_serialised(a11y_desktop: A11yDesktop) -> None:
    results: list[object] = []
    lock = threading.Lock()  # as the guest server holds one per display

    def call(i: int) -> None:
        try:
            if i % 2:
                results.append(
                    a11y.terminal_text(a11y_desktop.display, a11y_desktop.env, lock=lock)
                )
            else:
                results.append(
                    a11y.accessibility_tree(a11y_desktop.display, a11y_desktop.env, lock=lock)
                )
        except Exception as exc:  # noqa: BLE001 - collected and asserted on below
            results.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 4
    assert sum(1 for r in results if r is None) == 2
    assert (
        sum(
            1
            for r in results
            if isinstance(r, str)
            and TYPED.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in r
        )
        == 2
    )


@pytest.mark.apps
def test_terminal_text_of_a_focused_vte_terminal(a11y_desktop: A11yDesktop) -> None:
    terminal = shutil.which("lxterminal")
    if terminal is None or shutil.which("xdotool") is None:
        pytest.skip("needs lxterminal (a VTE terminal; xterm has no AT-SPI) and xdotool")
    proc = a11y_desktop.spawn([terminal])
    try:
        _wait_for(
            lambda: a11y.terminal_text(a11y_desktop.display, a11y_desktop.env) is not None,
            30,
            "a focused terminal",
        )
        subprocess.run(
            ["xdotool", "type", "--delay", "5", "echo term-$((6*7))\n"],
            env=a11y_desktop.env,
            timeout=30,
            check=True,
            capture_output=True,
        )
        text = _wait_for(
            lambda: (
                (t := a11y.terminal_text(a11y_desktop.display, a11y_desktop.env))
                and "term-42" in t
                and t
            ),
            15,
            "the command output in the terminal text",
        )
        assert text == text.rstrip()
    finally:
        _kill(_descendants([proc.pid])[::-1] + [proc.pid], a11y_desktop.popens)
        a11y_desktop.popens.pop(proc.pid, None)


# --------------------------------------------------------------------------------------------
# Failure modes: never a crash, never a hang, always AccessibilityUnavailable with a reason.
# --------------------------------------------------------------------------------------------


def test_no_display_and_no_bus_raises() -> None:
    for env in ({}, {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}):
        with pytest.raises(a11y.AccessibilityUnavailable, match="DBUS_SESSION_BUS_ADDRESS"):
            a11y.accessibility_tree("", env)
        with pytest.raises(a11y.AccessibilityUnavailable, match="DBUS_SESSION_BUS_ADDRESS"):
            a11y.terminal_text("", env)


def test_walker_refuses_to_start_without_a_bus() -> None:
    if not os.path.exists(a11y.SYSTEM_PYTHON):
        pytest.skip(f"{a11y.SYSTEM_PYTHON} is missing")
    dead = next(n for n in range(4242, 4342) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    for env in ({"PATH": "/usr/bin:/bin"}, {"PATH": "/usr/bin:/bin", "DISPLAY": f":{dead}"}):
        proc = subprocess.run(
            [a11y.SYSTEM_PYTHON, "-I", str(a11y.WALKER)],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == walker.EXIT_NO_BUS, proc
        assert proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "DBUS_SESSION_BUS_ADDRESS" in proc.stderr
    # Through the library, a display whose X server is gone gives a clear reason too.
    with pytest.raises(a11y.AccessibilityUnavailable, match="is not running"):
        a11y.accessibility_tree(f":{dead}", {"PATH": "/usr/bin:/bin"})


def _fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_hung_walker_is_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    fake = _fake_python(tmp_path, f'echo $$ > "{pid_file}"\nexec sleep 60')
    started = time.monotonic()
    with pytest.raises(a11y.AccessibilityUnavailable, match=r"walker timed out after 1 s"):
        a11y.accessibility_tree(":0", {"DISPLAY": ":0"}, timeout=1, python=fake)
    assert time.monotonic() - started < 8
    assert not _alive(int(pid_file.read_text()))


def test_walker_failures_become_accessibility_unavailable(tmp_path: Path) -> None:
    env = {"DISPLAY": ":0"}
    fake = _fake_python(tmp_path, 'echo "noise" >&2\necho "the real reason" >&2\nexit 1')
    with pytest.raises(a11y.AccessibilityUnavailable, match="exit 1.*the real reason"):
        a11y.accessibility_tree(":0", env, python=fake)
    fake = _fake_python(tmp_path, 'echo "Could not connect to the a11y bus" >&2\nkill -TRAP $$')
    with pytest.raises(a11y.AccessibilityUnavailable, match="SIGTRAP"):
        a11y.accessibility_tree(":0", env, python=fake)
    fake = _fake_python(tmp_path, "exit 0")
    with pytest.raises(a11y.AccessibilityUnavailable, match="no XML"):
        a11y.accessibility_tree(":0", env, python=fake)
    fake = _fake_python(tmp_path, f"exit {walker.EXIT_NO_TERMINAL}")
    assert a11y.terminal_text(":0", env, python=fake) is None
    fake = _fake_python(tmp_path, 'printf "line\\n  "')
    assert a11y.terminal_text(":0", env, python=fake) == "line\n  "
    with pytest.raises(a11y.AccessibilityUnavailable, match="apt-get install python3-pyatspi"):
        a11y.accessibility_tree(":0", env, python=str(tmp_path / "no-such-python"))


def test_interpreter_without_gi_gets_an_apt_hint() -> None:
    if importlib.util.find_spec("gi") is not None:
        pytest.skip("this Python can import gi")
    with pytest.raises(a11y.AccessibilityUnavailable, match="apt-get install python3-pyatspi"):
        a11y.accessibility_tree(
            "", {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"}, python=sys.executable
        )


# --------------------------------------------------------------------------------------------
# Pure helpers of the walker.
# --------------------------------------------------------------------------------------------


def test_names() -> None:
    assert walker.role_tag("push button") == "push-button"
    assert walker.role_tag(" table cell ") == "table-cell"
    assert walker.role_tag("") == "unknown" and walker.role_tag(None) == "unknown"
    assert walker.state_name("ATSPI_STATE_MULTI_LINE") == "multi_line"
    assert walker.state_name("STATE_IS_DEFAULT") == "is_default"
    assert walker.xml_name("xml-roles") == "xml-roles"
    assert walker.xml_name("has space/slash") == "has-space-slash"
    assert walker.xml_name("1st") == "_1st" and walker.xml_name("") == "_"
    assert walker.clean_text("a\ufffcb\ufffdc") == "abc"
    assert walker.parse_cell_name("A1") == (0, 0)
    assert walker.parse_cell_name("AB12") == (11, 27)
    assert walker.parse_cell_name("$C$3") == (2, 2)
    assert walker.parse_cell_name("Sheet1") is None and walker.parse_cell_name("A0") is None


def test_environment_problem() -> None:
    assert "neither DISPLAY nor" in walker.environment_problem({})
    assert walker.environment_problem({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"}) is None
    assert walker.environment_problem({"DISPLAY": "remote:0"}) is None
    dead = next(n for n in range(4242, 4342) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    assert "not running" in walker.environment_problem({"DISPLAY": f":{dead}.0"})


def test_serialize_round_trips_through_an_xml_parser() -> None:
    root = walker.Element("desktop-frame")
    app = walker.Element("application", {"name": 'app "one" <&>'})
    node = walker.Element(
        "push-button",
        {
            "name": "line1\nline2\ttab\x01ctl",
            "st:showing": "true",
            "attr:xml-roles": "a&b",
            "cp:screencoord": "(1, 2)",
            "val:value": "42.0",
            "act:click_desc": "",
            "image": "true",
        },
        "text <b>&amp;\r\nnext\x0b\uffff",
    )
    empty = walker.Element("separator", {"name": ""})
    app.children.extend([node, empty])
    root.children.append(app)
    xml = walker.serialize(root)
    assert xml.startswith("<desktop-frame xmlns:st=")
    assert xml.count("xmlns:") == 8
    assert '<separator name=""/>' in xml
    parsed = ET.fromstring(xml)
    button = parsed.find("application/push-button")
    assert parsed.find("application").get("name") == 'app "one" <&>'
    assert button.get("name") == "line1\nline2\ttabctl"
    assert button.get(ST + "showing") == "true"
    assert button.get(Q["attr"] + "xml-roles") == "a&b"
    assert button.get(CP + "screencoord") == "(1, 2)"
    assert button.get(VAL + "value") == "42.0"
    assert button.get(Q["act"] + "click_desc") == ""
    assert button.get("image") == "true"
    assert button.text == "text <b>&amp;\r\nnext"


# --------------------------------------------------------------------------------------------
# The walk logic against a fake Atspi module (huge tables, terminals, stalled applications).
# --------------------------------------------------------------------------------------------


class _State(int):
    value_name: str

    def __new__(cls, value: int, name: str) -> _State:
        state = super().__new__(cls, value)
        state.value_name = f"ATSPI_STATE_{name}"
        return state


_STATES = {
    i: _State(i, n)
    for i, n in enumerate(["INVALID", "ACTIVE", "FOCUSED", "SHOWING", "VISIBLE", "MULTI_LINE"])
}


class _StateType:
    __enum_values__ = _STATES
    ACTIVE, FOCUSED, SHOWING, VISIBLE, MULTI_LINE = (_STATES[i] for i in range(1, 6))


class _Node:
    def __init__(
        self,
        role: str,
        name: str = "",
        states: tuple[str, ...] = ("SHOWING", "VISIBLE"),
        ifaces: tuple[str, ...] = (),
        text: str = "",
        children: list[_Node] | None = None,
        extents: tuple[int, int, int, int] = (0, 0, 10, 10),
        hang: bool = False,
    ) -> None:
        self.role, self.name, self.text, self.hang = role, name, text, hang
        self.states = [getattr(_StateType, s) for s in states]
        self.ifaces = ["Accessible", "Component", *ifaces]
        self.children = children or []
        self.extents = types.SimpleNamespace(
            x=extents[0], y=extents[1], width=extents[2], height=extents[3]
        )


class _HugeTable(_Node):
    """A Calc-like sheet: 2**31-1 cells; rows 2-5 x columns 1-3 are on screen."""

    def __init__(self) -> None:
        super().__init__("table", ifaces=("Table",), extents=(100, 100, 300, 80))

    def cell(self, row: int, column: int) -> _Node:
        showing = 2 <= row <= 5 and 1 <= column <= 3
        name = f"{chr(ord('A') + column)}{row + 1}"
        return _Node(
            "table cell",
            name,
            ("SHOWING", "VISIBLE") if showing else ("VISIBLE",),
            ifaces=("Text",),
            text=f"v{name}",
        )


def _fake_atspi(desktop: _Node, clock: list[float]) -> types.SimpleNamespace:
    def check(node: _Node) -> _Node:
        if node.hang:
            clock[0] += 2.0
            raise RuntimeError("Timeout was reached")
        return node

    def child_count(node: _Node) -> int:
        return 2**31 - 1 if isinstance(check(node), _HugeTable) else len(node.children)

    def at_point(table: _HugeTable, x: int, y: int, coord: object) -> _Node:
        return table.cell(2, 1) if (x, y) == (101, 101) else table.cell(5, 3)

    accessible = types.SimpleNamespace(
        get_child_count=child_count,
        get_child_at_index=lambda n, i: check(n).children[i],
        get_role_name=lambda n: check(n).role,
        get_role=lambda n: check(n).role,
        get_name=lambda n: check(n).name,
        get_state_set=lambda n: types.SimpleNamespace(get_states=lambda: check(n).states),
        get_attributes=lambda n: {"toolkit": "fake"},
        get_interfaces=lambda n: check(n).ifaces,
        get_index_in_parent=lambda n: -1,
    )
    return types.SimpleNamespace(
        StateType=_StateType,
        CoordType=types.SimpleNamespace(SCREEN=0),
        Role=types.SimpleNamespace(TERMINAL="terminal"),
        Accessible=accessible,
        Component=types.SimpleNamespace(
            get_extents=lambda n, c: check(n).extents, get_accessible_at_point=at_point
        ),
        Text=types.SimpleNamespace(
            get_character_count=lambda n: len(n.text), get_text=lambda n, a, b: n.text[a:b]
        ),
        Table=types.SimpleNamespace(get_accessible_at=lambda t, r, c: t.cell(r, c)),
        get_desktop=lambda i: desktop,
    )


def _walk(desktop: _Node, **kwargs: Any) -> tuple[Any, list[float]]:
    clock = [0.0]
    return walker.Walker(_fake_atspi(desktop, clock), clock=lambda: clock[0], **kwargs), clock


def test_huge_table_walks_its_visible_cells_only() -> None:
    sheet = _HugeTable()
    desktop = _Node(
        "desktop frame",
        children=[
            _Node(
                "application",
                "soffice",
                states=(),
                children=[
                    _Node(
                        "frame", "Calc", children=[_Node("document spreadsheet", children=[sheet])]
                    )
                ],
            )
        ],
    )
    w, _ = _walk(desktop)
    tree = walker.serialize(w.desktop_tree())
    table = ET.fromstring(tree).find(".//document-spreadsheet/table")
    assert table is not None
    cells = list(table)
    assert [c.get("name") for c in cells] == [f"{col}{row}" for row in range(3, 7) for col in "BCD"]
    assert all(c.tag == "table-cell" and c.text == "v" + c.get("name") for c in cells)
    assert cells[0].get(CP + "screencoord") == "(0, 0)"
    assert cells[0].get(Q["attr"] + "toolkit") == "fake"


def test_limits_on_depth_and_children() -> None:
    chain = _Node("panel", "deepest")
    for depth in range(60):
        chain = _Node("panel", f"d{depth}", children=[chain])
    wide = _Node("list", children=[_Node("list item", str(i)) for i in range(1100)])
    desktop = _Node("desktop frame", children=[_Node("application", "a", children=[chain, wide])])
    w, _ = _walk(desktop)
    root = w.desktop_tree()
    depth, element = 1, root.children[0]
    while element.children:
        element, depth = element.children[0], depth + 1
    assert depth == walker.MAX_DEPTH
    assert len(root.children[0].children[1].children) == walker.MAX_CHILDREN


def test_stalled_application_is_dropped() -> None:
    hung = _Node(
        "application",
        "hung",
        states=(),
        children=[_Node("frame", "f", hang=True) for _ in range(50)],
    )
    fine = _Node("application", "fine", states=(), children=[_Node("frame", "ok")])
    desktop = _Node("desktop frame", children=[hung, fine])
    w, clock = _walk(desktop)
    root = w.desktop_tree()
    assert [app.attrs["name"] for app in root.children] == ["fine"]
    assert clock[0] <= 2.0 * walker.MAX_SLOW_FAILURES


def test_terminal_needs_a_focused_terminal_in_an_active_window() -> None:
    def terminal(states: tuple[str, ...]) -> _Node:
        return _Node(
            "terminal", "Terminal", states, ifaces=("Text",), text="$ ls\ufffc\nfile  \n\n"
        )

    def desktop(window_states: tuple[str, ...], term_states: tuple[str, ...]) -> _Node:
        window = _Node(
            "frame",
            "Terminal",
            window_states,
            children=[_Node("filler", children=[terminal(term_states)])],
        )
        return _Node("desktop frame", children=[_Node("application", "t", (), children=[window])])

    on = ("SHOWING", "VISIBLE")
    w, _ = _walk(desktop((*on, "ACTIVE"), (*on, "FOCUSED")))
    assert w.focused_terminal_text() == "$ ls\nfile"
    w, _ = _walk(desktop(on, (*on, "FOCUSED")))
    assert w.focused_terminal_text() is None
    w, _ = _walk(desktop((*on, "ACTIVE"), on))
    assert w.focused_terminal_text() is None


# --------------------------------------------------------------------------------------------
# LibreOffice Calc (slow: LibreOffice's first start and a full sheet walk take tens of seconds).
# --------------------------------------------------------------------------------------------

_LO_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
           xmlns:xs="http://www.w3.org/2001/XMLSchema"
           xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""  # noqa: E501


@pytest.mark.slow
@pytest.mark.apps
def test_calc_sheet_is_walked_over_its_visible_cells(a11y_desktop: A11yDesktop) -> None:
    soffice = shutil.which("soffice")
    if soffice is None or shutil.which("xdotool") is None:
        pytest.skip("needs LibreOffice Calc (with libreoffice-gtk3) and xdotool")
    profile = a11y_desktop.root / "lo_profile"
    (profile / "user").mkdir(parents=True, exist_ok=True)
    (profile / "user" / "registrymodifications.xcu").write_text(_LO_SETTINGS)
    env = a11y_desktop.env
    proc = a11y_desktop.spawn(
        [
            "env",
            "SAL_USE_VCLPLUGIN=gtk3",
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--norestore",
            "--nologo",
            "--calc",
        ]
    )
    try:

        def calc_window() -> str | None:
            # No --sync: xdotool's search fails on windows that vanish mid-search (splash).
            found = subprocess.run(
                ["xdotool", "search", "--onlyvisible", "--name", "LibreOffice Calc"],
                env=env,
                timeout=30,
                capture_output=True,
                text=True,
            )
            return found.stdout.split()[0] if found.stdout.split() else None

        window = _wait_for(calc_window, 120, "LibreOffice Calc's window", step=0.5)
        for args in (
            ["windowactivate", "--sync", window],
            ["key", "ctrl+Home"],
            ["type", "--delay", "20", "Marker77"],
            ["key", "Tab"],
            ["type", "--delay", "20", "42"],
            ["key", "Return"],
            ["mousemove", "300", "300"],
            ["mousemove", "400", "350"],
        ):
            subprocess.run(["xdotool", *args], env=env, timeout=30, check=True, capture_output=True)
            time.sleep(0.3)

        def cells() -> dict[str, ET.Element]:
            root = ET.fromstring(a11y.accessibility_tree(a11y_desktop.display, env, timeout=60))
            sheet_cells = root.iterfind(".//document-spreadsheet//table-cell")
            return {c.get("name", ""): c for c in sheet_cells}

        def typed(c: dict[str, ET.Element]) -> bool:
            return "A1" in c and "B1" in c and (c["A1"].text, c["B1"].text) == ("Marker77", "42")

        found_cells = _wait_for(lambda: typed(c := cells()) and c, 60, "the typed cells")
        assert 50 < len(found_cells) < 5000
        assert found_cells["B1"].text == "42" and found_cells["B1"].get(VAL + "value") == "42.0"
        assert all(c.get(ST + "showing") == "true" for c in found_cells.values())
        x, y = _pair(found_cells["A1"].get(CP + "screencoord"))
        assert 0 <= x < SCREEN_W and 0 <= y < SCREEN_H
        started = time.monotonic()
        a11y.accessibility_tree(a11y_desktop.display, env, timeout=60)
        assert time.monotonic() - started < 60
    finally:
        _kill(_descendants([proc.pid])[::-1] + [proc.pid], a11y_desktop.popens)
        a11y_desktop.popens.pop(proc.pid, None)
