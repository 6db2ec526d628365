/**
 * A sandbox's endpoints (GET /v1/sandboxes/{id}/endpoints/{port}), without a scheme, as the SDK
 * wants them (it prefixes its own protocol): execd's port (44772) is the broker's execd route for
 * the sandbox, the egress port (18080) the broker's egress route (which answers 501). Both are on the
 * broker's own address, so they are the same whether the client asked for a server proxy or not.
 * No header is needed: the SDK sends its OPEN-SANDBOX-API-KEY to every endpoint, and the broker
 * takes it as its token. Any other port is the broker's proxy route to it (portProxy.ts), given once
 * something answers there; else 404 saying why (no network, or nothing listening).
 */
import { BadRequestError, BrokerError, NotImplementedError } from '../../common/errors';
import type { SandboxRecord } from '../../core/lifecycle/sandboxRecord';
import type { SandboxService } from '../../core/lifecycle/sandboxService';
import { answers } from './portProxy';

export const EXECD_PORT = 44772;
export const EGRESS_PORT = 18080;

export async function endpointFor(
  sandboxes: SandboxService,
  record: SandboxRecord,
  port: number,
  query: URLSearchParams,
  address: string,
): Promise<{ endpoint: string; headers: Record<string, string> }> {
  const proxy = query.get('use_server_proxy');
  if (proxy !== null && proxy !== 'true' && proxy !== 'false') throw new BadRequestError(`use_server_proxy must be true or false, got '${proxy}'`);
  if (query.has('expires')) throw new NotImplementedError('expires: signed endpoint routes (OSEP-0011) are not served; endpoints take the broker token');
  if (!record.live) throw new BrokerError('not_found', 'sandbox_not_running', `Sandbox ${record.id} is ${record.state} (${record.message}): it has no endpoints`);
  if (port === EXECD_PORT) return { endpoint: `${address}/sandboxes/${record.id}/execd`, headers: {} };
  if (port === EGRESS_PORT) return { endpoint: `${address}/sandboxes/${record.id}/egress`, headers: {} };
  const host = await sandboxes.addressOf(record.id);
  if (!(await answers({ host, port }))) {
    throw new BrokerError('not_found', 'endpoint_not_found', `Port ${port} of sandbox ${record.id} has no endpoint: nothing listens on it (start the service first)`);
  }
  return { endpoint: `${address}/sandboxes/${record.id}/port/${port}`, headers: {} };
}
