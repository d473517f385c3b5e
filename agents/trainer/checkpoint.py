"""Checkpoints a killed run resumes from exactly.

``<output_dir>/checkpoints/ckpt-<iteration>/`` holds:

* ``model/`` -- the policy in Hugging Face format (``save_pretrained`` of the model, tokenizer
  and image processor, plus the source folder's other files such as the chat template), so a
  checkpoint is also a model any tool loads, and a warm start for the next run;
* ``optimizer.pt`` -- the optimizer's state (the learning rate is a function of the iteration);
* ``replay.pkl`` -- the replay buffer (:meth:`ReplayBuffer.save`);
* ``trainer_state.pt`` -- the last completed iteration, the task schedule, and every rank's RNG
  states (``random``, ``numpy``, ``torch``, CUDA, and the generators the loop owns);
* ``config.json`` -- the run's settings, for people.

A checkpoint is written into a temporary folder and renamed into place, then the ``latest``
file is replaced atomically; a crash at any point leaves the previous checkpoint intact and
``latest`` naming a complete one.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from osworld_agents.arpo import ReplayBuffer

logger = logging.getLogger(__name__)

__all__ = [
    "LATEST",
    "capture_rng",
    "list_checkpoints",
    "load_checkpoint",
    "resolve_resume",
    "restore_rng",
    "save_checkpoint",
]

LATEST = "latest"
_NAME = re.compile(r"^ckpt-(\d+)$")
_WEIGHT_FILES = re.compile(r"\.(safetensors|bin|pt|pth)$|\.index\.json$")

OwnedRng = np.random.Generator | random.Random


def capture_rng(owned: Mapping[str, OwnedRng]) -> dict[str, Any]:
    """The global RNG states (random, numpy, torch, CUDA) and those of ``owned`` generators."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "owned": {name: _state_of(rng) for name, rng in owned.items()},
    }


def _state_of(rng: OwnedRng) -> Any:
    return rng.bit_generator.state if isinstance(rng, np.random.Generator) else rng.getstate()


def restore_rng(state: Mapping[str, Any], owned: Mapping[str, OwnedRng]) -> None:
    """Put back what :func:`capture_rng` captured (owned generators missing there are kept)."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for name, rng in owned.items():
        if name not in state["owned"]:
            logger.warning("checkpoint has no state for generator %r; it keeps its own", name)
        elif isinstance(rng, np.random.Generator):
            rng.bit_generator.state = state["owned"][name]
        else:
            rng.setstate(state["owned"][name])


def list_checkpoints(root: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """Complete checkpoints under ``root`` as ``(iteration, folder)``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _NAME.match(p.name))]
    return sorted(found)


def _save_model(folder: Path, policy: Any) -> None:
    policy.model.save_pretrained(folder)
    policy.tokenizer.save_pretrained(folder)
    policy.image_processor.save_pretrained(folder)
    # Keep what the source folder has beyond these (chat template, processor config...).
    source_dir = Path(str(policy.source)) if policy.source is not None else None
    if source_dir is not None and source_dir.is_dir():
        for path in source_dir.iterdir():
            target = folder / path.name
            if path.is_file() and not target.exists() and not _WEIGHT_FILES.search(path.name):
                shutil.copy2(path, target)


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def save_checkpoint(
    root: str | os.PathLike[str],
    iteration: int,
    *,
    policy: Any,
    optimizer: torch.optim.Optimizer,
    replay: ReplayBuffer,
    trainer_state: Mapping[str, Any],
    config: Mapping[str, Any],
    keep: int = 0,
) -> Path:
    """Write ``ckpt-<iteration>`` atomically, point ``latest`` at it, prune old ones.

    Args:
        root: The checkpoints folder.
        iteration: The last completed iteration.
        policy: A :class:`~osworld_agents.models.PolicyModel` (model, tokenizer, image
            processor, source).
        optimizer: The optimizer.
        replay: The replay buffer.
        trainer_state: Iteration, schedule and RNG states (pickled with ``torch.save``).
        config: The run's settings (written as JSON).
        keep: Checkpoints to keep, newest first (0: all).

    Returns:
        The checkpoint folder.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"ckpt-{iteration}"
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        _save_model(tmp / "model", policy)
        torch.save({"optimizer": optimizer.state_dict()}, tmp / "optimizer.pt")
        replay.save(tmp / "replay.pkl")
        torch.save(dict(trainer_state), tmp / "trainer_state.pt")
        (tmp / "config.json").write_text(json.dumps(dict(config), indent=2, default=str))
        if final.exists():  # the same iteration saved before (a re-run): replace it
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _write_atomically(root / LATEST, final.name + "\n")
    if keep > 0:
        for _, old in list_checkpoints(root)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    logger.info("checkpoint %s written", final)
    return final


def resolve_resume(resume: str | None, root: str | os.PathLike[str]) -> Path | None:
    """The checkpoint to resume from.

    Args:
        resume: None (start fresh), ``"auto"`` (``root``'s latest checkpoint, if any), a
            checkpoint folder, or a checkpoints folder holding a ``latest`` file.
        root: The run's checkpoints folder.

    Returns:
        The checkpoint folder, or None to start fresh.

    Raises:
        FileNotFoundError: An explicit checkpoint does not exist.
    """
    if resume is None:
        return None
    folder = Path(root) if resume == "auto" else Path(resume).expanduser()
    if (folder / LATEST).is_file():
        folder = folder / (folder / LATEST).read_text().strip()
    elif resume == "auto":
        logger.info("no checkpoint under %s: starting fresh", folder)
        return None
    if not (folder / "trainer_state.pt").is_file():
        raise FileNotFoundError(f"no complete checkpoint at {folder}")
    return folder


def load_checkpoint(
    folder: str | os.PathLike[str],
    *,
    optimizer: torch.optim.Optimizer,
    replay: ReplayBuffer,
    map_location: Any = "cpu",
) -> dict[str, Any]:
    """Restore the optimizer and the replay buffer; return the trainer state.

    The model is loaded separately, from ``folder / "model"`` (it is an ordinary model folder).
    Unpickles: load only checkpoints you wrote yourself.

    Returns:
        The trainer state given to :func:`save_checkpoint`.
    """
    folder = Path(folder)
    states = torch.load(folder / "optimizer.pt", map_location=map_location, weights_only=False)
    optimizer.load_state_dict(states["optimizer"])
    replay.load(folder / "replay.pkl")
    state = torch.load(folder / "trainer_state.pt", map_location="cpu", weights_only=False)
    logger.info("resuming from %s (iteration %d done)", folder, state["iteration"])
    return state
