"""Pure metric functions under OSWorld's names, and their registry.

Metrics score files and values on the host; they never touch a desktop. Heavy libraries
(openpyxl, pandas, python-docx, python-pptx, odfpy, pypdf, PyMuPDF, rapidfuzz, lxml, cssselect,
tldextract, mutagen) are imported when a metric runs; a missing one raises
``DependencyNotInstalled`` with the install command ``pip install 'osworld-gym[eval]'``. The
audio/video metrics need the ``media`` extra (librosa, fastdtw, OpenCV, imagehash) and the OCR
metric the ``ocr`` extra.
``metrics_for()`` gives the mapping of an evaluation mode: ``"osworld"`` (OSWorld's scores,
the default) or ``"fixed"`` (``FIXED_METRICS`` corrected).

Example:
    >>> from osworld_gym.evaluation.metrics import get_metric
    >>> get_metric("check_include_exclude")("3 passed", {"include": ["passed"]})
    1.0
"""

from __future__ import annotations

from osworld_gym.evaluation.metrics.registry import (
    EVALUATION_MODES,
    FIXED_METRICS,
    IGNORED_OPTIONS,
    INFEASIBLE,
    METRICS,
    Metric,
    UnknownMetricError,
    get_metric,
    metric_names,
    metrics_for,
    unknown_to_reference,
    unsupported_options,
)

__all__ = [
    "EVALUATION_MODES",
    "FIXED_METRICS",
    "IGNORED_OPTIONS",
    "INFEASIBLE",
    "METRICS",
    "Metric",
    "UnknownMetricError",
    "get_metric",
    "metric_names",
    "metrics_for",
    "unknown_to_reference",
    "unsupported_options",
]
