/**
 * Reuse of an untouched isolated session in place (isolation/sessionReuse.c, DockerShell.recycle):
 * a lease that changed nothing in its view leaves its slot's shell to the next lease (same bash
 * process, same namespaces, the next lease's working directory bound in instead); a lease that
 * wrote anywhere, or changed what survives an exec (limits, priorities, IPC objects), leaves a new
 * shell in new namespaces where rewinds are off (BROKER_SESSION_REWIND=0; with them on, such a
 * lease is rewound in place: isolationRewind.test.ts). Lease 2 always sees the image as it is and
 * none of lease 1.
 *
 * Which path a release took is observed, never timed: a reused shell keeps its pid in the container
 * (BROKER_SHELL_PID), a new one has another, and broker_shell_recycles_total counts in_place.
 * One container of one session pins lease 2 to lease 1's slot. The image is bash-broker-test
 * (busybox with util-linux's setpriv).
 * @backend docker
 */
import Dockerode from 'dockerode';
import { b64, eventually, metricValue, startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { removeLabelledContainers } from '../helpers/dockerFaults';
import { sdkExecd } from '../helpers/execdSdk';
import { COUNT_PROCESSES, ESCAPE_ATTEMPTS, IMAGE_WRITES, IMAGE_WRITES_LEAVE } from './isolationProbes';
import { buildIpcMakers } from './ipcMakers';

const LONG = 120_000;
/** The cases of a lease that wrote: without rewinds (isolationRewind.test.ts), such a lease leaves a new shell. */
const NO_REWIND = { BROKER_SESSION_REWIND: '0' };
jest.setTimeout(300_000);
const docker = new Dockerode();

/** What a lease prints of itself: its bash's pid in the container, its cwd, the view's /tmp/s and its working directory's files. */
const WHO = 'echo "$BROKER_SHELL_PID"; pwd; ls /tmp/s; echo --; ls';

interface Seen {
  pid: string;
  cwd: string;
  workdirs: string[];
  files: string[];
}

function parseWho(stdout: string): Seen {
  const [pid, cwd, ...rest] = stdout.trim().split('\n');
  const split = rest.indexOf('--');
  return { pid, cwd, workdirs: rest.slice(0, split), files: rest.slice(split + 1) };
}

/** The slot's one lease: its id and what it sees of itself. */
async function lease(b: TestBroker, body: Record<string, unknown> = {}): Promise<{ id: string; seen: Seen }> {
  const id = await b.acquire(body);
  const r = await b.exec(id, WHO);
  expect(r.return_code).toBe(0);
  return { id, seen: parseWho(r.stdout) };
}

async function inPlace(b: TestBroker): Promise<number> {
  return metricValue(await b.metrics(), 'broker_shell_recycles_total', { result: 'in_place' });
}

describeDocker('docker isolation: an untouched session reused in place', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`isolation-reuse-${process.pid}`);

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
  });

  afterAll(async () => {
    await removeLabelledContainers(docker, deployment);
  });

  async function onePool(env: Record<string, string> = {}): Promise<TestBroker> {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1', ...env }));
    await b.waitAllAvailable(LONG);
    return b;
  }

  it('a lease that wrote nothing leaves its shell to the next: same bash, cwd /tmp/s/<new id> with its files, the old directory gone from the view', async () => {
    const b = await onePool();
    const first = await lease(b, { files: { 'one.txt': b64('1') } });
    expect(first.seen).toEqual({ pid: expect.stringMatching(/^\d+$/), cwd: `/tmp/s/${first.id}`, workdirs: [first.id], files: ['one.txt'] });
    // Reads, a pipe, a command that fails, a variable: nothing of the view changes.
    expect((await b.exec(first.id, 'cat /etc/passwd | wc -l >/dev/null; ls /nope 2>/dev/null; X=1; echo $X')).stdout).toBe('1\n');
    const before = await inPlace(b);
    await b.release(first.id);
    await b.waitAllAvailable(LONG);
    const second = await lease(b, { files: { 'two.txt': b64('2') } });
    expect(second.id).not.toBe(first.id);
    expect(second.seen).toEqual({ pid: first.seen.pid, cwd: `/tmp/s/${second.id}`, workdirs: [second.id], files: ['two.txt'] });
    expect(await inPlace(b)).toBe(before + 1);
    // A fresh bash all the same: lease 1's variable is gone; its directory is not reachable.
    expect((await b.exec(second.id, `echo "[$X]"; [ -e /tmp/s/${first.id} ] && echo old-seen; cat two.txt`)).stdout).toBe('[]\n2');
    await b.release(second.id);
    await b.waitAllAvailable(LONG);
    // And again: the reused view's baseline was taken after the move.
    const third = await lease(b);
    expect(third.seen).toEqual({ pid: first.seen.pid, cwd: `/tmp/s/${third.id}`, workdirs: [third.id], files: [] });
    await b.release(third.id);
  });

  /**
   * What a lease sees of its bash and its IPC namespace: limits, priorities, affinity, and IPC
   * objects (the System V tables' lines beyond their headers, the message queues).
   */
  const STATE = [
    'ulimit -n',
    "cut -d' ' -f19 /proc/$$/stat",
    'taskset -p $$ | sed "s/.*: //"',
    'ionice -p $$',
    'cat /proc/$$/oom_score_adj /proc/$$/coredump_filter',
    'for t in shm sem msg; do echo "$t $(($(wc -l </proc/sysvipc/$t) - 1))"; done',
    'echo "mqueue $(ls /dev/mqueue | wc -l)"',
  ].join('; ');

  it('a lease that wrote nothing but changed what survives an exec (ulimit, nice, affinity, I/O priority, OOM score, core filter, IPC objects) leaves a new shell', async () => {
    const b = await onePool(NO_REWIND);
    const makers = buildIpcMakers();
    const probes = [
      'ulimit -n 64',
      'renice -n 7 -p $$ >/dev/null',
      'taskset -p 1 $$ >/dev/null',
      'ionice -c 3 -p $$',
      'echo 500 >/proc/$$/oom_score_adj',
      'echo 0 >/proc/$$/coredump_filter',
      'chmod +x mk-shm && ./mk-shm',
      'chmod +x mk-sem && ./mk-sem',
      'chmod +x mk-msg && ./mk-msg',
      // A POSIX message queue: a file of the session's own mqueue filesystem.
      ': >/dev/mqueue/q',
    ];
    let current = await lease(b);
    const pristine = await b.exec(current.id, STATE);
    expect(pristine.stdout).toMatch(/shm 0\nsem 0\nmsg 0\nmqueue 0\n$/);
    for (const probe of probes) {
      const changed = await b.exec(current.id, `${probe} && ${STATE}`);
      expect({ probe, code: changed.return_code }).toEqual({ probe, code: 0 });
      expect({ probe, changed: changed.stdout !== pristine.stdout }).toEqual({ probe, changed: true });
      await b.release(current.id);
      await b.waitAllAvailable(LONG);
      const next = await lease(b, { files: makers });
      // A new shell (another bash), and none of the change.
      expect({ probe, newShell: next.seen.pid !== current.seen.pid }).toEqual({ probe, newShell: true });
      expect({ probe, state: (await b.exec(next.id, STATE)).stdout }).toEqual({ probe, state: pristine.stdout });
      current = next;
    }
    await b.release(current.id);
  });

  it('a lease that wrote anywhere in its view (files, edits, deletions, a file made and removed, a chmod, a rename, a link) leaves a new shell, and the next sees the image', async () => {
    const b = await onePool(NO_REWIND);
    // The engine's /etc/hosts is each session's own copy: the container's own (which every session would see) keeps its content.
    const look = `for f in ${IMAGE_WRITES_LEAVE} /dev/full2 /dev/shm/n; do [ -e $f ] && echo "found $f"; done; grep -c intruder /etc/passwd; grep -c -e probe -e localhost /etc/hosts; ls -ld /tmp /dev/null /dev/full | cut -c1-10`;
    const writes = [
      ...IMAGE_WRITES,
      'echo "10.9.9.9 probe" >>/etc/hosts',
      // Made and removed again: the counts are back where they were, the directory's times are not.
      'echo gone >/tmp/y && rm /tmp/y',
      // Made and removed under an image directory: its copy-up stays (an empty /etc over the image's counts as a write).
      'echo gone >/etc/y && rm /etc/y',
      // Nothing made at all: attributes, a rename, a hard link (no new inode).
      'chmod 700 /tmp',
      'chmod 600 /dev/null',
      'mv /dev/full /dev/full2',
      'ln /dev/null /dev/shm/n',
    ];
    let current = await lease(b);
    const image = (await b.exec(current.id, look)).stdout;
    expect(image).toMatch(/^0\n[1-9]\d*\n/);
    for (const write of writes) {
      expect({ write, code: (await b.exec(current.id, write)).return_code }).toEqual({ write, code: 0 });
      await b.release(current.id);
      await b.waitAllAvailable(LONG);
      const next = await lease(b);
      expect({ write, newShell: next.seen.pid !== current.seen.pid }).toEqual({ write, newShell: true });
      expect({ write, seen: (await b.exec(next.id, look)).stdout }).toEqual({ write, seen: image });
      current = next;
    }
    // After all those, an untouched lease is reused again.
    const untouched = current;
    await b.release(untouched.id);
    await b.waitAllAvailable(LONG);
    current = await lease(b);
    expect(current.seen.pid).toBe(untouched.seen.pid);
    await b.release(current.id);
  });

  it('on a reused slot: execd file routes work in the new working directory, and a lease that only used them is reused again', async () => {
    const b = await onePool();
    const first = await lease(b);
    expect((await b.exec(first.id, 'echo one >w.txt && echo ok')).stdout).toBe('ok\n');
    await b.release(first.id);
    await b.waitAllAvailable(LONG);
    const second = await lease(b);
    expect(second.seen.pid).toBe(first.seen.pid);
    const files = sdkExecd(b.url, second.id).files;
    await files.writeFiles([{ path: `/tmp/s/${second.id}/up.txt`, data: 'uploaded\n' }]);
    expect((await b.exec(second.id, 'cat up.txt')).stdout).toBe('uploaded\n');
    expect((await b.exec(second.id, 'echo made >made.txt && echo ok')).stdout).toBe('ok\n');
    expect(await files.readFile(`/tmp/s/${second.id}/made.txt`)).toBe('made\n');
    // A route's process runs in the session's namespaces until its exec ends, which may be just after
    // its answer: one still there at release is the lease's as far as the init can tell (a new shell).
    await eventually(async () => (await b.exec(second.id, COUNT_PROCESSES)).stdout === '2\n', LONG, 'only the init and bash');
    await b.release(second.id);
    await b.waitAllAvailable(LONG);
    const third = await lease(b);
    expect(third.seen).toEqual({ pid: first.seen.pid, cwd: `/tmp/s/${third.id}`, workdirs: [third.id], files: [] });
    await b.release(third.id);
  });

  it('after a reuse: siblings see only their own writes, the disk cap holds, the escape attempts fail, and the next leases see the image', async () => {
    const b = await onePool({ ...NO_REWIND, BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_DISK_BYTES: '16m' });
    const firsts = [await lease(b), await lease(b)];
    for (const l of firsts) await b.release(l.id);
    await b.waitAllAvailable(LONG);
    const [victim, attacker] = [await lease(b), await lease(b)];
    // Both slots reused: the same two bash processes.
    expect([victim.seen.pid, attacker.seen.pid].sort()).toEqual(firsts.map((l) => l.seen.pid).sort());
    const paths = '/tmp/same /etc/same /root/same /dev/shm/same /bin/same';
    for (const [i, l] of [victim, attacker].entries()) {
      expect((await b.exec(l.id, `for f in ${paths}; do echo from-${i} >$f; done; echo ok`)).stdout).toBe('ok\n');
    }
    for (const [i, l] of [victim, attacker].entries()) {
      expect((await b.exec(l.id, `cat ${paths}; ${COUNT_PROCESSES}`)).stdout).toBe(`${`from-${i}\n`.repeat(5)}2\n`);
    }
    expect((await b.exec(victim.id, 'echo marker >/root/victim-only; echo ok')).stdout).toBe('ok\n');
    expect((await b.exec(attacker.id, ESCAPE_ATTEMPTS.join('\n'), 120)).stdout).toBe('checked\n');
    const full = await b.execFull(attacker.id, 'head -c 67108864 /dev/zero | cat >/root/big', 60);
    expect(full).toMatchObject({ return_code: 1, disk_full: true });
    expect((await b.exec(victim.id, '[ -e /tmp/pwned ] && echo pwned; cat /root/victim-only')).stdout).toBe('marker\n');
    for (const l of [victim, attacker]) await b.release(l.id);
    await b.waitAllAvailable(LONG);
    // Both wrote: new shells, and the image as it is.
    const nexts = [await lease(b), await lease(b)];
    for (const l of nexts) {
      expect([victim.seen.pid, attacker.seen.pid]).not.toContain(l.seen.pid);
      expect((await b.exec(l.id, `cat ${paths} /root/victim-only 2>/dev/null; [ -e /root/big ] && echo big; echo clean`)).stdout).toBe('clean\n');
    }
    for (const l of nexts) await b.release(l.id);
  });

  it("a workspace on a reused slot: its shell runs in the reused view, in the workspace's own directory, and /api/write|read work there", async () => {
    const b = await onePool();
    const first = await lease(b);
    const before = await inPlace(b);
    await b.release(first.id);
    await b.waitAllAvailable(LONG);
    expect(await inPlace(b)).toBe(before + 1);
    const run = async (command: string): Promise<string> => {
      const r = await b.post('/api/execute', { command });
      expect(r.json.returncode).toBe(0);
      return r.json.stdout as string;
    };
    const cwd = (await run('pwd')).trim();
    expect(cwd).toMatch(/^\/tmp\/s\/[0-9a-z]/);
    expect(cwd).not.toBe(first.seen.cwd);
    expect(await run('ls /tmp/s')).toBe(`${cwd.slice('/tmp/s/'.length)}\n`);
    expect((await b.post('/api/write', { filename: 'w.txt', content: 'ws\n' })).status).toBe(200);
    expect(await run('cat w.txt; echo made >m.txt')).toBe('ws\n');
    expect((await b.get('/api/read?filename=m.txt')).json).toMatchObject({ content: 'made\n' });
  });
});
