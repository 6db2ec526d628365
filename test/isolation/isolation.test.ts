/**
 * Per-lease filesystem isolation (src/backends/docker/isolation/): a lease's writes anywhere are its
 * own. Lease 2 of a slot sees the image as it is, whatever lease 1 wrote, edited, deleted or lowered;
 * two sessions of one container never see each other's writes; a session's private disk is capped
 * (ENOSPC, and its neighbours go on); the usual ways out of a mount namespace fail.
 * The image is bash-broker-test (busybox with util-linux's setpriv): /etc/passwd and /bin/busybox
 * are files it ships, /usr/local/bin a directory it ships empty, /bin one it ships with content.
 * One container of one session pins lease 2 to lease 1's slot; no timing is asserted.
 * @backend docker
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { eventually, startTestBroker, type Health, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { BrokerProcess } from '../../devtools/brokerProcess';
import { execIn, labelledContainers, poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';
import { COUNT_PROCESSES, ESCAPE_ATTEMPTS, IMAGE_WRITES, IMAGE_WRITES_LEAVE } from './isolationProbes';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();

/** Lease 1's writes: every place a later lease or a sibling could find them. */
const WRITES = IMAGE_WRITES.join(' && ');
/** What the next lease (or a sibling) sees of those places: the image's own content. */
const LOOK = `for f in ${IMAGE_WRITES_LEAVE}; do [ -e $f ] && echo "found $f"; done; grep -c intruder /etc/passwd; [ -f /etc/group ] && echo group-kept; ulimit -n`;

/** Host processes whose mount table holds a session's tmpfs or overlay (isolationScript.ts names them). */
/**
 * Host processes of the containers `containerIds` whose mount table holds a session's tmpfs or
 * overlay: what a dead broker's sessions would leave. Only those containers' processes count
 * (their cgroup paths name them): other brokers on the machine may run isolated sessions meanwhile.
 */
function hostProcessesWithSessionMounts(containerIds: string[]): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cgroups = fs.readFileSync(path.join('/proc', entry, 'cgroup'), 'latin1');
      if (!containerIds.some((id) => cgroups.includes(id))) continue;
      const table = fs.readFileSync(path.join('/proc', entry, 'mountinfo'), 'latin1');
      if (/ - (tmpfs bkr-session|overlay bkr-root) /.test(table)) found.push(Number(entry));
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return found;
}

describeDocker('docker per-lease filesystem isolation', () => {
  let tb: TestBroker | null = null;
  let child: BrokerProcess | null = null;
  const deployment = testDeployment(`isolation-${process.pid}`);

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
    await child?.signal('SIGKILL');
    child = null;
  });

  afterAll(async () => {
    await removeLabelledContainers(docker, deployment);
  });

  it('lease 2 of a slot sees the image, none of lease 1 (files anywhere, edits, deletions, ulimit)', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1' }));
    await b.waitAllAvailable(LONG);
    // Said in /health: every container isolates.
    expect((await b.get('/health')).json.isolation).toMatchObject({ enabled: true, isolated_containers: 1, unisolated_containers: 0, refusal: null });
    const first = await b.acquire();
    const before = await b.exec(first, LOOK);
    expect(before).toMatchObject({ stdout: expect.stringMatching(/^0\ngroup-kept\n\d+\n$/), return_code: 0 });
    const openFiles = before.stdout.trim().split('\n').pop();
    const wrote = await b.exec(first, `${WRITES} && ulimit -n 64 && echo wrote`);
    expect(wrote).toMatchObject({ stdout: 'wrote\n', return_code: 0 });
    expect((await b.exec(first, LOOK)).stdout).toContain('found /etc/x');
    await b.release(first);
    await b.waitAllAvailable(LONG);
    const second = await b.acquire();
    expect(await b.exec(second, LOOK)).toMatchObject({ stdout: `0\ngroup-kept\n${openFiles}\n`, stderr: '', return_code: 0 });
    await b.release(second);
  });

  it("siblings at once: two sessions of one container (one group acquire) writing the same paths each see only their own", async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1' }));
    await b.waitAllAvailable(LONG);
    // A group rollout's siblings share a container: the group's files are each one's own too.
    const group = await b.post('/session/acquire_group', { n: 2, files: { 'g.txt': Buffer.from('g').toString('base64') } });
    expect(group.status).toBe(200);
    const ids = (group.json.sessions as { session_id: string }[]).map((s) => s.session_id);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect((await b.exec(id, 'cat g.txt')).stdout).toBe('g');
    const paths = '/tmp/same /etc/same /root/same /dev/shm/same /var/tmp/same /bin/same';
    for (const [i, id] of ids.entries()) {
      expect(await b.exec(id, `for f in ${paths}; do echo from-${i} >$f; done; echo from-${i} >>/etc/passwd; echo ok`)).toMatchObject({ stdout: 'ok\n', return_code: 0 });
    }
    for (const [i, id] of ids.entries()) {
      const seen = await b.exec(id, `cat ${paths}; grep -c from- /etc/passwd; ${COUNT_PROCESSES}`);
      // Its own six files, one line of its own in /etc/passwd, and only its own processes (its init and bash).
      expect(seen.stdout).toBe(`${`from-${i}\n`.repeat(6)}1\n2\n`);
    }
    for (const id of ids) await b.release(id);
  });

  it('a full private disk: ENOSPC for that session (and disk_full in its facts), its sibling goes on', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1', BROKER_SESSION_DISK_BYTES: '16m' }));
    await b.waitAllAvailable(LONG);
    const [filler, sibling] = [await b.acquire(), await b.acquire()];
    const full = await b.execFull(filler, 'head -c 67108864 /dev/zero | cat >/root/big', 60);
    expect(full).toMatchObject({ status: 'Failed', return_code: 1, disk_full: true });
    expect(full.stderr).toMatch(/No space left on device/);
    // /dev/shm is within the same size; the session itself goes on.
    expect((await b.exec(filler, 'echo x >/dev/shm/more || echo refused; X=1; echo after $X')).stdout).toMatch(/refused\nafter 1\n$/);
    const fine = await b.execFull(sibling, 'head -c 8388608 /dev/zero | cat >/root/eight && wc -c </root/eight', 60);
    expect(fine).toMatchObject({ stdout: '8388608\n', return_code: 0, disk_full: false });
    await b.release(filler);
    await b.release(sibling);
    // The slot's next lease has its whole disk again.
    await b.waitAllAvailable(LONG);
    const next = await b.acquire();
    expect(await b.exec(next, '[ -e /root/big ] && echo left; head -c 8388608 /dev/zero | cat >/root/again && echo wrote')).toMatchObject({ stdout: 'wrote\n', return_code: 0 });
    await b.release(next);
  });

  it('escape attempts fail: umount, mount, chroot .., nsenter, /proc/<pid>/root of its init and of a sibling', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1' }));
    await b.waitAllAvailable(LONG);
    const [attacker, victim] = [await b.acquire(), await b.acquire()];
    const [containerId] = poolContainerIds(b);
    // A file only the victim has: the attacker looks for it through every pid it can name.
    expect((await b.exec(victim, 'echo marker >/root/victim-only; echo ok')).stdout).toBe('ok\n');
    const r = await b.exec(attacker, ESCAPE_ATTEMPTS.join('\n'), 120);
    expect(r.stdout).toBe('checked\n');
    // The capability is gone from the bounding set: nothing the session starts can have it back.
    const bounding = (await b.exec(attacker, "sed -n 's/^CapBnd:\\s*//p' /proc/self/status")).stdout.trim();
    expect(BigInt(`0x${bounding}`) & (1n << 21n)).toBe(0n);
    // The files /proc hides are binds of the session's own /dev/null (so a chmod of them changes that
    // too): it reaches neither a sibling's nodes nor the container's.
    const modes = (session: string): Promise<string> => b.exec(session, 'ls -lL /dev/null /proc/keys /proc/timer_list 2>/dev/null | cut -c1-10 | sort -u').then((x) => x.stdout);
    await b.exec(attacker, 'chmod 600 /proc/keys /proc/timer_list 2>/dev/null; true');
    expect(await modes(attacker)).toBe('crw-------\n');
    expect(await modes(victim)).toBe('crw-rw-rw-\n');
    // Nothing reached the victim, nor the container's own filesystem.
    expect((await b.exec(victim, '[ -e /tmp/pwned ] && echo pwned; cat /root/victim-only')).stdout).toBe('marker\n');
    // Demultiplexed (execIn): each write of the container's output may come in a frame of its own, its
    // header between two lines, as it did on a busy machine.
    const { out } = await execIn(docker, containerId, ['sh', '-c', '[ -e /tmp/pwned ] && echo pwned; [ -e /root/victim-only ] && echo leaked; ls -l /dev/null | cut -c1-10; echo checked']);
    expect(out).toContain('crw-rw-rw-\nchecked');
    expect(out).not.toMatch(/pwned|leaked/);
    await b.release(attacker);
    await b.release(victim);
  });

  it('a broker SIGKILLed with live sessions: the next one sweeps, and no session mount or upper layer is left', async () => {
    const env = {
      BROKER_BACKEND: 'docker',
      BROKER_IMAGE: process.env.BROKER_IMAGE ?? 'bash-broker-test:latest',
      BROKER_DEPLOYMENT: deployment,
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '2',
      BROKER_SESSION_ISOLATION: '1',
      HOST: '127.0.0.1',
      PORT: '0',
    };
    const proc = (child = await BrokerProcess.start('broker A', env));
    const base = proc.url;
    await eventually(
      async () => {
        try {
          const h = JSON.parse(await (await request(`${base}/health`)).body.text()) as Health;
          return h.status === 'healthy' && h.available_sessions === 2;
        } catch {
          return false;
        }
      },
      LONG,
      'broker A healthy',
    );
    for (let i = 0; i < 2; i++) {
      const acquired = await request(`${base}/session/acquire`, { method: 'POST', body: '{}' });
      const { session_id: id } = (await acquired.body.json()) as { session_id: string };
      const wrote = await request(`${base}/session/${id}/execute`, { method: 'POST', body: JSON.stringify({ command: 'echo left >/etc/left; sleep 3600 &' }) });
      expect(wrote.statusCode).toBe(200);
      await wrote.body.text();
    }
    const containersOfA = (await labelledContainers(docker, deployment)).map((c) => c.Id);
    expect(containersOfA).toHaveLength(1);
    expect(hostProcessesWithSessionMounts(containersOfA).length).toBeGreaterThan(0);
    await proc.signal('SIGKILL');
    expect((await labelledContainers(docker, deployment)).length).toBe(1);
    // The next broker of the deployment (isolation off: none of its own) sweeps what A left.
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '0' }));
    await b.waitAllAvailable(LONG);
    const containersOfB = (await labelledContainers(docker, deployment)).map((c) => c.Id);
    expect(hostProcessesWithSessionMounts([...containersOfA, ...containersOfB])).toEqual([]);
    const id = await b.acquire();
    expect((await b.exec(id, '[ -e /etc/left ] && echo left; echo clean')).stdout).toBe('clean\n');
    await b.release(id);
  });
});
