"""Evaluation modes ("osworld" and "fixed"), and missing metric libraries never scoring 0.

The modes: the registry's ``metrics_for``, the evaluator's ``mode`` and the env's
``evaluation`` option. Missing libraries: every metric that reads a file inside a broad
``except`` lets ``DependencyNotInstalled`` (any ``ImportError``) through with the install
command, and the evaluator raises it instead of scoring the check.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.evaluator import Evaluator
from osworld_gym.evaluation.getters import EvalContext
from osworld_gym.evaluation.metrics import (
    EVALUATION_MODES,
    FIXED_METRICS,
    METRICS,
    docs,
    get_metric,
    metrics_for,
)
from osworld_gym.evaluation.metrics.registry import FIXED_BY_2026_04
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.tasks.model import Task

INSTALL = r"pip install 'osworld-gym\[eval\]'"

# --- the registry ---------------------------------------------------------------------------


def test_osworld_mode_is_the_default_registry() -> None:
    assert metrics_for() is metrics_for("osworld") is METRICS
    assert get_metric("check_triangle_position") is METRICS["check_triangle_position"]


def test_fixed_mode_replaces_exactly_the_fixed_metrics() -> None:
    # Under the default reference, less those OSWorld's code of 2026.04 fixed itself.
    fixed = metrics_for("fixed")
    assert set(fixed) == set(METRICS)
    changed = {name for name in METRICS if fixed[name] is not METRICS[name]}
    assert changed == set(FIXED_METRICS) - FIXED_BY_2026_04
    # Under desktop-env 1.0.2's, every one.
    old, old_fixed = metrics_for("osworld", "osworld-1.0.2"), metrics_for("fixed", "osworld-1.0.2")
    assert (
        {name for name in old if old_fixed[name] is not old[name]}
        == set(FIXED_METRICS)
        == {
            "check_thunderbird_folder",
            "check_triangle_position",
            "check_green_background",
            "compare_pptx_files",
            "compare_table",
            "check_page_number_colors",
            "compare_htmls",
            "compare_config",
        }
    )
    for name, function in FIXED_METRICS.items():
        assert old_fixed[name] is function
        assert function.__name__ == f"{name}_fixed"
        assert function.__doc__


def test_modes_are_read_only_and_checked() -> None:
    assert EVALUATION_MODES == ("osworld", "fixed")
    with pytest.raises(TypeError):
        metrics_for("fixed")["exact_match"] = len  # type: ignore[index]
    with pytest.raises(ValueError, match="evaluation mode must be one of"):
        metrics_for("strict")


# --- the evaluator ------------------------------------------------------------------------------


def _task(func: str) -> Task:
    return Task.from_dict(
        {
            "id": "t",
            "instruction": "x",
            "config": [],
            "evaluator": {"func": func, "result": {"type": "rule", "rules": {"a": 1}}},
        }
    )


def _ctx(tmp_path: Path) -> EvalContext:
    return EvalContext(client=None, task_id="t", cache=AssetCache(tmp_path / "cache"))  # type: ignore[arg-type]


def _evaluate(tmp_path: Path, metric: Callable[..., float]) -> float:
    evaluator = Evaluator(metrics={"probe": metric})
    return evaluator.evaluate(
        _task("probe").evaluator, _ctx(tmp_path), last_action_fail=False
    ).score


def test_evaluator_mode_picks_the_registry() -> None:
    assert Evaluator().mode == "osworld"
    assert Evaluator().metrics["compare_pptx_files"] is METRICS["compare_pptx_files"]
    fixed = Evaluator(mode="fixed")
    assert fixed.metrics["compare_pptx_files"] is FIXED_METRICS["compare_pptx_files"]
    assert fixed.metrics["exact_match"] is METRICS["exact_match"]


def test_evaluator_raises_missing_libraries_and_scores_broken_files_zero(tmp_path: Path) -> None:
    def missing(result: Any) -> float:
        raise DependencyNotInstalled("needs 'x': pip install 'osworld-gym[eval]'")

    def library_import_failed(result: Any) -> float:
        raise ImportError("Missing optional dependency 'openpyxl'")

    def broken_file(result: Any) -> float:
        raise ValueError("not a workbook")

    with pytest.raises(DependencyNotInstalled, match=INSTALL):
        _evaluate(tmp_path, missing)
    with pytest.raises(DependencyNotInstalled, match=rf"'probe'.*openpyxl.*{INSTALL}"):
        _evaluate(tmp_path, library_import_failed)
    assert _evaluate(tmp_path, broken_file) == 0.0
    assert _evaluate(tmp_path, lambda result: 1.0) == 1.0


# --- the env option -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["osworld", "fixed"])
def test_env_scores_in_its_evaluation_mode(mode: str) -> None:
    from osworld_gym.env import OSWorldEnv

    env = OSWorldEnv(evaluation=mode)  # nothing starts before reset
    try:
        assert env.evaluator.mode == mode
        assert (
            env.evaluator.metrics["check_triangle_position"]
            is metrics_for(mode)["check_triangle_position"]
        )
        assert env._info(timings={})["evaluation_mode"] == mode
    finally:
        env.close()


# --- missing libraries in every metric with a broad except ----------------------------------


def _touch(tmp_path: Path, *names: str) -> list[str]:
    paths = [tmp_path / name for name in names]
    for path in paths:
        path.write_bytes(b"placeholder")
    return [str(p) for p in paths]


def _docx_calls(tmp_path: Path) -> list[tuple[str, Callable[[], Any]]]:
    a, b, c = _touch(tmp_path, "a.docx", "b.docx", "c.docx")
    return [
        ("compare_docx_files", lambda: get_metric("compare_docx_files")(a, b)),
        (
            "compare_docx_files_and_ignore_new_lines",
            lambda: get_metric("compare_docx_files_and_ignore_new_lines")(a, b),
        ),
        ("compare_docx_lines", lambda: get_metric("compare_docx_lines")(a, b)),
        (
            "compare_unique_train_records",
            lambda: get_metric("compare_unique_train_records")(a, [b, c]),
        ),
        ("compare_references", lambda: get_metric("compare_references")(a, b)),
        ("fuzzy_place_math", lambda: get_metric("fuzzy_place_math")(a, {"expected": ["x"]})),
        ("compare_docx_tables", lambda: get_metric("compare_docx_tables")(a, b)),
    ]


def _calls(tmp_path: Path) -> list[tuple[str, str, Callable[[], Any]]]:
    """(library made missing, metric, call) for each metric that reads inside a broad except."""
    pdf_a, pdf_b = _touch(tmp_path, "a.pdf", "b.pdf")
    pptx_a, pptx_b = _touch(tmp_path, "a.pptx", "b.pptx")
    (xlsx,) = _touch(tmp_path, "a.xlsx")
    zip_a, zip_b = str(tmp_path / "a.zip"), str(tmp_path / "b.zip")
    for archive in (zip_a, zip_b):
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("report.pdf", b"%PDF-1.4 placeholder")
    calls = [("docx", name, call) for name, call in _docx_calls(tmp_path)]
    calls += [
        ("pymupdf", "compare_pdfs", lambda: get_metric("compare_pdfs")(pdf_a, pdf_b)),
        (
            "pymupdf",
            "compare_archive",
            lambda: get_metric("compare_archive")(zip_a, zip_b, file_type="pdf"),
        ),
        ("pymupdf", "compare_pdf_images", lambda: get_metric("compare_pdf_images")(pdf_a, pdf_b)),
        ("PIL.Image", "compare_pdf_images", lambda: get_metric("compare_pdf_images")(pdf_a, pdf_b)),
        (
            "pypdf",
            "check_pdf_pages",
            lambda: get_metric("check_pdf_pages")(pdf_a, {"relation": "eq", "ref_value": 1}),
        ),
        ("pptx", "compare_pptx_files", lambda: get_metric("compare_pptx_files")(pptx_a, pptx_b)),
        (
            "pptx",
            "compare_pptx_files (fixed)",
            lambda: metrics_for("fixed")["compare_pptx_files"](pptx_a, pptx_b),
        ),
        (
            "pptx",
            "evaluate_presentation_fill_to_rgb_distance",
            lambda: get_metric("evaluate_presentation_fill_to_rgb_distance")(
                pptx_a, {"rgb": [0, 0, 0]}
            ),
        ),
        (
            "pptx",
            "check_image_stretch_and_center",
            lambda: get_metric("check_image_stretch_and_center")(pptx_a, pptx_b),
        ),
        (
            "openpyxl",
            "compare_table",
            lambda: get_metric("compare_table")(xlsx, xlsx, rules=[{"type": "sheet_name"}]),
        ),
        (
            "openpyxl",
            "compare_conference_city_in_order",
            lambda: get_metric("compare_conference_city_in_order")(xlsx, {"expected": []}),
        ),
    ]
    return calls


def test_missing_library_is_never_a_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each metric raises DependencyNotInstalled naming the install command, never scores 0."""
    calls = _calls(tmp_path)
    assert len({name for _, name, _ in calls}) >= 16
    for library, name, call in calls:
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, library, None)  # makes `import <library>` fail
            with pytest.raises(DependencyNotInstalled, match=INSTALL):
                call()
                pytest.fail(f"{name} scored with {library} missing")


def test_any_import_error_inside_a_metric_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library's own failing import is not a corrupt document: it is raised, not scored."""
    a, b = _touch(tmp_path, "a.docx", "b.docx")

    def failing_import(path: str) -> list[str]:
        raise ImportError("cannot import name 'oxml' from partially initialized module")

    monkeypatch.setattr(docs, "docx_paragraphs", failing_import)
    with pytest.raises(ImportError, match="oxml"):
        get_metric("compare_docx_lines")(a, b)
    monkeypatch.undo()
    assert get_metric("compare_docx_lines")(a, b) == 0.0  # the placeholder is not a document


def test_the_docs_list_exactly_the_fixed_metrics() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "evaluation.md"
    section = page.read_text().split("{#fixed-mode}", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {row.split("`")[1] for row in rows}
    assert listed == set(FIXED_METRICS)
