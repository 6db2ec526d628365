/**
 * Workspace viewers in a process of their own (forked by the client): N real `ws` clients on one
 * workspace, each reading everything and counting it, so 50 readers cost their own process's CPU,
 * not the measuring client's event loop. They do not parse the events: on this machine the readers
 * share the broker's cores, and 50 parsers of a flood's events would measure the readers' CPU.
 *
 * IPC, one request at a time: {open: {url, sockets}} opens them (answers when all are open),
 * {count: true, marker?} answers the bytes and messages each got, how many were cut, and how many
 * have `marker` in the last bytes they got (they are current: a viewer that fell behind and caught
 * up ends on the stream's latest bytes too); {close: true} closes them all. It exits when its
 * parent disconnects.
 */
import WebSocket from 'ws';

interface Reader {
  socket: WebSocket;
  bytes: number;
  messages: number;
  closed: boolean;
  /** The last TAIL_BYTES it got, as latin1. */
  tail: string;
}

const TAIL_BYTES = 1024;

export type ViewerRequest = { open: { url: string; sockets: number } } | { count: true; marker?: string } | { close: true };

export interface ViewerCounts {
  sockets: number;
  /** Per socket, what it received since it opened. */
  bytes: number[];
  messages: number[];
  /** Sockets the broker closed or cut while they were open (a viewer dropped for falling behind). */
  closed: number;
  /** Sockets whose last bytes hold the request's marker. */
  current: number;
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
    const reader: Reader = { socket, bytes: 0, messages: 0, closed: false, tail: '' };
    socket.on('message', (data: Buffer) => {
      reader.bytes += data.length;
      reader.messages++;
      reader.tail = (reader.tail + data.subarray(-TAIL_BYTES).toString('latin1')).slice(-TAIL_BYTES);
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
    const marker = request.marker;
    const counts: ViewerCounts = {
      sockets: readers.length,
      bytes: readers.map((r) => r.bytes),
      messages: readers.map((r) => r.messages),
      closed: readers.filter((r) => r.closed).length,
      current: marker === undefined ? 0 : readers.filter((r) => r.tail.includes(marker)).length,
      cpuMs: cpuMs(),
    };
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
