# The desktop session above the X server, shared by the entrypoint (osworld-gym-desktop) and the
# in-place reset (osworld-gym-reset-session): sourced by bash, run as user `user`, with DISPLAY,
# XDG_RUNTIME_DIR, `deadline` (in bash SECONDS) and `boot_timeout` set by the caller.

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

start_session() {  # a session bus with the AT-SPI launcher, then openbox
  start_session_bus
  start_window_manager
}

start_session_bus() {  # a session bus with the AT-SPI launcher
  # Each daemon is started from a subshell that exits at once, so init adopts it and reaps it
  # when a session reset kills it (the guest, which the entrypoint becomes, would not).
  # A fixed bus address: a guest that outlives a session reset keeps a valid one.
  rm -f "${XDG_RUNTIME_DIR}/bus"
  (dbus-daemon --session --nofork --nopidfile --address="unix:path=${XDG_RUNTIME_DIR}/bus" &)
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
