"""Errors of the task layer (defined in ``osworld_gym.errors``, re-exported here)."""

from __future__ import annotations

from osworld_gym.errors import (
    TaskFormatError,
    TaskSourceNotFoundError,
    UnknownDomainError,
    UnknownSuiteError,
    UnknownTaskError,
)

__all__ = [
    "TaskFormatError",
    "TaskSourceNotFoundError",
    "UnknownDomainError",
    "UnknownSuiteError",
    "UnknownTaskError",
]
