/** The workspace: one `git clone` of the task's repository, in a scrubbed environment. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { scrubEnv } from './secrets';

/** Resolves with null on success, or with git's own words on failure. */
export function gitClone(url: string, dest: string, timeoutMs: number): Promise<string | null> {
  if (fs.existsSync(dest)) return Promise.resolve(`${dest} already exists`);
  return new Promise((resolve) => {
    // safe.directory: a directory of bare repos is mounted from the host, owned by whoever made it.
    const git = spawn('git', ['-c', 'safe.directory=*', 'clone', '--quiet', url, dest], {
      env: { ...scrubEnv(process.env), GIT_TERMINAL_PROMPT: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: timeoutMs,
    });
    let stderr = '';
    git.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 8192) stderr += chunk;
    });
    git.on('error', (err) => resolve(`git could not run: ${err.message}`));
    git.on('close', (code, signal) => {
      if (code === 0) return resolve(null);
      const why = signal ? `killed by ${signal} (over ${timeoutMs / 1000} s?)` : `exit ${code}`;
      resolve(`git clone failed (${why}): ${stderr.trim() || 'no message'}`);
    });
  });
}
