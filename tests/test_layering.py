"""Dependency rules between layers, checked in clean interpreters.

The rules: docs/design/index.md#dependency-rules.

The env library never pulls in the trainer's heavy stack; agents' modules import torch and
transformers only when a model is used.
"""

from __future__ import annotations

import json
import subprocess
import sys

import import_graph
import pytest

pytestmark = pytest.mark.heavy  # fresh interpreters and a read of every module

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
        "osworld_gym.policies.uitars",
        "osworld_agents.models",
        "osworld_agents.engines.hf",
        "osworld_agents.engines.chat_encoding",
        "osworld_agents.arpo.replay",
    ],
)
def test_agents_import_torch_only_when_a_model_is_used(module: str) -> None:
    assert not imported_after(f"import {module}") & {"torch", "transformers", "vllm"}


# --- the rules over every module, read from the source (lazy imports included) ---------------

# Trainer libraries the env library may import only lazily, and only in the adapter for them.
TRAINER_STACK = ("torch", "transformers", "vllm", "ray")
# Lazy imports of the trainer stack, allowed where the library is the integration's subject.
ALLOWED_LAZY = {
    ("osworld_gym.integrations.trl", "transformers"),  # TRL's trainer hands it a processor
    ("osworld_gym.pool.ray_backend", "ray"),  # the Ray backend of the pool
}
# What the guest server (the only code inside a desktop) may import besides the standard
# library and its own modules: its input, screenshot and accessibility libraries.
GUEST_THIRD_PARTY = {"Xlib", "mss", "numpy", "PIL", "pyautogui", "pyatspi", "gi"}
GUEST_PACKAGE_MODULES = {"osworld_gym.errors", "osworld_gym.version", "osworld_gym.cli_options"}
# The host's side of the protocol lives beside the server but never runs in a desktop.
GUEST_HOST_SIDE = {"osworld_gym.guest.client"}


def _env_library_imports() -> list[import_graph.Import]:
    return [i for i in import_graph.all_imports() if i.importer.startswith("osworld_gym")]


def top_of(i: import_graph.Import) -> str:
    return import_graph.top_level(i.target)


def test_the_env_library_never_imports_the_agents_package_anywhere() -> None:
    """Adapters, commands and everything else: not even lazily (so not the trainer either)."""
    broken = [
        str(i)
        for i in _env_library_imports()
        if import_graph.top_level(i.target) == "osworld_agents"
    ]
    assert not broken, "\n".join(broken)


def test_the_trainer_stack_is_imported_lazily_and_only_by_its_adapter() -> None:
    broken = [
        str(i)
        for i in _env_library_imports()
        if import_graph.top_level(i.target) in TRAINER_STACK
        and i.where != "type_checking"
        and (
            i.where == "module"
            or (i.importer, import_graph.top_level(i.target)) not in ALLOWED_LAZY
        )
    ]
    assert not broken, "\n".join(broken)


def test_the_guest_server_imports_only_its_own_libraries() -> None:
    broken = []
    for i in import_graph.all_imports():
        if not i.importer.startswith("osworld_gym.guest") or i.importer in GUEST_HOST_SIDE:
            continue
        if i.where == "type_checking":
            continue
        top = import_graph.top_level(i.target)
        module = import_graph.module_of(i.target)
        if module is not None and (
            module.startswith("osworld_gym.guest") or module in GUEST_PACKAGE_MODULES
        ):
            continue
        if module is None and (top in sys.stdlib_module_names or top in GUEST_THIRD_PARTY):
            continue
        broken.append(str(i))
    assert not broken, "\n".join(broken)


def test_metrics_never_touch_the_guest() -> None:
    broken = [
        str(i)
        for i in import_graph.all_imports()
        if i.importer.startswith("osworld_gym.evaluation.metrics")
        and (import_graph.module_of(i.target) or "").startswith("osworld_gym.guest")
    ]
    assert not broken, "\n".join(broken)


def test_no_import_cycle_between_modules() -> None:
    """Module-level imports (what runs on import) form no circle anywhere in either package."""
    assert import_graph.cycles(import_graph.import_edges(("module",))) == []


def test_the_getters_form_no_import_circle_even_through_lazy_or_typing_imports() -> None:
    """Not even a lazy or type-only import closes a circle among the getters: their modules
    read ``base`` and never the registry (the package) that maps getter types onto them."""
    edges = import_graph.import_edges(
        ("module", "lazy", "type_checking"), within="osworld_gym.evaluation.getters"
    )
    assert len(edges) >= 9  # the registry, base and the seven per-app modules
    assert import_graph.cycles(edges) == []


def test_the_import_reader_sees_a_planted_lazy_import(tmp_path) -> None:
    """The rules above are only as good as the reader: it must find imports inside functions,
    under TYPE_CHECKING and relative ones."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import torch\n"
        "def f():\n    from osworld_agents.trainer import train\n"
        "class C:\n    def g(self):\n        from .sibling import x\n"
    )
    found = {(i.target, i.where) for i in import_graph._imports_in("pkg.probe", source)}
    assert import_graph.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]
    assert ("torch", "type_checking") in found
    assert ("osworld_agents.trainer.train", "lazy") in found
    assert ("pkg.sibling.x", "lazy") in found


def test_every_module_of_the_env_library_loads_without_the_trainer_stack() -> None:
    """Import every module (but the adapters whose trainer package they wrap) in one clean
    interpreter: none of them pulls in torch, transformers, vLLM, Ray or the agents package."""
    wrapped = {"osworld_gym.integrations.trl", "osworld_gym.integrations.skyrl"}
    names = [
        m
        for m in import_graph.modules()
        if m.startswith("osworld_gym") and m not in wrapped and not m.endswith("__main__")
    ]
    code = (
        "import importlib\n"
        "from osworld_gym.errors import DependencyNotInstalled\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except (DependencyNotInstalled, ModuleNotFoundError) as e:\n"
        "        if getattr(e, 'name', '') and e.name.startswith('osworld'):\n"
        "            raise\n"
    )
    assert not imported_after(code) & set(HEAVY)
