#!/usr/bin/env bash
# Starts a Docker engine for the `docker` provider when none answers, and waits for it.
# Idempotent: with an engine already answering on DOCKER_HOST (or the default socket) it only
# checks. Starting one needs root and Debian's docker.io (scripts/install_system_deps.sh).
#
# The engine runs without a bridge network and without iptables rules
# (`dockerd --bridge=none --iptables=false`), which works on hosts where neither is available;
# osworld-gym's containers use host networking on loopback. Log: /var/log/osworld-gym-dockerd.log.
#   bash scripts/start_docker.sh            # start (or check) and wait up to 60 s
#   DOCKERD_TIMEOUT=120 bash scripts/start_docker.sh
set -euo pipefail

timeout="${DOCKERD_TIMEOUT:-60}"
log=/var/log/osworld-gym-dockerd.log
pidfile=/var/run/osworld-gym-dockerd.pid
data_root="${DOCKERD_DATA_ROOT:-/var/lib/docker}"

engine_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if ! command -v docker >/dev/null; then
  echo "start_docker: no docker CLI; install docker.io (scripts/install_system_deps.sh)" >&2
  exit 1
fi
if engine_answers; then
  echo "start_docker: engine $(docker version --format '{{.Server.Version}}') already running"
  exit 0
fi
if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST#unix://}" = "${DOCKER_HOST}" ]; then
  echo "start_docker: the engine at DOCKER_HOST=${DOCKER_HOST} does not answer" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "start_docker: no engine is running and starting one needs root" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null; then
  echo "start_docker: dockerd is missing; install docker.io (scripts/install_system_deps.sh)" >&2
  exit 1
fi

# A pidfile left by a killed engine would stop the new one from starting.
if [ -f "${pidfile}" ] && ! kill -0 "$(cat "${pidfile}")" 2>/dev/null; then
  rm -f "${pidfile}"
fi
if [ ! -f "${pidfile}" ]; then
  mkdir -p "${data_root}"
  setsid nohup dockerd --bridge=none --iptables=false --ip6tables=false \
    --data-root "${data_root}" --pidfile "${pidfile}" >>"${log}" 2>&1 </dev/null &
fi

deadline=$((SECONDS + timeout))
until engine_answers; do
  if ((SECONDS >= deadline)); then
    echo "start_docker: engine not answering after ${timeout} s; last log lines:" >&2
    tail -n 20 "${log}" >&2 || true
    exit 1
  fi
  sleep 0.2
done
echo "start_docker: engine $(docker version --format '{{.Server.Version}}') started (log ${log})"
