"""rule_relativeTime: OSWorld's relative-date phrases turned into the page's date text.

Expected dates below are worked out by hand from OSWorld's rules (desktop_env 1.0.2,
getters/misc.py); when OSWorld's module is installed (see osworld_ref), a second test checks
every phrase on every day of two years against it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import osworld_ref
import pytest

from osworld_gym.downloads import AssetCache
from osworld_gym.errors import EvaluatorError
from osworld_gym.evaluation.getters import GETTERS, EvalContext
from osworld_gym.evaluation.getters_time import format_time, resolve_relative_time
from osworld_gym.evaluation.metrics import get_metric

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


def _ctx(tmp_path: Path) -> EvalContext:
    return EvalContext(client=_NoClient(), task_id="t", cache=AssetCache(tmp_path))  # type: ignore[arg-type]


def test_getter_uses_the_rule_timezone_and_scores_with_check_direct_json_object(
    tmp_path: Path,
) -> None:
    getter = GETTERS["rule_relativeTime"]
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


def test_getter_without_timezone_uses_local_time_never_the_network(tmp_path: Path) -> None:
    getter = GETTERS["rule_relativeTime"]
    before = datetime.now().astimezone()
    resolved = getter(_ctx(tmp_path), {"rules": single("this month", ALL)})
    after = datetime.now().astimezone()
    assert resolved["expected"]["time"] in {format_time(ALL, t) for t in (before, after)}
    # An unknown zone falls back to UTC, as in OSWorld.
    rules = single("this month", ALL) | {"timezone": "Mars/Olympus_Mons"}
    before = datetime.now(UTC)
    resolved = getter(_ctx(tmp_path), {"rules": rules})
    after = datetime.now(UTC)
    assert resolved["expected"]["time"] in {format_time(ALL, t) for t in (before, after)}


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
