/**
 * A running group: its database (if any), its sandboxes, and the ports they hold. Stopping it
 * stops every sandbox (terminal, container, disk, listeners, database sockets), then the database,
 * then removes the group's host directory: nothing is left.
 */
import { promises as fs } from 'node:fs';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';
import type { GroupDatabase } from './groupDatabase';
import type { GroupSandbox } from './groupSandbox';
import type { Closable } from '../ports/groupEndpoints';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import type { SessionBackend } from '../ports/backend';
import { containerSandbox } from '../sandbox/sandbox';

export interface RunningSandbox {
  sandbox: GroupSandbox;
  port: number;
  url: string;
  /** The Sandbox API listener and the database sockets. */
  listeners: Closable[];
}

export class Group {
  readonly sandboxes = new Map<string, RunningSandbox>();
  /** Ids whose start is under way (a second start of one of them is a 409). */
  readonly starting = new Set<string>();
  /** Ports held by running sandboxes and by starts under way. */
  readonly ports = new Set<number>();
  stopping = false;
  private readonly startsInFlight = new Set<Promise<unknown>>();
  /** Each running sandbox's end signal: it leaves the broker's directory of sandboxes on it. */
  private readonly ends = new Map<string, AbortController>();

  constructor(
    readonly id: string,
    /** The group's directory on the host (database files, sandbox disks, sockets). */
    readonly hostDir: string,
    readonly database: GroupDatabase | null,
    /** The broker's directory of live sandboxes: each running sandbox is one, as `<group>/<sandbox>`. */
    private readonly directory?: SandboxDirectory,
    /** The backend that started its containers: it serves execd's shells in those it declares some for. */
    private readonly backend: SessionBackend | null = null,
  ) {}

  /** A sandbox that started: running, and a sandbox of the broker's directory until it stops. */
  admit(id: string, running: RunningSandbox): void {
    this.sandboxes.set(id, running);
    const end = new AbortController();
    this.ends.set(id, end);
    const describe = (): string => `of group ${this.id}, ${running.url}`;
    this.directory?.register(containerSandbox(`${this.id}/${id}`, 'group', end.signal, running.sandbox.container.shells, this.backend, describe));
  }

  /** Stops one sandbox: its listeners first (no request reaches a dying container), then its terminal and container. */
  async stopSandbox(id: string): Promise<void> {
    const running = this.sandboxes.get(id);
    if (!running) return;
    this.sandboxes.delete(id);
    this.ends.get(id)?.abort();
    this.ends.delete(id);
    await stopRunning(running);
    this.ports.delete(running.port);
  }

  /**
   * Starts under way finish first (each sees `stopping` at its end and undoes itself): their disks
   * are mounted inside the group's directory, which must not be removed under them. Each step runs
   * whatever the others did; the first failure is thrown once all have run.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled([...this.startsInFlight]);
    const results = await Promise.allSettled([...this.sandboxes.keys()].map((id) => this.stopSandbox(id)));
    await this.database?.store.close().catch((err: unknown) => logger.warn({ group: this.id, err: errorMessage(err) }, 'closing the group database failed'));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    await fs.rm(this.hostDir, { recursive: true, force: true });
  }

  /** Runs a sandbox start, known to `stop` until it settles. */
  track<T>(start: Promise<T>): Promise<T> {
    this.startsInFlight.add(start);
    const forget = (): void => void this.startsInFlight.delete(start);
    start.then(forget, forget);
    return start;
  }
}

export async function stopRunning(running: RunningSandbox): Promise<void> {
  await Promise.all(running.listeners.map((l) => l.close().catch(() => undefined)));
  await running.sandbox.close();
  await running.sandbox.container.remove();
}
