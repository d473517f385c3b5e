"""Which session desktops run when their config leaves it open (``session=None``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from osworld_gym.commands.run import provider_from_args
from osworld_gym.providers import make_provider, session_choice, settle_session
from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig
from osworld_gym.providers.session_choice import session_for, wants_gnome
from osworld_gym.tasks import load_tasks

OSWORLD_TASK = {
    "id": "b6781586-6346-41cd-935a-a6b1487918fc",
    "snapshot": "os",
    "instruction": "Set the time zone to UTC+0.",
    "source": "https://help.ubuntu.com/lts/ubuntu-help/clock-timezone.html.en",
    "config": [],
    "evaluator": {"func": "infeasible"},
}


def _folder(tmp_path: Path, *tasks: dict) -> Path:
    folder = tmp_path / "examples" / "os"
    folder.mkdir(parents=True)
    for task in tasks:
        (folder / f"{task['id']}.json").write_text(json.dumps(task))
    return tmp_path


def test_osworld_task_files_want_gnome_and_the_bundled_suites_do_not(tmp_path: Path) -> None:
    assert wants_gnome(load_tasks(_folder(tmp_path, OSWORLD_TASK)))
    assert not wants_gnome(load_tasks("desktop-basics"))
    assert not wants_gnome(load_tasks("ui-basics"))
    # The same suite's files loaded from a folder path are still this package's own.
    suite = Path(__file__).resolve().parents[2] / "envs" / "desktop-basics"
    assert not wants_gnome(load_tasks(suite))
    # Tasks built in memory say nothing of where they come from.
    assert not wants_gnome(load_tasks([OSWORLD_TASK]))


def test_without_gnome_the_light_session_runs_and_a_warning_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    tasks = load_tasks(_folder(tmp_path, OSWORLD_TASK))
    monkeypatch.setattr(gnome_session, "available", lambda: "missing gnome-shell (run x.sh)")
    with caplog.at_level(logging.WARNING, logger=session_choice.__name__):
        assert session_for(tasks) == "minimal"
    assert "missing gnome-shell (run x.sh)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=session_choice.__name__):
        assert session_for(tasks, sandbox=False) == "minimal"
    assert "sandbox" in caplog.text
    caplog.clear()
    assert session_for(load_tasks("desktop-basics")) == "minimal"
    assert caplog.text == ""  # nothing to warn about for the bundled suites


def test_make_provider_settles_an_open_session_and_keeps_a_chosen_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gnome_session, "available", lambda: None)
    tasks = load_tasks(_folder(tmp_path, OSWORLD_TASK))
    bundled = load_tasks("desktop-basics")

    def session(spec: object, tasks: object) -> str | None:
        provider = make_provider(spec, tasks=tasks)  # type: ignore[arg-type]
        assert isinstance(provider, LocalProvider)
        return provider.config.session

    assert session("local", tasks) == "gnome"
    assert session(None, tasks) == "gnome"
    assert session(LocalProviderConfig(screen_size=(640, 480)), tasks) == "gnome"
    assert session(LocalProviderConfig(session="minimal"), tasks) == "minimal"
    assert session("local", bundled) == "minimal"
    assert session(LocalProviderConfig(session="gnome"), bundled) == "gnome"
    # A ready provider is the caller's: passed through as it is.
    ready = LocalProvider(LocalProviderConfig(reap_leftovers=False))
    assert make_provider(ready, tasks=tasks) is ready and ready.config.session is None
    # A qemu VM of our image: its config is settled as it becomes a provider.
    from osworld_gym.providers.qemu.config import QemuProviderConfig
    from osworld_gym.providers.qemu.provider import QemuProvider

    vm = make_provider(QemuProviderConfig(image="/nonexistent.qcow2"), tasks=tasks)
    assert isinstance(vm, QemuProvider) and vm.config.session == "gnome"


def test_the_cli_settles_a_qemu_vms_session(tmp_path: Path) -> None:
    manifest = {"image": "disk.qcow2", "kernel": "vmlinuz", "guest_port": 5000}
    (tmp_path / "image.json").write_text(json.dumps(manifest))
    tasks = load_tasks(_folder(tmp_path / "tasks", OSWORLD_TASK))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OSWORLD_GYM_QEMU_IMAGE_DIR", str(tmp_path))
        config, described = provider_from_args("qemu", None, (640, 480), tasks=tasks)
        assert (config.session, described) == ("gnome", f"{tmp_path / 'disk.qcow2'}, gnome")
        config, _ = provider_from_args("qemu", None, (640, 480), session="minimal", tasks=tasks)
        assert config.session == "minimal"
        patch.setenv("OSWORLD_GYM_QEMU_IMAGE_DIR", str(tmp_path / "none"))
        with pytest.raises(ValueError, match="no qemu image at"):
            provider_from_args("qemu", None, (640, 480), tasks=tasks)


def test_the_cli_records_the_session_it_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gnome_session, "available", lambda: None)
    tasks = load_tasks(_folder(tmp_path, OSWORLD_TASK))
    config, described = provider_from_args("local", None, (640, 480), tasks=tasks)
    assert (config.session, described.endswith(", gnome")) == ("gnome", True)
    config, described = provider_from_args(
        "local", None, (640, 480), session="minimal", tasks=tasks
    )
    assert (config.session, described.endswith(", minimal")) == ("minimal", True)
    with pytest.raises(ValueError, match="--session gnome is for the local, docker and qemu"):
        provider_from_args("remote", None, (640, 480), session="gnome")


def test_docker_desktops_get_the_session_their_tasks_need_whatever_this_host_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osworld_gym.providers.docker.provider import DockerProviderConfig

    # GNOME is in the image: this host lacking it (or its sandbox) does not matter.
    monkeypatch.setattr(gnome_session, "available", lambda: "missing gnome-shell")
    tasks = load_tasks(_folder(tmp_path, OSWORLD_TASK))
    assert session_for(tasks, in_image=True) == "gnome"
    assert session_for(load_tasks("desktop-basics"), in_image=True) == "minimal"
    config, image = provider_from_args("docker", None, (640, 480), tasks=tasks)
    assert (config.session, image) == ("gnome", DockerProviderConfig().image)
    config, _ = provider_from_args("docker", "mine:1", (640, 480), session="minimal", tasks=tasks)
    assert (config.session, config.image) == ("minimal", "mine:1")
    # What make_provider does to a docker config before it builds the provider.
    assert settle_session(DockerProviderConfig(), tasks).session == "gnome"
    assert settle_session(DockerProviderConfig(), load_tasks("desktop-basics")).session == "minimal"
    assert settle_session(DockerProviderConfig(session="minimal"), tasks).session == "minimal"
    official = DockerProviderConfig.for_official("/data/Ubuntu.qcow2")
    assert settle_session(official, tasks).session is None  # OSWorld's own GNOME VM
    assert settle_session("docker", tasks) == "docker"  # a name: settled once it is a config
    # The qemu recipe's VM as a container; OSWorld's Ubuntu.qcow2 is its own GNOME desktop.
    from osworld_gym.providers.qemu.config import QemuProviderConfig

    assert settle_session(QemuProviderConfig(), tasks).session == "gnome"
    assert settle_session(QemuProviderConfig(), load_tasks("desktop-basics")).session == "minimal"
    assert settle_session(QemuProviderConfig(session="minimal"), tasks).session == "minimal"
    assert settle_session(QemuProviderConfig(guest_env=False), tasks).session is None
    assert QemuProviderConfig(session="gnome").session == "gnome"
    with pytest.raises(ValueError, match="guest_env"):
        QemuProviderConfig(guest_env=False, session="gnome")
    with pytest.raises(ValueError, match="session must be one of"):
        DockerProviderConfig(session="kde")
    with pytest.raises(ValueError, match="OSWorld's GNOME desktop"):
        DockerProviderConfig.for_official("/data/Ubuntu.qcow2", session="minimal")
