"""Observation and local reset costs on one local desktop, before and after (issue 20).

    flock /tmp/osworld-bench.lock python benchmarks/bench_observe.py \\
        [--shots 100] [--resets 20] [--steps 60] [--width 1920 --height 1080]
        [--session minimal|gnome] [--baseline REV | --compare-sessions]

Measured on a desktop with a terminal and a text editor open:

* per observation (``client.screenshot(...).to_array()``): raw frames through the client's
  default transport (shared memory on a local desktop, where the code has it), raw frames over
  HTTP, raw after the poll settle on a still screen (its full-frame comparisons), PNG and JPEG
  (what remote desktops would send): the driver's CPU, the guest's CPU, the X server's CPU
  (milliseconds per observation) and the latency (median, p90);
* per local reset after a dirty episode (a terminal opened): wall time, the driver's CPU, the
  CPU of the driver and desktop together (the desktop's processes alive after the reset, a new
  window manager included, and what the driver reaped), and how often the window manager was
  kept;
* per ``env.step`` (``gym.make("OSWorld-v0")`` with its defaults at that revision: a command
  typed into a terminal, the settle wait, the observation): the driver's, guest's and X
  server's CPU per step and the latency. This is the issue's "guest CPU per step at 1080p".

``--session gnome`` measures a GNOME session (``LocalProviderConfig(session=...)``) instead of
the minimal one; ``--compare-sessions`` measures both at this revision, the minimal (openbox)
session as the baseline (issue 36: GNOME's cost against openbox's).

``--baseline REV`` runs the same measurements on git revision REV's code (``git archive`` into a
temp folder, run in a subprocess with that tree first on ``PYTHONPATH``, its guest included) and
prints both side by side with after/before ratios. Wrap runs in ``flock`` (2 cores, shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_guest import populate  # the same screen content as the guest benchmark
from bench_task_files import terminal_task

from osworld_gym.providers.local.provider import LocalProvider, LocalProviderConfig

_TICK = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parent.parent


def proc_cpu(pid: int) -> float:
    """CPU seconds of a process (all its threads; not its children)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def desktop_cpu(desktop: Any) -> dict[int, float]:
    """CPU seconds of each live process of the desktop (see ``cpu_between()``)."""
    return {pid: proc_cpu(pid) for pid in desktop.pids()}


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the desktop's processes used between two snapshots: those alive at the second one
    (a process started in between counts whole). Processes killed in between are left out:
    their CPU was the episode's (and their parents' "children" times would count it again).
    """
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def observe(desktop: Any, shot: Callable[[], Any], shots: int) -> dict[str, float]:
    """Per-observation CPU (driver, guest, X server) and latency of ``shot``."""
    guest, xvfb = desktop.component_pid("guest"), desktop.component_pid("xvfb")
    for _ in range(3):
        shot()
    latencies = []
    g0, x0, d0 = proc_cpu(guest), proc_cpu(xvfb), time.process_time()
    for _ in range(shots):
        start = time.perf_counter()
        shot()
        latencies.append(time.perf_counter() - start)
    d1, g1, x1 = time.process_time(), proc_cpu(guest), proc_cpu(xvfb)
    latencies.sort()
    return {
        "driver_ms": (d1 - d0) / shots * 1000,
        "guest_ms": (g1 - g0) / shots * 1000,
        "xserver_ms": (x1 - x0) / shots * 1000,
        "latency_ms": statistics.median(latencies) * 1000,
        "p90_ms": latencies[int(len(latencies) * 0.9)] * 1000,
    }


def measure_observations(desktop: Any, shots: int) -> dict[str, dict[str, float]]:
    client = desktop.client
    rows = {}
    rows["raw, default transport"] = observe(
        desktop, lambda: client.screenshot(format="raw").to_array(), shots
    )
    shares = hasattr(client, "share_frames")
    if shares:
        client.share_frames(None)  # raw frames as the HTTP body from here on
    rows["raw, HTTP body"] = observe(
        desktop, lambda: client.screenshot(format="raw").to_array(), shots
    )
    # The poll settle (the default mode) compares full frames every 40 ms: one copy less each.
    rows["raw, poll settle 0.2 s"] = observe(
        desktop,
        lambda: client.screenshot(format="raw", settle=True, settle_quiet=0.2).to_array(),
        max(10, shots // 6),
    )
    for fmt in ("png", "jpeg"):
        rows[f"{fmt} (remote desktops)"] = observe(
            desktop, lambda f=fmt: client.screenshot(format=f).to_array(), max(20, shots // 3)
        )
    return rows


def measure_resets(desktop: Any, resets: int) -> dict[str, float]:
    """Resets after an episode that opened a terminal.

    CPU is summed over all resets and divided (the kernel counts other processes' CPU in
    10 ms ticks: one reset's share would be mostly rounding).
    """
    walls, kept = [], 0
    driver = total = 0.0
    desktop.reset()
    for i in range(resets):
        title = f"episode-{i}"
        desktop.client.launch(["xterm", "-title", title])
        deadline = time.monotonic() + 20
        while title not in desktop.client.execute(["wmctrl", "-l"]).output:
            if time.monotonic() >= deadline:
                raise RuntimeError(f"xterm {title} did not appear")
            time.sleep(0.05)
        wm = desktop.component_pid("wm")
        before, reaped = desktop_cpu(desktop), os.times()
        d0, start = time.process_time(), time.perf_counter()
        desktop.reset()
        walls.append(time.perf_counter() - start)
        spent = time.process_time() - d0
        # What this process reaped (a bwrap that carried a killed component) is counted too.
        now = os.times()
        reaped_cpu = now.children_user + now.children_system
        reaped_cpu -= reaped.children_user + reaped.children_system
        driver += spent
        total += cpu_between(before, desktop_cpu(desktop)) + reaped_cpu + spent
        kept += int(desktop.component_pid("wm") == wm)
    return {
        "wall_ms": statistics.median(walls) * 1000,
        "driver_cpu_ms": driver / resets * 1000,
        "total_cpu_ms": total / resets * 1000,
        "wm_kept": kept / resets,
    }


TERMINAL_TASK = terminal_task("bench-terminal")


def measure_steps(args: argparse.Namespace) -> dict[str, float]:
    """``env.step`` with the env's defaults: a command typed into a terminal, then observed.

    What an agent's step costs on each side: the action, the settle wait and the observation
    as the env asks for them (settle mode, frame transport) at this revision. CPU is summed
    over all steps (clock ticks) and divided.
    """
    import gymnasium as gym

    import osworld_gym  # noqa: F401 -- registers the env ids
    from osworld_gym.actions import TypeText

    screen = (args.width, args.height)
    env = gym.make(
        "OSWorld-v0",
        tasks=[TERMINAL_TASK],
        action_format="structured",
        screen_size=screen,
        max_steps=args.steps + 1,
        provider=LocalProviderConfig(screen_size=screen, **_session(args)),
    ).unwrapped
    try:
        env.reset(options={"task_id": TERMINAL_TASK["id"]})
        desktop = env._desktop  # noqa: SLF001 -- the benchmark reads its processes' CPU
        guest, xvfb = desktop.component_pid("guest"), desktop.component_pid("xvfb")
        latencies = []
        g0, x0, d0 = proc_cpu(guest), proc_cpu(xvfb), time.process_time()
        for i in range(args.steps):
            start = time.perf_counter()
            env.step(TypeText(text=f"echo step {i}\n"))
            latencies.append(time.perf_counter() - start)
        d1, g1, x1 = time.process_time(), proc_cpu(guest), proc_cpu(xvfb)
    finally:
        env.close()
    latencies.sort()
    return {
        "driver_ms": (d1 - d0) / args.steps * 1000,
        "guest_ms": (g1 - g0) / args.steps * 1000,
        "xserver_ms": (x1 - x0) / args.steps * 1000,
        "latency_ms": statistics.median(latencies) * 1000,
        "p90_ms": latencies[int(len(latencies) * 0.9)] * 1000,
    }


def _session(args: argparse.Namespace) -> dict[str, str]:
    """The session option, only when not the default (older revisions have none)."""
    return {} if args.session == "minimal" else {"session": args.session}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    config = LocalProviderConfig(screen_size=(args.width, args.height), **_session(args))
    with LocalProvider(config).launch() as desktop:
        populate(desktop)
        observations = measure_observations(desktop, args.shots)
        resets = measure_resets(desktop, args.resets)
    steps = measure_steps(args) if args.steps else {}
    return {"observations": observations, "resets": resets, "steps": steps}


def run_baseline(args: argparse.Namespace) -> dict[str, Any]:
    """The same measurements on revision ``args.baseline``'s code, in a subprocess."""
    with tempfile.TemporaryDirectory(prefix="osworld-gym-baseline-") as folder:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.baseline],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        out = Path(folder) / "result.json"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [folder, os.environ.get(
            "PYTHONPATH")])))  # fmt: skip
        command = [
            sys.executable, __file__, "--json-out", str(out), "--shots", str(args.shots),
            "--resets", str(args.resets), "--width", str(args.width), "--height", str(args.height),
            "--steps", str(args.steps), *(["--session", args.session] if _session(args) else []),
        ]  # fmt: skip
        # From the temp folder: the current checkout must not shadow the baseline's package.
        subprocess.run(command, env=env, cwd=folder, check=True)
        return json.loads(out.read_text())


def _ratio(after: float, before: float) -> str:
    return f"{after / before:6.2f}x" if before > 0 else "      -"


def report(after: dict[str, Any], before: dict[str, Any] | None, label: str) -> None:
    print(f"observations: ms per observation (median latency, p90); {label}")
    metrics = ("driver_ms", "guest_ms", "xserver_ms", "latency_ms", "p90_ms")
    header = f"{'':<26}" + "".join(f"{m:>12}" for m in metrics)
    print(header)
    for name, row in after["observations"].items():
        print(f"{name:<26}" + "".join(f"{row[m]:12.2f}" for m in metrics))
        if before is not None and name in before["observations"]:
            old = before["observations"][name]
            print(f"{'  before':<26}" + "".join(f"{old[m]:12.2f}" for m in metrics))
            print(
                f"{'  after/before':<26}"
                + "".join(f"{_ratio(row[m], old[m]):>12}" for m in metrics)
            )
    print()
    print("local reset after an episode with a terminal (wall: median; CPU: mean)")
    metrics = ("wall_ms", "driver_cpu_ms", "total_cpu_ms", "wm_kept")
    print(f"{'':<26}" + "".join(f"{m:>14}" for m in metrics))
    rows = [("after", after["resets"])]
    if before is not None:
        rows.insert(0, ("before", before["resets"]))
    for name, row in rows:
        print(f"{name:<26}" + "".join(f"{row[m]:14.2f}" for m in metrics))
    if before is not None:
        old, new = before["resets"], after["resets"]
        ratios = "".join(f"{_ratio(new[m], old[m]):>14}" for m in metrics[:3])
        print(f"{'after/before':<26}{ratios}")
    if not after.get("steps"):
        return
    print()
    print("env.step: a command typed into a terminal, settled and observed with the env's defaults")
    metrics = ("driver_ms", "guest_ms", "xserver_ms", "latency_ms", "p90_ms")
    print(f"{'':<26}" + "".join(f"{m:>12}" for m in metrics))
    rows = [("after", after["steps"])]
    if before is not None and before.get("steps"):
        rows.insert(0, ("before", before["steps"]))
    for name, row in rows:
        print(f"{name:<26}" + "".join(f"{row[m]:12.2f}" for m in metrics))
    if len(rows) == 2:
        old, new = rows[0][1], rows[1][1]
        print(f"{'after/before':<26}" + "".join(f"{_ratio(new[m], old[m]):>12}" for m in metrics))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shots", type=int, default=100)
    parser.add_argument("--resets", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60, help="env steps (0: skip them)")
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--session", default="minimal", choices=("minimal", "gnome"))
    compare = parser.add_mutually_exclusive_group()
    compare.add_argument("--baseline", help="git revision to compare with (e.g. HEAD)")
    compare.add_argument(
        "--compare-sessions",
        action="store_true",
        help="measure the gnome session against the minimal one ('before'), at this revision",
    )
    parser.add_argument("--json-out", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.json_out:  # the baseline's subprocess
        Path(args.json_out).write_text(json.dumps(measure(args)))
        return
    if args.compare_sessions:
        before = measure(argparse.Namespace(**{**vars(args), "session": "minimal"}))
        after = measure(argparse.Namespace(**{**vars(args), "session": "gnome"}))
        label = "'before' is the minimal (openbox) session, 'after' the gnome session"
    else:
        before = run_baseline(args) if args.baseline else None
        after = measure(args)
        label = f"'before' is {args.baseline}" if args.baseline else "no baseline"
        label += f"; session {args.session}"
    print()
    print(
        f"screen {args.width}x{args.height}; {args.shots} raw shots per row, {args.resets} resets"
    )
    report(after, before, label)


if __name__ == "__main__":
    main()
