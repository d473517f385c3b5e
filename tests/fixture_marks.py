"""Marks declared next to the fixtures that imply them (importable as ``fixture_marks``).

A fixture that starts something heavy says so where it is defined::

    @pytest.fixture(scope="module")
    @needs("desktop")
    def desktop() -> Iterator[LocalDesktop]: ...

and ``tests/conftest.py`` gives every test that uses it, directly or through other fixtures,
those marks before ``-m`` selects (``marks_from_fixtures()``). The fixture actually used is the
one pytest resolved for that test, so a module's own ``desktop`` or ``env`` fixture never lends
its marks to a same-named fixture elsewhere. A fixture that forgets its declaration is caught
when it runs: an unmarked test that starts a desktop, a container or a Ray cluster fails
(``launch_guard``).

The marks (registered in ``pyproject.toml``):

- ``desktop``: a real desktop on this host (Xvfb and what runs on it; the ``local`` provider,
  a bare X server, a QEMU VM);
- ``apps``: real applications (LibreOffice, Chromium, GIMP, ...), with ``desktop`` when they
  run on one;
- ``docker``: a Docker engine and its containers;
- ``ray``: a local Ray cluster;
- ``heavy``: no desktop, but too slow for the fast tier (whole-repo linters, builds, fresh
  interpreters, torch and tiny models, fuzzing).

``fast`` is derived, never declared: conftest gives it to every test that has none of the marks
in ``NOT_FAST``.

Collection imports every test module before ``-m`` selects, and some import torch, Ray or a
trainer's stack (seconds each). A module whose ``pytestmark`` is written out at its top level
(``pytestmark = pytest.mark.heavy``, or a list of such marks) has those marks on all its tests,
whatever else they get; when the ``-m`` expression cannot select a test with those marks,
conftest does not import the module at all (``static_module_marks()``, ``can_select()``).
"""

from __future__ import annotations

import ast
import collections.abc
import functools
import itertools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pytest is not needed at run time: scripts/run_tests.sh uses can_select()
    import pytest

F = TypeVar("F", bound=collections.abc.Callable[..., Any])

ATTRIBUTE = "__osworld_gym_test_marks__"
FIXTURE_MARKS = frozenset({"desktop", "apps", "docker", "ray", "heavy"})
# Marks that keep a test out of the fast tier: what it needs, and the suites run apart.
NOT_FAST = FIXTURE_MARKS | {"battery", "slow", "osworld_tasks", "parity", "trainers", "release"}
FAST = "fast"


def needs(*marks: str) -> collections.abc.Callable[[F], F]:
    """Declare the marks every test using the decorated fixture gets.

    Put it under ``@pytest.fixture`` (or above it: both work).

    Args:
        *marks: Names from ``FIXTURE_MARKS``.

    Raises:
        ValueError: No mark, or one that is not in ``FIXTURE_MARKS``.
    """
    unknown = sorted(set(marks) - FIXTURE_MARKS)
    if not marks or unknown:
        raise ValueError(f"needs() takes marks from {sorted(FIXTURE_MARKS)}, got {marks!r}")

    def declare(fixture: F) -> F:
        # Above @pytest.fixture the decorator sees pytest's wrapper; pytest runs (and
        # conftest reads) the function inside it.
        unwrap = getattr(fixture, "_get_wrapped_function", None)
        function = unwrap() if callable(unwrap) else fixture
        declared = tuple(getattr(function, ATTRIBUTE, ()))
        setattr(function, ATTRIBUTE, declared + tuple(m for m in marks if m not in declared))
        return fixture

    return declare


def declared_marks(function: object) -> tuple[str, ...]:
    """The marks ``needs()`` declared on a fixture's function (empty when none)."""
    return tuple(getattr(function, ATTRIBUTE, ()))


def marks_from_fixtures(item: pytest.Item) -> set[str]:
    """The marks of every fixture ``item`` uses, as pytest resolved them for it.

    A fixture that overrides one of the same name and requests it (``def env(env)``) uses
    both, so both count.
    """
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # not a Python test function (a doctest, a plugin's item)
        return set()
    found: set[str] = set()
    for name in getattr(item, "fixturenames", ()):
        for definition in reversed(info.name2fixturedefs.get(name, ())):
            found.update(declared_marks(definition.func))
            if name not in definition.argnames:
                break  # the closest definition does not build on the one it overrides
    return found


def is_fast(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the fast tier: none of ``NOT_FAST`` (after derivation)."""
    return not any(item.get_closest_marker(name) for name in NOT_FAST)


@functools.cache
def static_module_marks(path: Path) -> frozenset[str]:
    """The mark names of a test module's top-level ``pytestmark``, where it is written out.

    ``pytestmark = pytest.mark.name``, ``pytest.mark.name(...)``, or a list or tuple of them;
    other elements (a variable, a ``skipif``'s condition) add nothing here. Empty when there
    is no such assignment or the file does not parse.
    """
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            continue
        values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        for value in values:
            if isinstance(value, ast.Call):
                value = value.func
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Attribute)
                and value.value.attr == "mark"
                and isinstance(value.value.value, ast.Name)
                and value.value.value.id == "pytest"
            ):
                names.add(value.attr)
    return frozenset(names)


_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_OPERATORS = frozenset({"(", ")", "and", "or", "not"})


def can_select(expression: str, marks: collections.abc.Set[str]) -> bool:
    """Whether ``-m expression`` may select a test that has ``marks`` (and maybe others).

    Exact for plain expressions: every name not in ``marks`` is tried both ways (``fast``
    only as False when ``marks`` has one of ``NOT_FAST``). True whenever the expression is not
    analysed: keyword arguments (``mark(x=1)``), more than 12 other names, bad syntax.
    """
    tokens = _TOKEN.findall(expression)
    if not tokens or any("=" in token or "," in token for token in tokens):
        return True
    names = sorted({token for token in tokens if token not in _OPERATORS})
    fixed = {name: True for name in names if name in marks}
    if FAST in names and FAST not in fixed and NOT_FAST & set(marks):
        fixed[FAST] = False
    free = [name for name in names if name not in fixed]
    if len(free) > 12:
        return True
    code = " ".join(t if t in _OPERATORS else f"v[{names.index(t)}]" for t in tokens)
    try:
        compiled = compile(code, "<-m expression>", "eval")
    except SyntaxError:
        return True
    for values in itertools.product((False, True), repeat=len(free)):
        known = dict(fixed, **dict(zip(free, values, strict=True)))
        if eval(compiled, {"__builtins__": {}}, {"v": [known[n] for n in names]}):  # noqa: S307
            return True
    return False
