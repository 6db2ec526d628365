/**
 * The virtualenv of the Python client package (clients/python), made by scripts/python-client-venv.sh
 * and remade only when the package's files change (a stamp of their hash in the venv).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { underDirLock } from '../../devtools/dirLock';

export const CLIENT_DIR = path.join(__dirname, '..', '..', 'clients', 'python');
const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'python-client-venv.sh');
/** $BROKER_PY_CLIENT_VENV, or clients/python/.venv (git-ignored). */
export const VENV = process.env.BROKER_PY_CLIENT_VENV ?? path.join(CLIENT_DIR, '.venv');
const STAMP = path.join(VENV, '.bash-broker-client-stamp');

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === '__pycache__' ? [] : filesUnder(full);
    return [full];
  });
}

/** What the venv must be remade for: the package's metadata and sources. */
function packageHash(): string {
  const hash = crypto.createHash('sha256');
  for (const file of [path.join(CLIENT_DIR, 'pyproject.toml'), path.join(CLIENT_DIR, 'README.md'), ...filesUnder(path.join(CLIENT_DIR, 'src')).sort()]) {
    hash.update(path.relative(CLIENT_DIR, file)).update('\0').update(fs.readFileSync(file));
  }
  return hash.digest('hex');
}

/** The venv's python, the package installed as it is now; throws with the script's output when it cannot be made. */
export async function clientVenvPython(timeoutMs: number): Promise<string> {
  const python = path.join(VENV, 'bin', 'python');
  const want = packageHash();
  const current = (): boolean => fs.existsSync(python) && fs.existsSync(STAMP) && fs.readFileSync(STAMP, 'utf8') === want;
  if (current()) return python;
  // Made meanwhile by the holder of the lock (the other project's suite): nothing left to do.
  // The suite runs in both projects, often at once: two scripts making one venv (one creating it while
  // the other installs into it) left a venv without pip.
  return underDirLock(VENV, timeoutMs, async () => (current() ? python : makeVenv(python, want, timeoutMs)));
}

async function makeVenv(python: string, want: string, timeoutMs: number): Promise<string> {
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, VENV], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(text);
      else reject(new Error(`scripts/python-client-venv.sh ${VENV} exited ${code}:\n${text.split('\n').filter((l) => !/Retrying|WARNING: Location/.test(l)).join('\n')}`));
    });
  });
  fs.writeFileSync(STAMP, want);
  if (!/python client venv ready/.test(output)) throw new Error(`the venv script did not finish: ${output}`);
  return python;
}
