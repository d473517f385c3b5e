"""What a task needs from a desktop, read from its JSON: commands, assets, accounts, the web."""

from __future__ import annotations

from typing import Any

import pytest

from osworld_gym.tasks import Task, download_cache_name
from osworld_gym.tasks.requirements import (
    AssetRef,
    app_label,
    command_words,
    task_assets,
    task_requirements,
)


def make_task(config: list[dict[str, Any]] = (), **fields: Any) -> Task:
    domain = fields.pop("domain", None)
    data: dict[str, Any] = {
        "id": "t1",
        "instruction": "do it",
        "config": list(config),
        "evaluator": {"func": "infeasible"},
    }
    data.update(fields)
    return Task.from_dict(data, domain=domain)


def step(kind: str, **params: Any) -> dict[str, Any]:
    return {"type": kind, "parameters": params}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("VLC_VERBOSE=-1 vlc --no-audio 'a b.mp4'", ["vlc"]),
        (
            "echo pw | sudo -S apt-get install -y xsel && xsel -b",
            ["echo", "sudo", "apt-get", "xsel"],
        ),
        ("cd /x && jq '. + {\"a\": 1}' f > g; tree", ["cd", "jq", "tree"]),
        ("sudo -u charles -S bc -l", ["sudo", "bc"]),
        ('if [ "$(echo "1 > 0" | bc -l)" = 1 ]; then echo ok; fi', ["[", "echo", "fi", "bc"]),
        ("X=$(timeout 10 gsettings get a b | head -1)", ["timeout", "gsettings", "head"]),
        ("a=`xsel -b`", ["xsel"]),
        ("echo 'unbalanced", ["echo"]),
    ],
)
def test_command_words_are_the_words_at_command_positions(text: str, words: list[str]) -> None:
    assert command_words(text) == words


def test_launch_programs_are_always_needed_and_tools_only_when_curated() -> None:
    task = make_task(
        [
            step("launch", command=["google-chrome", "--remote-debugging-port=1337"]),
            step("launch", command=["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]),
            step("launch", command="VLC_VERBOSE=-1 vlc --no-audio x.mp4", shell=True),
            step("launch", command=["some-unknown-app"]),
            step("execute", command=["python", "-c", "print(1)"]),
            step("execute", command=["mkdir", "-p", "/tmp/x"]),
            step("execute", command=["/bin/bash", "-c", "cd ~ && unzip -q a.zip && git init"]),
            step("command", command="echo {CLIENT_PASSWORD} | sudo -S ls", shell=True),
            step("open", path="/home/user/Desktop/a.xlsx"),
            step("open", path="/home/user/Desktop/clip.MP4"),
        ]
    )
    needs = task_requirements(task).commands
    assert set(needs) == {
        "google-chrome",
        "socat",
        "vlc",
        "some-unknown-app",
        "unzip",
        "git",
        "sudo",
        "xdg-open",
        "soffice",
    }
    assert needs["some-unknown-app"] == ("launch step",)
    assert needs["vlc"] == ("launch step", "open step (.mp4)")
    assert "python" not in needs and "mkdir" not in needs


def test_apps_of_related_tags_domain_and_getters() -> None:
    task = make_task(
        related_apps=["Chrome", "libreoffice calc", "os"],
        domain="vs_code",
        evaluator={
            "func": ["is_vlc_playing", "exact_match"],
            "result": [
                {"type": "vlc_playing_info", "dest": "s.xml"},
                {"type": "vm_command_line", "command": "xsel --clipboard --output", "shell": True},
            ],
            "expected": [{"type": "rule", "rules": {}}, {"type": "rule", "rules": {}}],
        },
    )
    needs = task_requirements(task).commands
    assert set(needs) == {"google-chrome", "soffice", "code", "vlc", "xsel"}
    assert needs["google-chrome"] == ("app 'chrome'",)
    assert needs["xsel"] == ("getter vm_command_line",)


def test_google_account_proxy_and_live_web() -> None:
    drive = make_task([step("googledrive", settings_file="s.yml", operation=[], args=[])])
    assert task_requirements(drive).google_account == "a 'googledrive' step"
    getter = make_task(
        evaluator={"func": "compare_pdfs", "result": {"type": "googledrive_file"},
                   "expected": {"type": "rule", "rules": {}}},
    )  # fmt: skip
    assert task_requirements(getter).google_account == "getter 'googledrive_file'"
    assert task_requirements(make_task(fixed_ip=True)).google_account is not None
    assert task_requirements(make_task(proxy=True)).proxy
    web = make_task(
        [
            step("chrome_open_tabs", urls_to_open=["https://example.org/", "http://127.0.0.1:8/"]),
            step("launch", command=["google-chrome", "https://www.gnu.org"]),
            step("execute", command="echo pw | sudo -S apt-get install -y expect", shell=True),
        ]
    )
    live = task_requirements(web).live_web
    assert live == (
        "https://example.org/",
        "https://www.gnu.org",
        "installs packages in the desktop (apt-get)",
    )
    assert task_requirements(make_task()).live_web == ()


def test_assets_use_the_cache_names_the_env_looks_up() -> None:
    url = "https://huggingface.co/x/resolve/main/a.xlsx"
    task = make_task(
        [step("download", files=[{"url": url, "path": "/home/user/a.xlsx"}])],
        evaluator={
            "func": ["compare_table", "compare_table"],
            "result": [{"type": "vm_file", "path": "/a", "dest": "a"}] * 2,
            "expected": [
                {"type": "cloud_file", "path": "https://h/gold.xlsx", "dest": "gold.xlsx"},
                {"type": "cloud_file", "multi": True, "path": ["https://h/1", "https://h/2"],
                 "dest": ["one.csv", "two.csv"], "gives": [0, 1]},
            ],
        },
    )  # fmt: skip
    assert task_assets(task) == (
        AssetRef(url, "t1", download_cache_name(url, "/home/user/a.xlsx"), "download"),
        AssetRef("https://h/gold.xlsx", "t1", "gold.xlsx", "cloud_file"),
        AssetRef("https://h/1", "t1", "one.csv", "cloud_file"),
        AssetRef("https://h/2", "t1", "two.csv", "cloud_file"),
    )
    assert task_requirements(task).assets == task_assets(task)


def test_host_references_by_local_path_are_no_assets() -> None:
    # A reference beside the task file: nothing to download, listed as a host file instead.
    task = make_task(
        [step("upload_file", files=[{"local_path": "in.txt", "path": "/home/user/in.txt"}])],
        evaluator={
            "func": ["compare_text_file", "compare_text_file"],
            "result": [{"type": "vm_file", "path": "/a", "dest": "a"}] * 2,
            "expected": [
                {"type": "cloud_file", "local_path": "../assets/gold.txt", "dest": "gold.txt"},
                {"type": "cloud_file", "multi": True, "local_path": ["g1", "g2"],
                 "dest": ["g1", "g2"], "gives": [0, 1]},
            ],
        },
    )  # fmt: skip
    assert task_assets(task) == ()
    assert task.needs.urls == frozenset()
    needs = task_requirements(task)
    assert needs.assets == () and needs.local_files == ("in.txt",)
    assert needs.reference_files == ("../assets/gold.txt", "g1", "g2")


def test_app_labels() -> None:
    assert app_label("vlc") == "VLC (vlc)"
    assert app_label("/usr/bin/thunderbird") == "Thunderbird (/usr/bin/thunderbird)"
    assert app_label("jq") == "jq"
