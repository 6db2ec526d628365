/**
 * Workspace viewers in a process of their own (forked by the client): N real `ws` clients on one
 * workspace, each reading everything and counting it, so 50 readers cost their own process's CPU,
 * not the measuring client's event loop. They do not parse the events: on this machine the readers
 * share the broker's cores, and 50 parsers of a flood's events would measure the readers' CPU.
 *
 * IPC, one request at a time: {open: {url, sockets}} opens them (answers when all are open),
 * {count: true} answers the bytes and messages each got and how many were cut, {close: true} closes
 * them all. It exits when its parent disconnects.
 */
import WebSocket from 'ws';

interface Reader {
  socket: WebSocket;
  bytes: number;
  messages: number;
  closed: boolean;
}

export type ViewerRequest = { open: { url: string; sockets: number } } | { count: true } | { close: true };

export interface ViewerCounts {
  sockets: number;
  /** Per socket, what it received since it opened. */
  bytes: number[];
  messages: number[];
  /** Sockets the broker closed or cut while they were open (a viewer dropped for falling behind). */
  closed: number;
  /** CPU this process used since it started, ms (user + system). */
  cpuMs: number;
}

let readers: Reader[] = [];

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function openOne(url: string): Promise<Reader> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const reader: Reader = { socket, bytes: 0, messages: 0, closed: false };
    socket.on('message', (data: Buffer) => {
      reader.bytes += data.length;
      reader.messages++;
    });
    socket.once('open', () => resolve(reader));
    socket.once('error', reject);
    socket.once('close', () => (reader.closed = true));
  });
}

async function handle(request: ViewerRequest): Promise<unknown> {
  if ('open' in request) {
    const { url, sockets } = request.open;
    readers.push(...(await Promise.all(Array.from({ length: sockets }, () => openOne(url)))));
    return { sockets: readers.length };
  }
  if ('count' in request) {
    const counts: ViewerCounts = { sockets: readers.length, bytes: readers.map((r) => r.bytes), messages: readers.map((r) => r.messages), closed: readers.filter((r) => r.closed).length, cpuMs: cpuMs() };
    return counts;
  }
  const closing = readers.map((r) => (r.closed ? Promise.resolve() : new Promise<void>((resolve) => {
    r.socket.once('close', () => resolve());
    r.socket.close();
  })));
  readers = [];
  await Promise.race([Promise.all(closing), new Promise((resolve) => setTimeout(resolve, 5000))]);
  return {};
}

process.on('message', (request: ViewerRequest) => {
  handle(request).then(
    (result) => process.send?.({ ok: true, result }),
    (err: Error) => process.send?.({ ok: false, error: err.stack ?? String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send?.({ ok: true, result: 'ready' });
