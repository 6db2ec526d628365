/** The broker is measured as built (`npm run build`, dist/): rebuild when any source is newer. */
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
