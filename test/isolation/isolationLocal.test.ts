/**
 * Per-lease filesystem isolation on the LOCAL backend (BROKER_SESSION_ISOLATION=1, the broker root):
 * each session on an overlay of this host's root with a private tmpfs. These sessions run as root
 * on the shared host, so the first case PROVES the confinement (a write to /etc lands in the
 * session, not on the host; no CAP_SYS_ADMIN; the root is the session's overlay) and every later
 * case refuses to run until it has passed. Every write below lands in a session's tmpfs; the host
 * is only read (and a scratch directory of the test's own is made and removed).
 *
 * Without root the suite is skipped LOUDLY; under CI a root broker that cannot isolate (no
 * overlayfs, no compiler) fails it instead.
 * @backend local
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { eventually, startTestBroker, testLocalRoot, withLease, type TestBroker } from '../helpers/broker';
import { sdkExecd } from '../helpers/execdSdk';
import { execdSdk } from '../helpers/execdClient';
import { pidsWithEnvPrefix, uniqueMark } from '../../devtools/procs';
import { BrokerProcess } from '../../devtools/brokerProcess';

jest.setTimeout(120_000);

const ROOT = process.getuid?.() === 0;
const CI = Boolean(process.env.CI) && process.env.CI !== 'false';
const DISK = 16 * 1024 * 1024;

if (!ROOT) {
  describe('per-lease isolation on the local backend -- SKIPPED: not root', () => {
    it('warns that the suite did not run', () => {
      console.warn('*** isolationLocal.test.ts SKIPPED: the local backend isolates only as root (mount namespaces, overlayfs) ***');
    });
  });
}

(ROOT ? describe : describe.skip)('per-lease isolation on the local backend (root, overlayfs)', () => {
  let tb: TestBroker;
  let isolated = false;
  let confined = false;
  const mark = `liso-${uniqueMark()}`;
  const scratch = fs.mkdtempSync(path.join('/var/tmp', 'bkr-liso-'));

  /** Whether a case may run: isolation given, and proven before anything writes. */
  function ready(needConfinement = true): boolean {
    if (!isolated) {
      console.warn('*** isolationLocal.test.ts: this host cannot isolate local sessions (see /health isolation.refusal): case SKIPPED ***');
      return false;
    }
    if (needConfinement && !confined) throw new Error('confinement NOT proven: refusing to write from a session on this host');
    return true;
  }

  async function sh(id: string, command: string): Promise<string> {
    const r = await tb.exec(id, command);
    if (r.return_code !== 0) throw new Error(`${command}: ${r.return_code} ${r.stderr}`);
    return r.stdout;
  }

  beforeAll(async () => {
    fs.writeFileSync(path.join(scratch, 'keep.txt'), 'original\n');
    fs.writeFileSync(path.join(scratch, 'gone.txt'), 'still here\n');
    tb = await startTestBroker({ BROKER_SESSION_ISOLATION: '1', BROKER_SESSION_DISK_BYTES: String(DISK), BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
    const report = (await tb.get('/health')).json.isolation;
    isolated = report?.isolated_containers === 1;
    if (!isolated && CI) throw new Error(`under CI a root broker must isolate local sessions: ${JSON.stringify(report)}`);
  });
  afterAll(async () => {
    await tb?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('/health says isolation is on, one root isolated, the session size', async () => {
    if (!ready(false)) return;
    expect((await tb.get('/health')).json.isolation).toEqual({ enabled: true, isolated_containers: 1, unisolated_containers: 0, refusal: null, disk_bytes_per_session: DISK, shared_paths: [] });
  });

  it('PROVES confinement first: a write to /etc lands in the session, not on the host; no CAP_SYS_ADMIN; the root is its overlay', async () => {
    if (!ready(false)) return;
    const probe = `/etc/${mark}-probe`;
    await withLease(tb, async (id) => {
      const out = await sh(id, `echo in > ${probe} && cat ${probe}; awk '$5 == "/"' /proc/self/mountinfo | grep -o 'overlay bkr-root'; grep CapBnd /proc/self/status`);
      const [written, rootType, capBnd] = out.trim().split('\n');
      expect(written).toBe('in');
      expect(fs.existsSync(probe)).toBe(false);
      expect(rootType).toBe('overlay bkr-root');
      const bounding = BigInt(`0x${capBnd.split(/\s+/)[1]}`);
      expect(bounding & (1n << 21n)).toBe(0n); // CAP_SYS_ADMIN
      expect(bounding & (1n << 19n)).toBe(0n); // CAP_SYS_PTRACE
      expect(bounding & (1n << 27n)).toBe(0n); // CAP_MKNOD
    });
    confined = true;
  });

  it("lease 2 on the same slot sees none of lease 1's writes, edits, deletions or limits, and neither does the host", async () => {
    if (!ready()) return;
    const other = await tb.acquire(); // holds the other slot: the next lease gets lease 1's
    const one = await tb.acquire();
    const paths = ['/tmp', '$HOME', '/etc', '/usr/local/bin', '/opt', '/dev/shm', '/var/tmp'].map((d) => `${d}/${mark}`);
    const home = (await sh(one, 'echo $HOME')).trim();
    try {
      await sh(one, `for p in ${paths.join(' ')}; do echo lease1 > "$p"; done; echo edited > ${scratch}/keep.txt; rm ${scratch}/gone.txt; ulimit -n 64`);
      expect(await sh(one, `cat ${paths.join(' ')} ${scratch}/keep.txt; ls ${scratch}; ulimit -n`)).toBe(`${'lease1\n'.repeat(paths.length)}edited\nkeep.txt\n64\n`);
      const oneSlot = await sh(one, 'echo $BROKER_SESSION_TAG');
      await tb.release(one);
      const two = await tb.acquire();
      try {
        // The same slot: its tag names the slot (the generation after it differs).
        expect((await sh(two, 'echo $BROKER_SESSION_TAG')).replace(/-\d+\n$/, '')).toBe(oneSlot.replace(/-\d+\n$/, ''));
        expect(await sh(two, `for p in ${paths.join(' ')}; do [ -e "$p" ] && echo "LEFT $p"; done; cat ${scratch}/keep.txt ${scratch}/gone.txt; ulimit -n`)).toBe(`original\nstill here\n${await hostOpenFiles()}\n`);
      } finally {
        await tb.release(two);
      }
    } finally {
      await tb.release(other);
    }
    for (const p of paths) expect(fs.existsSync(p.replace('$HOME', home))).toBe(false);
    expect(fs.readFileSync(path.join(scratch, 'keep.txt'), 'utf8')).toBe('original\n');
    expect(fs.readFileSync(path.join(scratch, 'gone.txt'), 'utf8')).toBe('still here\n');
  });

  it('siblings at once: two sessions write the same paths, each sees only its own', async () => {
    if (!ready()) return;
    await withLease(tb, (a) =>
      withLease(tb, async (b) => {
        await Promise.all([sh(a, `echo A > /etc/${mark}-sib; echo A > /tmp/${mark}-sib`), sh(b, `echo B > /etc/${mark}-sib; echo B > /tmp/${mark}-sib`)]);
        expect(await sh(a, `cat /etc/${mark}-sib /tmp/${mark}-sib`)).toBe('A\nA\n');
        expect(await sh(b, `cat /etc/${mark}-sib /tmp/${mark}-sib`)).toBe('B\nB\n');
        // Neither sees the other's processes either.
        await sh(a, `sleep ${mark.slice(5)} &`);
        expect(await sh(a, `pgrep -f 'sleep ${mark.slice(5)}' >/dev/null && echo seen`)).toBe('seen\n');
        expect(await sh(b, `pgrep -f 'sleep ${mark.slice(5)}' || echo none`)).toBe('none\n');
      }),
    );
    expect(fs.existsSync(`/etc/${mark}-sib`)).toBe(false);
    expect(fs.existsSync(`/tmp/${mark}-sib`)).toBe(false);
  });

  it('past BROKER_SESSION_DISK_BYTES: No space left on device and disk_full, a sibling unaffected', async () => {
    if (!ready()) return;
    await withLease(tb, (a) =>
      withLease(tb, async (b) => {
        const r = await tb.post(`/session/${a}/execute`, { command: `dd if=/dev/zero of=/var/tmp/${mark}-fill bs=1M count=${(2 * DISK) / 1024 / 1024} 2>&1 | grep -o 'No space left on device' | head -1`, facts: true });
        expect(r.status).toBe(200);
        expect(r.json.stdout).toBe('No space left on device\n');
        expect(r.json.disk_full).toBe(true);
        expect(await sh(b, `echo ok > /var/tmp/${mark}-small && cat /var/tmp/${mark}-small`)).toBe('ok\n');
        const rb = await tb.post(`/session/${b}/execute`, { command: 'true', facts: true });
        expect(rb.json.disk_full).toBe(false);
      }),
    );
    expect(fs.existsSync(`/var/tmp/${mark}-fill`)).toBe(false);
  });

  it("the acquire's files and execd's file routes work on the session's own view; its links to its own files are refused", async () => {
    if (!ready()) return;
    const id = await tb.acquire({ files: { 'in.txt': Buffer.from('from acquire\n').toString('base64') } });
    try {
      const home = (await sh(id, 'pwd')).trim();
      expect(await sh(id, 'cat in.txt')).toBe('from acquire\n');
      const files = sdkExecd(tb.url, id).files;
      await files.writeFiles([{ path: `${home}/up/hello.txt`, data: 'uploaded\n', mode: 600 }]);
      expect(await sh(id, 'cat up/hello.txt; stat -c %a up/hello.txt')).toBe('uploaded\n600\n');
      await sh(id, `echo from-shell > made.txt; echo secret > /etc/${mark}-own; ln -s /etc/${mark}-own link; ln -s /etc esc`);
      expect(await files.readFile(`${home}/made.txt`)).toBe('from-shell\n');
      const base = `${tb.url}/sandboxes/${id}/execd`;
      const viaLink = await fetch(`${base}/files/download?path=${encodeURIComponent(`${home}/link`)}`);
      expect(viaLink.status).toBe(403);
      const form = new FormData();
      form.append('metadata', new Blob([JSON.stringify({ path: `${home}/esc/${mark}-up` })]), 'metadata');
      form.append('file', new Blob(['x']), 'file');
      expect((await fetch(`${base}/files/upload`, { method: 'POST', body: form })).status).toBe(403);
      expect(fs.existsSync(`/etc/${mark}-up`)).toBe(false);
    } finally {
      await tb.release(id);
    }
  });

  it("execd's extra shells join their session's view: its files, its processes, nothing of the host's", async () => {
    if (!ready()) return;
    await withLease(tb, async (id) => {
      await sh(id, `echo session-only > /etc/${mark}-joined; sleep ${mark.slice(5)}1 &`);
      const run = await execdSdk(tb.url, id).commands.run(`cat /etc/${mark}-joined; pgrep -f 'sleep ${mark.slice(5)}1' >/dev/null && echo same-processes; echo extra > /etc/${mark}-extra`);
      expect(run.logs.stdout.map((m) => m.text)).toEqual(['session-only', 'same-processes']);
      expect(await sh(id, `cat /etc/${mark}-extra`)).toBe('extra\n');
    });
    expect(fs.existsSync(`/etc/${mark}-extra`)).toBe(false);
  });

  it('escape attempts fail: umount, mount, mknod, nsenter into pid 1, /proc/1/root, the chroot escape', async () => {
    if (!ready()) return;
    await withLease(tb, async (id) => {
      await sh(id, `echo mine > /etc/${mark}-esc`);
      expect((await tb.exec(id, 'umount / 2>&1 || echo refused')).stdout).toContain('refused');
      expect((await tb.exec(id, 'mount -t tmpfs x /mnt 2>&1 || echo refused')).stdout).toContain('refused');
      expect((await tb.exec(id, 'mknod /tmp/disk b 8 0 2>&1 || echo refused')).stdout).toContain('refused');
      expect((await tb.exec(id, 'nsenter -t 1 -m -- cat /etc/hostname 2>&1 || echo refused')).stdout).toContain('refused');
      expect((await tb.exec(id, 'ls /proc/1/root/ 2>&1 || echo refused')).stdout).toContain('refused');
      // The classic chroot escape: chroot into a subdirectory, climb out of it, chroot at the top.
      const escape = `python3 -c "import os; os.makedirs('/tmp/jail', exist_ok=True); os.chroot('/tmp/jail'); [os.chdir('..') for _ in range(64)]; os.chroot('.'); print(open('/etc/${mark}-esc').read().strip())" 2>&1`;
      expect((await tb.exec(id, escape)).stdout).toBe('mine\n');
      // The files /proc hides are binds of the session's own /dev/null: a chmod of them leaves the host's as it is.
      expect((await tb.exec(id, 'chmod 600 /proc/keys /proc/timer_list 2>/dev/null; ls -lL /proc/keys /proc/timer_list 2>/dev/null | cut -c1-10 | sort -u')).stdout).toBe('crw-------\n');
    });
    expect(fs.statSync('/dev/null').mode & 0o777).toBe(0o666);
    expect(fs.existsSync(`/etc/${mark}-esc`)).toBe(false);
  });

  it('a session whose setup fails (a mount of its table gone from the host) has the table made anew: the pool heals', async () => {
    if (!ready()) return;
    const id = await tb.acquire();
    const root = path.dirname((await sh(id, 'echo $HOME')).trim());
    const [template] = fs.readdirSync(root).filter((n) => n.startsWith('.session-template-'));
    // As if a host mount listed at start were gone: the next session's setup fails on it.
    fs.appendFileSync(path.join(root, template, 'fstab'), `/${mark}-gone /dev/shm/r/mnt none bind\n`);
    await tb.release(id);
    await eventually(() => !fs.existsSync(path.join(root, template)) || fs.readdirSync(root).some((n) => n.startsWith('.session-template-') && n !== template), 30_000, 'a new template');
    await tb.waitAllAvailable(60_000);
    await withLease(tb, async (next) => {
      expect(await sh(next, 'echo works')).toBe('works\n');
    });
  });

  it('a broker killed with live sessions leaves no mount of theirs on the host, and no process', async () => {
    if (!ready()) return;
    const root = testLocalRoot(`killed-${mark}`);
    const env = { BROKER_BACKEND: 'local', BROKER_SESSION_ISOLATION: '1', BROKER_SESSION_DISK_BYTES: String(DISK), BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', PORT: '0', HOST: '127.0.0.1', BROKER_LOCAL_ROOT: root };
    const broker = await BrokerProcess.start('broker', env).catch((err: unknown) => {
      fs.rmSync(root, { recursive: true, force: true });
      throw err;
    });
    const tag = `BROKER_SESSION_TAG=${broker.pid}-`;
    try {
      const url = broker.url;
      const post = async (p: string, body: unknown): Promise<{ session_id?: string; stdout?: string }> => (await fetch(url + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as { session_id?: string; stdout?: string };
      for (let i = 0; i < 2; i++) {
        const { session_id: id } = await post('/session/acquire', {});
        expect((await post(`/session/${id}/execute`, { command: `sleep 3600 & echo x > /etc/${mark}-killed; echo started` })).stdout).toBe('started\n');
      }
      expect(pidsWithEnvPrefix(tag).length).toBeGreaterThan(0);
      // A bare SIGKILL (not kill9, which would end its shells itself): the sessions must end on their own.
      await broker.signal('SIGKILL');
      await eventually(() => pidsWithEnvPrefix(tag).length === 0, 30_000, () => `no process of the killed broker's sessions (left: ${pidsWithEnvPrefix(tag).join(' ')})`);
      const mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8');
      expect(mountinfo).not.toMatch(/bkr-(root|session|carried)/);
      expect(fs.existsSync(`/etc/${mark}-killed`)).toBe(false);
    } finally {
      await broker.signal('SIGKILL');
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("workspaces' /api/write|read and terminals work on their session's view (last: the workspace keeps a slot)", async () => {
    if (!ready()) return;
    const run = async (command: string): Promise<string> => {
      const r = await tb.post('/api/execute', { command });
      expect(r.json.returncode).toBe(0);
      return r.json.stdout as string;
    };
    expect((await tb.post('/api/write', { filename: 'w/hello.txt', content: 'written\n' })).status).toBe(200);
    expect(await run(`cat w/hello.txt; echo from-terminal > /etc/${mark}-ws; echo shell > made.txt; ln -s /etc/passwd out`)).toBe('written\n');
    expect((await tb.get('/api/read?filename=made.txt')).json).toMatchObject({ content: 'shell\n' });
    expect((await tb.get('/api/read?filename=out')).status).toBe(403);
    expect(fs.existsSync(`/etc/${mark}-ws`)).toBe(false);
  });
});

/** The host's `ulimit -n` for a new bash, as a fresh lease gets it. */
async function hostOpenFiles(): Promise<string> {
  return new Promise((resolve) => {
    const p = spawn('bash', ['-c', 'ulimit -n']);
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.on('close', () => resolve(out.trim()));
  });
}
