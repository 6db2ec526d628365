/**
 * scripts/sandbox-task.ts run as a user runs it (a node process, against a broker process), and the
 * LLM key looked for everywhere it must not be: the broker's log (at debug), the container's log,
 * every event of both streams, the sandbox's files, its configuration, and the environment of the
 * commands the agent runs.
 * @backend docker
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import Dockerode from 'dockerode';
import { describeDocker } from '../helpers/dockerSuite';
import { endsWithToolResult, lastUserText } from '../../devtools/stubLlm';
import { SECRET_KEY, execIn, taskFixture, type TaskFixture } from '../helpers/taskSuite';
import { BrokerProcess } from '../../devtools/brokerProcess';

jest.setTimeout(240_000);
const ROOT = path.resolve(__dirname, '../..');
/** The CLI runs as a user runs it, from its source; the broker is the compiled one (brokerProcess.ts says why). */
const TS_NODE = ['-r', 'ts-node/register/transpile-only'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to its exit, `input` written to its stdin. */
function cli(url: string, args: string[], input = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...TS_NODE, 'scripts/sandbox-task.ts', `--url=${url}`, ...args], { cwd: ROOT, env: { PATH: process.env.PATH } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

describeDocker('scripts/sandbox-task.ts and where the key is not (Docker)', () => {
  let fx: TaskFixture;
  let broker: BrokerProcess | null = null;
  let url = '';
  const docker = new Dockerode();

  beforeAll(async () => {
    fx = await taskFixture('cli');
    fx.stub.reply = (req) => {
      const text = lastUserText(req);
      if (endsWithToolResult(req)) return { text: ['Tool said: ', text.trim()] };
      if (text.includes('read the readme')) return { text: ['Reading.'], toolCalls: [{ name: 'bash', input: { command: 'cat README.md' } }] };
      if (text.includes('dump the environment')) {
        const command = 'env; for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null; echo ENV-DUMPED';
        return { text: ['Dumping.'], toolCalls: [{ name: 'bash', input: { command } }] };
      }
      return { text: [`You said: ${text}`] };
    };
    // Its environment is exactly this one (none of the test process's), so where the key is given is known.
    const env = { PATH: process.env.PATH, BROKER_BACKEND: 'docker', BROKER_IMAGE: process.env.BROKER_IMAGE ?? 'bash-broker-test:latest', BROKER_NETWORK_MODE: 'none', PORT: '0', BROKER_LOG_LEVEL: 'debug', ...fx.env };
    // Its whole log is searched for the key below.
    broker = await BrokerProcess.start('broker', env, { inheritEnv: false, logChars: Infinity });
    url = broker.url;
  });

  afterAll(async () => {
    await broker?.stop();
    await fx?.close();
  });

  let id = '';

  it('creates a sandbox and prints its events until the first run ends', async () => {
    const run = await cli(url, ['--repo=acme/demo-repo', '--prompt=Please read the readme']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    id = /sandbox (task-[0-9a-f]+) created for acme\/demo-repo/.exec(run.stdout)![1];
    const lines = run.stdout.split('\n');
    const order = [
      /^\[control #1\] sandbox ready$/,
      /^\[coding #\d+\] tool bash: \{"command":"cat README.md"\}$/,
      /^\[coding #\d+\] tool bash done: This is demo-repo: it prints the answer 42\.$/,
      /^\[coding #\d+\] assistant: Tool said: This is demo-repo/,
      /^\[coding #\d+\] --- turn ends \(stop\)$/,
      /^sandbox task-[0-9a-f]+: follow it again with --id=task-[0-9a-f]+ --cursor=\d+$/,
    ];
    let at = -1;
    for (const pattern of order) {
      const next = lines.findIndex((l, i) => i > at && pattern.test(l));
      expect([pattern.source, next]).toEqual([pattern.source, expect.any(Number)]);
      expect(next).toBeGreaterThan(at);
      at = next;
    }
    expect(run.stdout).toMatch(/\[control #\d+\] repo cloned: acme\/demo-repo/);
  });

  it('sends a follow-up with --id/--prompt and prints its answer', async () => {
    const run = await cli(url, [`--id=${id}`, '--prompt=say hello']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\[control #\d+\] prompt sent: say hello/);
    expect(run.stdout).toMatch(/\[coding #\d+\] assistant: You said: say hello/);
    // Only what came after the follow-up: the first run is not printed again.
    expect(run.stdout).not.toContain('sandbox ready');
  });

  it('streams from a cursor with --id/--cursor and takes prompts from stdin with --interactive', async () => {
    const run = await cli(url, [`--id=${id}`, '--cursor=3', '--interactive'], 'one more thing\n');
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(/\[(control|coding) #[123]\]/);
    expect(run.stdout).toMatch(/\[control #4\]/);
    expect(run.stdout).toMatch(/assistant: You said: one more thing/);
  });

  it('fails clearly on a bad flag', async () => {
    const run = await cli(url, ['--id=x', '--cursor=soon']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--cursor must be an integer >= 0, got 'soon'/);
  });

  it('keeps the key out of logs, events, files, the container config and the env of the agent commands', async () => {
    const run = await cli(url, [`--id=${id}`, '--prompt=dump the environment', '--raw']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('ENV-DUMPED'); // the dump ran and its output is in the events
    expect(run.stdout).toContain('PATH=');
    // Every event of both streams, as a client reads them.
    const everything = await cli(url, [`--id=${id}`, '--cursor=0', '--raw', '--interactive'], '');
    expect(everything.stdout).toContain('"type":"tool_execution_end"');
    expect(everything.stdout).toContain('ENV-DUMPED');
    const [info] = (await fx.containers()).filter((c) => c.Labels['io.bash-broker.owner'] === id);
    const container = docker.getContainer(info.Id);
    const inspect = JSON.stringify(await container.inspect());
    const logs = (await container.logs({ stdout: true, stderr: true })).toString('utf8');
    const grepAll = (needle: string): Promise<string> =>
      execIn(container, ['sh', '-c', `grep -rIl --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e '${needle}' / 2>/dev/null; echo GREP-DONE`]);
    // The same search finds what is there: the clone's README, and Pi's session file holding the answer.
    const control = await grepAll('it prints the answer 42');
    expect(control).toContain('/root/workspace/demo-repo/README.md');
    expect(control).toMatch(/\/root\/\.pi\/agent\/sessions\/.*\.jsonl/);
    const grep = await grepAll(SECRET_KEY);
    expect(grep).toContain('GREP-DONE');
    for (const [where, text] of Object.entries({ brokerLog: broker!.output, stdout: run.stdout, events: everything.stdout, inspect, logs, grep })) {
      expect([where, text.includes(SECRET_KEY)]).toEqual([where, false]);
    }
    // Debug logging was on, and the key did reach the LLM (it is in use, just nowhere else).
    expect(broker!.output).toMatch(/"level":(20|30)/);
    expect(fx.stub.requests.some((r) => r.headers['x-api-key'] === SECRET_KEY)).toBe(true);
  });
});
