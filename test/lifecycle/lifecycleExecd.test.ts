/**
 * A warm lifecycle sandbox's first command, through OpenSandbox's own SDK. The sandbox is a
 * whole container of its own, so execd runs its commands first in that container's lease shell (no
 * shell to open before the first output), and the guarantees stay: a command that times out there
 * loses its whole tree and nothing else, and everything the sandbox started dies when it is killed.
 */
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { Sandbox, type ConnectionConfigOptions } from '@alibaba-group/opensandbox';
import { startTestBroker, testBackend, eventually, type TestBroker } from '../helpers/broker';

const docker = testBackend === 'docker';
const warmImage = docker ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'warm-image:1';
const lines = (run: { logs: { stdout: { text: string }[] } }): string[] => run.logs.stdout.map((m) => m.text);
/** `name=alive|dead` for each pid file, as the sandbox's own processes see them. */
const probe = (names: string[]): string =>
  names.map((n) => `p=$(cat ${n}.pid); s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo ${n}=alive || echo ${n}=dead`).join('; ');

describe(`a warm lifecycle sandbox's commands run in its own lease shell (${testBackend})`, () => {
  let tb: TestBroker;
  let connection: ConnectionConfigOptions;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_POOLS: JSON.stringify({ warm: { image: warmImage, containers: 1, sessions_per_container: 1 } }) });
    connection = { domain: tb.url, disableMetrics: true };
    await eventually(async () => (await tb.get('/health')).json.pools.warm.available_sessions === 1, 120_000, 'the warm pool full');
  }, 180_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('opens no shell for the first command; a timeout kills its tree alone; the kill takes every leftover', async () => {
    const sandbox = await Sandbox.create({ connectionConfig: connection, image: warmImage });
    const handle = tb.broker.directory.resolve(sandbox.id);
    expect(handle.ownShell?.alive).toBe(true);
    // A leftover of the first command lives on in the lease shell. A timeout kills what started since
    // its command began, and start times are known to a clock tick (10 ms): the leftover starts well before.
    const first = await sandbox.commands.run(`sh -c 'echo $$ > left.pid; exec sleep 600' >/dev/null 2>&1 & sleep 0.3; echo started`);
    expect(lines(first)).toEqual(['started']);
    expect(tb.broker.execd.openShells(sandbox.id)).toBe(0);

    // A command that times out in the lease shell, beside a bystander (which needs a shell of its own).
    let timedId = '';
    const timed = sandbox.commands.run(`nohup sh -c 'echo $$ > orphan.pid; exec sleep 600' >/dev/null 2>&1 & sleep 600`, { timeoutSeconds: 2 }, { onInit: (i) => void (timedId = i.id) });
    await eventually(() => timedId !== '', 20_000, 'the timed command to start');
    const bystander = await sandbox.commands.run(`sh -c 'echo $$ > by.pid; exec sleep 600'`, { background: true });
    expect(tb.broker.execd.openShells(sandbox.id)).toBe(1);
    const run = await timed;
    expect(run.exitCode).toBe(-1);
    expect(run.error?.traceback.join(' ')).toMatch(/timed out after 2000 ms/);
    await eventually(async () => lines(await sandbox.commands.run(probe(['orphan']))).join() === 'orphan=dead', 20_000, 'the orphan to die');
    expect(lines(await sandbox.commands.run(probe(['left', 'by'])))).toEqual(['left=alive', 'by=alive']);
    expect(await sandbox.commands.getCommandStatus(bystander.id!)).toMatchObject({ running: true });

    // The kill ends everything: locally the pids are the host's; on Docker the container goes.
    const pids = lines(await sandbox.commands.run('cat left.pid by.pid')).map(Number);
    await sandbox.kill();
    await sandbox.close();
    if (docker) {
      const engine = new Dockerode();
      await eventually(async () => !(await engine.listContainers({ all: true })).some((c) => c.Id === handle.container.id), 60_000, 'the container removed');
    } else {
      const alive = (pid: number): boolean => {
        try {
          return !/\) Z /.test(fs.readFileSync(path.join('/proc', String(pid), 'stat'), 'utf8'));
        } catch {
          return false; // gone
        }
      };
      await eventually(() => !pids.some(alive), 20_000, 'every leftover to die');
    }
  }, 120_000);
});
