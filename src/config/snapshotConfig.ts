/** Snapshots of sessions (docs/snapshots.md): the node's byte budget and a snapshot's lifetime. */
import { bytes, seconds, type Env } from './envValues';

export interface SnapshotConfig {
  /** BROKER_SNAPSHOT_BUDGET: bytes all snapshots of the node may hold together (507 beyond). */
  budgetBytes: number;
  /** BROKER_SNAPSHOT_TTL: how long a snapshot lives unless its request names its own `ttl`. */
  ttlMs: number;
}

export function loadSnapshotConfig(env: Env): SnapshotConfig {
  return {
    budgetBytes: bytes(env, 'BROKER_SNAPSHOT_BUDGET', 1024 ** 3, { minBytes: 1 }),
    ttlMs: seconds(env, 'BROKER_SNAPSHOT_TTL', 3600),
  };
}
