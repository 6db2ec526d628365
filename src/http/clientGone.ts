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

/**
 * Runs `undo` if the client goes away before its answer was written whole: what the answer handed
 * over (a lease) has nobody to hold it, and is given back at once. Not written whole: the answer
 * did not reach the connection, or the connection was reset under it (a client closing with the
 * answer unread resets it; one that read it closes cleanly). A response destroyed already (its
 * call cut on purpose, whose close event is yet to come) delivers nothing: undone at once, since an
 * answer written to it meanwhile would count as finished.
 */
export function ifUndelivered(res: ServerResponse, undo: () => void): void {
  const socket = res.socket;
  const undelivered = (): boolean => !res.writableFinished || (socket?.errored ?? null) !== null;
  if (res.closed || res.destroyed) {
    if (undelivered()) undo();
    return;
  }
  res.once('close', () => {
    if (undelivered()) undo();
  });
}
