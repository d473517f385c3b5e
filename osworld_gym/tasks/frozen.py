"""Deeply immutable JSON values that still behave like the JSON they came from.

Task objects are shared between envs (a pool hands one ``TaskSet`` to
many workers), so their payloads must not be mutable: a setup interpreter that substituted a
placeholder in place would corrupt every later episode. Plain ``MappingProxyType``/``tuple``
freezing would break OSWorld-semantics code downstream, which receives these values as metric
options and getter configs and tests ``isinstance(x, list)``, concatenates lists, or calls
``json.dumps``. So the frozen types subclass ``dict`` and ``list``: they compare equal to the
original data, serialise to the same JSON, pickle, and refuse every mutating method.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NoReturn, SupportsIndex

__all__ = [
    "MAX_DEPTH",
    "FrozenDict",
    "FrozenList",
    "NotJSONError",
    "freeze",
    "strings_in",
    "thaw",
    "too_deep",
]

_SCALARS = str | int | float | bool | None

MAX_DEPTH = 100
"""How many arrays and objects may sit inside one another in a task document.

Everything that walks task data recurses once per level: ``freeze()`` and ``thaw()`` (about
four Python frames a level), ``json.dumps`` in error messages, ``copy.deepcopy``, hashing, and
the pickling that hands tasks to pool workers. Python stops at 1000 frames (less whatever the
caller's stack already holds), so a document a few hundred levels deep would fail in any of
them with a bare ``RecursionError`` far from the file. The deepest OSWorld task nests 11 levels;
100 leaves room for any real task and keeps every walk well inside the limit.
"""

_PATH_LEVELS = 4
"""Levels of a too-deep value's path spelled out in messages; deeper ones read as ``...``."""


class NotJSONError(TypeError):
    """A value holds something that is not JSON data (a set, a ``Path``, a non-string key)."""


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} is immutable (task data is shared between envs); "
        "call thaw() or .to_dict() for a mutable copy"
    )


class FrozenDict(dict[str, Any]):
    """A read-only, hashable ``dict`` whose values are frozen too.

    Example:
        >>> d = FrozenDict({"command": ["ls", "-l"]})
        >>> d == {"command": ["ls", "-l"]}, isinstance(d["command"], list)
        (True, True)
        >>> d["shell"] = True
        Traceback (most recent call last):
        ...
        TypeError: FrozenDict is immutable (task data is shared between envs); call thaw() or \
.to_dict() for a mutable copy
    """

    __slots__ = ("_hash",)

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /) -> None:
        items = data.items() if isinstance(data, Mapping) else data
        super().__init__((k, freeze(v)) for k, v in items)
        self._hash: int | None = None

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        if self._hash is None:
            self._hash = hash(frozenset(self.items()))
        return self._hash

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


class FrozenList(list[Any]):
    """A read-only, hashable ``list`` whose items are frozen too.

    Example:
        >>> FrozenList(["a", {"b": 1}]) == ["a", {"b": 1}]
        True
    """

    __slots__ = ()

    def __init__(self, items: Iterable[Any] = (), /) -> None:
        super().__init__(freeze(v) for v in items)

    __setitem__ = __delitem__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse
    __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[type[FrozenList], tuple[list[Any]]]:
        return (type(self), (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __add__(self, other: Iterable[Any]) -> list[Any]:  # type: ignore[override]
        # A sum is new data owned by the caller: hand back a plain, mutable list.
        return list(self) + list(other)

    def __mul__(self, n: SupportsIndex) -> list[Any]:  # type: ignore[override]
        return list(self) * n


def freeze(value: Any, where: str = "") -> Any:
    """Return a deeply immutable copy of JSON data (objects, arrays and scalars).

    Args:
        value: JSON-like data; tuples count as arrays.
        where: Path of ``value`` inside its document, used in the error message.

    Returns:
        ``value`` itself for scalars and already frozen values, else a ``FrozenDict`` or
        ``FrozenList``.

    Raises:
        NotJSONError: ``value`` holds something that is not JSON data.
    """
    if isinstance(value, _SCALARS | FrozenDict | FrozenList):
        return value
    # Children are frozen first (bottom-up), so the constructors' own freeze() calls are O(1).
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJSONError(f"{where or 'value'}: object keys must be strings, got {key!r}")
            items.append((key, freeze(item, f"{where}.{key}" if where else key)))
        return FrozenDict(items)
    if isinstance(value, list | tuple):
        return FrozenList(freeze(item, f"{where}[{i}]") for i, item in enumerate(value))
    raise NotJSONError(f"{where or 'value'}: {type(value).__name__} is not JSON data")


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """Where JSON-like data nests arrays and objects more than ``limit`` levels deep.

    The walk keeps its own stack instead of recursing, so it answers for data of any depth
    (and for self-referencing containers, which are infinitely deep) without
    ``RecursionError``.

    Args:
        value: JSON-like data (objects, arrays, tuples and scalars).
        limit: How many levels of containers are allowed (the top-level one counts as one).

    Returns:
        The path of the first container past the limit, its first levels spelled out
        (``evaluator.result.command[0]...``), or ``None`` when the data is within the limit.

    Example:
        >>> too_deep({"a": [[1]]}, limit=3) is None, too_deep({"a": [[1]]}, limit=2)
        (True, 'a[0]')
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, Mapping):
            children = [(f"{where}.{key}" if where else str(key), v) for key, v in item.items()]
        elif isinstance(item, list | tuple):
            children = [(f"{where}[{index}]", v) for index, v in enumerate(item)]
        else:
            continue
        if depth > limit:
            return where
        if depth >= _PATH_LEVELS:
            # Past the first levels a path adds only noise: children share the parent's.
            children = [(where if where.endswith("...") else where + "...", v) for _, v in children]
        stack.extend((v, depth + 1, path) for path, v in children)
    return None


def thaw(value: Any) -> Any:
    """Return a plain, mutable deep copy (``dict``/``list``) of frozen or plain JSON data.

    Example:
        >>> thaw(FrozenDict({"a": [1, 2]}))
        {'a': [1, 2]}
    """
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


def strings_in(value: Any) -> Iterator[str]:
    """Every string inside a JSON value, frozen or not (a getter config's paths, commands...).

    Task data is at most ``MAX_DEPTH`` deep once loaded, so the recursion is bounded.
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)
