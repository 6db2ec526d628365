/**
 * Runs test/python/compat_client.py (aiohttp, written as the pool API's Python clients are) against a
 * live broker. Needs a python3 that can `import aiohttp` (Debian: apt-get install python3-aiohttp).
 * Without one the suite fails under CI and is skipped loudly elsewhere.
 */
import path from 'node:path';
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { findPython, runPythonClient } from '../helpers/python';

const SCRIPT = path.join(__dirname, '..', 'python', 'compat_client.py');
const RUN_TIMEOUT_MS = 120_000;

const { python, tried } = findPython();
const missing = `no python interpreter can import aiohttp (install it: apt-get install -y python3-aiohttp, or set PYTHON=/path/to/python); tried ${tried.join('; ')}`;

if (python) {
  describe(`python aiohttp client compatibility (${python})`, () => {
    let tb: TestBroker;
    beforeAll(async () => {
      tb = await startTestBroker({ BROKER_CONTAINERS: '2', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_ACQUIRE_TIMEOUT: '60' });
    }, 120_000);
    afterAll(async () => {
      await tb?.close();
    }, 60_000);

    it(
      'runs the pool API quick example and client and 20 queued concurrent episodes from aiohttp',
      async () => {
        const r = await runPythonClient(python, SCRIPT, tb.url, RUN_TIMEOUT_MS);
        if (r.code !== 0 || !r.output.includes('all checks passed')) {
          throw new Error(`compat_client.py exited with code ${r.code} (signal ${r.signal}); its output:\n${r.output}`);
        }
        expect(r.output).not.toContain('FAIL');
      },
      RUN_TIMEOUT_MS + 30_000,
    );
  });
} else if (process.env.CI && process.env.CI !== 'false') {
  describe('python aiohttp client compatibility', () => {
    it('needs a python3 with aiohttp', () => {
      throw new Error(`CI must run this suite: ${missing}`);
    });
  });
} else {
  describe('python aiohttp client compatibility -- SKIPPED: no python with aiohttp', () => {
    it('warns that the suite did not run', () => {
      console.warn(`pythonCompat.test.ts SKIPPED: ${missing}`);
    });
  });
}
