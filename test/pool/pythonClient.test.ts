/**
 * The Python client package (clients/python) against a live broker on this project's backend: its
 * pytest suite (tests/, 64 concurrent episodes among them) in a virtualenv made from pip's configured
 * index by scripts/python-client-venv.sh; on the local project, `mypy --strict` over the package too.
 * The broker has a token and a short acquire timeout, so 401 and 503 (and the client's retries) are real.
 * Without a virtualenv (no python3 venv, no index) the suite fails under CI and is skipped loudly elsewhere.
 */
import crypto from 'node:crypto';
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { runPython } from '../helpers/python';
import { CLIENT_DIR, clientVenvPython } from '../helpers/pythonClientVenv';

const VENV_TIMEOUT_MS = 15 * 60_000;
const PYTEST_TIMEOUT_MS = 10 * 60_000;
const ACQUIRE_TIMEOUT_S = '2';
/** The client's pytest cases (clients/python/tests) when this was written; more may come. */
const PYTEST_CASES = 22;
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';

describe(`python client package (clients/python) on ${testBackend}`, () => {
  let python: string | null = null;
  let venvError = '';
  let tb: TestBroker | null = null;
  const token = crypto.randomBytes(16).toString('hex');

  beforeAll(async () => {
    try {
      python = await clientVenvPython(VENV_TIMEOUT_MS);
    } catch (err) {
      venvError = String(err);
      if (ci) throw err;
      console.warn(`*** pythonClient.test.ts SKIPPED: no virtualenv for the client (${venvError}) ***`);
      return;
    }
    tb = await startTestBroker({
      BROKER_CONTAINERS: '4',
      BROKER_SESSIONS_PER_CONTAINER: '4',
      BROKER_ACQUIRE_TIMEOUT: ACQUIRE_TIMEOUT_S,
      BROKER_TOKEN: token,
    });
  }, VENV_TIMEOUT_MS + 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it(
    'passes its pytest suite against the broker',
    async () => {
      if (!python || !tb) return; // skipped loudly above (a failure under CI)
      const r = await runPython(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], PYTEST_TIMEOUT_MS, {
        cwd: CLIENT_DIR,
        env: { BROKER_URL: tb.url, BROKER_TOKEN: token, BROKER_ACQUIRE_TIMEOUT: ACQUIRE_TIMEOUT_S },
      });
      if (r.code !== 0) throw new Error(`pytest exited with code ${r.code} (signal ${r.signal}); its output:\n${r.output}`);
      // Every test ran (a file pytest could not collect would show as an error, not a smaller count).
      expect(Number(/\b(\d+) passed\b/.exec(r.output)?.[1])).toBeGreaterThanOrEqual(PYTEST_CASES);
      expect(r.output).not.toMatch(/\b(failed|error|skipped)\b/);
    },
    PYTEST_TIMEOUT_MS + 30_000,
  );

  // Once is enough: the package's types do not depend on the backend.
  if (testBackend === 'local') {
    it(
      'is typed: mypy --strict accepts the package (py.typed, annotated results)',
      async () => {
        if (!python) return;
        const r = await runPython(python, ['-m', 'mypy', '--strict', '--no-incremental', 'src/bash_broker'], 300_000, { cwd: CLIENT_DIR });
        if (r.code !== 0) throw new Error(`mypy --strict exited ${r.code}:\n${r.output}`);
        expect(r.output).toMatch(/Success: no issues found/);
      },
      330_000,
    );
  }
});
