/**
 * An image with bash and nothing else of ours: bash-broker-bashonly (Debian's bash-static and
 * busybox-static alone: no util-linux, so no `script`, no setpriv that can drop a capability, no
 * coreutils, no libc). With per-lease isolation on, every API works on it as on the project's own
 * images: the broker brings what it needs itself (the session init enters a session's view, drops
 * CAP_SYS_ADMIN and opens a workspace's terminal), and takes nothing from the image but bash and the
 * file routes' tools (which busybox has).
 *
 * Covered: the workspace API (POST /workspaces, /api/execute, /api/input, /api/interrupt, the
 * terminal's WebSocket with a resize, /api/write and /api/read), execd's commands, bash sessions and
 * files, and the isolation basics (a workspace's and a sandbox's view are their own, no
 * CAP_SYS_ADMIN in a terminal). No timing is asserted: every wait is on an event or a state.
 * @backend docker
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Dockerode from 'dockerode';
import { startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { exitOf, openTerminal, workspaceExecute } from '../helpers/workspaceClient';
import { execdSdk } from '../helpers/execdClient';
import { sdkExecd } from '../helpers/execdSdk';
import { removeLabelledContainers } from '../helpers/dockerFaults';

jest.setTimeout(240_000);
const IMAGE = 'bash-broker-bashonly:latest';
const LONG = 120_000;
const CAP_SYS_ADMIN = 1n << 21n;
const docker = new Dockerode();
const texts = (msgs: { text: string }[]): string[] => msgs.map((m) => m.text);

/** Built here when missing (seconds, from the Debian mirror apt has): .ci/run builds it beforehand. */
function ensureImage(): void {
  execFileSync('bash', [path.join(__dirname, '../../scripts/docker-images.sh'), 'bashonly'], { stdio: 'ignore', timeout: 300_000 });
}

describeDocker('docker: an image with bash and busybox alone, isolated', () => {
  let tb: TestBroker;
  const deployment = testDeployment(`bashonly-${process.pid}`);

  beforeAll(async () => {
    ensureImage();
    // What the image lacks: util-linux's script, a setpriv that drops a capability, any shared library.
    const lacks = "! type -P script && ! setpriv --bounding-set -sys_admin true 2>/dev/null && [ ! -e /lib ]";
    // Removed once its status is read (an AutoRemove container can be gone before its wait answers).
    const [probe, container] = (await docker.run(IMAGE, ['bash', '-c', lacks], new PassThrough(), { HostConfig: { NetworkMode: 'none' } })) as [{ StatusCode: number }, Dockerode.Container];
    await container.remove({ force: true });
    expect(probe.StatusCode).toBe(0);
    tb = await startTestBroker({ BROKER_IMAGE: IMAGE, BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '4', BROKER_SESSION_ISOLATION: '1' });
    await tb.waitAllAvailable(LONG);
  }, 400_000);

  afterAll(async () => {
    await tb?.close();
    await removeLabelledContainers(docker, deployment);
  }, 60_000);

  it('isolates its sessions and says so in /health', async () => {
    expect((await tb.get('/health')).json.isolation).toMatchObject({ enabled: true, isolated_containers: 1, unisolated_containers: 0 });
  });

  it('serves the workspace API: execute, input, interrupt, the terminal with a resize, its files', async () => {
    expect(await workspaceExecute(tb, 'echo "$TERM"; [ -t 0 ] && echo tty')).toMatchObject({ returncode: 0, stdout: 'xterm-256color\ntty\n' });

    const terminal = await openTerminal(tb);
    try {
      terminal.socket.send(JSON.stringify({ type: 'resize', cols: 91, rows: 27 }));
      terminal.socket.send(JSON.stringify({ type: 'input', data: 'echo size-$(stty size | tr " " x)\r' }));
      await terminal.waitForText('size-27x91');
      expect((await tb.post('/api/input', { text: 'echo typed-$((6 * 7))\r' })).status).toBe(200);
      await terminal.waitForText('typed-42');
    } finally {
      terminal.close();
    }

    const started = await tb.post('/api/execute', { command: 'sleep 300', wait: 0 });
    expect(started.json.returncode).toBeNull();
    expect((await tb.post('/api/interrupt')).json).toEqual({ job_id: started.json.job_id });
    expect((await exitOf(tb, started.json.job_id as string, '', LONG)).returncode).toBe(130);

    await workspaceExecute(tb, 'echo from-terminal >made.txt');
    expect((await tb.get('/api/read?filename=made.txt')).json).toMatchObject({ content: 'from-terminal\n' });
    expect((await tb.post('/api/write', { filename: 'routed.txt', content: 'from-route\n' })).status).toBe(200);
    expect((await workspaceExecute(tb, 'cat routed.txt')).stdout).toBe('from-route\n');
  });

  it('opens a named workspace with POST /workspaces, in a view of its own without CAP_SYS_ADMIN', async () => {
    const created = await tb.post('/workspaces', {});
    expect(created.status).toBe(201);
    const prefix = `/workspaces/${created.json.workspace_id as string}`;
    const run = async (command: string): Promise<string> => {
      const r = await tb.post(`${prefix}/api/execute`, { command });
      expect(r.status).toBe(200);
      return r.json.stdout as string;
    };
    const bounding = (await run("sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status")).trim();
    expect(BigInt(`0x${bounding}`) & CAP_SYS_ADMIN).toBe(0n);
    expect(Number((await run('ls /proc | grep -c "^[0-9]"')).trim())).toBeLessThan(12);
    await run('echo named >/etc/named-mark');
    // The default workspace, another session of the same container, sees none of it.
    expect((await workspaceExecute(tb, '[ -e /etc/named-mark ] && echo seen; echo looked')).stdout).toBe('looked\n');
    expect((await tb.request('DELETE', prefix)).status).toBeLessThan(300);
  });

  it("serves execd's commands, bash sessions and files in a sandbox's own view", async () => {
    const lease = await tb.acquire();
    try {
      const sdk = execdSdk(tb.url, lease);
      const run = await sdk.commands.run('echo mine >/etc/lease-mark; pwd; echo oops >&2');
      expect(run.exitCode).toBe(0);
      expect(texts(run.logs.stderr)).toEqual(['oops']);
      const home = texts(run.logs.stdout)[0];

      const session = await sdk.commands.createSession();
      await sdk.commands.runInSession(session, 'cd /etc && export KEPT=yes');
      const again = await sdk.commands.runInSession(session, 'pwd; echo $KEPT; cat lease-mark');
      expect(texts(again.logs.stdout)).toEqual(['/etc', 'yes', 'mine']);
      await sdk.commands.deleteSession(session);

      const { files } = sdkExecd(tb.url, lease);
      await files.writeFiles([{ path: `${home}/up/hello.txt`, data: 'héllo\n', mode: 600 }]);
      expect(texts((await sdk.commands.run('cat up/hello.txt; stat -c %a up/hello.txt')).logs.stdout)).toEqual(['héllo', '600']);
      expect(await files.readFile(`${home}/up/hello.txt`)).toBe('héllo\n');
      await sdk.commands.run('mkdir -p sh && printf from-shell >sh/s.txt');
      expect(await files.readFile(`${home}/sh/s.txt`)).toBe('from-shell');
      expect((await files.getFileInfo([`${home}/sh/s.txt`]))[`${home}/sh/s.txt`]).toMatchObject({ type: 'file', size: 10 });
      await files.createDirectories([{ path: `${home}/tree/deep`, mode: 700 }]);
      expect((await files.listDirectory({ path: `${home}/tree` })).map((e) => e.path)).toEqual([`${home}/tree/deep`]);
      await files.moveFiles([{ src: `${home}/sh/s.txt`, dest: `${home}/sh/moved.txt` }]);
      await files.setPermissions([{ path: `${home}/sh/moved.txt`, mode: 640 }]);
      expect(texts((await sdk.commands.run('ls sh; stat -c %a sh/moved.txt')).logs.stdout)).toEqual(['moved.txt', '640']);
      await files.deleteFiles([`${home}/sh/moved.txt`]);
      await files.deleteDirectories([`${home}/tree`]);
      expect(texts((await sdk.commands.run('ls -A sh; [ -e tree ] || echo no-tree')).logs.stdout)).toEqual(['no-tree']);
    } finally {
      await tb.release(lease);
    }
    // The workspace never saw the sandbox's /etc write.
    expect((await workspaceExecute(tb, '[ -e /etc/lease-mark ] && echo seen; echo looked')).stdout).toBe('looked\n');
  });
});
