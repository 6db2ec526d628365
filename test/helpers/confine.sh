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
    mount -t tmpfs -o "size=${CONFINE_TMP_MIB}m,mode=1777" confined-tmp /tmp
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
