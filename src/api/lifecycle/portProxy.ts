/**
 * A lifecycle sandbox's other ports, through the broker: `/sandboxes/{id}/port/{port}/...` proxies
 * HTTP (any method, streamed both ways) and WebSocket (messages relayed both ways) to that port at
 * the sandbox's container address (docker: its IP on its network; local: the host's loopback, where
 * its processes listen). The broker's token is not passed on. The endpoint API gives this route only
 * once something answers on the port (sandboxEndpoints.ts).
 */
import http, { type IncomingMessage } from 'node:http';
import net from 'node:net';
import { WebSocket } from 'ws';
import { BadRequestError, BrokerError, errorMessage } from '../../common/errors';
import type { SandboxService } from '../../core/lifecycle/sandboxService';
import type { Route, Router } from '../../http/router';
import { apiErrors, served, upgrade, type RouteContract } from '../../http/contract';
import { LIFECYCLE_CONTRACT, PORT_PROXY_ROUTES } from './lifecycleContract';

/** Headers that are the broker's (its token, in every form) or the connection's own. */
const NOT_FORWARDED = new Set(['authorization', 'x-execd-access-token', 'open-sandbox-api-key', 'connection', 'keep-alive', 'upgrade', 'proxy-connection', 'te', 'trailer', 'transfer-encoding']);
const CONNECT_TIMEOUT_MS = 2_000;

export interface PortTarget {
  host: string;
  port: number;
}

export function parsePort(raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535) throw new BadRequestError(`port must be an integer between 1 and 65535, got '${raw}'`);
  return port;
}

/** The request's path and query past `/sandboxes/{id}/port/{port}`, as the client wrote them. */
function upstreamPath(req: IncomingMessage): string {
  const rest = /^\/sandboxes\/[^/]+\/port\/[^/?]+(.*)$/.exec(req.url ?? '')?.[1] ?? '';
  return rest.startsWith('/') ? rest : `/${rest}`;
}

function forwardedHeaders(req: IncomingMessage, target: PortTarget): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!NOT_FORWARDED.has(name) && !name.startsWith('sec-websocket-')) headers[name] = value;
  headers.host = `${target.host}:${target.port}`;
  return headers;
}

/** Whether something accepts connections at `target` (the endpoint API asks before giving the route). */
export function answers(target: PortTarget): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port, timeout: CONNECT_TIMEOUT_MS });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** Nothing listens on the port (yet): a 404, as the endpoint API answers for it, not a broker fault. */
function unreachable(target: PortTarget, err: unknown): BrokerError {
  return new BrokerError('not_found', 'port_unreachable', `Nothing answers on port ${target.port} of the sandbox (${errorMessage(err)})`);
}

export function portProxyRouter(sandboxes: SandboxService): Router {
  const targetOf = async (params: Readonly<Record<string, string>>): Promise<PortTarget> => {
    const port = parsePort(params.port);
    return { host: await sandboxes.addressOf(params.id), port };
  };
  /** The target each accepted WebSocket was checked for (check runs before the handshake, accept after). */
  const upgrades = new WeakMap<IncomingMessage, PortTarget>();
  const route = (contract: RouteContract): Route =>
    served(contract, async ({ req, res, params }) => {
      const target = await targetOf(params);
      await new Promise<void>((resolve, reject) => {
        const upstream = http.request({ host: target.host, port: target.port, method: req.method, path: upstreamPath(req), headers: forwardedHeaders(req, target) }, (answer) => {
          const headers = { ...answer.headers };
          delete headers.connection;
          delete headers['keep-alive'];
          res.writeHead(answer.statusCode ?? 502, headers);
          answer.pipe(res);
          answer.once('end', resolve);
          answer.once('error', reject);
        });
        upstream.once('error', (err) => reject(unreachable(target, err)));
        res.once('close', () => upstream.destroy()); // the client left
        req.pipe(upstream);
      });
    });
  return {
    name: 'port-proxy',
    ...apiErrors(LIFECYCLE_CONTRACT),
    routes: PORT_PROXY_ROUTES.filter((c) => c.method !== 'WS').map(route),
    upgrades: [
      upgrade(PORT_PROXY_ROUTES.find((c) => c.method === 'WS')!, {
        async check({ req, params }) {
          const target = await targetOf(params);
          if (!(await answers(target))) throw unreachable(target, 'connection refused');
          upgrades.set(req, target);
        },
        accept(client, { req }) {
          const target = upgrades.get(req)!;
          const upstream = new WebSocket(`ws://${target.host}:${target.port}${upstreamPath(req)}`, { headers: forwardedHeaders(req, target) as Record<string, string> });
          const pending: [Buffer, boolean][] = [];
          client.on('message', (data: Buffer, isBinary: boolean) => {
            if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary: isBinary });
            else pending.push([data, isBinary]);
          });
          upstream.on('open', () => {
            for (const [data, binary] of pending.splice(0)) upstream.send(data, { binary });
          });
          upstream.on('message', (data: Buffer, isBinary: boolean) => client.send(data, { binary: isBinary }));
          const closeCode = (code: number): number => (code === 1005 || code === 1006 ? 1000 : code);
          upstream.on('close', (code, reason) => client.close(closeCode(code), reason));
          upstream.on('error', () => client.close(1011, 'the sandbox port failed'));
          client.on('close', (code, reason) => upstream.readyState === WebSocket.CONNECTING ? upstream.terminate() : upstream.close(closeCode(code), reason));
        },
      }),
    ],
  };
}
