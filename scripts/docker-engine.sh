#!/usr/bin/env bash
# Make a Docker engine answer on this machine (Debian bookworm VM, no systemd as PID 1, also CI).
#   scripts/docker-engine.sh [start]   idempotent: does nothing when `docker info` already answers
#   scripts/docker-engine.sh stop      stops only a dockerd that this script started (pidfile)
#   scripts/docker-engine.sh status
# Env: BROKER_DOCKERD_FLAGS  extra dockerd flags (default none: dockerd's own choices work here:
#      overlay2, cgroupfs driver, bridge docker0 + iptables-nft NAT).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
LOG=${BROKER_DOCKERD_LOG:-/var/log/bash-broker-dockerd.log}
PIDFILE=${BROKER_DOCKERD_PIDFILE:-/run/bash-broker-dockerd.pid}
say() { echo "[docker-engine] $*" >&2; }
up() { timeout 10 docker info >/dev/null 2>&1; }
own_pid() { # the pid in our pidfile, only if it is still a dockerd
  local p; p=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ -n $p && "$(cat /proc/"$p"/comm 2>/dev/null)" == dockerd ]] && echo "$p"
}

stop() {
  local p; p=$(own_pid) || { say "no dockerd started by this script is running"; rm -f "$PIDFILE"; return 0; }
  say "stopping dockerd pid $p"; kill -TERM "$p"
  for _ in $(seq 1 60); do [[ -d /proc/$p ]] || break; sleep 0.5; done
  [[ -d /proc/$p ]] && { say "dockerd $p did not stop in 30 s"; return 1; }
  rm -f "$PIDFILE"; say "stopped"
}

# Launch dockerd detached (own session, so a job runner killing our process group does not take it
# down), then wait up to ~60 s for it to answer. Returns 1 if it died or never answered.
launch() {
  say "starting: dockerd $*  (log: $LOG)"
  echo "=== $(date -u +%FT%TZ) dockerd $*" >>"$LOG"
  setsid dockerd "$@" </dev/null >>"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  wait_up $! || { kill "$(cat "$PIDFILE")" 2>/dev/null || true; return 1; }
}
wait_up() { # $1 = dockerd pid
  for i in $(seq 1 120); do
    up && { say "dockerd pid $1 answers after ~$((i / 2)) s"; return 0; }
    [[ -d /proc/$1 ]] || { say "dockerd exited early"; return 1; }
    sleep 0.5
  done
  say "dockerd did not answer in 60 s"; return 1
}

start() {
  if up; then say "docker engine already answers: nothing to do"; return 0; fi
  [[ $(id -u) == 0 ]] || { say "must run as root to install/start dockerd"; exit 1; }
  local p; if p=$(own_pid); then say "our dockerd $p runs but does not answer yet: waiting"; wait_up "$p" && return 0; fi
  if ! command -v dockerd >/dev/null || ! command -v containerd >/dev/null; then
    # docker.io (20.10) pulls in containerd, runc, tini (= docker-init for --init) and iptables.
    # Recommends are skipped: apparmor/needrestart are useless here and slow the install.
    local t0=$SECONDS
    say "installing docker.io from Debian"
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends docker.io >/dev/null
    say "installed docker.io in $((SECONDS - t0)) s"
  fi
  mkdir -p "$(dirname "$LOG")"
  local flags=(); read -r -a flags <<<"${BROKER_DOCKERD_FLAGS:-}"
  launch "${flags[@]}" && return 0
  # Fallback for VMs/containers without working netfilter or bridge: no docker0, no NAT. Containers
  # must then use NetworkMode none or host (and `docker build --network host`).
  say "retrying without bridge/iptables; last log lines:"; tail -n 15 "$LOG" >&2
  launch "${flags[@]}" --iptables=false --ip-masq=false --bridge=none && return 0
  say "FAILED to start dockerd; log tail:"; tail -n 40 "$LOG" >&2; exit 1
}

case "${1:-start}" in
  start) start; docker info --format 'engine {{.ServerVersion}}: storage={{.Driver}} cgroup={{.CgroupDriver}} v{{.CgroupVersion}} init={{.InitBinary}}' >&2 ;;
  stop) stop ;;
  status) if up; then say "up"; docker info --format '{{.ServerVersion}} {{.Driver}}' ; else say "down"; exit 1; fi ;;
  *) echo "usage: $0 [start|stop|status]" >&2; exit 2 ;;
esac
