/**
 * The HTTP floors, each in its own process, forked by run.ts (the port comes back over IPC):
 * - `http`: a bare node:http server that reads the body and answers `{}` to every POST (the no-op floor);
 * - `app`: the broker's own app (createApp: the request seam, body reader, routers, validation, error formats,
 *   metrics) over a stub pool that answers every execute at once. Broker minus this = pool + shell.
 * - `relay`: the broker's shape with no work in it: node:http that, per request, writes a line to a
 *   `cat` child over a pipe and answers `{}` when the line comes back. Relay minus no-op is what the
 *   second process hop costs here (client -> server -> child -> server -> client), whatever the code.
 */
import http from 'node:http';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createApp } from '../src/api/app';
import { loadConfig } from '../src/config/config';
import { BrokerMetrics } from '../src/metrics/metrics';
import type { SessionPool } from '../src/core/pool/pool';
import type { ExecResult } from '../src/core/session/bashSession';
import { NO_USAGE, commandFacts } from '../src/core/session/commandFacts';

const NO_RUN = { status: 0, interrupted: false, durationMs: 0, droppedStdout: 0, droppedStderr: 0 };

const EMPTY = Buffer.from('{}');

function bareHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.on('data', () => undefined);
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': EMPTY.length });
    res.end(EMPTY);
  });
}

function stubApp(): http.RequestListener {
  const result: ExecResult = { stdout: '', stderr: '', returnCode: 0, timedOut: false, truncated: false, facts: commandFacts(NO_USAGE, NO_USAGE, NO_RUN) };
  const pool = { isClosing: false, execute: async () => result } as unknown as SessionPool;
  return createApp(pool, new BrokerMetrics(), loadConfig({}));
}

/** One request at a time per connection, and the bench drives it with one connection: one waiter. */
function relayHandler(): http.RequestListener {
  const cat = spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  cat.on('exit', () => process.exit(1)); // the floor is gone: the orchestrator sees the server die
  const waiting: (() => void)[] = [];
  let pending = '';
  cat.stdout.setEncoding('latin1');
  cat.stdout.on('data', (text: string) => {
    pending += text;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      pending = pending.slice(nl + 1);
      waiting.shift()?.();
    }
  });
  return (req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      waiting.push(() => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': EMPTY.length });
        res.end(EMPTY);
      });
      cat.stdin.write('x\n');
    });
  };
}

const mode = process.argv[2];
const handler = mode === 'app' ? stubApp() : mode === 'relay' ? relayHandler() : bareHandler;
const server = http.createServer({ keepAliveTimeout: 65_000 }, handler);
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
