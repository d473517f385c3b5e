"""A griffe extension for the documentation build: ``Example:`` sections render as examples.

The project's Google-style docstrings title their doctests ``Example:``; griffe's Google parser
knows only ``Examples:`` as an examples section and would render the doctest lines as Markdown
(where ``tool["function"]["name"]`` reads as a reference link). Loaded by mkdocstrings from
``mkdocs.yml``; the source files stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE_TITLE = re.compile(r"^(?P<indent>[ \t]*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Retitle ``Example:`` docstring sections ``Examples:`` as each object is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of every loaded object (module, class, function, attribute)."""
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE_TITLE.sub(r"\g<indent>Examples:", obj.docstring.value)
