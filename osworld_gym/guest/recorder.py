"""Screen recording with ffmpeg x11grab: one recording per desktop, as OSWorld has one per VM."""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from osworld_gym.guest.http import HTTPError
from osworld_gym.guest.identity import desktop_user

if TYPE_CHECKING:
    from osworld_gym.guest.context import GuestContext

RECORDING_START_CHECK = 2.0  # seconds ffmpeg must survive for a recording to count as started
RECORDING_STOP_TIMEOUT = 15.0


class Recorder:
    """One ffmpeg x11grab recording per desktop, as OSWorld has one per VM."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._path: Path | None = None

    def start(self, ctx: GuestContext) -> None:
        """Start recording the display into the guest's state folder."""
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            raise HTTPError(500, "ffmpeg is not installed in this desktop")
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                raise HTTPError(400, "Recording is already in progress.")
            width, height = ctx.capture.size
            path = ctx.state_dir / "recording.mp4"
            path.unlink(missing_ok=True)
            argv = [
                ffmpeg,
                "-y",
                "-nostdin",
                "-loglevel",
                "error",
                "-f",
                "x11grab",
                "-video_size",
                f"{width}x{height}",
                "-framerate",
                "30",
                "-i",
                f"{ctx.config.display}.0",
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-pix_fmt",
                "yuv420p",
                "-r",
                "30",
                str(path),
            ]
            log = open(ctx.state_dir / "ffmpeg.log", "wb")  # noqa: SIM115 - handed to ffmpeg
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, **desktop_user()
            )
            log.close()
            deadline = time.monotonic() + RECORDING_START_CHECK
            while time.monotonic() < deadline and proc.poll() is None:
                if path.exists() and path.stat().st_size > 0:
                    break
                time.sleep(0.05)
            if proc.poll() is not None:
                message = (ctx.state_dir / "ffmpeg.log").read_text(errors="replace")[-500:]
                raise HTTPError(500, f"Failed to start recording: {message.strip()}")
            self._proc, self._path = proc, path

    def stop(self) -> Path:
        """Stop the recording (SIGINT, so ffmpeg finalises the MP4) and return its path."""
        with self._lock:
            proc, path = self._proc, self._path
            self._proc = self._path = None
        if proc is None or path is None:
            raise HTTPError(400, "No recording in progress to stop.")
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=RECORDING_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise HTTPError(500, "ffmpeg did not stop in time; the recording is lost") from None
        if not path.exists() or path.stat().st_size == 0:
            raise HTTPError(500, "Recording failed: the output file is empty")
        return path

    def abort(self) -> None:
        """Kill a running recording (server shutdown)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
