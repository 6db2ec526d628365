#!/bin/bash
# Starts a command (the local-backend broker) confined, for the abuse suite (test/helpers/confinedBroker.ts).
#
#   host: confine.sh outer -> joins the prepared cgroups (pids, memory, cpu in v1 + a v2 group), then
#         unshare: new pid, mount and cgroup namespaces
#   ns:   confine.sh inner (pid 1) -> private tmpfs on /tmp, host cgroup trees hidden, a namespaced
#         cgroup2 at /sys/fs/cgroup/unified -> exec the broker, which so becomes pid 1
#
# As pid 1 the broker survives `kill -9 -1` (and any signal it has no handler for) sent from inside
# the namespace; everything else in it is killable. It also inherits every orphan: initReaper.ts
# reaps them. When it exits, the kernel kills whatever is left in the namespace.
#
# Environment: CONFINE_PROCS_FILES (space-separated cgroup.procs paths to join), CONFINE_TMP_MIB.
set -euo pipefail

case "${1:-}" in
  outer)
    shift
    for f in $CONFINE_PROCS_FILES; do echo $$ > "$f"; done
    exec unshare --pid --fork --mount --mount-proc --cgroup --propagation private -- "$0" inner "$@"
    ;;
  inner)
    shift
    # A checkout under /tmp (a CI clone, say) would vanish under the private /tmp with the broker's
    # code and node_modules: hold it by an fd, then bind it back at the same path. (--no-canonicalize:
    # else mount resolves /proc/self/fd/9 to its path string, which then names the empty tmpfs dir.)
    repo=$PWD
    case "$repo/" in /tmp/*) exec 9<"$repo" ;; *) repo= ;; esac
    mount -t tmpfs -o "size=${CONFINE_TMP_MIB}m,mode=1777" confined-tmp /tmp
    if [[ -n $repo ]]; then
      mkdir -p "$repo"
      mount --no-canonicalize --bind /proc/self/fd/9 "$repo"
      exec 9<&-
      cd "$repo"
    fi
    # Hide the host's cgroup hierarchies (their limits must not be writable from a session), and
    # give the broker a cgroup2 whose root is our own group: its sweep of "dead instances" and its
    # cgroup.kill can only ever see this subtree.
    mount -t tmpfs -o size=1m,mode=755 confined-cgroups /sys/fs/cgroup
    mkdir /sys/fs/cgroup/unified
    mount -t cgroup2 none /sys/fs/cgroup/unified
    exec "$@"
    ;;
  *)
    echo "usage: confine.sh outer <command...>" >&2
    exit 2
    ;;
esac
