/**
 * The workspace API's streams: /ws/workspace (ordered events, `since` replays, a dropped notice, slow
 * viewers dropped) and /ws/workspace/terminal (raw bytes both ways, resize, many viewers), with
 * real `ws` clients on a real broker.
 */
import { startTestBroker, eventually, metricValue, type TestBroker } from '../helpers/broker';
import { spawn } from 'node:child_process';
import type WebSocket from 'ws';
import { exitOf, openEvents, openSocket, openTerminal, wsUrl, type Event } from '../helpers/workspaceClient';

/**
 * A /ws/workspace reader in a child node process: prints `line <line>` for flood-done, `exit <job>
 * <rc>`, `dropped <from> <to>` for a notice, `gap <expected> <got>` if a seq is neither the next one
 * nor accounted for by a notice, and `closed`.
 */
async function startReaderProcess(url: string): Promise<{ output(): string; kill(): void }> {
  const script = `
    const WebSocket = require('ws');
    const ws = new WebSocket(process.argv[1]);
    let expected = null;
    ws.on('open', () => console.log('open'));
    ws.on('message', (d) => {
      const e = JSON.parse(d.toString());
      if (e.type === 'dropped') {
        console.log('dropped ' + e.from_seq + ' ' + e.to_seq);
        expected = e.to_seq + 1;
        return;
      }
      if (expected !== null && e.seq_id !== expected) console.log('gap ' + expected + ' ' + e.seq_id);
      expected = e.seq_id + 1;
      if (e.type === 'exit') console.log('exit ' + e.job_id + ' ' + e.returncode);
      if (e.type === 'output' && e.line === 'flood-done') console.log('line flood-done');
    });
    ws.on('close', () => console.log('closed'));`;
  const child = spawn(process.execPath, ['-e', script, url], { cwd: __dirname, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  await eventually(() => out.includes('open'), 30_000, () => `the reader process to connect; it printed ${out}`);
  return { output: () => out, kill: () => child.kill('SIGKILL') };
}

/** Pauses a client's socket: the broker's writes pile up as if the client did not read. */
function pause(socket: WebSocket): void {
  (socket as unknown as { _socket: { pause(): void } })._socket.pause();
}

function resume(socket: WebSocket): void {
  (socket as unknown as { _socket: { resume(): void } })._socket.resume();
}

/** ~24 MB through the terminal: past the bounds and what the kernel buffers on loopback, both ways. */
const FLOOD = "head -c 24000000 /dev/zero | tr '\\0' x; echo; echo flood-done";

/** Viewers that fell behind, by `stream` and `outcome` (resync: caught up; cut: did not read). */
const VIEWERS_BEHIND = 'broker_workspace_viewers_behind_total';

describe('workspace: WebSockets', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '3',
      BROKER_WORKSPACE_LOG_EVENTS: '64',
      BROKER_WORKSPACE_VIEWER_BUFFER_BYTES: '65536',
      BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES: '65536',
      BROKER_WORKSPACE_VIEWER_STALL_MS: '5000',
    });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('streams command, output and exit events in seq order without gaps', async () => {
    const client = await openEvents(tb);
    try {
      const r = (await tb.post('/api/execute', { command: 'echo one; echo two' })).json;
      await client.waitFor((e) => e.type === 'exit' && e.job_id === r.job_id, 'the exit event');
      const mine = client.events.filter((e) => e.job_id === r.job_id);
      expect(mine.map((e) => [e.type, e.line])).toEqual([['command', undefined], ['output', 'one'], ['output', 'two'], ['exit', undefined]]);
      const seqs = client.events.map((e) => e.seq_id!);
      expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
    } finally {
      client.close();
    }
  });

  it('replays from ?since=SEQ, then goes live with no gap and no duplicate', async () => {
    const first = (await tb.post('/api/execute', { command: 'echo before' })).json;
    const logs = (await tb.get('/api/workspace/logs?offset=-4')).json as Event[];
    const since = logs.find((e) => e.job_id === first.job_id)!.seq_id!;
    const client = await openEvents(tb, `/ws/workspace?since=${since}`);
    try {
      const second = (await tb.post('/api/execute', { command: 'echo after' })).json;
      await client.waitFor((e) => e.type === 'exit' && e.job_id === second.job_id, 'the live exit event');
      const seqs = client.events.map((e) => e.seq_id!);
      expect(seqs[0]).toBe(since);
      expect(seqs).toEqual(seqs.map((_, i) => since + i));
      expect(client.events.filter((e) => e.job_id === first.job_id).map((e) => e.type)).toEqual(['command', 'output', 'exit']);
    } finally {
      client.close();
    }
  });

  it('says which seqs are gone when `since` is older than the ring, in the logs too', async () => {
    await tb.post('/api/execute', { command: 'seq 1 100' }); // more events than the ring's 64
    const client = await openEvents(tb, '/ws/workspace?since=0');
    try {
      await client.waitFor((e) => e.seq_id !== undefined, 'a replayed event');
      const [notice, firstKept] = client.events;
      expect(notice).toEqual({ type: 'dropped', from_seq: 0, to_seq: firstKept.seq_id! - 1, ring_start: firstKept.seq_id });
    } finally {
      client.close();
    }
    const r = await tb.get('/api/workspace/logs?offset=0&limit=10');
    const [notice, ...rest] = r.json as Event[];
    expect(notice).toMatchObject({ type: 'dropped', from_seq: 0, ring_start: Number(r.headers['x-workspace-log-start']) });
    expect(rest).toHaveLength(0); // 0..9 are all gone: what remains of the range is nothing
    const tail = (await tb.get('/api/workspace/logs?offset=-64&limit=1000')).json as Event[];
    expect(tail).toHaveLength(64);
  });

  it('refuses a WebSocket to an unknown workspace with 404 before the upgrade', async () => {
    await expect(openSocket(wsUrl(tb, '/workspaces/nope/ws/workspace'))).rejects.toMatchObject({ status: 404 });
    await expect(openSocket(wsUrl(tb, '/workspaces/nope/ws/workspace/terminal'))).rejects.toMatchObject({ status: 404 });
  });

  it('carries the raw terminal both ways: typed commands become jobs with source "terminal"; resize applies', async () => {
    const terminal = await openTerminal(tb);
    const events = await openEvents(tb);
    try {
      terminal.socket.send(JSON.stringify({ type: 'resize', cols: 91, rows: 27 }));
      terminal.socket.send(Buffer.from('echo typed-$((6*7)); stty size\r'));
      const command = await events.waitFor((e) => e.type === 'command' && e.source === 'terminal', 'the typed command');
      expect(command.command).toBe('echo typed-$((6*7)); stty size');
      const exit = await events.waitFor((e) => e.type === 'exit' && e.job_id === command.job_id, 'its exit');
      expect(exit.returncode).toBe(0);
      const lines = events.events.filter((e) => e.job_id === command.job_id && e.type === 'output').map((e) => e.line);
      expect(lines).toEqual(['typed-42', '27 91']);
      await terminal.waitForText('typed-42');
      expect(terminal.text()).not.toContain('\x1b]633;'); // the shell's marks never reach viewers
      // An agent's command shows on the person's terminal too.
      await tb.post('/api/execute', { command: 'echo from-agent' });
      await terminal.waitForText('from-agent');
    } finally {
      terminal.close();
      events.close();
    }
  });

  it('keeps non-UTF-8 bytes in the raw stream', async () => {
    const terminal = await openTerminal(tb);
    try {
      await tb.post('/api/execute', { command: "printf 'raw\\377end\\n'" });
      await eventually(() => terminal.bytes().includes(Buffer.from([0x72, 0x61, 0x77, 0xff, 0x65, 0x6e, 0x64])), 30_000, 'the raw bytes');
    } finally {
      terminal.close();
    }
  });

  it('serves many viewers and writers at once', async () => {
    const viewers = await Promise.all(Array.from({ length: 6 }, () => openTerminal(tb)));
    const watchers = await Promise.all(Array.from({ length: 6 }, () => openEvents(tb)));
    try {
      viewers[2].socket.send(JSON.stringify({ type: 'input', data: 'echo many-$((1+1))\r' }));
      const command = await watchers[0].waitFor((e) => e.type === 'command' && e.command === 'echo many-$((1+1))', 'the command');
      for (const w of watchers) await w.waitFor((e) => e.type === 'exit' && e.job_id === command.job_id, 'its exit everywhere');
      for (const v of viewers) await v.waitForText('many-2');
    } finally {
      for (const c of [...viewers, ...watchers]) c.close();
    }
  });

  it('cuts a viewer that does not read, without slowing the terminal, the viewers that read or other workspaces', async () => {
    const other = (await tb.post('/workspaces')).json.workspace_id as string;
    // The reader is another process: in this one it would share the event loop with the broker.
    const reader = await startReaderProcess(wsUrl(tb, '/ws/workspace'));
    const stalled = await openTerminal(tb);
    const stalledEvents = await openEvents(tb);
    pause(stalled.socket);
    pause(stalledEvents.socket);
    const before = tb.broker.seam.openWebSockets;
    const cutBefore = metricValue(await tb.metrics(), VIEWERS_BEHIND, { stream: 'events', outcome: 'cut' });
    try {
      const flood = (await tb.post('/api/execute', { command: FLOOD, wait: 0 })).json;
      // Another workspace answers while the flood runs.
      expect((await tb.post(`/workspaces/${other}/api/execute`, { command: 'echo still-here' })).json).toMatchObject({ returncode: 0, stdout: 'still-here\n' });
      await eventually(() => reader.output().includes(`exit ${flood.job_id} 0`), 120_000, () => `the reader process to see the flood end; it printed ${reader.output().slice(-300)}`);
      // A reader that reads stays, whatever its pace: behind, it catches up from the ring (a
      // `dropped` notice says what it missed), never with a gap.
      expect(reader.output()).toContain('line flood-done');
      expect(reader.output()).not.toContain('closed');
      expect(reader.output()).not.toContain('gap');
      // The events viewer is cut once its socket stays full past the stall; the terminal one, sent only
      // its share of the flood and redraws (the kernel holds them), once it leaves a ping unanswered.
      await eventually(() => tb.broker.seam.openWebSockets <= before - 2, 60_000, 'the stalled viewers to be cut');
      expect(metricValue(await tb.metrics(), VIEWERS_BEHIND, { stream: 'events', outcome: 'cut' })).toBeGreaterThan(cutBefore);
      // The ring stayed within its bound.
      const r = await tb.get('/api/workspace/logs?offset=-1000&limit=1000');
      expect((r.json as Event[]).filter((e) => e.seq_id !== undefined).length).toBeLessThanOrEqual(64);
    } finally {
      reader.kill();
      stalled.socket.terminate();
      stalledEvents.socket.terminate();
      await tb.request('DELETE', `/workspaces/${other}`);
    }
  }, 180_000);

  it('keeps `yes` flooding the terminal within the ring, and other workspaces answer meanwhile', async () => {
    const other = (await tb.post('/workspaces')).json.workspace_id as string;
    try {
      const flood = (await tb.post('/api/execute', { command: 'yes', wait: 0 })).json;
      const next = async (): Promise<number> => Number((await tb.get('/api/workspace/logs?offset=-1')).headers['x-workspace-log-next']);
      const from = await next();
      await eventually(async () => (await next()) > from + 5_000, 60_000, '5000 lines of yes');
      expect((await tb.post(`/workspaces/${other}/api/execute`, { command: 'echo meanwhile' })).json).toMatchObject({ returncode: 0, stdout: 'meanwhile\n' });
      const r = await tb.get('/api/workspace/logs?offset=-1000&limit=1000');
      expect((r.json as Event[]).filter((e) => e.seq_id !== undefined)).toHaveLength(64);
      expect(Number(r.headers['x-workspace-log-next']) - Number(r.headers['x-workspace-log-start'])).toBe(64);
      expect((await tb.post('/api/interrupt')).json).toEqual({ job_id: flood.job_id });
      await eventually(async () => {
        const logs = (await tb.get('/api/workspace/logs?offset=-64&limit=64')).json as Event[];
        return logs.some((e) => e.type === 'exit' && e.job_id === flood.job_id && e.returncode === 130);
      }, 60_000, 'the exit event of yes');
      expect((await tb.post('/api/execute', { command: 'echo after-yes' })).json).toMatchObject({ returncode: 0, stdout: 'after-yes\n' });
    } finally {
      await tb.request('DELETE', `/workspaces/${other}`);
    }
  }, 180_000);
});

describe('workspace: viewers that fall behind catch up', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    // A stall far longer than the test: a paused viewer here is behind, never cut.
    tb = await startTestBroker({
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '1',
      BROKER_WORKSPACE_LOG_EVENTS: '64',
      BROKER_WORKSPACE_VIEWER_BUFFER_BYTES: '65536',
      BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES: '65536',
      BROKER_WORKSPACE_VIEWER_STALL_MS: '600000',
    });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('an events viewer gets a `dropped` notice for what the ring lost, then the rest in order, then goes live', async () => {
    const viewer = await openEvents(tb);
    try {
      pause(viewer.socket);
      const resyncsBefore = metricValue(await tb.metrics(), VIEWERS_BEHIND, { stream: 'events', outcome: 'resync' });
      const flood = (await tb.post('/api/execute', { command: FLOOD, wait: 0 })).json;
      const exit = await exitOf(tb, flood.job_id, '', 120_000);
      resume(viewer.socket);
      const notice = await viewer.waitFor((e) => e.type === 'dropped', 'a dropped notice', 120_000);
      await viewer.waitFor((e) => e.seq_id === exit.seq_id, 'the flood\'s exit event', 60_000);
      // Every seq is there once, in order, or within the notice's range.
      const at = viewer.events.indexOf(notice);
      const before = viewer.events.slice(0, at).map((e) => e.seq_id!);
      const after = viewer.events.slice(at + 1).map((e) => e.seq_id!);
      expect(before).toEqual(before.map((_, i) => before[0] + i));
      if (before.length > 0) expect(notice.from_seq).toBe(before[before.length - 1] + 1);
      expect(after[0]).toBe(notice.to_seq + 1);
      expect(after).toEqual(after.map((_, i) => after[0] + i));
      expect(metricValue(await tb.metrics(), VIEWERS_BEHIND, { stream: 'events', outcome: 'resync' })).toBeGreaterThan(resyncsBefore);
      // And it is live again.
      const next = (await tb.post('/api/execute', { command: 'echo live-again' })).json;
      await viewer.waitFor((e) => e.type === 'exit' && e.job_id === next.job_id, 'the next command\'s exit');
    } finally {
      viewer.socket.terminate();
    }
  }, 300_000);

  it('a terminal viewer is redrawn: a reset, the recent past, then live bytes', async () => {
    const viewer = await openTerminal(tb);
    try {
      pause(viewer.socket);
      const flood = (await tb.post('/api/execute', { command: FLOOD, wait: 0 })).json;
      await exitOf(tb, flood.job_id, '', 120_000);
      resume(viewer.socket);
      await eventually(() => viewer.bytes().includes('\x1bc'), 120_000, 'the redraw\'s reset');
      const afterReset = (): string => viewer.text().slice(viewer.text().lastIndexOf('\x1bc'));
      await eventually(() => afterReset().includes('flood-done'), 60_000, 'the recent past after the reset');
      // It got far less than the flood: the 24 MB it could not take were never buffered for it.
      expect(viewer.bytes().length).toBeLessThan(24_000_000);
      await tb.post('/api/execute', { command: 'echo live-again' });
      await eventually(() => afterReset().includes('live-again'), 30_000, 'live bytes after the redraw');
      expect(metricValue(await tb.metrics(), VIEWERS_BEHIND, { stream: 'terminal', outcome: 'resync' })).toBeGreaterThan(0);
    } finally {
      viewer.socket.terminate();
    }
  }, 300_000);
});

describe('workspace: pings', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_WORKSPACE_PING_MS: '2000' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('cuts a viewer that leaves a ping unanswered, and keeps one that answers', async () => {
    const answering = await openTerminal(tb);
    const silent = await openEvents(tb);
    let pings = 0;
    answering.socket.on('ping', () => pings++);
    try {
      const before = tb.broker.seam.openWebSockets;
      pause(silent.socket);
      await eventually(() => tb.broker.seam.openWebSockets === before - 1, 60_000, 'the silent viewer to be cut');
      // The answering one saw the pings the silent one missed, and is still served.
      expect(pings).toBeGreaterThanOrEqual(1);
      expect(answering.socket.readyState).toBe(answering.socket.OPEN);
      await tb.post('/api/execute', { command: 'echo still-served' });
      await answering.waitForText('still-served');
    } finally {
      answering.close();
      silent.socket.terminate();
    }
  }, 120_000);
});

describe('workspace: with BROKER_TOKEN', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_TOKEN: 'ws-secret' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('guards the routes and the WebSocket upgrades with the one authorize', async () => {
    expect((await tb.post('/api/execute', { command: 'true' })).status).toBe(401);
    await expect(openSocket(wsUrl(tb, '/ws/workspace'))).rejects.toMatchObject({ status: 401 });
    await expect(openSocket(wsUrl(tb, '/ws/workspace/terminal'))).rejects.toMatchObject({ status: 401 });
    await expect(openSocket(wsUrl(tb, '/workspaces/nope/ws/workspace'))).rejects.toMatchObject({ status: 401 });
    const socket = await openSocket(wsUrl(tb, '/ws/workspace'), { Authorization: 'Bearer ws-secret' });
    socket.close();
    expect((await tb.post('/api/execute', { command: 'echo ok' }, { Authorization: 'Bearer ws-secret' })).json).toMatchObject({ returncode: 0 });
  });
});
