/**
 * An acquire's files on Docker: small ones are written by builtins on the container's fs lane
 * (laneFiles.ts), with no archive upload (each upload makes dockerd start its own binary again, ~150 ms
 * of CPU); big ones still go up as a tarball. The engine reports every upload as a container event
 * `extract-to-dir`, which is what this suite counts. No timing assertions.
 * @backend docker
 */
import Dockerode from 'dockerode';
import type { Readable } from 'node:stream';
import { eventually, startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';

jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`lanefiles-${process.pid}`);
const docker = new Dockerode();

const b64 = (b: Buffer | string): string => Buffer.from(b).toString('base64');

describeDocker('docker: files on acquire', () => {
  let tb: TestBroker | null = null;
  let events: Readable | null = null;

  afterAll(async () => {
    events?.destroy();
    await tb?.close().catch(() => undefined);
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it('writes small files on the fs lane without an upload, and big ones with one', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: DEPLOYMENT, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' }));
    await b.waitAllAvailable(90_000);
    const [containerId] = poolContainerIds(b);
    const uploads: string[] = [];
    events = (await docker.getEvents({ filters: JSON.stringify({ container: [containerId], event: ['extract-to-dir'] }) })) as unknown as Readable;
    events.on('data', (chunk: Buffer) => uploads.push(chunk.toString()));

    const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const small = await b.post('/session/acquire', {
      files: {
        'every.bin': b64(every),
        "sub dir/it's.txt": b64("50% of \\ 'quoted' $HOME\n"),
        'empty.txt': '',
      },
    });
    expect(small.status).toBe(200);
    const id = small.json.session_id as string;
    const seen = await b.exec(id, "base64 -w0 every.bin; echo; cat \"sub dir/it's.txt\"; wc -c < empty.txt");
    expect(seen.stdout).toBe(`${b64(every)}\n50% of \\ 'quoted' $HOME\n0\n`);
    await b.release(id);

    // Over the command line's bound: the tarball.
    const big = Buffer.alloc(200_000, 'q');
    const large = await b.post('/session/acquire', { files: { 'big.txt': b64(big) } });
    expect(large.status).toBe(200);
    const bigId = large.json.session_id as string;
    expect((await b.exec(bigId, 'wc -c < big.txt')).stdout).toBe('200000\n');
    await b.release(bigId);

    // Events come in order: once the big acquire's upload is seen, one from the small acquire
    // would have been seen before it.
    await eventually(() => uploads.length > 0, 30_000, 'the big files upload event');
    expect(uploads.length).toBe(1);
  });
});
