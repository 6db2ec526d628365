/**
 * Another commit of this repository, built to compare against in the same run: a detached git
 * worktree of it in the temporary directory, this checkout's node_modules linked in (the dependencies
 * of an earlier commit are a subset), `npm run build` there. `remove()` deletes the worktree again.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface BaseBuild {
  /** The commit as given, and its abbreviated hash. */
  commit: string;
  shortHash: string;
  subject: string;
  /** Its entry script (dist/index.js of the worktree). */
  entry: string;
  remove(): void;
}

function git(repoDir: string, args: string[]): string {
  return execFileSync('git', ['-C', repoDir, ...args], { encoding: 'utf8', timeout: 120_000 }).trim();
}

export function buildAtCommit(repoDir: string, commit: string): BaseBuild {
  const hash = git(repoDir, ['rev-parse', '--verify', `${commit}^{commit}`]);
  const shortHash = git(repoDir, ['rev-parse', '--short', hash]);
  const subject = git(repoDir, ['log', '-1', '--format=%s', hash]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-base-${shortHash}-`));
  fs.rmdirSync(dir); // git worktree add makes it
  let added = false;
  const remove = (): void => {
    if (!added) return;
    added = false;
    try {
      git(repoDir, ['worktree', 'remove', '--force', dir]);
    } catch {
      fs.rmSync(dir, { recursive: true, force: true });
      git(repoDir, ['worktree', 'prune']);
    }
  };
  try {
    git(repoDir, ['worktree', 'add', '--detach', dir, hash]);
    added = true;
    fs.symlinkSync(fs.realpathSync(path.join(repoDir, 'node_modules')), path.join(dir, 'node_modules'));
    console.log(`bench: building ${shortHash} (${subject.slice(0, 60)}) in ${dir}`);
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: dir, stdio: 'inherit', timeout: 600_000 });
  } catch (err) {
    remove();
    throw err;
  }
  return { commit, shortHash, subject, entry: path.join(dir, 'dist', 'index.js'), remove };
}
