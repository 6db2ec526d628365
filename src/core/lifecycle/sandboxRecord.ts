/**
 * A lifecycle sandbox as the broker keeps it: what it was created with, its state, its expiry, and
 * where it lives (a lease of a pool of whole containers, or a container of its own).
 */
import type { ContainerRef } from '../ports/backend';
import type { EgressRule } from '../network/egressRules';
import type { EgressPolicy } from '../ports/sessionNetworks';
import type { PoolEntry } from '../pool/poolRegistry';
import type { TakenSlot } from '../pool/poolTypes';
import { brokerError } from '../../common/errors';

/** OpenSandbox's states the broker reaches (creation, pause and resume complete before the answer). */
export type SandboxState = 'Running' | 'Paused' | 'Terminated' | 'Failed';

export const SANDBOX_STATES: readonly string[] = ['Pending', 'Running', 'Pausing', 'Paused', 'Resuming', 'Stopping', 'Terminated', 'Failed'];

/** Served from a warm pool: one lease, its container its own (a pool of whole containers) or shared, isolated (an image's pool, `entry.freshContainer` false). */
export interface PooledPlace {
  kind: 'pool';
  entry: PoolEntry;
  taken: TakenSlot;
}

/** A container of its own, started for this sandbox (an image no pool serves). */
export interface DedicatedPlace {
  kind: 'dedicated';
  container: ContainerRef;
  workdir: string;
}

export interface SandboxSpec {
  image: string;
  entrypoint: string[];
  env: Record<string, string>;
  metadata: Record<string, string>;
  /** null: no expiry (deleted by hand). */
  timeoutMs: number | null;
  /** Limits of a dedicated container (null: the backend's defaults); a pooled one has its pool's. */
  cpus: number | null;
  memoryBytes: number | null;
  /** OpenSandbox's `image.auth`: it may only name the node's own credentials for the image's registry (docs/images.md). */
  imageAuth?: { username?: string; password?: string } | null;
  /** OpenSandbox's `snapshotId`: the snapshot it was restored from (its session started from it); absent: from its image. */
  snapshotId?: string;
  /** OpenSandbox's `networkPolicy`, read (api/lifecycle/networkPolicy.ts): `none` denies all egress; absent or `full`: its pool's. */
  network?: EgressPolicy;
  /** Its `networkPolicy`'s egress rules, walked before `network` (core/network/egressRules.ts); absent: none. */
  egressRules?: EgressRule[];
}

export class SandboxRecord {
  state: SandboxState = 'Running';
  reason = 'ready';
  message = 'sandbox is running';
  lastTransitionAt: Date;
  expiresAt: Date | null;
  /** Fires at expiresAt (re-armed by a renewal). */
  timer: NodeJS.Timeout | null = null;
  /** Set while a pause, resume or termination runs: a second one waits its turn (409 meanwhile). */
  busy = false;
  /** Aborts when it ends: execd closes what it started for it (a warm sandbox's lease has its own too). */
  readonly ending = new AbortController();

  constructor(
    readonly id: string,
    readonly spec: SandboxSpec,
    readonly place: PooledPlace | DedicatedPlace,
    readonly createdAt: Date,
  ) {
    this.lastTransitionAt = createdAt;
    this.expiresAt = spec.timeoutMs === null ? null : new Date(createdAt.getTime() + spec.timeoutMs);
  }

  get container(): ContainerRef {
    return this.place.kind === 'pool' ? this.place.taken.container : this.place.container;
  }

  get live(): boolean {
    return this.state === 'Running' || this.state === 'Paused';
  }

  move(state: SandboxState, reason: string, message: string): void {
    if (state === 'Terminated' || state === 'Failed') this.ending.abort();
    this.state = state;
    this.reason = reason;
    this.message = message;
    this.lastTransitionAt = new Date();
  }
}

export class SandboxNotFoundError extends brokerError('not_found', 'sandbox_not_found', (id: string) => `Sandbox not found: ${id}`) {}

export class SandboxStateError extends brokerError('busy', 'sandbox_state', (record: SandboxRecord, wanted: string) => `Sandbox ${record.id} is ${record.busy ? 'changing state' : record.state} (${record.message}): cannot ${wanted}`) {}

export interface SandboxFilter {
  /** OR: any of these states (empty: every live sandbox). Terminated and Failed ones only when asked. */
  states: readonly string[];
  /** AND: every key with its value. */
  metadata: Readonly<Record<string, string>>;
  page: number;
  pageSize: number;
}
