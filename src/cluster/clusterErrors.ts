/** The answers only a cluster gives, in the broker's error hierarchy (their bodies are the pool API's). */
import { BrokerError } from '../common/errors';

/** A snapshot's id (core/snapshots/snapshotIds.ts) as a node mints it: its layer lived on that node alone. */
const NODE_SNAPSHOT_ID = /\.snap-[0-9a-f]{16}$/;

/**
 * 410 `node_lost`: the id's node left the cluster (its registration lapsed or it is not listening)
 * or restarted since it minted the id. Whatever the id held is gone with it: acquire anew (a
 * snapshot: take a new one, no other node has its layer). 410 as `session_broken` is, so a client
 * that reads the status alone acts the same.
 */
export class NodeLostError extends BrokerError {
  constructor(id: string, nodeId: string, why: string) {
    super(
      'gone',
      'node_lost',
      NODE_SNAPSHOT_ID.test(id)
        ? `snapshot '${id}' lived on node '${nodeId}', which ${why}: the snapshot is gone with its node; take a new snapshot`
        : `'${id}' was held by node '${nodeId}', which ${why}: it is lost; acquire a new session`,
    );
  }
}

/** 503 `no_nodes`: no node is registered, or none serves the pool asked for. */
export class NoNodesError extends BrokerError {
  constructor(what: string) {
    super('unavailable', 'no_nodes', `No node of the cluster ${what}; retry once nodes have joined`);
    this.retryAfterSeconds = 1;
  }
}

/** 502 `node_unreachable`: the node took the call and the connection broke before its answer. */
export class NodeUnreachableError extends BrokerError {
  constructor(nodeId: string, reason: string) {
    super('backend', 'node_unreachable', `Node '${nodeId}' did not answer (${reason}); the call may have run there`);
  }
}

/**
 * 502 `node_unreachable`, before any call: TLS between the gateway and the node failed (a
 * certificate one side refused, or a node whose scheme is not the gateway's). The node ran nothing.
 */
export class NodeTlsRefusedError extends BrokerError {
  constructor(nodeId: string, reason: string) {
    super('backend', 'node_unreachable', `Node '${nodeId}' could not be reached (${reason}); the call did not reach it`);
  }
}
