"""Boot, snapshot and reset latency of the ``qemu`` provider (for benchmarks).

``python -m osworld_gym.providers.qemu.bench [--resets N] [--image-dir DIR]`` boots one VM of
the built image and prints the figures as JSON; ``measure_qemu_reset()`` returns them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from osworld_gym.providers.qemu.provider import QemuDesktop, QemuProvider, QemuProviderConfig


def measure_qemu_reset(config: QemuProviderConfig | None = None, resets: int = 5) -> dict[str, Any]:
    """Boot a VM, then dirty and reset it ``resets`` times.

    Returns:
        ``accel``; ``boot_s`` (QEMU start to the guest answering: what a full-boot reset costs);
        ``savevm_s``; ``reset_s`` (each ``loadvm`` + guest answering), ``reset_median_s``,
        ``reset_max_s``; ``speedup`` (boot over median reset).
    """
    provider = QemuProvider(config or QemuProviderConfig.from_built_image())
    desktop = provider.launch()
    assert isinstance(desktop, QemuDesktop)
    try:
        times = []
        for _ in range(resets):
            desktop.client.execute("echo dirty > ~/dirty.txt", shell=True)
            desktop.reset()
            times.append(desktop.last_reset_seconds)
    finally:
        desktop.close()
    median = statistics.median(times) if times else float("nan")
    return {
        "accel": desktop.accel,
        "boot_s": round(desktop.boot_seconds, 3),
        "savevm_s": round(desktop.snapshot_seconds, 3),
        "reset_s": [round(t, 3) for t in times],
        "reset_median_s": round(median, 3),
        "reset_max_s": round(max(times), 3) if times else None,
        "speedup": round(desktop.boot_seconds / median, 1) if times else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: measure and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--image-dir", help="folder of the built image (image.json)")
    parser.add_argument("--memory-mb", type=int, default=2048)
    args = parser.parse_args(argv)
    config = QemuProviderConfig.from_built_image(args.image_dir, memory_mb=args.memory_mb)
    sys.stdout.write(json.dumps(measure_qemu_reset(config, args.resets), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
