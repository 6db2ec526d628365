/**
 * The workspace API as an agent uses it, step by step, from Python aiohttp (test/python/workspace_agent.py):
 * execute with partial output, the WebSocket stream to the exit event, the logs, the files.
 * Without a python that imports aiohttp the suite fails under CI and is skipped loudly elsewhere.
 */
import path from 'node:path';
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { findPython, runPythonClient } from '../helpers/python';

const SCRIPT = path.join(__dirname, '..', 'python', 'workspace_agent.py');
const RUN_TIMEOUT_MS = 90_000;
const { python, tried } = findPython();

if (python) {
  describe(`workspace agent guidance from python aiohttp (${python})`, () => {
    let tb: TestBroker;
    beforeAll(async () => {
      tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1' });
    }, 120_000);
    afterAll(async () => {
      await tb?.close();
    }, 60_000);

    it(
      'follows the Agent Guidance',
      async () => {
        const r = await runPythonClient(python, SCRIPT, tb.url, RUN_TIMEOUT_MS);
        if (r.code !== 0 || !r.output.includes('all checks passed')) throw new Error(`workspace_agent.py exited ${r.code}; its output:\n${r.output}`);
      },
      RUN_TIMEOUT_MS + 30_000,
    );
  });
} else if (process.env.CI && process.env.CI !== 'false') {
  describe('workspace agent guidance from python aiohttp', () => {
    it('needs a python3 with aiohttp', () => {
      throw new Error(`CI must run this suite; tried ${tried.join('; ')}`);
    });
  });
} else {
  describe('workspace agent guidance from python aiohttp -- SKIPPED: no python with aiohttp', () => {
    it('warns that the suite did not run', () => console.warn(`workspacePython.test.ts SKIPPED; tried ${tried.join('; ')}`));
  });
}
