"""The metric registry: OSWorld metric name → pure scoring function, built once, read-only.

Evaluators resolve a task's ``func`` names here when the task is loaded (fail fast, with
suggestions), never by ``getattr`` on a module at evaluation time. A metric is called as
OSWorld calls it: ``metric(result, expected, **options)``, or ``metric(result, **options)``
when the task has no ``expected`` getter, and returns a float, usually 0.0 or 1.0.

Two evaluation modes (``EnvConfig.evaluation``): ``"osworld"`` (the default, ``METRICS``)
scores exactly as OSWorld's code does, its bugs included, so numbers compare with published
results; ``"fixed"`` swaps in the corrected metrics of ``FIXED_METRICS``
(``metrics_for()``).

Which OSWorld's code (``EnvConfig.evaluator_reference``, ``osworld_gym.evaluation.references``):
``METRICS`` behave as the default reference, ``osworld-2026.04``; the older
``osworld-1.0.2`` swaps in ``REFERENCE_1_0_2_METRICS`` for the metrics that changed since,
and lacks those added since (``NEW_SINCE_1_0_2``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from osworld_gym.env_config import EVALUATION_MODES
from osworld_gym.errors import UnknownMetricError
from osworld_gym.evaluation.metrics import (
    a11y,
    app_config,
    archives,
    audio_video,
    chrome,
    docs,
    docs_checks,
    docs_format,
    files,
    general,
    gimp,
    gimp_layout,
    images,
    mail,
    media,
    ocr,
    os_state,
    pdf_html,
    python_tests,
    slides,
    slides_checks,
    table,
    table_checks,
    vscode,
)
from osworld_gym.evaluation.references import (
    DEFAULT_REFERENCE,
    OSWORLD_1_0_2,
    OSWORLD_2026_04,
    check_reference,
)

Metric = Callable[..., float]

# OSWorld's special name: scored from the action history by the evaluator, not by a metric.
INFEASIBLE = "infeasible"

_ALL: tuple[Metric, ...] = (
    # general: values and rules
    general.check_include_exclude,
    general.exact_match,
    general.match_in_list,
    general.is_in_list,
    general.literal_match,
    general.fuzzy_match,
    general.check_direct_json_object,
    # general: files
    files.diff_text_file,
    files.compare_csv,
    files.file_contains,
    files.check_list,
    files.check_csv,
    files.check_json,
    files.check_line_number,
    files.compare_result_files,
    files.compare_python_pure_text,
    files.run_sqlite3,
    # editor
    vscode.compare_text_file,
    vscode.check_json_settings,
    vscode.check_json_keybindings,
    vscode.is_extension_installed,
    python_tests.check_python_file_by_test_suite,
    vscode.compare_config,
    # desktop state
    a11y.check_accessibility_tree,
    os_state.check_gnome_favorite_apps,
    os_state.is_utc_0,
    os_state.check_moved_jpgs,
    os_state.is_in_vm_clickboard,
    # application settings
    app_config.check_qt_bgcone,
    app_config.check_qt_max_volume,
    app_config.check_qt_minimal_view,
    app_config.check_qt_slider_colours,
    app_config.check_one_instance_when_started_from_file,
    app_config.check_play_and_exit,
    app_config.check_global_key_play_pause,
    app_config.is_vlc_recordings_folder,
    app_config.check_config_status,
    app_config.check_thunderbird_prefs,
    app_config.check_thunderbird_filter,
    mail.check_thunderbird_folder,
    # spreadsheets
    table.compare_table,
    table_checks.compare_conference_city_in_order,
    # presentations
    slides.compare_pptx_files,
    slides.check_slide_orientation_Portrait,
    app_config.check_presenter_console_disable,
    slides_checks.check_transition,
    slides_checks.check_auto_saving_time,
    slides_checks.evaluate_presentation_fill_to_rgb_distance,
    slides_checks.check_image_stretch_and_center,
    slides_checks.check_page_number_colors,
    a11y.check_left_panel,
    # documents
    docs.compare_docx_files,
    docs.compare_docx_files_and_ignore_new_lines,
    docs.compare_docx_lines,
    docs_format.compare_docx_tables,
    docs_format.compare_line_spacing,
    docs_format.compare_font_names,
    docs_format.compare_subscript_contains,
    docs_format.is_first_line_centered,
    docs_format.contains_page_break,
    docs_format.has_page_numbers_in_footers,
    docs_format.compare_docx_images,
    docs_format.check_italic_font_size_14,
    docs_format.evaluate_strike_through_last_paragraph,
    app_config.find_default_font,
    docs_checks.check_tabstops,
    docs_checks.evaluate_colored_words_in_tables,
    docs_checks.check_highlighted_words,
    docs_checks.compare_unique_train_records,
    docs_checks.compare_references,
    docs_checks.fuzzy_place_math,
    ocr.compare_image_text,
    # images
    images.compare_images,
    images.check_image_size,
    images.check_image_file_size,
    images.compare_image_list,
    images.check_structure_sim,
    gimp.check_brightness_decrease_and_structure_sim,
    gimp.check_saturation_increase_and_structure_sim,
    gimp.check_contrast_increase_and_structure_sim,
    gimp.check_palette_and_structure_sim,
    gimp.check_file_exists_and_structure_sim,
    gimp.check_image_mirror,
    gimp.check_structure_sim_resized,
    gimp.check_structure_sim_with_threshold,
    gimp.check_file_exists,
    gimp_layout.check_green_background,
    gimp_layout.check_triangle_position,
    gimp_layout.check_textbox_on_leftside,
    # audio and video
    media.check_mp3_meta,
    media.is_vlc_fullscreen,
    media.is_vlc_playing,
    audio_video.compare_audios,
    audio_video.compare_videos,
    # the browser
    chrome.is_expected_active_tab,
    chrome.is_expected_active_tab_approximate,
    chrome.is_expected_url_pattern_match,
    chrome.is_expected_installed_extensions,
    chrome.is_expected_tabs,
    chrome.is_expected_bookmarks,
    chrome.is_expected_search_query,
    chrome.is_cookie_deleted,
    chrome.is_shortcut_on_desktop,
    chrome.check_history_deleted,
    chrome.check_enabled_experiments,
    chrome.check_font_size,
    chrome.is_added_to_steam_cart,
    # archives and e-books
    archives.compare_pdfs,
    archives.compare_archive,
    archives.compare_zip_files,
    archives.compare_epub,
    pdf_html.check_pdf_pages,
    pdf_html.compare_pdf_images,
    pdf_html.compare_htmls,
)


def _build(metrics: tuple[Metric, ...]) -> Mapping[str, Metric]:
    """Name each function by its ``__name__`` (OSWorld's name); reject a duplicate name."""
    table_: dict[str, Metric] = {}
    for fn in metrics:
        name = fn.__name__
        if name in table_ and table_[name] is not fn:
            raise ValueError(f"two different metrics are registered as {name!r}")
        table_[name] = fn
    return MappingProxyType(table_)


METRICS: Mapping[str, Metric] = _build(_ALL)


# The metrics whose OSWorld code does not do what the metric (or the task using it) means,
# with the corrected version the "fixed" mode uses. Per metric: OSWorld's behaviour -> the fix.
FIXED_METRICS: Mapping[str, Metric] = MappingProxyType(
    {
        # OSWorld splits a folder on "FROM - " (Thunderbird writes "From - ") and keeps only
        # the blank pieces, so any two non-empty folders pass -> compare the messages.
        # OSWorld compares the file's text exactly and never reads containment_ok, which
        # vs_code/982d12a5 sets -> the option honoured (a JSON subset, else a substring).
        "compare_config": vscode.compare_config_fixed,
        "check_thunderbird_folder": mail.check_thunderbird_folder_fixed,
        # OSWorld takes the second *least* frequent colour (edge pixels of an antialiased
        # shape) as the shape -> the second most frequent colour, as its comments say.
        "check_triangle_position": gimp_layout.check_triangle_position_fixed,
        # OSWorld reads pixel [x, y] of (row, column) arrays, so only square images can pass,
        # and fails on grey or palette images -> every pixel of any size and colour mode.
        "check_green_background": gimp_layout.check_green_background_fixed,
        # OSWorld never reads examine_shape_lenient_height (set by one task beside
        # examine_shape: false) nor examine_run_count (two tasks) -> position and width
        # compared with any height; run counts not compared where a task says so.
        "compare_pptx_files": slides.compare_pptx_files_fixed,
        # OSWorld's freeze rule compares the pane's top-left cell, which moves when the
        # frozen view is scrolled -> the frozen row and column counts.
        "compare_table": table.compare_table_fixed,
        # OSWorld takes the master's second-to-last RGB colour and reads its hex one
        # character late (C00000 is not red) -> the slide-number placeholder's colour.
        "check_page_number_colors": slides_checks.check_page_number_colors_fixed,
        # OSWorld pairs the two documents' nodes only up to the shorter one, so an empty
        # exported file passes -> the documents must have as many nodes.
        "compare_htmls": pdf_html.compare_htmls_fixed,
    }
)


# The metrics whose behaviour in desktop-env 1.0.2 differs from OSWorld's code of 2026.04 (the
# default reference, METRICS): name -> the 1.0.2 behaviour, for evaluator_reference
# "osworld-1.0.2". Per metric: what changed (docs/concepts/evaluation.md has the decisions).
REFERENCE_1_0_2_METRICS: Mapping[str, Metric] = MappingProxyType(
    {
        # 1.0.2 compares the text exactly and ignores options; 2026.04 reads containment_ok
        # (default true: the expected JSON a subset of the file's, else a substring of it).
        "compare_config": vscode.compare_config_1_0_2,
        # 1.0.2's freeze rule compares the pane's top-left visible cell, which moves with
        # scrolling; 2026.04 compares the frozen row and column counts.
        "compare_table": table.compare_table_1_0_2,
        # 1.0.2 looks for the city exactly as written; 2026.04 compares both sides without
        # case, accents and punctuation.
        "compare_conference_city_in_order": table_checks.compare_conference_city_in_order_1_0_2,
        # 1.0.2 ignores examine_run_count, counts and compares the runs of blank paragraphs,
        # tells paragraph levels 0 and 1 apart, compares bullet levels without bullets and
        # places shapes without text; 2026.04 does none of these.
        "compare_pptx_files": slides.compare_pptx_files_1_0_2,
        # 1.0.2 reads the master's second-to-last RGB colour one character late (and raises
        # with fewer than two); 2026.04 the last non-black run colour, as RRGGBB.
        "check_page_number_colors": slides_checks.check_page_number_colors_1_0_2,
        # 1.0.2 has no alias for the Zoom extension's store name (multi_apps/873cafdd).
        "is_expected_installed_extensions": chrome.is_expected_installed_extensions_1_0_2,
        # 1.0.2 wants the exact "Name=<name>\n" (or "Exec=") line; 2026.04 also a Name= line
        # that contains the name or is contained in it, without case.
        "is_shortcut_on_desktop": chrome.is_shortcut_on_desktop_1_0_2,
    }
)

# Metrics OSWorld added after desktop-env 1.0.2: the "osworld-1.0.2" reference does not know them.
NEW_SINCE_1_0_2: frozenset[str] = frozenset(
    {"check_play_and_exit", "check_structure_sim_with_threshold"}
)

# The fixes of FIXED_METRICS that OSWorld's own code made by 2026.04: under that reference the
# "fixed" mode has nothing left to correct there.
FIXED_BY_2026_04: frozenset[str] = frozenset(
    {
        "compare_config",  # honours containment_ok, as compare_config_fixed did
        "compare_table",  # the frozen row and column counts, as compare_table_fixed did
    }
)


def _with_fixes(base: Mapping[str, Metric], fixes: Mapping[str, Metric]) -> Mapping[str, Metric]:
    unknown = sorted(set(fixes) - set(base))
    if unknown:
        raise ValueError(f"fixed metrics replace no registered metric: {unknown}")
    return MappingProxyType({**base, **fixes})


def _reference_1_0_2() -> Mapping[str, Metric]:
    unknown = sorted((set(REFERENCE_1_0_2_METRICS) | NEW_SINCE_1_0_2) - set(METRICS))
    if unknown:
        raise ValueError(f"reference 1.0.2 metrics replace no registered metric: {unknown}")
    older = {n: f for n, f in METRICS.items() if n not in NEW_SINCE_1_0_2}
    return MappingProxyType({**older, **REFERENCE_1_0_2_METRICS})


_BY_REFERENCE: Mapping[str, Mapping[str, Metric]] = MappingProxyType(
    {OSWORLD_2026_04: METRICS, OSWORLD_1_0_2: _reference_1_0_2()}
)
_FIXES: Mapping[str, Mapping[str, Metric]] = MappingProxyType(
    {
        OSWORLD_2026_04: MappingProxyType(
            {n: f for n, f in FIXED_METRICS.items() if n not in FIXED_BY_2026_04}
        ),
        OSWORLD_1_0_2: FIXED_METRICS,
    }
)
_BY_MODE: Mapping[tuple[str, str], Mapping[str, Metric]] = MappingProxyType(
    {
        (mode, reference): (base if mode == "osworld" else _with_fixes(base, _FIXES[reference]))
        for reference, base in _BY_REFERENCE.items()
        for mode in EVALUATION_MODES
    }
)


def metrics_for(mode: str = "osworld", reference: str = DEFAULT_REFERENCE) -> Mapping[str, Metric]:
    """The name → metric mapping of an evaluation mode under an evaluator reference.

    Args:
        mode: ``"osworld"``: OSWorld's behaviour, bugs included; ``"fixed"``: the same with
            the metrics of ``FIXED_METRICS`` corrected (those the reference's code still
            gets wrong).
        reference: Whose code (``REFERENCES``):
            ``"osworld-2026.04"`` (default, ``METRICS``) or ``"osworld-1.0.2"``
            (``REFERENCE_1_0_2_METRICS`` swapped in, ``NEW_SINCE_1_0_2`` left out).

    Raises:
        ValueError: Another mode or reference.

    Example:
        >>> metrics_for("fixed")["check_triangle_position"].__name__
        'check_triangle_position_fixed'
        >>> metrics_for()["exact_match"] is METRICS["exact_match"]
        True
    """
    check_reference(reference)
    try:
        return _BY_MODE[(mode, reference)]
    except KeyError:
        raise ValueError(
            f"evaluation mode must be one of {EVALUATION_MODES}, got {mode!r}"
        ) from None


def unsupported_options(name: str, options: Mapping[str, Any] | None) -> list[str]:
    """What of a task's ``options`` an implemented metric cannot honour (empty: all of it).

    For support reports: ``compare_table`` rule types and ``compare_archive`` file types
    outside what is implemented raise ``ValueError`` at evaluation time.

    Example:
        >>> unsupported_options("compare_table", {"rules": [{"type": "pie_chart"}]})
        ["compare_table rule type 'pie_chart'"]
    """
    options = options or {}
    if name == "compare_table":
        kinds = [rule.get("type") for rule in options.get("rules", [])]
        return [f"compare_table rule type {k!r}" for k in kinds if k not in table.SUPPORTED_RULES]
    if name == "compare_archive":
        kind = options.get("file_type", "text")
        if kind not in archives.ARCHIVE_FILE_TYPES:
            return [f"compare_archive file_type {kind!r}"]
    return []


# Options OSWorld's task files set that a reference's code never reads: scored under that
# reference, the option changes nothing. From reading each reference's code for the options the
# task files of April 2026 use (keys starting with "_" are the files' comments, never read).
IGNORED_OPTIONS: Mapping[str, Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        OSWORLD_2026_04: MappingProxyType(
            {
                # One task sets it beside examine_shape: false; no OSWorld code reads it.
                "compare_pptx_files": frozenset({"examine_shape_lenient_height"}),
                "compare_references": frozenset({"content_only"}),
            }
        ),
        OSWORLD_1_0_2: MappingProxyType(
            {
                "compare_config": frozenset({"containment_ok"}),
                "compare_pptx_files": frozenset(
                    {"examine_run_count", "examine_shape_lenient_height"}
                ),
                "compare_references": frozenset({"content_only"}),
            }
        ),
    }
)


def unknown_to_reference(
    name: str, options: Mapping[str, Any] | None, reference: str = DEFAULT_REFERENCE
) -> list[str]:
    """What of a task's metric and ``options`` the reference's code does not know.

    For ``tasks report``'s warnings: such a task is scored as that code scores it, which may
    not be what its file means (an option it ignores, a metric it lacks).

    Example:
        >>> unknown_to_reference("compare_config", {"containment_ok": True}, "osworld-1.0.2")
        ["compare_config option 'containment_ok' (osworld-1.0.2's code ignores it)"]
        >>> unknown_to_reference("compare_config", {"containment_ok": True})
        []
    """
    check_reference(reference)
    if name not in metrics_for("osworld", reference):
        return [f"metric {name!r} (not in {reference}'s code)"]
    ignored = IGNORED_OPTIONS[reference].get(name, frozenset())
    return [
        f"{name} option {key!r} ({reference}'s code ignores it)"
        for key in sorted(options or {})
        if key in ignored
    ]


def metric_names() -> list[str]:
    """Sorted names of the implemented metrics."""
    return sorted(METRICS)


def get_metric(name: str) -> Metric:
    """The metric registered under OSWorld's ``name``.

    Args:
        name: A task's ``evaluator.func`` value (or one element of a list ``func``).

    Returns:
        The scoring function.

    Raises:
        UnknownMetricError: Not implemented (``"infeasible"`` included: the evaluator scores
            infeasible tasks itself). It is a ``KeyError`` and an ``EvaluatorError``.

    Example:
        >>> get_metric("exact_match")("a", {"expected": "a"})
        1.0
        >>> try:
        ...     get_metric("exact_mach")
        ... except KeyError as e:
        ...     print(str(e).split(" (")[0])
        unknown metric 'exact_mach'; did you mean 'exact_match'?
    """
    try:
        return METRICS[name]
    except KeyError:
        raise UnknownMetricError(name, metric_names()) from None
