/** State: a lease's shell keeps its state between executes, in /tmp/s/<session_id>/. */
import { startTestBroker, withLease, type TestBroker } from '../helpers/broker';

describe('session state between executes', () => {
  let tb: TestBroker;
  let id: string;
  beforeAll(async () => {
    tb = await startTestBroker();
  });
  beforeEach(async () => {
    id = await tb.acquire();
  });
  afterEach(async () => {
    await tb.release(id);
  });
  afterAll(async () => {
    await tb.close();
  });

  it('starts in /tmp/s/<session_id>/, which exists and is empty', async () => {
    const r = await tb.exec(id, 'pwd; ls -A; [ -d "/tmp/s/' + id + '" ] && echo isdir');
    expect(r).toEqual({ status: 'Success', stdout: `/tmp/s/${id}\nisdir\n`, stderr: '', return_code: 0 });
  });

  it('keeps the working directory', async () => {
    await tb.exec(id, 'mkdir -p deep/er && cd deep/er');
    expect((await tb.exec(id, 'pwd')).stdout).toBe(`/tmp/s/${id}/deep/er\n`);
    await tb.exec(id, 'cd /');
    expect((await tb.exec(id, 'pwd')).stdout).toBe('/\n');
  });

  it('keeps exported and plain variables, exported ones reaching child processes', async () => {
    await tb.exec(id, 'export EXP="exported value"; PLAIN=plain; unset HOME_NOT_SET');
    const r = await tb.exec(id, 'echo "$EXP|$PLAIN"; bash -c \'echo "child:$EXP|${PLAIN:-unset}"\'');
    expect(r.stdout).toBe('exported value|plain\nchild:exported value|unset\n');
  });

  it('keeps functions, aliases and associative arrays', async () => {
    await tb.exec(id, 'greet() { echo "hello $1"; }');
    await tb.exec(id, "shopt -s expand_aliases; alias ll='echo aliased'");
    await tb.exec(id, 'declare -A m=([one]=1 [two]=2); m[three]=3');
    const r = await tb.exec(id, 'greet world; ll; echo "${m[one]}${m[two]}${m[three]} ${#m[@]}"; declare -p m | cut -c1-11');
    expect(r).toEqual({ status: 'Success', stdout: 'hello world\naliased\n123 3\ndeclare -A \n', stderr: '', return_code: 0 });
  });

  it('keeps shell options and traps set by a command', async () => {
    await tb.exec(id, 'set -o pipefail; shopt -s nullglob; trap "echo bye-from-subshell" EXIT');
    const r = await tb.exec(id, 'false | true; echo "pipefail:$?"; echo nomatch*; trap -p EXIT');
    expect(r.stdout).toBe("pipefail:1\n\ntrap -- 'echo bye-from-subshell' EXIT\n");
  });

  it('reports the exit status as return_code and status', async () => {
    expect(await tb.exec(id, 'true')).toEqual({ status: 'Success', stdout: '', stderr: '', return_code: 0 });
    expect(await tb.exec(id, 'false')).toEqual({ status: 'Failed', stdout: '', stderr: '', return_code: 1 });
    expect(await tb.exec(id, '(exit 42)')).toMatchObject({ status: 'Failed', return_code: 42 });
    expect(await tb.exec(id, 'echo out; echo err >&2; sh -c "exit 7"')).toEqual({
      status: 'Failed',
      stdout: 'out\n',
      stderr: 'err\n',
      return_code: 7,
    });
  });

  it('`exit 3` reports 3 and Failed, and the session keeps its state', async () => {
    await tb.exec(id, 'KEEP=kept; cd /tmp');
    const r = await tb.exec(id, 'echo before; exit 3; echo never');
    expect(r).toEqual({ status: 'Failed', stdout: 'before\n', stderr: '', return_code: 3 });
    expect(await tb.exec(id, 'echo "$KEEP $PWD"')).toEqual({ status: 'Success', stdout: 'kept /tmp\n', stderr: '', return_code: 0 });
  });

  it('`exit` without a status reports the last status; `exit 0` succeeds; exit in a subshell is a plain exit', async () => {
    expect(await tb.exec(id, 'false; exit')).toMatchObject({ status: 'Failed', return_code: 1 });
    expect(await tb.exec(id, 'exit 0')).toMatchObject({ status: 'Success', return_code: 0 });
    expect(await tb.exec(id, '(exit 5); echo "sub:$?"; bash -c "exit 6"; echo "child:$?"')).toMatchObject({
      status: 'Success',
      stdout: 'sub:5\nchild:6\n',
    });
    expect((await tb.exec(id, 'echo alive')).stdout).toBe('alive\n');
  });

  it('gives commands an empty stdin: cat and read return at once', async () => {
    const r = await tb.exec(id, 'cat; echo "cat:$?"; read x; echo "read:$? [$x]"; head -c 10; wc -c', 20);
    expect(r).toEqual({ status: 'Success', stdout: 'cat:0\nread:1 []\n0\n', stderr: '', return_code: 0 });
  });

  it('runs multi-line commands and heredocs', async () => {
    const script = ['A=1', 'if [ "$A" = 1 ]; then', '  echo one', 'fi', 'cat <<EOF', 'heredoc $A', '  indented', 'EOF', "cat <<'RAW'", '$A stays', 'RAW'].join('\n');
    expect(await tb.exec(id, script)).toEqual({
      status: 'Success',
      stdout: 'one\nheredoc 1\n  indented\n$A stays\n',
      stderr: '',
      return_code: 0,
    });
    expect((await tb.exec(id, 'echo $A')).stdout).toBe('1\n');
  });

  it.each([
    ['a syntax error', 'if then fi'],
    ['an unterminated single quote', "echo 'oops"],
    ['an unterminated double quote', 'echo "oops'],
    ['an unclosed brace', 'f() {'],
    ['a stray closing paren', 'echo )'],
  ])('reports %s (status 2, message on stderr) and the session survives with its state', async (_name, command) => {
    await tb.exec(id, 'SURVIVOR=yes');
    const r = await tb.exec(id, command);
    expect(r).toMatchObject({ status: 'Failed', stdout: '', return_code: 2 });
    expect(r.stderr).toMatch(/syntax error|unexpected EOF/);
    expect(await tb.exec(id, 'echo "$SURVIVOR"')).toEqual({ status: 'Success', stdout: 'yes\n', stderr: '', return_code: 0 });
  });

  it('runs an unterminated heredoc to the end of the command, with bash\'s warning, and the session survives', async () => {
    const r = await tb.exec(id, 'cat <<EOF\nnever closed');
    expect(r).toMatchObject({ status: 'Success', stdout: 'never closed\n', return_code: 0 });
    expect(r.stderr).toMatch(/here-document .* delimited by end-of-file/);
    expect((await tb.exec(id, 'echo next')).stdout).toBe('next\n');
  });

  it('keeps sessions apart: state set in one lease is invisible in another', async () => {
    await withLease(tb, async (other) => {
      await tb.exec(id, 'export ONLY_HERE=1; only_here() { :; }; cd /');
      const r = await tb.exec(other, 'echo "[${ONLY_HERE:-}]"; type only_here >/dev/null 2>&1 || echo nofunc; pwd');
      expect(r.stdout).toBe(`[]\nnofunc\n/tmp/s/${other}\n`);
    });
  });
});
