/**
 * How an isolated session starts (src/backends/docker/isolation/): through the session init the
 * broker builds (one process for the whole setup), or, where it has none (no C compiler), through
 * the setup script; either way lease 2 of a slot sees none of lease 1's writes, and the session's
 * shell holds no CAP_SYS_ADMIN. The container's process list tells which way its sessions started.
 * @backend docker
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();
const CAP_SYS_ADMIN = 1n << 21n;

/** The command lines of the container's processes. */
async function commands(containerId: string): Promise<string[]> {
  const top = (await docker.getContainer(containerId).top({ ps_args: '-eo pid,args' })) as { Titles: string[]; Processes?: string[][] };
  const column = top.Titles.indexOf('COMMAND');
  return (top.Processes ?? []).map((p) => p[column]);
}

/** Lease 1 writes over the image; lease 2 of the same slot (one session per container) must not see it. */
async function leasesStayApart(b: TestBroker): Promise<void> {
  const first = await b.acquire();
  expect(await b.exec(first, 'echo mine >/etc/x && echo mine >/root/x && echo wrote')).toMatchObject({ stdout: 'wrote\n', return_code: 0 });
  const bounding = (await b.exec(first, "sed -n 's/^CapBnd:\\s*//p' /proc/self/status")).stdout.trim();
  expect(BigInt(`0x${bounding}`) & CAP_SYS_ADMIN).toBe(0n);
  await b.release(first);
  await b.waitAllAvailable(LONG);
  const second = await b.acquire();
  expect(await b.exec(second, 'for f in /etc/x /root/x; do [ -e $f ] && echo "found $f"; done; echo looked')).toMatchObject({ stdout: 'looked\n', return_code: 0 });
  await b.release(second);
}

describeDocker('docker isolated session start', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`isostart-${process.pid}`);
  const savedCc = process.env.CC;

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
    if (savedCc === undefined) delete process.env.CC;
    else process.env.CC = savedCc;
  });

  afterAll(async () => {
    await removeLabelledContainers(docker, deployment);
  });

  it('through the session init: one waiting process per session, no unshare, mount or setpriv', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1' }));
    await b.waitAllAvailable(LONG);
    const [containerId] = poolContainerIds(b);
    const running = await commands(containerId);
    expect(running.filter((c) => c.startsWith('/.bkr/session-init session '))).toHaveLength(2); // the waiter and the namespace's init
    expect(running.filter((c) => /^(unshare|setpriv|chroot) /.test(c))).toEqual([]);
    await leasesStayApart(b);
  });

  it('without a C compiler: the setup script, with the same isolation', async () => {
    // A pipes' root of its own, where no earlier build lies; and no compiler to make one.
    const fifoRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'isostart-pipes-'));
    process.env.CC = '/bin/false';
    try {
      const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1', BROKER_DOCKER_FIFO_DIR: fifoRoot }));
      await b.waitAllAvailable(LONG);
      expect((await b.get('/health')).json.isolation).toMatchObject({ enabled: true, isolated_containers: 1, unisolated_containers: 0 });
      const [containerId] = poolContainerIds(b);
      const running = await commands(containerId);
      expect(running.filter((c) => c.startsWith('unshare -m -p -i '))).toHaveLength(1);
      expect(running.filter((c) => c.startsWith('/.bkr/session-init'))).toEqual([]);
      await leasesStayApart(b);
    } finally {
      await tb?.close().catch(() => undefined);
      tb = null;
      fs.rmSync(fifoRoot, { recursive: true, force: true });
    }
  });
});
