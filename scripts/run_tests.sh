#!/usr/bin/env bash
# Runs the test suite against the installed package (set up by scripts/install.sh).
# Extra arguments go to pytest, e.g. `bash scripts/run_tests.sh -m slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The `pytest` script (not `python -m pytest`) keeps the source tree off sys.path, so the tests
# import the installed package with its data files.
# Models are built locally by the tests; nothing may come from the Hugging Face hub.
export HF_HUB_OFFLINE=1

# The mark expression given with -m (empty: pyproject's addopts decide).
marks=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    -m) marks="${args[i + 1]:-}" ;;
    -m*) marks="${args[i]#-m}" ;;
  esac
done

# Whether the selection may hold tests marked `docker` (tests/fixture_marks.py decides as
# pytest's -m would; `-m fast`, for one, holds none).
# Any failure to tell counts as yes.
selects_docker() {
  [ -z "$marks" ] && return 0
  local status=0
  python3 - "$marks" <<'EOF' || status=$?
import sys

sys.path.insert(0, "tests")
from fixture_marks import can_select

sys.exit(0 if can_select(sys.argv[1], {"docker"}) else 3)
EOF
  [ "$status" -ne 3 ]
}

# The docker provider's tests need an engine and the guest image: where this runs as root (CI),
# start the engine and build the image (minutes the first time, seconds once cached).
if [ "$(id -u)" -eq 0 ] && command -v dockerd >/dev/null && selects_docker; then
  bash scripts/build_guest_image.sh
fi
exec pytest "$@"
