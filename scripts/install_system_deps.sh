#!/usr/bin/env bash
# Installs the Debian packages a `local` desktop needs: an X server, a window manager,
# X utilities, fonts, the apps of the bundled suite, ffmpeg for recordings and the
# AT-SPI stack for /accessibility (see shared a11y notes: no dbus-x11, which spawns
# stray session buses). Idempotent: a second run only checks.
set -euo pipefail

PACKAGES=(
  xvfb openbox xdotool x11-utils x11-xserver-utils wmctrl xterm xdg-utils feh
  fonts-dejavu-core fonts-liberation2 fonts-noto-cjk
  mousepad lxterminal
  libreoffice-calc libreoffice-writer libreoffice-impress libreoffice-gtk3
  ffmpeg
  dbus-daemon dbus-bin at-spi2-core python3-gi gir1.2-atspi-2.0 python3-pyatspi
  procps
  # Each local desktop's sandbox (mount, PID and user namespaces), and the outbound internet of
  # its private network (a user-mode network stack behind a packet filter).
  bubblewrap slirp4netns iptables
  # OSWorld's applications, from Debian (Chromium runs as `google-chrome` through the desktop's
  # wrapper; VS Code is not in Debian) and GNOME's terminal and file manager, which tasks open.
  # Totem ("Videos") is the default video player, as on Ubuntu (multi_apps/937087b6 asks the
  # agent to make VLC the default); Evince ("Document Viewer") opens PDFs, as on Ubuntu (five
  # task files open one; without it GIMP would import it).
  chromium gimp vlc totem evince thunderbird gnome-terminal nautilus
  # vim and its vim.desktop: os/ec4e3f68 pins it to the dock and asks the agent to unpin it.
  # gedit opens text files in the GNOME session, as on Ubuntu (multi_apps/d1acdb87).
  vim gedit
  # Command-line tools OSWorld's task files call in their setup steps and checks.
  socat jq bc xsel xclip tree git zip unzip curl wget sysstat expect file
  # openssl: the recreation.gov getter's tests serve HTTPS with a certificate made for them.
  openssl
  pulseaudio pulseaudio-utils desktop-file-utils libglib2.0-bin python3-tk
  # gsettings that persist (dconf over the session bus) and GNOME's keys, which tasks set and read;
  # `dconf` (as on Ubuntu) also restores a kept GNOME Shell's settings at a reset.
  dconf-gsettings-backend dconf-service dconf-cli gsettings-desktop-schemas
  # session="gnome": GNOME Shell (X11 mode) with the Ubuntu-style dock, desktop icons and Yaru, as
  # OSWorld's VM.
  gnome-shell gnome-shell-extension-dashtodock gnome-shell-extension-desktop-icons-ng
  yaru-theme-gtk yaru-theme-icon yaru-theme-gnome-shell
  # gjs runs the shell's notification service (apps' notifications reach the shell through it).
  gjs
  # The docker provider: an engine (started by scripts/start_docker.sh), debootstrap for the
  # guest image (vm_images/), an SSH server for the tests of ssh:// engines.
  docker.io debootstrap openssh-server
  # The qemu provider (software emulation where KVM is missing) and its image recipe
  # (vm_images/qemu/: mkfs.ext4 -d, qemu-img).
  qemu-system-x86 qemu-utils e2fsprogs
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "system packages: all ${#PACKAGES[@]} present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "system packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
