"""``osworld-gym doctor``: what works on this host, per provider, and the exact fix for the rest.

* ``local`` -- Xvfb, openbox, xdotool and the other X tools, the accessibility stack, the
  desktop's sandbox (bubblewrap; as root, or as an ordinary user through user namespaces), the
  apps the bundled suites open (read from their tasks), and a real desktop launched and closed.
* ``docker`` -- the CLI, the Python SDK, a reachable engine and our desktop image.
* ``qemu`` -- ``qemu-system-x86_64``, ``qemu-img`` and a usable ``/dev/kvm`` (without it QEMU
  still works, in software emulation: a warning, not a failure).
* ``ray`` -- Ray importable (the pool's backend for clusters).
* ``eval`` -- every package of the ``eval`` extra (the metric libraries that score LibreOffice,
  PDF, web and other tasks, whatever the provider) installed and importable; without them those
  tasks cannot be scored (``pip install 'osworld-gym[eval]'``).

Exit status 0 when the required providers work (``local`` unless ``--provider`` names others)
and the ``eval`` libraries are there (unless ``--no-eval``), 1 otherwise. ``--json`` prints the
checks as JSON.
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

PROVIDERS = ("local", "docker", "qemu", "ray")
EVAL = "eval"
SECTIONS = (*PROVIDERS, EVAL)
"""Groups of checks: the providers, then the metric libraries (needed whatever the provider)."""
EVAL_FIX = "pip install 'osworld-gym[eval]'"
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
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=doctor_command)


def doctor_command(args: argparse.Namespace) -> int:
    """Run the ``doctor`` subcommand."""
    checks = [
        *local_checks(launch=not args.no_launch),
        *docker_checks(args.docker_image),
        *qemu_checks(),
        *ray_checks(),
        *eval_checks(),
    ]
    required = tuple(args.provider or ("local",))
    works = {section: provider_works(checks, section) for section in SECTIONS}
    needed = required if args.no_eval else (*required, EVAL)
    if args.json:
        payload = {
            "providers": {p: works[p] for p in PROVIDERS},
            "required": list(required),
            "eval": works[EVAL],
            "eval_required": not args.no_eval,
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
        lines.append(f"{provider}: {'works' if works[provider] else 'NOT ready'}")
        for check in mine:
            lines.append(f"  {check.status:<8} {check.name:<28} {check.detail}")
            if not check.ok and check.fix:
                lines.append(f"  {'':<8} {'':<28} fix: {check.fix}")
        lines.append("")
    fixes = [c.fix for c in checks if not c.ok and c.required and c.fix]
    if fixes:
        lines.append("fixes, in order:")
        lines += [f"  {fix}" for fix in dict.fromkeys(fixes)]
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
    for module, package in (("Xlib", "python-xlib"), ("mss", "mss"), ("PIL", "pillow")):
        found = importlib.util.find_spec(module) is not None
        checks.append(
            Check(
                "local",
                f"python: {module}",
                found,
                _version(package) if found else "not importable",
                None if found else f"pip install {package}",
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
    from osworld_gym.providers import sandbox

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
    from osworld_gym.providers.local import LocalProvider, LocalProviderConfig

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
            None if sdk else "pip install docker",
        )
    )
    if cli is None:
        return checks
    answer = _run([cli, "version", "--format", "{{.Server.Version}}"], timeout=15)
    engine = answer is not None and answer.returncode == 0
    start_fix = (
        "bash scripts/start_docker.sh"
        if Path("scripts/start_docker.sh").is_file()
        else "dockerd --bridge=none --iptables=false &"
    )
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
            None if found else "pip install 'osworld-gym[ray]'",
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


def extra_distributions(extra: str) -> list[str]:
    """The packages (distribution names) of one of osworld-gym's extras, as setup.cfg lists them.

    Read from the ``setup.cfg`` beside the imported package when it runs from a checkout (the
    declaration its code was written against), else from the installed package's metadata.

    Example:
        >>> "openpyxl" in extra_distributions("eval")
        True
    """
    setup_cfg = Path(__file__).resolve().parents[2] / "setup.cfg"
    parser = configparser.ConfigParser()
    if setup_cfg.is_file():
        parser.read(setup_cfg)
    if parser.get("metadata", "name", fallback=None) == "osworld-gym":
        lines = parser.get("options.extras_require", extra, fallback="").splitlines()
        names = [_requirement_name(line) for line in lines if line.strip()]
    else:
        try:
            requires = importlib.metadata.requires("osworld-gym") or []
        except importlib.metadata.PackageNotFoundError:
            return []
        wanted = re.compile(rf"""\bextra\s*==\s*["']{re.escape(extra)}["']""")
        names = [
            _requirement_name(req)
            for req in requires
            if ";" in req and wanted.search(req.split(";", 1)[1])
        ]
    return list(dict.fromkeys(names))


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
