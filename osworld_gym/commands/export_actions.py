"""Typed actions as one Arrow struct, so exported datasets hold actions as columns, not JSON.

The struct has ``kind`` and the union of every typed action's fields, derived from the
declarations in ``osworld_gym.actions.types``; a field an action lacks is null. A new action
class, or a new field, changes the exported schema with no edit here.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import Any, Literal

from osworld_gym.actions.types import ACTION_TYPES

__all__ = ["ACTION_FIELDS", "action_feature", "action_row", "action_rows"]

_VALUE = {int: "int64", float: "float64", str: "string", bool: "bool"}


def _dtype(hint: Any, where: str) -> dict[str, Any]:
    """The ``datasets`` feature of one dataclass field's type (``X | None`` is nullable X)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(inner) == 1:
            return _dtype(inner[0], where)
    elif origin is Literal:
        kinds = {type(arg) for arg in typing.get_args(hint)}
        if len(kinds) == 1:
            return _dtype(kinds.pop(), where)
    elif origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"feature": _dtype(args[0], where), "_type": "List"}
    elif hint in _VALUE:
        return {"dtype": _VALUE[hint], "_type": "Value"}
    raise TypeError(f"{where}: no Arrow column type for {hint!r}")


@cache
def _fields() -> dict[str, dict[str, Any]]:
    union: dict[str, dict[str, Any]] = {"kind": {"dtype": "string", "_type": "Value"}}
    for kind, cls in ACTION_TYPES.items():
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            feature = _dtype(hints[f.name], f"{kind}.{f.name}")
            if union.setdefault(f.name, feature) != feature:
                # One column per name: two actions typing a field differently cannot share it.
                raise TypeError(f"action field {f.name!r} has two types: {union[f.name]} and "
                                f"{feature} ({kind})")  # fmt: skip
    return union


ACTION_FIELDS: tuple[str, ...] = tuple(_fields())
"""The struct's fields: ``kind``, then every typed action's fields in declaration order."""


def action_feature() -> dict[str, Any]:
    """The ``datasets`` feature of one action: a struct (a dict of features) of every field."""
    return {name: dict(feature) for name, feature in _fields().items()}


def action_row(action: Mapping[str, Any]) -> dict[str, Any]:
    """One typed action (its ``to_dict()`` form) as a struct row.

    Raises:
        ValueError: The action has a field no typed action has, or a value of the wrong type
            (a hand-edited or foreign trajectory file); the message names the field.
    """
    if not isinstance(action, Mapping):
        raise ValueError(f"a parsed action must be an object, got {type(action).__name__}")
    unknown = sorted(str(k) for k in action if k not in _fields())
    if unknown:
        raise ValueError(
            f"parsed action {action.get('kind')!r} has field(s) {unknown} that no typed action "
            f"has (expected some of {list(ACTION_FIELDS)})"
        )
    row = dict.fromkeys(ACTION_FIELDS)
    for name, value in action.items():
        row[name] = _checked(value, _fields()[name], f"{action.get('kind')}.{name}")
    return row


def action_rows(actions: Any) -> list[dict[str, Any]]:
    """A recorded ``parsed_actions`` list as struct rows (None or missing: no actions)."""
    if actions is None:
        return []
    if not isinstance(actions, list):
        raise ValueError(f"parsed_actions must be a list, got {type(actions).__name__}")
    return [action_row(action) for action in actions]


def _checked(value: Any, feature: Mapping[str, Any], where: str) -> Any:
    """``value`` as the column takes it; a clear error where Arrow would give an obscure one."""
    if value is None:
        return None
    if feature["_type"] == "List":
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{where} must be a list, got {value!r}")
        return [_checked(v, feature["feature"], where) for v in value]
    dtype = feature["dtype"]
    ok = {
        "int64": isinstance(value, int) and not isinstance(value, bool),
        "float64": isinstance(value, (int, float)) and not isinstance(value, bool),
        "string": isinstance(value, str),
        "bool": isinstance(value, bool),
    }[dtype]
    if not ok:
        raise ValueError(f"{where} must be {dtype}, got {value!r}")
    return float(value) if dtype == "float64" else value
