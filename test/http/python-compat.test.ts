/**
 * Runs test/python/compat_client.py (aiohttp, written as the spec's Python examples are) against a
 * live broker. Needs a python3 that can `import aiohttp` (Debian: apt-get install python3-aiohttp).
 * Without one the suite fails under CI and is skipped loudly elsewhere.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { startTestBroker, type TestBroker } from '../helpers/broker';

const SCRIPT = path.join(__dirname, '..', 'python', 'compat_client.py');
const RUN_TIMEOUT_MS = 120_000;

/**
 * The first interpreter that can import aiohttp. $PYTHON wins; then Debian's /usr/bin/python3 (where
 * python3-aiohttp installs), since `python3` on PATH may be a pyenv or venv python that does not see
 * Debian's dist-packages; then whatever `python3` and `python` are on PATH.
 */
function findPython(): { python: string | null; tried: string[] } {
  const candidates = [process.env.PYTHON, '/usr/bin/python3', 'python3', 'python'].filter((c): c is string => !!c);
  const tried: string[] = [];
  for (const candidate of candidates) {
    const r = spawnSync(candidate, ['-c', 'import aiohttp, sys; print(sys.executable, aiohttp.__version__)'], { encoding: 'utf8', timeout: 30_000 });
    if (r.status === 0) return { python: candidate, tried };
    tried.push(`${candidate}: ${r.error ? r.error.message : r.stderr.trim().split('\n').pop() || `exit ${r.status}`}`);
  }
  return { python: null, tried };
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs the client asynchronously (the broker lives in this process: spawnSync would block it). */
function runClient(python: string, url: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [SCRIPT, url], { env: { ...process.env, PYTHONUNBUFFERED: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      output += `\n[killed: still running after ${RUN_TIMEOUT_MS} ms]\n`;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

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
      'runs the spec examples and 20 queued concurrent episodes from aiohttp',
      async () => {
        const r = await runClient(python, tb.url);
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
      console.warn(`python-compat.test.ts SKIPPED: ${missing}`);
    });
  });
}
