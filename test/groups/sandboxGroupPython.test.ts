/**
 * The sandbox group's steps from a Python aiohttp client (test/python/sandbox_group_client.py),
 * then the same check as the TypeScript suite that the stop left no container, mount or process.
 * Without a python that imports aiohttp, or without root (loop-mounted disks), the suite fails under
 * CI and is skipped loudly elsewhere.
 * @backend docker
 */
import path from 'node:path';
import Dockerode from 'dockerode';
import { startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { findPython, runPythonClient } from '../helpers/python';
import { groupBrokerEnv, groupDirOf, makeGroupFixtures, type GroupFixtures } from '../helpers/groupFixtures';
import { mountsUnder } from '../../devtools/groupClient';

const SCRIPT = path.join(__dirname, '..', 'python', 'sandbox_group_client.py');
const RUN_TIMEOUT_MS = 150_000;
const { python, tried } = findPython();
const root = process.getuid?.() === 0;
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';
const missing = !python ? `no python with aiohttp (tried ${tried.join('; ')})` : !root ? 'not root (sandbox disks are loop-mounted)' : null;

if (!missing || ci) {
  describe(`a sandbox group from python aiohttp (${python})`, () => {
    let tb: TestBroker;
    let fx: GroupFixtures;
    const deployment = testDeployment(`pygroups-${process.pid}`);
    beforeAll(async () => {
      if (missing) throw new Error(`CI must run this suite: ${missing}`);
      fx = makeGroupFixtures('bkr-groups-python');
      tb = await startTestBroker(groupBrokerEnv(fx, deployment, { BROKER_ACTION_WAIT: '1' }));
    }, 120_000);
    afterAll(async () => {
      await tb?.post('/group/stop').catch(() => undefined);
      await tb?.close();
      fx?.remove();
    }, 60_000);

    it(
      'drives the group and leaves nothing behind',
      async () => {
        process.env.GROUP_FIXTURES_DIR = fx.dir; // the client's environment is this process's
        const r = await runPythonClient(python!, SCRIPT, tb.url, RUN_TIMEOUT_MS);
        if (r.code !== 0 || !r.output.includes('all checks passed')) throw new Error(`sandbox_group_client.py exited ${r.code}; its output:\n${r.output}`);
        const left = await new Dockerode().listContainers({ all: true, filters: { label: [`io.bash-broker.deployment=${deployment}`, 'io.bash-broker.kind=group'] } });
        expect(left).toEqual([]);
        expect(mountsUnder(groupDirOf(fx))).toEqual([]);
      },
      RUN_TIMEOUT_MS + 30_000,
    );
  });
} else {
  describe(`a sandbox group from python aiohttp -- SKIPPED: ${missing}`, () => {
    it.skip(`needs ${missing}`, () => undefined);
  });
}
