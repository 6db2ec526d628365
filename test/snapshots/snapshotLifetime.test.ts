/**
 * A snapshot's life (docs/snapshots.md) on isolated docker sessions: restore in place (own
 * snapshots only), delete (refused with 409 while a live fork or a snapshot above lies on its
 * layer), the TTL (an expired snapshot with a live fork waits for it), the node's byte budget
 * (507, nothing kept), and the depth bound of a fork of a fork (409 past it). Waits are on states,
 * never on time.
 * @backend docker
 */
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startTestBroker, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import type { DockerBackend } from '../../src/backends/docker/dockerBackend';
import { MAX_SNAPSHOT_DEPTH } from '../../src/backends/docker/snapshots/dockerSnapshotLayers';

jest.setTimeout(300_000);

interface View {
  snapshot_id: string;
  depth: number;
  live_forks: string[];
}

describeDocker('a snapshot’s life', () => {
  let tb: TestBroker;
  let store: string;

  const snapshot = async (id: string, body: unknown = {}): Promise<View> => {
    const r = await tb.post(`/session/${id}/snapshot`, body);
    if (r.status !== 201) throw new Error(`snapshot: ${r.status} ${r.text}`);
    return r.json as View;
  };
  const listed = async (): Promise<View[]> => ((await tb.get('/snapshots')).json as { snapshots: View[] }).snapshots;

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '3', BROKER_SNAPSHOT_BUDGET: '5m' });
    store = ((tb.backend as DockerBackend).snapshots as unknown as { hostDir: string }).hostDir;
  });
  afterAll(async () => tb?.close());

  it('restore puts the lease back to its own snapshot, in place; another session’s is refused', async () => {
    const id = await tb.acquire();
    await tb.exec(id, 'echo a >/etc/a; echo inwork >w.txt; v=1; cd /etc');
    const s1 = await snapshot(id);
    await tb.exec(id, 'rm /etc/a; echo b >/etc/b; rm w.txt; echo later >later.txt; v=2; cd /; f() { :; }');
    const r = await tb.post(`/session/${id}/restore`, { snapshot: s1.snapshot_id });
    expect(r.status).toBe(200);
    const after = await tb.exec(id, `cat /etc/a; ls /etc/b 2>&1 | grep -c "No such"; ls /tmp/s/${id}; echo $v; pwd; type f 2>&1 | grep -c "not found"`);
    expect(after.stdout).toBe(`a\n1\nw.txt\n1\n/etc\n1\n`);
    // Restored again after more writes: the same snapshot, once more.
    await tb.exec(id, 'echo c >/etc/a');
    expect((await tb.post(`/session/${id}/restore`, { snapshot: s1.snapshot_id })).status).toBe(200);
    expect((await tb.exec(id, 'cat /etc/a')).stdout).toBe('a\n');
    const other = await tb.acquire();
    const refused = await tb.post(`/session/${other}/restore`, { snapshot: s1.snapshot_id });
    expect(refused.status).toBe(403);
    expect((refused.json as { code: string }).code).toBe('snapshot_not_own');
    for (const body of [{}, { snapshot: 'x' }, { snapshot: s1.snapshot_id, more: 1 }]) expect((await tb.post(`/session/${other}/restore`, body)).status).toBe(400);
    expect((await tb.post(`/session/${other}/restore`, { snapshot: 'snap-ffffffffffffffff' })).status).toBe(404);
    expect((await tb.exec(other, 'ls /etc/a 2>&1 | grep -c "No such"')).stdout).toBe('1\n');
    for (const s of [id, other]) await tb.release(s);
    // The restored session held its snapshot while it lived; released, the snapshot is free to go.
    expect((await tb.request('DELETE', `/snapshots/${s1.snapshot_id}`)).status).toBe(200);
  });

  it('delete is refused while a live fork lies on the layer, then removes it; unknown and bad ids are 404 and 400', async () => {
    const parent = await tb.acquire();
    await tb.exec(parent, 'echo p >/etc/p');
    const s = await snapshot(parent);
    const fork = await tb.acquire({ snapshot: s.snapshot_id });
    const inUse = await tb.request('DELETE', `/snapshots/${s.snapshot_id}`);
    expect(inUse.status).toBe(409);
    expect((inUse.json as { code: string }).code).toBe('snapshot_in_use');
    expect((await tb.exec(fork, 'cat /etc/p')).stdout).toBe('p\n');
    await tb.release(fork);
    const deleted = await tb.request('DELETE', `/snapshots/${s.snapshot_id}`);
    expect(deleted.status).toBe(200);
    expect(fs.existsSync(path.join(store, s.snapshot_id))).toBe(false);
    expect((await tb.post('/session/acquire', { snapshot: s.snapshot_id })).status).toBe(404);
    expect((await tb.request('DELETE', `/snapshots/${s.snapshot_id}`)).status).toBe(404);
    expect((await tb.request('DELETE', '/snapshots/..%2F..%2Fetc')).status).toBe(400);
    await tb.release(parent);
  });

  it('a TTL ends a snapshot; one with a live fork waits for it to end', async () => {
    const parent = await tb.acquire();
    const lone = await snapshot(parent, { ttl: 0.2 });
    const held = await snapshot(parent, { ttl: 0.2 });
    const fork = await tb.acquire({ snapshot: held.snapshot_id });
    await eventually(async () => !(await listed()).some((s) => s.snapshot_id === lone.snapshot_id));
    // The record goes first (the list answers at once), then its layers (a removal of its own).
    await eventually(async () => !fs.existsSync(path.join(store, lone.snapshot_id)));
    expect((await listed()).some((s) => s.snapshot_id === held.snapshot_id)).toBe(true);
    await tb.release(fork);
    await eventually(async () => !(await listed()).some((s) => s.snapshot_id === held.snapshot_id));
    await tb.release(parent);
  });

  it('the byte budget refuses a snapshot beyond it with 507 and keeps nothing of it', async () => {
    const id = await tb.acquire();
    await tb.exec(id, 'head -c 3000000 /dev/zero >/etc/three');
    const first = await snapshot(id);
    const before = fs.readdirSync(store).sort();
    const over = await tb.post(`/session/${id}/snapshot`, {});
    expect(over.status).toBe(507);
    expect((over.json as { code: string }).code).toBe('snapshot_budget_exceeded');
    expect(fs.readdirSync(store).sort()).toEqual(before);
    expect((await listed()).map((s) => s.snapshot_id)).toEqual([first.snapshot_id]);
    expect((await tb.request('DELETE', `/snapshots/${first.snapshot_id}`)).status).toBe(200);
    expect((await snapshot(id)).snapshot_id).not.toBe(first.snapshot_id);
    for (const s of await listed()) await tb.request('DELETE', `/snapshots/${s.snapshot_id}`);
    await tb.release(id);
  });

  it(`a fork of a fork sees every level’s writes and removals, to a depth of ${MAX_SNAPSHOT_DEPTH}; deeper is refused with 409`, async () => {
    let id = await tb.acquire();
    for (let level = 1; level <= MAX_SNAPSHOT_DEPTH; level++) {
      await tb.exec(id, `echo ${level} >/etc/level-${level}; rm -f /etc/level-${level - 2}; lvl=${level}`);
      const last = await snapshot(id);
      expect(last.depth).toBe(level);
      const next = await tb.acquire({ snapshot: last.snapshot_id });
      await tb.release(id);
      id = next;
    }
    const seen = await tb.exec(id, 'cat /etc/level-*; echo $lvl');
    expect(seen.stdout).toBe(`${MAX_SNAPSHOT_DEPTH - 1}\n${MAX_SNAPSHOT_DEPTH}\n${MAX_SNAPSHOT_DEPTH}\n`);
    const deeper = await tb.post(`/session/${id}/snapshot`, {});
    expect(deeper.status).toBe(409);
    expect((deeper.json as { code: string }).code).toBe('snapshot_too_deep');
    // A snapshot above holds the one beneath it.
    expect((await tb.request('DELETE', `/snapshots/${(await listed())[0].snapshot_id}`)).status).toBe(409);
    await tb.release(id);
    for (const s of (await listed()).reverse()) expect((await tb.request('DELETE', `/snapshots/${s.snapshot_id}`)).status).toBe(200);
    expect(fs.readdirSync(store).filter((n) => n !== 'at')).toEqual([]);
  });
});
