/**
 * Task sandboxes, Core's API for them, each route served from its contract (taskContract.ts); errors
 * in the pool format `{"detail","code"}`:
 *   POST   /sandboxes                   {name?, repo, prompt?}  201, once the sandbox is usable
 *   GET    /sandboxes/:id               its record
 *   POST   /sandboxes/:id/prompt        {message}   202
 *   POST   /sandboxes/:id/abort         202
 *   GET    /sandboxes/:id/stream/control   SSE: lifecycle events
 *   GET    /sandboxes/:id/stream/coding    SSE: the agent's events
 *   DELETE /sandboxes/:id               200, the record (status terminated)
 * Each SSE message is `id: <cursor>` and `data: {"cursor": N, "event": {...}}`; `?cursor=N` or a
 * Last-Event-ID header resumes after N. (execd's routes live under /sandboxes/:id/execd: no overlap.)
 */
import type { StreamName, TaskSandbox } from '../../core/tasks/taskSandbox';
import type { TaskService } from '../../core/tasks/taskService';
import { sendJson } from '../../http/httpJson';
import type { RouteContext, Router } from '../../http/router';
import { openEventStream } from '../../http/sse';
import { parseCreateTask, parsePromptBody, parseResumeCursor } from './taskInput';
import { apiErrors, served } from '../../http/contract';
import { TASK_CONTRACT } from './taskContract';

const R = TASK_CONTRACT.routes;

export function taskRouter(tasks: TaskService, options: { keepAliveMs: number }): Router {
  const stream = (name: StreamName) => (ctx: RouteContext) => serveStream(tasks.get(ctx.params.id), name, ctx, options.keepAliveMs);
  return {
    name: 'task sandboxes',
    ...apiErrors(TASK_CONTRACT),
    routes: [
      served(R.create, async ({ res, body }) => sendJson(res, 201, (await tasks.create(parseCreateTask(body))).record())),
      served(R.get, ({ res, params }) => sendJson(res, 200, tasks.get(params.id).record())),
      served(R.prompt, async ({ res, params, body }) => sendJson(res, 202, await tasks.prompt(params.id, parsePromptBody(body)))),
      served(R.abort, async ({ res, params }) => sendJson(res, 202, await tasks.abort(params.id))),
      served(R.controlStream, stream('control')),
      served(R.codingStream, stream('coding')),
      served(R.remove, async ({ res, params }) => sendJson(res, 200, (await tasks.remove(params.id)).record())),
    ],
  };
}

/** Replays after the client's cursor, then follows live; ends after the sandbox's last event. */
async function serveStream(sandbox: TaskSandbox, name: StreamName, ctx: RouteContext, keepAliveMs: number): Promise<void> {
  let cursor = parseResumeCursor(new URLSearchParams(ctx.query).get('cursor'), ctx.req.headers['last-event-id']);
  const journal = sandbox.streams[name];
  const sse = openEventStream(ctx.res, { keepAliveMs });
  while (sse.isOpen) {
    // Everything after the cursor (a cursor ahead of the stream reads as "nothing yet").
    const { dropped, events } = journal.slice(cursor + 1, Infinity);
    for (const envelope of dropped ? [dropped, ...events] : events) {
      if (!sse.send({ id: String(envelope.cursor), data: JSON.stringify(envelope) })) await sse.drained();
      cursor = envelope.cursor;
      if (!sse.isOpen) return;
    }
    if (events.length === 0 && !dropped) {
      if (journal.closed) break;
      await journal.nextEvent(sse.signal);
    }
  }
  sse.close();
}

