/**
 * Commands a model may dream up, run in a Docker-backend session: each either works as it would in a
 * terminal, or ends in a clear error (410 with a detail, or a Failed result) with the slot rebuilt —
 * and never touches another session. A neighbour lease in the SAME container holds state (a
 * variable, an array, a cwd) through every abuse; a second neighbour in the other container does too.
 * Only `kill -9 -1` may (and does) take the same-container neighbour with it: that is what it means
 * in a shared container, so for it only the other container's neighbour and the pool's recovery are
 * asserted. No timing assertions beyond each execute's own timeout.
 */
import { eventually, startTestBroker, testBackend, type Health, type HttpResult, type TestBroker } from '../helpers/broker';

jest.setTimeout(240_000);
const LONG = 60_000;
const d = testBackend === 'docker' ? describe : describe.skip;

d('abusive commands (docker backend, pids 128, memory 256m)', () => {
  let tb: TestBroker;
  /** Hostname (container short id) of the container the abuses run in, and the other one. */
  let hostA = '';
  let hostB = '';
  /** Neighbour leases holding state: `same` in container A, `other` in container B. */
  const nb = { same: '', other: '' };

  const exec = (id: string, command: string, timeout = 5): Promise<HttpResult> =>
    tb.post(`/session/${id}/execute`, { command, timeout });

  async function ok(id: string, command: string, timeout = 5) {
    const r = await exec(id, command, timeout);
    expect(r.status).toBe(200);
    return r.json as { status: string; stdout: string; stderr: string; return_code: number };
  }

  async function hostOf(id: string): Promise<string> {
    return (await ok(id, 'echo $HOSTNAME')).stdout.trim();
  }

  async function holdState(id: string, host: string): Promise<void> {
    const r = await ok(id, `export NB=kept-${host}; ARR=(x y); mkdir -p deep/er && cd deep/er`);
    expect(r.return_code).toBe(0);
  }

  /** Builtins only: a neighbour in a container whose pids are exhausted can still answer. */
  async function expectStateKept(id: string, host: string): Promise<void> {
    const r = await ok(id, 'echo "$NB ${ARR[1]}"; echo "${PWD##*/s/}"');
    expect(r.stdout).toMatch(new RegExp(`^kept-${host} y\\n[0-9a-f]{32}/deep/er\\n$`));
    expect(r.return_code).toBe(0);
  }

  /** The pool is back to full size with exactly `inUse` leases held (the neighbours). */
  async function waitPool(inUse: number): Promise<void> {
    let last: Health | null = null;
    await eventually(
      async () => {
        last = await tb.health();
        return (
          last.status === 'healthy' &&
          last.total_sessions === tb.total &&
          last.in_use_sessions === inUse &&
          last.available_sessions === tb.total - inUse &&
          last.cleaning_sessions === 0 &&
          last.broken_sessions === 0
        );
      },
      LONG,
      () => `a full pool with ${inUse} in use (last /health: ${JSON.stringify(last)})`,
    );
  }

  /** Leases the free session of container A (both free sessions are taken, the other given back). */
  async function leaseInA(): Promise<string> {
    const ids = [await tb.acquire(), await tb.acquire()];
    const hosts = await Promise.all(ids.map(hostOf));
    const i = hosts.indexOf(hostA);
    expect(i).toBeGreaterThanOrEqual(0);
    await tb.release(ids[1 - i]);
    return ids[i];
  }

  /** After an abuse: release, pool full again, both neighbours intact, a fresh lease in A works. */
  async function afterAbuse(id: string): Promise<void> {
    await tb.release(id);
    await waitPool(2);
    await expectStateKept(nb.same, hostA);
    await expectStateKept(nb.other, hostB);
    const fresh = await leaseInA();
    const r = await ok(fresh, 'echo "fresh:$NB"; ls / >/dev/null && echo forked');
    expect(r.stdout).toBe('fresh:\nforked\n');
    await tb.release(fresh);
    await waitPool(2);
  }

  /** A 410 for a dead shell names the cause. */
  function expectBroken(r: HttpResult): void {
    expect(r.status).toBe(410);
    expect(r.json.code).toBe('session_broken');
    expect(r.json.detail).toMatch(/broken .*state is lost/);
  }

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_CONTAINER_PIDS_LIMIT: '128',
      BROKER_CONTAINER_MEMORY: '256m',
      BROKER_HEALTH_INTERVAL: '0.5',
      BROKER_CONTAINER_PING_TIMEOUT: '2',
    });
    const ids = await Promise.all(Array.from({ length: tb.total }, () => tb.acquire()));
    const hosts = await Promise.all(ids.map(hostOf));
    hostA = hosts[0];
    const sameIdx = hosts.indexOf(hostA, 1);
    const otherIdx = hosts.findIndex((h) => h !== hostA);
    expect(sameIdx).toBeGreaterThan(0);
    expect(otherIdx).toBeGreaterThan(0);
    hostB = hosts[otherIdx];
    nb.same = ids[sameIdx];
    nb.other = ids[otherIdx];
    await holdState(nb.same, hostA);
    await holdState(nb.other, hostB);
    for (const [i, id] of ids.entries()) if (i !== sameIdx && i !== otherIdx) await tb.release(id);
    await waitPool(2);
  });

  afterAll(async () => tb?.close());

  it('fork bomb: backgrounded as in a terminal, held by the pids limit, killed on release', async () => {
    const id = await leaseInA();
    const r = await exec(id, ':(){ :|:& };:');
    // `:` runs `:|:&` in the background, so the prompt comes back at once (with bash's job notice).
    expect(r.status).toBe(200);
    expect(r.json.stderr).toMatch(/^\[1\] \d+\n$/);
    // The shell answers with builtins while the bomb fills the container's 128 pids.
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await expectStateKept(nb.same, hostA);
    await afterAbuse(id);
  });

  it('memory hog in a child (head -c 400m | tail): the child is OOM-killed, the shell goes on', async () => {
    const id = await leaseInA();
    await ok(id, 'X=before');
    const r = await ok(id, 'head -c 400m /dev/zero | tail');
    expect(r.status).toBe('Failed');
    expect(r.return_code).toBe(137); // SIGKILL by the 256m limit, as a terminal would report it
    expect(r.stdout).toBe('');
    expect((await ok(id, 'echo $X')).stdout).toBe('before\n');
    await afterAbuse(id);
  });

  it('memory hog in bash itself (string doubling): 410 with a detail, slot rebuilt', async () => {
    const id = await leaseInA();
    expectBroken(await exec(id, 's=x; while :; do s=$s$s; done'));
    expectBroken(await exec(id, 'echo after'));
    await afterAbuse(id);
  });

  it('kill $$: an interactive bash ignores SIGTERM, as in a terminal', async () => {
    const id = await leaseInA();
    await ok(id, 'X=1');
    const r = await ok(id, 'kill $$');
    expect([r.status, r.stdout, r.stderr]).toEqual(['Success', '', '']);
    expect((await ok(id, 'echo after $X')).stdout).toBe('after 1\n');
    await afterAbuse(id);
  });

  it('kill -9 $$: 410 with a detail, slot rebuilt', async () => {
    const id = await leaseInA();
    expectBroken(await exec(id, 'kill -9 $$'));
    await afterAbuse(id);
  });

  it('exec sleep 1: the shell is replaced and ends, 410 with a detail, slot rebuilt', async () => {
    const id = await leaseInA();
    expectBroken(await exec(id, 'exec sleep 1'));
    await afterAbuse(id);
  });

  it('exec >&- then echo hi: the write error a terminal shows; markers still arrive', async () => {
    const id = await leaseInA();
    expect((await ok(id, 'exec >&-')).return_code).toBe(0);
    const r = await ok(id, 'echo hi');
    expect(r).toEqual({ status: 'Failed', stdout: '', stderr: 'bash: echo: write error: Bad file descriptor\n', return_code: 1 });
    expect((await ok(id, 'echo err >&2; X=2; echo $X >&2')).stderr).toBe('err\n2\n');
    await afterAbuse(id);
  });

  it('exec 2>&-: stderr is gone for the lease, stdout and status still exact', async () => {
    const id = await leaseInA();
    expect((await ok(id, 'exec 2>&-')).return_code).toBe(0);
    const r = await ok(id, 'echo hi; ls /nope');
    expect(r).toEqual({ status: 'Failed', stdout: 'hi\n', stderr: '', return_code: 1 });
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await afterAbuse(id);
  });

  it('exec >file: output goes to the file as in a terminal; the release still recycles the shell', async () => {
    const id = await leaseInA();
    expect(await ok(id, 'exec >out.txt; echo hi')).toEqual({ status: 'Success', stdout: '', stderr: '', return_code: 0 });
    expect((await ok(id, 'cat out.txt >&2')).stderr).toBe('hi\n');
    await afterAbuse(id);
  });

  it("trap '' INT TERM; sleep 60 with timeout 1: times out, state kept", async () => {
    const id = await leaseInA();
    const r = await ok(id, "X=1; trap '' INT TERM; sleep 60", 1);
    expect(r.status).toBe('Failed');
    expect(r.return_code).toBe(-1);
    expect(r.stderr).toMatch(/Command timed out after 1\.0 seconds$/);
    expect((await ok(id, 'echo after $X; pwd')).stdout).toMatch(/^after 1\n\/tmp\/s\/[0-9a-f]{32}\n$/);
    await afterAbuse(id);
  });

  it('set -e then false: the shell exits as a terminal would; 410 with a detail, slot rebuilt', async () => {
    const id = await leaseInA();
    expect((await ok(id, 'set -e')).return_code).toBe(0);
    expectBroken(await exec(id, 'false'));
    await afterAbuse(id);
  });

  it('set -u then echo $NOPE: the error, and the session goes on', async () => {
    const id = await leaseInA();
    await ok(id, 'set -u');
    expect(await ok(id, 'echo $NOPE')).toEqual({ status: 'Failed', stdout: '', stderr: 'bash: NOPE: unbound variable\n', return_code: 1 });
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await afterAbuse(id);
  });

  it('set -o pipefail; false | true: status 1, and it sticks', async () => {
    const id = await leaseInA();
    expect(await ok(id, 'set -o pipefail; false | true')).toEqual({ status: 'Failed', stdout: '', stderr: '', return_code: 1 });
    expect((await ok(id, 'true | false | true')).return_code).toBe(1);
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await afterAbuse(id);
  });

  it('PS1 and PROMPT_COMMAND set: the next outputs stay exact', async () => {
    const id = await leaseInA();
    await ok(id, "PS1='$ '; PROMPT_COMMAND='echo prompt; echo perr >&2'");
    expect(await ok(id, 'echo one')).toEqual({ status: 'Success', stdout: 'one\n', stderr: '', return_code: 0 });
    expect(await ok(id, 'echo two')).toEqual({ status: 'Success', stdout: 'two\n', stderr: '', return_code: 0 });
    await afterAbuse(id);
  });

  it('stty -a: no tty, an error; the session is fine', async () => {
    const id = await leaseInA();
    const r = await ok(id, 'stty -a');
    expect(r.status).toBe('Failed');
    expect(r.stderr).toMatch(/Inappropriate ioctl for device/);
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await afterAbuse(id);
  });

  it('more and less without a tty: they print the file and return', async () => {
    const id = await leaseInA();
    const first = 'root:x:0:0:root:/root:/bin/bash\n';
    expect((await ok(id, 'more /etc/passwd')).stdout.startsWith(first)).toBe(true);
    expect((await ok(id, 'less /etc/passwd')).stdout.startsWith(first)).toBe(true);
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await afterAbuse(id);
  });

  it('background processes holding stdout open: job notice, then exact output; killed on release', async () => {
    const id = await leaseInA();
    const r = await ok(id, 'sleep 100 > /dev/null & (sleep 100 &)');
    expect(r.return_code).toBe(0);
    expect(r.stderr).toMatch(/^\[1\] \d+\n$/); // bash's job notice, as a terminal shows it
    const s = await ok(id, 'sleep 30 &');
    expect([s.stdout, s.return_code]).toEqual(['', 0]);
    expect(await ok(id, 'echo after')).toEqual({ status: 'Success', stdout: 'after\n', stderr: '', return_code: 0 });
    expect((await ok(id, 'ps')).stdout).toMatch(/sleep 30/);
    await afterAbuse(id);
    const probe = await leaseInA();
    expect((await ok(probe, 'ps')).stdout).not.toMatch(/sleep (100|30)/);
    await tb.release(probe);
    await waitPool(2);
  });

  // Last: it kills every process in container A, the same-container neighbour included.
  it('kill -9 -1 (kills the whole container, SAME-container neighbour included): broker recovers, other container neighbour survives', async () => {
    const id = await leaseInA();
    const r = await exec(id, 'kill -9 -1');
    expect([200, 410]).toContain(r.status);
    if (r.status === 410) expectBroken(r);
    await expectStateKept(nb.other, hostB);
    await tb.release(id);
    // The same-container neighbour's shell was killed too: a clear 410, and its slot is rebuilt.
    await eventually(async () => (await exec(nb.same, 'echo x')).status === 410, LONG, 'the same-container neighbour reports 410');
    await tb.release(nb.same);
    await waitPool(1);
    await expectStateKept(nb.other, hostB);
    await tb.release(nb.other);
    await tb.waitAllAvailable(LONG);
    const ids = await Promise.all(Array.from({ length: tb.total }, () => tb.acquire()));
    for (const i of ids) expect((await ok(i, 'echo ok; ls / >/dev/null && echo forked')).stdout).toBe('ok\nforked\n');
    for (const i of ids) await tb.release(i);
    await tb.waitAllAvailable(LONG);
  });
});
