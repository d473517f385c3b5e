#!/bin/sh
# Installs osworld-gym into a guest root filesystem whose base stage is done; runs INSIDE that
# root (chroot for build_rootfs.sh, a RUN step of the Dockerfile), as root, without network.
#   sh install_project.sh BUNDLE_DIR
# BUNDLE_DIR holds the osworld-gym wheel (osworld_gym-*.whl) and rootfs/, the files copied
# over the root filesystem (the session script, the systemd unit).
set -eu
bundle="$1"

/opt/osworld-gym/bin/pip install -q --no-cache-dir --disable-pip-version-check --no-deps \
  --force-reinstall "${bundle}"/osworld_gym-*.whl
cp -a "${bundle}/rootfs/." /
# Enabled for booted images (the qcow2); a container runs the session script directly.
mkdir -p /etc/systemd/system/multi-user.target.wants
ln -sf /etc/systemd/system/osworld-gym-guest.service \
  /etc/systemd/system/multi-user.target.wants/osworld-gym-guest.service
# OSWorld's commands on Debian's apps (google-chrome on Chromium, socat and vlc on the
# desktop's own service ports), ahead of /usr/bin on PATH; sudo is the real one here.
/opt/osworld-gym/bin/python -c 'from pathlib import Path
from osworld_gym.providers.desktop.bin import install_wrappers
install_wrappers(Path("/usr/local/bin"), exclude=("sudo",), chrome="link")'
if [ -x /usr/bin/lxterminal ]; then
  update-alternatives --quiet --set x-terminal-emulator /usr/bin/lxterminal || true
fi
# The default HOME of a fresh desktop: the same skeleton as the local provider's.
/opt/osworld-gym/bin/python -c 'from pathlib import Path
from osworld_gym.providers.desktop.home_skeleton import write_default_home
write_default_home(Path("/home/user"))'
# Debian's .bashrc retitles terminals "user@host: dir"; the bundled tasks find a fresh
# terminal by its own title ("LXTerminal"), as on the local provider's desktops.
sed -i '/\\e\]0;/d' /home/user/.bashrc
chown -R user:user /home/user
# The GNOME session's files (OSWORLD_SESSION=gnome), root's: compiled schemas with Ubuntu's
# defaults, the session mode, the buses' configurations, the user's settings of a new HOME.
if [ -x /usr/bin/gnome-shell ]; then
  /opt/osworld-gym/bin/python -m osworld_gym.providers.desktop.gnome_image install \
    --home /home/user --runtime-dir "/run/user/$(id -u user)"
fi
# The pristine HOME that reset_mode="session" restores (root-owned: an episode cannot alter it).
/usr/local/bin/osworld-gym-reset-session --snapshot-home
# The bundled suites (their reference files) and the scripted solutions are answers, and the
# guest needs neither: an image keeps no copy, since OSWorld's user reads anything in it through
# sudo. (Evaluation runs on the host, with the host's copy.)
/opt/osworld-gym/bin/python -c 'import shutil
from osworld_gym.providers.local.sandbox import answer_folders
for folder in answer_folders():
    shutil.rmtree(folder)
    print("install_project: removed the answers in", folder)'
mkdir -p /usr/share/osworld-gym
/opt/osworld-gym/bin/pip freeze --all --disable-pip-version-check >/usr/share/osworld-gym/pip-freeze.txt
/opt/osworld-gym/bin/python -c 'import osworld_gym; print(osworld_gym.__version__)' \
  >/usr/share/osworld-gym/version
find /opt/osworld-gym -name __pycache__ -prune -newer "${bundle}/rootfs" -exec rm -rf {} + 2>/dev/null || true
echo "install_project: osworld-gym $(cat /usr/share/osworld-gym/version) installed"
