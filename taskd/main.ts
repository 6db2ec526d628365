/**
 * The task daemon's entry point (it is the task container's main process). Settings, from its
 * environment (Core sets them; none is a secret):
 *   TASKD_SOCKET        unix socket to listen on (/run/taskd/daemon.sock), or TASKD_PORT for TCP on 127.0.0.1
 *   TASKD_RELAY_SOCKET  Core's relay for model endpoints and a git server (unset: no relay)
 *   TASKD_ANTHROPIC_BASE_URL, TASKD_OPENAI_BASE_URL   endpoints when there is no relay
 *   TASKD_WORKSPACE     where the repository is cloned (default ~/workspace)
 *   TASKD_CLONE_TIMEOUT_MS, TASKD_JOURNAL_EVENTS
 * Pi's data dir is its default, ~/.pi; the session pointer is ~/.wuhu/pi-session.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDaemonServer } from './daemonServer';
import { startRelayShim } from './relayShim';
import { TaskDaemon } from './taskDaemon';
import { loadPi } from './esm';

function positive(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

async function main(): Promise<void> {
  const env = process.env;
  const relaySocket = env.TASKD_RELAY_SOCKET || null;
  const relay = relaySocket ? await startRelayShim(relaySocket) : null;
  const endpoints: Record<string, string> = relay
    ? { anthropic: `${relay.origin}/anthropic`, openai: `${relay.origin}/openai` }
    : Object.fromEntries(
        [
          ['anthropic', env.TASKD_ANTHROPIC_BASE_URL],
          ['openai', env.TASKD_OPENAI_BASE_URL],
        ].filter((e): e is [string, string] => Boolean(e[1])),
      );
  const daemon = new TaskDaemon({
    workspaceRoot: env.TASKD_WORKSPACE || path.join(os.homedir(), 'workspace'),
    wuhuDir: path.join(os.homedir(), '.wuhu'),
    endpoints,
    relayOrigin: relay ? `${relay.origin}/git` : null,
    cloneTimeoutMs: positive('TASKD_CLONE_TIMEOUT_MS', 600_000),
    journalEvents: positive('TASKD_JOURNAL_EVENTS', 10_000),
  });
  // Pi's modules load before the socket listens (about a second on a small host): a daemon that
  // answers /health is one that can take its capability and a task at once.
  await loadPi();
  await daemon.resume();
  const server = createDaemonServer(daemon);
  const socket = env.TASKD_SOCKET;
  if (socket) {
    fs.rmSync(socket, { force: true }); // a previous daemon's, after a restart
    server.listen(socket, () => fs.chmodSync(socket, 0o600));
  } else {
    server.listen(positive('TASKD_PORT', 8765), '127.0.0.1');
  }
  server.on('listening', () => console.log(`taskd listening on ${socket ?? `127.0.0.1:${env.TASKD_PORT ?? 8765}`}`));
  const stop = (): void => {
    daemon.agent.dispose();
    server.close();
    relay?.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(`taskd: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
