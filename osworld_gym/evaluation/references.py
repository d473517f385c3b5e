"""Evaluator references: which OSWorld's evaluator code our scores follow.

OSWorld's metrics and getters change between its releases, and a task file is written against
the code of its time: an option such as ``compare_config``'s ``containment_ok`` means nothing to
an older evaluator. Scores therefore name their reference, and the default is the OSWorld that
goes with the task files we run.

- ``osworld-2026.04`` (the default): OSWorld's repository as of April 2026, the code that goes
  with the task files in use (public snapshot: GitHub ``ljxpython/OSWorldUse``, commit
  ``f6cee71``, ``desktop_env/evaluators/``). It changed metric and getter functions of
  ``desktop-env`` 1.0.2 and added others; ``docs/concepts/evaluation.md`` lists each change
  and what we decided where the code and the task files disagree.
- ``osworld-1.0.2``: ``desktop-env`` 1.0.2 on PyPI (October 2025), to reproduce numbers of that
  era. Only the functions that changed since then differ between the two references.

Example:
    >>> check_reference("osworld-1.0.2")
    'osworld-1.0.2'
    >>> DEFAULT_REFERENCE
    'osworld-2026.04'
"""

from __future__ import annotations

OSWORLD_2026_04 = "osworld-2026.04"
OSWORLD_1_0_2 = "osworld-1.0.2"
DEFAULT_REFERENCE = OSWORLD_2026_04
# Newest first.
REFERENCES = (OSWORLD_2026_04, OSWORLD_1_0_2)

# Where each reference's behaviour comes from: recorded in dataset cards beside the name.
REFERENCE_SOURCES = {
    OSWORLD_2026_04: (
        "OSWorld's evaluators as of April 2026 (github.com/ljxpython/OSWorldUse f6cee71, "
        "desktop_env/evaluators), the code that goes with the task files"
    ),
    OSWORLD_1_0_2: "OSWorld's evaluators as released in desktop-env 1.0.2 (PyPI, October 2025)",
}


def check_reference(name: str) -> str:
    """``name`` when it is a known evaluator reference.

    Raises:
        ValueError: Another name; the message lists the known ones.
    """
    if name not in REFERENCES:
        raise ValueError(f"evaluator reference must be one of {REFERENCES}, got {name!r}")
    return name
