/**
 * Per-lease filesystem isolation (src/backends/docker/isolation/): a lease's writes anywhere are its
 * own. Lease 2 of a slot sees the image as it is, whatever lease 1 wrote, edited, deleted or lowered;
 * two sessions of one container never see each other's writes; a session's private disk is capped
 * (ENOSPC, and its neighbours go on); the usual ways out of a mount namespace fail.
 * The image is bash-broker-test (busybox with util-linux's setpriv): /etc/passwd and /bin/busybox
 * are files it ships, /usr/local/bin a directory it ships empty, /bin one it ships with content.
 * One container of one session pins lease 2 to lease 1's slot; no timing is asserted.
 */
import Dockerode from 'dockerode';
import { startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { removeLabelledContainers } from '../helpers/dockerFaults';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();

/** Lease 1's writes: every place a later lease or a sibling could find them. */
const WRITES = [
  'echo mine >/tmp/x',
  'echo mine >$HOME/x',
  'echo mine >/etc/x',
  'echo mine >/usr/local/bin/x',
  'mkdir -p /opt && echo mine >/opt/x',
  'echo mine >/dev/shm/x',
  'echo mine >/var/tmp/x',
  'echo mine >/bin/x',
  'echo "intruder:x:0:0::/:/bin/sh" >>/etc/passwd',
  'cp /etc/group /etc/group.bak && rm /etc/group',
].join(' && ');
/** What the next lease (or a sibling) sees of those places: the image's own content. */
const LOOK = 'for f in /tmp/x $HOME/x /etc/x /usr/local/bin/x /opt/x /dev/shm/x /var/tmp/x /bin/x /etc/group.bak; do [ -e $f ] && echo "found $f"; done; grep -c intruder /etc/passwd; [ -f /etc/group ] && echo group-kept; ulimit -n';

describeDocker('docker per-lease filesystem isolation', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`isolation-${process.pid}`);

  afterAll(async () => {
    await tb?.close().catch(() => undefined);
    await removeLabelledContainers(docker, deployment);
  });

  it('lease 2 of a slot sees the image, none of lease 1 (files anywhere, edits, deletions, ulimit)', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1' }));
    await b.waitAllAvailable(LONG);
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
});
