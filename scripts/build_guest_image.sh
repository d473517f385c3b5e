#!/usr/bin/env bash
# Builds the guest desktop image osworld-gym/desktop:<version> (and :latest) from Debian
# packages (vm_images/), starting a Docker engine first if none runs. Cached: the root
# filesystem tarball in OSWORLD_GYM_IMAGE_CACHE (default /var/cache/osworld-gym) and an image
# with the same content are reused, so a second run takes seconds. The first run needs root,
# debootstrap and access to a Debian mirror and PyPI (~5-10 min).
#   bash scripts/build_guest_image.sh            # build or reuse
#   bash scripts/build_guest_image.sh --rebuild  # redo the project layer (not the rootfs)
set -euo pipefail
cd "$(dirname "$0")/.."

rebuild=False
for arg in "$@"; do
  case "${arg}" in
    --rebuild) rebuild=True ;;
    *) echo "build_guest_image.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done

bash scripts/start_docker.sh
OSWORLD_GYM_VM_IMAGES="$(pwd)/vm_images" python - "${rebuild}" <<'PY'
import logging
import sys

from osworld_gym.providers.docker.image import DEFAULT_CACHE_DIR, build_image
import os

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
result = build_image(
    cache_dir=os.environ.get("OSWORLD_GYM_IMAGE_CACHE", DEFAULT_CACHE_DIR),
    rebuild=sys.argv[1] == "True",
)
print(
    f"{' '.join(result.tags)}: {result.image_id[:19]}, {result.size_bytes / 1e6:.0f} MB, "
    f"{result.seconds:.1f} s (root filesystem {'built' if result.built_base else 'cached'}, "
    f"image {'built' if result.built_image else 'cached'})"
)
PY
