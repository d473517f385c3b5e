#!/usr/bin/env bash
# Builds the bootable qcow2 of the osworld-gym guest desktop for the `qemu` provider, from the
# root filesystem of vm_images/build_rootfs.sh (Debian packages only), plus Debian's kernel,
# systemd and udev:
#
#   sudo bash vm_images/qemu/build_qcow2.sh [--rootfs DIR] [OUT_DIR]
#
# OUT_DIR (default /var/cache/osworld-gym/qemu) receives:
#   osworld-gym-debian-<key>.qcow2   the disk (ext4 on /dev/vda, no partition table; read-only)
#   vmlinuz, initrd.img               Debian's kernel, a small initrd (mkinitramfs, MODULES=list)
#   image.json                        what QemuProviderConfig.from_built_image() reads
#   contents/                         dpkg-list.txt, pip-freeze.txt, version of the image
#
# Without --rootfs, the root filesystem is built (or reused, cached by build_rootfs.sh's own
# hash) in OUT_DIR/rootfs with --extra-packages "linux-image-amd64 systemd-sysv udev"; with
# --rootfs, DIR must already hold those. The disk is rebuilt only when its inputs change: the
# root filesystem's base hash and package lists, the contents of its /etc, /usr/local,
# /opt/osworld-gym and /home/user, the kernel, this script and vm_images/qemu/rootfs (the VM's
# extra files: fstab, network, fw_cfg settings).
#
# The VM: systemd boots, systemd-networkd gives it 10.0.2.15 (QEMU user-mode network),
# osworld-gym-fwcfg.service copies the host's settings (token, screen size) from fw_cfg, and
# osworld-gym-guest.service starts Xvfb, openbox and the guest server on port 5000 as `user`.
# Needs root, e2fsprogs (mkfs.ext4 -d) and qemu-utils.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
images="$(dirname "${here}")"
boot_packages="linux-image-amd64 systemd-sysv udev"
append="root=/dev/vda rw console=ttyS0 loglevel=4"
rootfs=""
out=""

while [ $# -gt 0 ]; do
  case "$1" in
    --rootfs) rootfs="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) echo "build_qcow2.sh: unknown option $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
out="${out:-/var/cache/osworld-gym/qemu}"
if [ "$(id -u)" -ne 0 ]; then
  echo "build_qcow2.sh: needs root (the root filesystem's files belong to several users)" >&2
  exit 1
fi
for tool in mkfs.ext4 qemu-img; do
  command -v "${tool}" >/dev/null || {
    echo "build_qcow2.sh: ${tool} is missing (bash scripts/install_system_deps.sh)" >&2
    exit 1
  }
done
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
# One build at a time per output folder (parallel test sessions share the cache).
exec 9>"${out}/.build.lock"
flock 9

if [ -z "${rootfs}" ]; then
  rootfs="${out}/rootfs"
  # build_rootfs.sh reuses a base built from the same inputs and refuses any other non-empty
  # folder: start over when its inputs changed.
  wanted="$(bash "${images}/build_rootfs.sh" --extra-packages "${boot_packages}" --print-hash)"
  if [ -d "${rootfs}" ] && [ "$(cat "${rootfs}/.osworld-gym-base" 2>/dev/null)" != "${wanted}" ]; then
    echo "build_qcow2: the root filesystem's inputs changed; rebuilding it"
    rm -rf "${rootfs}"
  fi
  mkdir -p "${rootfs}"
  bash "${images}/build_rootfs.sh" --extra-packages "${boot_packages}" "${rootfs}"
fi
rootfs="$(cd "${rootfs}" && pwd)"
kernel="$(ls "${rootfs}"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)"
initrd="${rootfs}/boot/initrd.img-${kernel##*/vmlinuz-}"
if [ -z "${kernel}" ] || [ ! -f "${initrd}" ] || [ ! -x "${rootfs}/lib/systemd/systemd" ]; then
  echo "build_qcow2.sh: ${rootfs} lacks a kernel, initrd or systemd; build it with" >&2
  echo "  bash vm_images/build_rootfs.sh --extra-packages \"${boot_packages}\" DIR" >&2
  exit 1
fi

# The cache key: everything that ends up on the disk or shapes it.
key="$({
  cat "${rootfs}/.osworld-gym-base" "${rootfs}/usr/share/osworld-gym/version" \
    "${rootfs}/usr/share/osworld-gym/pip-freeze.txt" "${rootfs}/usr/share/osworld-gym/dpkg-list.txt"
  # what the project stage writes (osworld-gym, the default HOME) and the system's settings
  (cd "${rootfs}" && find home/user etc usr/local opt/osworld-gym -type f -not -name '*.pyc' \
    -print0 | sort -z | xargs -0 sha256sum)
  sha256sum "${kernel}" "${initrd}" | cut -c1-64
  cat "$0"
  (cd "${here}/rootfs" && find . -print0 | sort -z | xargs -0 ls -ld --time-style=+ \
    | awk '{print $1, $NF}' && find . -type f -print0 | sort -z | xargs -0 cat)
} | sha256sum | cut -c1-16)"
disk="osworld-gym-debian-${key}.qcow2"
if [ -f "${out}/${disk}" ] && grep -q "\"key\": \"${key}\"" "${out}/image.json" 2>/dev/null; then
  echo "build_qcow2: ${out}/${disk} is up to date"
  exit 0
fi

staging="${out}/.staging"
raw="${out}/.disk.raw"
cleanup() {
  if mountpoint -q "${staging}/proc" 2>/dev/null; then umount -l "${staging}/proc"; fi
  rm -rf "${staging}" "${raw}" "${out}/.initrd.img"
}
trap cleanup EXIT
cleanup
echo "build_qcow2: staging ${rootfs}"
# A copy, so the cached root filesystem stays as build_rootfs.sh left it.
cp -a "${rootfs}" "${staging}"
rm -rf "${staging}/.osworld-gym-base"
# A small initrd: only what mounting /dev/vda needs. Debian's (MODULES=most) is six times
# larger, and unpacking it and probing its modules costs tens of seconds under emulation.
version="${kernel##*/vmlinuz-}"
confdir="/tmp/osworld-gym-initramfs"
mkdir -p "${staging}${confdir}"
cp -a "${staging}/etc/initramfs-tools/." "${staging}${confdir}/"
printf 'MODULES=list\nCOMPRESS=gzip\nBUSYBOX=n\n' >"${staging}${confdir}/conf.d/osworld-gym-qemu.conf"
printf 'virtio_pci\nvirtio_blk\next4\n' >"${staging}${confdir}/modules"
mount -t proc proc "${staging}/proc"
chroot "${staging}" mkinitramfs -d "${confdir}" -o /tmp/osworld-gym-initrd.img "${version}"
umount "${staging}/proc"
mv "${staging}/tmp/osworld-gym-initrd.img" "${out}/.initrd.img"
rm -rf "${staging}${confdir}" "${staging}/boot/"*  # the kernel boots from outside the disk
cp -a "${here}/rootfs/." "${staging}/"
chmod 644 "${staging}/etc/resolv.conf"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"${staging}/etc/machine-id"
wants="${staging}/etc/systemd/system/multi-user.target.wants"
mkdir -p "${wants}" "${staging}/etc/systemd/system/sockets.target.wants"
ln -sf /etc/systemd/system/osworld-gym-fwcfg.service "${wants}/osworld-gym-fwcfg.service"
ln -sf /lib/systemd/system/systemd-networkd.service "${wants}/systemd-networkd.service"
ln -sf /lib/systemd/system/systemd-networkd.socket \
  "${staging}/etc/systemd/system/sockets.target.wants/systemd-networkd.socket"
# Nothing that runs at boot but does not serve the desktop (faster boots under emulation).
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
  fstrim.timer man-db.timer dpkg-db-backup.timer getty@tty1.service \
  systemd-networkd-wait-online.service systemd-logind.service \
  modprobe@drm.service modprobe@fuse.service modprobe@loop.service modprobe@dm_mod.service \
  modprobe@efi_pstore.service sys-kernel-debug.mount sys-kernel-tracing.mount \
  dev-hugepages.mount; do
  ln -sf /dev/null "${staging}/etc/systemd/system/${unit}"
done

size_mb=$(( $(du -sm "${staging}" | cut -f1) * 13 / 10 + 1024 ))
echo "build_qcow2: ext4 file system of ${size_mb} MiB"
truncate -s "${size_mb}M" "${raw}"
mkfs.ext4 -q -F -L osworld-root -d "${staging}" "${raw}"
rm -f "${out}"/osworld-gym-debian-*.qcow2
qemu-img convert -q -O qcow2 "${raw}" "${out}/${disk}"
chmod 444 "${out}/${disk}"
cp "${kernel}" "${out}/vmlinuz"
mv "${out}/.initrd.img" "${out}/initrd.img"
mkdir -p "${out}/contents"
cp "${rootfs}"/usr/share/osworld-gym/{dpkg-list.txt,pip-freeze.txt,version} "${out}/contents/"
cat >"${out}/image.json.tmp" <<EOF
{
  "key": "${key}",
  "image": "${disk}",
  "kernel": "vmlinuz",
  "initrd": "initrd.img",
  "append": "${append}",
  "guest_port": 5000,
  "version": "$(cat "${rootfs}/usr/share/osworld-gym/version")",
  "kernel_version": "${kernel##*/vmlinuz-}",
  "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
EOF
mv "${out}/image.json.tmp" "${out}/image.json"
echo "build_qcow2: ${out}/${disk} ready ($(du -h "${out}/${disk}" | cut -f1))"
