#!/usr/bin/env bash
# Build the images tests and compose need, with no container registry (only the Debian mirror apt
# is configured with):
#   bash-broker-test:latest     bash-static + busybox-static rootfs and util-linux's setpriv, `docker import`ed (seconds)
#   bash-broker-bashonly:latest bash-static + busybox-static alone: no util-linux, no coreutils (seconds)
#   debian:bookworm-slim        debootstrap --variant=minbase, `docker import`ed (~30 s)
#   bash-broker-sandbox:latest  containers/sandbox/Dockerfile FROM debian:bookworm-slim (~10 s)
#   bash-broker-task:latest     containers/task/Dockerfile: git, the host's Node 20, the task daemon and
#                               Pi from node_modules (needs `npm ci` done first; tests of task sandboxes)
# Only when named (tests and CI do not need them):
#   node:20-bookworm-slim       stand-in for the official image: debian:bookworm-slim + this host's Node 20
#   bash-broker:latest          containers/broker/Dockerfile FROM node:20-bookworm-slim (docker-compose.yml)
# Usage: scripts/docker-images.sh [--force] [test|bashonly|debian|sandbox|task|node|broker ...]   (default: test debian sandbox)
# Skips an image whose tag already exists unless --force; broker and task are always rebuilt (they hold the source
# tree; the layer cache makes an unchanged rebuild take about a second). Needs root; starts the engine.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# docker CLI >= 23 without the buildx plugin (none here) errors out if BuildKit is requested; the legacy builder
# uses local images directly, which is all we need offline.
export DOCKER_BUILDKIT=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FORCE=0; WANT=()
for a in "$@"; do case $a in --force) FORCE=1 ;; test|bashonly|debian|sandbox|task|node|broker) WANT+=("$a") ;;
  *) echo "usage: $0 [--force] [test|bashonly|debian|sandbox|task|node|broker ...]" >&2; exit 2 ;; esac; done
[[ ${#WANT[@]} -gt 0 ]] || WANT=(test debian sandbox)
TMP=$(mktemp -d /tmp/bash-broker-images.XXXXXX); trap 'rm -rf "$TMP"' EXIT
say() { echo "[docker-images] $*" >&2; }
have() { [[ $FORCE == 0 ]] && docker image inspect "$1" >/dev/null 2>&1; }
timed() { local t0=${EPOCHREALTIME/./}; "$@"; local ds=$(((${EPOCHREALTIME/./} - t0) / 100000)); say "$1 took $((ds / 10)).$((ds % 10)) s"; }
APT_UPDATED=0
apt_update_once() { [[ $APT_UPDATED == 1 ]] || { apt-get update -q >/dev/null; APT_UPDATED=1; }; }
PATHENV='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
# debootstrap fetches from the Debian mirror this machine's apt is configured with, and from nothing
# else (scripts/apt-mirror.sh: it fails, saying so, when apt has none). MIRROR_SOURCES is the apt
# source file that names it, copied into the image so its apt sees the same archive.
MIRROR= MIRROR_SOURCES=
find_mirror() {
  [[ -z $MIRROR ]] || return 0
  local found; found=$("$ROOT/scripts/apt-mirror.sh" bookworm) || { say "cannot build debian:bookworm-slim without a mirror"; return 1; }
  read -r MIRROR MIRROR_SOURCES <<<"$found"
}

# A root filesystem of bash-static and busybox-static alone, in $1: every busybox applet linked in
# /bin, bash as /bin/sh, /usr/bin and /sbin one directory with /bin (merged-usr style).
static_rootfs() {
  local r=$1; mkdir -p "$r" && cd "$TMP"
  # Sandbox user root: _apt cannot write into our mktemp dir. Refresh lists only if they are missing.
  local dl=(apt-get -q -o APT::Sandbox::User=root download bash-static busybox-static)
  mkdir -p "$TMP/debs" && (cd "$TMP/debs" && { "${dl[@]}" >/dev/null 2>&1 || { apt_update_once; "${dl[@]}" >/dev/null; }; })
  for d in "$TMP"/debs/*.deb; do dpkg-deb -x "$d" "$r"; done
  rm -rf "$r/usr/share"
  mkdir -p "$r"/{etc,tmp,root,proc,sys,dev,var/tmp} "$r/usr/local/bin" && chmod 1777 "$r/tmp" "$r/var/tmp"
  mv "$r/bin/bash-static" "$r/bin/bash"
  ln -s ../bin "$r/usr/bin"; ln -s ../bin "$r/usr/sbin"; ln -s bin "$r/sbin"
  local a; for a in $("$r/bin/busybox" --list); do [[ -e $r/bin/$a ]] || ln -s busybox "$r/bin/$a"; done
  ln -sf bash "$r/bin/sh"   # one shell with one behaviour; busybox ash stays reachable as `ash`
  printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
}

import_rootfs() { # $1 the root, $2 the tag
  tar -C "$1" --numeric-owner --owner=0 --group=0 -c . |
    docker import --change "ENV $PATHENV" --change 'CMD ["bash"]' - "$2" >/dev/null
}

build_test() {
  local r=$TMP/test; static_rootfs "$r"
  # util-linux's setpriv (and the libraries it links), for per-lease isolation: a session's shell
  # drops CAP_SYS_ADMIN from its bounding set with it (busybox's setpriv cannot).
  local u=$TMP/setpriv; mkdir -p "$u/debs" && (cd "$u/debs" && { apt-get -q -o APT::Sandbox::User=root download util-linux libcap-ng0 libc6 >/dev/null 2>&1 ||
    { apt_update_once; apt-get -q -o APT::Sandbox::User=root download util-linux libcap-ng0 libc6 >/dev/null; }; })
  for d in "$u"/debs/*.deb; do dpkg-deb -x "$d" "$u/root"; done
  mkdir -p "$r/lib/x86_64-linux-gnu" "$r/lib64"
  cp "$u/root/usr/bin/setpriv" "$r/bin/setpriv"
  cp -L "$u"/root/lib/x86_64-linux-gnu/{libc.so.6,libcap-ng.so.0,ld-linux-x86-64.so.2} "$r/lib/x86_64-linux-gnu/"
  cp -L "$u/root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$r/lib64/"
  # bookworm's busybox has no nohup (nor pgrep/pkill: use pidof/killall). An ignored SIGHUP
  # survives exec, which is all nohup does for us.
  printf '#!/bin/sh\ntrap "" HUP\nexec "$@"\n' >"$r/bin/nohup"; chmod 755 "$r/bin/nohup"
  import_rootfs "$r" bash-broker-test:latest
  docker run --rm bash-broker-test:latest bash -c 'echo hi; ls /proc/self >/dev/null; sleep 0; base64 </dev/null; setsid true; nohup true; setpriv --bounding-set -sys_admin true'
}

# The image a user brings with bash and nothing else of ours: bash and busybox, no util-linux (no
# script, setpriv or nsenter of util-linux's), no coreutils, no libc. test/engine/bashOnlyImage.test.ts
# runs the workspace, execd, file and isolation routes on it.
build_bashonly() {
  local r=$TMP/bashonly; static_rootfs "$r"
  import_rootfs "$r" bash-broker-bashonly:latest
  docker run --rm bash-broker-bashonly:latest bash -c 'echo hi >/dev/null; ! setpriv --bounding-set -sys_admin true 2>/dev/null; ! [ -e /lib ]'
}

debootstrap_quiet() { debootstrap "$@" >"$TMP/debootstrap.log" 2>&1 || { tail -n 30 "$TMP/debootstrap.log" >&2; return 1; }; }
build_debian() {
  command -v debootstrap >/dev/null || { apt_update_once; apt-get install -y -q --no-install-recommends debootstrap >/dev/null; }
  local r=$TMP/debian
  find_mirror
  say "debootstrap --variant=minbase bookworm from $MIRROR (apt's source $MIRROR_SOURCES)"
  timed debootstrap_quiet --variant=minbase bookworm "$r" "$MIRROR"
  # The host's apt source for that mirror (with its -updates and -security entries, where it has
  # them) replaces the one debootstrap wrote, so `apt-get install` in builds is as current as the host.
  case $MIRROR_SOURCES in
    *.sources) cp "$MIRROR_SOURCES" "$r/etc/apt/sources.list.d/" && rm -f "$r/etc/apt/sources.list" ;;
    *) # its `deb` lines for bookworm and bookworm-*, without the host's other (third-party) lines
      awk '{ l = $0; sub(/#.*/, ""); gsub(/\[[^]]*\]/, " ") } $1 == "deb" && $3 ~ /^bookworm(-|$)/ { print l }' \
        "$MIRROR_SOURCES" >"$r/etc/apt/sources.list" ;;
  esac
  # Slim like the official image: no daemons started by maintainer scripts, no docs/locales, apt
  # caches emptied after each install.
  printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"; chmod 755 "$r/usr/sbin/policy-rc.d"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
    >"$r/etc/dpkg/dpkg.cfg.d/docker-slim"
  printf '%s\n' 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' 'Acquire::Languages "none";' \
    >"$r/etc/apt/apt.conf.d/docker-clean"
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r"/usr/share/{man,info,locale}/* \
    "$r"/var/log/*.log "$r"/tmp/*
  find "$r/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  : >"$r/etc/resolv.conf"; : >"$r/etc/hostname"   # docker provides both at run time
  tar -C "$r" --numeric-owner -c . |
    docker import --change "ENV $PATHENV" --change 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
}

# Bridge networking (NAT to the mirrors) works with the default engine; when the engine runs with
# --bridge=none there is no bridge network and builds must share the host's network.
# (Builds use --force-rm: the legacy builder otherwise keeps the container of a failed step.)
build_net() { docker network inspect bridge >/dev/null 2>&1 || echo --network=host; }
NODE_TAG=node:20-bookworm-slim
STANDIN_LABEL=io.bash-broker.stand-in

# The official image's layout (/usr/local/bin/node, npm and corepack under /usr/local/lib/node_modules,
# user node 1000, CMD node) filled from this host's Node 20, so containers/broker/Dockerfile builds
# unchanged. Labelled as a stand-in: --force replaces only a stand-in, never a pulled image.
build_node() {
  local node npm ver ctx=$TMP/node
  node=$(readlink -f "$(command -v node)") && npm=$(readlink -f "$(command -v npm)") ||
    { say "node and npm must be on PATH"; return 1; }
  ver=$("$node" -v)
  [[ $ver == v20.* ]] || { say "host node is $ver: it cannot stand in for $NODE_TAG"; return 1; }
  npm=${npm%/bin/npm-cli.js}   # npm resolves to <prefix>/lib/node_modules/npm/bin/npm-cli.js
  [[ -f $npm/package.json ]] || { say "npm package not found at $npm"; return 1; }
  if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then build_one debian; fi
  local m=$ctx/rootfs/usr/local/lib/node_modules
  mkdir -p "$ctx/rootfs/usr/local/bin" "$m"
  cp "$node" "$ctx/rootfs/usr/local/bin/node"
  cp -a "$npm" "$m/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$ctx/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$ctx/rootfs/usr/local/bin/npx"
  local corepack=${npm%/npm}/corepack
  if [[ -f $corepack/dist/corepack.js ]]; then
    cp -a "$corepack" "$m/corepack"; ln -s ../lib/node_modules/corepack/dist/corepack.js "$ctx/rootfs/usr/local/bin/corepack"
  fi
  # A host that reaches the npm registry through a TLS-inspecting proxy trusts its CA via
  # NODE_EXTRA_CA_CERTS; without the same file `npm ci` in the image fails certificate checks.
  local ca=()
  if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -f $NODE_EXTRA_CA_CERTS ]]; then
    mkdir -p "$ctx/rootfs$(dirname "$NODE_EXTRA_CA_CERTS")"; cp "$NODE_EXTRA_CA_CERTS" "$ctx/rootfs$NODE_EXTRA_CA_CERTS"
    ca=("ENV NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
    say "including the host's NODE_EXTRA_CA_CERTS ($NODE_EXTRA_CA_CERTS)"
  fi
  { echo "FROM debian:bookworm-slim"
    echo "LABEL $STANDIN_LABEL=\"host node $ver\""
    echo "RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node"
    echo "COPY rootfs/ /"
    echo "ENV NODE_VERSION=${ver#v}"
    printf '%s\n' "${ca[@]}"
    echo 'CMD ["node"]'
  } >"$ctx/Dockerfile"
  docker build -q --force-rm -t "$NODE_TAG" "$ctx" >/dev/null
  docker run --rm "$NODE_TAG" sh -c 'node -v && npm -v >/dev/null && npx -v >/dev/null && node -e "fetch" '
}

build_sandbox() {
  if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then build_one debian; fi
  docker build -q --force-rm $(build_net) -t bash-broker-sandbox:latest "$ROOT/containers/sandbox" >/dev/null
  docker run --rm bash-broker-sandbox:latest bash -c 'python3 -c "print(1)" && git --version && ps >/dev/null'
}

# The daemon compiled, Pi's dependency closure copied from the repo's node_modules (real files, not
# the symlinks a shared install may use), the host's Node 20: a context of ~220 MB, no registry.
build_task() {
  if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then build_one debian; fi
  local node ctx=$TMP/task; node=$(readlink -f "$(command -v node)")
  [[ $("$node" -v) == v2[0-9].* ]] || { say "host node is $("$node" -v): Pi needs Node >= 20.6"; return 1; }
  [[ -d $ROOT/node_modules/@mariozechner/pi-coding-agent ]] || { say "node_modules has no Pi: run npm ci first"; return 1; }
  mkdir -p "$ctx/app/node_modules"
  cp "$node" "$ctx/node"
  (cd "$ROOT" && npx tsc -p taskd --outDir "$ctx/app/dist")
  local mods; mods=$(cd "$ROOT" && node scripts/task-image-modules.js) || return 1
  local real; real=$(readlink -f "$ROOT/node_modules")
  while read -r m; do
    mkdir -p "$ctx/app/$(dirname "$m")"; cp -a "$real/${m#node_modules/}" "$ctx/app/$(dirname "$m")/"
  done <<<"$mods"
  cp "$ROOT/containers/task/Dockerfile" "$ctx/Dockerfile"
  docker build -q --force-rm $(build_net) -t bash-broker-task:latest "$ctx" >/dev/null
  docker run --rm --network none bash-broker-task:latest sh -c 'git --version >/dev/null && node -e "require(\"/opt/taskd/dist/taskd/esm.js\").loadPi().then(() => console.log(\"pi loads\"))"'
}

build_broker() {
  if ! docker image inspect "$NODE_TAG" >/dev/null 2>&1; then build_one node; fi
  docker build -q --force-rm $(build_net) -f "$ROOT/containers/broker/Dockerfile" -t bash-broker:latest "$ROOT" >/dev/null
  # An invalid setting makes the entry point exit 2 after loading every module: proves dist/ and the
  # production dependencies are complete without needing an engine.
  local out rc=0; out=$(docker run --rm -e BROKER_BACKEND=check bash-broker:latest 2>&1) || rc=$?
  [[ $rc == 2 && $out == *"invalid configuration"* ]] || { say "bash-broker:latest smoke check failed (rc $rc): $out"; return 1; }
  # The session init it ships (it has no compiler): a static build beside its source, which runs.
  out=$(docker run --rm --entrypoint sh bash-broker:latest -c 'f=$(ls dist/backends/docker/isolation/.session-init-*) && "$f" 2>&1; echo "rc=$?"') || true
  [[ $out == *"usage: session-init"*"rc=2" ]] || { say "bash-broker:latest ships no working session init: $out"; return 1; }
}

build_one() { # $1 = test|bashonly|debian|sandbox|task|node|broker
  local tag; case $1 in test) tag=bash-broker-test:latest ;; bashonly) tag=bash-broker-bashonly:latest ;; debian) tag=debian:bookworm-slim ;;
    sandbox) tag=bash-broker-sandbox:latest ;; task) tag=bash-broker-task:latest ;; node) tag=$NODE_TAG ;; broker) tag=bash-broker:latest ;; esac
  if [[ $1 != broker && $1 != task ]] && have "$tag"; then say "$tag exists: skipped (--force rebuilds)"; return 0; fi
  if [[ $1 == node ]] && docker image inspect "$tag" >/dev/null 2>&1 &&
    [[ -z $(docker image inspect -f "{{index .Config.Labels \"$STANDIN_LABEL\"}}" "$tag") ]]; then
    say "$tag is not a local stand-in (pulled?): kept"; return 0
  fi
  local old; old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
  say "building $tag"; timed "build_$1"
  # A rebuild leaves the previous image dangling: drop it unless something still uses it.
  local new; new=$(docker image inspect -f '{{.Id}}' "$tag")
  [[ -z $old || $old == "$new" ]] || docker image rm "$old" >/dev/null 2>&1 || true
  say "$tag: $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.1f MB", $1/1e6}')"
}

"$ROOT/scripts/docker-engine.sh" start
for w in "${WANT[@]}"; do build_one "$w"; done
