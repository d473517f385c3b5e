#!/usr/bin/env bash
# GPU checks, on a Linux machine with one NVIDIA GPU; each prints a PASS/FAIL summary and the
# script exits non-zero on any failure:
#
#  1. engine (scripts/gpu_check.py): the vLLM rollout engine (osworld_agents.engines.vllm_engine)
#     against the transformers engine, with one ARPO update pushed into vLLM.
#  2. train (scripts/gpu_smoke_train.py): a ~5-minute smoke run of the trainer's `paper` code
#     path -- vLLM rollouts over rendered 1920x1080 screenshots at 8192 new tokens, an FSDP2
#     update (a world of one), the weight push, a second iteration sampling the pushed version --
#     printing tokens/s for rollout and update.
#
#   bash scripts/gpu_check.sh                                  # both, tiny Qwen2.5-VL, ~7 min
#   bash scripts/gpu_check.sh --model /models/UI-TARS-1.5-7B   # engine check on a folder, then train
#   bash scripts/gpu_check.sh engine --json report.json        # the engine check only (its options)
#   bash scripts/gpu_check.sh train --iterations 3 --eager     # the smoke run only (its options)
#
# Environment: with GPU_CHECK_PYTHON (or `python3`) able to `import vllm`, that interpreter is
# used; otherwise a venv at GPU_CHECK_VENV (default ~/.cache/osworld-gym/gpu-check-venv) gets
# `.[train,vllm]` (vLLM 0.33.0 brings torch 2.14 with CUDA: several GB, needs PyPI). The package
# is then (re)installed from this tree without dependencies, so the check runs the code here.
# Models never come from the hub (HF_HUB_OFFLINE=1).
#
# Verified / not verified: written on a machine with neither a GPU nor vLLM; NEVER RUN on a GPU
# (neither part). The smoke run ran on CPU only, against a canned fake `vllm` (its header says
# what that does and does not show).
# Its Python part (scripts/gpu_check.py) was run end to end on CPU against a fake `vllm` module
# backed by the transformers model, which exercises the script's own logic but none of vLLM's
# behaviour. What the check asserts about vLLM (token prompts with images, processed log-probs,
# seeds, collective_rpc weight reloads, sleep levels, cache resets) comes from the vLLM 0.33 fact
# sheet; the log-prob tolerances are estimates (see --tol-mean / --tol-max) and the observed values
# are printed. Options: python scripts/gpu_check.py --help.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "FAIL: no NVIDIA GPU visible (nvidia-smi); this check needs one" >&2
  exit 2
fi

PY="${GPU_CHECK_PYTHON:-python3}"
PIP_FLAGS=(-q --disable-pip-version-check)
if ! "$PY" -c "import vllm" >/dev/null 2>&1; then
  VENV="${GPU_CHECK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/osworld-gym/gpu-check-venv}"
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  PY="$VENV/bin/python"
  if ! "$PY" -c "import vllm" >/dev/null 2>&1; then
    echo "installing .[train,vllm] into $VENV (vLLM 0.33.0 + its CUDA torch; several GB)..."
    "$PY" -m pip install "${PIP_FLAGS[@]}" --upgrade pip
    "$PY" -m pip install "${PIP_FLAGS[@]}" ".[train,vllm]"
  fi
fi
# Dependencies of the trainer side (kept when already satisfied; vLLM's torch and transformers
# satisfy the train extra's bounds), then this tree's code without touching any dependency.
if ! "$PY" -c "import osworld_agents, transformers, safetensors, tokenizers" >/dev/null 2>&1; then
  "$PY" -m pip install "${PIP_FLAGS[@]}" ".[train]"
fi
INSTALLED="$("$PY" -c "import osworld_agents, pathlib; print(pathlib.Path(osworld_agents.__file__).resolve().parent)")"
if [ "$INSTALLED" != "$(pwd -P)/agents" ]; then  # not an editable install of this tree
  BUILD_FLAGS=()
  if "$PY" -c "import setuptools" >/dev/null 2>&1; then
    BUILD_FLAGS=(--no-build-isolation)  # no download of build tools on offline machines
  fi
  "$PY" -m pip install "${PIP_FLAGS[@]}" ${BUILD_FLAGS[@]+"${BUILD_FLAGS[@]}"} \
    --no-deps --force-reinstall .
fi

"$PY" -c "import vllm, torch; print(f'vllm {vllm.__version__}, torch {torch.__version__}')"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
case "${1:-}" in
  engine) shift; exec "$PY" scripts/gpu_check.py "$@" ;;
  train) shift; exec "$PY" scripts/gpu_smoke_train.py "$@" ;;
esac
status=0
"$PY" scripts/gpu_check.py "$@" || status=1
"$PY" scripts/gpu_smoke_train.py || status=1
exit "$status"
