"""Documentation and JSON schemas derived from the action declarations in ``.types``.

Nothing here is written by hand per action: adding a field to a declaration changes the
prompt text, the JSON schema and the tool descriptions together.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import MISSING, Field, fields
from typing import Any

from osworld_gym.actions.types import ACTION_KINDS, ACTION_TYPES, Action

__all__ = ["action_json_schema", "describe_actions", "tool_schemas"]


def _summary(cls: type[Action]) -> str:
    # Docstrings use reST literals; prompts and tool descriptions read better without them.
    return (cls.__doc__ or "").strip().splitlines()[0].replace("``", "")


def _default(f: Field[Any]) -> Any:
    return MISSING if f.default is MISSING else f.default


def _classes(kinds: Iterable[str] | None) -> list[type[Action]]:
    if kinds is None:
        return list(ACTION_TYPES.values())
    unknown = [k for k in kinds if k not in ACTION_TYPES]
    if unknown:
        raise ValueError(f"unknown action kind(s) {unknown}; expected some of {list(ACTION_KINDS)}")
    return [ACTION_TYPES[k] for k in kinds]


def describe_actions(kinds: Iterable[str] | None = None) -> str:
    """Render the action space as text a prompt can embed, one signature per action.

    Args:
        kinds: The kinds to describe, in order; all of them by default.

    Returns:
        Lines like ``click(x=None, y=None, button='left', clicks=1)`` followed by the
        action's summary and one indented line per field.

    Raises:
        ValueError: an unknown kind.

    Example:
        >>> print(describe_actions(["press"]))
        press(key, presses=1)  # Press and release one key, possibly several times.
            key: Key name.
            presses: How many times.
    """
    blocks = []
    for cls in _classes(kinds):
        ordered = sorted(fields(cls), key=lambda f: _default(f) is not MISSING)  # required first
        params = [
            f.name if _default(f) is MISSING else f"{f.name}={_default(f)!r}" for f in ordered
        ]
        lines = [f"{cls.kind}({', '.join(params)})  # {_summary(cls)}"]
        lines += [f"    {f.name}: {f.metadata['doc']}" for f in fields(cls)]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _parameters(cls: type[Action]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for f in fields(cls):
        prop = dict(f.metadata["schema"])
        prop.setdefault("description", f.metadata["doc"])
        default = _default(f)
        if default is MISSING:
            required.append(f.name)
        else:
            prop["default"] = default
        properties[f.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def tool_schemas(kinds: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Describe each action as a function tool (the OpenAI / Hugging Face tool-calling shape).

    Example:
        >>> tool = tool_schemas(["key_down"])[0]
        >>> tool["function"]["name"], tool["function"]["parameters"]["required"]
        ('key_down', ['key'])
    """
    return [
        {
            "type": "function",
            "function": {
                "name": cls.kind,
                "description": _summary(cls),
                "parameters": _parameters(cls),
            },
        }
        for cls in _classes(kinds)
    ]


def action_json_schema(kinds: Iterable[str] | None = None) -> dict[str, Any]:
    """Return a JSON schema (draft 2020-12) for ``Action.to_dict()`` dictionaries.

    Example:
        >>> schema = action_json_schema()
        >>> len(schema["oneOf"]), schema["oneOf"][0]["properties"]["kind"]
        (16, {'const': 'click'})
    """
    variants = []
    for cls in _classes(kinds):
        params = _parameters(cls)
        params["properties"] = {"kind": {"const": cls.kind}, **params["properties"]}
        params["required"] = ["kind", *params["required"]]
        params["description"] = _summary(cls)
        variants.append(params)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "osworld-gym action",
        "oneOf": variants,
    }
