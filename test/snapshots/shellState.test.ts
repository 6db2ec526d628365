/**
 * A shell's state read by DUMP_STATE_COMMAND and written back by the restore command
 * (core/snapshots/shellState.ts), with real bash: values with newlines, quotes, `$`, backslashes and
 * non-ASCII text, empty and sparse arrays, associative arrays, integers, read-only and exported
 * variables, exported functions, aliases, traps, options and umask come back exactly; the parent's
 * working directory is renamed to the new one's; a dump that is cut short is refused.
 * @backend any
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DUMP_STATE_COMMAND, parseShellState, restoreStateCommand } from '../../src/core/snapshots/shellState';

const SET_STATE = [
  'lines=$\'one\\ntwo "quoted" \\\'single\\\' $dollar \\\\back\'',
  'unicode="héllo wörld ✓"',
  'declare -a sparse=([0]=a [5]=b [9]="")',
  'declare -a empty=()',
  'declare -A assoc=([key]=$\'multi\\nline\' ["with space"]=x)',
  'declare -i count=7',
  'declare -r FIXED=1',
  'export SHARED="exported value"',
  'declare -x -i EXPORTED_INT=3',
  'helper() { local x="$1"; printf "<%s>\\n" "$x"; }',
  'export -f helper',
  "alias say='echo said'",
  "trap 'echo bye' USR1",
  'set -o noclobber; shopt -s extglob; umask 0077',
  'cd "$WORKDIR_FROM/sub"',
].join('\n');

const PROBE = [
  'declare -p lines unicode sparse empty assoc count FIXED SHARED EXPORTED_INT',
  'declare -f helper; declare -F -x | grep helper',
  'alias say; trap -p USR1',
  'set -o | grep -E "^noclobber"; shopt extglob; umask; pwd',
].join('\n');

function bash(script: string, env: Record<string, string> = {}): string {
  return execFileSync('bash', ['--norc', '--noprofile', '-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
}

describe('a shell’s state, dumped and restored with real bash', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `shell-state-${process.pid}-`));
  const from = path.join(root, 'from');
  const to = path.join(root, 'to');
  beforeAll(() => {
    for (const dir of [from, to]) fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('comes back exactly in a new bash, in the new working directory', () => {
    const dumped = bash(`${SET_STATE}\n${DUMP_STATE_COMMAND}`, { WORKDIR_FROM: from });
    const expected = bash(`${SET_STATE}\n${PROBE}`, { WORKDIR_FROM: from }).split(from).join(to);
    const state = parseShellState(dumped);
    expect(state.cwd).toBe(path.join(from, 'sub'));
    const restored = bash(`${restoreStateCommand(state, from, to)}\n${PROBE}`);
    expect(restored).toBe(expected);
  });

  it('refuses a dump cut short', () => {
    const dumped = bash(DUMP_STATE_COMMAND);
    expect(() => parseShellState(dumped.slice(0, dumped.indexOf('umask')))).toThrow(/could not be read/);
  });
});
