/**
 * The local backend gives its sessions the PATH, LANG and TZ of the configuration, and finds bash on that PATH.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalBackend } from '../../src/backends/local/localBackend';
import { findBash } from '../../src/backends/local/bashPath';
import { BashSession } from '../../src/core/session/bashSession';

describe('local backend host environment', () => {
  it("starts sessions with the configured PATH, LANG and TZ, and nothing else of the broker's", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-hostenv-'));
    const backend = new LocalBackend({ root, cgroups: 'off', hostEnv: { path: '/usr/bin:/bin', lang: 'C', tz: 'UTC' } });
    try {
      const ref = await backend.containers.start({ kind: 'pool', index: 0 });
      const session = new BashSession(await backend.openShell(ref, { slotId: 'c0s0' }));
      await session.start();
      const r = await session.execute('echo "$PATH|$LANG|$TZ|${BROKER_TOKEN-unset}"', { timeoutMs: 10_000, maxOutputBytes: 4096 });
      expect(r.stdout).toBe('/usr/bin:/bin|C|UTC|unset\n');
      await session.close();
    } finally {
      await backend.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('finds bash on the PATH it is given, else leaves the spawn to fail', () => {
    expect(path.isAbsolute(findBash('/nonexistent:/usr/bin:/bin'))).toBe(true);
    expect(findBash('/nonexistent')).toBe('bash');
  });
});
