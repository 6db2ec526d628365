/**
 * A command run by a `docker exec` inside an isolated session's view rather than the container's:
 * the session init (sessionEnter.c, `enter`) joins the namespaces of the session's shell (its pid
 * in the container) and runs the command there without CAP_SYS_ADMIN, as the session's own shells
 * run. What runs there can do no more than the session's own commands: resolve and use paths in the
 * session's own view, where a symlink the session swaps in leads only to what the session may write
 * itself, never to its container's files (which every other session sees under its own). The init
 * of the session's namespace holds CAP_SYS_ADMIN, so without it `/proc/1/root` of that view stays
 * closed to these too.
 *
 * The session init is the broker's own program, so this needs nothing of the image but bash. It is
 * its copy in the container's /dev where the spawner made one (the pipes' directory is mounted
 * noexec), else the one in the pipes' directory. A container that isolates through the setup script
 * (the broker had no session init to give it) has util-linux: nsenter, then setpriv by its path
 * (BusyBox's nsenter runs its own setpriv applet for a bare name, and that one cannot drop a
 * capability).
 */
import { FIFO_MOUNT } from '../shells/fifoSpawner';
import { SESSION_INIT_COPY, SESSION_INIT_NAME } from './isolationScript';

const ENTER = `for i in ${SESSION_INIT_COPY} ${FIFO_MOUNT}/${SESSION_INIT_NAME}; do [[ -f $i ]] && exec "$i" enter "$1" -- "\${@:2}"; done
exec nsenter -t "$1" -p -i -m -- "$(builtin type -P setpriv)" --bounding-set -sys_admin -- "\${@:2}"`;

/** `argv` in the IPC, pid and mount namespaces of the container process `pid` (the view's /proc is the session's). */
export function inSessionView(pid: number, argv: readonly string[]): string[] {
  return ['bash', '-c', ENTER, 'bkr-view', String(pid), ...argv];
}
