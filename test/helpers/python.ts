/**
 * Running the Python aiohttp clients (test/python/) against a live broker: finding an interpreter
 * that can import aiohttp, and running a script without blocking the broker in this process.
 */
import { spawn, spawnSync } from 'node:child_process';

/**
 * The first interpreter that can import aiohttp. $PYTHON wins; then Debian's /usr/bin/python3 (where
 * python3-aiohttp installs), since `python3` on PATH may be a pyenv or venv python that does not see
 * Debian's dist-packages; then whatever `python3` and `python` are on PATH.
 */
export function findPython(): { python: string | null; tried: string[] } {
  const candidates = [process.env.PYTHON, '/usr/bin/python3', 'python3', 'python'].filter((c): c is string => !!c);
  const tried: string[] = [];
  for (const candidate of candidates) {
    const r = spawnSync(candidate, ['-c', 'import aiohttp, sys; print(sys.executable, aiohttp.__version__)'], { encoding: 'utf8', timeout: 30_000 });
    if (r.status === 0) return { python: candidate, tried };
    tried.push(`${candidate}: ${r.error ? r.error.message : r.stderr.trim().split('\n').pop() || `exit ${r.status}`}`);
  }
  return { python: null, tried };
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs `script url` asynchronously (the broker lives in this process: spawnSync would block it). */
export function runPythonClient(python: string, script: string, url: string, timeoutMs: number): Promise<RunResult> {
  return runPython(python, [script, url], timeoutMs);
}

/** Runs `python args...` asynchronously, output collected, killed after `timeoutMs`. */
export function runPython(python: string, args: string[], timeoutMs: number, options: { cwd?: string; env?: Record<string, string> } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env, PYTHONUNBUFFERED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      output += `\n[killed: still running after ${timeoutMs} ms]\n`;
      child.kill('SIGKILL');
    }, timeoutMs);
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
