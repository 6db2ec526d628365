/**
 * Recycling a shell in place: the backend kills everything the lease started but bash itself, then
 * bash `exec`s a fresh bash in the same process (same pipes, same pid, same cgroup). That costs the
 * broker one write instead of a new process (a local spawn is ~5 ms of the event loop; a `docker
 * exec` ~60 ms of dockerd), and the fresh bash then gets the usual init script and framing.
 */

import { ansiCQuote } from '../core/session/framing';

/** Signals a lease may have ignored with `trap '' SIG`: an ignored signal stays ignored across exec. */
const TRAPPABLE = 'HUP INT QUIT PIPE ALRM TERM USR1 USR2 CHLD TSTP TTIN TTOU XFSZ VTALRM PROF WINCH URG';

/**
 * The line the old bash runs to become a fresh `bash` (an absolute path: the lease may have emptied
 * PATH) in `cwd`. Before the exec: stdout/stderr go back to the shell's own pipes (kept on 98/99 by
 * the framing; a lease that ran `exec >&-`, `exec 2>&-` or `exec >file` would otherwise hand its
 * redirection to the fresh bash), every other file the lease opened is closed, and ignored signals are
 * reset (else `trap '' INT` would survive into the next lease and ^C could no longer end its commands).
 * No `2>/dev/null` on the fd loop: bash would save stderr in an fd >= 10 that the loop then closes.
 *
 * `exec -c` empties the environment; the fresh bash gets it back from `restoreScript`, run as its rc
 * file (a here-string on fd 3: no file, no fork), which then announces the shell with FRESH_ANSWER.
 * So the broker writes one line and waits: no probing (interactive bash reads ahead, so anything sent
 * after the exec line could be swallowed by the old process; probes were writes that woke bash, and
 * under load they were the broker's main cost). The rc file is read whole, in blocks, where stdin is
 * read a byte per read(2): what the fresh bash needs before its first command (the framing's
 * definitions) belongs in `restoreScript`, not in a write after the announcement.
 *
 * `cwd` (bash-quoted) is entered by the old bash, so the fresh one never starts in a directory that
 * may be gone (the last lease's, removed meanwhile), and again by the rc file after `restoreScript`
 * (whose exports may carry a stale PWD). If that fails (the directory vanished) the announcement says
 * `nocwd`: the caller must not hand that shell out as if it were in `cwd` (freshInCwd).
 *
 * `launcher` (words ending in a space, or empty) runs before the fresh bash in its process: an
 * isolated session's way into its rewound view (docker/isolation/sessionRewind.c).
 */
export function recycleExecLine(cwd: string, bash: string, restoreScript: string, launcher = ''): string {
  const rc =
    `builtin exec 3<&-\n${restoreScript}\n` +
    `builtin cd -- ${cwd} 2>/dev/null&&__bkcd=yes||__bkcd=nocwd;builtin printf '\\n__bkfresh=%s\\n' $__bkcd;builtin unset __bkcd\n`;
  return (
    `builtin trap - ${TRAPPABLE};builtin cd -- ${cwd} 2>/dev/null||builtin cd /;` +
    '[[ -e /proc/$$/fd/98 ]]&&exec 1>&98;[[ -e /proc/$$/fd/99 ]]&&exec 2>&99;' +
    'for __f in /proc/$$/fd/*;do __f=${__f##*/};((__f>2&&__f<255))&&exec {__f}>&-;done;' +
    `exec -c ${launcher}${bash} --rcfile /dev/fd/3 --noprofile --noediting -i 3<<<${ansiCQuote(rc)};` +
    // Reached only when the exec failed (an interactive bash goes on with the line): say so at once.
    "builtin printf '\\n__bkfresh=%s\\n' noexec\n"
  );
}

/**
 * What the fresh bash prints once its rc file ran: `yes` when it started in the wanted cwd; `noexec`
 * is the old bash's, when the exec failed (bash gone from the container, say).
 */
export const FRESH_ANSWER = /\n__bkfresh=(yes|nocwd|noexec)\n/;

/** The announcement matched by FRESH_ANSWER says the fresh bash is in the cwd it was asked for. */
export function freshInCwd(answer: RegExpExecArray | null): boolean {
  return answer?.[1] === 'yes';
}

/**
 * How long a recycled bash may take to announce itself: as long as a new shell may take to answer
 * (DEFAULT_TIMINGS.readyTimeoutMs). A fresh bash is the costliest step of an episode, and with a few
 * hundred of them runnable on two cores it waits seconds for a CPU (the episode floor's own fresh
 * bash took 4.7 s at p99 with 256 at once). A shorter wait gave up on recycles that were only slow,
 * and each give-up closed the shell and opened a new one through the container's spawner, more work
 * again on the same cores: at 256 episodes at once more shells were reopened than recycled and the
 * throughput collapsed. A bash that cannot exec says so at once (`noexec`); one that never reads the
 * line (a lease that left it ignoring ^C in a builtin loop) holds its slot this long, then is closed.
 */
export const RECYCLE_TIMEOUT_MS = 20_000;

interface Pending {
  pattern: RegExp;
  buffer: string;
  resolve: (m: RegExpExecArray | null) => void;
}

/**
 * Waits for a pattern on a shell's stdout while the shell serves no command (the docker
 * handshake, a recycled bash's announcement). While one is pending, the shell routes its output here instead of to its session.
 */
export class StdoutExpectation {
  private pending: Pending | null = null;

  get active(): boolean {
    return this.pending !== null;
  }

  /** Stdout bytes while active; other streams are ignored (stderr carries prompts and job notices). */
  feed(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const p = this.pending;
    if (!p || stream !== 'stdout') return;
    p.buffer += chunk.toString('latin1');
    const m = p.pattern.exec(p.buffer);
    if (m) p.resolve(m);
  }

  /** Calls `send` once, then resolves with the match on stdout, or null on timeout or cancel. */
  wait(pattern: RegExp, send: () => void, timeoutMs: number): Promise<RegExpExecArray | null> {
    this.cancel();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.cancel(), timeoutMs);
      this.pending = {
        pattern,
        buffer: '',
        resolve: (m) => {
          clearTimeout(timer);
          this.pending = null;
          resolve(m);
        },
      };
      send();
    });
  }

  /** Ends the pending wait with null (the shell ended, or a timeout). */
  cancel(): void {
    this.pending?.resolve(null);
  }
}
