/**
 * Shell integration: how a workspace learns where commands start and end, and their exit codes,
 * without scraping the screen. Like terminals do (OSC 133 / VS Code's OSC 633), bash itself writes
 * invisible marks into the byte stream, from a DEBUG trap (a command starts, with its command line)
 * and from PROMPT_COMMAND (it ended, with `$?`; a prompt is shown):
 *
 *   ESC ] 633 ; C ; <nonce> ; <history entry> ; <nonce> BEL   a command started, with its command line
 *   ESC ] 633 ; D ; <nonce> ; <exit code> BEL               it ended
 *   ESC ] 633 ; A ; <nonce> ; <$?> BEL                      a prompt: the shell reads the next line
 *   ESC ] 633 ; B ; <nonce> BEL                            in the continuation prompt (PS2): bash has read
 *                                                          a line and waits for the rest of its command
 *   ESC ] 633 ; P ; <nonce> ; <$$> BEL                      once, before the first prompt: bash's pid,
 *                                                          as its container sees it (an interrupt's target)
 *
 * The nonce is random per workspace: a file that a command prints cannot forge a mark. The marks
 * are cut out of the stream before anyone (terminal viewers, line events, logs) sees it. The start
 * mark carries the command line as `history 1` prints it, straight to the terminal: capturing it in
 * a variable to escape it would fork a subshell per command (~0.5-1 ms, more than the rest of a
 * short job), so instead that mark ends with the nonce again, which a command line cannot hold
 * by accident (the PTY turns its newlines into CR LF, which the parser undoes).
 *
 * The script reaches bash without a file in the container: bash runs PROMPT_COMMAND from its
 * environment before its first prompt, and that one line evals the script from another variable,
 * which then removes both from the environment its commands inherit.
 */

export type ShellMark =
  | { kind: 'start'; commandLine: string }
  | { kind: 'end'; exitCode: number }
  | { kind: 'prompt'; status: number }
  | { kind: 'continuation' }
  | { kind: 'shell'; pid: number };

/** The environment that makes a plain `bash -i` run the integration script before its first prompt. */
export function integrationEnv(nonce: string): Record<string, string> {
  return { BROKER_WS_INIT: integrationScript(nonce), PROMPT_COMMAND: 'eval "$BROKER_WS_INIT"', HISTFILE: '/dev/null' };
}

/**
 * functrace (set -T) lets a `( subshell )` inherit the trap, so its output comes after its start
 * mark (bash runs no DEBUG trap for the subshell itself). A line that runs no command at all (a
 * syntax error) still enters the history: the prompt hook sees the history number move and marks
 * its start itself. The prompt hook disarms the trap in the same simple command that saves `$?`,
 * and arms it again as its very last command, so its own commands start no job; it also removes the
 * trap while it runs (functrace would run it before each of the hook's own commands, for nothing).
 * An end mark and the prompt's go out in one write. A pasted command is echoed plain, not
 * highlighted and then redrawn (readline's active region): fewer bytes for every viewer.
 */
function integrationScript(nonce: string): string {
  return `__bkr_n=${nonce}; __bkr_armed=0; __bkr_running=0; __bkr_h=
__bkr_start() {
  __bkr_armed=0; __bkr_running=1
  builtin printf '\\e]633;C;%s;' "$__bkr_n"; HISTTIMEFORMAT= builtin history 1; builtin printf ';%s\\a' "$__bkr_n"
}
__bkr_preexec() { [[ $__bkr_armed = 1 && $BASH_COMMAND != __bkr_rc=* ]] || return 0; __bkr_start; }
__bkr_precmd() {
  local rc=$__bkr_rc h=$HISTCMD
  if [[ $__bkr_running = 0 && -n $__bkr_h && $h != "$__bkr_h" ]]; then __bkr_start; fi
  if [[ $__bkr_running = 1 ]]; then builtin printf '\\e]633;D;%s;%s\\a\\e]633;A;%s;%s\\a' "$__bkr_n" "$rc" "$__bkr_n" "$rc"
  else builtin printf '\\e]633;A;%s;%s\\a' "$__bkr_n" "$rc"; fi
  __bkr_running=0; __bkr_h=$h; __bkr_armed=1
}
builtin export -n PROMPT_COMMAND; builtin unset BROKER_WS_INIT
HISTCONTROL= HISTIGNORE= PROMPT_COMMAND='__bkr_rc=$? __bkr_armed=0; builtin trap - DEBUG; __bkr_precmd; builtin trap __bkr_preexec DEBUG' PS1='\\w \\$ ' PS2="\\[\\e]633;B;$__bkr_n\\a\\]> "
builtin bind 'set enable-active-region off' 2>/dev/null
builtin set -o functrace
builtin trap __bkr_preexec DEBUG
builtin printf '\\e]633;P;%s;%s\\a' "$__bkr_n" "$$"
__bkr_rc=0; __bkr_precmd
`;
}

const ESC = 0x1b;
const BEL = 0x07;
const PREFIX = Buffer.from('\x1b]633;');

/** Splits a terminal's bytes into plain data and marks; a mark split across chunks is held until whole. */
export class MarkParser {
  private pending: Buffer = Buffer.alloc(0);
  /** What follows the prefix of a start mark, and what ends it. */
  private readonly startHead: Buffer;
  private readonly startTail: Buffer;

  /**
   * `maxMarkBytes`: a mark longer than this is not one of ours (ours carry at most a command line):
   * it passes through as data, so a stray `ESC ] 633;` can never make the parser hold the stream.
   */
  constructor(
    private readonly nonce: string,
    private readonly maxMarkBytes: number,
    private readonly onData: (chunk: Buffer) => void,
    private readonly onMark: (mark: ShellMark) => void,
  ) {
    this.startHead = Buffer.from(`C;${nonce};`);
    this.startTail = Buffer.from(`;${nonce}\x07`);
  }

  push(chunk: Buffer): void {
    let buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    for (;;) {
      const at = buf.indexOf(PREFIX);
      if (at < 0) {
        // Hold a tail that could be the start of a mark ("\x1b", "\x1b]6", ...).
        const keep = partialPrefixAt(buf);
        this.emitData(buf.subarray(0, buf.length - keep));
        this.pending = Buffer.from(buf.subarray(buf.length - keep));
        return;
      }
      const bodyAt = at + PREFIX.length;
      const head = buf.subarray(bodyAt, bodyAt + this.startHead.length);
      const isStart = head.equals(this.startHead);
      if (!isStart && this.startHead.subarray(0, head.length).equals(head) && head.length < this.startHead.length) {
        this.emitData(buf.subarray(0, at)); // too few bytes yet to tell a start mark from the others
        this.pending = Buffer.from(buf.subarray(at));
        return;
      }
      const end = isStart ? buf.indexOf(this.startTail, bodyAt + head.length) : buf.indexOf(BEL, bodyAt);
      if (end < 0) {
        this.emitData(buf.subarray(0, at));
        const rest = buf.subarray(at);
        if (rest.length > this.maxMarkBytes) {
          this.emitData(rest); // not ours: too long to be
          return;
        }
        this.pending = Buffer.from(rest);
        return;
      }
      if (isStart) {
        this.emitData(buf.subarray(0, at));
        this.onMark({ kind: 'start', commandLine: historyLine(buf.subarray(bodyAt + head.length, end).toString('utf8')) });
        buf = buf.subarray(end + this.startTail.length);
        continue;
      }
      const mark = this.parse(buf.subarray(bodyAt, end).toString('utf8'));
      if (mark) {
        this.emitData(buf.subarray(0, at));
        this.onMark(mark);
      } else {
        this.emitData(buf.subarray(0, end + 1)); // someone else's OSC 633: the terminal's, not ours
      }
      buf = buf.subarray(end + 1);
    }
  }

  private emitData(data: Buffer): void {
    if (data.length > 0) this.onData(data);
  }

  private parse(body: string): ShellMark | null {
    const [kind, nonce, ...rest] = body.split(';');
    if (nonce !== this.nonce) return null;
    const value = rest.join(';');
    if (kind === 'D' && /^\d+$/.test(value)) return { kind: 'end', exitCode: Number(value) };
    if (kind === 'A' && /^\d+$/.test(value)) return { kind: 'prompt', status: Number(value) };
    if (kind === 'P' && /^\d+$/.test(value)) return { kind: 'shell', pid: Number(value) };
    if (kind === 'B' && rest.length === 0) return { kind: 'continuation' };
    return null;
  }
}

/** How many bytes at the end of `buf` could begin a mark. */
function partialPrefixAt(buf: Buffer): number {
  const from = Math.max(0, buf.length - PREFIX.length + 1);
  for (let i = from; i < buf.length; i++) {
    if (buf[i] === ESC && PREFIX.subarray(0, buf.length - i).equals(buf.subarray(i))) return buf.length - i;
  }
  return 0;
}

/** A `history 1` entry as the terminal carried it: its number gone, the PTY's CR LF back to LF, no final newline. */
export function historyLine(printed: string): string {
  return printed
    .replace(/\r\n/g, '\n')
    .replace(/^\s*\d+[* ] /, '')
    .replace(/\n$/, '');
}
