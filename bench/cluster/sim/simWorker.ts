/**
 * One process of the simulation's nodes (forked by sim/run.ts): many simulated nodes (simNode.ts),
 * each with its own server, lease and record, sharing this process's one etcd client. Told what to
 * do over IPC; on disconnect every node leaves (its lease revoked) and the process exits.
 */
import { EtcdClusterStore } from '../../../src/cluster/store/etcdClusterStore';
import { mapLimit } from '../../lib/stats';
import { SimNode } from './simNode';

export interface WorkerConfig {
  nodeIds: string[];
  sessions: number;
  etcdEndpoint: string;
  keyPrefix: string;
  clusterToken: string;
  heartbeatMs: number;
  ttlSeconds: number;
}

export interface WorkerCommand {
  id: number;
  kind: 'leave' | 'crash' | 'reset' | 'stats';
  /** For `leave` and `crash`. */
  nodeId?: string;
}

export interface WorkerStats {
  published: number;
  inUse: number;
}

/** Nodes registering at once: the start is a burst of lease grants, bounded so etcd takes it in turn. */
const START_CONCURRENCY = 20;

async function main(config: WorkerConfig): Promise<void> {
  const store = new EtcdClusterStore({ endpoints: [config.etcdEndpoint], keyPrefix: config.keyPrefix });
  const nodes = new Map<string, SimNode>();
  const shutdown = (): void => {
    void Promise.allSettled([...nodes.values()].map((n) => n.close()))
      .then(() => store.close())
      .finally(() => process.exit(0));
  };
  process.on('disconnect', shutdown);
  process.on('SIGTERM', shutdown);
  await mapLimit(config.nodeIds, START_CONCURRENCY, async (nodeId) => {
    const node = new SimNode({ nodeId, sessions: config.sessions, store, clusterToken: config.clusterToken, heartbeatMs: config.heartbeatMs, ttlSeconds: config.ttlSeconds });
    nodes.set(nodeId, node);
    await node.start();
  });
  process.on('message', (command: WorkerCommand) => {
    const reply = (result: unknown): void => void process.send?.({ id: command.id, result });
    if (command.kind === 'stats') {
      let published = 0;
      let inUse = 0;
      for (const n of nodes.values()) {
        published += n.published;
        inUse += n.inUse;
      }
      return reply({ published, inUse } satisfies WorkerStats);
    }
    if (command.kind === 'reset') {
      for (const n of nodes.values()) n.reset();
      return reply(true);
    }
    const node = nodes.get(command.nodeId ?? '');
    if (!node) return reply(false);
    void (command.kind === 'leave' ? node.leave() : node.crash()).then(() => reply(true));
  });
  process.send?.({ ready: [...nodes.values()].map((n) => ({ nodeId: n.owner.nodeId, url: n.url })) });
}

process.once('message', (config: WorkerConfig) => {
  main(config).catch((err: unknown) => {
    console.error('simulated nodes:', err);
    process.exit(1);
  });
});
