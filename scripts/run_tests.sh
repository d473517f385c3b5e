#!/usr/bin/env bash
# Runs the test suite against the installed package (set up by scripts/install.sh).
# Extra arguments go to pytest, e.g. `bash scripts/run_tests.sh -m slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The `pytest` script (not `python -m pytest`) keeps the source tree off sys.path, so the tests
# import the installed package with its data files.
# Models are built locally by the tests; nothing may come from the Hugging Face hub.
export HF_HUB_OFFLINE=1
# The docker provider's tests need an engine and the guest image: where this runs as root (CI),
# start the engine and build the image (minutes the first time, seconds once cached).
if [ "$(id -u)" -eq 0 ] && command -v dockerd >/dev/null; then
  bash scripts/build_guest_image.sh
fi
exec pytest "$@"
