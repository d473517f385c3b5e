"""Walk the AT-SPI tree of one X display; print OSWorld's XML tree or the focused terminal's text.

This is a standalone script, run as a subprocess by ``osworld_gym.guest.a11y`` with Debian's
``/usr/bin/python3`` (which has ``python3-gi`` and ``gir1.2-atspi-2.0``). It imports only the
standard library and ``gi``; ``gi`` is imported lazily, so the pure helpers (XML serialisation,
names) can be imported and tested from any Python.

libatspi binds a process to one accessibility bus for good, so it walks exactly one display: the one
given by the ``DISPLAY`` / ``DBUS_SESSION_BUS_ADDRESS`` environment it is started with.

Usage::

    /usr/bin/python3 -I a11y_walker.py [--prune] [--lean]   # XML tree on stdout
    /usr/bin/python3 -I a11y_walker.py --terminal           # focused terminal's text on stdout

Exit status: 0 success; 1 walk failed; 2 ``gi``/Atspi cannot be imported; 3 no accessibility
bus can be reached from this environment; 4 (``--terminal``) no focused terminal in the active
window. On any non-zero status stderr ends with a one-line reason.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_NO_GI = 2
EXIT_NO_BUS = 3
EXIT_NO_TERMINAL = 4

#: OSWorld's namespace map for Linux trees (prefix -> URI); agents' parsers match these exact URIs.
NAMESPACES: dict[str, str] = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}

ROOT_TAG = "desktop-frame"
MAX_DEPTH = 50
MAX_CHILDREN = 1024
#: A table with more children than this is walked over its visible cells only (LibreOffice Calc
#: reports 2**31 - 1 cells per sheet).
HUGE_TABLE = 5000
#: At most this many rows and columns of visible cells are walked in a huge table.
MAX_CELL_SPAN = 500
#: After this many calls into one application that failed slowly (a hung or overloaded app), the
#: rest of that application is skipped so a single app cannot stall the whole walk.
MAX_SLOW_FAILURES = 3

# Characters XML 1.0 forbids (they also cannot be passed through lxml by OSWorld's parsers).
_XML_INVALID = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ATTR_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_CELL_NAME = re.compile(r"^\$?([A-Z]{1,3})\$?([0-9]{1,7})$")


# --------------------------------------------------------------------------------------------
# Pure helpers: names, text cleaning, XML serialisation (no gi needed).
# --------------------------------------------------------------------------------------------


def xml_safe(value: str) -> str:
    """Drop characters that XML 1.0 cannot carry (C0 controls, lone surrogates, U+FFFE/U+FFFF).

    Args:
        value: Any string.

    Returns:
        ``value`` without the forbidden characters.
    """
    return _XML_INVALID.sub("", value)


def clean_text(text: str) -> str:
    """Strip U+FFFC (object replacement) and U+FFFD (replacement character), as OSWorld does.

    Args:
        text: Text read through the AT-SPI Text interface.

    Returns:
        The text without those placeholders.
    """
    return text.replace("\ufffc", "").replace("\ufffd", "")


def xml_name(name: str) -> str:
    """Turn ``name`` into a valid XML (NCName) local name, changing as little as possible.

    Characters other than letters, digits, ``.``, ``-`` and ``_`` become ``-``; a name that does
    not start with a letter or ``_`` gets a leading ``_``.

    Args:
        name: A role, attribute or action name.

    Returns:
        A string usable as an element or attribute local name.
    """
    chars = [ch if (ch.isalnum() or ch in "._-") else "-" for ch in name]
    out = "".join(chars)
    if not out or not (out[0].isalpha() or out[0] == "_"):
        out = "_" + out
    return out


def role_tag(role_name: str | None) -> str:
    """OSWorld's element tag for an AT-SPI role name: spaces become ``-``; empty is ``unknown``.

    Args:
        role_name: The AT-SPI role name, e.g. ``"push button"``.

    Returns:
        The tag, e.g. ``"push-button"``.
    """
    raw = (role_name or "").strip()
    return xml_name((raw or "unknown").replace(" ", "-"))


def state_name(value_name: str) -> str:
    """OSWorld's spelling of a state: the enum name, lower case, e.g. ``multi_line``.

    Args:
        value_name: The GEnum value name, e.g. ``"ATSPI_STATE_MULTI_LINE"`` (pyatspi's
            ``STATE_MULTI_LINE`` works too).

    Returns:
        The state part in lower case with underscores, e.g. ``"multi_line"``.
    """
    name = value_name
    for prefix in ("ATSPI_STATE_", "STATE_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.lower()


def parse_cell_name(name: str) -> tuple[int, int] | None:
    """Row and column (0-based) of a spreadsheet cell from its ``A1``-style accessible name.

    Args:
        name: The cell's accessible name, e.g. ``"B12"``.

    Returns:
        ``(row, column)`` or None when ``name`` is not a cell reference.
    """
    match = _CELL_NAME.match(name.strip())
    if not match:
        return None
    column = 0
    for ch in match.group(1):
        column = column * 26 + (ord(ch) - ord("A") + 1)
    row = int(match.group(2))
    if row < 1:
        return None
    return row - 1, column - 1


class Element:
    """One node of the output tree.

    Attributes:
        tag: Element name (an AT-SPI role name with ``-`` for spaces).
        attrs: Attributes in output order; keys are ``prefix:local`` (prefixes from
            ``NAMESPACES``) or plain names (``name``, ``image``, ``selection``).
        text: Element text, or empty for none.
        children: Child elements.
    """

    __slots__ = ("tag", "attrs", "text", "children")

    def __init__(self, tag: str, attrs: dict[str, str] | None = None, text: str = "") -> None:
        self.tag = tag
        self.attrs: dict[str, str] = attrs if attrs is not None else {}
        self.text = text
        self.children: list[Element] = []


def _write(element: Element, out: list[str], ns_decl: str) -> None:
    out.append("<")
    out.append(element.tag)
    out.append(ns_decl)
    for key, value in element.attrs.items():
        out.append(f' {key}="{xml_safe(value).translate(_ATTR_ESCAPES)}"')
    if not element.children and not element.text:
        out.append("/>")
        return
    out.append(">")
    if element.text:
        out.append(xml_safe(element.text).translate(_TEXT_ESCAPES))
    for child in element.children:
        _write(child, out, "")
    out.append(f"</{element.tag}>")


def serialize(root: Element) -> str:
    """Serialise a tree as OSWorld does: all namespace declarations on the root, no XML prolog.

    Args:
        root: The root element (normally ``desktop-frame``).

    Returns:
        The XML document as a string.
    """
    ns_decl = "".join(f' xmlns:{prefix}="{uri}"' for prefix, uri in NAMESPACES.items())
    out: list[str] = []
    _write(root, out, ns_decl)
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Environment checks (before libatspi is touched: with no bus at all it aborts the process).
# --------------------------------------------------------------------------------------------


def _local_display_socket(display: str) -> str | None:
    """Path of the X socket of a local display such as ``:3`` or ``unix:3.0``, else None."""
    match = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display.strip())
    if not match:
        return None
    return f"/tmp/.X11-unix/X{match.group(1)}"


def environment_problem(environ: Mapping[str, str]) -> str | None:
    """Why libatspi could not find an accessibility bus in ``environ``, or None if it may.

    libatspi reads the ``AT_SPI_BUS`` property of ``$DISPLAY``'s root window first and then asks
    the session bus. With neither it calls a fatal error that kills the process (SIGTRAP), so the
    walker refuses to start instead.

    Args:
        environ: The environment the walker runs with.

    Returns:
        A one-line reason, or None when a bus may be reachable.
    """
    display = environ.get("DISPLAY", "")
    bus = environ.get("DBUS_SESSION_BUS_ADDRESS", "")
    if not display and not bus:
        return (
            "no session bus: neither DISPLAY nor DBUS_SESSION_BUS_ADDRESS is set "
            "(libatspi would abort the process)"
        )
    if not bus:
        socket = _local_display_socket(display)
        if socket is not None and not os.path.exists(socket):
            return (
                f"no session bus: DBUS_SESSION_BUS_ADDRESS is not set and X display {display} "
                f"is not running ({socket} does not exist)"
            )
    return None


# --------------------------------------------------------------------------------------------
# The walk (needs gi.repository.Atspi).
# --------------------------------------------------------------------------------------------


class _AppStalled(Exception):
    """Raised inside one application's walk when it keeps timing out."""


class Walker:
    """Builds OSWorld's tree from raw ``gi.repository.Atspi`` (about 5x faster than pyatspi).

    Args:
        atspi: The ``gi.repository.Atspi`` module.
        max_depth: Nodes at this depth (applications are at depth 1) get no children.
        max_children: At most this many children are walked per node.
        prune: Skip the subtrees of nodes that are not showing (applications excepted).
        lean: Leave out ``attr:``, ``val:`` and ``act:`` attributes.
        slow_failure_s: A failed call that took at least this long counts as a timeout.
        clock: Monotonic clock used to time failed calls.
    """

    def __init__(
        self,
        atspi: Any,
        *,
        max_depth: int = MAX_DEPTH,
        max_children: int = MAX_CHILDREN,
        prune: bool = False,
        lean: bool = False,
        slow_failure_s: float = 0.9,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.atspi = atspi
        self.max_depth = max_depth
        self.max_children = max_children
        self.prune = prune
        self.lean = lean
        self.slow_failure_s = slow_failure_s
        self._clock = clock
        self._slow_failures = 0
        self.nodes = 0
        st = atspi.StateType
        self._state_names: dict[int, str] = {}
        for value in st.__enum_values__.values():
            name = state_name(value.value_name)
            if name and name not in ("invalid", "last_defined"):
                self._state_names[int(value)] = name
        self._visible = int(st.VISIBLE)
        self._showing = int(st.SHOWING)
        self._active = int(st.ACTIVE)
        self._focused = int(st.FOCUSED)
        self._screen = atspi.CoordType.SCREEN
        self._terminal_role = atspi.Role.TERMINAL

    # -- calls that may fail -------------------------------------------------------------------

    def _call(self, func: Callable[..., Any], *args: Any, default: Any = None) -> Any:
        """Call an AT-SPI function; on failure return ``default`` and watch for a stalled app."""
        start = self._clock()
        try:
            return func(*args)
        except Exception:  # GLib.Error, TypeError from defunct objects, ...
            if self._clock() - start >= self.slow_failure_s:
                self._slow_failures += 1
                if self._slow_failures >= MAX_SLOW_FAILURES:
                    raise _AppStalled() from None
            return default

    def _children(self, acc: Any, count: int | None = None) -> list[Any]:
        if count is None:
            count = self._call(self.atspi.Accessible.get_child_count, acc, default=0) or 0
        children = []
        for index in range(min(count, self.max_children)):
            child = self._call(self.atspi.Accessible.get_child_at_index, acc, index)
            if child is not None:
                children.append(child)
        return children

    def _states(self, acc: Any) -> list[int]:
        state_set = self._call(self.atspi.Accessible.get_state_set, acc)
        if state_set is None:
            return []
        states = self._call(state_set.get_states, default=[]) or []
        return [int(st) for st in states]

    def _applications(self) -> list[Any]:
        self._slow_failures = 0
        try:
            return self._children(self.atspi.get_desktop(0))
        except _AppStalled:
            raise RuntimeError("the AT-SPI registry does not answer (calls time out)") from None

    # -- tree ----------------------------------------------------------------------------------

    def desktop_tree(self) -> Element:
        """Walk desktop 0: one child element per application.

        Returns:
            The ``desktop-frame`` root element.
        """
        root = Element(ROOT_TAG)
        for index, app in enumerate(self._applications()):
            self._slow_failures = 0
            try:
                element = self.node(app, 1, calc=False)
            except _AppStalled:
                sys.stderr.write(f"a11y walker: skipped application #{index}: its calls time out\n")
                continue
            if element is not None:
                root.children.append(element)
        return root

    def node(self, acc: Any, depth: int, calc: bool) -> Element | None:
        """Build the element of ``acc`` and, within the limits, of its subtree.

        Args:
            acc: An ``Atspi.Accessible``.
            depth: Its depth (applications are at 1).
            calc: Whether it lies inside a LibreOffice spreadsheet document.

        Returns:
            The element, or None when the object is gone.
        """
        atspi = self.atspi
        role_name = self._call(atspi.Accessible.get_role_name, acc)
        if role_name is None:
            return None
        self.nodes += 1
        name = self._call(atspi.Accessible.get_name, acc, default="") or ""
        attrs: dict[str, str] = {"name": name}
        states = self._states(acc)
        state_names = self._state_names
        for st in states:
            sname = state_names.get(st)
            if sname:
                attrs["st:" + sname] = "true"
        if not self.lean:
            attributes = self._call(atspi.Accessible.get_attributes, acc, default=None) or {}
            for key, value in attributes.items():
                if key:
                    attrs["attr:" + xml_name(key)] = value if value is not None else ""
        interfaces = set(self._call(atspi.Accessible.get_interfaces, acc, default=[]) or [])
        showing = self._showing in states
        if showing and self._visible in states and "Component" in interfaces:
            rect = self._call(atspi.Component.get_extents, acc, self._screen)
            if rect is not None:
                attrs["cp:screencoord"] = f"({rect.x}, {rect.y})"
                attrs["cp:size"] = f"({rect.width}, {rect.height})"
        text = ""
        if "Text" in interfaces:
            count = self._call(atspi.Text.get_character_count, acc, default=0) or 0
            if count > 0:
                text = clean_text(self._call(atspi.Text.get_text, acc, 0, count, default="") or "")
        if "Image" in interfaces:
            attrs["image"] = "true"
        if "Selection" in interfaces:
            attrs["selection"] = "true"
        if not self.lean and "Value" in interfaces:
            for key, func in (
                ("value", atspi.Value.get_current_value),
                ("min", atspi.Value.get_minimum_value),
                ("max", atspi.Value.get_maximum_value),
                ("step", atspi.Value.get_minimum_increment),
            ):
                number = self._call(func, acc)
                if number is not None:
                    attrs["val:" + key] = str(number)
        if not self.lean and "Action" in interfaces:
            for index in range(self._call(atspi.Action.get_n_actions, acc, default=0) or 0):
                action = self._call(atspi.Action.get_action_name, acc, index, default="") or ""
                key = xml_name(action.replace(" ", "-")) if action else ""
                desc = self._call(atspi.Action.get_action_description, acc, index, default="")
                binding = self._call(atspi.Action.get_key_binding, acc, index, default="")
                attrs[f"act:{key}_desc"] = desc or ""
                attrs[f"act:{key}_kb"] = binding or ""

        tag = role_tag(role_name)
        element = Element(tag, attrs, text)
        if depth >= self.max_depth:
            return element
        if self.prune and not showing and tag != "application":
            return element
        calc = calc or tag == "document-spreadsheet"
        count = self._call(atspi.Accessible.get_child_count, acc, default=0) or 0
        if tag == "table" and "Table" in interfaces and (calc or count > HUGE_TABLE):
            element.children.extend(self._visible_cells(acc, depth, calc, showing))
            return element
        for child in self._children(acc, count):
            child_element = self.node(child, depth + 1, calc)
            if child_element is not None:
                element.children.append(child_element)
        return element

    # -- huge tables (LibreOffice Calc) --------------------------------------------------------

    def _cell_position(self, table: Any, cell: Any) -> tuple[int, int] | None:
        atspi = self.atspi
        name = self._call(atspi.Accessible.get_name, cell, default="") or ""
        position = parse_cell_name(name)
        if position is not None:
            return position
        index = self._call(atspi.Accessible.get_index_in_parent, cell, default=-1)
        if index is None or index < 0:
            return None
        row = self._call(atspi.Table.get_row_at_index, table, index, default=-1)
        column = self._call(atspi.Table.get_column_at_index, table, index, default=-1)
        if row is None or column is None or row < 0 or column < 0:
            return None
        return row, column

    def _visible_cells(self, table: Any, depth: int, calc: bool, showing: bool) -> list[Element]:
        """Elements of the showing cells of a huge table, found from its on-screen corners.

        The cells under the table's top-left and bottom-right corners bound the visible range;
        cells in it are fetched with ``Table.get_accessible_at`` and kept when showing (OSWorld
        keeps only showing cells of a Calc sheet).
        """
        atspi = self.atspi
        if not showing:
            return []
        rect = self._call(atspi.Component.get_extents, table, self._screen)
        if rect is None or rect.width <= 0 or rect.height <= 0:
            return []
        corners = []
        for x, y in ((rect.x + 1, rect.y + 1), (rect.x + rect.width - 2, rect.y + rect.height - 2)):
            cell = self._call(atspi.Component.get_accessible_at_point, table, x, y, self._screen)
            position = self._cell_position(table, cell) if cell is not None else None
            if position is None:
                return self._showing_children(table, depth, calc)
            corners.append(position)
        (row0, col0), (row1, col1) = corners
        row1 = min(max(row0, row1), row0 + MAX_CELL_SPAN - 1)
        col1 = min(max(col0, col1), col0 + MAX_CELL_SPAN - 1)
        cells = []
        for row in range(row0, row1 + 1):
            for column in range(col0, col1 + 1):
                cell = self._call(atspi.Table.get_accessible_at, table, row, column)
                if cell is None:
                    continue
                element = self.node(cell, depth + 1, calc)
                if element is not None and "st:showing" in element.attrs:
                    cells.append(element)
        return cells

    def _showing_children(self, table: Any, depth: int, calc: bool) -> list[Element]:
        """Fallback for a huge table whose corners could not be probed: showing first children."""
        cells = []
        for child in self._children(table):
            element = self.node(child, depth + 1, calc)
            if element is not None and "st:showing" in element.attrs:
                cells.append(element)
        return cells

    # -- terminal ------------------------------------------------------------------------------

    def focused_terminal_text(self) -> str | None:
        """Text of the one focused terminal in an active top-level window, else None.

        OSWorld's ``/terminal`` looks for ``frame[@st:active]//terminal[@st:focused]`` under
        ``gnome-terminal-server`` and answers only when exactly one matches; this accepts any
        application's active top-level window (gnome-terminal, lxterminal, xfce4-terminal, ...).

        Returns:
            The terminal's text (U+FFFC/U+FFFD stripped, trailing whitespace removed), or None.
        """
        atspi = self.atspi
        found: list[Any] = []
        for app in self._applications():
            self._slow_failures = 0
            try:
                for window in self._children(app):
                    if self._active in self._states(window):
                        self._find_focused_terminals(window, 2, found)
            except _AppStalled:
                continue
        if len(found) != 1:
            return None
        count = self._call(atspi.Text.get_character_count, found[0], default=0) or 0
        text = self._call(atspi.Text.get_text, found[0], 0, count, default="") if count else ""
        return clean_text(text or "").rstrip()

    def _find_focused_terminals(self, acc: Any, depth: int, found: list[Any]) -> None:
        for child in self._children(acc):
            states = self._states(child)
            if self._showing not in states:
                continue
            role = self._call(self.atspi.Accessible.get_role, child)
            if role == self._terminal_role and self._focused in states:
                found.append(child)
            elif depth < self.max_depth:
                self._find_focused_terminals(child, depth + 1, found)


# --------------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------------


def _fail(status: int, reason: str) -> int:
    sys.stderr.write(" ".join(reason.split()) + "\n")
    sys.stderr.flush()
    return status


def _write_stdout(text: str) -> None:
    sys.stdout.buffer.write(text.encode("utf-8", "replace"))
    sys.stdout.buffer.flush()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--terminal",
        action="store_true",
        help="print the focused terminal's text instead of the XML tree",
    )
    parser.add_argument(
        "--prune", action="store_true", help="skip the subtrees of nodes that are not showing"
    )
    parser.add_argument(
        "--lean", action="store_true", help="leave out attr:, val: and act: attributes"
    )
    parser.add_argument("--max-depth", type=int, default=MAX_DEPTH)
    parser.add_argument("--max-children", type=int, default=MAX_CHILDREN)
    parser.add_argument(
        "--call-timeout-ms",
        type=int,
        default=1000,
        help="libatspi timeout of one call into an application",
    )
    parser.add_argument(
        "--startup-timeout-ms",
        type=int,
        default=3000,
        help="grace period of a starting application before timeouts apply",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the walker.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status (see the module docstring).
    """
    args = _parse_args(argv)
    problem = environment_problem(os.environ)
    if problem is not None:
        return _fail(EXIT_NO_BUS, problem)
    # Atspi.Action getters and PyGI emit a DeprecationWarning per call; the warnings machinery
    # alone made walks ~4x slower.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=ImportWarning)
    try:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except (ImportError, ValueError) as exc:
        return _fail(EXIT_NO_GI, f"cannot import gi.repository.Atspi with {sys.executable}: {exc}")
    try:
        Atspi.set_timeout(args.call_timeout_ms, args.startup_timeout_ms)
        walker = Walker(
            Atspi,
            max_depth=args.max_depth,
            max_children=args.max_children,
            prune=args.prune,
            lean=args.lean,
            slow_failure_s=max(0.05, 0.9 * args.call_timeout_ms / 1000.0),
        )
        if args.terminal:
            text = walker.focused_terminal_text()
            if text is None:
                return _fail(EXIT_NO_TERMINAL, "no focused terminal in the active window")
            _write_stdout(text)
            return EXIT_OK
        xml = serialize(walker.desktop_tree())
    except Exception as exc:  # anything from libatspi: report it in one line
        return _fail(EXIT_FAILED, f"accessibility walk failed: {type(exc).__name__}: {exc}")
    _write_stdout(xml)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
