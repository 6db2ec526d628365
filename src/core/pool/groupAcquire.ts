/**
 * `acquire_group`: n sessions for one request, all or none, within the acquire's timeout, for
 * GRPO-style groups that run one prompt n times. The slots are taken at once from the queue
 * (slotDemands.ts: its fairness rule between groups and single acquires); each is then prepared and
 * runs the startup commands as a single acquire's would. If any member fails, every member is
 * released and, when the failure was the slot's (a dead shell, a failing backend), the whole group
 * is tried again, as a single acquire tries another slot.
 */
import type { Slot, Lease } from './slot';
import type { AcquireResult, GroupAcquireRequest } from './poolTypes';
import { BadRequestError } from '../../common/errors';

/** What the group needs of the pool. */
export interface GroupHost {
  /** Sessions and containers the pool is configured with (what a group can ever get). */
  sessions: number;
  containers: number;
  take(n: number, spread: boolean): Promise<Slot[]>;
  /** Leases a slot (released again if that fails). */
  prepare(slot: Slot): Promise<Lease>;
  /** Returns when another attempt is worth it, throws what the client gets otherwise. */
  checkRetry(err: unknown, attempt: number): void;
  /** The startup commands on a prepared lease (it is released if they fail). */
  startup(lease: Lease): Promise<AcquireResult>;
  release(sessionId: string): void;
}

/** The most sessions one group may ask for. */
export const MAX_GROUP_SIZE = 1024;

export async function acquireGroup(host: GroupHost, request: GroupAcquireRequest): Promise<AcquireResult[]> {
  const { n, spread } = request;
  // A group the pool can never hold would wait out its whole timeout: refused at once.
  if (n > host.sessions) throw new BadRequestError(`'n' (${n}) is more than the pool's ${host.sessions} sessions`);
  if (spread && n > host.containers) throw new BadRequestError(`'n' (${n}) with 'spread' needs ${n} containers; the pool has ${host.containers}`);
  for (let attempt = 1; ; attempt++) {
    const slots = await host.take(n, spread);
    const prepared = await Promise.allSettled(slots.map((slot) => host.prepare(slot)));
    const leases = prepared.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []));
    const failed = prepared.find((p): p is PromiseRejectedResult => p.status === 'rejected');
    if (failed) {
      for (const lease of leases) host.release(lease.id);
      host.checkRetry(failed.reason, attempt);
      continue;
    }
    const started = await Promise.allSettled(leases.map((lease) => host.startup(lease)));
    const startupFailed = started.find((p): p is PromiseRejectedResult => p.status === 'rejected');
    if (!startupFailed) return started.map((p) => (p as PromiseFulfilledResult<AcquireResult>).value);
    for (const lease of leases) host.release(lease.id);
    throw startupFailed.reason;
  }
}
