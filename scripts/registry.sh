#!/usr/bin/env bash
# A private image registry on loopback: Debian's docker-registry (the reference registry, distribution
# v2), for the tests, the cluster rig and the bench. Everything it has lives under one directory: its
# config, its storage, its log, its pid file and (with auth) its htpasswd file.
#
#   scripts/registry.sh start|stop|status
#   scripts/registry.sh run      in the foreground (exec), for a supervisor that keeps its pid (the rig)
#
# Settings (environment, all optional):
#   REGISTRY_DIR       its directory (default /tmp/bash-broker-registry)
#   REGISTRY_PORT      its port on 127.0.0.1 (default 5000); images are named 127.0.0.1:<port>/<repo>:<tag>
#   REGISTRY_USER      with REGISTRY_PASSWORD: every request needs these credentials (HTTP basic auth,
#   REGISTRY_PASSWORD  checked against a bcrypt htpasswd file made here with `htpasswd -B`)
#
# It serves plain HTTP: a Docker engine (and skopeo) treat a registry on 127.0.0.1 or localhost as
# insecure-allowed without any insecure-registries setting. A start on a directory whose registry
# runs is refused; its storage is kept across stop and start (`rm -rf` the directory to empty it).
set -euo pipefail
DIR=${REGISTRY_DIR:-/tmp/bash-broker-registry}
PORT=${REGISTRY_PORT:-5000}
USER_NAME=${REGISTRY_USER:-}
PASSWORD=${REGISTRY_PASSWORD:-}
ADDR="127.0.0.1:$PORT"
say() { echo "[registry] $*" >&2; }

# The registry's pid while it runs: its pid file, checked against its command line (pids are reused).
running_pid() {
  local pid
  pid=$(cat "$DIR/registry.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "serve $DIR/config.yml" || return 1
  echo "$pid"
}

# The HTTP status of GET /v2/ (200 open, 401 with auth), or 000 when nothing answers.
v2_status() { curl -s -o /dev/null -m 5 -w '%{http_code}' "http://$ADDR/v2/" || true; }

write_config() {
  local auth=''
  if [[ -n $USER_NAME ]]; then
    [[ -n $PASSWORD ]] || { say "REGISTRY_USER needs REGISTRY_PASSWORD"; exit 2; }
    htpasswd -bBn "$USER_NAME" "$PASSWORD" >"$DIR/htpasswd"
    auth="auth:
  htpasswd:
    realm: bash-broker-registry
    path: $DIR/htpasswd"
  else
    rm -f "$DIR/htpasswd"
  fi
  # delete.enabled: a test or the bench can remove what it pushed. No health check of the storage:
  # it is a local directory, and the check's timer would only add log lines.
  cat >"$DIR/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: $ADDR
  # Signs upload state between requests: one of its own, or it logs a warning at each start.
  secret: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
$auth
EOF
}

# The registry reads any REGISTRY_* variable as a setting over its config, and this script's own
# settings are named so: it runs without them (`env "${UNSET[@]}" docker-registry ...`).
UNSET=()
for v in $(compgen -e); do [[ $v == REGISTRY_* ]] && UNSET+=(-u "$v"); done

prepare() {
  command -v docker-registry >/dev/null || { say "docker-registry is not installed (apt-get install docker-registry)"; exit 1; }
  if pid=$(running_pid); then say "already runs in $DIR (pid $pid) on $ADDR"; exit 1; fi
  mkdir -p "$DIR/data"
  chmod 700 "$DIR"
  write_config
}

run() {
  prepare
  echo $$ >"$DIR/registry.pid"
  exec env "${UNSET[@]}" docker-registry serve "$DIR/config.yml"
}

start() {
  prepare
  setsid env "${UNSET[@]}" docker-registry serve "$DIR/config.yml" >>"$DIR/registry.log" 2>&1 </dev/null &
  echo $! >"$DIR/registry.pid"
  for _ in $(seq 1 100); do
    running_pid >/dev/null || { say "exited at start:"; tail -n 20 "$DIR/registry.log" >&2; exit 1; }
    case $(v2_status) in 200 | 401) echo "$ADDR"; return 0 ;; esac
    sleep 0.1
  done
  say "did not answer on http://$ADDR/v2/ within 10 s"
  stop
  exit 1
}

stop() {
  local pid
  pid=$(running_pid) || { rm -f "$DIR/registry.pid"; return 0; }
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    [[ -d /proc/$pid ]] || break
    sleep 0.1
  done
  [[ -d /proc/$pid ]] && kill -KILL "$pid"
  rm -f "$DIR/registry.pid"
}

status() {
  if pid=$(running_pid); then
    echo "up $ADDR pid $pid dir $DIR (GET /v2/: $(v2_status))"
  else
    echo "down dir $DIR"
    return 3
  fi
}

case ${1:-} in
  start) start ;;
  run) run ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: scripts/registry.sh start|run|stop|status (REGISTRY_DIR, REGISTRY_PORT, REGISTRY_USER, REGISTRY_PASSWORD)" >&2; exit 2 ;;
esac
