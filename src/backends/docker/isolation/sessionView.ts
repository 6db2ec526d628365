/**
 * A command run by a `docker exec` inside an isolated session's view rather than the container's:
 * nsenter into the namespaces of the session's shell (its pid in the container), then setpriv
 * without CAP_SYS_ADMIN, as the session's own shells run (isolationScript.ts). What runs there can
 * do no more than the session's own commands: resolve and use paths in the session's own view, where
 * a symlink the session swaps in leads only to what the session may write itself, never to its
 * container's files (which every other session sees under its own). The init of the session's
 * namespace holds CAP_SYS_ADMIN, so without it `/proc/1/root` of that view stays closed to these too.
 *
 * setpriv by its path: BusyBox's nsenter runs its own setpriv applet for a bare name, and that one
 * cannot drop a capability.
 */

/** The namespaces to enter: `-p -m` for file operations (the view's /proc is the session's), `-p -i -m` for a shell of the session. */
export function inSessionView(pid: number, argv: readonly string[], namespaces: readonly string[]): string[] {
  const join = `exec nsenter -t "$1" ${namespaces.join(' ')} -- "$(builtin type -P setpriv)" --bounding-set -sys_admin -- "\${@:2}"`;
  return ['bash', '-c', join, 'bkr-view', String(pid), ...argv];
}
