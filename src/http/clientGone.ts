import type { ServerResponse } from 'node:http';

/**
 * Aborts when the client goes away before it was answered, so that what waits for it leaves its
 * queue (an acquire waiting for a session, a create waiting for a warm container).
 */
export function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
