"""``osworld-gym doctor``: what works on this host, per provider, and the exact fix for the rest.

* ``local`` -- Xvfb, openbox, xdotool and the other X tools, the accessibility stack, the
  desktop's sandbox (bubblewrap; as root, or as an ordinary user through user namespaces), the
  apps the bundled suites open (read from their tasks), and a real desktop launched and closed.
* ``docker`` -- the CLI, the Python SDK, a reachable engine (its fix starts one with the
  default bridge network, which OSWorld's official image needs: a warning says when the running
  engine has none) and our desktop image.
* ``qemu`` -- ``qemu-system-x86_64``, ``qemu-img`` and a usable ``/dev/kvm`` (without it QEMU
  still works, in software emulation: a warning, not a failure).
* ``ray`` -- Ray importable (the pool's backend for clusters).
* ``eval`` -- every package of the ``eval`` extra (the metric libraries that score LibreOffice,
  PDF, web and other tasks, whatever the provider) installed and importable; without them those
  tasks cannot be scored (``python -m pip install 'osworld-gym[eval]'``).
* ``extras`` -- every other extra of osworld-gym (``gui``, ``media``, ``chrome``, ``docker``,
  ``train``...; ``ray`` has its section above), one line each: its libraries installed and
  importable, else the exact command that adds it. The extras are read from the installed
  package's metadata (from ``setup.cfg`` in a checkout), so the list never drifts from what
  pip installs. ``guest`` (the former name of ``gui``) and ``all`` are made of the others and
  get no line of their own. The ``gui`` extra cannot list pyautogui and mouseinfo (their Linux
  dependency python3-xlib overwrites python-xlib's files), so its fix installs them with
  ``--no-deps``; a python3-xlib found installed fails the ``local`` section with the command
  that repairs python-xlib.

Every fix that installs Python packages names the pip of the interpreter running doctor
(``/path/to/python -m pip install ...``): a bare ``pip`` may belong to another Python, such as
the system's when doctor runs from a venv that is not activated. The trainer's torch is the CPU
build, from PyTorch's CPU wheel index.

Exit status 0 when the required providers work (``local`` unless ``--provider`` names others),
the ``eval`` libraries are there (unless ``--no-eval``) and the extras named by ``--extra`` are
complete, 1 otherwise. The other extras are information: a missing one is a ``WARN`` with its
fix, never a failure, since most uses need only some of them. ``--json`` prints the checks as
JSON.
"""

from __future__ import annotations

import argparse
import configparser
import fcntl
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from osworld_gym import extras
from osworld_gym.extras import install_command, pip_command

PROVIDERS = ("local", "docker", "qemu", "ray")
EVAL = "eval"
EXTRAS = "extras"
SECTIONS = (*PROVIDERS, EVAL, EXTRAS)
"""Groups of checks: the providers, the metric libraries (needed whatever the provider), then
the other extras."""
DISTRIBUTION = "osworld-gym"
# Every fix that installs Python packages uses the pip of the interpreter running doctor
# (`/path/to/python -m pip`): a bare `pip` on PATH may be another Python's, e.g. when doctor
# runs from a venv that is not activated.
EVAL_FIX = install_command(EVAL)
# Extras with a section of their own (eval, ray) or made only of other extras (guest, all).
OWN_SECTION_EXTRAS = (EVAL, "ray")
# pyautogui and mouseinfo: what the gui extra is for, installed without their dependencies
# (python3-xlib would overwrite python-xlib's files); the versions scripts/install.sh pins.
GUI_NO_DEPS = extras.GUI_NO_DEPS
GUI_FIX = install_command("gui")
XLIB_FIX = (
    pip_command("-y", "python3-xlib", action="uninstall")
    + " && "
    + pip_command("--no-deps", "--force-reinstall", "'python-xlib>=0.33'")
)
# The trainer's torch: the CPU build from PyTorch's CPU index where no CUDA one is wanted (a
# bare `torch` from the extra pulls a multi-GB CUDA build); the version scripts/install.sh pins.
CPU_TORCH = pip_command(*extras.CPU_TORCH_ARGS)
# Extras that do not install alongside the others, and why (shown with their line).
EXTRA_NOTES = {
    "verl": "in its own venv (its transformers pin clashes with train's)",
    "vllm": "Linux with CUDA only",
    "ocr": "needs the torchvision build matching the installed torch",
}
DEFAULT_DOCKER_IMAGE = "osworld-gym/desktop:latest"
DOCKER_IMAGE_ENV = "OSWORLD_GYM_DOCKER_IMAGE"
INSTALL_SYSTEM_DEPS = "bash scripts/install_system_deps.sh"

# (binary, Debian package, why) that every local desktop needs.
LOCAL_TOOLS = (
    ("Xvfb", "xvfb", "the X server of each desktop"),
    ("openbox", "openbox", "the window manager"),
    ("xdotool", "xdotool", "window and key helpers of OSWorld's setup steps"),
    ("wmctrl", "wmctrl", "window lists of setup steps and checks"),
    ("xdg-open", "xdg-utils", "opening files (the `open` setup step)"),
    ("dbus-daemon", "dbus-daemon", "the session bus of the accessibility tree"),
)
AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
# ioctl numbers of <linux/kvm.h>: _IO(0xAE, 0x00), _IO(0xAE, 0x01), _IO(0xAE, 0x41).
_KVM_GET_API_VERSION, _KVM_CREATE_VM, _KVM_CREATE_VCPU = 0xAE00, 0xAE01, 0xAE41
# related_apps tag -> (binary, Debian package) of the apps the bundled suites open.
SUITE_APPS = {
    "terminal": ("lxterminal", "lxterminal"),
    "xterm": ("xterm", "xterm"),
    "mousepad": ("mousepad", "mousepad"),
    "xmessage": ("xmessage", "x11-utils"),
    "libreoffice_calc": ("localc", "libreoffice-calc"),
    "libreoffice_writer": ("lowriter", "libreoffice-writer"),
    "libreoffice_impress": ("loimpress", "libreoffice-impress"),
}


@dataclass(frozen=True)
class Check:
    """One thing checked.

    Attributes:
        provider: ``local``, ``docker``, ``qemu``, ``ray``, or ``eval`` (the metric libraries).
        name: What was checked.
        ok: It works.
        detail: What was found (a path, a version, an error).
        fix: The command that fixes it, when it does not work.
        required: False for what only makes a provider slower or less complete (KVM).
    """

    provider: str
    name: str
    ok: bool
    detail: str = ""
    fix: str | None = None
    required: bool = True

    @property
    def status(self) -> str:
        """``OK``, ``MISSING`` or ``WARN``."""
        if self.ok:
            return "OK"
        return "MISSING" if self.required else "WARN"


def add_parser(sub: Any) -> None:
    """Register ``doctor``."""
    doctor = sub.add_parser(
        "doctor",
        help="check the host for each provider and the eval libraries; print the fixes",
    )
    doctor.add_argument(
        "--provider",
        action="append",
        choices=PROVIDERS,
        help="require this provider to work (repeatable; default: local)",
    )
    doctor.add_argument(
        "--docker-image",
        default=os.environ.get(DOCKER_IMAGE_ENV, DEFAULT_DOCKER_IMAGE),
        help=f"the desktop image the docker provider runs (${DOCKER_IMAGE_ENV})",
    )
    doctor.add_argument("--no-launch", action="store_true", help="skip launching a desktop")
    doctor.add_argument(
        "--no-eval",
        action="store_true",
        help="do not require the eval extra's metric libraries (still checked and listed)",
    )
    doctor.add_argument(
        "--extra",
        action="append",
        metavar="NAME",
        help="require this extra of osworld-gym to be complete (repeatable; 'all' for every "
        "one; default: none, the extras are listed as information)",
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=doctor_command)


def doctor_command(args: argparse.Namespace) -> int:
    """Run the ``doctor`` subcommand."""
    declared = declared_extras()
    wanted = list(dict.fromkeys(args.extra or ()))
    unknown = [name for name in wanted if name not in declared]
    if unknown:
        sys.stderr.write(
            f"osworld-gym doctor: error: unknown extra {', '.join(unknown)} (choose from "
            f"{', '.join(declared) or 'none: osworld-gym metadata not found'})\n"
        )
        return 2
    checks = [
        *local_checks(launch=not args.no_launch),
        *docker_checks(args.docker_image),
        *qemu_checks(),
        *ray_checks(),
        *eval_checks(),
        *extras_checks(required=expand_extras(wanted)),
    ]
    required = tuple(args.provider or ("local",))
    # An extra with a section of its own, when asked for, makes that section required.
    required_extras = expand_extras(wanted)
    if "ray" in required_extras and "ray" not in required:
        required = (*required, "ray")
    eval_required = not args.no_eval or EVAL in required_extras
    works = {section: provider_works(checks, section) for section in SECTIONS}
    needed = (*required, EXTRAS) if not eval_required else (*required, EVAL, EXTRAS)
    if args.json:
        payload = {
            "providers": {p: works[p] for p in PROVIDERS},
            "required": list(required),
            "eval": works[EVAL],
            "eval_required": eval_required,
            "extras": {
                c.name.removeprefix("extra: "): c.ok for c in checks if c.provider == EXTRAS
            },
            "extras_required": [e for e in required_extras if e not in OWN_SECTION_EXTRAS],
            "checks": [asdict(c) | {"status": c.status} for c in checks],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        sys.stdout.write(format_checks(checks, works) + "\n")
    return 0 if all(works[section] for section in needed) else 1


def provider_works(checks: Iterable[Check], provider: str) -> bool:
    """Every required check of the provider passed."""
    return all(c.ok for c in checks if c.provider == provider and c.required)


def format_checks(checks: Sequence[Check], works: dict[str, bool]) -> str:
    """The checks grouped by section (the keys of ``works``), the fixes, a verdict per section."""
    lines: list[str] = []
    for provider in works:
        mine = [c for c in checks if c.provider == provider]
        verdict = "works" if works[provider] else "NOT ready"
        if provider == EXTRAS and works[provider]:
            complete = sum(c.ok for c in mine)
            verdict = f"{complete} of {len(mine)} complete (a WARN is an extra not installed)"
        lines.append(f"{provider}: {verdict}")
        for check in mine:
            lines.append(f"  {check.status:<8} {check.name:<28} {check.detail}")
            if not check.ok and check.fix:
                lines.append(f"  {'':<8} {'':<28} fix: {check.fix}")
        lines.append("")
    fixes = [c.fix for c in checks if not c.ok and c.required and c.fix]
    if fixes:
        lines.append("fixes, in order:")
        lines += [f"  {fix}" for fix in dict.fromkeys(fixes)]
        lines.append("")
    optional = [c.fix for c in checks if not c.ok and not c.required and c.provider == EXTRAS]
    if optional:
        lines.append("extras not installed (information; add those you need):")
        lines += [f"  {fix}" for fix in dict.fromkeys(f for f in optional if f)]
    return "\n".join(lines).rstrip()


# --- local --------------------------------------------------------------------------------


def local_checks(launch: bool = True) -> list[Check]:
    """Tools, apps and (optionally) a real desktop of the ``local`` provider."""
    checks = [_binary("local", binary, package, why) for binary, package, why in LOCAL_TOOLS]
    launcher = os.access(AT_SPI_LAUNCHER, os.X_OK)
    checks.append(
        Check(
            "local",
            "at-spi-bus-launcher",
            launcher,
            AT_SPI_LAUNCHER if launcher else "accessibility trees need it",
            None if launcher else "apt-get install -y at-spi2-core",
        )
    )
    checks.append(_sandbox_check())
    checks.append(_limits_check())
    checks.append(_internet_check())
    checks.append(_xlib_check())
    for module, package in (("Xlib", "python-xlib"), ("mss", "mss"), ("PIL", "pillow")):
        found = importlib.util.find_spec(module) is not None
        checks.append(
            Check(
                "local",
                f"python: {module}",
                found,
                _version(package) if found else "not importable",
                None if found else pip_command(package),
            )
        )
    for app, (binary, package, suites) in sorted(suite_apps().items()):
        check = _binary("local", binary, package, f"opened by tasks of {', '.join(suites)}")
        checks.append(Check(**(asdict(check) | {"name": f"app: {app}"})))
    if launch:
        ready = all(c.ok for c in checks if c.name in ("Xvfb", "openbox", "sandbox"))
        checks.append(_launch_check() if ready else _skipped_launch())
    return checks


def _sandbox_check() -> Check:
    """Whether desktops can run in their sandbox here: as root, or through user namespaces."""
    from osworld_gym.providers.local import sandbox

    support = sandbox.probe()
    fix = None
    if not support.ok:
        fix = (
            "apt-get install -y bubblewrap"
            if sandbox.bwrap_path() is None
            else "see the detail (or LocalProviderConfig(sandbox=False): no isolation)"
        )
    detail = f"works: {support.detail}" if support.ok else support.detail
    return Check("local", "sandbox", support.ok, detail, fix)


def _limits_check() -> Check:
    """Whether desktops get their memory, process and disk limits here (cgroups, root)."""
    import uuid

    from osworld_gym.providers.local.limits import (
        DesktopCgroups,
        DesktopLimits,
        can_mount_capped,
    )

    groups = DesktopCgroups.create(f"doctor-{uuid.uuid4().hex[:8]}", DesktopLimits())
    try:
        have = sorted(group.controller for group in groups.groups)
    finally:
        groups.remove()
    disk = "a size-capped disk" if can_mount_capped() else "files capped one by one (ulimit)"
    ok = have == ["memory", "pids"] and can_mount_capped()
    detail = f"cgroup controllers: {', '.join(have) or 'none'}; {disk}"
    fix = None if ok else "run as root (or delegate the memory and pids cgroups to this user)"
    # Not required: desktops run without the limits, but one desktop's excess is the host's.
    return Check("local", "per-desktop limits", ok, detail, fix, required=False)


def _internet_check() -> Check:
    """Whether a private network can get its outbound link (slirp4netns behind a filter)."""
    from osworld_gym.providers.local import outbound

    why_not = outbound.available()
    if why_not is None:
        detail = "slirp4netns behind a packet filter (the host's addresses stay out)"
        return Check("local", "internet in a private network", True, detail, required=False)
    # Not required: offline tasks run; those that load live pages warn at reset.
    fix = "apt-get install -y slirp4netns iptables (or LocalProviderConfig(network='host'))"
    return Check("local", "internet in a private network", False, why_not, fix, required=False)


def _xlib_check() -> Check:
    """python3-xlib absent.

    A plain ``pip install pyautogui`` installs it, and it overwrites python-xlib's ``Xlib``
    package with its own, older one.
    """
    try:
        version = importlib.metadata.version("python3-xlib")
    except importlib.metadata.PackageNotFoundError:
        return Check("local", "python-xlib not overwritten", True, "python3-xlib not installed")
    detail = f"python3-xlib {version} installed: it overwrote python-xlib's Xlib package"
    return Check("local", "python-xlib not overwritten", False, detail, XLIB_FIX)


def suite_apps() -> dict[str, tuple[str, str, list[str]]]:
    """Apps the feasible tasks of the bundled suites open: tag -> (binary, package, suites)."""
    from osworld_gym.tasks import available_suites, load_tasks

    apps: dict[str, tuple[str, str, list[str]]] = {}
    for suite in available_suites():
        for task in load_tasks(suite):
            if task.infeasible:  # nothing is opened for real (e.g. VS Code)
                continue
            for tag in task.raw.get("related_apps") or ():
                if tag in SUITE_APPS:
                    binary, package = SUITE_APPS[tag]
                    suites = apps.setdefault(tag, (binary, package, []))[2]
                    if suite not in suites:
                        suites.append(suite)
    return apps


def _launch_check() -> Check:
    from osworld_gym.errors import OSWorldGymError
    from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

    start = time.perf_counter()
    try:
        with LocalProvider(LocalProviderConfig(screen_size=(640, 480))).launch() as desktop:
            shot = desktop.client.screenshot()
            size = f"{shot.width}x{shot.height}"
    except (OSWorldGymError, OSError) as e:
        return Check(
            "local",
            "desktop launch",
            False,
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
            INSTALL_SYSTEM_DEPS,
        )
    seconds = time.perf_counter() - start
    return Check(
        "local",
        "desktop launch",
        True,
        f"a desktop started, gave a {size} screenshot and stopped in {seconds:.1f} s",
    )


def _skipped_launch() -> Check:
    why = "not tried: Xvfb, openbox or the sandbox missing"
    return Check("local", "desktop launch", False, why, INSTALL_SYSTEM_DEPS)


# --- docker -------------------------------------------------------------------------------


def docker_checks(image: str) -> list[Check]:
    """The docker CLI, the SDK, a reachable engine and the desktop image."""
    cli = shutil.which("docker")
    checks = [
        Check(
            "docker",
            "docker CLI",
            cli is not None,
            cli or "not on PATH",
            None if cli else "apt-get install -y docker.io",
        )
    ]
    sdk = importlib.util.find_spec("docker") is not None
    checks.append(
        Check(
            "docker",
            "python: docker (SDK)",
            sdk,
            _version("docker") if sdk else "not importable",
            None if sdk else install_command("docker"),
        )
    )
    if cli is None:
        return checks
    answer = _run([cli, "version", "--format", "{{.Server.Version}}"], timeout=15)
    engine = answer is not None and answer.returncode == 0
    start_fix = dockerd_fix()
    checks.append(
        Check(
            "docker",
            "engine reachable",
            engine,
            f"server {answer.stdout.strip()}" if engine and answer else _why(answer),
            None if engine else start_fix,
        )
    )
    if engine:
        checks.append(_bridge_check(cli))
        found = _run([cli, "image", "inspect", "--format", "{{.Id}}", image], timeout=15)
        present = found is not None and found.returncode == 0
        checks.append(
            Check(
                "docker",
                f"image {image}",
                present,
                found.stdout.strip()[:19] if present and found else "not built",
                None if present else "osworld-gym image build",
            )
        )
    return checks


def dockerd_fix(systemd: bool | None = None) -> str:
    """How to start a Docker engine that every image works on, with its default networking.

    OSWorld's official image publishes its guest's port through the engine's bridge network,
    so the engine must have one. ``scripts/start_docker.sh`` (the project's own test runs)
    starts one without a bridge or iptables rules, which only our image (host networking on
    loopback) can use: not the fix to offer for every engine.

    Args:
        systemd: Whether systemd runs this host (None: look), which then starts the engine.
    """
    if systemd is None:
        systemd = Path("/run/systemd/system").is_dir()
    if systemd:  # the engine's own unit, as the docker.io package installs it
        return "systemctl start docker"
    return "nohup dockerd >/var/log/dockerd.log 2>&1 &"


def _bridge_check(cli: str) -> Check:
    """The engine has its bridge network (OSWorld's official image needs it; ours does not)."""
    answer = _run([cli, "network", "inspect", "--format", "{{.Driver}}", "bridge"], timeout=15)
    ok = answer is not None and answer.returncode == 0
    detail = "present" if ok else "none (an engine started with --bridge=none)"
    # Not required: our image runs on host networking; only the official image needs it.
    fix = None if ok else f"restart the engine with its default networking: {dockerd_fix()}"
    return Check("docker", "bridge network", ok, detail, fix, required=False)


# --- qemu ---------------------------------------------------------------------------------


def qemu_checks() -> list[Check]:
    """QEMU's binaries and KVM."""
    checks = [
        _binary("qemu", "qemu-system-x86_64", "qemu-system-x86", "runs the VMs"),
        _binary("qemu", "qemu-img", "qemu-utils", "makes the overlay disks"),
    ]
    kvm, detail = _kvm_usable()
    checks.append(
        Check(
            "qemu",
            "/dev/kvm",
            kvm,
            detail,
            None
            if kvm
            else "enable KVM on the host (nested virtualisation on a VM); "
            "without it QEMU runs in software emulation, several times slower",
            required=False,
        )
    )
    return checks


def _kvm_usable() -> tuple[bool, str]:
    """Whether KVM works: the device opens, and a VM with one vCPU can be created."""
    path = "/dev/kvm"
    if not os.path.exists(path):
        return False, "absent: software emulation only"
    fds: list[int] = []
    try:
        fds.append(os.open(path, os.O_RDWR | os.O_CLOEXEC))
        version = fcntl.ioctl(fds[0], _KVM_GET_API_VERSION)
        fds.append(fcntl.ioctl(fds[0], _KVM_CREATE_VM, 0))
        fds.append(fcntl.ioctl(fds[1], _KVM_CREATE_VCPU, 0))
    except OSError as e:
        return False, f"present but not usable ({e.strerror}): software emulation only"
    finally:
        for fd in reversed(fds):
            os.close(fd)
    return True, f"usable (API {version}; a VM and a vCPU were created)"


# --- ray ----------------------------------------------------------------------------------


def ray_checks() -> list[Check]:
    """Ray importable (found without importing it: that alone takes seconds)."""
    found = importlib.util.find_spec("ray") is not None
    return [
        Check(
            "ray",
            "python: ray",
            found,
            _version("ray") if found else "not importable",
            None if found else install_command("ray"),
        )
    ]


# --- eval ---------------------------------------------------------------------------------


def eval_checks() -> list[Check]:
    """Each package of the ``eval`` extra installed and importable.

    Found without importing them: pandas alone takes about a second, and pygame prints a banner
    into ``--json``'s output.
    """
    modules = _modules_by_distribution()
    return [
        _library_check(EVAL, dist, modules.get(_normalise(dist), []), EVAL_FIX)
        for dist in extra_distributions(EVAL)
    ]


# --- extras -------------------------------------------------------------------------------


def extras_checks(required: Iterable[str] = ()) -> list[Check]:
    """One check per extra without a section of its own: all its libraries there, or the fix.

    Args:
        required: Extras whose absence fails doctor (``--extra``); the others are warnings.
    """
    declared = declared_extras()
    wanted = set(required)
    modules = _modules_by_distribution()
    checks = []
    for extra, requirements in declared.items():
        if extra in OWN_SECTION_EXTRAS or (
            requirements and all(_self_reference(r) for r in requirements)
        ):
            continue  # eval and ray have their sections; all and guest are made of others
        dists = extra_distributions(extra)
        if extra == "gui":
            dists += [pin.split("==")[0] for pin in GUI_NO_DEPS]
        fix = extra_fix(extra)
        missing = [
            dist
            for dist in dists
            if not _library_check(EXTRAS, dist, modules.get(_normalise(dist), []), fix).ok
        ]
        if missing:
            detail = f"missing {', '.join(missing)}"
        else:
            detail = f"{len(dists)} installed" if dists else "nothing to install"
        if extra in EXTRA_NOTES and missing:
            detail += f"; {EXTRA_NOTES[extra]}"
        checks.append(
            Check(
                EXTRAS,
                f"extra: {extra}",
                not missing,
                detail,
                fix if missing else None,
                required=extra in wanted,
            )
        )
    return checks


def extra_fix(extra: str) -> str:
    """The exact command that installs one extra of osworld-gym, with this interpreter's pip.

    ``train`` puts the CPU torch first when no torch is installed (pip would pick a CUDA
    build); ``gui`` adds pyautogui and mouseinfo without their dependencies.
    """
    return install_command(extra)


def extra_distributions(extra: str) -> list[str]:
    """The packages (distribution names) of one of osworld-gym's extras, as setup.cfg lists them.

    An extra made of other extras (``all``, ``guest``) lists their packages, in order.

    Example:
        >>> "openpyxl" in extra_distributions("eval")
        True
    """
    declared = declared_extras()
    names = [
        _requirement_name(requirement)
        for name in expand_extras([extra], declared)
        for requirement in declared.get(name, [])
        if not _self_reference(requirement)
    ]
    return list(dict.fromkeys(names))


def declared_extras() -> dict[str, list[str]]:
    """Each extra of osworld-gym -> its requirements, as declared (self-references included).

    Read from the ``setup.cfg`` beside the imported package when it runs from a checkout (the
    declaration its code was written against: an editable install's metadata can be older),
    else from the installed distribution's metadata, which pip built from that file.
    """
    from_checkout = extras_from_setup_cfg(Path(__file__).resolve().parents[2] / "setup.cfg")
    if from_checkout is not None:
        return from_checkout
    try:
        metadata = importlib.metadata.metadata(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return {}
    return extras_from_metadata(
        metadata.get_all("Provides-Extra") or [], metadata.get_all("Requires-Dist") or []
    )


def extras_from_setup_cfg(setup_cfg: Path) -> dict[str, list[str]] | None:
    """``[options.extras_require]`` of osworld-gym's ``setup.cfg``; None if it is not that file."""
    parser = configparser.ConfigParser()
    if setup_cfg.is_file():
        parser.read(setup_cfg)
    if parser.get("metadata", "name", fallback=None) != DISTRIBUTION:
        return None
    if not parser.has_section("options.extras_require"):
        return {}
    section = parser["options.extras_require"]
    return {
        extra: [line.strip() for line in section[extra].splitlines() if line.strip()]
        for extra in section
    }


def extras_from_metadata(provides: Sequence[str], requires: Sequence[str]) -> dict[str, list[str]]:
    """Extras from core metadata: ``Provides-Extra`` names, ``Requires-Dist`` with their markers.

    Example:
        >>> extras_from_metadata(["gui", "all"], ['pyperclip; extra == "gui"',
        ...     'osworld-gym[gui]; extra == "all"', "numpy>=1.24"])
        {'gui': ['pyperclip'], 'all': ['osworld-gym[gui]']}
    """
    extras: dict[str, list[str]] = {name: [] for name in provides}
    marker = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")
    for requirement in requires:
        if ";" not in requirement:
            continue  # a core requirement
        spec, condition = requirement.split(";", 1)
        found = marker.search(condition)
        if found:
            extras.setdefault(found.group(1), []).append(spec.strip())
    return extras


def expand_extras(extras: Iterable[str], declared: dict[str, list[str]] | None = None) -> list[str]:
    """The extras named, with those they are made of (``all`` -> ``gui``, ``eval``...)."""
    declared = declared_extras() if declared is None else declared
    out: list[str] = []
    todo = list(extras)
    while todo:
        extra = todo.pop(0)
        if extra in out:
            continue
        out.append(extra)
        for requirement in declared.get(extra, ()):
            todo += _self_reference(requirement)
    return out


def _self_reference(requirement: str) -> list[str]:
    """``"osworld-gym[gui,eval]"`` -> ``["gui", "eval"]``; ``[]`` for another package."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*\[([^\]]*)\]", requirement)
    if not match or _normalise(match.group(1)) != DISTRIBUTION:
        return []
    return [name.strip() for name in match.group(2).split(",") if name.strip()]


def _requirement_name(requirement: str) -> str:
    """``"python-docx>=1.1; extra == 'eval'"`` -> ``"python-docx"``."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1) if match else requirement.strip()


def _normalise(distribution: str) -> str:
    """PEP 503's name normalisation: ``PyYAML`` and ``pyyaml`` are one package."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _modules_by_distribution() -> dict[str, list[str]]:
    """Normalised distribution name -> the top-level modules it installs."""
    modules: dict[str, list[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        if module.startswith("_") or not module.isidentifier():
            continue  # private helpers (_yaml) and data folders are not what users import
        for dist in dists:
            modules.setdefault(_normalise(dist), []).append(module)
    return modules


def _library_check(section: str, dist: str, modules: list[str], fix: str) -> Check:
    """A package installed (its version) and one of its top-level modules importable."""
    name = f"python: {dist}"
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return Check(section, name, False, "not installed", fix)
    if modules and not any(importlib.util.find_spec(m) is not None for m in modules):
        detail = f"{version} installed, but {', '.join(sorted(modules))} not importable"
        return Check(section, name, False, detail, fix)
    return Check(section, name, True, version)


# --- helpers ------------------------------------------------------------------------------


def _binary(provider: str, binary: str, package: str, why: str) -> Check:
    path = shutil.which(binary)
    return Check(
        provider,
        binary,
        path is not None,
        path or f"not found ({why})",
        None if path else f"apt-get install -y {package}",
    )


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "importable"


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _why(answer: subprocess.CompletedProcess[str] | None) -> str:
    if answer is None:
        return "no answer (timed out)"
    lines = (answer.stderr or answer.stdout).strip().splitlines()
    return lines[-1][:120] if lines else f"exit status {answer.returncode}"
