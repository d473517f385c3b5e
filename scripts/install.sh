#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for osworld-gym: system packages (scripts/install_system_deps.sh),
# then the Python package with its gui, eval, media, chrome, ray, train, test (pytest, mypy...),
# docs (MkDocs), docker, ssh, export, trl, skyrl, openenv and video extras into the current Python:
# everything `osworld-gym[all]` holds, with the CPU torch (verl, whose transformers pin clashes
# with train, gets a side venv in its tests; vllm needs CUDA; ocr a matching torchvision).
#   bash scripts/install.sh            # regular install (what CI and users run)
#   bash scripts/install.sh --editable # for development
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_system_deps.sh

PIP=(python -m pip install -q --disable-pip-version-check --root-user-action=ignore)
# The trainer's torch: the pinned CPU build, unless a torch is already there (a GPU machine's).
# Any other request for torch would pull a multi-GB CUDA build.
if ! python -c "import torch" >/dev/null 2>&1; then
  "${PIP[@]}" "torch==2.13.0"
fi
EXTRAS="gui,eval,media,chrome,ray,train,test,docs,docker,ssh,export,trl,skyrl,openenv,video"
if [ "${1:-}" = "--editable" ]; then
  "${PIP[@]}" -e ".[$EXTRAS]"
else
  "${PIP[@]}" ".[$EXTRAS]"
fi

# pyautogui (for OSWorld-style `python -c "import pyautogui; ..."` through /execute) without its
# python3-xlib dependency, which would overwrite python-xlib's files: the reason the gui extra
# cannot list it (setup.cfg). `osworld-gym doctor` prints the same commands when it is missing.
"${PIP[@]}" --no-deps "pyautogui==0.9.54" "mouseinfo==0.1.3"
if python -m pip show -q python3-xlib >/dev/null 2>&1; then
  python -m pip uninstall -y -q python3-xlib
  "${PIP[@]}" --no-deps --force-reinstall "python-xlib>=0.33"
fi
python -c "import Xlib, importlib.util as u; assert Xlib.__version__ >= (0, 33), Xlib.__version__; assert u.find_spec('pyautogui')"
echo "osworld-gym installed: $(python -c 'import osworld_gym; print(osworld_gym.__version__)')"
