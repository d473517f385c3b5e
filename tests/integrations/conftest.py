"""Fixtures of the trainer adapters' tests; the pool tests' fakes and desktop helpers are shared."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# pool_fakes / pool_desktops live beside the pool tests (pytest's rootdir-less import mode puts
# only each test file's own folder on sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))
# Ray, if a test starts it, binds to loopback (see tests/pool/conftest.py).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
