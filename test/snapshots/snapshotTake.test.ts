/**
 * POST /session/{id}/snapshot on an isolated docker session (docs/snapshots.md): the answer names
 * the snapshot, its bytes (the session's own writes and its working directory, never the image:
 * an untouched session's snapshot is a few KiB), the background processes it leaves out; a
 * snapshot while a command runs is refused with 409 and changes nothing; the session goes on. The
 * layer on the host holds what the session wrote and a whiteout for what it removed, nothing more.
 * @backend docker
 */
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import type { DockerBackend } from '../../src/backends/docker/dockerBackend';

jest.setTimeout(180_000);

/** The host directory of the broker's snapshot layers. */
function storeDir(tb: TestBroker): string {
  return ((tb.backend as DockerBackend).snapshots as unknown as { hostDir: string }).hostDir;
}

describeDocker('snapshot of a leased session', () => {
  let tb: TestBroker;

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
  });
  afterAll(async () => tb?.close());

  it('freezes the session’s own writes and working directory, lists its background processes, and the session goes on', async () => {
    const id = await tb.acquire();
    await tb.exec(id, 'head -c 3000000 /dev/urandom >/etc/big.bin && rm /etc/hostname.bak 2>/dev/null; echo gone >/tmp/keep && rm -f /etc/group && echo w >inwork.txt');
    await tb.exec(id, 'sleep 300 >/dev/null 2>&1 &');
    const r = await tb.post(`/session/${id}/snapshot`, {});
    expect(r.status).toBe(201);
    const snap = r.json as { snapshot_id: string; bytes: number; background_processes: string[]; parent_session: string; depth: number; cwd: string };
    expect(snap.snapshot_id).toMatch(/^snap-[0-9a-f]{16}$/);
    expect(snap.parent_session).toBe(id);
    expect(snap.depth).toBe(1);
    expect(snap.cwd).toBe(`/tmp/s/${id}`);
    // 3 MB written, never the image's hundreds of MB.
    expect(snap.bytes).toBeGreaterThan(3_000_000);
    expect(snap.bytes).toBeLessThan(4_000_000);
    expect(snap.background_processes.some((p) => / sleep$/.test(p))).toBe(true);
    const layer = path.join(storeDir(tb), snap.snapshot_id);
    expect(fs.statSync(path.join(layer, 'u/etc/big.bin')).size).toBe(3_000_000);
    expect(fs.readFileSync(path.join(layer, 'u/tmp/keep'), 'utf8')).toBe('gone\n');
    // A removed file of the image is a whiteout (a character device 0/0) in the layer.
    const whiteout = fs.lstatSync(path.join(layer, 'u/etc/group'));
    expect(whiteout.isCharacterDevice() && whiteout.rdev === 0).toBe(true);
    expect(fs.readFileSync(path.join(layer, 'w/inwork.txt'), 'utf8')).toBe('w\n');
    // Nothing of the image beside what the session wrote.
    expect(fs.existsSync(path.join(layer, 'u/bin'))).toBe(false);
    const after = await tb.exec(id, 'cat /tmp/keep; ls /etc/group 2>&1 | wc -l; pwd');
    expect(after.stdout).toBe(`gone\n1\n/tmp/s/${id}\n`);
    const list = (await tb.get('/snapshots')).json as { used_bytes: number; snapshots: { snapshot_id: string }[] };
    expect(list.snapshots.map((s) => s.snapshot_id)).toEqual([snap.snapshot_id]);
    expect(list.used_bytes).toBe(snap.bytes);
    await tb.release(id);
  });

  it('refuses a snapshot while a command runs (409), leaving no snapshot', async () => {
    const id = await tb.acquire();
    const running = tb.exec(id, 'sleep 3; echo done');
    // Wait on the lease's state (its command runs), never on time.
    const lease = tb.broker.pools.owning(id).lease(id);
    await eventually(() => lease.executing);
    const before = ((await tb.get('/snapshots')).json as { snapshots: unknown[] }).snapshots.length;
    const r = await tb.post(`/session/${id}/snapshot`);
    expect(r.status).toBe(409);
    expect((r.json as { code: string }).code).toBe('session_busy');
    expect(((await tb.get('/snapshots')).json as { snapshots: unknown[] }).snapshots.length).toBe(before);
    expect((await running).stdout).toBe('done\n');
    await tb.release(id);
  });

  it('answers unknown sessions and bad bodies in the pool format, changing nothing', async () => {
    const listed = async (): Promise<unknown> => {
      const { used_bytes, snapshots } = (await tb.get('/snapshots')).json as { used_bytes: number; snapshots: { snapshot_id: string }[] };
      return { used_bytes, ids: snapshots.map((s) => s.snapshot_id) };
    };
    const before = await listed();
    const unknown = await tb.post('/session/nosuchsession/snapshot', {});
    expect(unknown.status).toBe(404);
    expect((unknown.json as { code: string }).code).toBe('session_not_found');
    const id = await tb.acquire();
    for (const body of [{ ttl: -1 }, { ttl: 'x' }, { nope: 1 }, [1]]) {
      const r = await tb.post(`/session/${id}/snapshot`, body);
      expect(r.status).toBe(400);
      expect(typeof (r.json as { detail: string }).detail).toBe('string');
    }
    expect(await listed()).toEqual(before);
    await tb.release(id);
  });

  it('a broker sweeps its deployment’s layers: at its close, and at its start those a crashed one left', async () => {
    const deployment = testDeployment(`snapsweep-${process.pid}`);
    const one = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_DEPLOYMENT: deployment });
    const dir = storeDir(one);
    const id = await one.acquire();
    const snap = (await one.post(`/session/${id}/snapshot`)).json as { snapshot_id: string };
    expect(fs.existsSync(path.join(dir, snap.snapshot_id, 'u'))).toBe(true);
    await one.close();
    expect(fs.existsSync(dir)).toBe(false);
    // What a broker killed before its close leaves: a layer no record names.
    fs.mkdirSync(path.join(dir, 'snap-0123456789abcdef', 'u'), { recursive: true });
    const two = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_DEPLOYMENT: deployment });
    try {
      expect(fs.readdirSync(dir)).toEqual(['at']);
      expect(((await two.get('/snapshots')).json as { snapshots: unknown[] }).snapshots).toEqual([]);
    } finally {
      await two.close();
    }
  });
});
