/**
 * The absolute path of bash, found once on the broker's PATH. Spawns use it, and so does the `exec`
 * that recycles a shell in place: there the lease's own PATH (which it may have emptied) is in force.
 */
import fs from 'node:fs';
import path from 'node:path';

let found: string | null = null;

export function bashPath(): string {
  found ??= locate();
  return found;
}

function locate(): string {
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir || '.', 'bash');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return path.resolve(candidate);
    } catch {
      /* not here */
    }
  }
  return 'bash'; // let the spawn fail with ENOENT and say so
}
