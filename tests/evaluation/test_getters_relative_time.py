"""rule_relativeTime: OSWorld's relative-date phrases turned into the page's date text.

Expected dates below are worked out by hand from OSWorld's rules (getters/misc.py: the phrase
arithmetic is the same in desktop-env 1.0.2 and the 2026.04 code; "now" and list templates
differ, see getters_time's docstring); when desktop-env 1.0.2's module is installed (see
osworld_ref), a second test checks every phrase on every day of two years against it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import osworld_ref
import pytest

from osworld_gym.errors import (
    EvaluatorError,
    GuestAuthError,
    GuestHTTPError,
    GuestProtocolError,
    GuestTimeoutError,
    GuestUnreachableError,
)
from osworld_gym.evaluation.getters import GETTERS, EvalContext
from osworld_gym.evaluation.getters.relative_time import (
    format_time,
    get_rule_relativeTime,
    get_rule_relativeTime_1_0_2,
    named_zone,
    resolve_relative_time,
)
from osworld_gym.evaluation.metrics import get_metric
from osworld_gym.guest.client import CommandResult
from osworld_gym.task_setup.downloads import AssetCache

ALL = "{DoW}|{Month}|{DayD}|{Year}|{Month0D}|{month}|{MonthFull}|{Day0D}|{MonthD}"
ISO = "{Year}-{Month0D}-{Day0D} {DoW}"

THU = datetime(2026, 3, 5, 15, 30)  # a Thursday
MON_DEC = datetime(2026, 12, 28, 9)  # a Monday, late December
FRI_AUG = datetime(2026, 8, 14, 23, 59)  # a Friday in August
SUN = datetime(2026, 11, 29, 0, 1)  # a Sunday


def single(phrase: str, template: str = ISO) -> dict[str, Any]:
    return {"relativeTime": {"from": phrase}, "expected": {"time": template, "x": 1}}


def span(start: str, end: str) -> dict[str, Any]:
    return {"relativeTime": {"from": start, "to": end}, "expected": {"from": ISO, "to": ISO}}


def test_format_time_fills_each_placeholder_once() -> None:
    assert format_time(ALL, datetime(2026, 3, 5)) == "Thu|Mar|5|2026|03|march|March|05|3"
    assert format_time(ALL, datetime(2026, 11, 22)) == "Sun|Nov|22|2026|11|november|November|22|11"
    assert format_time("{DoW} {DoW} {Day0D}", datetime(2026, 3, 5)) == "Thu {DoW} 05"
    assert format_time("no placeholders", THU) == "no placeholders"


@pytest.mark.parametrize(
    ("now", "phrase", "expected"),
    [
        (THU, "tomorrow", "2026-03-06 Fri"),
        (THU, "5th next month", "2026-04-05 Sun"),
        (THU, "10th next month", "2026-04-10 Fri"),
        (THU, "this month", "2026-03-05 Thu"),
        (THU, "next Monday", "2026-03-09 Mon"),
        (THU, "first monday four months later", "2026-07-06 Mon"),
        (THU, "first monday eight months later", "2026-11-02 Mon"),
        (MON_DEC, "tomorrow", "2026-12-29 Tue"),
        (MON_DEC, "5th next month", "2027-01-05 Tue"),
        (MON_DEC, "next Monday", "2027-01-04 Mon"),  # on a Monday: a week ahead
        (MON_DEC, "first monday four months later", "2027-04-05 Mon"),
        (MON_DEC, "first monday eight months later", "2027-08-02 Mon"),
    ],
)
def test_single_dates(now: datetime, phrase: str, expected: str) -> None:
    rules = single(phrase)
    resolved = resolve_relative_time(rules, now)
    assert resolved["expected"] == {"time": expected, "x": 1}
    assert resolved["relativeTime"] == {"from": phrase}
    assert rules["expected"]["time"] == ISO  # the task's rule is left as it was


@pytest.mark.parametrize(
    ("now", "start", "end", "expected"),
    [
        (THU, "this Saturday", "this Sunday", ("2026-03-07 Sat", "2026-03-08 Sun")),
        (THU, "10th next month", "11th next month", ("2026-04-10 Fri", "2026-04-11 Sat")),
        (THU, "next Monday", "next Friday", ("2026-03-09 Mon", "2026-03-13 Fri")),
        (THU, "next Friday", "next Sunday", ("2026-03-06 Fri", "2026-03-08 Sun")),
        (THU, "next week Friday", "next week Sunday", ("2026-03-13 Fri", "2026-03-15 Sun")),
        (THU, "next week Saturday", "next week Sunday", ("2026-03-14 Sat", "2026-03-15 Sun")),
        (THU, "tomorrow", "next Friday", ("2026-03-06 Fri", "2026-03-06 Fri")),
        (FRI_AUG, "next Friday", "next Sunday", ("2026-08-21 Fri", "2026-08-23 Sun")),
        (FRI_AUG, "next Saturday", "next Sunday", ("2026-08-15 Sat", "2026-08-16 Sun")),
        (FRI_AUG, "tomorrow", "next Friday", ("2026-08-15 Sat", "2026-08-21 Fri")),
        (SUN, "this Saturday", "this Sunday", ("2026-11-28 Sat", "2026-11-29 Sun")),
        (SUN, "next Saturday", "next Sunday", ("2026-12-05 Sat", "2026-12-06 Sun")),
        (SUN, "next Friday", "next Sunday", ("2026-12-04 Fri", "2026-12-06 Sun")),
        (SUN, "tomorrow", "next Sunday", ("2026-11-30 Mon", "2026-12-06 Sun")),
        (SUN, "next week Sunday", "next week Sunday", ("2026-12-06 Sun", "2026-12-06 Sun")),
    ],
)
def test_ranges(now: datetime, start: str, end: str, expected: tuple[str, str]) -> None:
    resolved = resolve_relative_time(span(start, end), now)
    assert (resolved["expected"]["from"], resolved["expected"]["to"]) == expected


def test_split_ranges_fill_day_month_year_fields() -> None:
    rules = {
        "relativeTime": {"from": "next Monday split", "to": "next Friday split"},
        "expected": {
            "puDay": "{DayD}",
            "puMonth": "{MonthFull}",
            "puYear": "{Year}",
            "doDay": "{Day0D}",
            "doMonth": "{Month}",
            "doYear": "{Year}",
            "place": "Zurich",
        },
        "timezone": "Europe/Zurich",
    }
    resolved = resolve_relative_time(rules, MON_DEC)
    assert resolved["expected"] == {
        "puDay": "4",
        "puMonth": "January",
        "puYear": "2027",
        "doDay": "08",
        "doMonth": "Jan",
        "doYear": "2027",
        "place": "Zurich",
    }
    assert resolved["timezone"] == "Europe/Zurich"


@pytest.mark.parametrize(
    ("now", "rules"),
    [
        (FRI_AUG, single("first monday four months later")),  # OSWorld builds month 0
        (datetime(2026, 4, 1), single("first monday eight months later")),
        (THU, single("next Friday")),  # a range phrase alone: OSWorld has no rule for it
        (THU, single("yesterday")),
        (THU, span("5th next month", "11th next month")),
        (THU, span("next Monday", "10th next month")),
    ],
)
def test_phrases_osworld_cannot_resolve_raise(now: datetime, rules: dict[str, Any]) -> None:
    with pytest.raises(EvaluatorError, match="rule_relativeTime"):
        resolve_relative_time(rules, now)


class _NoClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"rule_relativeTime must not reach the desktop ({name})")


class _DesktopClock:
    """A guest client whose ``execute`` answers as given (output text, or an error)."""

    def __init__(self, answer: str | Exception) -> None:
        self.answer, self.commands = answer, []

    def execute(self, command: list[str], **kwargs: Any) -> CommandResult:
        self.commands.append(command)
        if isinstance(self.answer, Exception):
            raise self.answer
        return CommandResult(self.answer, "", 0)


def _ctx(tmp_path: Path, client: Any = None) -> EvalContext:
    return EvalContext(client=client or _NoClient(), task_id="t", cache=AssetCache(tmp_path))  # type: ignore[arg-type]


def test_getter_uses_the_rule_timezone_and_scores_with_check_direct_json_object(
    tmp_path: Path,
) -> None:
    # A timezone in the rule: the host's clock there, the desktop never asked (both references).
    for getter in (get_rule_relativeTime, get_rule_relativeTime_1_0_2):
        for zone in ("America/New_York", "Pacific/Kiritimati", "Etc/GMT+12"):
            config = {"type": "rule_relativeTime", "rules": single("tomorrow", ALL)}
            config["rules"]["timezone"] = zone
            frozen = copy.deepcopy(config)
            before = datetime.now(ZoneInfo(zone))
            resolved = getter(_ctx(tmp_path), config)
            after = datetime.now(ZoneInfo(zone))
            allowed = {format_time(ALL, t + timedelta(days=1)) for t in (before, after)}
            assert resolved["expected"]["time"] in allowed
            assert config == frozen
            page = {"time": resolved["expected"]["time"], "x": 1}
            assert get_metric("check_direct_json_object")(page, resolved) == 1.0
            assert get_metric("check_direct_json_object")({**page, "time": "?"}, resolved) == 0.0


def test_getter_registered_is_the_2026_04_one() -> None:
    assert GETTERS["rule_relativeTime"] is get_rule_relativeTime


def test_without_timezone_the_2026_04_getter_counts_from_the_desktops_clock(
    tmp_path: Path,
) -> None:
    # The desktop is past midnight in Tokyo while the host's day is another one.
    client = _DesktopClock("2026-03-06T00:30:00.123456+09:00\n")
    resolved = get_rule_relativeTime(_ctx(tmp_path, client), {"rules": single("tomorrow")})
    assert resolved["expected"]["time"] == "2026-03-07 Sat"
    code = "from datetime import datetime; print(datetime.now().astimezone().isoformat())"
    assert client.commands == [["python", "-c", code]]
    # An empty or null timezone counts as none there.
    for empty in ("", None):
        rules = single("this month") | {"timezone": empty}
        resolved = get_rule_relativeTime(_ctx(tmp_path, client), {"rules": rules})
        assert resolved["expected"]["time"] == "2026-03-06 Fri"


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "not a time",
        GuestHTTPError("/execute", 500, {"message": "no python"}),
        GuestProtocolError("/execute", "expected JSON"),
    ],
)
def test_without_a_desktop_time_the_2026_04_getter_falls_back_to_the_host(
    tmp_path: Path, answer: str | Exception
) -> None:
    client = _DesktopClock(answer)
    before = datetime.now().astimezone()
    resolved = get_rule_relativeTime(_ctx(tmp_path, client), {"rules": single("this month", ALL)})
    after = datetime.now().astimezone()
    assert resolved["expected"]["time"] in {format_time(ALL, t) for t in (before, after)}
    # A timezone key that names no zone (here empty) means UTC on the way back, as with pytz.
    rules = single("this month", ALL) | {"timezone": ""}
    before = datetime.now(UTC)
    resolved = get_rule_relativeTime(_ctx(tmp_path, client), {"rules": rules})
    after = datetime.now(UTC)
    assert resolved["expected"]["time"] in {format_time(ALL, t) for t in (before, after)}


@pytest.mark.parametrize(
    "error",
    [
        GuestAuthError("/execute", 401, {"message": "token"}),
        GuestUnreachableError("/execute", "gone"),
        GuestTimeoutError("/execute", "slow"),
    ],
)
def test_a_guest_that_is_gone_or_refuses_the_token_raises(tmp_path: Path, error: Exception) -> None:
    with pytest.raises(type(error)):
        get_rule_relativeTime(_ctx(tmp_path, _DesktopClock(error)), {"rules": single("tomorrow")})


def test_the_1_0_2_getter_uses_local_time_never_the_desktop_nor_the_network(
    tmp_path: Path,
) -> None:
    before = datetime.now().astimezone()
    resolved = get_rule_relativeTime_1_0_2(_ctx(tmp_path), {"rules": single("this month", ALL)})
    after = datetime.now().astimezone()
    assert resolved["expected"]["time"] in {format_time(ALL, t) for t in (before, after)}
    # An unknown zone, or a timezone key that names none, falls back to UTC, as in OSWorld.
    for zone in ("Mars/Olympus_Mons", None, ""):
        rules = single("this month", ALL) | {"timezone": zone}
        before = datetime.now(UTC)
        resolved = get_rule_relativeTime_1_0_2(_ctx(tmp_path), {"rules": rules})
        after = datetime.now(UTC)
        assert resolved["expected"]["time"] in {format_time(ALL, t) for t in (before, after)}


def test_time_lists_are_filled_in_2026_04_and_fail_in_1_0_2(tmp_path: Path) -> None:
    rules = single("next Monday", ["{Year}-{Month0D}-{Day0D}", "{DayD}/{MonthD}"])
    resolved = resolve_relative_time(rules, THU)
    assert resolved["expected"]["time"] == ["2026-03-09", "9/3"]
    with pytest.raises(EvaluatorError, match="template must be text"):
        resolve_relative_time(rules, THU, time_lists=False)
    with pytest.raises(EvaluatorError, match="template must be text"):
        get_rule_relativeTime_1_0_2(_ctx(tmp_path), {"rules": rules | {"timezone": "UTC"}})
    with pytest.raises(EvaluatorError, match="template must be text"):
        resolve_relative_time(single("next Monday", ["{Year}", 5]), THU)


def test_zone_names_are_found_as_pytz_finds_them() -> None:
    assert named_zone("america/new_york") == ZoneInfo("America/New_York")
    assert named_zone("utc") == ZoneInfo("UTC")
    assert named_zone("Etc/GMT_plus_5") == ZoneInfo("Etc/GMT+5")
    for unknown in ("Mars/Olympus_Mons", "", None, 5, "America", "../etc"):
        assert named_zone(unknown) == ZoneInfo("UTC")


# --- against OSWorld's own getter -------------------------------------------------------------

SINGLE_PHRASES = [
    "tomorrow",
    "5th next month",
    "10th next month",
    "this month",
    "next Monday",
    "first monday four months later",
    "first monday eight months later",
    "next Friday",
]
RANGES = [
    ("this Saturday", "this Sunday"),
    ("10th next month", "11th next month"),
    ("next Monday", "next Friday"),
    ("next Monday split", "next Friday split"),
    ("next Monday", "next Sunday"),
    ("next Friday", "next Sunday"),
    ("next Saturday", "next Sunday"),
    ("next week Friday", "next week Sunday"),
    ("next week Saturday", "next week Sunday"),
    ("next week Sunday", "next week Sunday"),
    ("tomorrow", "next Friday"),
    ("tomorrow", "next Sunday"),
    ("tomorrow", "next week Sunday"),
    ("tomorrow", "tomorrow"),
]


def _rule_sets() -> list[dict[str, Any]]:
    sets = [single(p, ALL + " " + ALL) for p in SINGLE_PHRASES]
    for start, end in RANGES:
        expected = {"from": ALL, "to": ALL}
        if start.endswith("split"):
            expected = {"puDay": ALL, "puMonth": "{MonthD}", "puYear": "{Year}", "to": ALL}
        if end.endswith("split"):
            expected |= {"doDay": "{DayD}", "doMonth": "{Month}", "doYear": ALL}
            expected.pop("to")
        sets.append({"relativeTime": {"from": start, "to": end}, "expected": expected})
    return sets


def test_same_dates_as_osworld_on_every_day_of_two_years(monkeypatch: pytest.MonkeyPatch) -> None:
    misc = osworld_ref.load("evaluators/getters/misc.py")
    utc = misc.pytz.UTC
    day = datetime(2026, 1, 1, 13, 45)

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return tz.localize(day) if tz is not None else day

    monkeypatch.setattr(misc, "datetime", Frozen)
    monkeypatch.setattr(misc, "print", lambda *a, **k: None, raising=False)
    compared = failed = 0
    for offset in range(730):
        day = datetime(2026, 1, 1, 13, 45) + timedelta(days=offset)
        for rules in _rule_sets():
            rules = rules | {"timezone": "UTC"}  # OSWorld would ask ipapi.co without one
            try:
                theirs = misc.get_rule_relativeTime(None, {"rules": copy.deepcopy(rules)})
            except (KeyError, ValueError, UnboundLocalError, NameError):
                with pytest.raises(EvaluatorError):
                    resolve_relative_time(rules, day.replace(tzinfo=utc))
                failed += 1
                continue
            ours = resolve_relative_time(rules, day.replace(tzinfo=UTC))
            assert ours == theirs, (day, rules["relativeTime"])
            compared += 1
    assert compared > 15_000 and failed >= 730  # "next Friday" alone always fails
