/**
 * A bash's own state, read at a snapshot and given back to a new bash (docs/snapshots.md): its
 * working directory, variables (exported or not, arrays and attributes included), functions,
 * aliases, traps, `shopt` and `set -o` options, umask and resource limits. Read by one command
 * run at top level (the framing's `eval`), written back by one; both through the session's own
 * framing, so nothing of this needs a backend.
 *
 * What a new bash has of its own and must keep is left out: bash's read-only and dynamic variables
 * ($BASHPID, $RANDOM, $SECONDS, $LINENO...), $PWD (the `cd` sets it), the framing's functions and
 * variables, and the session's tag and pid in its container.
 */

/** Fields of the dump, each `KIND\x01payload` and ended by a NUL (values may hold newlines, never a NUL). */
const SEP = '\x01';

/** Variables a new bash has of its own (read-only, dynamic, or the broker's), never restored. */
const OWN_VARIABLES =
  '__bk_*|__bn|__f|_|BASH|BASHOPTS|BASHPID|BASH_ALIASES|BASH_ARGC|BASH_ARGV|BASH_ARGV0|BASH_CMDS|BASH_COMMAND|BASH_LINENO|BASH_SOURCE|BASH_SUBSHELL|BASH_VERSINFO|BASH_VERSION|BASH_LOADABLES_PATH|BASH_MONOSECONDS|BASH_TRAPSIG|COLUMNS|LINES|EUID|PPID|SHELLOPTS|UID|FUNCNAME|GROUPS|HISTCMD|LINENO|RANDOM|SECONDS|SRANDOM|EPOCHREALTIME|EPOCHSECONDS|PIPESTATUS|DIRSTACK|PWD|SHLVL|BROKER_SHELL_PID|BROKER_SESSION_TAG|COMP_WORDBREAKS';
/** The framing's functions (framing.ts): the new bash defines its own. */
const OWN_FUNCTIONS = '__bs|__be|exit|__bk_*';
/**
 * `set -o` options the broker's shell keeps as its framing has them: line editing (`set +o emacs`
 * on a shell reading a pipe ends it), history and job control.
 */
const FRAMING_OPTIONS = /^set [-+]o (emacs|vi|history|monitor)$/;
/** Options `shopt` lists that no command may set. */
const READ_ONLY_SHOPT = /^shopt -[su] (login_shell|restricted_shell)$/;

/**
 * The command that dumps the state on stdout. No subshell but two command substitutions (the
 * name lists): every process the dump lists in the session's own procfs is one of the session's.
 */
export const DUMP_STATE_COMMAND = [
  `builtin printf 'cwd${SEP}%s\\0' "$PWD"`,
  'builtin mapfile -t __bk_vs <<<"$(builtin compgen -v)"',
  `for __bk_n in "\${__bk_vs[@]}"; do case $__bk_n in ${OWN_VARIABLES}|'') continue;; esac; builtin printf 'var${SEP}'; builtin declare -p -- "$__bk_n" 2>/dev/null; builtin printf '\\0'; done`,
  'builtin mapfile -t __bk_fs <<<"$(builtin compgen -A function)"',
  `for __bk_n in "\${__bk_fs[@]}"; do case $__bk_n in ${OWN_FUNCTIONS}|'') continue;; esac; builtin printf 'fn${SEP}'; builtin declare -f -- "$__bk_n"; builtin printf '\\0'; done`,
  `builtin printf 'fnx${SEP}'; builtin declare -F -x; builtin printf '\\0'`,
  `builtin printf 'alias${SEP}'; builtin alias -p; builtin printf '\\0'`,
  `builtin printf 'trap${SEP}'; builtin trap -p; builtin printf '\\0'`,
  `builtin printf 'umask${SEP}%s\\0' "$(builtin umask)"`,
  `builtin printf 'hard${SEP}'; builtin ulimit -H -a; builtin printf '\\0soft${SEP}'; builtin ulimit -S -a; builtin printf '\\0'`,
  `builtin printf 'shopt${SEP}'; builtin shopt -p; builtin printf '\\0set${SEP}'; builtin set +o; builtin printf '\\0'`,
  `for __bk_n in /proc/[0-9]*; do __bk_n=\${__bk_n#/proc/}; [[ $__bk_n == 1 || $__bk_n == "$$" ]] && continue; builtin read -r __bk_c </proc/$__bk_n/comm 2>/dev/null && builtin printf 'proc${SEP}%s %s\\0' "$__bk_n" "$__bk_c"; done`,
  'builtin unset __bk_vs __bk_fs __bk_n __bk_c',
].join('\n');

/** A bash's state as DUMP_STATE_COMMAND read it. */
export interface ShellState {
  cwd: string;
  /** The restore command's parts, in the order they run; every path is the snapshot's own lease's. */
  script: string;
  /** Processes other than bash that were running (`<pid in the session> <name>`): not carried. */
  background: string[];
}

/** The dump's fields into a ShellState; throws on output that is not a whole dump. */
export function parseShellState(stdout: string): ShellState {
  const parts = new Map<string, string[]>();
  for (const field of stdout.split('\0')) {
    const at = field.indexOf(SEP);
    if (at < 0) continue;
    const kind = field.slice(0, at);
    parts.set(kind, [...(parts.get(kind) ?? []), field.slice(at + 1)]);
  }
  const one = (kind: string): string => {
    const found = parts.get(kind);
    if (!found || found.length !== 1) throw new Error(`the shell's state could not be read (no ${kind})`);
    return found[0];
  };
  const cwd = one('cwd');
  // `declare` itself, not `builtin declare`: only the keyword's own name parses `a=(...)` as an
  // array's assignment. No function can shadow it yet: functions are restored after the variables.
  const variables = (parts.get('var') ?? []).filter((v) => v.startsWith('declare ')).map((v) => `declare -g ${v.slice('declare '.length).trimEnd()}`);
  const umask = one('umask').trim();
  if (!/^[0-7]{3,4}$/.test(umask)) throw new Error(`the shell's state could not be read (umask ${umask})`);
  const shopt = one('shopt').split('\n').filter((l) => l && !READ_ONLY_SHOPT.test(l)).map((l) => `builtin ${l}`);
  const options = one('set').split('\n').filter((l) => /^set [-+]o [a-z-]+$/.test(l) && !FRAMING_OPTIONS.test(l)).map((l) => `builtin ${l}`);
  const script = [
    `builtin cd -- ${shellQuote(cwd)}`,
    ...variables,
    ...(parts.get('fn') ?? []).map((f) => f.trimEnd()),
    ...exportedFunctions(one('fnx')),
    one('alias').trimEnd(),
    one('trap').trimEnd(),
    `builtin umask ${umask}`,
    // Soft, hard, soft again: a lowered hard limit needs its soft one lowered first, a raised soft one its hard one first.
    ...limitLines(one('soft'), '-S'),
    ...limitLines(one('hard'), '-H'),
    ...limitLines(one('soft'), '-S'),
    ...shopt,
    // Last: `set -e` or `set -u` would act on the restore's own lines.
    ...options,
  ].filter((line) => line.length > 0);
  return { cwd, script: script.join('\n'), background: parts.get('proc') ?? [] };
}

/**
 * The command that gives a new bash the state, its lease's directory `fromWorkdir` named
 * `toWorkdir` instead wherever it appears (a fork's working directory is its own).
 */
export function restoreStateCommand(state: ShellState, fromWorkdir: string, toWorkdir: string): string {
  const from = fromWorkdir.replace(/\/$/, '');
  const to = toWorkdir.replace(/\/$/, '');
  return state.script.split(from).join(to);
}

/** `declare -F -x` lines (`declare -fx name`) as the exports of those functions, the framing's left out. */
function exportedFunctions(listing: string): string[] {
  const own = new RegExp(`^(${OWN_FUNCTIONS.replace(/\*/g, '.*')})$`);
  return listing
    .split('\n')
    .map((line) => /^declare -f[a-z]* (\S+)$/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && !own.test(name))
    .map((name) => `builtin export -f -- ${shellQuote(name)}`);
}

/** `ulimit -a` lines (`open files (-n) 1024`) as the commands that set them again; a refusal is no failure. */
function limitLines(listing: string, which: '-H' | '-S'): string[] {
  const lines: string[] = [];
  for (const line of listing.split('\n')) {
    const m = /\(.*-([a-zA-Z])\)\s+(\S+)$/.exec(line);
    if (m && /^([0-9]+|unlimited)$/.test(m[2])) lines.push(`builtin ulimit ${which} -${m[1]} ${m[2]} 2>/dev/null`);
  }
  return lines;
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
