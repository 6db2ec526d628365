/**
 * The container's entrypoint (the spawner of fifoSpawner.ts) asked for a shell while its container
 * is at the pids limit. A non-interactive bash whose fork fails, after ~15 s of retries, EXITS
 * (status 254): the entrypoint gone, the container and every session in it with it (seen in the
 * soak, under a neighbour's fork burst). The spawner must refuse (`failed`) and live on.
 *
 * Built from the parts the broker uses (FifoSpawner, SPAWNER_SCRIPT) on a container of its own with
 * a small pids limit, filled by one of its own shells, so nothing exits during the test and no pid
 * comes free: the spawner's fork would fail for certain. Bounds are generous; no timing is measured.
 * @backend docker
 */
import Dockerode from 'dockerode';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { eventually, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { FifoSpawner, SPAWNER_SCRIPT } from '../../src/backends/docker/shells/fifoSpawner';
import { FifoStock } from '../../src/backends/docker/shells/fifoStock';
import type { ShellChannel } from '../../src/backends/docker/shells/channel';

jest.setTimeout(180_000);
const docker = new Dockerode();
/** Longer than bash's fork retries (1 + 2 + 4 + 8 s) before a fork finally fails. */
const HELD_MS = 20_000;
const PIDS_LIMIT = 16;

/** Output of a bare channel, collected as text. */
function collect(): { sink: { onData: (s: string, c: Buffer) => void; onEnd: (r: string) => void }; text: () => string } {
  let out = '';
  return { sink: { onData: (_s, c) => (out += c.toString()), onEnd: () => undefined }, text: () => out };
}

describeDocker('docker spawner at the pids limit', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-spawnlimit-'));
  const stock = new FifoStock(path.join(root, '.stock'));
  let spawner: FifoSpawner | null = null;
  let container: Dockerode.Container | null = null;
  const channels: ShellChannel[] = [];

  afterAll(async () => {
    for (const c of channels) c.destroy();
    await container?.remove({ force: true, v: true }).catch(() => undefined);
    await spawner?.close();
    await stock.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('a shell asked for at the limit is refused at once, and the entrypoint (the container) lives on', async () => {
    spawner = await FifoSpawner.create(root, `spawnlimit-${process.pid}`, stock);
    container = await docker.createContainer({
      Image: process.env.BROKER_IMAGE ?? 'bash-broker-sandbox:latest',
      Entrypoint: ['bash', '-c', SPAWNER_SCRIPT],
      Cmd: [],
      OpenStdin: true,
      Labels: { 'io.bash-broker.deployment': testDeployment(`spawnlimit-${process.pid}`) },
      HostConfig: { Init: true, PidsLimit: PIDS_LIMIT, NetworkMode: 'none', Binds: [spawner.bind] },
    });
    await container.start();
    expect(await spawner.ready(30_000)).toBe(true);

    // One shell fills the container: its bash retries the forks that fail, gives up the line
    // (an interactive bash returns to its prompt), and then nothing runs and nothing exits.
    const filler = collect();
    const ch = await spawner.opener({ env: ['BROKER_SESSION_TAG=filler'], sink: filler.sink });
    channels.push(ch);
    ch.write('for i in $(seq 100); do sleep 3600 & done; builtin echo FILLED-OUT\n');
    ch.write('builtin echo IDLE\n');
    await eventually(() => filler.text().includes('IDLE'), 90_000, 'the filler shell to give up and idle at the limit');

    const refused = await spawner.opener({ env: ['BROKER_SESSION_TAG=late'], sink: collect().sink }).then(
      (c) => (channels.push(c), 'opened'),
      (err: Error) => err.message,
    );
    expect(refused).not.toBe('opened');

    await new Promise((r) => setTimeout(r, HELD_MS));
    const state = (await container.inspect()).State;
    expect({ running: state.Running, exitCode: state.ExitCode }).toEqual({ running: true, exitCode: 0 });

    // Room again (the limit raised from outside): the same spawner serves a shell.
    await container.update({ PidsLimit: PIDS_LIMIT * 4 });
    const again = collect();
    const ok = await spawner.opener({ env: ['BROKER_SESSION_TAG=after'], sink: again.sink });
    channels.push(ok);
    ok.write('builtin echo "$BROKER_SESSION_TAG"\n');
    await eventually(() => again.text().includes('after'), 30_000, 'a new shell after room came back');
  });
});
