"""Reference ``osworld-2026.04``: ``rule_relativeTime``, three metrics and the FAIL/DONE dicts.

OSWorld's code of April 2026 (github.com/ljxpython/OSWorldUse f6cee71) is not on PyPI, so these
cases are not run against it: each expected value below was worked out by hand from reading
that code, on the real task files' configs and options where they exist (``parity_harness``
reads them at collection time; none are copied here). Where the code changed since
desktop-env 1.0.2, the ``_1_0_2`` variant is checked to keep the older result.

- ``get_rule_relativeTime`` (``getters/misc.py``): without a non-empty ``timezone`` in the rule,
  "now" is the desktop's clock, read by running Python in the desktop (1.0.2: the host's clock
  in the IP's zone, ours the host's local zone); ``expected["time"]`` may be a list, each
  template filled (1.0.2 fails on a list). The phrase arithmetic did not change.
- ``check_structure_sim_with_threshold`` (``metrics/gimp.py``) and ``check_play_and_exit``
  (``metrics/vlc.py``): new since 1.0.2.
- ``check_file_exists`` (``metrics/gimp.py``, the one OSWorld's package exports): unchanged.
- ``DesktopEnv.step``/``evaluate``: a dict action whose ``action_type`` is FAIL, DONE or WAIT
  now counts as the string does (ends the episode; a last FAIL decides infeasible tasks).

The two instants used for the dates: the desktop's clock at 22:00 on Tuesday 31 March 2026 in
New York (UTC-4), while the host's clock is at 02:00 UTC on Wednesday 1 April, its local zone
UTC. Every real rule without a ``timezone`` then gives another text on each side.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from getter_clock import Clock, our_clock
from osworld_data import needs_osworld_tasks
from parity_harness import OSWorld, assert_same_score, real_checks, real_rules

from osworld_gym.actions import parse_action
from osworld_gym.episode import terminal_kind
from osworld_gym.errors import EvaluatorError, GuestHTTPError, GuestUnreachableError
from osworld_gym.evaluation.getters import EvalContext, getters_for
from osworld_gym.evaluation.getters.relative_time import (
    get_rule_relativeTime,
    get_rule_relativeTime_1_0_2,
)
from osworld_gym.evaluation.metrics import app_config, gimp
from osworld_gym.evaluation.metrics.registry import METRICS, metrics_for
from osworld_gym.evaluation.references import OSWORLD_1_0_2, OSWORLD_2026_04
from osworld_gym.guest.client import CommandResult
from osworld_gym.task_setup.downloads import AssetCache

pytestmark = pytest.mark.parity

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")

DESKTOP_NOW = "2026-03-31T22:00:00.250000-04:00"  # Tuesday evening in New York
HOST_NOW = datetime.fromisoformat("2026-04-01T02:00:00+00:00")  # Wednesday in UTC
VM_NOW_CODE = "from datetime import datetime; print(datetime.now().astimezone().isoformat())"


# --- rule_relativeTime: the real rules and what each reference makes of them -------------------


def _real_relative_rules() -> dict[str, list[dict[str, Any]]]:
    """Task id prefix -> the ``rules`` of its ``rule_relativeTime`` expected getters."""
    found: dict[str, list[dict[str, Any]]] = {}
    for task, _, expected, _ in real_checks("check_direct_json_object"):
        if isinstance(expected, dict) and expected.get("type") == "rule_relativeTime":
            found.setdefault(task, []).append(expected["rules"])
    return found


def _dates(rules: dict[str, Any]) -> dict[str, Any]:
    """The ``expected`` fields that hold date templates (the rest are copied as they are)."""
    return {k: v for k, v in rules["expected"].items() if "{" in str(v)}


# Rules without a timezone. 2026.04 counts from the desktop's day (Tue 31 March); 1.0.2 from
# the host's (Wed 1 April, UTC), where "first monday eight months later" builds month 0 and a
# list template fails.
NO_ZONE_2026_04 = {
    "368d9ba4": [{"time": "march-weather"}],  # this month
    "47543840": [  # 10th to 11th next month
        {"from": "Fri, Apr 10, 12:00 PM", "to": "Sat, Apr 11, 12:00 PM"}
    ],
    "6c4c23a1": [{"time": "Sun, Apr 05, 2026"}],  # 5th next month
    "82bc8d6a": [{"time": ["2026-04-06"]}],  # next Monday, a list template
    "da46d875": [{"time": "November 02, 10:15 AM"}],  # first monday eight months later
    "f79439ad": [{"time": "2026-04-10"}],  # 10th next month
    "fc6d8143": [{"time": "Wed, Apr 01, 2026"}],  # tomorrow
}
NO_ZONE_1_0_2 = {
    "368d9ba4": [{"time": "april-weather"}],
    "47543840": [{"from": "Sun, May 10, 12:00 PM", "to": "Mon, May 11, 12:00 PM"}],
    "6c4c23a1": [{"time": "Tue, May 05, 2026"}],
    "82bc8d6a": [EvaluatorError],
    "da46d875": [EvaluatorError],
    "f79439ad": [{"time": "2026-05-10"}],
    "fc6d8143": [{"time": "Thu, Apr 02, 2026"}],
}
# Rules with a timezone: the host's clock in that zone under both references (New York: Tue
# 31 March 22:00; Zurich: Wed 1 April 04:00), the desktop never asked.
WITH_ZONE = {
    "b7895e80": [
        {"from": "Sat, Apr 11", "to": "Sun, Apr 12"},  # next week Saturday/Sunday
        {"from": "Check InFri, Apr 10", "to": "Check OutSun, Apr 12"},  # next week Fri/Sun
    ],
    "1704f00f": [  # next Monday split / next Friday split
        {
            "puDay": "6",
            "puMonth": "4",
            "puYear": "2026",
            "doDay": "10",
            "doMonth": "4",
            "doYear": "2026",
        }
    ],
}


class _Desktop:
    """A guest client that answers OSWorld's time query with ``answer`` (or raises it)."""

    def __init__(self, answer: str | Exception | None = DESKTOP_NOW) -> None:
        self.answer, self.asked = answer, 0

    def execute(self, command: list[str], **kwargs: Any) -> CommandResult:
        assert command == ["python", "-c", VM_NOW_CODE]  # the line OSWorld's getter runs
        self.asked += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return CommandResult(f"{self.answer}\n" if self.answer else "", "", 0)


@pytest.fixture
def host_clock() -> Iterator[None]:
    """The host's clock at ``HOST_NOW``, its local zone UTC, for our getters."""
    with our_clock(Clock(HOST_NOW)):
        yield


def _ctx(tmp_path: Path, client: Any) -> EvalContext:
    return EvalContext(client=client, task_id="t", cache=AssetCache(tmp_path))


def _run(getter: Any, ctx: EvalContext, rules: dict[str, Any]) -> Any:
    config = {"type": "rule_relativeTime", "rules": copy.deepcopy(rules)}
    try:
        resolved = getter(ctx, config)
    except EvaluatorError:
        return EvaluatorError
    assert config["rules"] == rules  # the task's config is left as it was
    assert {k: v for k, v in resolved.items() if k != "expected"} == {
        k: v for k, v in rules.items() if k != "expected"
    }
    kept = {k: v for k, v in rules["expected"].items() if k not in _dates(rules)}
    assert {k: resolved["expected"][k] for k in kept} == kept
    return {k: resolved["expected"][k] for k in _dates(rules)}


@needs_osworld_tasks
def test_the_real_rules_are_the_ones_worked_out_here() -> None:
    rules = _real_relative_rules()
    assert set(rules) == set(NO_ZONE_2026_04) | set(WITH_ZONE)
    assert sum(map(len, rules.values())) == 10
    for task in NO_ZONE_2026_04:
        assert all("timezone" not in r for r in rules[task])
    for task in WITH_ZONE:
        assert all(r.get("timezone") for r in rules[task])


@needs_osworld_tasks
@pytest.mark.usefixtures("host_clock")
def test_real_rules_without_timezone_count_from_the_desktops_day(tmp_path: Path) -> None:
    rules = _real_relative_rules()
    for task, expected in NO_ZONE_2026_04.items():
        desktop = _Desktop()
        got = [_run(get_rule_relativeTime, _ctx(tmp_path, desktop), r) for r in rules[task]]
        assert got == expected, task
        assert desktop.asked == len(rules[task])
        # 1.0.2: the host's day; the desktop is never asked.
        desktop = _Desktop()
        got = [_run(get_rule_relativeTime_1_0_2, _ctx(tmp_path, desktop), r) for r in rules[task]]
        assert got == NO_ZONE_1_0_2[task], task
        assert desktop.asked == 0


@needs_osworld_tasks
@pytest.mark.usefixtures("host_clock")
def test_real_rules_with_timezone_use_the_hosts_clock_there_in_both(tmp_path: Path) -> None:
    rules = _real_relative_rules()
    for task, expected in WITH_ZONE.items():
        for getter in (get_rule_relativeTime, get_rule_relativeTime_1_0_2):
            desktop = _Desktop()
            got = [_run(getter, _ctx(tmp_path, desktop), r) for r in rules[task]]
            assert got == expected, (task, getter.__name__)
            assert desktop.asked == 0


@needs_osworld_tasks
@pytest.mark.usefixtures("host_clock")
@pytest.mark.parametrize(
    "answer",
    [
        None,  # nothing printed
        "Tue Mar 31 22:00:00 EDT 2026",  # not ISO 8601: fromisoformat fails
        GuestHTTPError("/execute", 500, {"status": "error", "message": "no python"}),
    ],
    ids=["no-output", "not-iso", "error-answer"],
)
def test_without_a_desktop_time_2026_04_falls_back_to_the_hosts_day(
    tmp_path: Path, answer: str | Exception | None
) -> None:
    """OSWorld's fallback is the 1.0.2 rule; only the list template still differs."""
    rules = _real_relative_rules()
    for task, older in NO_ZONE_1_0_2.items():
        desktop = _Desktop(answer)
        got = [_run(get_rule_relativeTime, _ctx(tmp_path, desktop), r) for r in rules[task]]
        # next Monday from Wed 1 April is 6 April, the same day as from Tue 31 March
        assert got == (NO_ZONE_2026_04[task] if task == "82bc8d6a" else older), task
        assert desktop.asked == len(rules[task])


@needs_osworld_tasks
@pytest.mark.usefixtures("host_clock")
def test_a_guest_that_cannot_be_reached_is_an_infrastructure_error(tmp_path: Path) -> None:
    # OSWorld's controller gives up and falls back; ours raises (as every getter does for a
    # guest that is gone), which the evaluator reports as an infrastructure error, not a 0.
    rules = _real_relative_rules()["fc6d8143"][0]
    desktop = _Desktop(GuestUnreachableError("/execute", "refused"))
    with pytest.raises(GuestUnreachableError):
        get_rule_relativeTime(_ctx(tmp_path, desktop), {"rules": rules})


@needs_osworld_tasks
@pytest.mark.usefixtures("host_clock")
@pytest.mark.parametrize(
    ("zone", "in_2026_04", "in_1_0_2"),
    [
        ("", "march-weather", "april-weather"),  # empty: not a timezone in 2026.04; UTC in 1.0.2
        (None, "march-weather", "april-weather"),  # null: the same
        ("X", "april-weather", "april-weather"),  # unknown name: UTC in both
        ("america/new_york", "march-weather", "march-weather"),  # pytz finds it, any case
        ("Asia/Tokyo", "april-weather", "april-weather"),  # 11:00 on 1 April there
    ],
)
def test_timezone_values_on_a_real_rule(
    tmp_path: Path, zone: str | None, in_2026_04: str, in_1_0_2: str
) -> None:
    rules = _real_relative_rules()["368d9ba4"][0] | {"timezone": zone}
    desktop = _Desktop()
    assert _run(get_rule_relativeTime, _ctx(tmp_path, desktop), rules) == {"time": in_2026_04}
    assert desktop.asked == (0 if zone else 1)
    got = _run(get_rule_relativeTime_1_0_2, _ctx(tmp_path, _Desktop()), rules)
    assert got == {"time": in_1_0_2}


@needs_osworld_tasks
@pytest.mark.usefixtures("host_clock")
def test_82bc8d6a_a_correct_search_scores_1_under_2026_04(tmp_path: Path) -> None:
    """The flight search URL's fields against the rule with a list ``time`` (expect_in_result)."""
    ((_, result, expected, options),) = [
        c for c in real_checks("check_direct_json_object") if c[0] == "82bc8d6a"
    ]
    assert result["type"] == "active_tab_url_parse" and not options
    rules = get_rule_relativeTime(_ctx(tmp_path, _Desktop()), expected)
    metric = METRICS["check_direct_json_object"]
    page = {"fromStation": "BOM", "toStation": "ARN", "time": "2026-04-06"}
    assert metric(page, rules) == 1.0
    assert metric(page | {"time": "2026-04-13"}, rules) == 0.0
    assert metric(page | {"toStation": "CPH"}, rules) == 0.0
    # 1.0.2's getter fails on the list: that check could not pass there.
    with pytest.raises(EvaluatorError):
        get_rule_relativeTime_1_0_2(_ctx(tmp_path, _Desktop()), expected)


# --- check_structure_sim_with_threshold (new) -------------------------------------------------


def _real_threshold_options() -> list[dict[str, Any]]:
    found = [options for _, _, _, options in real_checks("check_structure_sim_with_threshold")]
    return found or [{"ssim_threshold": 0.85}]  # multi_apps/e8172110's, twice


def _pattern(width: int = 64, height: int = 48) -> Any:
    """8-pixel blocks of deterministic colours: structure SSIM can see."""
    y, x = np.mgrid[0:height, 0:width] // 8
    pixels = np.stack([(x * 37 + y * 11) % 256, (x * 13 + y * 53) % 256, (x * y * 29) % 256], 2)
    return Image.fromarray(pixels.astype(np.uint8))


def _save(tmp_path: Path, name: str, image: Any) -> str:
    path = tmp_path / name
    image.save(path)
    return str(path)


def _noise(width: int, height: int) -> Any:
    rng = np.random.default_rng(7)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


@pytest.mark.parametrize("options", _real_threshold_options())
def test_structure_sim_with_threshold_on_the_real_options(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    metric = gimp.check_structure_sim_with_threshold
    reference = _save(tmp_path, "gold.png", _pattern())
    same = _save(tmp_path, "same.png", _pattern())
    assert metric(same, reference, **options) == 1.0
    # No file, no path, or no image: 0 (OSWorld returns 0 for each before or in its try).
    text = tmp_path / "text.png"
    text.write_text("not an image")
    for result in (None, str(tmp_path / "absent.png"), str(text)):
        assert metric(result, reference, **options) == 0.0
    assert metric(same, None, **options) == 0.0
    # Alpha is dropped by the RGB conversion: a transparent copy with the same colours passes.
    clear = _pattern().convert("RGBA")
    clear.putalpha(0)
    assert metric(_save(tmp_path, "clear.png", clear), reference, **options) == 1.0
    # Greyscale is compared as RGB with three equal channels.
    grey = _pattern().convert("L")
    grey_reference = _save(tmp_path, "grey-rgb.png", grey.convert("RGB"))
    assert metric(_save(tmp_path, "grey.png", grey), grey_reference, **options) == 1.0
    # Noise is no match, whatever its size.
    for size in ((64, 48), (100, 80)):
        assert metric(_save(tmp_path, "noise.png", _noise(*size)), reference, **options) == 0.0


def test_structure_sim_with_threshold_resizes_the_result_to_the_reference(tmp_path: Path) -> None:
    metric = gimp.check_structure_sim_with_threshold
    # A flat image has SSIM 1 with another flat image of its colour: after the Lanczos resize
    # to the reference's size the result is that colour still. Sizes alone never fail.
    flat = _save(tmp_path, "flat.png", Image.new("RGB", (64, 48), (90, 140, 30)))
    wide = _save(tmp_path, "wide.png", Image.new("RGB", (200, 30), (90, 140, 30)))
    assert metric(wide, flat, ssim_threshold=0.85) == 1.0
    # The pattern at twice the size (each pixel 2x2) comes back to nearly the reference.
    big = _pattern().resize((128, 96), Image.Resampling.NEAREST)
    assert metric(_save(tmp_path, "big.png", big), _save(tmp_path, "p.png", _pattern())) == 1.0


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((7, 7), 1.0),  # the usual 7-pixel window
        ((6, 9), 1.0),  # 5-pixel window
        ((5, 5), 1.0),
        ((3, 40), 1.0),  # 3-pixel window
        ((4, 4), 1.0),
        ((2, 2), 0.0),  # 1-pixel window: scikit-image divides by zero, OSWorld scores 0
        ((1, 30), 0.0),
    ],
)
def test_structure_sim_with_threshold_small_images(
    tmp_path: Path, size: tuple[int, int], expected: float
) -> None:
    image = _pattern(64, 64).resize(size, Image.Resampling.NEAREST)
    a, b = _save(tmp_path, "a.png", image), _save(tmp_path, "b.png", image)
    assert gimp.check_structure_sim_with_threshold(a, b, ssim_threshold=0.85) == expected


def test_structure_sim_with_threshold_option(tmp_path: Path) -> None:
    metric = gimp.check_structure_sim_with_threshold
    reference = _save(tmp_path, "gold.png", _pattern())
    same = _save(tmp_path, "same.png", _pattern())
    noise = _save(tmp_path, "noise.png", _noise(64, 48))
    assert metric(same, reference) == 1.0  # default 0.85
    assert metric(same, reference, ssim_threshold=1.0) == 1.0  # identical: exactly 1, >=
    assert metric(same, reference, ssim_threshold=1.01) == 0.0
    assert metric(noise, reference, ssim_threshold=-1.0) == 1.0  # SSIM is never below -1
    assert metric(noise, reference) == 0.0


# --- check_play_and_exit (new) --------------------------------------------------------------


def _real_play_and_exit_rules() -> list[dict[str, Any]]:
    return [rules for _, rules in real_rules("check_play_and_exit")] or [
        {"expected_play_and_exit": 0}  # vlc/5ac2891a's
    ]


@pytest.mark.parametrize("rule", _real_play_and_exit_rules())
@pytest.mark.parametrize(
    ("vlcrc", "value"),
    [
        ("[core]\n#play-and-exit=0\n", "0"),  # VLC writes the default commented: still read
        ("[core]\nplay-and-exit=1\n", "1"),
        ("[core]\nvolume-step=12.8\n", "0"),  # absent: VLC's default
        ("#play-and-exit=0\nplay-and-exit=1\n", "1"),  # the last line with the key wins
        ("play-and-exit=1\r\n", "1"),  # the value is stripped
        ("play-and-exit = 1\n", "0"),  # no "play-and-exit=" in the line: not read
        ("play-and-exit=\n", ""),  # set to nothing: matches neither 0 nor 1
    ],
)
def test_play_and_exit_on_the_real_rule(
    tmp_path: Path, rule: dict[str, Any], vlcrc: str, value: str
) -> None:
    path = tmp_path / "vlcrc"
    path.write_bytes(vlcrc.encode())
    want = rule["expected_play_and_exit"]
    assert app_config.check_play_and_exit(str(path), rule) == float(value == str(want))
    other = 1 - int(want)
    assert app_config.check_play_and_exit(str(path), {"expected_play_and_exit": other}) == float(
        value == str(other)
    )


def test_play_and_exit_expectation_types(tmp_path: Path) -> None:
    path = tmp_path / "vlcrc"
    path.write_text("play-and-exit=1\n")
    check = app_config.check_play_and_exit
    assert check(str(path), {"expected_play_and_exit": 1}) == 1.0  # an int is made text
    assert check(str(path), {"expected_play_and_exit": "1"}) == 1.0
    assert check(str(path), {"expected_play_and_exit": True}) == 0.0  # str(True) is "True"
    assert check(str(path), {"expected_play_and_exit": 1.0}) == 0.0  # a float is not made text
    assert check(None, {"expected_play_and_exit": 0}) == 0.0  # no file (OSWorld raises)
    path.write_bytes(b"play-and-exit=1\n\xff\n")
    with pytest.raises(UnicodeDecodeError):  # decoded before OSWorld's try, so it raises
        check(str(path), {"expected_play_and_exit": 1})


# --- check_file_exists (unchanged; gimp's version is the one exported) -----------------------


def test_check_file_exists(tmp_path: Path) -> None:
    (tmp_path / "export.jpg").write_bytes(b"x")
    (tmp_path / "folder").mkdir()
    assert gimp.check_file_exists(str(tmp_path), "export.jpg") == 1.0
    assert gimp.check_file_exists(str(tmp_path) + "/", "export.jpg") == 1.0
    assert gimp.check_file_exists(str(tmp_path), "missing.jpg") == 0.0
    assert gimp.check_file_exists(str(tmp_path), "folder") == 0.0  # a folder is no file
    assert gimp.check_file_exists(str(tmp_path), "") == 0.0  # the folder itself
    # os.path.join: an absolute file name stands on its own.
    assert gimp.check_file_exists("/nonexistent", str(tmp_path / "export.jpg")) == 1.0
    assert gimp.check_file_exists(None, "export.jpg") == 0.0  # OSWorld raises: scored 0


@pytest.mark.parametrize(
    ("directory", "filename"),
    [
        ("{tmp}", "export.jpg"),
        ("{tmp}/", "export.jpg"),
        ("{tmp}", "missing.jpg"),
        ("{tmp}", "folder"),
        ("{tmp}", ""),
        ("/nonexistent", "{tmp}/export.jpg"),
        (None, "export.jpg"),
        ("{tmp}", None),
    ],
)
def test_check_file_exists_as_desktop_env_1_0_2_scores_it(
    osworld: OSWorld, tmp_path: Path, directory: str | None, filename: str | None
) -> None:
    """Its code is the same in 2026.04 (compared function by function), so 1.0.2's side venv
    is its reference; needs ``check_file_exists`` in the metric registry."""
    (tmp_path / "export.jpg").write_bytes(b"x")
    (tmp_path / "folder").mkdir()
    args = [None if a is None else a.format(tmp=tmp_path.resolve()) for a in (directory, filename)]
    assert_same_score(osworld, "check_file_exists", *args)


# --- DesktopEnv.step/evaluate: FAIL, DONE, WAIT as action dicts -------------------------------


@pytest.mark.parametrize(
    ("response", "kinds", "terminal"),
    [
        ('{"action_type": "FAIL"}', ["fail"], "fail"),
        ('{"action_type": "DONE"}', ["done"], "done"),
        ('{"action_type": "WAIT"}', ["wait"], None),
        (
            '[{"action_type": "CLICK", "x": 5, "y": 5}, {"action_type": "FAIL"}]',
            ["click", "fail"],
            "fail",
        ),
        ("FAIL", ["fail"], "fail"),
    ],
)
def test_fail_done_wait_dicts_end_the_episode_as_their_strings_do(
    response: str, kinds: list[str], terminal: str | None
) -> None:
    # 2026.04's step() ends the episode on a dict FAIL/DONE (info fail/done) and its evaluate()
    # takes a last dict FAIL as FAIL (infeasible 1, else 0); 1.0.2 did so for strings only.
    # Our computer_13 dialect gives the same typed actions for both, and the env scores a
    # step's first terminal action (terminal_kind) as that last action.
    result = parse_action(response, dialect="computer_13", screen_size=(1920, 1080))
    assert result.error is None
    assert [a.kind for a in result.actions] == kinds
    assert terminal_kind(result.actions) == terminal


# --- the references' registries -------------------------------------------------------------


def test_registries_of_both_references() -> None:
    newer = {"check_play_and_exit", "check_structure_sim_with_threshold"}
    assert newer <= set(metrics_for("osworld", OSWORLD_2026_04))
    assert not newer & set(metrics_for("osworld", OSWORLD_1_0_2))
    assert getters_for(OSWORLD_2026_04)["rule_relativeTime"] is get_rule_relativeTime
    assert getters_for(OSWORLD_1_0_2)["rule_relativeTime"] is get_rule_relativeTime_1_0_2
