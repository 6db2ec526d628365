/**
 * Sessions started from a snapshot (docs/snapshots.md), on isolated docker sessions with real
 * bash: `POST /session/acquire {"snapshot"}` and `POST /session/{id}/fork {"n"}`. A fork starts
 * exactly where its parent was: files written, edited, deleted, chmodded and renamed, in a
 * repository and under /etc; its working directory's files; cwd, variables (exported or not,
 * arrays, integers), functions, aliases, `set -o` and `shopt` options, umask. Forks are isolated
 * from each other, from their parent and from the snapshot. Each state is read by a probe command
 * in the parent and in the fork, and compared whole.
 * @backend docker
 */
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';

jest.setTimeout(240_000);

/** The prefix of an episode: writes everywhere and shell state of every kind. */
const PREFIX = [
  'mkdir -p /root/repo/src && cd /root/repo && printf "one\\n" >src/a.py && printf "keep\\n" >README && printf "gone\\n" >old.txt && printf "x\\n" >tool.sh',
  'printf "two\\n" >>src/a.py && rm old.txt && chmod 751 tool.sh && mv README README.md && echo "127.0.0.9 forked" >>/etc/hosts 2>/dev/null; echo "root:x:0:0:changed:/root:/bin/sh" >/etc/passwd && rm /etc/group && mkdir -p /etc/app.d && echo cfg >/etc/app.d/x.conf',
  // An image directory removed and made again is opaque (an xattr of the layer): the image's /var/tmp must not show through.
  'rm -rf /var && mkdir /var && echo new >/var/only && ln -s /etc/app.d/x.conf /root/link && mkfifo /root/fifo',
  'cd "$OLDPWD" && mkdir -p work && echo w1 >work/notes.txt && cd work',
  'plain=hello; export EXPORTED="a b  c"; declare -a arr=(x "y z" ""); declare -A map=([k]=v ["s p"]=q); declare -i n=41; n+=1; readonly RO=fixed',
  'greet() { echo "hi $1"; }; alias ll="ls -la"; set -o noglob; set -u; shopt -s nullglob; umask 0027',
];

/** Everything the state must carry, printed (never mutating). */
const PROBE = [
  'pwd',
  'cat /root/repo/src/a.py /root/repo/README.md /etc/app.d/x.conf; ls /root/repo; stat -c "%a %n" /root/repo/tool.sh',
  'test -e /root/repo/old.txt && echo old-present || echo old-absent; test -e /etc/group && echo group-present || echo group-absent; grep changed /etc/passwd',
  'cat notes.txt; ls /var; cat /root/link; stat -c %F /root/fifo',
  'echo "$plain|$EXPORTED|${#arr[@]}|${arr[1]}|${map[k]}|${map[s p]}|$n|$RO"; declare -p arr map n RO | sed "s/^declare //"',
  'env | grep -c "^EXPORTED=a b  c$"; env | grep -c "^plain=" || true',
  'greet you; alias ll; set -o | grep -E "^(noglob|nounset) " | tr -s " \\t" " "; shopt nullglob | tr -s " \\t" " "; umask',
].join('; echo ---; ');

/** The probe's output with the lease's own working directory named the same for any lease. */
function probeOf(tb: TestBroker, id: string): Promise<string> {
  return tb.exec(id, PROBE).then((r) => r.stdout.split(`/tmp/s/${id}`).join('/tmp/s/ID') + `\n[rc ${r.return_code}]`);
}

describeDocker('sessions started from a snapshot', () => {
  let tb: TestBroker;

  beforeAll(async () => {
    // A second pool of the same image: a snapshot's sessions start in its own pool, never in another.
    tb = await startTestBroker({ BROKER_CONTAINERS: '2', BROKER_SESSIONS_PER_CONTAINER: '3', BROKER_POOLS: JSON.stringify({ other: { image: 'bash-broker-test:latest', containers: 1, sessions_per_container: 1 } }) });
  });
  afterAll(async () => tb?.close());

  it('an acquire from a snapshot starts exactly where the parent was, and what it writes is its own', async () => {
    const parent = await tb.acquire();
    for (const command of PREFIX) expect((await tb.exec(parent, command)).return_code).toBe(0);
    const expected = await probeOf(tb, parent);
    expect(expected).toContain('hi you');
    const snap = await tb.post(`/session/${parent}/snapshot`);
    expect(snap.status).toBe(201);
    const snapshotId = (snap.json as { snapshot_id: string }).snapshot_id;

    const fork = await tb.acquire({ snapshot: snapshotId });
    expect(fork).not.toBe(parent);
    expect(await probeOf(tb, fork)).toBe(expected);

    // The fork's writes are its own; the parent's after the snapshot are not the fork's.
    await tb.exec(fork, 'echo fork >>/root/repo/src/a.py; echo f >notes.txt; rm /etc/app.d/x.conf; plain=forked');
    await tb.exec(parent, 'echo parent >/etc/after-snapshot');
    expect((await tb.exec(parent, 'cat /root/repo/src/a.py notes.txt /etc/app.d/x.conf; echo $plain')).stdout).toBe('one\ntwo\nw1\ncfg\nhello\n');
    expect((await tb.exec(fork, 'test -e /etc/after-snapshot && echo seen || echo unseen')).stdout).toBe('unseen\n');
    // A second fork of the same snapshot sees the snapshot, not the first fork.
    const second = await tb.acquire({ snapshot: snapshotId });
    expect(await probeOf(tb, second)).toBe(expected);
    // acquire_group with a snapshot: n sessions from it at once.
    const group = await tb.post('/session/acquire_group', { snapshot: snapshotId, n: 2 });
    expect(group.status).toBe(200);
    const members = (group.json as { sessions: { session_id: string }[] }).sessions.map((s) => s.session_id);
    for (const id of members) expect(await probeOf(tb, id)).toBe(expected);
    for (const id of [parent, fork, second, ...members]) await tb.release(id);
  });

  it('fork {"n"} starts n isolated sessions at once; a released fork leaves nothing to the next lease of its slot, even one that wrote nothing', async () => {
    const parent = await tb.acquire();
    for (const command of PREFIX) expect((await tb.exec(parent, command)).return_code).toBe(0);
    const expected = await probeOf(tb, parent);
    const r = await tb.post(`/session/${parent}/fork`, { n: 3 });
    expect(r.status).toBe(200);
    const { snapshot, sessions } = r.json as { snapshot: { snapshot_id: string; forks: number }; sessions: { session_id: string }[] };
    expect(sessions).toHaveLength(3);
    expect(snapshot.forks).toBe(3);
    const ids = sessions.map((s) => s.session_id);
    for (const id of ids) expect(await probeOf(tb, id)).toBe(expected);
    // Two write their own mark; neither sees the other's, nor does the parent. The third writes
    // nothing: its view is still more than the image, so its slot must not be reused in place.
    const writers = ids.slice(0, 2);
    await Promise.all(writers.map((id, i) => tb.exec(id, `echo ${i} >/etc/mark; echo ${i} >mark`)));
    for (const [i, id] of writers.entries()) expect((await tb.exec(id, 'cat /etc/mark mark')).stdout).toBe(`${i}\n${i}\n`);
    expect((await tb.exec(ids[2], 'cat /etc/mark mark 2>&1 | grep -c "No such file"')).stdout).toBe('2\n');
    expect((await tb.exec(parent, 'cat /etc/mark mark 2>&1 | grep -c "No such file"')).stdout).toBe('2\n');
    // Fork sessions hold the snapshot: listed as live forks.
    const listed = (await tb.get('/snapshots')).json as { snapshots: { snapshot_id: string; live_forks: string[] }[] };
    expect(listed.snapshots.find((s) => s.snapshot_id === snapshot.snapshot_id)?.live_forks.sort()).toEqual([...ids].sort());
    for (const id of [parent, ...ids]) await tb.release(id);
    await tb.waitAllAvailable();
    // Every slot's next lease sees the image alone: nothing of any fork or of the snapshot.
    const next = await Promise.all(Array.from({ length: tb.total }, () => tb.acquire()));
    for (const id of next) expect((await tb.exec(id, 'ls /root/repo /etc/mark /etc/app.d 2>&1 | grep -c "No such file"; ls; echo $plain')).stdout).toBe('3\n\n');
    for (const id of next) await tb.release(id);
  });

  it('refuses bad input with clear 4xx and leaves nothing behind', async () => {
    const parent = await tb.acquire();
    const ghost = await tb.post('/session/acquire', { snapshot: 'snap-0000000000000000' });
    expect(ghost.status).toBe(404);
    expect((ghost.json as { code: string }).code).toBe('snapshot_not_found');
    for (const body of [{ snapshot: 'nope' }, { snapshot: 7 }, { snapshot: 'snap-0000000000000000', files: { 'a.txt': 'eA==' } }, { snapshot: 'snap-0000000000000000', startup_commands: ['true'] }]) {
      const r = await tb.post('/session/acquire', body);
      expect(r.status).toBe(400);
    }
    const snapshotId = ((await tb.post(`/session/${parent}/snapshot`)).json as { snapshot_id: string }).snapshot_id;
    expect((await tb.post('/session/acquire', { snapshot: snapshotId, pool: 'nosuchpool' })).status).toBe(400);
    const otherPool = await tb.post('/session/acquire', { snapshot: snapshotId, pool: 'other' });
    expect(otherPool.status).toBe(400);
    expect((otherPool.json as { code: string }).code).toBe('snapshot_other_pool');
    // And a snapshot of the other pool's session starts in that pool.
    const otherParent = await tb.acquire({ pool: 'other' });
    await tb.exec(otherParent, 'echo theirs >/etc/theirs');
    const theirs = ((await tb.post(`/session/${otherParent}/snapshot`)).json as { snapshot_id: string; pool: string });
    expect(theirs.pool).toBe('other');
    await tb.release(otherParent);
    const inOther = await tb.acquire({ snapshot: theirs.snapshot_id });
    expect((await tb.exec(inOther, 'cat /etc/theirs')).stdout).toBe('theirs\n');
    expect(tb.broker.pools.pool('other').knows(inOther)).toBe(true);
    await tb.release(inOther);
    for (const body of [{}, { n: 0 }, { n: 'x' }, { n: 2, extra: true }]) expect((await tb.post(`/session/${parent}/fork`, body)).status).toBe(400);
    // More forks than the pool holds: 400 at once (acquire_group's rule), and its snapshot is gone with it.
    const ids = async (): Promise<string[]> => ((await tb.get('/snapshots')).json as { snapshots: { snapshot_id: string }[] }).snapshots.map((s) => s.snapshot_id);
    const before = await ids();
    const tooMany = await tb.post(`/session/${parent}/fork`, { n: tb.total + 1 });
    expect(tooMany.status).toBe(400);
    expect(await ids()).toEqual(before);
    await tb.release(parent);
  });
});
