"""Dependency rules between layers, checked in clean interpreters.

The rules: docs/design/index.md#dependency-rules.

The env library never pulls in the trainer's heavy stack; agents' modules import torch and
transformers only when a model is used.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "ray", "vllm", "osworld_agents")


def imported_after(code: str) -> set[str]:
    """Top-level module names present in ``sys.modules`` after running ``code`` afresh."""
    report = "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "module",
    [
        "osworld_gym",
        "osworld_gym.env",
        "osworld_gym.pool",
        "osworld_gym.cli",
        "osworld_gym.guest",
        "osworld_gym.integrations",
    ],
)
def test_the_env_library_never_imports_the_trainer_stack(module: str) -> None:
    assert not imported_after(f"import {module}") & set(HEAVY)


@pytest.mark.parametrize(
    "module",
    [
        "osworld_agents.engines",
        "osworld_agents.uitars",
        "osworld_agents.models",
        "osworld_agents.engines.hf",
        "osworld_agents.engines.chat_encoding",
        "osworld_agents.arpo.replay",
    ],
)
def test_agents_import_torch_only_when_a_model_is_used(module: str) -> None:
    assert not imported_after(f"import {module}") & {"torch", "transformers", "vllm"}
