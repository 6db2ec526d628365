/**
 * execd on a workspace: a workspace is a sandbox of the broker's directory, so its id serves execd's
 * command and file routes (`/sandboxes/<workspace id>/execd`), driven by OpenSandbox's own SDK. What
 * the workspace's terminal writes, execd's routes read, and the other way round; execd's commands
 * start in the workspace's directory and see what its terminal sees (per-lease isolation included,
 * on Docker). Once the workspace is deleted, its id answers as an id nobody issued.
 */
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { execdBase, execdSdk } from '../helpers/execdClient';
import { sdkExecd } from '../helpers/execdSdk';

jest.setTimeout(120_000);

describe(`execd on a workspace (${testBackend})`, () => {
  let tb: TestBroker;
  let id = '';
  /** The workspace's terminal: /workspaces/<id>/api/execute. */
  const terminal = async (command: string): Promise<string> => {
    const r = await tb.post(`/workspaces/${id}/api/execute`, { command });
    if (r.status !== 200 || r.json.returncode !== 0) throw new Error(`${command}: ${r.status} ${r.text}`);
    return (r.json.stdout as string).replace(/\r/g, '').replace(/\n$/, '');
  };
  /** execd's command route, as the SDK runs it: stdout lines joined. */
  const execd = async (command: string): Promise<string> => {
    const run = await execdSdk(tb.url, id).commands.run(command);
    if (run.exitCode !== 0 || run.error) throw new Error(`${command}: exit ${run.exitCode}: ${run.logs.stderr.map((m) => m.text).join('\n')}`);
    return run.logs.stdout.map((m) => m.text).join('\n');
  };

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_DEFAULT_WORKSPACE: '0' });
    await tb.waitAllAvailable(90_000);
    const created = await tb.post('/workspaces', {});
    expect(created.status).toBe(201);
    id = created.json.workspace_id as string;
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it("answers execd's ping, and its commands start in the workspace's directory, as its terminal's do", async () => {
    const ping = await fetch(`${execdBase(tb.url, id)}/ping`);
    expect(ping.status).toBe(200);
    const home = await terminal('pwd');
    expect(await execd('pwd')).toBe(home);
    expect(await execd('echo $((6 * 7))')).toBe('42');
  });

  it('execd reads what the terminal wrote, and the terminal reads what execd wrote', async () => {
    const files = sdkExecd(tb.url, id).files;
    const home = await terminal('pwd');
    await terminal('mkdir -p wx && printf from-terminal > wx/t.txt');
    expect(await files.readFile(`${home}/wx/t.txt`)).toBe('from-terminal');
    expect((await files.getFileInfo([`${home}/wx/t.txt`]))[`${home}/wx/t.txt`]).toMatchObject({ type: 'file', size: 13 });
    await files.writeFiles([{ path: `${home}/wx/e.txt`, data: 'from-execd', mode: 600 }]);
    expect(await terminal('echo "$(cat wx/e.txt)|$(stat -c %a wx/e.txt)"')).toBe('from-execd|600');
    // execd's command shell writes where the terminal reads too.
    await execd('printf from-command > wx/c.txt');
    expect(await terminal('cat wx/c.txt')).toBe('from-command');
  });

  it("a deleted workspace's id answers execd as an id nobody issued", async () => {
    const never = await fetch(`${execdBase(tb.url, 'nobody-issued-this')}/ping`);
    expect((await tb.request('DELETE', `/workspaces/${id}`)).status).toBe(200);
    const gone = await fetch(`${execdBase(tb.url, id)}/ping`);
    expect(gone.status).toBe(never.status);
    expect((await gone.text()).replace(id, 'ID')).toBe((await never.text()).replace('nobody-issued-this', 'ID'));
  });
});
