/**
 * The file routes see what the sandbox's own shell sees, in every kind of sandbox that has a shell,
 * with per-lease isolation on (the default): a pool lease, the two members of a group acquire
 * (`acquire_group`), a warm lifecycle sandbox (a BROKER_POOLS pool of whole containers), a dedicated
 * one (an image no pool serves) and a workspace. Each both ways: the shell writes and every execd
 * file route reads or changes it (info, download, list, search, replace, permissions, mv, delete of
 * files and of directories); the routes write (upload, mkdir) and the shell reads.
 *
 * A confined sandbox (a pool lease, a workspace) reaches only its working directory, the one
 * directory its view binds in from its container; a lifecycle sandbox has its container to itself
 * and reaches any path: its files are written in `/tmp`, which a warm one's session holds in its own
 * overlay: a route that looked in its container's view would find nothing there.
 * (A sandbox group's member and a task sandbox, whose containers run an entry process of their own,
 * are execdGroupTask.test.ts's.) One broker serves every kind; no timing is asserted.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker, sessionIsolation } from '../helpers/dockerSuite';
import { labelledContainers, removeLabelledContainers } from '../helpers/dockerFaults';
import { execdSdk } from '../helpers/execdClient';
import { sdkExecd, type SdkFiles } from '../helpers/execdSdk';

jest.setTimeout(300_000);
const LONG = 180_000;
const docker = new Dockerode();
const DEPLOYMENT = testDeployment(`file-kinds-${process.pid}`);
const WARM_IMAGE = 'bash-broker-sandbox:latest';
/** The default pool's image: its pool shares containers, so a lifecycle sandbox of it gets a container of its own. */
const DEDICATED_IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const POOLS = { osb: { image: WARM_IMAGE, containers: 1, sessions_per_container: 1, fresh_container: true } };
const DEPLOYMENTS = [DEPLOYMENT, `${DEPLOYMENT}.osb`];

/** One kind of sandbox: its shell (each command's output, lines joined), its execd id, and where its files go. */
interface Kind {
  sh(command: string): Promise<string>;
  /** Its execd id (`/sandboxes/<id>/execd`); null: a workspace, whose file routes are /api/write|read. */
  execdId: string | null;
  /** A directory of its own that the test makes: in its working directory, or in `/tmp`. */
  dir: string;
}

const EXECD_KINDS = ['pool lease', 'group acquire member', 'warm lifecycle sandbox', 'dedicated lifecycle sandbox'] as const;
type KindName = (typeof EXECD_KINDS)[number] | 'workspace';

describeDocker('the file routes see what the shell of every kind of sandbox sees', () => {
  let tb: TestBroker;
  const kinds = new Map<KindName, Kind>();
  /** The group acquire's other member: it must see nothing of the first member's files. */
  let sibling: Kind;

  /** A lease of the pool API: its shell is /session/<id>/execute. */
  async function leaseKind(id: string): Promise<Kind> {
    const sh = async (command: string): Promise<string> => {
      const r = await tb.exec(id, command);
      if (r.return_code !== 0) throw new Error(`${command}: exit ${r.return_code}: ${r.stderr}`);
      return r.stdout.replace(/\n$/, '');
    };
    return { sh, execdId: id, dir: `${(await sh('pwd')).trim()}/fr` };
  }

  /** A lifecycle sandbox: its shell is execd's command route, as OpenSandbox's SDK runs it. */
  async function lifecycleKind(image: string): Promise<Kind> {
    const created = await tb.post('/v1/sandboxes', { image: { uri: image }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600 });
    expect([created.status, created.json.status?.state]).toEqual([202, 'Running']);
    const id = created.json.id as string;
    const { commands } = execdSdk(tb.url, id);
    const sh = async (command: string): Promise<string> => {
      const run = await commands.run(command);
      if (run.exitCode !== 0 || run.error) throw new Error(`${command}: exit ${run.exitCode}: ${run.logs.stderr.map((m) => m.text).join('\n')}`);
      return run.logs.stdout.map((m) => m.text).join('\n');
    };
    return { sh, execdId: id, dir: `/tmp/fr-${id.slice(0, 8)}` };
  }

  /** A named workspace: its shell is /workspaces/<id>/api/execute (its terminal). */
  async function workspaceKind(): Promise<{ kind: Kind; prefix: string }> {
    const created = await tb.post('/workspaces', {});
    expect(created.status).toBe(201);
    const prefix = `/workspaces/${created.json.workspace_id}`;
    const sh = async (command: string): Promise<string> => {
      const r = await tb.post(`${prefix}/api/execute`, { command });
      if (r.status !== 200 || r.json.returncode !== 0) throw new Error(`${command}: ${r.status} ${r.text}`);
      return (r.json.stdout as string).replace(/\r/g, '').replace(/\n$/, '');
    };
    return { kind: { sh, execdId: null, dir: 'fr' }, prefix };
  }

  let workspacePrefix = '';
  let closed = false;

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_DEPLOYMENT: DEPLOYMENT,
      // A lease, a group of two and a workspace: four sessions of one container.
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '4',
      BROKER_POOLS: JSON.stringify(POOLS),
      BROKER_SANDBOX_MAX_DEDICATED: '1',
    });
    await tb.waitAllAvailable(LONG);
    await eventually(async () => (await tb.get('/health')).json.pools?.osb?.available_sessions === 1, LONG, 'the warm pool full');
    kinds.set('pool lease', await leaseKind(await tb.acquire()));
    const group = await tb.post('/session/acquire_group', { n: 2 });
    expect(group.status).toBe(200);
    const [first, second] = group.json.sessions as { session_id: string }[];
    kinds.set('group acquire member', await leaseKind(first.session_id));
    sibling = await leaseKind(second.session_id);
    kinds.set('warm lifecycle sandbox', await lifecycleKind(WARM_IMAGE));
    kinds.set('dedicated lifecycle sandbox', await lifecycleKind(DEDICATED_IMAGE));
    const ws = await workspaceKind();
    kinds.set('workspace', ws.kind);
    workspacePrefix = ws.prefix;
  }, LONG * 2);

  afterAll(async () => {
    if (!closed) await tb?.close();
    for (const deployment of DEPLOYMENTS) await removeLabelledContainers(docker, deployment);
  });

  it('runs with isolation on, and each kind is in the sandbox view this suite means', async () => {
    expect(sessionIsolation).toBe(true);
    // The warm sandbox's commands run in its session's own root (an overlay), not the container's.
    const warm = kinds.get('warm lifecycle sandbox')!;
    const rootType = `awk '$5 == "/" { for (i = 7; i < NF; i++) if ($i == "-") t = $(i + 1) } END { print t }' /proc/self/mountinfo`;
    expect(await warm.sh(rootType)).toBe('overlay');
  });

  describe.each(EXECD_KINDS)('%s', (name) => {
    const kind = (): { k: Kind; files: SdkFiles } => {
      const k = kinds.get(name)!;
      return { k, files: sdkExecd(tb.url, k.execdId!).files };
    };

    it('the shell writes; info, download, list and search read it; replace, permissions, mv and the deletes change it', async () => {
      const { k, files } = kind();
      const d = `${k.dir}/sh`;
      await k.sh(
        `mkdir -p ${d}/deep ${d}/gone-dir/in && printf from-shell > ${d}/a.txt && chmod 640 ${d}/a.txt && printf 'x=old;y=old' > ${d}/conf && ` +
          `printf z > ${d}/deep/b.md && printf 1 > ${d}/gone-file && printf 2 > ${d}/gone-dir/in/f`,
      );
      expect((await files.getFileInfo([`${d}/a.txt`]))[`${d}/a.txt`]).toMatchObject({ type: 'file', size: 10, mode: 640 });
      expect(await files.readFile(`${d}/a.txt`)).toBe('from-shell');
      expect(await files.readFile(`${d}/a.txt`, { range: 'bytes=5-' })).toBe('shell');
      const listed = await files.listDirectory({ path: d, depth: 2 });
      expect(listed.map((e) => e.path.slice(d.length + 1))).toEqual(['a.txt', 'conf', 'deep', 'deep/b.md', 'gone-dir', 'gone-dir/in', 'gone-file']);
      expect((await files.search({ path: d, pattern: '*.md' })).map((e) => e.path)).toEqual([`${d}/deep/b.md`]);
      expect(await files.replaceContentsDetailed([{ path: `${d}/conf`, oldContent: 'old', newContent: 'new' }])).toEqual([{ path: `${d}/conf`, replacedCount: 2 }]);
      await files.setPermissions([{ path: `${d}/a.txt`, mode: 600 }]);
      await files.moveFiles([{ src: `${d}/a.txt`, dest: `${d}/moved.txt` }]);
      await files.deleteFiles([`${d}/gone-file`]);
      await files.deleteDirectories([`${d}/gone-dir`]);
      expect(await k.sh(`cd ${d} && echo "$(cat conf)|$(stat -c %a moved.txt)|$(cat moved.txt)|$(ls | tr '\\n' ' ')"`)).toBe('x=new;y=new|600|from-shell|conf deep moved.txt ');
    });

    it('the routes write (upload, mkdir); the shell reads', async () => {
      const { k, files } = kind();
      const d = `${k.dir}/route`;
      await files.writeFiles([
        { path: `${d}/up.txt`, data: 'from-route', mode: 600 },
        { path: `${d}/nested/deeper/bin`, data: Buffer.from([0, 0xff, 0x41]) },
      ]);
      await files.createDirectories([{ path: `${d}/made/sub`, mode: 700 }]);
      expect(await k.sh(`cd ${d} && echo "$(cat up.txt)|$(stat -c %a up.txt)|$(od -An -tx1 nested/deeper/bin | tr -d ' ')|$(stat -c %a made/sub)"`)).toBe('from-route|600|00ff41|700');
      // And the shell's change to them is what the routes read next.
      await k.sh(`printf again >> ${d}/up.txt`);
      expect(await files.readFile(`${d}/up.txt`)).toBe('from-routeagain');
    });
  });

  it("a group acquire member's writes, by its shell or the routes, are not its sibling's", async () => {
    const member = kinds.get('group acquire member')!;
    // Another lease's working directory is outside this one's: the routes refuse it (403), the shell does not see it.
    await expect(sdkExecd(tb.url, sibling.execdId!).files.getFileInfo([`${member.dir}/route/up.txt`])).rejects.toMatchObject({ statusCode: 403 });
    expect(await sibling.sh(`ls ${member.dir} 2>&1 | grep -c 'No such' || true`)).toBe('1');
  });

  describe('workspace', () => {
    const ws = (): Kind => kinds.get('workspace')!;

    it('the shell writes; /api/read and /api/read-partial read it', async () => {
      await ws().sh(`mkdir -p ${ws().dir}/sh && printf from-shell > ${ws().dir}/sh/a.txt`);
      const read = await tb.get(`${workspacePrefix}/api/read?filename=${ws().dir}/sh/a.txt`);
      expect([read.status, read.json]).toEqual([200, expect.objectContaining({ size: 10, content: 'from-shell' })]);
      const part = await tb.get(`${workspacePrefix}/api/read-partial?filename=${ws().dir}/sh/a.txt&offset=5&limit=100`);
      expect([part.status, part.json]).toEqual([200, expect.objectContaining({ content: 'shell' })]);
    });

    it('/api/write writes; the shell reads', async () => {
      const w = await tb.post(`${workspacePrefix}/api/write`, { filename: `${ws().dir}/route/up.txt`, content: 'from-route' });
      expect(w.status).toBe(200);
      expect(await ws().sh(`cat ${ws().dir}/route/up.txt`)).toBe('from-route');
    });
  });

  it('leaves no container once the broker is closed', async () => {
    closed = true;
    await tb.close();
    // The engine may still be removing the last one when the broker's close returns.
    const left = async (): Promise<number> => (await Promise.all(DEPLOYMENTS.map((d) => labelledContainers(docker, d)))).flat().length;
    await eventually(async () => (await left()) === 0, 60_000, 'every container of the suite gone');
  });
});
