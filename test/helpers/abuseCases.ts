/**
 * The abuse cases, shared by the Docker suite (test/isolation/abuse.test.ts) and the
 * confined local suite (test/isolation/abuseLocal.test.ts). Commands a model may dream up: each either
 * works as it would in a terminal, or ends in a clear error (410 with a detail, or a Failed result)
 * with the slot rebuilt — and never touches another session. A neighbour lease in the SAME
 * "container" (Docker: container; local: working root) holds state (a variable, an array, a cwd)
 * through every abuse; a second neighbour in the other container does too. Only `kill -9 -1` may
 * take neighbours with it (see defineKillAllCase). No timing assertions beyond each execute's own
 * timeout.
 *
 * The pool must be 2 containers x 2 sessions: two neighbours held, and leaseInA() takes both free
 * sessions to find the one in container A.
 */
import { eventually, waitFullPool, type Health, type HttpResult } from './broker';

export const LONG_MS = 60_000;

/** What the cases need of a broker: the in-process TestBroker and the confined one's client both fit. */
export interface AbuseBroker {
  total: number;
  post(path: string, body?: unknown): Promise<HttpResult>;
  acquire(): Promise<string>;
  release(id: string): Promise<void>;
  health(): Promise<Health>;
  waitAllAvailable(timeoutMs?: number): Promise<Health>;
}

export interface AbuseOptions {
  /** Shell text printing the name of the container a session runs in ($HOSTNAME in Docker). */
  containerCommand: string;
  /** Called before any case leases its session: a suite that must not run unconfined throws here. */
  guard?: () => void;
}

export interface ExecResult {
  status: string;
  stdout: string;
  stderr: string;
  return_code: number;
}

export type AbuseContext = ReturnType<typeof abuseContext>;

/** The helpers every case uses, over a broker that beforeAll creates (hence the getter). */
export function abuseContext(getBroker: () => AbuseBroker, options: AbuseOptions) {
  /** Container names of the container the abuses run in (A) and of the other one (B). */
  const hosts = { a: '', b: '' };
  /** Neighbour leases holding state: `same` in container A, `other` in container B. */
  const nb = { same: '', other: '' };
  /** Leases a case took and has not released: a failed case must not starve the next ones. */
  const held = new Set<string>();

  const exec = (id: string, command: string, timeout = 5): Promise<HttpResult> =>
    getBroker().post(`/session/${id}/execute`, { command, timeout });

  async function ok(id: string, command: string, timeout = 5): Promise<ExecResult> {
    const r = await exec(id, command, timeout);
    expect(r.status).toBe(200);
    return r.json as ExecResult;
  }

  async function hostOf(id: string): Promise<string> {
    return (await ok(id, options.containerCommand)).stdout.trim();
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

  async function expectNeighboursKept(): Promise<void> {
    await expectStateKept(nb.same, hosts.a);
    await expectStateKept(nb.other, hosts.b);
  }

  /** The pool is back to full size with exactly `inUse` leases held (the neighbours). */
  async function waitPool(inUse: number): Promise<void> {
    await waitFullPool(getBroker(), LONG_MS, { inUse });
  }

  /** Leases the free session of container A (both free sessions are taken, the other given back). */
  async function leaseInA(): Promise<string> {
    options.guard?.();
    const tb = getBroker();
    const ids = [await tb.acquire(), await tb.acquire()];
    const found = await Promise.all(ids.map(hostOf));
    const i = found.indexOf(hosts.a);
    expect(i).toBeGreaterThanOrEqual(0);
    await tb.release(ids[1 - i]);
    held.add(ids[i]);
    return ids[i];
  }

  async function release(id: string): Promise<void> {
    held.delete(id);
    await getBroker().release(id);
  }

  /** After each case: gives back what a failed case left leased (release is idempotent). */
  async function releaseLeftovers(): Promise<void> {
    for (const id of [...held]) await release(id).catch(() => undefined);
  }

  /** After an abuse: release, pool full again, both neighbours intact, a fresh lease in A works. */
  async function afterAbuse(id: string): Promise<void> {
    await release(id);
    await waitPool(2);
    await expectNeighboursKept();
    const fresh = await leaseInA();
    const r = await ok(fresh, 'echo "fresh:$NB"; ls / >/dev/null && echo forked');
    expect(r.stdout).toBe('fresh:\nforked\n');
    await release(fresh);
    await waitPool(2);
  }

  /** A 410 for a dead shell names the cause. */
  function expectBroken(r: HttpResult): void {
    expect(r.status).toBe(410);
    expect(r.json.code).toBe('session_broken');
    expect(r.json.detail).toMatch(/broken .*state is lost/);
  }

  /** Leases the whole pool, picks one neighbour in A and one in B, gives the rest back. */
  async function setUpNeighbours(): Promise<void> {
    const tb = getBroker();
    const ids = await Promise.all(Array.from({ length: tb.total }, () => tb.acquire()));
    const found = await Promise.all(ids.map(hostOf));
    hosts.a = found[0];
    const sameIdx = found.indexOf(hosts.a, 1);
    const otherIdx = found.findIndex((h) => h !== hosts.a);
    expect(sameIdx).toBeGreaterThan(0);
    expect(otherIdx).toBeGreaterThan(0);
    hosts.b = found[otherIdx];
    nb.same = ids[sameIdx];
    nb.other = ids[otherIdx];
    await holdState(nb.same, hosts.a);
    await holdState(nb.other, hosts.b);
    for (const [i, id] of ids.entries()) if (i !== sameIdx && i !== otherIdx) await tb.release(id);
    await waitPool(2);
  }

  return { broker: getBroker, hosts, nb, exec, ok, release, releaseLeftovers, expectStateKept, expectNeighboursKept, waitPool, leaseInA, afterAbuse, expectBroken, setUpNeighbours };
}

export interface CommonCaseOptions {
  /** A pipeline whose `tail` must outgrow the memory limit (and be OOM-killed: status 137). */
  memoryHogCommand: string;
  /** Why the memory limit cannot be made to hold here: the memory cases are then skipped, saying so. */
  memorySkip?: string | null;
  /** Kills by the memory limit's OOM killer so far, where the suite can read them: a hog case proves its kill was the limit's. */
  oomKills?: () => number;
  /** Forks refused at the pids limit so far, where the suite can read them: the fork bomb waits to be held there. */
  pidsLimitHits?: () => number;
}

/**
 * A memory hog's command timeout: a bound, not an expectation. The limit ends the hog in a second or
 * two of CPU on an idle host, but the confinement's CPU quota on a busy host (or a fresh VM whose
 * every first touch of a page faults into the hypervisor) can stretch that past a few seconds, and a
 * command timeout then answers first: 200 with rc -1, the hog interrupted, never having met the limit.
 */
const HOG_TIMEOUT_S = 120;
/** The fork bomb's own command: it only starts the bomb in the background. */
const BOMB_TIMEOUT_S = 60;
/** Doublings of the bash hog: a 1 GiB string, twice the largest limit a suite sets, so it ends even unconfined. */
const HOG_DOUBLINGS = 30;

/** Every case but `kill -9 -1` (which must come last: see defineKillAllCase). */
export function defineCommonAbuseCases(ctx: AbuseContext, options: CommonCaseOptions): void {
  const { ok, exec, leaseInA, afterAbuse, expectBroken, expectStateKept, nb, hosts } = ctx;
  afterEach(() => ctx.releaseLeftovers());

  it('fork bomb: backgrounded as in a terminal, held by the pids limit, killed on release', async () => {
    const id = await leaseInA();
    // A bound, not a timing: the prompt comes back at once on an idle host, but the bomb's processes
    // share the container's CPU quota with the bash that prints the end marker, and on a loaded host
    // that took longer than the 5 s default (a clean-clone run answered "timed out" here).
    const r = await exec(id, ':(){ :|:& };:', BOMB_TIMEOUT_S);
    // `:` runs `:|:&` in the background, so the prompt comes back at once (with bash's job notice).
    expect(r.status).toBe(200);
    // The bomb's own children share the session's stderr: their fork retries may land in it first.
    const stderr = (r.json.stderr as string).replace(/^bash: fork: (retry: )?Resource temporarily unavailable\n/gm, '');
    expect(stderr).toMatch(/^\[1\] \d+\n$/);
    // The shell answers with builtins while the bomb fills the pids limit.
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    // Held by the limit before the release kills it: wait for the kernel to say so, not for time.
    const hits = options.pidsLimitHits;
    if (hits) await eventually(() => hits() > 0, LONG_MS, 'a fork refused at the pids limit');
    await expectStateKept(nb.same, hosts.a);
    await afterAbuse(id);
  });

  const memoryCases = {
    child: `memory hog in a child (${options.memoryHogCommand}): the child is OOM-killed, the shell goes on`,
    bash: 'memory hog in bash itself (string doubling): 410 with a detail, slot rebuilt',
  };
  if (options.memorySkip) {
    for (const title of Object.values(memoryCases)) {
      it(`${title} -- SKIPPED: ${options.memorySkip}`, () => {
        console.warn(`*** SKIPPED "${title}": ${options.memorySkip} ***`);
      });
    }
  } else {
    it(memoryCases.child, async () => {
      const id = await leaseInA();
      await ok(id, 'X=before');
      const kills = options.oomKills?.();
      const r = await ok(id, options.memoryHogCommand, HOG_TIMEOUT_S);
      expect(r.status).toBe('Failed');
      expect(r.return_code).toBe(137); // SIGKILL by the memory limit, as a terminal would report it
      expect(r.stdout).toBe('');
      if (kills !== undefined) expect(options.oomKills!()).toBeGreaterThan(kills);
      expect((await ok(id, 'echo $X')).stdout).toBe('before\n');
      await afterAbuse(id);
    });

    it(memoryCases.bash, async () => {
      const id = await leaseInA();
      const kills = options.oomKills?.();
      // Bounded: were the limit not in force, the loop would end (Success, the length printed).
      const r = await exec(id, `s=x; for i in {1..${HOG_DOUBLINGS}}; do s=$s$s; done; echo "unlimited: \${#s}"`, HOG_TIMEOUT_S);
      expect([r.status, r.text]).toEqual([410, expect.any(String)]);
      expectBroken(r);
      if (kills !== undefined) expect(options.oomKills!()).toBeGreaterThan(kills);
      expectBroken(await exec(id, 'echo after'));
      await afterAbuse(id);
    });
  }

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
    // cat, not ls: GNU ls says 2 for a missing argument, busybox ls (the Docker test image) 1.
    const r = await ok(id, 'echo hi; cat /nope');
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
    // util-linux more puts a `:::: /etc/passwd ::::` header first when stdout is no tty; busybox does not.
    const first = /^root:x:0:0:root:\/root:\/bin\/bash$/m;
    expect((await ok(id, 'more /etc/passwd')).stdout).toMatch(first);
    expect((await ok(id, 'less /etc/passwd')).stdout).toMatch(first);
    expect((await ok(id, 'echo after')).stdout).toBe('after\n');
    await afterAbuse(id);
  });

  it('an editor without a tty (vi): it gives up or waits for keys until the timeout; the session goes on', async () => {
    const id = await leaseInA();
    await ok(id, 'X=kept');
    // A command's stdin is /dev/null (framing.ts): busybox vi reads EOF and exits with status 1.
    // vim, when stdin is no tty, takes its keys from stderr (the broker's pipe: nothing comes) and
    // waits, as it would in a terminal, until the timeout ends it (^C, then SIGKILL).
    const r = await exec(id, 'vi edited.txt', 3);
    expect(r.status).toBe(200);
    const rc = r.json.return_code as number;
    expect([1, -1]).toContain(rc);
    if (rc === -1) expect(r.json.stderr).toMatch(/Command timed out after 3\.0 seconds$/);
    expect((await ok(id, '[[ -e edited.txt ]] && echo written || echo "not written $X"')).stdout).toBe('not written kept\n');
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
    // `-o args`: procps' plain `ps` shows only the command name; busybox's shows the arguments too.
    // The job is forked before the answer but may not have exec'd its sleep yet: wait for it.
    let ps = '';
    await eventually(async () => /sleep 30/.test((ps = (await ok(id, 'ps -o args')).stdout)), LONG_MS, () => `sleep 30 in ps (last: ${ps})`);
    await afterAbuse(id);
    const probe = await leaseInA();
    expect((await ok(probe, 'ps -o args')).stdout).not.toMatch(/sleep (100|30)/);
    await ctx.release(probe);
    await ctx.waitPool(2);
  });
}

const MiB = 1024 * 1024;

/**
 * A disk filler, in its working directory and in /tmp, on a /tmp of `tmpMiB` (local: the confined
 * namespace's tmpfs; Docker: BROKER_CONTAINER_TMP_SIZE): ENOSPC, the session and its neighbours go
 * on, and the release gives the space of the working directory back.
 */
export function defineDiskFillerCase(ctx: AbuseContext, tmpMiB: number): void {
  const { ok, leaseInA, afterAbuse, release, waitPool } = ctx;
  it(`disk filler: ENOSPC in the workdir and in /tmp (${tmpMiB} MiB), the session goes on; the workdir is gone after release`, async () => {
    const id = await leaseInA();
    const wd = (await ok(id, 'pwd')).stdout.trim();
    expect(wd).toMatch(/^\/tmp\/s\/[0-9a-f]{32}$/);
    for (const target of ['big', '/tmp/filler']) {
      // Bounded (2 GiB), in bytes (busybox head has no 2G); `cat` says ENOSPC by name in GNU and busybox alike.
      const r = await ok(id, `head -c 2147483648 /dev/zero | cat > ${target}`, 60);
      expect([r.status, r.stdout, r.return_code]).toEqual(['Failed', '', 1]);
      expect(r.stderr).toMatch(/No space left on device/);
    }
    expect((await ok(id, 'stat -f -c %a /tmp')).stdout).toBe('0\n'); // full
    expect((await ok(id, 'X=1; echo after $X')).stdout).toBe('after 1\n');
    await ctx.expectNeighboursKept();
    // Outside its workdir a lease's files are not the broker's to remove (as on a real machine).
    await ok(id, 'rm /tmp/filler');
    await afterAbuse(id);
    const probe = await leaseInA();
    // Removed in the background (no slot waits for a removal; docker holds removals a moment to send them together).
    await eventually(async () => (await ok(probe, `[[ -e ${wd} ]] && echo present || echo gone`)).stdout === 'gone\n', 60_000, `${wd} removed`);
    const free = (await ok(probe, 'stat -f -c "%a %S" /tmp')).stdout.trim().split(' ').map(Number);
    expect(free[0] * free[1]).toBeGreaterThan((tmpMiB - 4) * MiB);
    await release(probe);
    await waitPool(2);
  });
}

/**
 * Which neighbours `kill -9 -1` takes: in Docker everything in container A (the same-container
 * neighbour too, the other container's survives); locally, confined, every process of the sessions'
 * pid namespace, so every session — the broker itself lives outside it and must heal the pool;
 * with per-lease isolation, only the session's own processes (a pid namespace of its own each).
 */
export type KillAllReach = 'container' | 'every-session' | 'own-session';

/** `kill -9 -1` as root: last, because it takes neighbours with it. */
export function defineKillAllCase(ctx: AbuseContext, reach: KillAllReach): void {
  const { exec, ok, leaseInA, expectBroken, expectStateKept, waitPool, nb, hosts } = ctx;
  const title = {
    container: 'kill -9 -1 (kills the whole container, SAME-container neighbour included): broker recovers, other container neighbour survives',
    'every-session': 'kill -9 -1 (kills every session of the namespace, both neighbours included): broker survives and heals the pool to full size',
    'own-session': "kill -9 -1 in an isolated session (a pid namespace of its own): nothing but its own processes, both neighbours keep their state",
  }[reach];

  it(title, async () => {
    const tb = ctx.broker();
    const id = await leaseInA();
    const r = await exec(id, 'kill -9 -1');
    if (reach === 'own-session') {
      // bash sends it and is spared (kill(2) skips the caller and its namespace's init): nothing else ran.
      expect(r.status).toBe(200);
      await expectStateKept(nb.same, hosts.a);
      await expectStateKept(nb.other, hosts.b);
      await ctx.release(id);
      await tb.release(nb.same);
      await tb.release(nb.other);
    }
    expect([200, 410]).toContain(r.status);
    if (r.status === 410) expectBroken(r);
    const victims = { container: [nb.same], 'every-session': [nb.same, nb.other], 'own-session': [] }[reach];
    if (reach === 'container') await expectStateKept(nb.other, hosts.b);
    if (reach !== 'own-session') await ctx.release(id);
    // A killed neighbour's shell reports a clear 410, and its slot is rebuilt.
    for (const victim of victims) {
      await eventually(async () => (await exec(victim, 'echo x')).status === 410, LONG_MS, 'a killed neighbour reports 410');
      await tb.release(victim);
    }
    if (reach === 'container') {
      await waitPool(1);
      await expectStateKept(nb.other, hosts.b);
      await tb.release(nb.other);
    }
    await tb.waitAllAvailable(LONG_MS);
    const ids = await Promise.all(Array.from({ length: tb.total }, () => tb.acquire()));
    for (const i of ids) expect((await ok(i, 'echo ok; ls / >/dev/null && echo forked')).stdout).toBe('ok\nforked\n');
    for (const i of ids) await tb.release(i);
    await tb.waitAllAvailable(LONG_MS);
  });
}
