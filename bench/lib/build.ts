/**
 * The broker is measured as built (`npm run build`, dist/): rebuild when any source is newer. So are
 * the bench's own helper processes (client, no-op and shell servers: dist-bench/): under ts-node a
 * process loads node's `repl` and with it `domain`, which wraps every EventEmitter's construction
 * and emit (~2% of a no-op server's CPU in session 9's profile), a tax the broker does not pay.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

function newestMtimeMs(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtimeMs(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Returns true when it had to build. */
export function ensureBuilt(repoDir: string): boolean {
  const entry = path.join(repoDir, 'dist', 'index.js');
  const built = fs.existsSync(entry) ? fs.statSync(entry).mtimeMs : 0;
  const sources = Math.max(newestMtimeMs(path.join(repoDir, 'src')), fs.statSync(path.join(repoDir, 'tsconfig.build.json')).mtimeMs);
  if (built >= sources) return false;
  console.log('bench: dist/ is older than src/: running npm run build');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: repoDir, stdio: 'inherit', timeout: 300_000 });
  return true;
}

/** Compiles bench/ and src/ to dist-bench/ (tsconfig.bench.json) when any of them is newer. */
export function ensureBenchBuilt(repoDir: string): void {
  const stamp = path.join(repoDir, 'dist-bench', 'bench', 'noopServer.js');
  const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
  const config = ['tsconfig.json', 'tsconfig.bench.json'].map((f) => fs.statSync(path.join(repoDir, f)).mtimeMs);
  const sources = Math.max(newestMtimeMs(path.join(repoDir, 'src')), newestMtimeMs(path.join(repoDir, 'bench')), ...config);
  if (built >= sources) return;
  console.log('bench: compiling its helper processes to dist-bench/');
  fs.rmSync(path.join(repoDir, 'dist-bench'), { recursive: true, force: true });
  execFileSync('npx', ['--no-install', 'tsc', '-p', 'tsconfig.bench.json'], { cwd: repoDir, stdio: 'inherit', timeout: 300_000 });
}
