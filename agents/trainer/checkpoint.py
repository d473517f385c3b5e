"""Checkpoints a killed run resumes from exactly.

``<output_dir>/checkpoints/ckpt-<iteration>/`` holds:

* ``model/`` -- the policy in Hugging Face format (``save_pretrained`` of the model, tokenizer
  and image processor, plus the source folder's other files such as the chat template), so a
  checkpoint is also a model any tool loads, and a warm start for the next run;
* ``optimizer.pt`` -- the optimizer's full state, keyed by parameter name (the learning rate is
  a function of the iteration), so a sharded (FSDP) run and an unsharded one resume from each
  other's checkpoints; older checkpoints keyed by position still load;
* ``replay.pkl`` -- the replay buffer (``ReplayBuffer.save()``);
* ``trainer_state.pt`` -- the last completed iteration, the task schedule, and every rank's RNG
  states (``random``, ``numpy``, ``torch``, CUDA, and the generators the loop owns);
* ``config.json`` -- the run's settings, for people.

Under FSDP every rank first calls ``gather_full_state()`` (a collective: the shards are
gathered to rank 0, in host memory), and rank 0 writes what it returned.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from osworld_agents.arpo import ReplayBuffer
from osworld_agents.trainer.sharding import is_sharded
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_optimizer_state_dict,
)

logger = logging.getLogger(__name__)

__all__ = [
    "LATEST",
    "FullState",
    "capture_rng",
    "gather_full_state",
    "list_checkpoints",
    "load_checkpoint",
    "resolve_resume",
    "restore_rng",
    "save_checkpoint",
]

LATEST = "latest"
_NAME = re.compile(r"^ckpt-(\d+)$")
_WEIGHT_FILES = re.compile(r"\.(safetensors|bin|pt|pth)$|\.index\.json$")
# optimizer.pt's "keys": parameter names (absent in checkpoints keyed by position).
_BY_NAME = "fqn"

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
    """Put back what ``capture_rng()`` captured (owned generators missing there are kept)."""
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


@dataclass(frozen=True)
class FullState:
    """The model and optimizer state a checkpoint holds, gathered whole on the writing rank.

    Attributes:
        model: The model's full state dict on the CPU, or None to let ``save_pretrained`` take
            the (unsharded) model's own.
        optimizer: The optimizer's state dict keyed by parameter name: ``state`` maps a name
            to its tensors, each ``param_groups`` entry lists names under ``params``.
    """

    model: dict[str, torch.Tensor] | None
    optimizer: dict[str, Any]


def _trainable_names(model: torch.nn.Module) -> dict[int, str]:
    return {id(p): name for name, p in model.named_parameters() if p.requires_grad}


def _optimizer_by_name(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """An unsharded optimizer's state dict with parameter names in place of positions."""
    names = _trainable_names(model)
    ordered = [names[id(p)] for group in optimizer.param_groups for p in group["params"]]
    local = optimizer.state_dict()
    return {
        "state": {ordered[index]: value for index, value in local["state"].items()},
        "param_groups": [
            {**group, "params": [ordered[index] for index in group["params"]]}
            for group in local["param_groups"]
        ],
    }


def _optimizer_by_position(
    saved: Mapping[str, Any], optimizer: torch.optim.Optimizer, model: torch.nn.Module | None
) -> dict[str, Any]:
    """A name-keyed optimizer state dict in ``optimizer``'s positional form.

    With ``model`` the names pick the parameters; without it, the saved groups' order must be
    the optimizer's (as when both were built by ``make_optimizer`` over the same model).
    """
    if model is not None:
        names = _trainable_names(model)
        ordered = [names[id(p)] for group in optimizer.param_groups for p in group["params"]]
    else:
        ordered = [name for group in saved["param_groups"] for name in group["params"]]
    position = {name: index for index, name in enumerate(ordered)}
    groups = []
    offset = 0
    for group, live in zip(saved["param_groups"], optimizer.param_groups, strict=True):
        # load_state_dict pairs a group's listed ids with the live group's parameters in
        # order, so list them in the live order; the names must be the same set.
        live_names = ordered[offset : offset + len(live["params"])]
        offset += len(live["params"])
        if sorted(group["params"]) != sorted(live_names):
            raise ValueError("the checkpoint's optimizer groups do not match this optimizer's")
        groups.append({**group, "params": [position[name] for name in live_names]})
    return {
        "state": {position[name]: value for name, value in saved["state"].items()},
        "param_groups": groups,
    }


def _positional_to_names(saved: Mapping[str, Any], model: torch.nn.Module) -> dict[str, Any]:
    """An old, position-keyed state dict named after the trainable parameters, in order."""
    ordered = [name for name, p in model.named_parameters() if p.requires_grad]
    return {
        "state": {ordered[index]: value for index, value in saved["state"].items()},
        "param_groups": [
            {**group, "params": [ordered[index] for index in group["params"]]}
            for group in saved["param_groups"]
        ],
    }


def gather_full_state(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, *, is_writer: bool
) -> FullState | None:
    """What ``save_checkpoint()`` writes, for the rank that writes it.

    For a sharded model this is a collective: every rank must call it, and the shards are
    gathered to rank 0 one tensor at a time, in host memory. For an unsharded one it is local.

    Args:
        model: The policy (sharded or not).
        optimizer: Its optimizer.
        is_writer: This rank writes the checkpoint (rank 0).

    Returns:
        The full state on the writer, None elsewhere. Some of its tensors may be the live ones
        (an unsharded optimizer's state, the step counts): write it before training on.
    """
    if is_sharded(model):
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model_state = get_model_state_dict(model, options=options)
        optimizer_state = get_optimizer_state_dict(model, optimizer, options=options)
        return FullState(model_state, dict(optimizer_state)) if is_writer else None
    if not is_writer:
        return None
    return FullState(None, _optimizer_by_name(model, optimizer))


def _save_model(folder: Path, policy: Any, state_dict: dict[str, torch.Tensor] | None) -> None:
    policy.model.save_pretrained(folder, state_dict=state_dict)
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
    full_state: FullState | None = None,
) -> Path:
    """Write ``ckpt-<iteration>`` atomically, point ``latest`` at it, prune old ones.

    Args:
        root: The checkpoints folder.
        iteration: The last completed iteration.
        policy: A ``PolicyModel`` (model, tokenizer, image
            processor, source).
        optimizer: The optimizer.
        replay: The replay buffer.
        trainer_state: Iteration, schedule and RNG states (pickled with ``torch.save``).
        config: The run's settings (written as JSON).
        keep: Checkpoints to keep, newest first (0: all).
        full_state: From ``gather_full_state()`` (required for a sharded model); None takes
            the unsharded model's and optimizer's own.

    Returns:
        The checkpoint folder.

    Raises:
        ValueError: The model is sharded and ``full_state`` is missing.
    """
    if full_state is None:
        if is_sharded(policy.model):
            raise ValueError("a sharded model's state must be gathered on every rank first")
        full_state = FullState(None, _optimizer_by_name(policy.model, optimizer))
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"ckpt-{iteration}"
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        _save_model(tmp / "model", policy, full_state.model)
        torch.save({"keys": _BY_NAME, "optimizer": full_state.optimizer}, tmp / "optimizer.pt")
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
    model: torch.nn.Module | None = None,
    is_main: bool = True,
) -> dict[str, Any]:
    """Restore the optimizer and the replay buffer; return the trainer state.

    The model is loaded separately, from ``folder / "model"`` (it is an ordinary model folder).
    Unpickles: load only checkpoints you wrote yourself.

    The optimizer state loads into a sharded or an unsharded optimizer whichever kind wrote it.
    For a sharded ``model`` this is a collective: every rank calls it, only rank 0 reads
    ``optimizer.pt``, and each rank receives its shards from there.

    Args:
        folder: The checkpoint.
        optimizer: The optimizer to restore (built over ``model``'s parameters).
        replay: The replay buffer to restore.
        map_location: Where an unsharded optimizer's tensors go.
        model: The policy; required when it is sharded, else it matches the optimizer state to
            parameters by name rather than by position.
        is_main: This rank is rank 0 (for a sharded model: the one that reads the file).

    Returns:
        The trainer state given to ``save_checkpoint()``.
    """
    folder = Path(folder)
    if model is not None and is_sharded(model):
        by_name: dict[str, Any] = {}
        if is_main:
            states = torch.load(folder / "optimizer.pt", map_location="cpu", weights_only=False)
            by_name = states["optimizer"]
            if states.get("keys") != _BY_NAME:
                by_name = _positional_to_names(by_name, model)
        # Non-writers pass an empty dict and receive their shards from rank 0.
        set_optimizer_state_dict(
            model,
            optimizer,
            by_name,
            options=StateDictOptions(
                full_state_dict=True,
                broadcast_from_rank0=torch.distributed.get_world_size() > 1,
            ),
        )
    else:
        states = torch.load(folder / "optimizer.pt", map_location=map_location, weights_only=False)
        saved = states["optimizer"]
        if states.get("keys") == _BY_NAME:
            saved = _optimizer_by_position(saved, optimizer, model)
        optimizer.load_state_dict(saved)
    replay.load(folder / "replay.pkl")
    state = torch.load(folder / "trainer_state.pt", map_location="cpu", weights_only=False)
    logger.info("resuming from %s (iteration %d done)", folder, state["iteration"])
    return state
