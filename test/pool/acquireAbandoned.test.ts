/**
 * An acquire whose client leaves after its session was taken but before its answer was written whole
 * (its startup commands still running, or its answer still being written) leaves no lease behind:
 * the session is released at once, not held until the idle reclaim. A waiting acquire that leaves
 * its queue is acquire.test.ts's. An acquire with a request_id outlives its client on purpose: its
 * retry gets the lease.
 * @backend local
 */
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestBroker, eventually, type TestBroker } from '../helpers/broker';

let tb: TestBroker;
let dir: string;

beforeAll(async () => {
  // An idle timeout far beyond the test: only a release can free the session.
  // Answers far larger than a loopback connection's buffers hold: one is still being written while its client does not read.
  tb = await startTestBroker({ BROKER_CONTAINERS: '2', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_IDLE_TIMEOUT: '3600', BROKER_MAX_OUTPUT_BYTES: String(64 * 1024 * 1024) });
});
afterAll(async () => {
  await tb.close();
});
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abandoned-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A startup command that says it started (a file per session) and holds until the test lets it go. */
function holdingStartup(): string[] {
  return [`touch ${dir}/started.$$; while [ ! -e ${dir}/go ]; do sleep 0.02; done`];
}

function started(): number {
  return fs.readdirSync(dir).filter((f) => f.startsWith('started.')).length;
}

function liveLeases(): number {
  return tb.broker.pools.main.pool.liveLeases().length;
}

test('a client that leaves while its acquire runs its startup commands leaves no lease', async () => {
  const controller = new AbortController();
  const gone = tb.postAbortable('/session/acquire', { startup_commands: holdingStartup() }, controller.signal);
  gone.catch(() => undefined);
  await eventually(() => started() === 1, 20_000, 'the startup command to run');
  expect(liveLeases()).toBe(1);
  controller.abort();
  await expect(gone).rejects.toThrow();
  // The startup command ends; the lease it made has nobody to answer.
  fs.writeFileSync(path.join(dir, 'go'), '');
  await eventually(() => liveLeases() === 0, 20_000, 'the abandoned lease to be released');
  await tb.waitAllAvailable();
  expect((await tb.health()).in_use_sessions).toBe(0);
  expect(await tb.metrics()).not.toMatch(/broker_sessions_reclaimed_total\{[^}]*\} [1-9]/);
});

test('a client that leaves while its acquire_group runs its startup commands leaves none of the group', async () => {
  const controller = new AbortController();
  const gone = tb.postAbortable('/session/acquire_group', { n: 2, startup_commands: holdingStartup() }, controller.signal);
  gone.catch(() => undefined);
  await eventually(() => started() === 2, 20_000, "both members' startup commands to run");
  controller.abort();
  await expect(gone).rejects.toThrow();
  fs.writeFileSync(path.join(dir, 'go'), '');
  await eventually(() => liveLeases() === 0, 20_000, "the abandoned group's leases to be released");
  await tb.waitAllAvailable();
});

test('a client that leaves while its answer is being written leaves no lease', async () => {
  const body = JSON.stringify({ startup_commands: [`head -c ${48 * 1024 * 1024} /dev/zero | tr '\\0' a`] });
  const { port } = new URL(tb.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.write(`POST /session/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  // The answer began: the lease is granted, and its answer is more than the connection holds unread.
  const head = await new Promise<string>((resolve, reject) => {
    socket.once('data', (chunk: Buffer) => {
      socket.pause(); // from its first bytes on, the client reads nothing more
      resolve(chunk.toString('latin1', 0, 64));
    });
    socket.once('error', reject);
  });
  expect(head).toMatch(/^HTTP\/1\.1 200 /);
  expect(liveLeases()).toBe(1);
  socket.destroy();
  await eventually(() => liveLeases() === 0, 20_000, 'the lease whose answer never arrived to be released');
  await tb.waitAllAvailable();
});

test('an acquire with a request_id keeps its lease for the retry when its client leaves', async () => {
  const controller = new AbortController();
  const body = { request_id: 'abandoned-then-retried', startup_commands: holdingStartup() };
  const gone = tb.postAbortable('/session/acquire', body, controller.signal);
  gone.catch(() => undefined);
  await eventually(() => started() === 1, 20_000, 'the startup command to run');
  controller.abort();
  await expect(gone).rejects.toThrow();
  fs.writeFileSync(path.join(dir, 'go'), '');
  const retry = await tb.post('/session/acquire', body);
  expect(retry.status).toBe(200);
  expect(liveLeases()).toBe(1);
  await tb.release(retry.json.session_id);
  await tb.waitAllAvailable();
});
