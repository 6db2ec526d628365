/**
 * The HTTP floors, each in its own process, forked by run.ts (the port comes back over IPC):
 * - `http`: a bare node:http server that reads the body and answers `{}` to every POST (the no-op floor);
 * - `app`: the broker's own express app (createApp: body reader, routers, validation, error handler,
 *   metrics) over a stub pool that answers every execute at once. Broker minus this = pool + shell.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../src/api/app';
import { loadConfig } from '../src/config/config';
import { BrokerMetrics } from '../src/metrics/metrics';
import type { SessionPool } from '../src/core/pool';
import type { ExecResult } from '../src/core/bashSession';

const EMPTY = Buffer.from('{}');

function bareHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.on('data', () => undefined);
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': EMPTY.length });
    res.end(EMPTY);
  });
}

function stubApp(): http.RequestListener {
  const result: ExecResult = { stdout: '', stderr: '', returnCode: 0, timedOut: false, truncated: false };
  const pool = { isClosing: false, execute: async () => result } as unknown as SessionPool;
  return createApp(pool, new BrokerMetrics(), loadConfig({}));
}

const handler = process.argv[2] === 'app' ? stubApp() : bareHandler;
const server = http.createServer({ keepAliveTimeout: 65_000 }, handler);
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
