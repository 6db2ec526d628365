/**
 * The proof with the real client: OpenSandbox's official TypeScript SDK, unchanged, pointed
 * only at the broker's address and token, does what its README shows a user doing, through the
 * `Sandbox` object `Sandbox.create` returns: create, commands with streaming handlers, a background
 * command with its status and logs, a bash session, files and directories, metrics, renew, kill.
 * Each step checks what a user would: exact output, exit codes, file contents, errors.
 *
 * The sandbox comes from a warm pool of one whole container (BROKER_POOLS) whose image the create
 * names. The steps run in order on that one sandbox, as a user's script would; execd's own tests
 * cover the corners of each route.
 */
import { randomBytes } from 'node:crypto';
import { Sandbox, SandboxManager, type ConnectionConfigOptions, type OutputMessage } from '@alibaba-group/opensandbox';
import { sdkError } from '../helpers/execdClient';
import { startTestBroker, testBackend, eventually, type TestBroker } from '../helpers/broker';

const TOKEN = 'sdk-test-token';
const docker = testBackend === 'docker';
const image = docker ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'sdk-image:1';
const texts = (msgs: OutputMessage[]): string[] => msgs.map((m) => m.text);

describe(`OpenSandbox's TypeScript SDK against the broker, unchanged (${testBackend})`, () => {
  let tb: TestBroker;
  let connection: ConnectionConfigOptions;
  let manager: SandboxManager;
  let sandbox: Sandbox;
  /** The sandbox's working directory, where relative paths land. */
  let home: string;

  beforeAll(async () => {
    const pools = { sdk: { image, containers: 1, sessions_per_container: 1 } };
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN, BROKER_POOLS: JSON.stringify(pools) });
    connection = { domain: tb.url, apiKey: TOKEN, disableMetrics: true };
    manager = SandboxManager.create({ connectionConfig: connection });
    await eventually(async () => (await tb.get('/health')).json.pools.sdk.available_sessions === 1, 120_000, 'the warm pool full');
  }, 180_000);
  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    await sandbox?.close();
    await manager?.close();
    await tb?.close();
  }, 60_000);

  it('creates a sandbox: Running, with the env, metadata and timeout asked, and healthy', async () => {
    sandbox = await Sandbox.create({ connectionConfig: connection, image, env: { PROJECT: 'sdk proof' }, metadata: { suite: 'sdk' }, timeoutSeconds: 300 });
    expect(sandbox.id).toEqual(expect.any(String));
    const info = await sandbox.getInfo();
    expect(info).toMatchObject({ id: sandbox.id, status: { state: 'Running' }, image: { uri: image }, metadata: { suite: 'sdk' } });
    expect(info.expiresAt!.getTime() - info.createdAt.getTime()).toBe(300_000);
    expect(await sandbox.isHealthy()).toBe(true);
    const listed = await manager.listSandboxInfos({ metadata: { suite: 'sdk' } });
    expect(listed.items.map((i) => i.id)).toEqual([sandbox.id]);
    const run = await sandbox.commands.run('echo "$PROJECT"; pwd');
    const [env, pwd] = texts(run.logs.stdout);
    expect(env).toBe('sdk proof');
    expect(pwd).toMatch(/^\//);
    home = pwd;
  });

  it('runs commands with streaming handlers: every line, in order, stdout and stderr apart; a failure has its exit code', async () => {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const events: string[] = [];
    const handlers = {
      onStdout: (m: OutputMessage) => void stdout.push(m.text),
      onStderr: (m: OutputMessage) => void stderr.push(m.text),
      onInit: () => void events.push('init'),
      onExecutionComplete: () => void events.push('complete'),
    };
    const ok = await sandbox.commands.run('for i in 1 2 3; do echo "line $i"; echo "warn $i" >&2; done', undefined, handlers);
    expect(stdout).toEqual(['line 1', 'line 2', 'line 3']);
    expect(stderr).toEqual(['warn 1', 'warn 2', 'warn 3']);
    expect(events).toEqual(['init', 'complete']);
    expect(texts(ok.logs.stdout)).toEqual(stdout);
    expect(ok.exitCode).toBe(0);
    expect(ok.error).toBeUndefined();

    stdout.length = 0;
    stderr.length = 0;
    const errors: string[] = [];
    const failed = await sandbox.commands.run('echo before; ls /no/such/dir; exit 7', undefined, { ...handlers, onError: (e) => void errors.push(e.value) });
    expect(stdout).toEqual(['before']);
    expect(stderr).toEqual([expect.stringMatching(/No such file or directory$/)]);
    expect(errors).toEqual(['7']);
    expect(failed.exitCode).toBe(7);
    expect(failed.error).toMatchObject({ name: 'CommandExecError', value: '7' });

    const inDir = await sandbox.commands.run('pwd; echo "$A-$B"', { workingDirectory: '/tmp', envs: { A: 'x', B: 'y z' } });
    expect(texts(inDir.logs.stdout)).toEqual(['/tmp', 'x-y z']);
  });

  it('runs a background command: its status while it runs and when it ends, its logs read on from the cursor', async () => {
    const gate = `/tmp/gate-${randomBytes(4).toString('hex')}`;
    const bg = await sandbox.commands.run(`echo first; echo second; while [ ! -e ${gate} ]; do sleep 0.05; done; echo third; exit 3`, { background: true });
    expect(bg.id).toMatch(/^\S+$/);
    const id = bg.id!;
    await eventually(async () => (await sandbox.commands.getBackgroundCommandLogs(id)).cursor === 2, 30_000, 'two lines logged');
    expect(await sandbox.commands.getBackgroundCommandLogs(id)).toEqual({ content: 'first\nsecond\n', cursor: 2 });
    const running = await sandbox.commands.getCommandStatus(id);
    expect(running).toMatchObject({ id, running: true, exitCode: null, finishedAt: null });
    expect(running.startedAt).toBeInstanceOf(Date);
    expect(await sandbox.commands.getBackgroundCommandLogs(id, 2)).toEqual({ content: '', cursor: 2 });

    await sandbox.commands.run(`touch ${gate}`);
    await eventually(async () => !(await sandbox.commands.getCommandStatus(id)).running, 30_000, 'the background command to end');
    const ended = await sandbox.commands.getCommandStatus(id);
    expect(ended).toMatchObject({ id, running: false, exitCode: 3 });
    expect(ended.finishedAt!.getTime()).toBeGreaterThanOrEqual(ended.startedAt!.getTime());
    expect(await sandbox.commands.getBackgroundCommandLogs(id, 2)).toEqual({ content: 'third\n', cursor: 3 });
    expect(await sandbox.commands.getBackgroundCommandLogs(id)).toEqual({ content: 'first\nsecond\nthird\n', cursor: 3 });

    const unknown = await sdkError(sandbox.commands.getCommandStatus('no-such-command'));
    expect(unknown.statusCode).toBe(404);
  });

  it('keeps a bash session: cwd, variables and functions live across runs; another session has none of them', async () => {
    const session = await sandbox.commands.createSession({ workingDirectory: '/tmp' });
    const other = await sandbox.commands.createSession();
    try {
      const first = await sandbox.commands.runInSession(session, 'pwd; mkdir -p kept && cd kept && export COLOUR=blue && greet() { echo "hello $1"; }');
      expect(texts(first.logs.stdout)).toEqual(['/tmp']);
      expect(first.exitCode).toBe(0);
      const second = await sandbox.commands.runInSession(session, 'pwd; echo "$COLOUR"; greet sdk');
      expect(texts(second.logs.stdout)).toEqual(['/tmp/kept', 'blue', 'hello sdk']);
      const failing = await sandbox.commands.runInSession(session, 'echo oops >&2; false');
      expect(texts(failing.logs.stderr)).toEqual(['oops']);
      expect(failing.exitCode).toBe(1);
      const elsewhere = await sandbox.commands.runInSession(other, 'pwd; echo "${COLOUR:-unset}"');
      expect(texts(elsewhere.logs.stdout)).toEqual([home, 'unset']);
    } finally {
      await sandbox.commands.deleteSession(session);
      await sandbox.commands.deleteSession(other);
    }
    expect((await sdkError(sandbox.commands.runInSession(session, 'true'))).statusCode).toBe(404);
  });

  it('writes, reads back, inspects, searches, moves, replaces and deletes files; creates, lists and deletes directories', async () => {
    const dir = `${home}/work`;
    await sandbox.files.createDirectories([{ path: `${dir}/src/lib`, mode: 750 }, { path: `${dir}/docs`, mode: 755 }]);
    const bytes = Uint8Array.from([0, 1, 2, 253, 254, 255, 10, 13]);
    await sandbox.files.writeFiles([
      { path: `${dir}/src/main.py`, data: 'print("hello")\nprint("hello again")\n', mode: 644 },
      { path: `${dir}/src/lib/util.py`, data: 'def f():\n    return 1\n' },
      { path: `${dir}/docs/notes.md`, data: '# notes\n' },
      { path: `${dir}/blob.bin`, data: bytes },
    ]);
    expect(await sandbox.files.readFile(`${dir}/src/main.py`)).toBe('print("hello")\nprint("hello again")\n');
    expect(Array.from(await sandbox.files.readBytes(`${dir}/blob.bin`))).toEqual(Array.from(bytes));
    // The same bytes as the sandbox's own shell sees them.
    expect(texts((await sandbox.commands.run(`od -An -tu1 ${dir}/blob.bin | tr -s ' ' | sed 's/^ //'`)).logs.stdout)).toEqual(['0 1 2 253 254 255 10 13']);

    const info = await sandbox.files.getFileInfo([`${dir}/src/main.py`, `${dir}/src/lib`]);
    expect(info[`${dir}/src/main.py`]).toMatchObject({ path: `${dir}/src/main.py`, type: 'file', size: 36, mode: 644 });
    expect(info[`${dir}/src/main.py`].modifiedAt).toBeInstanceOf(Date);
    expect(info[`${dir}/src/lib`]).toMatchObject({ type: 'directory', mode: 750 });

    const found = await sandbox.files.search({ path: dir, pattern: '*.py' });
    expect(found.map((f) => f.path)).toEqual([`${dir}/src/lib/util.py`, `${dir}/src/main.py`]);
    const listed = await sandbox.files.listDirectory({ path: dir });
    expect(listed.map((e) => [e.path, e.type])).toEqual([
      [`${dir}/blob.bin`, 'file'],
      [`${dir}/docs`, 'directory'],
      [`${dir}/src`, 'directory'],
    ]);

    await sandbox.files.moveFiles([{ src: `${dir}/src/main.py`, dest: `${dir}/app.py` }]);
    const replaced = await sandbox.files.replaceContentsDetailed([{ path: `${dir}/app.py`, oldContent: 'hello', newContent: 'bye' }]);
    expect(replaced).toEqual([{ path: `${dir}/app.py`, replacedCount: 2 }]);
    expect(await sandbox.files.readFile(`${dir}/app.py`)).toBe('print("bye")\nprint("bye again")\n');
    const gone = await sdkError(sandbox.files.readFile(`${dir}/src/main.py`));
    expect(gone.statusCode).toBe(404);

    await sandbox.files.deleteFiles([`${dir}/app.py`, `${dir}/blob.bin`]);
    await sandbox.files.deleteDirectories([`${dir}/src`]);
    expect((await sandbox.files.listDirectory({ path: dir })).map((e) => e.path)).toEqual([`${dir}/docs`]);
    expect(texts((await sandbox.commands.run(`find ${dir} | sort`)).logs.stdout)).toEqual([dir, `${dir}/docs`, `${dir}/docs/notes.md`]);
    await sandbox.files.deleteDirectories([dir]);
    expect((await sdkError(sandbox.files.getFileInfo([dir]))).statusCode).toBe(404);
  });

  it('reports metrics: plausible CPU and memory figures, stamped now', async () => {
    const m = await sandbox.metrics.getMetrics();
    expect(Number.isInteger(m.cpuCount) && m.cpuCount > 0).toBe(true);
    expect(m.cpuUsedPercentage).toBeGreaterThanOrEqual(0);
    expect(m.cpuUsedPercentage).toBeLessThanOrEqual(100 * m.cpuCount);
    expect(m.memoryTotalMiB).toBeGreaterThan(0);
    expect(m.memoryUsedMiB).toBeGreaterThan(0);
    expect(m.memoryUsedMiB).toBeLessThanOrEqual(m.memoryTotalMiB);
    expect(Math.abs(m.timestamp - Date.now())).toBeLessThan(60_000);
  });

  it('renews: the expiry moves to the new timeout and getInfo agrees', async () => {
    const before = (await sandbox.getInfo()).expiresAt!.getTime();
    const renewed = await sandbox.renew(3600);
    expect(renewed.expiresAt!.getTime()).toBeGreaterThan(before);
    expect(renewed.expiresAt!.getTime()).toBeGreaterThanOrEqual(Date.now() + 3500_000);
    expect((await sandbox.getInfo()).expiresAt!.getTime()).toBe(renewed.expiresAt!.getTime());
  });

  it('kills: the sandbox is ended, no longer listed, its execd answers 404, and its warm container is replaced', async () => {
    const id = sandbox.id;
    await sandbox.kill();
    // OpenSandbox's lifecycle API keeps an ended sandbox readable as Terminated; it is live no more.
    expect((await sandbox.getInfo()).status).toMatchObject({ state: 'Terminated', reason: 'user_delete' });
    expect((await manager.listSandboxInfos({ metadata: { suite: 'sdk' } })).items).toEqual([]);
    const run = await sdkError(sandbox.commands.run('echo still here'));
    expect({ status: run.statusCode, code: run.error.code, message: run.message }).toEqual({ status: 404, code: 'NOT_FOUND', message: `Sandbox ${id} is terminated (deleted by its owner)` });
    expect((await sdkError(sandbox.files.readFile(`${home}/x`))).statusCode).toBe(404);
    const raw = await tb.request('GET', `/sandboxes/${id}/execd/ping`, undefined, { 'X-EXECD-ACCESS-TOKEN': TOKEN });
    expect({ status: raw.status, code: raw.json.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect((await sdkError(sandbox.renew(600))).statusCode).toBe(409);
    await eventually(async () => (await tb.get('/health')).json.pools.sdk.available_sessions === 1, 120_000, 'the warm pool refilled');
  });
});
