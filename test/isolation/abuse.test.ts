/**
 * Commands a model may dream up, run in a Docker-backend session (the cases live in
 * test/helpers/abuseCases.ts, shared with the confined local suite): each either works as it would
 * in a terminal, or ends in a clear error (410 with a detail, or a Failed result) with the slot
 * rebuilt — and never touches another session. A neighbour lease in the SAME container holds state
 * (a variable, an array, a cwd) through every abuse; a second neighbour in the other container does
 * too. Only `kill -9 -1` may (and does) take the same-container neighbour with it: that is what it
 * means in a shared container, so for it only the other container's neighbour and the pool's
 * recovery are asserted. No timing assertions beyond each execute's own timeout.
 * @backend docker
 */
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { sessionIsolation } from '../helpers/dockerSuite';
import { abuseContext, defineCommonAbuseCases, defineDiskFillerCase, defineKillAllCase } from '../helpers/abuseCases';

jest.setTimeout(240_000);
const d = testBackend === 'docker' ? describe : describe.skip;

const TMP_MIB = 32;

d(`abusive commands (docker backend, pids 128, memory 256m, /tmp ${TMP_MIB}m)`, () => {
  let tb: TestBroker;
  // A container's hostname is its short id.
  const ctx = abuseContext(() => tb, { containerCommand: 'echo $HOSTNAME' });

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_CONTAINER_PIDS_LIMIT: '128',
      BROKER_CONTAINER_MEMORY: '256m',
      BROKER_CONTAINER_TMP_SIZE: `${TMP_MIB}m`,
      BROKER_HEALTH_INTERVAL: '0.5',
      BROKER_CONTAINER_PING_TIMEOUT: '2',
    });
    await ctx.setUpNeighbours();
  });

  afterAll(async () => tb?.close());

  defineCommonAbuseCases(ctx, { memoryHogCommand: 'head -c 400m /dev/zero | tail' });
  defineDiskFillerCase(ctx, TMP_MIB);
  // Last: it kills every process in container A, the same-container neighbour included.
  defineKillAllCase(ctx, sessionIsolation ? 'own-session' : 'container');
});
