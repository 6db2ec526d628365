/**
 * The least server the broker could be over its own session layer, forked by the single-operation
 * phase: node:http around ONE BashSession on the bench's backend (local: pipes to a bash; docker:
 * named pipes into a container of its own), reading its body and writing its answer with the
 * broker's own helpers. No routing, validation, pool, leases, deadlines beyond the session's, or
 * metrics. Each execute is run in turn (the bench drives it with one connection).
 *
 * What it is for: the execute target allows the broker 1.5 no-op HTTP round trips over the raw
 * session. Measured in the broker's place in the same interleaving, this server tells how much of
 * the broker's figure any HTTP server over this session layer pays on this machine, and so what the
 * broker's own code adds (bench/analysis.md).
 *
 * argv: <local|docker> <image>. The port comes back over IPC; on disconnect the session and its
 * container are closed before the process exits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openRaw, type RawSet } from './client/raw';
import { SHELL_FLOOR_DEPLOYMENT } from './protocol';
import { readJsonBody } from '../src/http/body';
import { sendJson } from '../src/http/httpJson';
import { executeResponse } from '../src/api/pool/poolRoutes';
import { loadConfig } from '../src/config/config';

const config = loadConfig({});

async function main(): Promise<void> {
  const kind = process.argv[2] === 'docker' ? 'docker' : 'local';
  const image = process.argv[3] ?? '';
  const raw: RawSet = await openRaw(kind, 'default', 1, 1, image, 1, SHELL_FLOOR_DEPLOYMENT);
  const session = raw.sessions[0];
  let queue: Promise<void> = Promise.resolve();

  const serve = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const body = (await readJsonBody(req, config.maxBodyBytes)) as { command?: unknown; timeout?: unknown };
    const command = typeof body.command === 'string' ? body.command : 'true';
    const timeoutS = typeof body.timeout === 'number' ? body.timeout : 30;
    const result = await session.execute(command, { timeoutMs: timeoutS * 1000, maxOutputBytes: config.maxOutputBytes });
    sendJson(res, 200, executeResponse(result, timeoutS));
  };
  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    queue = queue.then(() => serve(req, res)).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { detail: String(err), code: 'internal' });
    });
  });

  let closing = false;
  const shutdown = (): void => {
    if (closing) return;
    closing = true;
    server.close();
    raw.close().finally(() => process.exit(0));
  };
  process.on('disconnect', shutdown);
  process.on('SIGTERM', shutdown);
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
}

main().catch((err: unknown) => {
  console.error('shell server:', err);
  process.exit(1);
});
