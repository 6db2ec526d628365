/**
 * The port of the cluster's shared store: membership (a node registers under a lease and refreshes
 * it; a gateway watches every registration) and placement facts (which node an acquire's request_id
 * went to). Commands, outputs and files never pass through it. One adapter: store/etcdClusterStore.ts.
 */

import type { NodeImages } from './node/imageSummary';

/** A pool's sessions on one node, by state: what a gateway places acquires by. */
export interface PoolCapacity {
  total: number;
  available: number;
  in_use: number;
  cleaning: number;
  broken: number;
  /**
   * Acquires waiting in the pool's queue (a group counts once): placement takes them from the free
   * sessions, and sends a waiting acquire to the shortest queue. Absent from records of nodes that
   * do not publish it (read as 0).
   */
  waiting?: number;
  /** The image the pool runs (canonical): a gateway places an acquire naming it here. Absent from older records. */
  image?: string;
}

export type NodeHealth = 'healthy' | 'degraded' | 'unhealthy';

/** What a node publishes about itself, and refreshes every heartbeat (the store holds it as JSON). */
export interface NodeRecord {
  node_id: string;
  /** Changes at every start: ids minted before a restart name the old one, and are known lost. */
  incarnation: string;
  /** The base URL gateways reach it at. */
  address: string;
  health: NodeHealth;
  pools: Record<string, PoolCapacity>;
  healthy_containers: number;
  unhealthy_containers: number;
  /** When the node wrote this record, by its clock (epoch ms). */
  heartbeat_at_ms: number;
  /** The images it holds and its warm sessions per image (node/imageSummary.ts); absent from nodes that pull none. */
  images?: NodeImages;
}

/** A node's registration: refreshed by `publish`, ended by `close` (the record goes at once). */
export interface NodeRegistration {
  /** Writes the record and renews its lease; a lease the store dropped is granted anew. */
  publish(record: NodeRecord): Promise<void>;
  close(): Promise<void>;
}

/** What a watch of the membership tells. */
export interface MembershipListener {
  /** A node registered or refreshed its record. */
  upsert(record: NodeRecord): void;
  /** A node's registration is gone: it left, or its lease ran out. */
  remove(nodeId: string): void;
  /** The store answers again (true) or stopped answering (false); the last membership stands meanwhile. */
  connection(connected: boolean): void;
}

export interface MembershipWatch {
  close(): Promise<void>;
}

export interface ClusterStore {
  register(nodeId: string, ttlSeconds: number): NodeRegistration;
  /** Lists every registration, then tells every change; resumes by itself after the store comes back. */
  watchMembership(listener: MembershipListener): Promise<MembershipWatch>;
  /**
   * The node `key` is placed on: `nodeId` if none was (recorded for `ttlSeconds`), else the one
   * recorded. One transaction: two gateways placing the same key at once agree.
   */
  placeOnce(key: string, nodeId: string, ttlSeconds: number): Promise<string>;
  /** Moves `key` from `fromNode` to `toNode` unless another gateway moved it first; the node it is on after. */
  movePlacement(key: string, fromNode: string, toNode: string, ttlSeconds: number): Promise<string>;
  close(): Promise<void>;
}
