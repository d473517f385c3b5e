"""The ``rule_relativeTime`` getter: a rule whose dates are relative to today.

OSWorld's Chrome flight and rental tasks name dates such as ``"tomorrow"`` or ``"5th next
month"``; the getter turns them into text in the page's format and returns the rule for
``check_direct_json_object``. The rule looks like::

    {"relativeTime": {"from": "5th next month"},            # "to" optional
     "expected": {"time": "{DoW}, {Month} {Day0D}, {Year}", ...},
     "timezone": "America/New_York"}                          # optional

With only ``from``, ``expected["time"]`` is formatted (a list of templates, each one, under
``osworld-2026.04``); with ``to`` as well, ``expected["from"]`` and ``expected["to"]`` are
(``"next Monday split"`` and ``"next Friday split"`` fill ``puDay``/``puMonth``/``puYear`` and
``doDay``/``doMonth``/``doYear`` instead). Each placeholder is replaced once, in OSWorld's order.

The phrases and their day arithmetic are OSWorld's (``getters/misc.py``, the same in both
references), quirks included, so the expected text is the one OSWorld computes on the same day:
``"next Monday"`` is always in the coming week (a week ahead on a Monday), ``"this Saturday"``
may lie in the past on a Sunday, and ``"first monday four/eight months later"`` fails in
August/April as OSWorld's does (it builds month 0). A phrase OSWorld does not handle in that
position raises ``EvaluatorError`` (OSWorld fails there too); the
evaluator scores the check 0.

Which "now" the dates count from depends on the evaluator reference:

- ``osworld-2026.04`` (``get_rule_relativeTime()``): a non-empty ``timezone`` in the rule
  means the host's clock in that zone; otherwise the desktop's own clock and zone (Python's
  ``datetime.now().astimezone()`` run in the desktop, as OSWorld's getter does), since
  that is the "today" the agent sees. When the desktop cannot answer with a time, the 1.0.2
  rule below applies.
- ``osworld-1.0.2`` (``get_rule_relativeTime_1_0_2()``): the host's clock, in the rule's
  ``timezone`` when the rule has that key.

A ``timezone`` that names no zone (``null`` and ``""`` included) means UTC, as with OSWorld's
pytz (names are matched case-insensitively, as pytz does). One difference: with no
``timezone`` key and no desktop time, OSWorld asks ``ipapi.co`` where the host is (its IP's time
zone, UTC when the query fails); this getter never calls the network and uses the host's local
time zone instead, which is the same zone wherever the host's clock is set to where it runs.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from osworld_gym.errors import EvaluatorError, GuestAuthError, GuestHTTPError, GuestProtocolError

if TYPE_CHECKING:
    from osworld_gym.evaluation.getters.base import EvalContext

logger = logging.getLogger(__name__)

_DOW = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)

# Phrases OSWorld knows; only "tomorrow" is a plain day offset, the rest have their own rules.
_DAY_OFFSETS = {"tomorrow": 1}

# What OSWorld's 2026.04 getter runs in the desktop (``python -c``) to learn the desktop's
# time: local wall clock with its UTC offset, ISO 8601.
_DESKTOP_NOW_CODE = "from datetime import datetime; print(datetime.now().astimezone().isoformat())"


def format_time(template: str, day: datetime) -> str:
    """Fill OSWorld's date placeholders of ``template`` from ``day`` (the first of each only).

    Placeholders, replaced in this order: ``{DoW}`` (``Mon``), ``{Month}`` (``Jan``),
    ``{DayD}`` (``5``), ``{Year}`` (``2026``), ``{Month0D}`` (``01``), ``{month}``
    (``january``), ``{MonthFull}`` (``January``), ``{Day0D}`` (``05``), ``{MonthD}`` (``1``).

    Raises:
        EvaluatorError: ``template`` is not text (OSWorld's getter fails there too).

    Example:
        >>> format_time("{DoW}, {Month} {Day0D}, {Year}", datetime(2026, 3, 5))
        'Thu, Mar 05, 2026'
    """
    if not isinstance(template, str):
        raise EvaluatorError(f"rule_relativeTime: a date template must be text, got {template!r}")
    full = _MONTHS[day.month - 1]
    replacements = (
        ("{DoW}", _DOW[day.weekday()]),
        ("{Month}", full[:3]),
        ("{DayD}", str(day.day)),
        ("{Year}", str(day.year)),
        ("{Month0D}", f"{day.month:02d}"),
        ("{month}", full.lower()),
        ("{MonthFull}", full),
        ("{Day0D}", f"{day.day:02d}"),
        ("{MonthD}", str(day.month)),
    )
    for placeholder, value in replacements:
        template = template.replace(placeholder, value, 1)
    return template


def _nth_next_month(now: datetime, day: int) -> datetime:
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return datetime(year, month, day, tzinfo=now.tzinfo)


def _first_monday_later(now: datetime, months: int) -> datetime:
    # OSWorld's arithmetic: month (m + n) % 12, next year from month 12 - n + 1 on. It gives
    # month 0 for m == 12 - n (no such date: OSWorld's getter raises), kept as a failure.
    year = now.year + 1 if now.month >= 13 - months else now.year
    month = (now.month + months) % 12
    if month == 0:
        raise EvaluatorError(
            f"rule_relativeTime: 'first monday {months} months later' from month {now.month} "
            "names month 0 in OSWorld's rule (it fails on this date too)"
        )
    first = datetime(year, month, 1, tzinfo=now.tzinfo)
    return first + timedelta(days=(7 - first.weekday()) % 7)


def _in_days(now: datetime, days: int) -> datetime:
    return now + timedelta(days=days)


def _next_monday(now: datetime) -> datetime:
    return _in_days(now, 7 - now.weekday())


def _weekend_day(now: datetime, weekday: int) -> datetime:
    # "next Friday"/"next Saturday" as a start: this week's, or next week's from that day on.
    if now.weekday() < weekday:
        return _in_days(now, weekday - now.weekday())
    if now.weekday() == weekday:
        return _in_days(now, 7)
    return _in_days(now, 7 - now.weekday() + weekday)


def _week_after_next_monday(now: datetime, weekday: int) -> datetime:
    return _in_days(now, 7 - now.weekday() + weekday)


_Rule = Callable[[datetime], datetime]

# "from" with no "to": the phrases OSWorld resolves alone.
_SINGLE: dict[str, _Rule] = {
    "5th next month": lambda now: _nth_next_month(now, 5),
    "10th next month": lambda now: _nth_next_month(now, 10),
    "this month": lambda now: now,
    "next Monday": _next_monday,
    "first monday four months later": lambda now: _first_monday_later(now, 4),
    "first monday eight months later": lambda now: _first_monday_later(now, 8),
}

# "from" of a range.
_RANGE_FROM: dict[str, _Rule] = {
    "this Saturday": lambda now: _in_days(now, 5 - now.weekday()),
    "10th next month": lambda now: _nth_next_month(now, 10),
    "next Monday": _next_monday,
    "next Monday split": _next_monday,
    "next Friday": lambda now: _weekend_day(now, 4),
    "next Saturday": lambda now: _weekend_day(now, 5),
    "next week Friday": lambda now: _week_after_next_monday(now, 4),
    "next week Saturday": lambda now: _week_after_next_monday(now, 5),
    "next week Sunday": lambda now: _week_after_next_monday(now, 6),
}


def _range_to(phrase: str, from_phrase: str, start: datetime, now: datetime) -> datetime:
    """The end date of a range, which for some phrases depends on the start."""
    if phrase in _DAY_OFFSETS:
        return _in_days(now, _DAY_OFFSETS[phrase])
    if phrase == "this Sunday":
        return _in_days(now, 6 - now.weekday())
    if phrase == "11th next month":
        return _nth_next_month(now, 11)
    if phrase in ("next Friday", "next Friday split"):
        if from_phrase in ("next Monday", "next Monday split"):
            return start + timedelta(days=4)  # the Friday of that Monday's week
        days = 4 - now.weekday() if now.weekday() < 4 else 6 - now.weekday() + 5
        return _in_days(now, days)
    if phrase == "next Sunday":
        if from_phrase in ("next Friday", "next Saturday"):
            return start + timedelta(days=6 - start.weekday())  # the same weekend
        return _in_days(now, 6 - now.weekday() if now.weekday() < 6 else 7)
    if phrase == "next week Sunday":
        if from_phrase in ("next week Friday", "next week Saturday"):
            return start + timedelta(days=6 - start.weekday())
        return _week_after_next_monday(now, 6)
    raise EvaluatorError(f"rule_relativeTime: OSWorld has no rule for 'to' {phrase!r}")


def _resolve(phrase: str, table: Mapping[str, _Rule], now: datetime, where: str) -> datetime:
    if phrase in _DAY_OFFSETS:
        return _in_days(now, _DAY_OFFSETS[phrase])
    rule = table.get(phrase)
    if rule is None:
        raise EvaluatorError(f"rule_relativeTime: OSWorld has no rule for {where} {phrase!r}")
    return rule(now)


def resolve_relative_time(
    rules: Mapping[str, Any], now: datetime, *, time_lists: bool = True
) -> dict[str, Any]:
    """The rule with its ``expected`` dates filled in for the day ``now``.

    Args:
        rules: The getter config's ``rules`` (``relativeTime``, ``expected``, optional
            ``timezone``); not modified.
        now: The current time, in the zone whose calendar day counts.
        time_lists: Whether ``expected["time"]`` may be a list of templates, each filled in
            (OSWorld 2026.04); desktop-env 1.0.2's getter fails on a list.

    Returns:
        A copy of ``rules`` whose ``expected`` date fields hold formatted dates.

    Raises:
        EvaluatorError: A phrase OSWorld does not resolve in that position, a date OSWorld's
            arithmetic cannot build, or a template that is not text (a list for
            ``time_lists=False``).
        KeyError: ``relativeTime`` or a template field is missing.

    Example:
        >>> rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{MonthD}/{DayD}"}}
        >>> resolve_relative_time(rules, datetime(2026, 12, 31))["expected"]["time"]
        '1/1'
    """
    out = copy.deepcopy(dict(rules))
    relative = out["relativeTime"]
    expected = out["expected"]
    start_phrase = relative["from"]
    if "to" not in relative:
        day = _resolve(start_phrase, _SINGLE, now, "'from'")
        template = expected["time"]
        if isinstance(template, list) and time_lists:
            # One task (chrome/82bc8d6a) lists the date among accepted values for
            # check_direct_json_object's expect_in_result.
            expected["time"] = [format_time(t, day) for t in template]
        else:
            expected["time"] = format_time(template, day)
        return out
    end_phrase = relative["to"]
    start = _resolve(start_phrase, _RANGE_FROM, now, "'from' of a range")
    end = _range_to(end_phrase, start_phrase, start, now)
    if start_phrase == "next Monday split":
        for key in ("puDay", "puMonth", "puYear"):
            expected[key] = format_time(expected[key], start)
    else:
        expected["from"] = format_time(expected["from"], start)
    if end_phrase == "next Friday split":
        for key in ("doDay", "doMonth", "doYear"):
            expected[key] = format_time(expected[key], end)
    else:
        expected["to"] = format_time(expected["to"], end)
    return out


@functools.cache
def _zone_names_by_lower() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}


def named_zone(name: object) -> tzinfo:
    """The time zone ``name`` names, as pytz finds it; UTC when it names none.

    Like ``pytz.timezone``, which OSWorld uses: case-insensitive, and pytz's old
    ``_plus_``/``_minus_`` spellings accepted; anything else (``None``, ``""``, a number)
    is an unknown zone, for which OSWorld's getter logs an error and uses UTC.

    Example:
        >>> named_zone("america/new_york"), named_zone(None)
        (zoneinfo.ZoneInfo(key='America/New_York'), zoneinfo.ZoneInfo(key='UTC'))
    """
    if not isinstance(name, str):
        logger.error("rule_relativeTime: timezone %r is no zone name, using UTC", name)
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        pass  # maybe a spelling pytz accepts; the database is listed only then
    unmunged = name.replace("_plus_", "+").replace("_minus_", "-")
    key = _zone_names_by_lower().get(unmunged.lower())
    if key is not None:
        return ZoneInfo(key)
    logger.error("rule_relativeTime: unknown timezone %r, using UTC", name)
    return ZoneInfo("UTC")


def rule_timezone(rules: Mapping[str, Any]) -> tzinfo:
    """The zone of the rule's ``timezone`` key (UTC when unknown), else the host's local zone.

    OSWorld (both references) takes the key whenever it is there, even ``null`` or empty
    (pytz then finds no zone: UTC); without it, it asks an IP geolocation service, for which
    this getter uses the host's local zone (no network).
    """
    if "timezone" not in rules:
        return datetime.now().astimezone().tzinfo or timezone.utc
    return named_zone(rules["timezone"])


def desktop_now(ctx: EvalContext) -> datetime | None:
    """The desktop's current time in its own time zone; None when the desktop cannot tell.

    Runs the Python line OSWorld's 2026.04 getter runs in the desktop with ``python -c``,
    without the ``import pyautogui`` its controller puts before every command: the clock needs
    no display, and a desktop whose ``python`` lacks pyautogui still tells its time. As there,
    no client, an error answer, no output or output that is no ISO time give None (the caller
    then falls back to the host's clock). A guest that cannot be reached, does not answer in
    time or refuses the token raises: that is no desktop to score (OSWorld's controller gives
    up and falls back there).
    """
    client = getattr(ctx, "client", None)
    if client is None:
        return None
    try:
        result = client.execute(["python", "-c", _DESKTOP_NOW_CODE])
    except GuestAuthError:
        raise
    except (GuestHTTPError, GuestProtocolError) as e:
        logger.warning("rule_relativeTime: the desktop's time could not be read: %s", e)
        return None
    text = (result.output or "").strip()
    if not text:
        logger.warning(
            "rule_relativeTime: the desktop printed no time (%s)", (result.error or "").strip()
        )
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        logger.warning("rule_relativeTime: the desktop's time %r is not ISO 8601", text[:200])
        return None


def rule_now(ctx: EvalContext, rules: Mapping[str, Any]) -> datetime:
    """The "now" OSWorld 2026.04 counts from (the module doc's first rule)."""
    name = rules.get("timezone")
    if name:  # any non-empty value, as OSWorld tests it; an unknown one means UTC
        return datetime.now(named_zone(name))
    now = desktop_now(ctx)
    if now is not None:
        return now
    return datetime.now(rule_timezone(rules))


def get_rule_relativeTime(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's ``rules`` with dates relative to now filled in (OSWorld 2026.04).

    "Now" is the host's clock in a non-empty ``timezone`` of the rule, else the desktop's
    clock in the desktop's zone (see the module doc); ``expected["time"]`` may be a list.
    """
    rules = config["rules"]
    now = rule_now(ctx, rules)
    resolved = resolve_relative_time(rules, now)
    logger.info("rule_relativeTime %s on %s: %s", rules["relativeTime"], now.date(), resolved)
    return resolved


def get_rule_relativeTime_1_0_2(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's ``rules`` with dates relative to now filled in (desktop-env 1.0.2).

    "Now" is the host's clock in the rule's ``timezone`` (the host's local zone without the
    key); the desktop is never asked. A list ``expected["time"]`` raises, as 1.0.2 fails on it.
    """
    rules = config["rules"]
    now = datetime.now(rule_timezone(rules))
    resolved = resolve_relative_time(rules, now, time_lists=False)
    logger.info("rule_relativeTime %s on %s: %s", rules["relativeTime"], now.date(), resolved)
    return resolved


TIME_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "rule_relativeTime": get_rule_relativeTime,
}
