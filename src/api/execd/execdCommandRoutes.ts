/**
 * execd's process routes for every sandbox, under `/sandboxes/{id}/execd` (OpenSandbox
 * execd's paths): `/ping`, commands (`/command` as SSE, foreground or background, its status, its
 * logs, its interrupt) and bash sessions (`/session`). The `{id}` resolves through a
 * SandboxDirectory; the work is the ExecdService's (core/execd).
 */
import type { SandboxHandle } from '../../core/sandbox/sandboxHandle';
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import type { ExecdService } from '../../core/execd/execdService';
import type { SandboxExecd } from '../../core/execd/sandboxExecd';
import type { CommandStatus } from '../../core/execd/commands';
import { sendJson } from '../../http/httpJson';
import type { Router } from '../../http/router';
import { parseCreateSession, parseCursor, parseRunCommand, parseSessionRun, requiredQuery, type ExecdInputLimits } from './execdInput';
import { sendDone, streamRun } from './execdStream';
import { apiErrors, served } from '../../http/contract';
import { EXECD_PROCESS_CONTRACT } from './execdContract';

const R = EXECD_PROCESS_CONTRACT.routes;

/** The sandbox of a request and its execd. */
export interface ExecdTarget {
  handle: SandboxHandle;
  execd: SandboxExecd;
  /** Counts as activity on the sandbox (an open stream keeps an idle reclaim away). */
  touch: () => void;
}

export function execdTarget(execd: ExecdService, directory: SandboxDirectory, sandboxId: string): ExecdTarget {
  const handle = directory.resolve(sandboxId);
  return { handle, execd: execd.of(handle), touch: () => void directory.resolve(sandboxId) };
}

/** CommandStatusResponse: RFC 3339 times, null while running. */
function statusBody(s: CommandStatus): Record<string, unknown> {
  const body: Record<string, unknown> = {
    id: s.id,
    content: s.content,
    running: s.running,
    exit_code: s.exitCode,
    started_at: s.startedAt.toISOString(),
    finished_at: s.finishedAt?.toISOString() ?? null,
  };
  if (s.error !== null) body.error = s.error;
  return body;
}

export function execdCommandRouter(execd: ExecdService, directory: SandboxDirectory, limits: ExecdInputLimits): Router {
  const target = (id: string): ExecdTarget => execdTarget(execd, directory, id);
  return {
    name: 'execd-commands',
    ...apiErrors(EXECD_PROCESS_CONTRACT),
    routes: [
      served(R.ping, ({ params, res }) => {
        // A client pings before its first command (the SDK waits for it): a runner gets ready
        // meanwhile, opened once the answer is out (opening one costs a spawn the ping must not wait on).
        const { execd } = target(params.sandboxId);
        sendDone(res);
        execd.warm();
      }),
      served(R.runCommand, async ({ params, body, res }) => {
        const t = target(params.sandboxId);
        const run = await t.execd.command(parseRunCommand(body, t.handle.root, limits));
        await streamRun(res, run, t.touch);
      }),
      served(R.interruptCommand, ({ params, query, res }) => {
        target(params.sandboxId).execd.interrupt(requiredQuery(query, 'id'));
        sendDone(res);
      }),
      served(R.commandStatus, ({ params, res }) => {
        sendJson(res, 200, statusBody(target(params.sandboxId).execd.status(params.commandId)));
      }),
      served(R.commandLogs, ({ params, query, res }) => {
        const { text, nextCursor } = target(params.sandboxId).execd.logs(params.commandId, parseCursor(query));
        res.writeHead(200, {
          'Content-Type': 'text/plain; charset=utf-8',
          'Content-Length': String(Buffer.byteLength(text)),
          'EXECD-COMMANDS-TAIL-CURSOR': String(nextCursor),
        });
        res.end(text);
      }),
      served(R.createSession, async ({ params, body, res }) => {
        const t = target(params.sandboxId);
        sendJson(res, 200, { session_id: await t.execd.createSession(parseCreateSession(body, t.handle.root)) });
      }),
      served(R.sessionRun, async ({ params, body, res }) => {
        const t = target(params.sandboxId);
        const { command, cwd, timeoutMs } = parseSessionRun(body, t.handle.root, limits);
        await streamRun(res, t.execd.sessionRun(params.sessionId, command, { cwd, timeoutMs }), t.touch);
      }),
      served(R.deleteSession, async ({ params, res }) => {
        await target(params.sandboxId).execd.deleteSession(params.sessionId);
        sendDone(res);
      }),
    ],
  };
}
