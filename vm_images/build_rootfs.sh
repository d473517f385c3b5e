#!/usr/bin/env bash
# Builds the root filesystem of the osworld-gym guest desktop into a directory, from Debian
# packages only: debootstrap Debian 12 (bookworm, minbase), the packages of
# vm_images/packages.txt, user `user` (home /home/user, password `password`, in group sudo),
# the guest server's Python packages (vm_images/guest-requirements.txt) in /opt/osworld-gym,
# osworld-gym itself from this repository's source, and the session that starts Xvfb, openbox
# and the guest server (/usr/local/bin/osworld-gym-desktop; a systemd unit for booted images).
#
#   sudo bash vm_images/build_rootfs.sh [options] TARGET_DIR
#
# Options:
#   --extra-packages "PKG ..."  more Debian packages (e.g. "linux-image-amd64 systemd-sysv" for
#                               a bootable image); part of the base stage's hash
#   --no-project                stop after the base stage (no osworld-gym, no default HOME)
#   --project-only              only (re)install osworld-gym into an existing base TARGET_DIR
#   --mirror URL                Debian mirror (default http://deb.debian.org/debian)
#   --print-hash                print the base stage's hash and exit
#   --bundle DIR                only write the project bundle (wheel + rootfs/ files +
#                               install_project.sh) into DIR; no root needed
# The host's Python (PYTHON, default python3) builds the wheels; it must be a 3.11 with pip.
#
# The base stage (debootstrap, apt, Python packages) is skipped when TARGET_DIR already holds a
# base built from the same inputs (its hash is in TARGET_DIR/.osworld-gym-base): the package
# lists and BASE_RECIPE, which names the version of build_base below (bump it when changing it).
# The project stage (install_project.sh: osworld-gym, the files of vm_images/rootfs/, the
# default HOME) always runs. Needs root, debootstrap, and network access to the Debian mirror
# and PyPI. Lists of what went in are written to /usr/share/osworld-gym/ inside the root
# filesystem.
set -euo pipefail

BASE_RECIPE=1
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "${here}")"
suite=bookworm
mirror="http://deb.debian.org/debian"
extra_packages=""
stages="base project"
print_hash=0
bundle_dir=""
target=""

while [ $# -gt 0 ]; do
  case "$1" in
    --extra-packages) extra_packages="$2"; shift 2 ;;
    --no-project) stages="base"; shift ;;
    --project-only) stages="project"; shift ;;
    --mirror) mirror="$2"; shift 2 ;;
    --print-hash) print_hash=1; shift ;;
    --bundle) bundle_dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) echo "build_rootfs.sh: unknown option $1" >&2; exit 2 ;;
    *) target="$1"; shift ;;
  esac
done

packages() {  # the package names of packages.txt plus --extra-packages, one per line
  { sed -e 's/#.*//' "${here}/packages.txt"; printf '%s\n' ${extra_packages}; } \
    | tr -s ' \t' '\n' | sed '/^$/d'
}

# The base stage's inputs: the suite, the package list, the Python pins, the recipe version.
base_hash="$({
  echo "${suite} ${BASE_RECIPE}"
  packages | sort -u
  sed -e 's/#.*//' -e '/^ *$/d' "${here}/guest-requirements.txt"
} | sha256sum | cut -c1-16)"
if [ "${print_hash}" = 1 ]; then
  echo "${base_hash}"
  exit 0
fi

# The bundle install_project.sh installs: an osworld-gym wheel built from a clean copy of the
# sources (no stale build/ folder; pure Python, so the guest needs no network for it) and the
# files of vm_images/rootfs/. Also used by osworld_gym.providers.docker.image. Where this recipe
# is the package data of an installed osworld-gym (osworld_gym/vm_images, no source beside it),
# the wheel is that installed distribution packed again (pack_installed.py).
make_bundle() {  # make_bundle DIR
  local work
  if [ ! -f "${repo}/setup.py" ]; then
    mkdir -p "$1"
    "${PYTHON:-python3}" "${here}/pack_installed.py" "$1" >/dev/null
    cp -a "${here}/rootfs" "${here}/install_project.sh" "$1/"
    return
  fi
  work="$(mktemp -d)"
  tar -C "${repo}" --exclude=__pycache__ --exclude='*.egg-info' -cf - \
    setup.py setup.cfg pyproject.toml README.md LICENSE osworld_gym agents envs vm_images \
    | tar -C "${work}" -xf -
  # With this Python's setuptools when it has one; else pip fetches one (needs PyPI).
  "${PYTHON:-python3}" -m pip wheel -q --no-deps --no-build-isolation --disable-pip-version-check \
    -w "$1" "${work}" >/dev/null 2>&1 ||
    "${PYTHON:-python3}" -m pip wheel -q --no-deps --disable-pip-version-check \
      -w "$1" "${work}" >/dev/null
  rm -rf "${work}"
  cp -a "${here}/rootfs" "${here}/install_project.sh" "$1/"
}

if [ -n "${bundle_dir}" ]; then
  mkdir -p "${bundle_dir}"
  make_bundle "${bundle_dir}"
  exit 0
fi
if [ -z "${target}" ]; then
  echo "usage: build_rootfs.sh [options] TARGET_DIR (see --help)" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "build_rootfs.sh: needs root (debootstrap, chroot)" >&2
  exit 1
fi
mkdir -p "${target}"
target="$(cd "${target}" && pwd)"

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done
  rm -f "${target}/usr/sbin/policy-rc.d"
}
trap cleanup EXIT
mount_chroot() {
  local m
  for m in proc sys dev dev/pts; do
    if ! mountpoint -q "${target}/${m}"; then
      mkdir -p "${target}/${m}"
      case "${m}" in
        proc) mount -t proc proc "${target}/proc" ;;
        sys) mount -t sysfs sysfs "${target}/sys" ;;
        *) mount --bind "/${m}" "${target}/${m}" ;;
      esac
      mounted+=("${target}/${m}")
    fi
  done
  # No service may start inside the chroot while packages install.
  printf '#!/bin/sh\nexit 101\n' >"${target}/usr/sbin/policy-rc.d"
  chmod 755 "${target}/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "${target}/etc/resolv.conf"
}
in_root() { chroot "${target}" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# Each step of the base records its hash in TARGET_DIR/.osworld-gym-<step>, so a build that
# failed (a network error, say) resumes after its last finished step.
step_done() { [ "$(cat "${target}/.osworld-gym-$1" 2>/dev/null)" = "${base_hash}" ]; }
mark_done() { echo "${base_hash}" >"${target}/.osworld-gym-$1"; }

build_base() {
  if step_done base; then
    echo "build_rootfs: base ${base_hash} already in ${target}"
    return
  fi
  if ! step_done debootstrap; then
    if [ -n "$(ls -A "${target}")" ]; then
      echo "build_rootfs: ${target} is not empty and holds no base ${base_hash}; use an empty dir" >&2
      exit 1
    fi
    command -v debootstrap >/dev/null || {
      echo "build_rootfs: debootstrap is missing (apt-get install debootstrap)" >&2
      exit 1
    }
    echo "build_rootfs: debootstrap ${suite} into ${target}"
    debootstrap --variant=minbase --arch=amd64 "${suite}" "${target}" "${mirror}"
    printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
      "${mirror}" "${suite}" "${mirror}" "${suite}" "${suite}" >"${target}/etc/apt/sources.list"
    mark_done debootstrap
  fi
  mount_chroot
  if ! step_done apt; then
    echo "build_rootfs: installing $(packages | wc -l) packages"
    in_root apt-get update -q
    # shellcheck disable=SC2046
    in_root apt-get install -y -q --no-install-recommends $(packages)
    in_root apt-get clean
    rm -rf "${target}/var/lib/apt/lists/"* "${target}/var/cache/apt/"*.bin
    mark_done apt
  fi
  if ! step_done user; then
    in_root useradd --create-home --home-dir /home/user --shell /bin/bash --groups sudo user
    echo "user:password" | in_root chpasswd
    # The X server's socket folder, as systemd-tmpfiles would make it on a booted system.
    install -d -m 1777 "${target}/tmp/.X11-unix"
    mark_done user
  fi

  echo "build_rootfs: guest Python packages into /opt/osworld-gym"
  # The wheels are fetched here, by this host's pip (its index, proxy and certificates), and
  # installed in the root without network access. Binary wheels (numpy) must match the
  # guest's Python 3.11: run this with a Python 3.11 (PYTHON=...).
  local wheels="${target}/tmp/osworld-gym-wheels"
  rm -rf "${wheels}"
  "${PYTHON:-python3}" -m pip wheel -q --disable-pip-version-check -w "${wheels}" \
    -r "${here}/guest-requirements.txt"
  # pyautogui without its python3-xlib dependency (it would overwrite python-xlib's files).
  "${PYTHON:-python3}" -m pip wheel -q --disable-pip-version-check --no-deps -w "${wheels}" \
    pyautogui==0.9.54 mouseinfo==0.1.3
  cp "${here}/guest-requirements.txt" "${wheels}/requirements.txt"
  rm -rf "${target}/opt/osworld-gym"
  # --system-site-packages: the guest's accessibility support uses Debian's python3-gi/pyatspi.
  in_root python3 -m venv --system-site-packages /opt/osworld-gym
  in_root /opt/osworld-gym/bin/pip install -q --no-cache-dir --disable-pip-version-check \
    --no-index --find-links /tmp/osworld-gym-wheels -r /tmp/osworld-gym-wheels/requirements.txt
  in_root /opt/osworld-gym/bin/pip install -q --no-cache-dir --disable-pip-version-check \
    --no-index --find-links /tmp/osworld-gym-wheels --no-deps pyautogui mouseinfo
  rm -rf "${wheels}"

  mkdir -p "${target}/usr/share/osworld-gym"
  in_root dpkg-query -W -f='${Package}\t${Version}\n' >"${target}/usr/share/osworld-gym/dpkg-list.txt"
  mark_done base
  echo "build_rootfs: base ${base_hash} done ($(wc -l <"${target}/usr/share/osworld-gym/dpkg-list.txt") Debian packages)"
}

build_project() {
  if [ ! -x "${target}/opt/osworld-gym/bin/python" ]; then
    echo "build_rootfs: ${target} has no base yet (run without --project-only)" >&2
    exit 1
  fi
  mount_chroot
  rm -rf "${target}/tmp/osworld-gym-bundle"
  mkdir -p "${target}/tmp/osworld-gym-bundle"
  make_bundle "${target}/tmp/osworld-gym-bundle"
  in_root sh /tmp/osworld-gym-bundle/install_project.sh /tmp/osworld-gym-bundle
  rm -rf "${target}/tmp/osworld-gym-bundle"
}

for stage in ${stages}; do "build_${stage}"; done
rm -f "${target}/etc/resolv.conf"
echo "build_rootfs: ${target} ready"
