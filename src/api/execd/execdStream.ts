/**
 * A run's events as execd's SSE stream: one `data: <json>` message per event (one per output line),
 * a `ping` event after 3 s of silence as OpenSandbox's execd sends, and the sandbox's lease kept
 * from idling out while the stream is open (a long command is activity).
 */
import type { ServerResponse } from 'node:http';
import { openEventStream } from '../../http/sse';
import { ExecdEvents } from '../../core/execd/execdEvents';
import type { PreparedRun } from '../../core/execd/sandboxExecd';
import { sendJson } from '../../http/httpJson';

const PING_AFTER_MS = 3_000;
/** How often an open stream counts as activity on its sandbox (well below any idle timeout). */
const TOUCH_EVERY_MS = 10_000;

export async function streamRun(res: ServerResponse, run: PreparedRun, touch: () => void): Promise<void> {
  const stream = openEventStream(res, { keepAliveMs: PING_AFTER_MS, keepAliveFrame: () => `data: ${JSON.stringify(ExecdEvents.ping())}\n\n` });
  const toucher = setInterval(() => {
    try {
      touch();
    } catch {
      /* the sandbox ended: the run ends with it */
    }
  }, TOUCH_EVERY_MS);
  toucher.unref();
  try {
    await run.start((event) => stream.send({ data: JSON.stringify(event) }));
  } finally {
    clearInterval(toucher);
    stream.close();
  }
}

/** A success without a body of its own: JSON `null`, as execd answers (every 2xx body is JSON to the SDKs). */
export function sendDone(res: ServerResponse): void {
  sendJson(res, 200, null);
}
