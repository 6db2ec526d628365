/**
 * The HTTP side of a sandbox group (core/ports/groupEndpoints.ts): each sandbox's Sandbox API on
 * a port of its own, and each database attachment on a unix socket, every one through its own
 * seam (seam.ts) so authorization, body limits and error formats are the broker's. The Sandbox API
 * takes the broker's token (BROKER_TOKEN); a database socket takes its attachment's.
 */
import http from 'node:http';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Closable, GroupEndpoints } from '../../core/ports/groupEndpoints';
import { PortInUseError } from '../../core/ports/groupEndpoints';
import type { GroupSandbox } from '../../core/groups/groupSandbox';
import type { DatabaseGrant } from '../../core/groups/groupDatabase';
import { createAuthorize } from '../../http/auth';
import { poolErrorFormat } from '../../http/errorFormats';
import { HttpSeam } from '../../http/seam';
import type { Router } from '../../http/router';
import { sandboxApiRouter } from './sandboxApiRoutes';
import { vectorDbRouter } from './vectorDbRoutes';

export interface GroupListenerOptions {
  /** The broker's HOST: sandbox ports listen there too. */
  host: string;
  token: string | null;
  maxBodyBytes: number;
}

export class HttpGroupEndpoints implements GroupEndpoints {
  constructor(private readonly options: GroupListenerOptions) {}

  async serveSandbox(sandbox: GroupSandbox, port: number): Promise<Closable> {
    const server = this.server(sandboxApiRouter(sandbox), this.options.token);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' || err.code === 'EACCES' ? new PortInUseError(port) : err));
      server.listen({ port, host: this.options.host }, () => resolve());
    });
    return { close: () => closeServer(server) };
  }

  /** `http://HOST:PORT`; a wildcard HOST is answered as this machine's loopback (the broker's clients say where they reach it). */
  sandboxUrl(port: number): string {
    const host = this.options.host;
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
    return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
  }

  async serveDatabase(grant: DatabaseGrant, socketPath: string): Promise<Closable> {
    const server = this.server(vectorDbRouter(grant), grant.token);
    await fs.rm(socketPath, { force: true });
    await listenOnSocket(server, socketPath);
    try {
      // The sandbox's processes connect as its user (root in most images, but not all).
      await fs.chmod(socketPath, 0o666);
    } catch (err) {
      await closeServer(server); // a listener no one will close keeps the process alive
      throw err;
    }
    return {
      close: async () => {
        await closeServer(server);
        await fs.rm(socketPath, { force: true });
      },
    };
  }

  private server(router: Router, token: string | null): http.Server {
    const seam = new HttpSeam([router], { authorize: createAuthorize(token), maxBodyBytes: this.options.maxBodyBytes, defaultErrors: poolErrorFormat });
    const server = http.createServer({ keepAliveTimeout: 65_000 }, seam.serveRequest);
    server.on('clientError', seam.serveClientError);
    return server;
  }
}

/** Stops listening and cuts every connection (keep-alive clients included): the sandbox is gone. */
function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * A unix socket's path must fit sun_path (108 bytes with its NUL); a longer one is cut short by the
 * bind, and the socket lands elsewhere. A deep group directory (a long deployment name, a long
 * TMPDIR) passes that, so such a path is bound through a short symlink to its directory in /tmp,
 * removed once bound: the socket itself is made in the real directory.
 */
const SUN_PATH_BYTES = 107;

export async function listenOnSocket(server: http.Server, socketPath: string): Promise<void> {
  const listen = (where: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(where, () => {
        server.off('error', reject);
        resolve();
      });
    });
  if (Buffer.byteLength(socketPath) <= SUN_PATH_BYTES) return listen(socketPath);
  const link = path.join('/tmp', `bkr-sock-${randomBytes(6).toString('hex')}`);
  await fs.symlink(path.dirname(socketPath), link);
  try {
    await listen(path.join(link, path.basename(socketPath)));
  } finally {
    await fs.rm(link, { force: true });
  }
}
