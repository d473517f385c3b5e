"""Missing extras refused up front (issue 38): what code needs is read from it, and a task whose
libraries are missing is refused by ``reset`` before any desktop starts. No desktop: the provider
here fails the test if asked to launch one; libraries are hidden with ``None`` in ``sys.modules``
(what ``import`` and ``find_spec`` both treat as not installed)."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import pytest

from osworld_gym.env import OSWorldEnv
from osworld_gym.errors import DependencyNotInstalled, MissingExtraError, ProviderError
from osworld_gym.evaluation.evaluator import Evaluator
from osworld_gym.evaluation.metrics import get_metric
from osworld_gym.extras import (
    Need,
    callable_needs,
    check_modules,
    check_tasks,
    install_command,
    missing_needs,
    task_needs,
)
from osworld_gym.providers.base import Desktop, Provider, ProviderConfig
from osworld_gym.tasks import load_tasks

PIP = f"{shlex.quote(sys.executable)} -m pip"
EVAL_FIX = f"{PIP} install 'osworld-gym[eval]'"
SCREEN = (1280, 720)
CALC = "calc-rename-sheet"
TEXT = "editor-append-line"  # compare_text_file: no optional library


class NoLaunchProvider(Provider):
    """A provider that counts launches and never starts anything."""

    name = "no-launch"

    def _launch_impl(self) -> Desktop:
        raise ProviderError("this test's provider launches no desktop")


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make libraries look not installed for the rest of the test."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


@pytest.fixture()
def env() -> Any:
    provider = NoLaunchProvider(ProviderConfig(screen_size=SCREEN))
    with OSWorldEnv(
        provider=provider, tasks="desktop-basics", screen_size=SCREEN, restart_attempts=0
    ) as e:
        yield e


def test_reset_refuses_a_calc_task_without_openpyxl_before_any_desktop(
    env: OSWorldEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide(monkeypatch, "openpyxl")
    with pytest.raises(MissingExtraError) as refused:
        env.reset(options={"task_id": CALC})
    assert env.provider.launches == 0  # refused before the provider was asked for a desktop
    message = str(refused.value)
    assert message == (
        f"missing extra 'eval' (openpyxl not installed) for task {CALC}: install with {EVAL_FIX}"
    )
    assert refused.value.extras == ("eval",) and refused.value.packages == ("openpyxl",)
    assert refused.value.command == EVAL_FIX
    # One family with the errors a metric raises when its library is missing.
    assert isinstance(refused.value, DependencyNotInstalled)


def test_reset_refuses_impress_and_writer_tasks_naming_their_libraries(
    env: OSWorldEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide(monkeypatch, "pptx", "docx")
    with pytest.raises(MissingExtraError, match=r"\(python-pptx not installed\)"):
        env.reset(options={"task_id": "impress-change-title"})
    with pytest.raises(MissingExtraError, match=r"\(python-docx not installed\)"):
        env.reset(options={"task_id": "writer-insert-title"})
    assert env.provider.launches == 0


def test_reset_of_a_task_without_optional_libraries_goes_on_to_the_desktop(
    env: OSWorldEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing of the eval extra is needed to score a text file: the check lets it through.
    hide(monkeypatch, "openpyxl", "pandas", "pptx", "docx", "rapidfuzz", "lxml")
    with pytest.raises(Exception, match="launches no desktop"):
        env.reset(options={"task_id": TEXT})
    assert env.provider.launches == 1


def test_metric_and_getter_needs_are_read_from_their_code() -> None:
    table = callable_needs(get_metric("compare_table"))
    assert {Need("openpyxl", "eval"), Need("pandas", "eval")} <= table
    assert Need("pptx", "eval") in callable_needs(get_metric("compare_pptx_files"))
    assert Need("librosa", "media") in callable_needs(get_metric("compare_audios"))
    assert Need("easyocr", "ocr") in callable_needs(get_metric("compare_image_text"))
    for plain in ("exact_match", "compare_text_file", "check_include_exclude"):
        assert callable_needs(get_metric(plain)) == frozenset(), plain
    # A rule method that only spreadsheets use does not make other rule users need openpyxl.
    assert callable_needs(get_metric("check_thunderbird_prefs")) == frozenset()

    evaluator = Evaluator()
    chrome = Need("playwright.sync_api", "chrome")
    assert chrome in callable_needs(evaluator.getters["active_tab_info"])
    assert callable_needs(evaluator.getters["vm_file"]) == frozenset()


def test_a_custom_metric_is_read_too() -> None:
    from osworld_gym.evaluation.metrics._deps import require

    def needs_mutagen(result: Any, expected: Any) -> float:
        return float(require("mutagen") is not None)

    def needs_media(result: Any) -> float:
        return float(bool(require("librosa", extra="media")))

    assert callable_needs(needs_mutagen) == {Need("mutagen", "eval")}
    assert callable_needs(needs_media) == {Need("librosa", "media")}
    assert callable_needs(len) == frozenset()  # no source: nothing known


def test_setup_steps_count_too(monkeypatch: pytest.MonkeyPatch) -> None:
    task = {
        "id": "chrome-tabs",
        "instruction": "x",
        "config": [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["about:blank"]}}],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "true"},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    }
    (loaded,) = load_tasks([task])
    assert Need("playwright.sync_api", "chrome") in task_needs(loaded, Evaluator())
    hide(monkeypatch, "playwright")
    chrome_fix = f"{PIP} install 'osworld-gym[chrome]'"
    with pytest.raises(MissingExtraError) as refused:
        check_tasks([loaded], Evaluator())
    assert str(refused.value).endswith(f"for task chrome-tabs: install with {chrome_fix}")


def test_check_tasks_names_every_extra_once_with_one_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks = load_tasks("desktop-basics")
    check_tasks(tasks, Evaluator())  # everything is installed here
    hide(monkeypatch, "openpyxl", "pptx")
    with pytest.raises(MissingExtraError) as refused:
        check_tasks(
            tasks,
            Evaluator(),
            what=" of 'desktop-basics'",
            also={"the docker provider": [Need("osworld_gym_no_such_module", "docker")]},
        )
    message = str(refused.value)
    assert message.startswith(
        "missing extras 'docker' (osworld_gym_no_such_module not installed) for the docker "
        "provider; 'eval' (openpyxl, python-pptx not installed) for 12 of the 37 tasks of "
        "'desktop-basics' (calc-append-book-row, "
    )
    assert message.endswith(f": install with {PIP} install 'osworld-gym[docker,eval]'")
    assert refused.value.extras == ("docker", "eval")


def test_install_commands_use_this_interpreters_pip() -> None:
    assert install_command("eval") == EVAL_FIX
    assert install_command("eval", "chrome") == f"{PIP} install 'osworld-gym[eval,chrome]'"
    assert install_command("train", torch_present=False) == (
        f"{PIP} install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && "
        f"{PIP} install 'osworld-gym[train]'"
    )
    assert install_command("train", torch_present=True) == f"{PIP} install 'osworld-gym[train]'"
    assert install_command("gui").endswith(
        f" && {PIP} install --no-deps pyautogui==0.9.54 mouseinfo==0.1.3"
    )


def test_pandas_brings_its_excel_reader_along(monkeypatch: pytest.MonkeyPatch) -> None:
    # pandas imports without openpyxl, then fails reading .xlsx: both count.
    hide(monkeypatch, "openpyxl")
    assert missing_needs([Need("pandas", "eval")]) == {"eval": ["openpyxl"]}
    with pytest.raises(MissingExtraError, match="for osworld-gym export: install with"):
        check_modules("export", ["json", "osworld_gym_no_such_module"], "osworld-gym export")


SAVE_WITH_PYAUTOGUI = {
    "id": "saves-with-pyautogui",
    "instruction": "x",
    "config": [],
    "evaluator": {
        "func": "exact_match",
        "postconfig": [
            {
                "type": "execute",
                "parameters": {
                    "command": ["python", "-c", "import pyautogui; pyautogui.hotkey('ctrl', 's')"]
                },
            }
        ],
        "result": {"type": "vm_command_line", "command": "true"},
        "expected": {"type": "rule", "rules": {"expected": ""}},
    },
}


def test_a_local_desktops_pyautogui_commands_need_the_gui_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OSWorld's postconfig saves files with ``python -c "import pyautogui ..."``: on a local
    desktop that is this Python, so without the gui extra the file would stay unsaved."""
    from osworld_gym.extras import runs_this_python
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    (task,) = load_tasks([SAVE_WITH_PYAUTOGUI])
    assert Need("pyautogui", "gui") in task_needs(task, Evaluator(), guest_python=True)
    assert task_needs(task, Evaluator()) == frozenset()  # an image brings its own
    hide(monkeypatch, "pyautogui")
    check_tasks([task], Evaluator())  # not this Python: nothing to check here
    with pytest.raises(MissingExtraError) as refused:
        check_tasks([task], Evaluator(), guest_python=True)
    assert str(refused.value) == (
        "missing extra 'gui' (pyautogui not installed) for task saves-with-pyautogui: install "
        f"with {PIP} install 'osworld-gym[gui]' && "
        f"{PIP} install --no-deps pyautogui==0.9.54 mouseinfo==0.1.3"
    )

    assert runs_this_python("local") and not runs_this_python("docker")
    assert runs_this_python(LocalProviderConfig())
    assert runs_this_python(LocalProvider(LocalProviderConfig(python=sys.executable)))
    assert not runs_this_python(LocalProviderConfig(python="/opt/other/bin/python"))
    assert not runs_this_python(NoLaunchProvider(ProviderConfig()))

    # The env's reset on a local desktop refuses it before launching one.
    def no_launch(self: object) -> Desktop:
        raise AssertionError("a local desktop was launched")

    monkeypatch.setattr(LocalProvider, "_launch_impl", no_launch)
    with OSWorldEnv(tasks=[SAVE_WITH_PYAUTOGUI], screen_size=SCREEN) as env:
        with pytest.raises(MissingExtraError, match="'gui' \\(pyautogui not installed\\)"):
            env.reset()
        assert env.provider.launches == 0
