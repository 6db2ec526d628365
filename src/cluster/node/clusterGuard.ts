/**
 * A node admits only the cluster's calls: each must carry the cluster token, which gateways add
 * (`X-Broker-Cluster-Token`), or as a bearer token (a Prometheus scraping the node directly). So no
 * one who reaches a node's port bypasses the gateways' BROKER_TOKEN. GET /health stays public, as on
 * a standalone broker. Compared in constant time, over SHA-256 digests.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BrokerError } from '../../common/errors';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendErrorReply, sendErrorReplyOnSocket } from '../../http/httpJson';
import type { ListenerGuard } from '../../http/listenerGuard';

export const CLUSTER_TOKEN_HEADER = 'x-broker-cluster-token';

class NotFromClusterError extends BrokerError {
  constructor() {
    super('unauthorized', 'unauthorized', 'This broker is a node of a cluster: it answers its gateways only (send the call to a gateway)');
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function clusterGuard(token: string): ListenerGuard {
  const expected = digest(token);
  const matches = (given: string | undefined): boolean => given !== undefined && timingSafeEqual(digest(given), expected);
  const admitted = (req: IncomingMessage): boolean => {
    const header = req.headers[CLUSTER_TOKEN_HEADER];
    if (typeof header === 'string') return matches(header);
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization?.trim() ?? '');
    return matches(bearer?.[1]);
  };
  const isPublic = (req: IncomingMessage): boolean => (req.method === 'GET' || req.method === 'HEAD') && /^\/health\/?(\?|$)/.test(req.url ?? '');
  return {
    request: (listener) => (req, res) => {
      if (isPublic(req) || admitted(req)) return listener(req, res);
      sendErrorReply(res, poolErrorFormat.reply(new NotFromClusterError(), `${req.method} ${req.url}`));
    },
    upgrade: (listener) => (req, socket, head) => {
      if (admitted(req)) return listener(req, socket, head);
      socket.on('error', () => socket.destroy());
      sendErrorReplyOnSocket(socket, poolErrorFormat.reply(new NotFromClusterError(), `UPGRADE ${req.url}`));
    },
  };
}
