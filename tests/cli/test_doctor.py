"""`osworld-gym doctor` on this host, and on a host where nothing is on the PATH."""

from __future__ import annotations

import json
import os

import pytest
from conftest import osworld_gym

pytestmark = [pytest.mark.desktop]


def test_doctor_on_this_host() -> None:
    done = osworld_gym("doctor", "--json", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr  # the local provider works here
    report = json.loads(done.stdout)
    assert report["providers"]["local"] is True and report["required"] == ["local"]
    checks = {(c["provider"], c["name"]): c for c in report["checks"]}
    assert checks[("local", "Xvfb")]["status"] == "OK"
    assert checks[("local", "desktop launch")]["ok"], checks[("local", "desktop launch")]
    sandbox = checks[("local", "sandbox")]
    mode = "root" if os.geteuid() == 0 else "user namespaces"
    assert sandbox["ok"] and f"({mode})" in sandbox["detail"], sandbox
    assert checks[("local", "app: libreoffice_calc")]["ok"]  # read from the bundled tasks
    for check in report["checks"]:
        assert check["status"] in ("OK", "MISSING", "WARN")
        assert check["ok"] or check["fix"], f"no fix given for {check}"
    # Requiring a provider decides the exit status; the text names every provider.
    for provider in ("docker", "qemu", "ray"):
        required = osworld_gym("doctor", "--no-launch", "--provider", provider, timeout=120)
        assert required.returncode == (0 if report["providers"][provider] else 1)
        assert f"{provider}: " in required.stdout


def test_doctor_prints_the_fixes_when_tools_are_missing() -> None:
    env = dict(os.environ, PATH="/nonexistent")  # no Xvfb, openbox, docker, qemu...
    done = osworld_gym("doctor", env=env, timeout=120)
    assert done.returncode == 1
    out = done.stdout
    assert "local: NOT ready" in out
    assert "MISSING  Xvfb" in out and "fix: apt-get install -y xvfb" in out
    assert "fix: apt-get install -y openbox" in out
    assert "fix: apt-get install -y docker.io" in out
    assert "fixes, in order:" in out
    assert "MISSING  sandbox" in out and "fix: apt-get install -y bubblewrap" in out
    assert "not tried: Xvfb, openbox or the sandbox missing" in out  # no launch without them
