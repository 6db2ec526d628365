/**
 * A workspace's terminal on Docker: where the container has util-linux's `script` (the sandbox image), a
 * workspace's terminal runs on the broker's named pipes through it (fifoTerminal.ts), not through a
 * `docker exec`; where it has none (the test image: bash and busybox), the terminal falls back to a
 * `docker exec` with a TTY. Either way it is a real terminal: resized, an exit status reported.
 */
import { startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { openTerminal } from '../helpers/workspaceClient';

jest.setTimeout(240_000);

async function execute(tb: TestBroker, command: string): Promise<{ returncode: number | null; stdout: string }> {
  const r = await tb.post('/api/execute', { command });
  if (r.status !== 200) throw new Error(`execute failed: ${r.status} ${r.text}`);
  return r.json;
}

describeDocker('docker: a workspace terminal on pipes, or through docker exec', () => {
  let tb: TestBroker | null = null;
  afterEach(async () => {
    await tb?.close();
    tb = null;
  });

  it.each([
    ['bash-broker-sandbox:latest', 'script'],
    [process.env.BROKER_IMAGE ?? 'bash-broker-test:latest', 'no script'],
  ])('on %s (%s)', async (image, kind) => {
    tb = await startTestBroker({ BROKER_IMAGE: image, BROKER_DEPLOYMENT: testDeployment(`ws-term-${process.pid}`), BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
    const parent = (await execute(tb, 'cat /proc/$PPID/comm')).stdout.trim();
    if (kind === 'script') expect(parent).toBe('script');
    else expect(parent).not.toBe('script');

    const terminal = await openTerminal(tb);
    try {
      terminal.socket.send(JSON.stringify({ type: 'resize', cols: 91, rows: 27 }));
      terminal.socket.send(JSON.stringify({ type: 'input', data: 'echo size-$(stty size | tr " " x)\r' }));
      await terminal.waitForText('size-27x91');
    } finally {
      terminal.close();
    }
    expect((await execute(tb, 'kill -9 $$')).returncode).toBe(137);
    expect(await execute(tb, 'echo fresh')).toMatchObject({ returncode: 0, stdout: 'fresh\n' });
  });
});
