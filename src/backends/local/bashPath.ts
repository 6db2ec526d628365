/**
 * The absolute path of bash on a PATH (the broker's, from its configuration), found once per
 * backend. Spawns use it, and so does the `exec` that recycles a shell in place: there the lease's
 * own PATH (which it may have emptied) is in force.
 */
import fs from 'node:fs';
import path from 'node:path';

export function findBash(searchPath: string): string {
  for (const dir of searchPath.split(':')) {
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
