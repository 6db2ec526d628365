/**
 * Prepared slots: a slot's rebuild chooses its next lease's id, makes /tmp/s/<id>/ and
 * starts the fresh shell in it, so an acquire needs no round trip. The lease must still start in
 * its own directory, with its files, and see nothing of the lease before; a prepared directory
 * removed behind the broker's back must still give a working lease.
 */
import { startTestBroker, withLease, b64, eventually, metricValue, type TestBroker } from '../helpers/broker';
import { sessionIsolation } from '../helpers/dockerSuite';

describe('prepared slots (1 container x 1 session: every lease reuses the same slot)', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1' });
  });
  afterAll(async () => {
    await tb.close();
  });

  it('a lease starts in /tmp/s/<its id>/ with the files given, and never sees the previous lease or its directory', async () => {
    const first = await withLease(
      tb,
      async (id) => {
        await tb.exec(id, 'echo old > old.txt; mkdir olddir; export OLD_VAR=1');
        return id;
      },
      { files: { 'first.txt': b64('first') } },
    );
    await tb.waitAllAvailable();
    const files = { 'x.txt': b64('x-content'), 'sub/dir/y.txt': b64('y-content') };
    await withLease(
      tb,
      async (id) => {
        expect(id).not.toBe(first);
        const r = await tb.exec(id, 'echo "$PWD"; pwd -P; ls -A; cat x.txt sub/dir/y.txt; echo; echo "[${OLD_VAR-}]"');
        expect(r).toEqual({ status: 'Success', stdout: `/tmp/s/${id}\n/tmp/s/${id}\nsub\nx.txt\nx-contenty-content\n[]\n`, stderr: '', return_code: 0 });
        // The previous lease's directory goes in the background: gone soon, never this lease's.
        await eventually(async () => (await tb.exec(id, `test -e /tmp/s/${first} && echo there; true`)).stdout === '', 60_000, 'the old directory removed');
      },
      { files },
    );
    // And without files: the prepared directory as it is, empty.
    await withLease(tb, async (id) => {
      expect(await tb.exec(id, 'pwd; ls -A; touch mine && ls')).toEqual({ status: 'Success', stdout: `/tmp/s/${id}\nmine\n`, stderr: '', return_code: 0 });
    });
    // The slot was recycled in place, each time into its next directory (no reopen); with per-lease
    // isolation each lease gets a new shell instead, by design.
    if (!sessionIsolation) expect(metricValue(await tb.metrics(), 'broker_shell_recycles_total', { result: 'in_place' })).toBeGreaterThanOrEqual(2);
  });

  it('a startup command runs in the prepared directory, after the files are written', async () => {
    const r = await tb.post('/session/acquire', { files: { 'in.txt': b64('given') }, startup_commands: ['pwd; cat in.txt'] });
    expect(r.status).toBe(200);
    const id = r.json.session_id as string;
    expect(r.json.startup_results).toEqual([{ status: 'Success', stdout: `/tmp/s/${id}\ngiven`, stderr: '', return_code: 0 }]);
    await tb.release(id);
  });
});

describe('a prepared directory removed behind the broker\'s back', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    // A neighbour lease removes the directory: with per-lease isolation none can reach it.
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '0' });
  });
  afterAll(async () => {
    await tb.close();
  });

  it('still gives a working lease, in a directory of its own', async () => {
    await tb.waitAllAvailable();
    await withLease(tb, async (holder) => {
      // The other slot is AVAILABLE and prepared: remove its directory from inside the container.
      const slot = tb.broker.pool.containers[0].slots.find((s) => s.lease === null && s.preparedId !== null);
      expect(slot).toBeDefined();
      const prepared = slot!.preparedId!;
      await tb.exec(holder, `rm -rf /tmp/s/${prepared}`);
      await withLease(tb, async (id) => {
        expect(id).not.toBe(prepared);
        const r = await tb.exec(id, 'pwd; ls -A; echo hi > f.txt; cat f.txt');
        expect(r).toEqual({ status: 'Success', stdout: `/tmp/s/${id}\nhi\n`, stderr: '', return_code: 0 });
      });
    });
    await tb.waitAllAvailable();
  });
});
