/**
 * Per-lease filesystem isolation, done by the container's own spawner (fifoSpawner.ts). The
 * container runs with CAP_SYS_ADMIN; every session shell it spawns starts in a mount, pid and IPC
 * namespace of its own whose root is an overlay of the container's root with a private upper layer
 * on a size-capped tmpfs, and runs with CAP_SYS_ADMIN dropped from its bounding set, so neither it
 * nor anything it starts can mount, unmount or leave that root. Release kills the shell; the
 * namespaces and the tmpfs go with their last process: nothing to remove, nothing left behind.
 *
 * Why this shape (the engine here is docker 20.10):
 * - The engine's default seccomp profile refuses pivot_root even with CAP_SYS_ADMIN, so the new root
 *   is moved over `/` and entered with chroot, as switch_root does: the container's root stays only
 *   under that mount, where no path from the session's root leads.
 * - A pid namespace per session, with a procfs of its own, hides every other process: a sibling's
 *   /proc/<pid>/root would otherwise lead into its view. The procfs gets the engine's masks (its
 *   sysrq-trigger, kcore, sys... read-only or hidden) as Docker gives its containers.
 * - The setup is one process, the session init (sessionInit.c, a static program the broker builds at
 *   its start and puts in the container's pipes directory): its system calls cost ~0.8 ms, where the
 *   same setup in this script (below; used where the init cannot run) starts about ten processes and
 *   costs ~7 ms more CPU per session. All mounts but three come from a table made once per container,
 *   which the init and the script's `mount -a` both read.
 * - bash must learn its pid in the container (kills, signals and the pids cgroup use it): inside, it
 *   is pid 2 or so; the container's procfs, still mounted before the chroot, says it as /proc/self.
 *
 * A spawn request names the lease's working directory (`-` for none), bound from the container into
 * the session so the file routes and the acquire's files reach it as they do without isolation, and
 * a pid to join (0: none): execd's extra shells of one sandbox share its session's namespaces.
 */
import type { IsolationConfig } from '../../../config/isolationConfig';

/** The template of each session's tmpfs, made once per container in the container's /dev (no session sees it). */
export const ISOLATION_TEMPLATE = '/dev/.bkr-iso';
/** The session init's name in the container's pipes directory (the broker puts it there). */
export const SESSION_INIT_NAME = 'session-init';
/** Where the spawner copies the session init when the pipes' directory is mounted noexec (no session sees the container's /dev). */
export const SESSION_INIT_COPY = '/dev/.bkr-session-init';
/** Where a session's tmpfs is mounted before its root is moved over `/` (an existing directory in every container). */
const STAGE = '/dev/shm';
const ROOT = `${STAGE}/r`;
const SHELL = 'bash --norc --noprofile --noediting -i';
/** Signals a session's namespace init ignores: the broker's ^C goes to bash's group, never to it. */
const INIT_IGNORES = 'INT QUIT TSTP TTIN TTOU';
/** Docker's own masks of /proc (hidden files, empty directories, read-only parts). */
const PROC_HIDDEN_FILES = 'kcore keys timer_list sched_debug latency_stats timer_stats';
const PROC_HIDDEN_DIRS = 'acpi scsi asound';
const PROC_READ_ONLY = 'bus fs irq sys sysrq-trigger';

/**
 * The setup run in the new namespaces as their pid 1 (`bash -c`, $1 the working directory's id or
 * `-`, $2 setpriv's path): mounts, the move over `/`, then bash in its own process group (set -m), chrooted and
 * without CAP_SYS_ADMIN. pid 1 stays as the namespace's init: when bash exits, it exits with bash's
 * status and the kernel kills what is left.
 */
function setupScript(diskBytes: number): string {
  return `T=${STAGE} R=${ROOT} id=$1
builtin set -m
builtin trap '' ${INIT_IGNORES}
mount -t tmpfs -o size=${diskBytes},mode=0755 bkr-session $T || builtin exit 101
cp -a ${ISOLATION_TEMPLATE}/. $T/ || builtin exit 102
if [[ $id != - ]]; then
  builtin printf '%s\\n' "$T/h $R/tmp/s none bind 0 0" "/tmp/s/$id $R/tmp/s/$id none bind 0 0" >>$T/fstab
  mkdir $T/h/$id || builtin exit 102
fi
mount -a -T $T/fstab || builtin exit 103
builtin cd $R && mount --move . / || builtin exit 104
( builtin trap - ${INIT_IGNORES}; builtin read -r p _ </proc/self/stat; builtin export BROKER_SHELL_PID=$p; exec chroot . "$2" --bounding-set -sys_admin -- ${SHELL} )`;
}

/**
 * An extra shell in the namespaces of the session whose bash is container pid $1 ($2 setpriv's
 * path), run in its pid and IPC namespaces (nsenter forked it there). Its mount namespace comes
 * last, from a second nsenter: before it the container's procfs still names this shell's pid in the
 * container; entering it puts the shell at the session's root (the kernel follows the mount moved
 * over `/`), so no chroot.
 */
const JOIN_SCRIPT = `builtin set -m
builtin trap '' ${INIT_IGNORES}
( builtin trap - ${INIT_IGNORES}; builtin read -r p _ </proc/self/stat; builtin export BROKER_SHELL_PID=$p; exec nsenter -t $1 -m -- "$2" --bounding-set -sys_admin -- ${SHELL} )`;

/**
 * The template's table: the overlay, /dev (a directory of the session's tmpfs, with the container's
 * device nodes copied), a devpts and an mqueue of its own, the masked procfs, /sys read-only as the
 * container has it, the engine's /etc files, and the shared paths. The engine's /etc/hosts,
 * /etc/hostname and /etc/resolv.conf are files it binds over the image's (an overlay shows the
 * image's beneath): each session gets a copy of its own on its tmpfs, so what one writes there is
 * its own, as anywhere else in its view (a bind of the container's file would share it).
 */
function templateScript(sharedPaths: readonly string[]): string {
  return `__bk_iso_template() {
  local t=${ISOLATION_TEMPLATE} T=${STAGE} R=${ROOT} f
  mkdir -p $t/u/tmp/s $t/w $t/r $t/h $t/e $t/d/pts $t/d/shm $t/d/mqueue ${sharedPaths.join(' ')} || return 1
  chmod 1777 $t/u/tmp $t/d/shm $t/d/mqueue || return 1
  cp -a /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/fd /dev/stdin /dev/stdout /dev/stderr /dev/ptmx $t/d/ || return 1
  {
    builtin printf '%s\\n' "bkr-root $R overlay lowerdir=/,upperdir=$T/u,workdir=$T/w 0 0" "$T/d $R/dev none bind 0 0" \\
      "devpts $R/dev/pts devpts newinstance,ptmxmode=0666,mode=620,gid=5 0 0" "mqueue $R/dev/mqueue mqueue defaults 0 0" \\
      "proc $R/proc proc nosuid,nodev,noexec 0 0"
    # Hidden behind the session's own /dev/null (mounted just above), never the container's: a chmod
    # of /proc/keys would change whichever node is bound there, for every session and later lease.
    for f in ${PROC_HIDDEN_FILES}; do [[ -e /proc/$f ]] && builtin printf '%s\\n' "$R/dev/null $R/proc/$f none bind 0 0"; done
    for f in ${PROC_HIDDEN_DIRS}; do [[ -d /proc/$f ]] && builtin printf '%s\\n' "tmpfs $R/proc/$f tmpfs ro 0 0"; done
    for f in ${PROC_READ_ONLY}; do [[ -e /proc/$f ]] && builtin printf '%s\\n' "/proc/$f $R/proc/$f none bind 0 0" "/proc/$f $R/proc/$f none remount,bind,ro 0 0"; done
    builtin printf '%s\\n' "/sys $R/sys none rbind 0 0"
    for f in /etc/hosts /etc/hostname /etc/resolv.conf; do [[ -f $f ]] && cp -a $f $t/e/ && builtin printf '%s\\n' "$T/e/\${f#/etc/} $R$f none bind 0 0"; done
    for f in ${sharedPaths.join(' ')}; do builtin printf '%s\\n' "$f $R$f none rbind 0 0"; done
  } >$t/fstab
}`;
}

/**
 * Bash for the spawner's start: defines `__bk_shell ID JOIN [CONTROL [NETWORK]]` (execs the session's shell,
 * isolated when this container can; CONTROL `8,9` names the session init's control pipes, which only
 * the init keeps: every other path closes them; `t` asks for a workspace's terminal in JOIN's view,
 * which the session init opens and relays itself) and sets `__bk_iso` to `iso` or to the reason it
 * cannot, which the spawner announces (`ready iso init` through the session init, `ready iso`
 * through the setup script, `ready noiso <reason>`). Sessions start through the session init at
 * `initPath` when it runs here, else through the setup script. The check is a whole session
 * started and ended once, so a container that announces `iso` can start them.
 */
export function isolationFunctions(config: IsolationConfig, initPath: string): string {
  if (!config.enabled) return `__bk_iso='noiso off'\n__bk_shell() { exec ${SHELL}; }`;
  const setup = setupScript(config.diskBytes);
  return `${templateScript(config.sharedPaths)}
__bk_iso_setup=${singleQuoted(setup)}
__bk_iso_join=${singleQuoted(JOIN_SCRIPT)}
__bk_shell() {
  [[ $__bk_iso == iso && -n $1 ]] || exec ${SHELL} 8<&- 9<&-
  if [[ -n $__bk_init ]]; then
    [[ $3 != t ]] || exec "$__bk_init" terminal "$2" -- bash --norc --noprofile -c 8<&- 9<&-
    [[ $2 == 0 ]] || exec "$__bk_init" join "$2" -- ${SHELL} 8<&- 9<&-
    [[ \${3:--} != - ]] || exec 8<&- 9<&-
    exec "$__bk_init" session ${ISOLATION_TEMPLATE} ${STAGE} ${config.diskBytes} "$1" "\${3:--}" "\${4:-shared}" -- ${SHELL}
  fi
  [[ $3 != t ]] || builtin exit 127
  exec 8<&- 9<&-
  [[ $2 == 0 ]] || exec nsenter -t "$2" -p -i -- bash -c "$__bk_iso_join" bkr-join "$2" "$__bk_setpriv"
  exec unshare -m -p -i -f --propagation private -- bash -c "$__bk_iso_setup" bkr-session "$1" "$__bk_setpriv"
}
__bk_iso_works() { ( __bk_iso=iso; builtin echo 'builtin exit 7' | __bk_shell - 0 '' "\${1:-shared}" ) >/dev/null 2>&1; [[ $? == 7 ]]; }
__bk_init=
__bk_net=
__bk_iso='noiso the container cannot mount (it needs CAP_SYS_ADMIN and a seccomp profile that allows mount and unshare)'
if __bk_iso_template 2>/dev/null; then
  if [[ -f ${initPath} ]]; then
    __bk_init=${initPath}
    # A pipes' directory mounted noexec: a copy in the container's own /dev.
    __bk_iso_works || { cp ${initPath} ${SESSION_INIT_COPY} 2>/dev/null && __bk_init=${SESSION_INIT_COPY}; }
    __bk_iso_works && __bk_iso=iso || __bk_init=
    # Networks of their own (sessionNet.c): the container holds CAP_NET_ADMIN for the session init.
    [[ -n $__bk_init ]] && __bk_iso_works none && __bk_net=net
  fi
  if [[ $__bk_iso != iso ]]; then
    if builtin type -P unshare nsenter mount chroot setpriv >/dev/null; then
      # By its path: busybox's chroot runs its own applet of a bare name, and its setpriv cannot drop.
      __bk_setpriv=$(builtin type -P setpriv)
      __bk_iso_works && __bk_iso=iso
    elif [[ ! -f ${initPath} ]]; then
      __bk_iso='noiso the broker could not build its session init, and the image lacks one of unshare, nsenter, mount, chroot, setpriv'
    fi
  fi
else
  builtin type -P mkdir chmod cp >/dev/null || __bk_iso='noiso the image lacks one of mkdir, chmod, cp'
fi`;
}

function singleQuoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
