"""The metric registry, OSWorld's task files, lazy dependencies, rule matching and doctests."""

from __future__ import annotations

import collections
import doctest
import importlib
import json
import pkgutil
import subprocess
import sys
from typing import Any

import pytest
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

import osworld_gym.evaluation.metrics as metrics_pkg
from osworld_gym.errors import DependencyNotInstalled, EvaluatorError
from osworld_gym.evaluation.metrics import (
    INFEASIBLE,
    METRICS,
    UnknownMetricError,
    get_metric,
    metric_names,
    unsupported_options,
)
from osworld_gym.evaluation.metrics._rules import match_value_to_rule

# What this package implements: issue 4's required metrics plus the cheap file/command ones.
REQUIRED = {
    "compare_table", "compare_pptx_files", "compare_docx_files", "check_include_exclude",
    "exact_match", "check_direct_json_object", "compare_text_file", "diff_text_file",
    "check_list", "compare_csv", "check_json", "file_contains", "is_in_list", "match_in_list",
    "compare_images", "check_json_settings",
}  # fmt: skip
EXTRA = {
    "check_csv", "check_gnome_favorite_apps", "check_image_file_size", "check_image_size",
    "check_json_keybindings", "check_line_number", "check_moved_jpgs",
    "check_slide_orientation_Portrait", "check_structure_sim", "compare_archive",
    "compare_config", "compare_docx_files_and_ignore_new_lines", "compare_docx_images",
    "compare_docx_lines", "compare_docx_tables", "compare_epub", "compare_font_names",
    "compare_image_list", "compare_line_spacing", "compare_pdfs", "compare_python_pure_text",
    "compare_result_files", "compare_subscript_contains", "compare_zip_files",
    "contains_page_break", "fuzzy_match", "has_page_numbers_in_footers",
    "is_extension_installed", "is_first_line_centered", "is_in_vm_clickboard", "is_utc_0",
    "literal_match", "run_sqlite3", "check_italic_font_size_14",
    "evaluate_strike_through_last_paragraph", "find_default_font",
    "check_presenter_console_disable", "check_qt_bgcone", "check_qt_max_volume",
    "check_qt_minimal_view", "check_qt_slider_colours",
    "check_one_instance_when_started_from_file", "check_play_and_exit",
    "check_global_key_play_pause", "is_vlc_recordings_folder", "check_config_status",
    "check_thunderbird_prefs", "check_thunderbird_filter",
}  # fmt: skip
# The remaining file/value-based metrics of the task snapshot (GIMP, Impress, Writer, PDFs,
# MP3 tags, mail folders, HTML, accessibility trees, window sizes).
FILE_CHECKS = {
    "check_brightness_decrease_and_structure_sim", "check_saturation_increase_and_structure_sim",
    "check_contrast_increase_and_structure_sim", "check_palette_and_structure_sim",
    "check_file_exists_and_structure_sim", "check_image_mirror", "check_structure_sim_resized",
    "check_structure_sim_with_threshold", "check_green_background", "check_triangle_position",
    "check_textbox_on_leftside", "check_transition", "check_auto_saving_time",
    "evaluate_presentation_fill_to_rgb_distance", "check_image_stretch_and_center",
    "check_page_number_colors", "check_left_panel", "check_accessibility_tree",
    "check_tabstops", "evaluate_colored_words_in_tables", "check_highlighted_words",
    "compare_unique_train_records", "compare_references", "fuzzy_place_math",
    "compare_conference_city_in_order", "check_pdf_pages", "compare_pdf_images",
    "compare_htmls", "check_mp3_meta", "is_vlc_fullscreen", "check_thunderbird_folder",
    "check_file_exists",
}  # fmt: skip
# The browser and VLC's live status (values from the Chrome and VLC getters).
CHROME = {
    "is_expected_active_tab", "is_expected_active_tab_approximate",
    "is_expected_url_pattern_match", "is_expected_installed_extensions", "is_expected_tabs",
    "is_expected_bookmarks", "is_expected_search_query", "is_cookie_deleted",
    "is_shortcut_on_desktop", "check_history_deleted", "check_enabled_experiments",
    "check_font_size", "is_added_to_steam_cart", "is_vlc_playing",
}  # fmt: skip
# Audio, video and OCR (the optional 'media' and 'ocr' extras).
MEDIA = {"compare_audios", "compare_videos", "compare_image_text"}
# Runs agent-written code: in a child Python, sandboxed (test_metrics_python_tests.py).
CODE = {"check_python_file_by_test_suite"}
# Implemented for OSWorld compatibility although no task of this snapshot uses it.
UNUSED_BY_TASKS = {"fuzzy_match", "check_enabled_experiments", "check_file_exists"}


def test_registry_holds_exactly_the_claimed_metrics() -> None:
    print(f"{len(METRICS)} metrics: {', '.join(metric_names())}")
    assert set(METRICS) == REQUIRED | EXTRA | FILE_CHECKS | CHROME | MEDIA | CODE
    assert metric_names() == sorted(METRICS)
    assert all(callable(fn) and fn.__name__ == name for name, fn in METRICS.items())


def test_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        METRICS["exact_match"] = len  # type: ignore[index]


def test_a_second_function_under_one_name_is_rejected() -> None:
    from osworld_gym.evaluation.metrics import registry

    def exact_match(result: Any, rules: Any) -> float:
        return 0.0

    assert registry._build((METRICS["exact_match"], METRICS["exact_match"]))  # same: fine
    with pytest.raises(ValueError, match="two different metrics"):
        registry._build((METRICS["exact_match"], exact_match))


def test_unknown_metric_suggests_and_lists() -> None:
    with pytest.raises(UnknownMetricError) as info:
        get_metric("compare_tabel")
    message = str(info.value)
    assert "did you mean 'compare_table'" in message
    assert "(available: " in message and "compare_table," in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, EvaluatorError)
    assert info.value.name == "compare_tabel"


def test_infeasible_is_not_a_metric() -> None:
    with pytest.raises(KeyError):
        get_metric(INFEASIBLE)


def _task_metric_uses() -> collections.Counter[str]:
    uses: collections.Counter[str] = collections.Counter()
    for path in OSWORLD_TASKS.glob("examples*/**/*.json"):
        task = json.loads(path.read_text(encoding="utf-8"))
        func = task.get("evaluator", {}).get("func")
        uses.update(func if isinstance(func, list) else [func])
    return uses


@needs_osworld_tasks
def test_claimed_metrics_are_the_names_real_tasks_use() -> None:
    uses = _task_metric_uses()
    for name in sorted(REQUIRED | EXTRA | FILE_CHECKS | CHROME | MEDIA | CODE):
        used = uses[name] > 0
        assert used is (name not in UNUSED_BY_TASKS), f"{name}: {uses[name]} task uses"
        assert get_metric(name) is METRICS[name]
    covered = sum(n for name, n in uses.items() if name in METRICS)
    scored = sum(n for name, n in uses.items() if name != INFEASIBLE)
    print(f"metric uses covered: {covered}/{scored} over {len(uses) - 1} distinct names")
    assert covered / scored > 0.6


@needs_osworld_tasks
def test_compare_table_and_pptx_options_used_by_tasks_are_understood() -> None:
    from osworld_gym.evaluation.metrics._pptx_compare import PptxOptions

    known_pptx = {f"examine_{f}" for f in PptxOptions.__dataclass_fields__}
    known_pptx |= {"approximately_tolerance", "_note"}
    for path in OSWORLD_TASKS.glob("examples*/**/*.json"):
        evaluator = json.loads(path.read_text(encoding="utf-8"))["evaluator"]
        funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
        options = evaluator.get("options") or {}
        per_func = options if isinstance(options, list) else [options] * len(funcs)
        for func, opts in zip(funcs, per_func, strict=False):
            if func in METRICS:
                assert unsupported_options(func, opts) == [], path.name
            if func == "compare_pptx_files":
                assert set(opts or {}) <= known_pptx, path.name


def test_unsupported_options() -> None:
    rules = {"rules": [{"type": "sheet_data"}, {"type": "pie_chart"}]}
    assert unsupported_options("compare_table", rules) == ["compare_table rule type 'pie_chart'"]
    assert unsupported_options("compare_archive", {"file_type": "sheet"}) == [
        "compare_archive file_type 'sheet'"
    ]
    assert unsupported_options("compare_archive", {"file_type": "video"}) == []
    assert unsupported_options("compare_archive", None) == []
    assert unsupported_options("exact_match", {"anything": 1}) == []


@pytest.mark.heavy  # a fresh interpreter
def test_importing_metrics_loads_no_heavy_library() -> None:
    # Measured against `import osworld_gym` itself, which may load its core dependencies.
    code = (
        "import sys, osworld_gym; before = set(sys.modules);"
        "import osworld_gym.evaluation.metrics as m; m.get_metric('compare_table');"
        "heavy = {'pandas', 'openpyxl', 'docx', 'pptx', 'odf', 'pypdf', 'rapidfuzz', 'lxml',"
        " 'PIL', 'numpy', 'yaml', 'mutagen', 'cssselect', 'pymupdf', 'fitz'};"
        "print(sorted(heavy & {k.split('.')[0] for k in set(sys.modules) - before}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_library_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pptx", None)  # makes `import pptx` fail
    with pytest.raises(DependencyNotInstalled, match=r"python-pptx.*osworld-gym\[eval\]"):
        get_metric("compare_pptx_files")("a.pptx", "b.pptx")


@pytest.mark.parametrize(
    ("value", "rule", "matches"),
    [
        (5, {"method": "eq", "ref": 5.0}, True),
        (5, {"method": "ne", "ref": 5}, False),
        (260, {"method": "lt", "ref": 260}, False),
        (260, {"method": "le", "ref": 260}, True),
        (3, {"method": "gt", "ref": 2}, True),
        (2, {"method": "ge", "ref": 3}, False),
        ("Total", {"method": "re", "ref": "^tot"}, False),
        ("Total", {"method": "re.I", "ref": "^tot"}, True),
        ("a\nTotal", {"method": "re.I.M", "ref": "^tot"}, True),
        ("191.66668", {"method": "approx:0.001", "ref": 191.6667}, True),
        (191.7, {"method": "approx:0.001", "ref": 191.6667}, False),
        ("n/a", {"method": "approx:0.1", "ref": 1}, False),
        (None, {"method": "approx:0.1", "ref": 1}, False),
        (0, {"method": "range.te", "ref": [0, 2]}, False),
        (2, {"method": "range.te", "ref": [0, 2]}, True),
        (0, {"method": "range.et", "ref": [0, 2]}, True),
        ('"Pass,Fail"', {"method": "str_list_eq", "ref": ["Pass", "Fail"]}, True),
        ('"Pass,Fail"', {"method": "str_list_eq", "ref": ["Fail", "Pass"]}, False),
        ("'Pass,Fail'", {"method": "str_set_eq", "ref": ["Fail", "Pass"]}, True),
    ],
)
def test_match_value_to_rule(value: Any, rule: dict[str, Any], matches: bool) -> None:
    assert match_value_to_rule(value, rule) is matches


def test_match_value_to_rule_errors() -> None:
    with pytest.raises(ValueError, match="unknown rule method"):
        match_value_to_rule(1, {"method": "about", "ref": 1})
    with pytest.raises(ValueError, match="unknown regex flag"):
        match_value_to_rule("x", {"method": "re.NOPE", "ref": "x"})
    with pytest.raises(TypeError):
        match_value_to_rule(1.0, {"method": "re", "ref": "1"})
    with pytest.raises(TypeError, match="needs a string"):  # OSWorld strips the value itself
        match_value_to_rule(5, {"method": "str_list_eq", "ref": ["5"]})
    with pytest.raises(TypeError, match="needs a string"):
        match_value_to_rule(None, {"method": "str_set_eq", "ref": []})


def test_spreadsheet_range_rule() -> None:
    cell_range = pytest.importorskip("openpyxl.worksheet.cell_range")
    rule = {"method": "spreadsheet_range", "ref": ["D2:D29", "D2:D1048576"]}
    assert match_value_to_rule(cell_range.MultiCellRange("D2:D200"), rule)
    assert not match_value_to_rule(cell_range.MultiCellRange("D3:D200"), rule)
    assert not match_value_to_rule(cell_range.MultiCellRange("D2:E200"), rule)


def _metric_modules() -> list[str]:
    return [f"{metrics_pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(metrics_pkg.__path__)]


@pytest.mark.parametrize("module_name", [metrics_pkg.__name__, *_metric_modules()])
def test_doctests(module_name: str) -> None:
    module = importlib.import_module(module_name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
