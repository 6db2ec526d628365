/**
 * scripts/apt-mirror.sh: the Debian mirror the image builds use comes from apt's own source lists and
 * from nothing else. Each case gives it an apt configuration of its own (APT_CONFIG pointing apt at a
 * temporary Dir::Etc), so the machine's real sources are neither read nor touched. The addresses are
 * under the reserved .invalid domain: no real mirror is named by the project.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

const SCRIPT = path.resolve(__dirname, '../../scripts/apt-mirror.sh');
const haveApt = spawnSync('apt-config', ['dump'], { encoding: 'utf8' }).status === 0;

function run(files: Record<string, string>, suite?: string): { status: number | null; stdout: string; stderr: string; etc: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apt-mirror-test-'));
  const etc = path.join(dir, 'etc');
  fs.mkdirSync(path.join(etc, 'sources.list.d'), { recursive: true });
  fs.mkdirSync(path.join(etc, 'apt.conf.d'));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(etc, name), text);
  const conf = path.join(dir, 'apt.conf');
  fs.writeFileSync(conf, `Dir::Etc "${etc}";\nDir::Etc::sourcelist "sources.list";\nDir::Etc::sourceparts "sources.list.d";\n`);
  try {
    const r = spawnSync('bash', [SCRIPT, ...(suite ? [suite] : [])], { encoding: 'utf8', env: { ...process.env, APT_CONFIG: conf } });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, etc };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const DEB822 = `Types: deb-src deb
URIs: http://contrib-only.invalid/debian
Suites: bookworm
Components: contrib

Types: deb
# a comment inside a stanza
URIs:
 http://disabled.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Enabled: no

Types: deb
URIs: http://mirror.invalid/debian http://second.invalid/debian
Suites: bookworm
  bookworm-updates
Components: main contrib
`;

if (!haveApt) {
  describe('scripts/apt-mirror.sh -- SKIPPED: no apt-config on this machine (not Debian)', () => {
    it('warns that the suite did not run', () => console.warn('aptMirror.test.ts SKIPPED: apt-config is missing'));
  });
} else {
  describe('scripts/apt-mirror.sh', () => {
    it('reads a deb822 .sources file: the first enabled deb stanza with the suite and main', () => {
      const r = run({ 'sources.list.d/debian.sources': DEB822 });
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`http://mirror.invalid/debian ${r.etc}/sources.list.d/debian.sources\n`);
    });

    it('reads one-line sources.list entries, options and comments included; a trailing slash is dropped', () => {
      const text = [
        '# deb http://commented.invalid/debian bookworm main',
        'deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://other-suite.invalid/x cloud-sdk-bookworm main',
        'deb [ arch=amd64 ] http://line.invalid/debian/ bookworm main contrib # note',
      ].join('\n');
      const r = run({ 'sources.list': `${text}\n` });
      expect([r.status, r.stdout]).toEqual([0, `http://line.invalid/debian ${r.etc}/sources.list\n`]);
    });

    it('skips schemes debootstrap cannot fetch from, and files apt does not read', () => {
      const r = run({
        'sources.list.d/a.list': 'deb mirror+file:/etc/apt/mirrors.txt bookworm main\n',
        'sources.list.d/b.list.disabled': 'deb http://disabled-file.invalid/debian bookworm main\n',
        'sources.list.d/c.list': 'deb https://secure.invalid/debian bookworm main\n',
      });
      expect([r.status, r.stdout]).toEqual([0, `https://secure.invalid/debian ${r.etc}/sources.list.d/c.list\n`]);
      expect(r.stderr).toMatch(/skipping mirror\+file/);
    });

    it('asks for the suite it is given', () => {
      const r = run({ 'sources.list.d/debian.sources': DEB822 }, 'bookworm-updates');
      expect([r.status, r.stdout.split(' ')[0]]).toEqual([0, 'http://mirror.invalid/debian']);
    });

    it('fails with a clear message when apt has no mirror for the suite: no fallback address', () => {
      const r = run({ 'sources.list.d/debian.sources': DEB822 }, 'trixie');
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/no Debian mirror for 'trixie'/);
      expect(r.stderr).toMatch(/does not name a mirror/);
      const none = run({});
      expect([none.status, none.stdout]).toEqual([1, '']);
      expect(none.stderr).toMatch(/none found/);
    });
  });
}
