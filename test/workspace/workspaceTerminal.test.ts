/**
 * A workspace's terminal on Docker: with per-lease isolation (the default), the broker's session init
 * opens it on the broker's named pipes, in any image (fifoTerminal.ts, isolation/sessionEnter.c);
 * without, where the container has util-linux's `script` (the sandbox image), the terminal runs on
 * the pipes through it, not through a `docker exec`; where it has none (the test image: bash and
 * busybox), the terminal falls back to a `docker exec` with a TTY. Either way it is a real terminal:
 * resized, an exit status reported.
 *
 * With per-lease isolation on, either terminal runs in the view of the session the workspace holds
 * (its pool slot's), never in its container's own: what it writes, even in /etc, a neighbour lease of
 * that container does not see, and the other way round; the files routes and the terminal see one
 * directory; ^C and the window's size reach it through its namespaces (its pid there is not its pid
 * in the container). No timing is asserted: every wait is on an event or a state.
 * @backend docker
 */
import { startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker, sessionIsolation } from '../helpers/dockerSuite';
import { exitOf, openTerminal, workspaceExecute } from '../helpers/workspaceClient';

jest.setTimeout(240_000);
const LONG = 120_000;
const IMAGES = [
  ['bash-broker-sandbox:latest', 'script'],
  [process.env.BROKER_IMAGE ?? 'bash-broker-test:latest', 'no script'],
];


describeDocker('docker: a workspace terminal on pipes, or through docker exec', () => {
  let tb: TestBroker | null = null;
  afterEach(async () => {
    await tb?.close();
    tb = null;
  });

  it.each(IMAGES)('on %s (%s)', async (image, kind) => {
    tb = await startTestBroker({ BROKER_IMAGE: image, BROKER_DEPLOYMENT: testDeployment(`ws-term-${process.pid}`), BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
    const parent = (await workspaceExecute(tb, 'cat /proc/$PPID/comm')).stdout.trim();
    if (sessionIsolation) expect(parent).toBe('session-init');
    else if (kind === 'script') expect(parent).toBe('script');
    else expect(parent).not.toBe('script');

    const terminal = await openTerminal(tb);
    try {
      terminal.socket.send(JSON.stringify({ type: 'resize', cols: 91, rows: 27 }));
      terminal.socket.send(JSON.stringify({ type: 'input', data: 'echo size-$(stty size | tr " " x)\r' }));
      await terminal.waitForText('size-27x91');
    } finally {
      terminal.close();
    }
    expect((await workspaceExecute(tb, 'kill -9 $$')).returncode).toBe(137);
    expect(await workspaceExecute(tb, 'echo fresh')).toMatchObject({ returncode: 0, stdout: 'fresh\n' });
  });

  it.each(IMAGES)('isolated: on %s (%s), in the view of the session it holds', async (image) => {
    const b = (tb = await startTestBroker({
      BROKER_IMAGE: image,
      BROKER_DEPLOYMENT: testDeployment(`ws-term-iso-${process.pid}`),
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '3',
      BROKER_SESSION_ISOLATION: '1',
    }));
    await b.waitAllAvailable(LONG);
    expect((await b.get('/health')).json.isolation).toMatchObject({ isolated_containers: 1, unisolated_containers: 0 });
    // The session init opened the terminal, whatever the image has.
    expect((await workspaceExecute(b, 'cat /proc/$PPID/comm')).stdout).toBe('session-init\n');

    // The terminal's bash is in a pid namespace of its own: few processes, none of the container's.
    const own = await workspaceExecute(b, 'echo ws >/etc/ws-mark && echo from-terminal >made.txt && ls /proc | grep -c "^[0-9]"');
    expect(own.returncode).toBe(0);
    expect(Number(own.stdout.trim())).toBeLessThan(12);
    // The files routes and the terminal share the workspace's directory.
    expect((await b.get('/api/read?filename=made.txt')).json).toMatchObject({ content: 'from-terminal\n' });
    expect((await b.post('/api/write', { filename: 'routed.txt', content: 'from-route\n' })).status).toBe(200);
    expect((await workspaceExecute(b, 'cat routed.txt')).stdout).toBe('from-route\n');

    // A neighbour lease of the same container: neither sees the other's writes.
    const lease = await b.acquire();
    expect(await b.exec(lease, '[ -e /etc/ws-mark ] && echo seen; echo lease >/etc/lease-mark; echo done')).toMatchObject({ stdout: 'done\n', return_code: 0 });
    expect((await workspaceExecute(b, '[ -e /etc/lease-mark ] && echo seen; cat /etc/ws-mark')).stdout).toBe('ws\n');
    await b.release(lease);

    // ^C reaches the job through the terminal's namespaces.
    const started = await b.post('/api/execute', { command: 'sleep 300', wait: 0 });
    expect(started.json.returncode).toBeNull();
    expect((await b.post('/api/interrupt')).json).toEqual({ job_id: started.json.job_id });
    expect((await exitOf(b, started.json.job_id as string, '', LONG)).returncode).toBe(130);

    // A second terminal shares the view; its window's size is applied there.
    const terminal = await openTerminal(b);
    try {
      terminal.socket.send(JSON.stringify({ type: 'resize', cols: 93, rows: 29 }));
      terminal.socket.send(JSON.stringify({ type: 'input', data: 'echo size-$(stty size | tr " " x)-$(cat /etc/ws-mark)\r' }));
      await terminal.waitForText('size-29x93-ws');
    } finally {
      terminal.close();
    }
  });
});
