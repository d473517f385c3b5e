# The desktop session above the X server, shared by the entrypoint (osworld-gym-desktop) and the
# in-place reset (osworld-gym-reset-session): sourced by bash, run as user `user`, with DISPLAY,
# XDG_RUNTIME_DIR, `deadline` (in bash SECONDS) and `boot_timeout` set by the caller, and
# OSWORLD_SESSION: "minimal" (openbox) or "gnome" (GNOME Shell laid out as OSWorld's Ubuntu VM,
# whose environment, GNOME_ENV, the caller exported; see osworld_gym.providers.desktop.gnome_image), and
# for GNOME OSWORLD_SYSTEM_BUS: "own" (a container: the session starts its system bus) or
# "systemd" (a booted VM's).

GNOME_FILES=/usr/share/osworld-gym/gnome
GNOME_ENV="${GNOME_FILES}/session.env"

wait_for() {  # wait_for DESCRIPTION COMMAND...: poll until COMMAND succeeds or the boot deadline
  local what="$1"
  shift
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "osworld-gym session: ${what} not ready after ${boot_timeout} s" >&2
      exit 1
    fi
    sleep 0.05
  done
}

start_session() {  # the buses, then the window manager (and GNOME's settings daemons)
  if [ "${OSWORLD_SESSION:-minimal}" = gnome ]; then
    start_gnome_session
  else
    start_session_bus
    start_window_manager
  fi
}

start_gnome_session() {
  # One Python helper (each start with osworld_gym's imports costs about 0.4 s): it makes HOME's
  # GNOME files on the restored HOME, a new episode's time settings and the X server's fast mode
  # (which GNOME Shell's monitors.xml names), says "prepared", then waits until the shell started
  # below has laid the desktop out.
  local from_helper helper said=""
  exec {from_helper}< <(exec python -m osworld_gym.providers.desktop.gnome_image start \
    --timeout $((deadline - SECONDS)))
  helper=$!
  read -r -t $((deadline > SECONDS ? deadline - SECONDS : 1)) said <&"${from_helper}" || true
  exec {from_helper}<&-
  if [ "${said}" != prepared ]; then
    kill "${helper}" 2>/dev/null || true
    wait "${helper}" || true
    echo "osworld-gym session: the GNOME session could not be prepared" >&2
    exit 1
  fi
  # A system bus of the desktop's own in a container (GNOME Shell and timedatectl want one;
  # no systemd there); a booted VM's is its systemd's (OSWORLD_SYSTEM_BUS=systemd).
  if [ "${OSWORLD_SYSTEM_BUS:-own}" = own ]; then
    rm -f /run/dbus/system_bus_socket
    (dbus-daemon --config-file="${GNOME_FILES}/system-bus.conf" --nofork --nopidfile &)
    wait_for "system bus" test -S /run/dbus/system_bus_socket
  fi
  start_session_bus --config-file="${GNOME_FILES}/session-bus.conf"
  # GNOME's XSETTINGS daemon (the apps' theme and fonts) before the shell: the desktop icons'
  # program, which the shell starts, draws with the theme it announces from its first frame.
  (/usr/libexec/gsd-xsettings &)
  local shell_env=()
  mapfile -t shell_env <"${GNOME_FILES}/shell.env"
  # The helper saw the last shell's selection released: no --replace, which would take a
  # window manager's place silently. It waits for the layout, then for the desktop icons.
  (env "${shell_env[@]}" gnome-shell --x11 --mode=osworld &)
  wait "${helper}" || exit 1
  # The media keys (ctrl+alt+t among them) after the shell, through which they grab.
  (/usr/libexec/gsd-media-keys &)
}

start_session_bus() {  # a session bus with the AT-SPI launcher; $1: its configuration
  # Each daemon is started from a subshell that exits at once, so init adopts it and reaps it
  # when a session reset kills it (the guest, which the entrypoint becomes, would not).
  # A fixed bus address: a guest that outlives a session reset keeps a valid one.
  local config="${1:---session}"
  rm -f "${XDG_RUNTIME_DIR}/bus"
  (dbus-daemon "${config}" --nofork --nopidfile --address="unix:path=${XDG_RUNTIME_DIR}/bus" &)
  export DBUS_SESSION_BUS_ADDRESS="unix:path=${XDG_RUNTIME_DIR}/bus"
  wait_for "session bus" test -S "${XDG_RUNTIME_DIR}/bus"
  if [ -x /usr/libexec/at-spi-bus-launcher ]; then
    # Before any app: Qt apps only export their tree if the bus already runs.
    (/usr/libexec/at-spi-bus-launcher --launch-immediately &)
  fi
}

start_window_manager() {
  (openbox --sm-disable &)
  wait_for "window manager" wmctrl -m
}
