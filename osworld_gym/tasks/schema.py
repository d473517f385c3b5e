"""The parameters each OSWorld setup step type takes, as checkable data.

OSWorld runs a step ``{"type": T, "parameters": P}`` as ``SetupController._T_setup(**P)``
(``docs/design/task-format.md#setup-steps``): an unknown type or an unexpected parameter fails there
only when the task runs. Checking the same signatures at load time moves that failure to the moment
the task file is read, with a message that names the field.

Getters are left to their implementations, except the one whose form this package extends:
``cloud_file`` takes OSWorld's ``path`` (a URL) or a ``local_path`` (a host file beside the task
file), never both (:func:`check_getter_parameters`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn

__all__ = [
    "STEP_TYPES",
    "StepSchema",
    "Fail",
    "check_getter_parameters",
    "check_step_parameters",
    "show",
]

Fail = Callable[[str, str], NoReturn]
"""Reports a problem: ``fail(field_path, reason)`` raises, naming the field."""

Validator = Callable[[Any, str, Fail], None]
"""Checks one value at a field path and calls ``fail`` when it does not fit."""


def show(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for error messages.

    Example:
        >>> show(None), show("x"), show([1, 2])
        ('null', '"x"', '[1, 2]')
    """
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expect(description: str, test: Callable[[Any], bool]) -> Validator:
    def validate(value: Any, where: str, fail: Fail) -> None:
        if not test(value):
            fail(where, f"expected {description}, got {show(value)}")

    return validate


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


STRING = _expect("a string", lambda v: isinstance(v, str))
NONEMPTY_STRING = _expect("a non-empty string", lambda v: isinstance(v, str) and v != "")


def _flag(value: Any, where: str, fail: Fail) -> None:
    """A step's boolean switch (``shell``, ``strict``, ``by_class``).

    OSWorld passes these through to the guest, which tests them for truth, and a few real tasks
    write ``"shell": "true"``. That string is accepted as true; any other string is refused,
    because OSWorld would read it as true as well (``"false"`` included).
    """
    if isinstance(value, bool) or value == "true":
        return
    if isinstance(value, str):
        fail(
            where,
            f"expected true or false, got {show(value)} (OSWorld reads any non-empty "
            "string as true; write a JSON boolean)",
        )
    fail(where, f"expected true or false, got {show(value)}")


OBJECT = _expect("an object", lambda v: isinstance(v, Mapping))
LIST = _expect("a list", lambda v: isinstance(v, list))
STRING_LIST = _expect("a list of strings", _is_str_list)
NONEMPTY_STRING_LIST = _expect(
    "a non-empty list of non-empty strings",
    lambda v: _is_str_list(v) and len(v) > 0 and all(v),
)
SECONDS = _expect(
    "a number of seconds >= 0",
    lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v >= 0,
)
COMMAND = _expect(
    "a non-empty string or a non-empty list of strings",
    lambda v: (isinstance(v, str) and v.strip() != "") or (_is_str_list(v) and len(v) > 0),
)


def _objects(required: Mapping[str, Validator], optional: Mapping[str, Validator]) -> Validator:
    """A list of objects with the given keys (e.g. ``download``'s ``files``)."""

    def validate(value: Any, where: str, fail: Fail) -> None:
        LIST(value, where, fail)
        for index, item in enumerate(value):
            _check_keys(item, f"{where}[{index}]", fail, required, optional, open_=False)

    return validate


def _until(value: Any, where: str, fail: Fail) -> None:
    _check_keys(
        value,
        where,
        fail,
        {},
        {
            "returncode": _expect("an integer", lambda v: isinstance(v, int)),
            "stdout": STRING,
            "stderr": STRING,
        },
        open_=False,
    )


@dataclass(frozen=True)
class StepSchema:
    """The keyword arguments of one step type.

    Attributes:
        required: Parameters that must be present, with their validators.
        optional: Parameters that may be present.
        open: Whether other parameters are accepted too (OSWorld's ``**config`` steps).
    """

    required: Mapping[str, Validator] = field(default_factory=dict)
    optional: Mapping[str, Validator] = field(default_factory=dict)
    open: bool = False


_EXECUTE = StepSchema(
    required={"command": COMMAND},
    optional={"shell": _flag, "stdout": STRING, "stderr": STRING, "until": _until},
)
_WINDOW = StepSchema(
    required={"window_name": NONEMPTY_STRING}, optional={"strict": _flag, "by_class": _flag}
)

STEP_TYPES: Mapping[str, StepSchema] = MappingProxyType(
    {
        "download": StepSchema(
            {"files": _objects({"url": NONEMPTY_STRING, "path": NONEMPTY_STRING}, {})}
        ),
        "upload_file": StepSchema(
            {"files": _objects({"local_path": NONEMPTY_STRING, "path": NONEMPTY_STRING}, {})}
        ),
        "launch": StepSchema({"command": COMMAND}, {"shell": _flag}),
        "open": StepSchema({"path": NONEMPTY_STRING}),
        "execute": _EXECUTE,
        "command": _EXECUTE,
        "execute_with_verification": StepSchema(
            {"command": COMMAND},
            {
                "verification": OBJECT,
                "max_wait_time": SECONDS,
                "check_interval": SECONDS,
                "shell": _flag,
            },
        ),
        "sleep": StepSchema({"seconds": SECONDS}),
        "activate_window": _WINDOW,
        "close_window": _WINDOW,
        "change_wallpaper": StepSchema({"path": NONEMPTY_STRING}),
        "chrome_open_tabs": StepSchema({"urls_to_open": STRING_LIST}),
        "chrome_close_tabs": StepSchema({"urls_to_close": STRING_LIST}),
        "update_browse_history": StepSchema(
            {
                "history": _objects(
                    {
                        "url": NONEMPTY_STRING,
                        "title": STRING,
                        "visit_time_from_now_in_seconds": SECONDS,
                    },
                    {},
                )
            }
        ),
        "googledrive": StepSchema(open=True),
        "login": StepSchema(open=True),
        "tidy_desktop": StepSchema(open=True),
        "act": StepSchema({"action_seq": LIST}),
        "replay": StepSchema({"trajectory": STRING}),
    }
)
"""Every setup step type OSWorld's ``SetupController`` defines, with its parameters."""


def check_step_parameters(step_type: str, parameters: Any, where: str, fail: Fail) -> None:
    """Check a step's ``parameters`` against the signature of its type.

    Args:
        step_type: The step's ``type`` (already known to be in :data:`STEP_TYPES`).
        parameters: The step's ``parameters`` value.
        where: Field path of ``parameters``, e.g. ``config[2].parameters``.
        fail: Called with a field path and reason on the first problem.
    """
    schema = STEP_TYPES[step_type]
    _check_keys(parameters, where, fail, schema.required, schema.optional, open_=schema.open)


def check_getter_parameters(
    getter_type: str, config: Mapping[str, Any], where: str, fail: Fail
) -> None:
    """Check a getter config whose keys this package defines (``cloud_file``); others pass.

    Args:
        getter_type: The getter's ``type``.
        config: The getter config (an object, ``type`` included or not).
        where: Field path of the config, e.g. ``evaluator.expected[1]``.
        fail: Called with a field path and reason on the first problem.
    """
    if getter_type == "cloud_file":
        _check_cloud_file(config, where, fail)


def _check_cloud_file(config: Mapping[str, Any], where: str, fail: Fail) -> None:
    """``path`` (a URL) or ``local_path`` (a host path), exactly one, and the ``dest`` name(s)."""
    if ("path" in config) == ("local_path" in config):
        fail(
            where,
            'a cloud_file getter takes exactly one of "path" (a URL) and "local_path" (a file '
            "on the host, relative to the task file)",
        )
    if "dest" not in config:
        fail(f"{where}.dest", "required field is missing (the name the file is saved as)")
    key = "path" if "path" in config else "local_path"
    names = NONEMPTY_STRING_LIST if config.get("multi") else NONEMPTY_STRING
    names(config[key], f"{where}.{key}", fail)
    names(config["dest"], f"{where}.dest", fail)
    if key == "local_path":
        for value in [config[key]] if isinstance(config[key], str) else config[key]:
            if "://" in value:
                fail(f"{where}.local_path", f"expected a host path, got the URL {show(value)}")


def _check_keys(
    value: Any,
    where: str,
    fail: Fail,
    required: Mapping[str, Validator],
    optional: Mapping[str, Validator],
    *,
    open_: bool,
) -> None:
    if not isinstance(value, Mapping):
        fail(where, f"expected an object, got {show(value)}")
    for name in required:
        if name not in value:
            fail(f"{where}.{name}", "required parameter is missing")
    known = {**required, **optional}
    for name, item in value.items():
        if name in known:
            known[name](item, f"{where}.{name}", fail)
        elif not open_:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            accepted = ", ".join(known) or "none"
            fail(f"{where}.{name}", f"unknown parameter; {hint}accepted: {accepted}")
