/**
 * A rewind (isolation/sessionRewind.c, DockerShell.recycle): the release of a lease that changed
 * only its view (files, IPC objects) rolls the view back to the image's in the session's own
 * namespaces, and its bash is exec'd fresh in place (same process). The next lease sees the image
 * exactly: none of the files, no process, the port free, no IPC object.
 *
 * Which path a release took is observed, never timed: a rewound shell keeps its pid in the container
 * (BROKER_SHELL_PID), a new one has another, and /health's isolation counts rewound releases.
 * One container of one session pins every lease to one slot. The image is bash-broker-test (busybox).
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { removeLabelledContainers } from '../helpers/dockerFaults';
import { sdkExecd } from '../helpers/execdSdk';
import { COUNT_PROCESSES, ESCAPE_ATTEMPTS } from './isolationProbes';
import { buildIpcMakers } from './ipcMakers';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();

/** Sockets listening (state 0A) on port 7777 (hex 1E61), IPv4 or IPv6. */
const LISTENING_7777 = "cat /proc/net/tcp /proc/net/tcp6 | grep -c ':1E61 0*:0000 0A'";

/**
 * What a lease sees of the image where the writes below go: the trees (the working directories
 * aside: each lease has its own), the content of the files edited, the processes, the port, the IPC
 * objects.
 */
const LOOK = [
  'find /etc /root /tmp /dev/shm /dev/mqueue -path /tmp/s -prune -o -print | sort | md5sum',
  'md5sum /etc/passwd /etc/group',
  COUNT_PROCESSES,
  `${LISTENING_7777} || true`,
  'for t in shm sem msg; do echo "$t $(($(wc -l </proc/sysvipc/$t) - 1))"; done',
].join('; ');

/** Writes under /etc, /tmp, /root and /dev/shm, a background process holding port 7777, and IPC objects of each kind. */
const LEASE = [
  'echo lease >/etc/x; echo lease >/tmp/x; echo lease >/root/x; echo lease >/dev/shm/x',
  'echo "intruder:x:0:0::/:/bin/sh" >>/etc/passwd; rm /etc/group; mkdir -p /root/deep/er && echo d >/root/deep/er/f',
  'chmod +x mk-shm mk-sem mk-msg && ./mk-shm && ./mk-sem && ./mk-msg && : >/dev/mqueue/q',
  '(setsid nc -l -p 7777 >/dev/null 2>&1 &) ; (sleep 1000 &)',
].join('; ');

interface Seen {
  id: string;
  pid: string;
}

async function lease(b: TestBroker, body: Record<string, unknown> = {}): Promise<Seen> {
  const id = await b.acquire(body);
  const r = await b.exec(id, 'echo "$BROKER_SHELL_PID"; pwd');
  expect(r.stdout).toBe(`${r.stdout.split('\n')[0]}\n/tmp/s/${id}\n`);
  return { id, pid: r.stdout.split('\n')[0] };
}

async function rewound(b: TestBroker): Promise<number> {
  return (await b.get('/health')).json.isolation.rewound_releases as number;
}

describeDocker('docker isolation: a writing lease rewound in place', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`isolation-rewind-${process.pid}`);
  const makers = buildIpcMakers();

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

  /** One lease that does everything LEASE does, checked to have done it; its release; the next lease. */
  async function writeAndRelease(b: TestBroker, current: Seen, image: string): Promise<Seen> {
    expect((await b.exec(current.id, LEASE)).return_code).toBe(0);
    await eventually(async () => (await b.exec(current.id, LISTENING_7777)).stdout === '1\n', 20_000, 'nc listening on 7777');
    expect((await b.exec(current.id, LOOK)).stdout).not.toBe(image);
    await b.release(current.id);
    await b.waitAllAvailable(LONG);
    return lease(b, { files: makers });
  }

  it('after files under /etc, /tmp, /root, a background process, a bound port and IPC objects: the same bash, the image exactly, twice, then an untouched reuse', async () => {
    const b = await onePool();
    let current = await lease(b, { files: makers });
    const image = (await b.exec(current.id, LOOK)).stdout;
    expect(image).toMatch(/\n2\n0\nshm 0\nsem 0\nmsg 0\n$/);
    const first = current.pid;
    for (let round = 1; round <= 2; round++) {
      const before = await rewound(b);
      current = await writeAndRelease(b, current, image);
      expect({ round, pid: current.pid, rewound: await rewound(b) }).toEqual({ round, pid: first, rewound: before + 1 });
      expect({ round, seen: (await b.exec(current.id, LOOK)).stdout }).toEqual({ round, seen: image });
      // The fresh view takes writes where the last one had copied directories up, and the port binds again.
      expect((await b.exec(current.id, 'echo again >/etc/x && cat /etc/x && rm /etc/x; (nc -l -p 7777 >/dev/null 2>&1 & p=$!; sleep 0.2; kill $p) && echo bound')).stdout).toBe('again\nbound\n');
    }
    // Nothing of the rewind's machinery is reachable from the fresh view (its launcher, the last view), and no way out works.
    expect((await b.exec(current.id, `(\n${ESCAPE_ATTEMPTS.join('\n')}\n)`, 120)).stdout).toBe('checked\n');
    // The file routes enter the session's namespaces: they see the fresh view too.
    const files = sdkExecd(b.url, current.id).files;
    await files.writeFiles([{ path: `/tmp/s/${current.id}/up.txt`, data: 'uploaded\n' }]);
    expect((await b.exec(current.id, 'cat up.txt; ls /tmp/s')).stdout).toBe(`uploaded\n${current.id}\n`);
    // That lease wrote (/etc/x, made and removed): rewound. The next only reads: reused in place as before, no rewind.
    const before = await rewound(b);
    await b.release(current.id);
    await b.waitAllAvailable(LONG);
    const reader = await lease(b);
    expect({ pid: reader.pid, rewound: await rewound(b) }).toEqual({ pid: first, rewound: before + 1 });
    expect((await b.exec(reader.id, 'cat /etc/passwd >/dev/null; ls /root /tmp >/dev/null; echo read')).stdout).toBe('read\n');
    await eventually(async () => (await b.exec(reader.id, COUNT_PROCESSES)).stdout === '2\n', LONG, 'only the init and bash');
    await b.release(reader.id);
    await b.waitAllAvailable(LONG);
    const untouched = await lease(b);
    expect({ pid: untouched.pid, rewound: await rewound(b) }).toEqual({ pid: first, rewound: before + 1 });
    await b.release(untouched.id);
  });

  it('with BROKER_SESSION_REWIND=0 a writing lease leaves a new shell, and the next sees the image all the same', async () => {
    const b = await onePool({ BROKER_SESSION_REWIND: '0' });
    const current = await lease(b, { files: makers });
    const image = (await b.exec(current.id, LOOK)).stdout;
    const next = await writeAndRelease(b, current, image);
    expect(next.pid).not.toBe(current.pid);
    expect(await rewound(b)).toBe(0);
    expect((await b.exec(next.id, LOOK)).stdout).toBe(image);
    await b.release(next.id);
  });

  it('a lease that wrote and changed what survives an exec (a limit) is not rewound: a new shell, and the image', async () => {
    const b = await onePool();
    const current = await lease(b);
    expect((await b.exec(current.id, 'echo x >/etc/x; ulimit -n 64; echo ok')).stdout).toBe('ok\n');
    await b.release(current.id);
    await b.waitAllAvailable(LONG);
    const next = await lease(b);
    expect(next.pid).not.toBe(current.pid);
    expect((await b.exec(next.id, '[ -e /etc/x ] && echo seen; ulimit -n')).stdout).not.toMatch(/seen|^64$/);
    await b.release(next.id);
  });
});
