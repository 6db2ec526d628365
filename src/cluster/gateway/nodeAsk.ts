/**
 * A gateway's call to one node whose answer it reads rather than relays (the lists it merges, the
 * warm-ups it spreads): the node's 200 (or 202) parsed, its other answers kept to relay as they came,
 * or nothing when the node took no connection (what it held is lost with it).
 */
import type { Dispatcher } from 'undici';
import { NodeTlsRefusedError } from '../clusterErrors';
import { tlsReason, tlsRefusal } from '../clusterTls';
import type { Member } from './membership';
import { diedInHandshake, neverSent, type NodeCall, type NodeClients } from './nodeForwarder';
import type { GatewayMetrics } from './gatewayMetrics';

export interface AskDeps {
  clients: NodeClients;
  metrics: GatewayMetrics;
}

/** A node's success parsed; an answer to relay; or nothing, when the node took no connection. */
export type NodeAnswer = { kind: 'ok'; json: unknown } | { kind: 'answer'; answer: Dispatcher.ResponseData } | { kind: 'gone' };

/** `call` to `member`; `ok` for its answer of status `okStatus`. A TLS refusal by a live node throws (502). */
export async function askNode(member: Member, call: NodeCall, deps: AskDeps, okStatus = 200): Promise<NodeAnswer> {
  const { node_id: nodeId, address } = member.record;
  const startMs = performance.now();
  let answer: Dispatcher.ResponseData;
  try {
    answer = await deps.clients.send(address, call);
  } catch (err) {
    // A handshake cut by a node that died then: gone, as a node that takes no connection.
    const tlsFailed = tlsRefusal(err);
    if (tlsFailed && !(await diedInHandshake(err, address))) {
      deps.metrics.failed(nodeId, 'tls');
      throw new NodeTlsRefusedError(nodeId, tlsReason(err));
    }
    if (!tlsFailed && !neverSent(err)) throw err;
    deps.metrics.failed(nodeId, 'not_sent');
    return { kind: 'gone' };
  }
  deps.metrics.answered(nodeId, answer.statusCode, startMs);
  if (answer.statusCode !== okStatus) return { kind: 'answer', answer };
  return { kind: 'ok', json: await answer.body.json() };
}

/** The first answer to relay as it came; the others' bodies are let go (their connections return to the pool). */
export function firstRelayed(answers: readonly NodeAnswer[]): Dispatcher.ResponseData | null {
  const relayed = answers.flatMap((l) => (l.kind === 'answer' ? [l.answer] : []));
  for (const extra of relayed.slice(1)) void extra.body.dump().catch(() => undefined);
  return relayed[0] ?? null;
}
