/**
 * The local backend keeps no session layers: the snapshot routes answer 501 `snapshots_unsupported`
 * with a detail that says snapshots need docker isolation, and change nothing; the list is empty.
 * @backend local
 */
import { startTestBroker, type TestBroker } from '../helpers/broker';

jest.setTimeout(60_000);

describe('snapshots on the local backend', () => {
  let tb: TestBroker;

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
  });
  afterAll(async () => tb?.close());

  it('answers 501 for a snapshot, a fork and a restore, 404 for an unknown snapshot, and lists none', async () => {
    const id = await tb.acquire();
    await tb.exec(id, 'x=1');
    for (const [route, body] of [['snapshot', {}], ['fork', { n: 1 }]] as const) {
      const r = await tb.post(`/session/${id}/${route}`, body);
      expect(r.status).toBe(501);
      expect(r.json).toEqual({ code: 'snapshots_unsupported', detail: expect.stringContaining('docker') });
    }
    expect((await tb.post(`/session/${id}/restore`, { snapshot: 'snap-0123456789abcdef' })).status).toBe(404);
    expect((await tb.post('/session/acquire', { snapshot: 'snap-0123456789abcdef' })).status).toBe(404);
    expect((await tb.get('/snapshots')).json).toEqual({ budget_bytes: 1024 ** 3, used_bytes: 0, snapshots: [] });
    expect((await tb.exec(id, 'echo $x')).stdout).toBe('1\n');
    expect((await tb.health()).in_use_sessions).toBe(1);
    await tb.release(id);
  });
});
