"""The parameters each OSWorld setup step type takes, as checkable data.

OSWorld runs a step ``{"type": T, "parameters": P}`` as ``SetupController._T_setup(**P)``
(``docs/design/task-format.md#setup-steps``): an unknown type or an unexpected parameter fails there
only when the task runs. Checking the same signatures at load time moves that failure to the moment
the task file is read, with a message that names the field.

Getter configs are checked the same way (``GETTER_TYPES``, ``check_getter_parameters()``):
a getter reads its keys only when the task is scored, and there a missing key or a value of the
wrong JSON type (a ``command`` given as an object) raises inside the check, which scores 0 like
a wrong answer. Only the keys the getters read are checked, and other keys pass, as OSWorld's
getters ignore them; getter types this package does not implement are left to their
implementations. ``cloud_file`` takes OSWorld's ``path`` (a URL) or this package's
``local_path`` (a host file beside the task file), never both.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn

__all__ = [
    "GETTER_TYPES",
    "STEP_TYPES",
    "GetterSchema",
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
    except RecursionError:
        # Loading refuses such data first (frozen.MAX_DEPTH); a message must still not fail.
        text = f"<{type(value).__name__} nested too deeply to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expect(description: str, test: Callable[[Any], bool]) -> Validator:
    def validate(value: Any, where: str, fail: Fail) -> None:
        if not test(value):
            fail(where, f"expected {description}, got {show(value)}")

    return validate


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int_text(value: Any) -> bool:
    """An integer, or a string ``int()`` reads as one (OSWorld's getters call ``int()``)."""
    if _is_int(value):
        return True
    if not isinstance(value, str):
        return False
    try:
        int(value)
    except ValueError:
        return False
    return True


def _any(value: Any, where: str, fail: Fail) -> None:
    """A value whose form is the metric's business (a ``rule``'s ``rules``): any JSON."""


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
INTEGER_TEXT = _expect("an integer (or a string holding one)", _is_int_text)
INDEXES = _expect(
    "a list of integers", lambda v: isinstance(v, list) and all(_is_int(i) for i in v)
)
OBJECT_OR_LIST = _expect("an object or a list", lambda v: isinstance(v, Mapping | list))


def _values(validator: Validator) -> Validator:
    """An object whose every value passes ``validator`` (keys are strings in JSON already)."""

    def validate(value: Any, where: str, fail: Fail) -> None:
        OBJECT(value, where, fail)
        for key, item in value.items():
            validator(item, f"{where}.{key}", fail)

    return validate


def _choice(*choices: str) -> Validator:
    """One of a few strings, e.g. ``url_dashPart``'s ``returnType``."""
    names = " or ".join(json.dumps(c) for c in choices)
    return _expect(names, lambda v: isinstance(v, str) and v in choices)


def _is_selector(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (_is_str_list(value) and len(value) > 0)


def _list_of(validator: Validator) -> Validator:
    """A list whose every item passes ``validator``."""

    def validate(value: Any, where: str, fail: Fail) -> None:
        LIST(value, where, fail)
        for index, item in enumerate(value):
            validator(item, f"{where}[{index}]", fail)

    return validate


def _objects(required: Mapping[str, Validator], optional: Mapping[str, Validator]) -> Validator:
    """A list of objects with the given keys (e.g. ``download``'s ``files``)."""

    def validate(value: Any, where: str, fail: Fail) -> None:
        LIST(value, where, fail)
        for index, item in enumerate(value):
            _check_keys(item, f"{where}[{index}]", fail, required, optional, open_=False)

    return validate


def _fields(
    required: Mapping[str, Validator], optional: Mapping[str, Validator] | None = None
) -> Validator:
    """An object with these keys checked and others allowed (nested getter settings)."""

    def validate(value: Any, where: str, fail: Fail) -> None:
        _check_keys(value, where, fail, required, optional or {}, open_=True)

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
        step_type: The step's ``type`` (already known to be in ``STEP_TYPES``).
        parameters: The step's ``parameters`` value.
        where: Field path of ``parameters``, e.g. ``config[2].parameters``.
        fail: Called with a field path and reason on the first problem.
    """
    schema = STEP_TYPES[step_type]
    _check_keys(parameters, where, fail, schema.required, schema.optional, open_=schema.open)


ConfigCheck = Callable[[Mapping[str, Any], str, Fail], None]
"""Checks a whole getter config, for rules that tie keys together (``multi`` and ``path``)."""


@dataclass(frozen=True)
class GetterSchema:
    """The keys one getter type reads from its config (``type`` aside).

    Keys not listed are allowed: OSWorld's getters ignore them, and its task files carry a
    few (notes, settings of other getter versions).

    Attributes:
        required: Keys the getter cannot do without, with their validators.
        optional: Keys it reads when present.
        check: A check of the whole config, run after the keys' own (``None``: none).
    """

    required: Mapping[str, Validator] = field(default_factory=dict)
    optional: Mapping[str, Validator] = field(default_factory=dict)
    check: ConfigCheck | None = None


def _file_names(key: str) -> ConfigCheck:
    """``key`` and ``dest``: one name each, or (with ``multi``) parallel lists of names."""

    def check(config: Mapping[str, Any], where: str, fail: Fail) -> None:
        # OSWorld tests multi for truth; "true" as a string is accepted by _flag too.
        names = NONEMPTY_STRING_LIST if config.get("multi") else NONEMPTY_STRING
        names(config[key], f"{where}.{key}", fail)
        names(config["dest"], f"{where}.dest", fail)

    return check


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
    _file_names(key)(config, where, fail)
    if key == "local_path":
        for value in [config[key]] if isinstance(config[key], str) else config[key]:
            if "://" in value:
                fail(f"{where}.local_path", f"expected a host path, got the URL {show(value)}")


def _check_dash_part(config: Mapping[str, Any], where: str, fail: Fail) -> None:
    """``url_dashPart`` returns ``{key: part}`` for ``"json"``: it needs the ``key`` then."""
    if config["returnType"] == "json" and "key" not in config:
        fail(f"{where}.key", 'required when returnType is "json" (the key of the part)')


_DEST = MappingProxyType({"dest": NONEMPTY_STRING})
_PREFIX = MappingProxyType({"goto_prefix": STRING})
_COMMAND_GETTER = GetterSchema({"command": COMMAND}, {"shell": _flag})
_SLIDE_MEDIA = GetterSchema(
    {"ppt_file_path": NONEMPTY_STRING, "slide_index": INTEGER_TEXT, "dest": NONEMPTY_STRING}
)
_URL_PARSE = GetterSchema({"parse_keys": STRING_LIST}, _PREFIX)
_STRING_VALUES = _values(STRING)

GETTER_TYPES: Mapping[str, GetterSchema] = MappingProxyType(
    {
        "vm_file": GetterSchema(
            {"path": _any, "dest": _any},  # their form depends on multi: _file_names
            {"multi": _flag, "gives": INDEXES, "time_suffix": _flag, "time_format": STRING},
            _file_names("path"),
        ),
        "cloud_file": GetterSchema({}, {"multi": _flag, "gives": INDEXES}, _check_cloud_file),
        "rule": GetterSchema({"rules": _any}),
        "rule_relativeTime": GetterSchema(
            {
                "rules": _fields(
                    {
                        "relativeTime": _fields({"from": NONEMPTY_STRING}, {"to": STRING}),
                        "expected": OBJECT,
                    },
                    {"timezone": STRING},
                )
            }
        ),
        "vm_command_line": _COMMAND_GETTER,
        "vm_command_error": _COMMAND_GETTER,
        "cache_file": GetterSchema({"path": NONEMPTY_STRING}),
        "list_directory": GetterSchema({"path": NONEMPTY_STRING}),
        "vm_window_size": GetterSchema({"app_class_name": NONEMPTY_STRING}),
        "vm_wallpaper": GetterSchema({}, _DEST),
        "content_from_vm_file": GetterSchema(
            {"path": NONEMPTY_STRING}, {"file_type": STRING, "file_content": STRING}
        ),
        "vlc_config": GetterSchema({}, _DEST),
        "vlc_playing_info": GetterSchema({}, _DEST),
        "gimp_config_file": GetterSchema({"file_name": NONEMPTY_STRING}, _DEST),
        "cookie_data": GetterSchema({}, _DEST),
        "history": GetterSchema({}, _DEST),
        "active_url_from_accessTree": GetterSchema({}, _PREFIX),
        "active_tab_info": GetterSchema({}, _PREFIX),
        "active_tab_url_parse": GetterSchema(
            {"parse_keys": STRING_LIST},
            {**_PREFIX, "replace": _STRING_VALUES, "split_list": _flag},
        ),
        "url_path_parse": _URL_PARSE,
        "url_dashPart": GetterSchema(
            {"partIndex": INTEGER_TEXT, "returnType": _choice("string", "json")},
            {**_PREFIX, "needDeleteId": _flag, "key": STRING},
            _check_dash_part,
        ),
        "page_info": GetterSchema({"url": NONEMPTY_STRING}),
        "info_from_website": GetterSchema(
            {"url": NONEMPTY_STRING},
            {
                "infos": _list_of(
                    _fields(
                        {"selector": _expect("a selector or a list of them", _is_selector)},
                        {"action": STRING, "attribute": STRING},
                    )
                ),
                "backups": _any,
            },
        ),
        "pdf_from_url": GetterSchema({"path": NONEMPTY_STRING, "dest": NONEMPTY_STRING}),
        "active_tab_html_parse": GetterSchema(
            {"category": STRING},
            {
                **_PREFIX,
                # Index -> key for category "class", a list of texts for "class&url".
                "class_multiObject": _values(OBJECT_OR_LIST),
                "class_multiObject_child": _values(_STRING_VALUES),
                "class_multiObject_only_child": _values(_STRING_VALUES),
                "class_multiObject_search_exist": _values(STRING_LIST),
                "class_multiObject_li": _values(STRING_LIST),
                "class_singleObject": _STRING_VALUES,
                "labelObject": _STRING_VALUES,
                "xpathObject": _STRING_VALUES,
                "inputObject": _STRING_VALUES,
                "url_include_expected": STRING_LIST,
                "url_include_expected_multichoice": _STRING_VALUES,
            },
        ),
        "gotoRecreationPage_and_get_html_content": GetterSchema(
            {}, {"selector": STRING, "class": STRING, "order": INTEGER_TEXT}
        ),
        "audio_in_slide": _SLIDE_MEDIA,
        "background_image_in_slide": _SLIDE_MEDIA,
        "vscode_config": GetterSchema(
            {
                "vscode_extension_command": NONEMPTY_STRING,
                "path": NONEMPTY_STRING,
                "dest": NONEMPTY_STRING,
            }
        ),
    }
)
"""The getter types whose config keys are checked at load time, with those keys.

Getters of other types (those that read no keys, and OSWorld's that this package does not
implement, such as ``googledrive_file``) are not checked.
"""


def check_getter_parameters(
    getter_type: str, config: Mapping[str, Any], where: str, fail: Fail
) -> None:
    """Check a getter config against ``GETTER_TYPES``; other getter types pass.

    Args:
        getter_type: The getter's ``type``.
        config: The getter config (an object, ``type`` included or not).
        where: Field path of the config, e.g. ``evaluator.expected[1]``.
        fail: Called with a field path and reason on the first problem.
    """
    schema = GETTER_TYPES.get(getter_type)
    if schema is None:
        return
    keys = {name: value for name, value in config.items() if name != "type"}
    _check_keys(keys, where, fail, schema.required, schema.optional, open_=True)
    if schema.check is not None:
        schema.check(config, where, fail)


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
