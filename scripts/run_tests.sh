#!/usr/bin/env bash
# Runs the test suite against the installed package (set up by scripts/install.sh).
# Extra arguments go to pytest, e.g. `bash scripts/run_tests.sh -m slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The `pytest` script (not `python -m pytest`) keeps the source tree off sys.path, so the tests
# import the installed package with its data files.
# Models are built locally by the tests; nothing may come from the Hugging Face hub.
export HF_HUB_OFFLINE=1
exec pytest "$@"
