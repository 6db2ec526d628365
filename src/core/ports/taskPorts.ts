/**
 * What Core needs of a task sandbox's daemon, as a port the Docker backend implements
 * (backends/docker/tasks/taskDaemonLink.ts); its container starts through the containers' port
 * (containers.ts). Core knows no HTTP, socket or engine: it asks a DaemonLink.
 */

/** An event as the daemon emits it and Core forwards it: `type` and `timestamp` (Unix ms) first. */
export interface TaskEvent {
  type: string;
  timestamp: number;
  [field: string]: unknown;
}

/** The daemon's envelope on its one upstream: its own sequence number, one per event. */
export interface DaemonEnvelope {
  seq: number;
  event: TaskEvent;
}

export interface DaemonHealth {
  /** Changes when the daemon restarts (its journal and its credentials start over). */
  instance: string;
  state: string;
  lastSeq: number;
}

/** A daemon's answer other than 2xx: `status` and its `detail`. */
export class DaemonCallError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`daemon answered ${status}: ${detail}`);
  }
}

export interface DaemonLink {
  /** Rejects while the daemon does not answer (not listening yet, gone). */
  health(signal: AbortSignal): Promise<DaemonHealth>;
  /** A JSON POST; rejects with DaemonCallError on a non-2xx answer. */
  post(path: string, body: unknown, signal?: AbortSignal): Promise<unknown>;
  /** The upstream: envelopes after `after`, live, until the daemon or `signal` ends it. */
  events(after: number, signal: AbortSignal): AsyncIterable<DaemonEnvelope>;
}

/** Where the daemon clones from, as it sees it: a path in the sandbox or a path on Core's relay. */
export type CloneSource = { path: string } | { relay: string };
