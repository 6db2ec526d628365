/**
 * The wire protocol between the broker and one interactive bash. Short per command on purpose: bash
 * reads a pipe one byte per read(2), so every byte of framing is a system call.
 *
 * Once per shell we define two tiny functions. Per command we send ONE short line:
 *
 *   __bs <nonce>;eval $'<command, ANSI-C quoted>' </dev/null;__be <nonce>\n
 *
 * `__bs` prints a start marker on stdout and stderr, `__be` an end marker (stdout also carries the
 * exit status). The line hands `__be` its nonce rather than letting it read shell state, so a
 * command that calls `__bs` or `__be` itself cannot make the end marker wrong or early (only `exit`
 * reads the nonce `__bs` saved in `__bn`). Bytes outside the markers (prompts, job notices, late
 * output of background jobs) belong to no command and are dropped. The nonce is random per command, so output cannot fake a
 * marker. The command travels inside `$'...'` and runs through `eval`, so unterminated quotes and
 * syntax errors stay inside it (reported, status 2) instead of swallowing the end marker; `eval`
 * runs at top level, so cd, variables, `declare`, functions and aliases persist. stdin is
 * /dev/null, so `cat` and `read` return at once. Interactive bash reads its input buffered, so the
 * command cannot follow the line as raw bytes for `read`: it must be part of the line.
 *
 * `exit` is shadowed by a function: at top level it prints the end marker with its status and
 * interrupts the rest of the line (SIGINT to itself: an interactive shell returns to its prompt),
 * so `exit 3` reports 3 and the shell keeps its state. In a subshell it is the real builtin.
 */

/** Sent once to a new shell. Markers go to fds 98/99 so `exec >file` in a command cannot hide them. */
export const SHELL_INIT_SCRIPT = [
  "PS1=;PS2=;PS0=;PS4='+ ';set +H;set +o history;unset PROMPT_COMMAND HISTFILE MAILCHECK",
  // Files the shell inherited beyond 0-2 (a parent's fd without close-on-exec) are closed: a session
  // must not hold the broker's pipes or sockets. (No 2>/dev/null: bash would save stderr on an fd >= 10.)
  'for __f in /proc/$$/fd/*;do __f=${__f##*/};((__f>2&&__f<255))&&exec {__f}>&-;done;unset __f',
  'exec 98>&1 99>&2',
  "__bs(){ __bn=$1;builtin printf %s \"$1s\" >&98;builtin printf %s \"$1s\" >&99; }",
  // One %s each, the marker whole in its argument: a ^C that lands inside printf can then leave no
  // fragment of it (the nonce alone) in bash's stdout buffer, to be flushed into the body later.
  "__be(){ local r=${2:-$?};builtin printf %s \"$1e$r\"$'\\n' >&98;builtin printf %s \"$1e\"$'\\n' >&99;return $r; }",
  'exit(){ local r=$?',
  '  if [[ $BASHPID != "$$" ]]; then builtin exit "$@"; fi',
  '  if [[ $# -gt 0 ]]; then if [[ $1 =~ ^-?[0-9]+$ ]]; then r=$(( $1 & 255 )); else builtin printf "bash: exit: %s: numeric argument required\\n" "$1" >&2; r=2; fi; fi',
  '  __be "$__bn" $r;builtin kill -INT $$; }',
  '',
].join('\n');

/** Written after an interrupt: the interrupted line's own `__be` never runs, so ask again. */
export function endMarkerRequest(nonce: string): string {
  return `__be ${nonce}\n`;
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const NEEDS_ESCAPE = /[\\'\x00-\x1f\x7f]/g;

function escapeChar(ch: string): string {
  switch (ch) {
    case '\\':
      return '\\\\';
    case "'":
      return "\\'";
    case '\n':
      return '\\n';
    case '\t':
      return '\\t';
    default:
      return '\\x' + ch.charCodeAt(0).toString(16).padStart(2, '0');
  }
}

/** Quotes `command` for bash's `$'...'` so that eval sees exactly the original text. */
export function ansiCQuote(command: string): string {
  return "$'" + command.replace(NEEDS_ESCAPE, escapeChar) + "'";
}

/** The command that makes `dir` the shell's working directory (whatever characters it holds). */
export function changeDirectoryCommand(dir: string): string {
  return `builtin cd -- ${ansiCQuote(dir)}`;
}

/** The one line that runs `command` framed by `nonce`. The caller rejects NUL bytes beforehand. */
export function commandLine(command: string, nonce: string): string {
  return `__bs ${nonce};eval ${ansiCQuote(command)} </dev/null;__be ${nonce}\n`;
}

export interface MarkerTokens {
  start: Buffer;
  end: Buffer;
}

export function markerTokens(nonce: string): MarkerTokens {
  return { start: Buffer.from(nonce + 's', 'latin1'), end: Buffer.from(nonce + 'e', 'latin1') };
}
