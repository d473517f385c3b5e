"""Keep every Ray these tests start on 127.0.0.1 (docs/design/known-traps.md#ray-on-loopback).

Ray reads ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` once, when it is imported: "0" makes it bind
its nodes to the loopback address instead of the host's. Set here, before any test module
imports Ray; subprocesses (drivers started by tests, Ray's own workers) inherit it.
"""

from __future__ import annotations

import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
