"""The trainer's console scripts, which check for the ``train`` extra before anything else.

``osworld-arpo``, ``osworld-arpo-cpu`` and ``osworld-arpo-select`` import torch and
transformers as soon as their modules load. On an install without the ``train`` extra each
prints one line naming the fix and exits 2 (``--help`` too), instead of a ``ModuleNotFoundError``
traceback: the check runs here, before any trainer module is imported.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["TRAIN_EXTRA", "arpo", "arpo_cpu", "arpo_select", "missing_train_extra"]

TRAIN_EXTRA = ("torch", "transformers")
INSTALL_HINT = "needs the train extra (torch, transformers): pip install 'osworld-gym[train]'"


def missing_train_extra() -> list[str]:
    """The libraries of the ``train`` extra that cannot be imported, found without importing.

    Returns:
        The missing ones among ``torch`` and ``transformers``, in that order.
    """
    missing = []
    for name in TRAIN_EXTRA:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken or blocked module counts as missing
            found = False
        if not found:
            missing.append(name)
    return missing


def require_train_extra(prog: str) -> None:
    """Exit with status 2 and the install hint on one line when the ``train`` extra is missing.

    Args:
        prog: The program named in the message.
    """
    if missing_train_extra():
        sys.stderr.write(f"{prog}: {INSTALL_HINT}\n")
        raise SystemExit(2)


def arpo(argv: Sequence[str] | None = None) -> int:
    """``osworld-arpo``: ``osworld_agents.trainer.train.cli()``."""
    require_train_extra("osworld-arpo")
    from osworld_agents.trainer.train import cli

    return cli(argv)


def arpo_cpu(argv: Sequence[str] | None = None) -> int:
    """``osworld-arpo-cpu``: ``osworld_agents.trainer.cpu_run.cli()``."""
    require_train_extra("osworld-arpo-cpu")
    from osworld_agents.trainer.cpu_run import cli

    return cli(argv)


def arpo_select(argv: Sequence[str] | None = None) -> int:
    """``osworld-arpo-select``: ``osworld_agents.trainer.baseline.cli()``."""
    require_train_extra("osworld-arpo-select")
    from osworld_agents.trainer.baseline import cli

    return cli(argv)
