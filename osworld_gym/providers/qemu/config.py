"""Settings of the ``qemu`` provider, for our built image and for OSWorld's ``Ubuntu.qcow2``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_gym.errors import ProviderError
from osworld_gym.providers.base import ProviderConfig
from osworld_gym.providers.qemu.command import ACCELERATORS, QEMU_BINARY
from osworld_gym.providers.session_choice import SESSIONS

DEFAULT_IMAGE_DIR = "/var/cache/osworld-gym/qemu"
IMAGE_DIR_VARIABLE = "OSWORLD_GYM_QEMU_IMAGE_DIR"
MANIFEST_NAME = "image.json"


@dataclass(frozen=True)
class QemuProviderConfig(ProviderConfig):
    """Settings of the ``qemu`` provider.

    Attributes:
        image: The base qcow2 (never written: each desktop runs on an overlay).
        kernel: Kernel to boot directly (images without a bootloader); None boots the disk.
        initrd: Initial ramdisk for ``kernel``.
        append: Kernel command line for ``kernel``.
        guest_port: The guest server's port inside the VM.
        extra_guest_ports: More guest ports to forward (e.g. 9222 for Chrome's DevTools);
            ``QemuDesktop.forwarded_ports`` maps each to its host port.
        memory_mb: Guest RAM (also what a snapshot stores, at most).
        cpus: Virtual CPUs.
        accel: ``"auto"`` (KVM if a vCPU runs under it here, else TCG), ``"kvm"`` or ``"tcg"``.
        cpu_model: QEMU CPU model (default ``host`` under KVM, ``max`` under TCG).
        machine: QEMU machine type.
        disk_interface: ``-drive if=`` value (``virtio``, ``ide``, ...).
        net_device: Network card model.
        restrict_network: Cut the guest off from the host's networks (the port forwards still
            work).
        vga: Display adapter; ``none`` for guests that draw into Xvfb, ``std`` for guests with
            a real display server (OSWorld's Ubuntu).
        guest_env: Hand the guest its token and screen size through ``fw_cfg``
            (``opt/osworld-gym/guest.env``), as our image expects.
        token: A fixed token the guest requires; with ``guest_env`` and no token a random one
            is made per desktop.
        session: Our image's desktop session (``OSWORLD_SESSION`` through ``fw_cfg``, with
            ``guest_env``), as a docker desktop's: ``"gnome"`` or ``"minimal"``; None is
            settled by the env's tasks (GNOME for OSWorld's task files,
            ``settle_session()``), and runs ``"minimal"`` when the
            provider is used on its own. OSWorld's Ubuntu is its own GNOME desktop.
        snapshot_name: Name of the ready-state VM snapshot.
        check_screen_size: Refuse a guest whose reported screen differs from ``screen_size``.
        work_dir: Parent of the VMs' private folders (overlay, monitor socket, logs); default
            a per-user folder in the temp folder. Leftovers of dead processes there are removed.
        qemu: The QEMU system emulator.
        qemu_img: The ``qemu-img`` tool.
        extra_args: More QEMU arguments.
    """

    boot_timeout: float = 300.0
    image: str | None = None
    kernel: str | None = None
    initrd: str | None = None
    append: str = "root=/dev/vda rw console=ttyS0"
    guest_port: int = 5000
    extra_guest_ports: tuple[int, ...] = ()
    memory_mb: int = 2048
    cpus: int = 2
    accel: str = "auto"
    cpu_model: str | None = None
    machine: str = "q35"
    disk_interface: str = "virtio"
    net_device: str = "virtio-net-pci"
    restrict_network: bool = False
    vga: str = "none"
    guest_env: bool = True
    token: str | None = field(default=None, repr=False)
    session: str | None = None
    snapshot_name: str = "osworld-gym-ready"
    check_screen_size: bool = True
    work_dir: str | None = None
    qemu: str = QEMU_BINARY
    qemu_img: str = "qemu-img"
    extra_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.accel not in ACCELERATORS:
            raise ValueError(f"accel must be one of {ACCELERATORS}, got {self.accel!r}")
        if self.initrd and not self.kernel:
            raise ValueError("initrd needs kernel")
        if self.session is not None and self.session not in SESSIONS:
            raise ValueError(f"session must be one of {SESSIONS}, not {self.session!r}")
        if self.session is not None and not self.guest_env:
            raise ValueError("session is handed to our image through guest_env (guest_env=True)")
        object.__setattr__(self, "extra_guest_ports", tuple(self.extra_guest_ports))
        object.__setattr__(self, "extra_args", tuple(self.extra_args))

    @classmethod
    def from_built_image(
        cls, image_dir: str | os.PathLike[str] | None = None, **overrides: Any
    ) -> QemuProviderConfig:
        """Settings for the image built by ``vm_images/qemu/build_qcow2.sh``.

        Args:
            image_dir: Folder with the build's ``image.json`` (default
                ``$OSWORLD_GYM_QEMU_IMAGE_DIR`` or ``/var/cache/osworld-gym/qemu``).
            **overrides: Other fields; ``screen_size=None`` is ignored.

        Raises:
            ProviderError: no built image there.
        """
        folder = Path(image_dir or os.environ.get(IMAGE_DIR_VARIABLE) or DEFAULT_IMAGE_DIR)
        manifest_path = folder / MANIFEST_NAME
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as e:
            raise ProviderError(
                f"no qemu image at {manifest_path} ({e}); build one with "
                f"`sudo bash vm_images/qemu/build_qcow2.sh {folder}`"
            ) from e
        settings: dict[str, Any] = {
            "image": str(folder / manifest["image"]),
            "kernel": str(folder / manifest["kernel"]) if manifest.get("kernel") else None,
            "initrd": str(folder / manifest["initrd"]) if manifest.get("initrd") else None,
            "guest_port": int(manifest.get("guest_port", 5000)),
        }
        if manifest.get("append"):
            settings["append"] = manifest["append"]
        settings.update({k: v for k, v in overrides.items() if v is not None})
        if "screen_size" in settings:
            settings["screen_size"] = tuple(settings["screen_size"])
        return cls(**settings)

    @classmethod
    def for_osworld_ubuntu(cls, image: str, **overrides: Any) -> QemuProviderConfig:
        """Settings for OSWorld's ``Ubuntu.qcow2`` (as its Docker image runs it).

        The image boots through its own bootloader into a GNOME session on a real display
        adapter; OSWorld's server listens on port 5000 without a token; Chrome's DevTools
        (9222) and VLC (8080) are forwarded too. 4 GiB and 4 CPUs, as OSWorld's Docker
        provider gives it. Under software emulation, boots take minutes.
        """
        settings: dict[str, Any] = {
            "image": image,
            "kernel": None,
            "guest_port": 5000,
            "extra_guest_ports": (9222, 8080),
            "memory_mb": 4096,
            "cpus": 4,
            "vga": "std",
            "guest_env": False,
            "token": None,
            "screen_size": (1920, 1080),
            "boot_timeout": 900.0,
        }
        settings.update(overrides)
        return cls(**settings)
