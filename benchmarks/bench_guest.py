"""Guest latency on one local desktop: screenshots by format, typed actions vs OSWorld's way.

    python benchmarks/bench_guest.py [--width 1920 --height 1080 --repeats 30]

Prints, side by side in one run on the same desktop:
  * screenshot grab + encode in the guest process (PNG vs JPEG vs raw), and the same through HTTP
    (raw: through the desktop's shared memory, as the local provider sets the client up, and as
    the HTTP body); ``benchmarks/bench_observe.py`` has the CPU of each side, before and after;
  * one click through the typed-action endpoint vs OSWorld's way (``/execute`` running
    ``python -c "import pyautogui; pyautogui.click(x, y)"``), and their ratio.
Targets (issue 2): screenshot + encode under 25 ms median at 1920x1080; typed action >= 20x faster.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from osworld_gym.guest.capture import ScreenCapture, ScreenshotOptions
from osworld_gym.guest.client import GuestClient
from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig


def timed(fn: Callable[[], object], repeats: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def row(name: str, samples: list[float]) -> str:
    samples = sorted(samples)
    p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
    return f"{name:<44} {statistics.median(samples):9.2f} {p90:9.2f} {len(samples):6d}"


def populate(desktop) -> None:
    """Put realistic content on screen so PNG has something to compress."""
    client = desktop.client
    client.launch(
        [
            "xterm",
            "-geometry",
            "120x50+0+0",
            "-e",
            "bash",
            "-c",
            "ls -laR /usr/share | head -400; sleep 600",
        ]
    )
    client.launch(["mousepad", "/usr/share/common-licenses/GPL-3"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if client.execute(["wmctrl", "-l"]).output.count("\n") >= 2:
            break
        time.sleep(0.2)
    client.screenshot(settle=True, settle_timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    config = LocalProviderConfig(screen_size=(args.width, args.height))
    with LocalProvider(config).launch() as desktop:
        populate(desktop)
        client = desktop.client
        print(f"desktop {desktop.display} {args.width}x{args.height}; median and p90 in ms")
        print(f"{'measurement':<44} {'median':>9} {'p90':>9} {'n':>6}")

        capture = ScreenCapture(desktop.display)
        results = {}
        for fmt in ("png", "jpeg", "raw"):
            options = ScreenshotOptions(format=fmt)
            results[f"in-guest {fmt}"] = timed(
                lambda o=options: capture.screenshot(o), args.repeats
            )
        capture.close()
        for fmt in ("png", "jpeg", "raw"):
            results[f"HTTP /screenshot {fmt}"] = timed(
                lambda f=fmt: client.screenshot(format=f), args.repeats
            )
        with GuestClient(desktop.endpoint, token=desktop.token) as http:  # no shared memory
            results["HTTP raw, as the body"] = timed(
                lambda: http.screenshot(format="raw"), args.repeats
            )
        for name, samples in results.items():
            print(row(f"screenshot grab+encode, {name}", samples))

        typed = timed(
            lambda: client.actions([{"kind": "click", "x": 1500, "y": 900}]), args.repeats
        )
        code = "import pyautogui; pyautogui.FAILSAFE = False; pyautogui.click(1500, 900)"
        osworld = timed(
            lambda: client.execute(["python", "-c", code]), max(5, args.repeats // 3), 1
        )
        print(row("click: typed /actions (XTEST in-process)", typed))
        print(row("click: /execute python -c pyautogui (OSWorld)", osworld))
        ratio = statistics.median(osworld) / statistics.median(typed)
        png = statistics.median(results["in-guest png"])
        print()
        print(f"typed action speed-up over OSWorld's way: {ratio:.0f}x (target >= 20x)")
        print(
            f"screenshot+encode PNG median {png:.1f} ms, JPEG "
            f"{statistics.median(results['in-guest jpeg']):.1f} ms, raw "
            f"{statistics.median(results['in-guest raw']):.1f} ms (target < 25 ms)"
        )


if __name__ == "__main__":
    main()
