/**
 * Per-lease isolation and the file routes: a session that swaps a component of a path for a symlink
 * between a route's check and its use must not reach its container's own files, which every other
 * session of the container sees under its own view. The session swaps `d` between a directory and a
 * link to /etc, over and over, while execd's upload writes `d/<name>` again and again; afterwards
 * the container's own /etc and a neighbour lease hold none of those files. Without the routes running
 * in the session's view (isolation/sessionView.ts), an upload checked while `d` was a directory and
 * written once it was the link lands in the container's /etc. The race is a race: the swaps are
 * counted, so the loop is known to have run throughout; no timing is asserted.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { execIn, poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';
import { sdkExecd } from '../helpers/execdSdk';

const LONG = 120_000;
const UPLOADS = 80;
jest.setTimeout(300_000);
const docker = new Dockerode();
const DEPLOYMENT = testDeployment(`iso-race-${process.pid}`);
const SWAP = '(n=0; while :; do rm -rf d; mkdir d; sleep 0.02; rm -rf d; ln -s /etc d; sleep 0.02; n=$((n+1)); echo $n >swaps.new; mv swaps.new swaps; done) >/dev/null 2>&1 &';

describeDocker('docker per-lease isolation: the file routes cannot be raced out of the session view', () => {
  let tb: TestBroker | null = null;
  afterAll(async () => {
    await tb?.close();
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it('a directory swapped for a link to /etc while uploads write through it: nothing lands in the container /etc', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: DEPLOYMENT, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1' }));
    await b.waitAllAvailable(LONG);
    const [containerId] = poolContainerIds(b);
    const racer = await b.acquire();
    const home = (await b.exec(racer, 'pwd')).stdout.trim();
    const files = sdkExecd(b.url, racer).files;
    const swaps = async (): Promise<number> => Number((await b.exec(racer, 'cat swaps 2>/dev/null || echo 0')).stdout.trim());
    expect((await b.exec(racer, `${SWAP} echo started`)).stdout).toBe('started\n');
    const before = await swaps();
    let written = 0;
    for (let i = 0; i < UPLOADS; i++) {
      written += await files.writeFiles([{ path: `${home}/d/race-${i}`, data: 'escaped\n' }]).then(
        () => 1,
        () => 0, // 403 while `d` was the link: refused, as it should be
      );
    }
    // The loop ran throughout, and some uploads went through `d` as a directory.
    expect(await swaps()).toBeGreaterThan(before);
    expect(written).toBeGreaterThan(0);
    const own = await execIn(docker, containerId, ['sh', '-c', 'ls /etc | grep -c "^race-" || true']);
    expect(own.out.trim()).toBe('0');
    const neighbour = await b.acquire();
    expect(await b.exec(neighbour, 'ls /etc | grep -c "^race-" || true')).toMatchObject({ stdout: '0\n' });
    await b.release(neighbour);
    await b.release(racer);
  });
});
