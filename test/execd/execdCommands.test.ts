/**
 * OpenSandbox's execd API: a pool session's execd commands and bash sessions, driven by OpenSandbox's
 * own TypeScript SDK (its CommandsAdapter and HealthAdapter, pointed at /sandboxes/<id>/execd),
 * on the local backend and, through the docker project, on Docker.
 */
import { randomBytes } from 'node:crypto';
import { startTestBroker, eventually, type TestBroker } from '../helpers/broker';
import { execdSdk, type ExecdSdk } from '../helpers/execdClient';
import Dockerode from 'dockerode';
import { sessionIsolation } from '../helpers/dockerSuite';
import { execIn, poolContainerIds } from '../helpers/dockerFaults';
import type { OutputMessage } from '@alibaba-group/opensandbox';

const texts = (msgs: OutputMessage[]): string[] => msgs.map((m) => m.text);

/** `alive` or `dead`, as another lease of the same container sees the pid written in `pidFile`. */
/**
 * With per-lease isolation no other lease sees a sandbox's files or processes: what it started is
 * observed from the sandbox's own lease while it lives, and from its containers once it is gone.
 */
async function sleepersInContainers(tb: TestBroker): Promise<number> {
  let n = 0;
  for (const id of poolContainerIds(tb)) n += (await execIn(new Dockerode(), id, ['ps', '-o', 'args'])).out.split('\n').filter((l) => l.trim() === 'sleep 600').length;
  return n;
}

async function liveness(tb: TestBroker, observer: string, pidFile: string): Promise<string> {
  const probe = `p=$(cat ${pidFile}); s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo alive || echo dead`;
  return (await tb.exec(observer, probe)).stdout.trim();
}

describe('execd commands and bash sessions, through the OpenSandbox SDK', () => {
  let tb: TestBroker;
  let lease: string;
  let sdk: ExecdSdk;
  beforeAll(async () => {
    // One container: a second lease shares its processes' view (to watch the first one's die).
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '3' });
    lease = await tb.acquire();
    sdk = execdSdk(tb.url, lease);
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('answers ping', async () => {
    expect(await sdk.health.ping()).toBe(true);
  });

  it('streams a command one event per line, stdout and stderr apart, and ends with execution_complete', async () => {
    const seen: string[] = [];
    const run = await sdk.commands.run('echo hello; echo; printf "a\\r\\nb"; echo oops >&2', undefined, { onStdout: (m) => void seen.push(m.text) });
    expect(texts(run.logs.stdout)).toEqual(['hello', '\n', 'a', 'b']);
    expect(seen).toEqual(['hello', '\n', 'a', 'b']);
    expect(texts(run.logs.stderr)).toEqual(['oops']);
    expect(run.exitCode).toBe(0);
    expect(run.error).toBeUndefined();
    expect(run.complete).toEqual({ timestamp: expect.any(Number), executionTimeMs: expect.any(Number) });
    expect(run.id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('reports a failing command as CommandExecError with its exit status as the exit code', async () => {
    const run = await sdk.commands.run('echo partial; exit 3');
    expect(texts(run.logs.stdout)).toEqual(['partial']);
    expect(run.exitCode).toBe(3);
    expect(run.error).toMatchObject({ name: 'CommandExecError', value: '3' });
    expect(run.complete).toBeUndefined();
    const status = await sdk.commands.getCommandStatus(run.id!);
    expect(status).toMatchObject({ id: run.id, content: 'echo partial; exit 3', running: false, exitCode: 3 });
    expect(status.finishedAt!.getTime()).toBeGreaterThanOrEqual(status.startedAt!.getTime());
  });

  it('runs in cwd (relative to the sandbox directory) with envs, and leaves nothing to the next command', async () => {
    await sdk.commands.run('mkdir -p sub');
    const run = await sdk.commands.run('pwd; echo "$GREETING $WHO"; cd /; export LEAKED=1', { workingDirectory: 'sub', envs: { GREETING: "it's", WHO: 'me\tthere' } });
    const [pwd, envLine] = texts(run.logs.stdout);
    expect(pwd).toMatch(new RegExp(`^/tmp/s/${lease}/sub$`));
    expect(envLine).toBe("it's me\tthere");
    const next = await sdk.commands.run('pwd; echo "${LEAKED:-unset}"');
    expect(texts(next.logs.stdout)).toEqual([`/tmp/s/${lease}`, 'unset']);
  });

  it('runs a background command: status while it runs and after, logs with the tail cursor', async () => {
    const gate = `gate-${randomBytes(4).toString('hex')}`;
    const bg = await sdk.commands.run(`echo one; echo two >&2; while [ ! -e ${gate} ]; do sleep 0.05; done; echo three; exit 4`, { background: true });
    expect(bg.id).toMatch(/^[0-9a-f]{32}$/);
    expect(bg.complete).toBeDefined(); // the stream only says it started
    expect(bg.exitCode).toBeUndefined(); // background: the SDK infers none
    let logs = await sdk.commands.getBackgroundCommandLogs(bg.id!);
    await eventually(async () => (logs = await sdk.commands.getBackgroundCommandLogs(bg.id!)).cursor === 2, 20_000, 'two lines logged');
    expect(logs.content.split('\n').sort()).toEqual(['', 'one', 'two']);
    expect(await sdk.commands.getCommandStatus(bg.id!)).toMatchObject({ running: true, exitCode: null, finishedAt: null });
    expect(await sdk.commands.getBackgroundCommandLogs(bg.id!, 2)).toEqual({ content: '', cursor: 2 });

    await sdk.commands.run(`touch ${gate}`);
    await eventually(async () => !(await sdk.commands.getCommandStatus(bg.id!)).running, 20_000, 'the background command to end');
    expect(await sdk.commands.getCommandStatus(bg.id!)).toMatchObject({ running: false, exitCode: 4, error: 'exit status 4' });
    expect(await sdk.commands.getBackgroundCommandLogs(bg.id!, 2)).toEqual({ content: 'three\n', cursor: 3 });
    // A cursor past the end is brought back to it: nothing is skipped later.
    expect(await sdk.commands.getBackgroundCommandLogs(bg.id!, 99)).toEqual({ content: '', cursor: 3 });
  });

  it('kills the whole tree of a command that times out, and nothing else of the sandbox', async () => {
    const tag = randomBytes(4).toString('hex');
    const bystander = await sdk.commands.run(`sh -c 'echo $$ > /tmp/by-${tag}.pid; exec sleep 600'`, { background: true });
    const run = await sdk.commands.run(`nohup sh -c 'echo $$ > /tmp/orphan-${tag}.pid; exec sleep 600' >/dev/null 2>&1 & sleep 600`, { timeoutSeconds: 1 });
    expect(run.exitCode).toBe(-1);
    expect(run.error?.traceback.join(' ')).toMatch(/timed out after 1000 ms/);
    const observer = sessionIsolation ? lease : await tb.acquire();
    try {
      await eventually(async () => (await liveness(tb, observer, `/tmp/orphan-${tag}.pid`)) === 'dead', 20_000, 'the orphan to die');
      expect(await liveness(tb, observer, `/tmp/by-${tag}.pid`)).toBe('alive');
      expect(await sdk.commands.getCommandStatus(bystander.id!)).toMatchObject({ running: true });
      expect((await tb.exec(lease, 'echo the lease shell is fine')).stdout).toBe('the lease shell is fine\n');
    } finally {
      await sdk.commands.interrupt(bystander.id!);
      if (observer !== lease) await tb.release(observer);
    }
    await eventually(async () => !(await sdk.commands.getCommandStatus(bystander.id!)).running, 20_000, 'the interrupted bystander to end');
  });

  it('interrupts a running foreground command by its id', async () => {
    let id = '';
    const running = sdk.commands.run('sleep 600', undefined, { onInit: (i) => void (id = i.id) });
    await eventually(() => id !== '', 20_000, 'the init event');
    await sdk.commands.interrupt(id);
    const run = await running;
    expect(run.exitCode).toBe(-1);
    expect(run.error?.traceback.join(' ')).toMatch(/interrupted/);
    expect(await sdk.commands.getCommandStatus(id)).toMatchObject({ running: false, exitCode: -1 });
  });

  it('keeps a bash session state across runs, with a cwd override and a timeout that keeps the shell', async () => {
    const session = await sdk.commands.createSession();
    try {
      await sdk.commands.runInSession(session, 'mkdir -p deep && cd deep && export KEPT=yes && f() { echo "f:$1"; }');
      const again = await sdk.commands.runInSession(session, 'basename "$PWD"; echo $KEPT; f 1');
      expect(texts(again.logs.stdout)).toEqual(['deep', 'yes', 'f:1']);
      expect(again.exitCode).toBe(0);
      const moved = await sdk.commands.runInSession(session, 'pwd', { workingDirectory: '/tmp' });
      expect(texts(moved.logs.stdout)).toEqual(['/tmp']);
      const slow = await sdk.commands.runInSession(session, 'sleep 600', { timeoutSeconds: 0.5 });
      expect(slow.exitCode).toBe(-1);
      const after = await sdk.commands.runInSession(session, 'pwd; echo $KEPT; false');
      expect(texts(after.logs.stdout)).toEqual(['/tmp', 'yes']);
      expect(after.exitCode).toBe(1);
    } finally {
      await sdk.commands.deleteSession(session);
    }
    await expect(sdk.commands.runInSession(session, 'true')).rejects.toMatchObject({ statusCode: 404 });
    await expect(sdk.commands.deleteSession(session)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('answers bad requests and unknown ids with the OpenSandbox envelope', async () => {
    const base = sdk.baseUrl.slice(tb.url.length);
    const unknownSandbox = await tb.post(`/sandboxes/${'0'.repeat(32)}/execd/command`, { command: 'true' });
    expect(unknownSandbox.status).toBe(404);
    expect(unknownSandbox.json).toEqual({ code: 'NOT_FOUND', message: expect.stringContaining('not found') });
    const noCommand = await tb.post(`${base}/command`, { cwd: '/tmp' });
    expect(noCommand.status).toBe(400);
    expect(noCommand.json).toEqual({ code: 'INVALID_REQUEST_BODY', message: "'command' is required" });
    expect((await tb.request('POST', `${base}/command`, '{not json', { 'content-type': 'application/json' })).json).toMatchObject({ code: 'INVALID_REQUEST_BODY' });
    expect((await tb.post(`${base}/command`, { command: 'true', envs: { 'BAD-NAME': 'x' } })).status).toBe(400);
    expect((await tb.post(`${base}/command`, { command: 'true', timeout: -5 })).status).toBe(400);
    await expect(sdk.commands.getCommandStatus('f'.repeat(32))).rejects.toMatchObject({ statusCode: 404 });
    await expect(sdk.commands.interrupt('f'.repeat(32))).rejects.toMatchObject({ statusCode: 404 });
    const fg = await sdk.commands.run('true');
    await expect(sdk.commands.getBackgroundCommandLogs(fg.id!)).rejects.toMatchObject({ statusCode: 400 });
    expect((await tb.get(`${base}/command/${fg.id}/logs?cursor=-1`)).status).toBe(400);
    expect((await tb.get(`${base}/nope`)).json).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('accepts the token as X-EXECD-ACCESS-TOKEN', async () => {
    const secured = await startTestBroker({ BROKER_TOKEN: 'execd-secret', BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1' });
    try {
      const r = await secured.post('/session/acquire', {}, { authorization: 'Bearer execd-secret' });
      const id = r.json.session_id as string;
      await expect(execdSdk(secured.url, id).commands.run('true')).rejects.toMatchObject({ statusCode: 401 });
      const run = await execdSdk(secured.url, id, { 'X-EXECD-ACCESS-TOKEN': 'execd-secret' }).commands.run('echo in');
      expect(texts(run.logs.stdout)).toEqual(['in']);
    } finally {
      await secured.close();
    }
  });

  it('holds a sandbox at 16 execd shells: one more answers 409, and ending one makes room', async () => {
    const own = await tb.acquire();
    const s = execdSdk(tb.url, own);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 16; i++) ids.push(await s.commands.createSession());
      await expect(s.commands.createSession()).rejects.toMatchObject({ statusCode: 409 });
      await expect(s.commands.run('true')).rejects.toMatchObject({ statusCode: 409 });
      await s.commands.deleteSession(ids[0]);
      expect(texts((await s.commands.run('echo room')).logs.stdout)).toEqual(['room']);
    } finally {
      await tb.release(own);
    }
  });

  it("kills everything a sandbox's execd started when its lease is released", async () => {
    const doomed = await tb.acquire();
    const observer = sessionIsolation ? doomed : await tb.acquire();
    const tag = randomBytes(4).toString('hex');
    const d = execdSdk(tb.url, doomed);
    try {
      await d.commands.run(`sh -c 'echo $$ > /tmp/bg-${tag}.pid; exec sleep 600'`, { background: true });
      await d.commands.run(`nohup sh -c 'echo $$ > /tmp/left-${tag}.pid; exec sleep 600' >/dev/null 2>&1 &`);
      const session = await d.commands.createSession();
      await d.commands.runInSession(session, `sleep 600 & echo $! > /tmp/sess-${tag}.pid`);
      for (const f of ['bg', 'left', 'sess']) await eventually(async () => (await liveness(tb, observer, `/tmp/${f}-${tag}.pid`)) === 'alive', 20_000, `${f} running`);
      expect(tb.broker.execd.activeSandboxes).toBeGreaterThanOrEqual(1);
      await tb.release(doomed);
      if (sessionIsolation) await eventually(async () => (await sleepersInContainers(tb)) === 0, 20_000, 'no sleeper left in the containers');
      else for (const f of ['bg', 'left', 'sess']) await eventually(async () => (await liveness(tb, observer, `/tmp/${f}-${tag}.pid`)) === 'dead', 20_000, `${f} killed`);
      const gone = await d.commands.run('true').catch((e: { statusCode: number }) => e);
      expect(gone).toMatchObject({ statusCode: 400 });
    } finally {
      await tb.release(observer);
    }
  });
});
